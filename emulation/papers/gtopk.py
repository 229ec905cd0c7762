"""gTop-k: global top-k sparsification against Top-k (AllGather) and dense all-reduce.

Shi et al., ICDCS 2019 (`CITATION`). Local top-k (index, value) pairs are merged pairwise
over log2 P rounds, keeping the top k, then the global k are broadcast: O(k log P) against
O(kP) for Top-k with AllGather and O(d) for dense S-SGD.

`pair(runs)`: for each (topology, model, workers) and density, the median sync time of
gtopk, topk and the faster dense baseline (ring or gloo), with their ratios; a row needs
two of the three. The paper's numbers are scaling efficiencies (throughput on P machines
over P times one machine's) at P = 32 and 1 Gbit/s, so the ratios here, on this
experiment's workers and links, are the communication side of them, not the same number.
"""
from __future__ import annotations

from emulation.papers import Paper, common
from emulation.results.columns import NA, fmt, table
from emulation.results.load import compress_seconds, num
from common.specs import parse_spec

SPARSE = ("gtopk", "topk")
DENSE = ("ring", "gloo")

CITATION = ('S. Shi, Q. Wang, K. Zhao, Z. Tang, Y. Wang, X. Huang, X. Chu, "A Distributed Synchronous SGD '
            'Algorithm with Global Top-k Sparsification for Low Bandwidth Networks", IEEE ICDCS 2019, '
            'arXiv:1901.04359.')
ABSTRACT = "the abstract (32 machines, 1 Gbit/s)"
SCRIPT = "the authors' plotting script (P = 32)"
EFFICIENCY = {  # model -> scaling efficiency in % at P = 32: dense S-SGD, Top-k, gTop-k
    "vgg16_cifar": ("VGG-16", 1.0, 4.8, 9.4),  # the paper's VGG-16 is the CIFAR-10 one
    "resnet20": ("ResNet-20", 31.3, 75.6, 85.7),
    "alexnet": ("AlexNet", 0.7, 5.3, 9.1),
    "resnet50": ("ResNet-50", 20.3, 57.8, 74.0),
}
# The authors' alpha-beta model on their 1 GbE (C `plot_allreduce_comparison`, docs/papers/gtopk.md 1.1
# and 1.3): alpha per message, beta per byte (9e-6 ms/B; 3.6e-5 ms per fp32 element).
ALPHA_S = 0.436e-3
BETA_S_PER_BYTE = 9.0e-9
COST_MODEL = "the authors' alpha-beta cost model (their plotting script and README, docs/papers/gtopk.md 1.3)"

SCALE_CLAIM = {"what": "communication O(k log P) for gTop-k against O(kP) for Top-k (AllGather)", "value": "trend",
               "unit": "", "source": "ICDCS 2019 abstract"}


def model_seconds(algorithm: str, workers: int, elements: int, density: float = 0.001,
                  alpha: float = ALPHA_S, beta: float = BETA_S_PER_BYTE) -> float:
    """Communication seconds of one sync in the authors' model (m elements, rho = density, beta
    per element = 4 beta per byte): dense ring 2(P-1) alpha + 2(P-1)/P m beta; Top-k AllGather
    alpha log2 P + 2(P-1) rho m beta (the README's; the script drops its alpha); gTop-k
    2 alpha log2 P + 4 rho m log2 P beta (the script's: reduce and broadcast). Pure; ValueError
    for another algorithm or P < 1."""
    import math

    if workers < 1 or elements < 1:
        raise ValueError(f"model_seconds: workers {workers} and elements {elements} must be >= 1")
    p, m, b = workers, elements, 4 * beta
    if algorithm == "ring":
        return 2 * (p - 1) * alpha + 2 * (p - 1) / p * m * b
    if algorithm == "topk":
        return alpha * math.log2(p) + 2 * (p - 1) * density * m * b
    if algorithm == "gtopk":
        return 2 * alpha * math.log2(p) + 4 * density * m * math.log2(p) * b
    raise ValueError(f"model_seconds: {algorithm!r} has no cost model here; valid: ring, topk, gtopk")


CLAIMS = [
    {"what": "scaling efficiency of gTop-k over dense S-SGD", "value": [2.7, 12], "unit": "x", "source": ABSTRACT},
    {"what": "scaling efficiency of gTop-k over Top-k S-SGD", "value": [1.1, 1.7], "unit": "x", "source": ABSTRACT},
] + [{"what": f"{title} scaling efficiency, {name}", "value": value, "unit": "%", "source": SCRIPT,
      "model": model, "method": method}
     for model, (title, *values) in EFFICIENCY.items()
     for (method, name), value in zip((("dense", "dense S-SGD"), ("topk", "Top-k"), ("gtopk", "gTop-k")), values)]


def density(run: dict) -> float | None:
    """The run's density: its own field, else the `density=` option of its algorithm spec."""
    if num(run.get("density")) is not None:
        return num(run.get("density"))
    spec = run.get("algo_spec")
    return num(parse_spec(spec, "algorithm")[1].get("density")) if spec and "," in spec else None


def _share(compress, sync) -> str:
    return NA if compress is None else f"{compress:.3f}" + (f" ({compress / sync:.0%})" if sync else "")


def _efficiency(run) -> float | None:
    """The run's scaling efficiency in % (compute / iteration), None without one."""
    e = num(run.get("scaling_efficiency")) if run else None
    return None if e is None else 100 * e


def _percents(values) -> str:
    return NA if not values or all(v is None for v in values) else " / ".join(fmt(v, ".1f") for v in values)


def pair(runs: list) -> list[dict]:
    rows = []
    for (topology, model, workers), members in common.groups(runs).items():
        sparse = [r for r in members if r.get("algorithm") in SPARSE]
        dense = min((r for r in members if r.get("algorithm") in DENSE and common.sync_s(r) is not None),
                    key=common.sync_s, default=None)
        for d in sorted({density(r) for r in sparse}, key=lambda x: (x is None, x or 0)):
            g = next((r for r in sparse if r["algorithm"] == "gtopk" and density(r) == d), None)
            t = next((r for r in sparse if r["algorithm"] == "topk" and density(r) == d), None)
            present = [r for r in (g, t, dense) if r is not None]
            if len(present) < 2:
                continue
            gs, ts, ds = (common.sync_s(r) if r else None for r in (g, t, dense))
            paper = EFFICIENCY.get(common.model_name({"model": model}))
            rows.append({"topology": topology, "model": model, "workers": workers, "density": d,
                         "gtopk": common.label(g) if g else None, "gtopk_s": gs,
                         "topk": common.label(t) if t else None, "topk_s": ts,
                         "dense": common.label(dense) if dense else None, "dense_s": ds,
                         "gtopk_compress_s": compress_seconds(g), "topk_compress_s": compress_seconds(t),
                         "dense_over_gtopk": common.ratio(ds, gs), "topk_over_gtopk": common.ratio(ts, gs),
                         "dense_over_topk": common.ratio(ds, ts),
                         "paper_efficiency": list(paper[1:]) if paper else None,
                         "efficiency": [_efficiency(r) for r in (dense, t, g)],
                         **common.verdicts([(common.label(r), r) for r in present])})
    return rows


def render(rows: list[dict]) -> list[str]:
    intro = ("Same model, topology and workers, per density; dense = the faster of ring and gloo. Ratios of median "
             "sync times (above 1: the second is faster). Compression = the CPU each rank spends per sync selecting "
             "its top-k and merging sparse sets (with the residual's update), measured inside the sync time. "
             "Efficiency = compute / iteration (throughput with P workers over P times one worker's), ours beside "
             "the paper's at P = 32 on 1 Gbit/s; it is the paper's number only where the run stands for that "
             "setting (the paper's compute per iteration, `real_backward_s`, and 1 Gbit/s, `real_link_mbps`).")
    body = table(["topology", "model", "workers", "density", "gTop-k sync s", "Top-k sync s", "dense sync s",
                  "dense / gTop-k", "Top-k / gTop-k", "dense / Top-k", "efficiency % dense / Top-k / gTop-k",
                  "paper efficiency dense / Top-k / gTop-k (P = 32)",
                  "gTop-k compression s (of sync)", "Top-k compression s (of sync)", "faithful", "failed checks"],
                 [[str(r["topology"]), str(r["model"]), fmt(r["workers"], "g"), fmt(r["density"], "g"),
                   fmt(r["gtopk_s"], ".3f"), fmt(r["topk_s"], ".3f"),
                   NA if r["dense"] is None else f"{fmt(r['dense_s'], '.3f')} ({r['dense']})",
                   fmt(r["dense_over_gtopk"], ".2f"), fmt(r["topk_over_gtopk"], ".2f"),
                   fmt(r["dense_over_topk"], ".2f"), _percents(r.get("efficiency")),
                   " / ".join(f"{v:g}%" for v in r["paper_efficiency"]) if r["paper_efficiency"] else NA,
                   _share(r["gtopk_compress_s"], r["gtopk_s"]), _share(r["topk_compress_s"], r["topk_s"]),
                   common.faithful_cell(r), common.failed_cell(r)] for r in rows])
    return common.section("gTop-k against Top-k and dense S-SGD (Shi et al., ICDCS 2019)", CITATION, intro, body,
                          CLAIMS)


PAPER = Paper(name="gtopk", citation=CITATION, claims=CLAIMS, algorithms=SPARSE, pair=pair, render=render)
