"""docs/FIDELITY.md and docs/results/README.md: the bounds the verdicts read, the index of every results folder."""
from __future__ import annotations

from emulation.papers import common
from emulation.report.doctables.bml import BML_FOLDERS, BML_REPEATS
from emulation.report.doctables.cells import outside_tolerance, pct, runs_of, span, verdict
from emulation.report.doctables.forest import FOREST, FOREST_VARIANTS
from emulation.report.doctables.gtopk import GTOPK_MODELS
from emulation.report.doctables.mgwfbp import MGWFBP_ALL, MGWFBP_MODELS
from emulation.results.columns import NA, fmt, table
from emulation.results.load import MB, num


FIDELITY_FOLDERS = ("default",) + BML_FOLDERS


def _cores(run) -> str:
    v = num((run.get("fidelity") or {}).get("ovs_cpu_percent"))
    return NA if v is None else f"{v / 100:.2f}"


def _busy(run) -> str:
    link = (run.get("fidelity") or {}).get("busiest_link") or {}
    busy, rate = num(link.get("busy_mean_mbps")), num(link.get("configured_mbps"))
    return NA if busy is None or not rate else f"{busy / rate:.0%}"


def fidelity_bounds(data: dict) -> list[str]:
    """Sync time against the busiest-link bound in the default and BML experiments (MB-size gradients),
    with what the fidelity verdict looked at: OVS's CPU and the busiest link's rate while busy."""
    rows, by_algo = [], {}
    for folder in FIDELITY_FOLDERS:
        for r in runs_of(data, f"{folder}/summary.json"):
            if (num(r.get("gradient_bytes")) or 0) < 2 * MB:
                continue
            over = common.ratio(common.sync_s(r), r.get("bound_seconds"))
            if r.get("faithful") is True and over is not None:
                by_algo.setdefault(r.get("algorithm"), []).append(over)
            pr = r.get("payload_ratio") or {}
            rows.append([f"`{folder}`", r.get("topology", NA), common.label(r), str(r.get("model")),
                         fmt(common.sync_s(r), ".3f"), fmt(r.get("bound_seconds"), ".3f"), fmt(over, ".2f"),
                         f"{fmt(pr.get('min'), '.4f')}..{fmt(pr.get('max'), '.4f')}",
                         pct(r.get("retransmitted_fraction")), _cores(r), _busy(r),
                         fmt((r.get("fidelity") or {}).get("workers_starved_percent"), ".0f") + "%", verdict(r)])
    lines = table(["results folder", "topology", "algorithm", "model", "median sync s", "busiest-link bound s",
                   "sync / bound", "payload measured/expected", "retransmitted", "ovs-vswitchd cores",
                   "busiest link while busy (of its rate)", "workers' CPU demand spent waiting", "faithful"], rows)
    return lines + ["", "Sync / bound over the faithful runs above: " + "; ".join(
        f"{a} {span(v, '.2f', 'x')}" for a, v in sorted(by_algo.items())) + "."]


RESULTS_INDEX = {  # top folder -> its summaries (the experiments `syncbed run` wrote)
    "default": ("default",), "bml-bcube32-vs-ps-fattree": ("bml-bcube32-vs-ps-fattree",),
    "bml-bcube42-vs-ps-fattree": ("bml-bcube42-vs-ps-fattree",), "bml-repeats": BML_REPEATS,
    "train-lenet5-digits": ("train-lenet5-digits",), "train-lenet5-digits-r2": ("train-lenet5-digits-r2",),
    "dfs-resnet18-digits": ("dfs-resnet18-digits",),
    "hd-default": ("hd-default",), "hd-default-two-level": ("hd-default-two-level",),
    "ddp-resnet20-digits": ("ddp-resnet20-digits",),
    "hash-ecmp": ("hash-ecmp/bml-bcube32-vs-ps-fattree", "hash-ecmp/bml-bcube42-vs-ps-fattree"),
    **{f: (f,) for f in MGWFBP_ALL if "/" not in f},
    "mgwfbp-fattree4": tuple(f"mgwfbp-fattree4/{m}" for m in MGWFBP_MODELS),
    "gtopk-scaling": tuple(f"gtopk-scaling/{m}/p{p}" for m in GTOPK_MODELS for p in (4, 8, 16)),
    "gtopk-scaling-fattree": tuple(f"gtopk-scaling-fattree/p{p}" for p in (4, 8, 16, 32)),
    "gtopk-charged": ("gtopk-charged/vgg16-p32-bw20", "gtopk-charged/vgg16-p32-bw5",
                      *(f"gtopk-charged/{m}-p32" for m in GTOPK_MODELS)),
    "cluster-two-servers": ("cluster-two-servers/one-server", "cluster-two-servers/two-servers",
                            "cluster-two-servers/every-algorithm", "cluster-two-servers/bcube",
                            "cluster-two-servers/real-setting", "cluster-two-servers/ddp"),
    "forest-scenarios": tuple(f"forest-scenarios/{f}" for f in (*FOREST, *FOREST_VARIANTS)),
}


def results_index(data: dict) -> list[str]:
    """One row per folder of emulated runs: when, how long, and every run's verdicts."""
    rows = []
    for top, folders in sorted(RESULTS_INDEX.items()):
        sums = [data[f"{f}/summary.json"] for f in folders]
        runs = [r for s in sums for r in s.get("runs", [])]
        started = sorted(s.get("started") or "" for s in sums)
        finished = sorted(s.get("finished") or "" for s in sums)
        walls = [num((s.get("throughput") or {}).get("wall_seconds")) for s in sums]
        overhead = [num((s.get("throughput") or {}).get("overhead_fraction")) for s in sums]
        when = started[0].replace("T", " ")[:16]
        if len(sums) > 1:
            when += " - " + finished[-1].replace("T", " ")[:16]
        rows.append([f"`{top}/`", str(len(sums)), when,
                     NA if None in walls else f"{sum(walls) / 60:.1f}",
                     NA if None in overhead or len(overhead) > 1 else pct(overhead[0], 0),
                     str(len(runs)), str(sum(1 for r in runs if r.get("faithful") is True)),
                     str(sum(1 for r in runs if r.get("faithful") is False)),
                     str(sum(1 for r in runs if r.get("faithful") not in (True, False))),
                     str(len(outside_tolerance(runs)))])
    return table(["folder", "experiments", "started (- last finished)", "wall min", "wall not in iterations", "runs",
                  "faithful", "not faithful", "unverified", "payload outside tolerance on some port"], rows)
