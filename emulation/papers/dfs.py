"""DFS: joint data formatting and sparsification for parameter-server communication.

Yang, Zhao, Zhao, Xu, Computer Networks 2023 (`CITATION`); only the abstract is available.
Workers sparsify so as to form as many all-zero blocks as possible and stream gradients
block by block, skipping zero blocks, with a block size chosen dynamically, in both
directions (worker -> PS and PS -> worker). Baselines: OmniReduce (Fei et al., SIGCOMM
2021: fixed blocks, zero blocks skipped), the element-wise Top-k on the PS at the same
density, and the dense PS.

`pair(runs)`: one row per (topology, model, workers) that ran dfs: every PS-family run of
the group (bytes per direction from the ranks' push/pull records, the payload the capture
saw, zero-block fraction, block sizes used, sync and iteration times, accuracy and time to
the target accuracy), and the two headline numbers beside the abstract's:
- communication: 1 - DFS / OmniReduce payload per sync at the same density (paper: up to
  87.17% less), from the captures, or, when either run was not captured, from the bytes
  the ranks logged (the table says which);
- training time: 1 - DFS / dense PS time to the target accuracy, or, when either run never
  reached it, of the time for the same iterations (paper: 74.12% less for ResNet-18).
Each row names the runs its numbers rest on that were not faithful or are unverified, and
their failed checks.
"""
from __future__ import annotations

from emulation.papers import Paper, common
from emulation.papers.gtopk import density
from emulation.results.columns import NA, fmt, table, yes_no
from emulation.results.columns import faithful_cell as run_faithful_cell
from emulation.results.columns import failed_cell as run_failed_cell
from emulation.results.load import num

FAMILY = ("dfs", "omnireduce", "topk_ps", "ps")  # DFS and what it is compared against, in that order
PAPER_BYTES_REDUCTION = 0.8717
PAPER_TIME_REDUCTION = 0.7412

CITATION = ('C. Yang, Y. Zhao, G. Zhao, H. Xu, "DFS: Joint Data Formatting and Sparsification for Efficient '
            'Communication in Distributed Machine Learning", Computer Networks, 2023, '
            'DOI 10.1016/j.comnet.2023.109777.')
CLAIMS = [
    {"what": "ResNet-18 training time reduction (real testbed)", "value": 74.12, "unit": "%",
     "source": "the abstract"},
    {"what": "communication cost reduction against OmniReduce (simulation, up to)", "value": 87.17, "unit": "%",
     "source": "the abstract"},
]


def _per_iteration_s(run: dict) -> float | None:
    """Wall time per iteration, compute, sparsification, sync and evaluation included."""
    jct, iters = num(run.get("jct_seconds")), num(run.get("iters"))
    return jct / iters if jct is not None and iters else None


def _final_accuracy(run: dict) -> float | None:
    acc = (run.get("training") or {}).get("accuracy") or []
    return acc[-1] if acc else None


def _blocks_used(run: dict) -> str:
    used = run.get("blocks_used") or {}
    return ", ".join(f"{b} x{n}" for b, n in used.items()) if used else NA


def summary(run: dict) -> dict:
    """What the DFS table shows of one run (a summary.json record)."""
    phases = run.get("phase_bytes_per_sync") or {}
    tta = run.get("time_to_accuracy") or {}
    push, pull = num(phases.get("push")), num(phases.get("pull"))
    return {"label": common.label(run), "algorithm": run.get("algorithm"), "density": density(run), "run": run,
            "push_bytes": push, "pull_bytes": pull,
            "captured_bytes": common.bytes_per_sync(run),
            "logged_bytes": push + pull if push is not None and pull is not None else None,
            "zero_block_fraction": num(run.get("zero_block_fraction")),
            "blocks_used": _blocks_used(run), "sparsify_s": num(run.get("sparsify_seconds")),
            "sync_s": common.sync_s(run), "per_iteration_s": _per_iteration_s(run),
            "jct_s": num(run.get("jct_seconds")), "final_accuracy": _final_accuracy(run),
            "target": num(tta.get("target")), "target_iter": tta.get("iter"), "target_s": num(tta.get("seconds")),
            "correct": run.get("correct")}


def _reduction(x, y) -> float | None:
    r = common.ratio(x, y)
    return None if r is None else 1 - r


def _bytes_reduction(s: dict, b: dict | None) -> tuple[str | None, float | None]:
    """(which bytes, 1 - s / b): the captured payload per sync when both runs were captured,
    else the push + pull bytes the ranks logged (without Gloo framing)."""
    if not b:
        return None, None
    for basis, key in (("captured", "captured_bytes"), ("logged", "logged_bytes")):
        if s[key] is not None and b[key] is not None:
            return basis, _reduction(s[key], b[key])
    return None, None


def _time_reduction(s: dict, b: dict) -> tuple[str, float | None]:
    """(what was compared, 1 - s / b): time to the target when both reached it, else the wall time
    of the same iterations."""
    if s["target_s"] is not None and b["target_s"] is not None:
        return f"time to {100 * s['target']:g}% accuracy", _reduction(s["target_s"], b["target_s"])
    return "wall time of the same iterations", _reduction(s["jct_s"], b["jct_s"])


def pair(runs: list) -> list[dict]:
    rows = []
    for (topology, model, workers), members in common.groups(runs).items():
        family = sorted((summary(r) for r in members if r.get("algorithm") in FAMILY),
                        key=lambda s: (FAMILY.index(s["algorithm"]), s["density"] or 0))
        for d in family:
            if d["algorithm"] != "dfs":
                continue
            omni = next((s for s in family if s["algorithm"] == "omnireduce" and s["density"] == d["density"]), None)
            topk = next((s for s in family if s["algorithm"] == "topk_ps" and s["density"] == d["density"]), None)
            dense = next((s for s in family if s["algorithm"] == "ps"), None)
            if not (omni or topk or dense):
                continue  # nothing to compare with
            time_metric, time_reduction = _time_reduction(d, dense) if dense else (None, None)
            omni_basis, omni_reduction = _bytes_reduction(d, omni)
            topk_basis, topk_reduction = _bytes_reduction(d, topk)
            rows.append({"topology": topology, "model": model, "workers": workers, "dfs": d["label"],
                         "runs": family,
                         "omnireduce": omni and omni["label"],
                         "bytes_reduction_vs_omnireduce": omni_reduction, "bytes_vs_omnireduce": omni_basis,
                         "bytes_reduction_vs_topk_ps": topk_reduction, "bytes_vs_topk_ps": topk_basis,
                         "dense": dense and dense["label"], "time_metric": time_metric,
                         "time_reduction_vs_ps": time_reduction,
                         # every run a headline number rests on
                         **common.verdicts([(s["label"], s["run"]) for s in (d, omni, topk, dense) if s])})
    return rows


def _pct(x) -> str:
    return NA if x is None else f"{100 * x:.1f}%"


def _less(x) -> str:
    """1 - DFS / baseline as words: "75.9% less" or "57.3% more"."""
    if x is None:
        return NA
    return f"{100 * x:.1f}% less" if x >= 0 else f"{-100 * x:.1f}% more"


def _mb(x) -> str:
    return NA if x is None else f"{x / 1e6:.3f}"


def _less_of(x, basis: str | None) -> str:
    """A reduction with the bytes it compares when those were not captured."""
    return _less(x) + (" (logged bytes: not captured)" if basis == "logged" else "")


def _runs_table(rows: list[dict]) -> list[str]:
    seen, lines = set(), []
    for r in rows:
        for s in r["runs"]:
            key = (r["topology"], r["model"], r["workers"], s["label"])
            if key in seen:
                continue
            seen.add(key)
            target = (NA if s["target"] is None else "not reached" if s["target_iter"] is None
                      else f"iter {s['target_iter']}, {fmt(s['target_s'], '.1f')} s")
            captured = "not captured" if s["captured_bytes"] is None else _mb(s["captured_bytes"])
            lines.append([str(r["model"]), fmt(r["workers"], "g"), s["label"], _mb(s["push_bytes"]),
                          _mb(s["pull_bytes"]), captured, _pct(s["zero_block_fraction"]),
                          s["blocks_used"], fmt(s["sparsify_s"], ".3f"), fmt(s["sync_s"], ".3f"),
                          fmt(s["per_iteration_s"], ".3f"),
                          _pct(s["final_accuracy"]), target, yes_no(s["correct"]), run_faithful_cell(s["run"]),
                          run_failed_cell(s["run"])])
    return table(["model", "workers", "algorithm", "push MB/sync", "pull MB/sync", "captured MB/sync",
                  "zero blocks", "block sizes used (iterations)", "sparsify s", "median sync s", "s per iteration",
                  "final accuracy", "target accuracy reached", "correct", "faithful", "failed checks"], lines)


def render(rows: list[dict]) -> list[str]:
    intro = ("Same model, topology and workers, PS shards as configured. Push = workers to shard owners, pull = owners "
             "to workers: payload bytes per sync the ranks recorded sending (block headers and meta words included, "
             "Gloo framing not); captured = every host NIC's transmitted payload per sync from the capture. Zero "
             "blocks: the fraction of blocks a worker did not send, mean over workers and iterations. Sparsify: a "
             "worker's CPU time per sync for error feedback, selection and blocks (inside the sync). Seconds per "
             "iteration: wall time of the whole run (compute, sparsification, sync, evaluation) over its iterations; "
             "time to the target from the first iteration's start.")
    headline = table(["model", "workers", "DFS", "payload vs OmniReduce (same density)", "paper (up to)",
                      "payload vs Top-k PS", "training time vs dense PS", "compared", "paper (ResNet-18)",
                      "faithful", "failed checks"],
                     [[str(r["model"]), fmt(r["workers"], "g"), r["dfs"],
                       _less_of(r["bytes_reduction_vs_omnireduce"], r["bytes_vs_omnireduce"]),
                       _less(PAPER_BYTES_REDUCTION),
                       _less_of(r["bytes_reduction_vs_topk_ps"], r["bytes_vs_topk_ps"]),
                       _less(r["time_reduction_vs_ps"]),
                       r["time_metric"] or NA, _pct(PAPER_TIME_REDUCTION) + " less", common.faithful_cell(r),
                       common.failed_cell(r)]
                      for r in rows])
    body = headline + ["", "Every run of the comparison:", ""] + _runs_table(rows)
    return common.section("DFS against OmniReduce, Top-k on the PS and the dense PS (Yang et al., Computer "
                          "Networks 2023)", CITATION, intro, body, CLAIMS)


PAPER = Paper(name="dfs", citation=CITATION, claims=CLAIMS, algorithms=("dfs", "omnireduce"), pair=pair,
              render=render)
