"""docs/PROJECTION.md, "The papers' scales": the papers' own large-scale settings projected in SimGrid.

One builder per study, each rendering the results folder its script or experiment file wrote
(the command is in the folder's summary.json and in docs/PROJECTION.md):
- `projection_mgwfbp_scale`: MG-WFBP, WFBP, SyncEASGD and fusion to 2,048 workers
  (scripts/project_mgwfbp_2048.py), the authors' scaling efficiency per schedule;
- `projection_gtopk_scale`: gTop-k against Top-k and a dense ring to 1,024 workers
  (scripts/project_gtopk_1024.py), beside the authors' alpha-beta model (emulation/papers/gtopk.py);
- `projection_forest_scale`: the forest against ring and PS on large Fat-Trees with an
  oversubscribed core (experiments/projection_forest_fattree.yaml).
The BML study at BCube(8,3) is projection.py's `projection_bml_scale`.
"""
from __future__ import annotations

from emulation.papers import common
from emulation.papers import forest as forest_paper
from emulation.papers import gtopk as gtopk_paper
from emulation.papers import mgwfbp as mgwfbp_paper
from emulation.report.doctables.cells import runs_of, span
from emulation.results.columns import NA, fmt, table
from emulation.results.load import MB, num

MGWFBP_MODELS = ("googlenet", "resnet50")
MGWFBP_SCALE = tuple(f"projection-mgwfbp-2048/{m}/summary.json" for m in MGWFBP_MODELS)
MGWFBP_SCHEDULES = (("wfbp", "WFBP"), ("single", "SyncEASGD"), ("fusion,bucket_mb=2.5", "fusion 25 MiB"),
                    ("fusion,bucket_mb=6.4", "fusion 64 MiB"), ("mgwfbp", "MG-WFBP"))
GTOPK_SCALE = ("projection-gtopk-1024/summary.json",)
FOREST_SCALE = ("projection-forest-fattree/summary.json",)


def _bold(x, spec: str) -> str:
    """A headline ratio in bold, or the empty cell."""
    return NA if x is None else f"**{fmt(x, spec)}**"


def _skipped_sentence(data: dict, rels) -> str:
    skips = [s for rel in rels for s in data[rel].get("skipped") or []]
    if not skips:
        return "Nothing was refused by the estimates."
    return "Refused by the estimates (`--skip-too-large`): " + "; ".join(
        f"{s.get('algo_spec')} on {s.get('topology')}" + (f" ({s['model']})" if s.get("model") else "")
        for s in skips) + "."


def _by(runs: list, **match) -> dict | None:
    hits = [r for r in runs if all(r.get(k) == v for k, v in match.items())]
    if len(hits) > 1:
        raise ValueError(f"{len(hits)} runs match {match} (need at most one)")
    return hits[0] if hits else None


def projection_mgwfbp_scale(data: dict) -> list[str]:
    """Iteration seconds and the authors' scaling efficiency of the five schedules per model and P."""
    cells, largest = [], {}
    for model, rel in zip(MGWFBP_MODELS, MGWFBP_SCALE):
        runs = runs_of(data, rel)
        for p in sorted({r["workers"] for r in runs}):
            at = {spec: _by(runs, workers=p, algo_spec=spec) for spec, _ in MGWFBP_SCHEDULES}
            mg = at["mgwfbp"]
            first = next(r for r in at.values() if r is not None)
            row = [model, str(p), first["topology"], fmt(1e3 * num(first.get("alpha_seconds")), ".2f")]
            for spec, _ in MGWFBP_SCHEDULES:
                r = at[spec]
                row.append(NA if r is None else
                           f"{fmt(r['simulated_iteration_seconds'], '.3f')} ({fmt(100 * r['authors_efficiency'], '.0f')}%)")
            it = {spec: (r["simulated_iteration_seconds"] if r else None) for spec, r in at.items()}
            row += [fmt(common.ratio(it["wfbp"], it["mgwfbp"]), ".2f"),
                    fmt(common.ratio(it["single"], it["mgwfbp"]), ".2f"),
                    NA if mg is None else f"{mg.get('groups')} of {mg.get('layers')}",
                    fmt(mg.get("predicted_iteration_seconds") if mg else None, ".3f")]
            cells.append(row)
            largest[model] = p
    lines = table(["model", "P", "Fat-Tree", "a(P) ms", *(f"{name} iteration s (efficiency)" for _, name in
                                                          MGWFBP_SCHEDULES),
                   "WFBP / MG-WFBP", "SyncEASGD / MG-WFBP", "MG-WFBP groups of layers",
                   "MG-WFBP planned iteration s (its a, b)"], cells)
    planner = [r.get("planner_cpu_seconds") for rel in MGWFBP_SCALE for r in runs_of(data, rel)
               if r["algo_spec"] == "mgwfbp" and r.get("planner_cpu_seconds") is not None]
    sim = [num((r.get("simulator") or {}).get("wall_seconds")) for rel in MGWFBP_SCALE for r in runs_of(data, rel)]
    lines += ["", "Largest P reached: " + ", ".join(f"{m} {p}" for m, p in largest.items())
              + f". MG-WFBP's planner took {span(planner, '.3f', ' CPU s')} per plan; one projection "
              f"{span([s for s in sim if s is not None], '.3g', ' s')} wall. " + _skipped_sentence(data, MGWFBP_SCALE)]
    lines += ["", "The papers: " + "; ".join(f"{c['what']} ({c['source']})" for c in mgwfbp_paper.SCALE_CLAIMS)
              + ". Their per-P numbers are printed from traces that are not public (docs/papers/mgwfbp.md 1.6)."]
    return lines


def _max_tx(r: dict) -> float | None:
    nics = r.get("payload_bytes_expected") or {}
    return max((v.get("tx", 0) for v in nics.values()), default=None) if nics else None


def projection_gtopk_scale(data: dict) -> list[str]:
    """Sync seconds of gTop-k, Top-k and ring per P, beside the authors' alpha-beta model."""
    runs = runs_of(data, GTOPK_SCALE[0])
    cells = []
    for p in sorted({r["workers"] for r in runs}):
        g, t, d = (_by(runs, workers=p, algorithm=a) for a in ("gtopk", "topk", "ring"))
        first = next(r for r in (g, t, d) if r is not None)
        elements = first["gradient_bytes"] // 4
        rho = gtopk_paper.density(g or t) if (g or t) else None
        model = {a: gtopk_paper.model_seconds(a, p, elements, rho or 0.001) for a in ("gtopk", "topk", "ring")}
        sim = {a: (r["simulated_seconds"] if r else None) for a, r in (("gtopk", g), ("topk", t), ("ring", d))}
        cells.append([str(p), first["topology"], fmt(sim["gtopk"], ".4f"), fmt(sim["topk"], ".4f"),
                      fmt(sim["ring"], ".3f"), _bold(common.ratio(sim["topk"], sim["gtopk"]), ".1f"),
                      fmt(model["gtopk"], ".4f"), fmt(model["topk"], ".4f"), fmt(model["ring"], ".3f"),
                      _bold(common.ratio(model["topk"], model["gtopk"]), ".1f"),
                      fmt(_max_tx(g) / MB if g and _max_tx(g) is not None else None, ".2f"),
                      fmt(_max_tx(t) / MB if t and _max_tx(t) is not None else None, ".1f")])
    lat = sorted({num(r.get("round_latency_seconds")) or 0.0 for r in runs})
    return table(["P", "Fat-Tree", "gTop-k s", "Top-k s", "ring s", "Top-k / gTop-k",
                  "model gTop-k s", "model Top-k s", "model ring s", "model Top-k / gTop-k",
                  "gTop-k MiB sent (busiest NIC)", "Top-k MiB sent (busiest NIC)"], cells) + [
        "", f"Simulated with {', '.join(f'{x * 1e3:g} ms' for x in lat)} per message round; the model columns are "
            f"{gtopk_paper.COST_MODEL} with alpha = {gtopk_paper.ALPHA_S * 1e3:g} ms, beta = "
            f"{gtopk_paper.BETA_S_PER_BYTE:g} s/B. " + _skipped_sentence(data, GTOPK_SCALE),
        "", f"The paper: {gtopk_paper.SCALE_CLAIM['what']} ({gtopk_paper.SCALE_CLAIM['source']}); measured at P <= 32."]


def projection_forest_scale(data: dict) -> list[str]:
    """The forest against ring and PS per Fat-Tree, with the paper's 'up to' claim."""
    runs = runs_of(data, FOREST_SCALE[0])
    claim = next(c for c in forest_paper.CLAIMS if c["unit"] == "x")
    skipped = {(s["topology"], s["algo_spec"]) for s in data[FOREST_SCALE[0]].get("skipped") or []}
    cells = []
    for topo in sorted({r["topology"] for r in runs}, key=lambda t: min(r["workers"] for r in runs if r["topology"] == t)):
        f, r, ps = (_by(runs, topology=topo, algorithm=a) for a in ("forest", "ring", "ps"))
        spec = "fattree,k=" + topo.split("(")[1].rstrip(")")
        ps_cell = fmt(ps["simulated_seconds"], ".4f") if ps else ("refused" if (spec, "ps") in skipped else NA)
        cells.append([topo, str((f or r)["workers"]), fmt(f["simulated_seconds"] if f else None, ".4f"),
                      fmt(r["simulated_seconds"] if r else None, ".4f"), ps_cell,
                      _bold(common.ratio(r and r["simulated_seconds"], f and f["simulated_seconds"]), ".2f"),
                      _bold(common.ratio(ps and ps["simulated_seconds"], f and f["simulated_seconds"]), ".2f"),
                      fmt(f.get("sync_over_bound") if f else None, ".3f"),
                      f"up to {claim['value']:g}x"])
    return table(["Fat-Tree", "P", "forest s", "ring s", "PS s", "ring / forest", "PS / forest", "forest x bound",
                  "paper (abstract)"], cells) + ["", _skipped_sentence(data, FOREST_SCALE)]
