"""docs/dfs.md: the runs and the headline."""
from __future__ import annotations

from emulation.papers import common
from emulation.report.doctables.cells import (
    outside_tolerance, payload_range, pct, runs_of, starred, unfaithful_notes, verdict)
from emulation.results.columns import NA, fmt, table
from emulation.results.load import num


# the whole file, 2026-11-29, with the block-sparse executors and PS posting every receive first
DFS = "dfs-resnet18-digits-paper-table/summary.json"


DFS_FAMILY = ("dfs", "omnireduce", "topk_ps", "ps")


def _dfs_run(run: dict) -> dict:
    """What the DFS tables show of one run (the fields emulation/papers/dfs.py reads)."""
    phases = run.get("phase_bytes_per_sync") or {}
    tta = run.get("time_to_accuracy") or {}
    acc = (run.get("training") or {}).get("accuracy") or []
    jct, iters = num(run.get("jct_seconds")), num(run.get("iters"))
    return {"run": run, "label": common.label(run), "algorithm": run.get("algorithm"),
            "push": num(phases.get("push")), "pull": num(phases.get("pull")),
            "captured": common.bytes_per_sync(run) if run.get("payload_bytes_measured") else None,
            "zero": num(run.get("zero_block_fraction")), "sync_s": common.sync_s(run),
            "per_iteration_s": jct / iters if jct is not None and iters else None,
            "final_accuracy": acc[-1] if acc else None, "target": num(tta.get("target")),
            "target_iter": tta.get("iter"), "target_s": num(tta.get("seconds"))}


def _mb(x) -> str:
    """MB (1e6 bytes, as the DFS report): one decimal from 10 MB, two from 1, else three."""
    v = num(x)
    if v is None:
        return NA
    v /= 1e6
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}" if v >= 1 else f"{v:.3f}"


def _dfs_groups(data: dict) -> dict:
    out: dict = {}
    for r in runs_of(data, DFS):
        if r.get("algorithm") in DFS_FAMILY:
            out.setdefault(r.get("model"), {})[r["algorithm"]] = _dfs_run(r)
    if not out:
        raise ValueError(f"{DFS}: no run of {', '.join(DFS_FAMILY)}")
    return out


def dfs_runs(data: dict) -> list[str]:
    """Section 7: every run of the DFS experiment."""
    rows, notes = [], []
    for model, family in _dfs_groups(data).items():
        for algo in DFS_FAMILY:
            d = family.get(algo)
            if d is None:
                continue
            reached = (NA if d["target"] is None else "not reached" if d["target_iter"] is None
                       else f"iter {d['target_iter']}, {fmt(d['target_s'], '.1f')} s")
            used = d["run"].get("blocks_used") or {}
            rows.append([str(model), d["label"], _mb(d["push"]), _mb(d["pull"]), _mb(d["captured"]),
                         pct(d["zero"]), ", ".join(f"{b} x{n}" for b, n in used.items()) or NA,
                         starred(d["sync_s"], d["run"]),
                         fmt(d["per_iteration_s"], ".3g"), pct(d["final_accuracy"]), reached, verdict(d["run"])])
            notes.append((f"{model} {d['label']}", d["run"]))
    runs = [r for _, r in notes]
    return table(["model", "algorithm", "push MB/sync", "pull MB/sync", "captured MB/sync", "zero blocks",
                  "block sizes used (iterations)", "median sync s", "s/iteration", "final held-out accuracy",
                  "90% reached", "faithful"], rows) + [
        "", f"Payload captured / logged over the {len(runs)} runs: {payload_range(runs)}; "
            f"{len(outside_tolerance(runs))} outside the tolerance on some port; correct: "
            f"{sum(1 for r in runs if r.get('correct') is True)} of {len(runs)}."] + unfaithful_notes(notes)


def _less(x, y) -> str:
    r = common.ratio(x, y)
    return NA if r is None else f"{100 * (1 - r):.1f}% less" if r <= 1 else f"{100 * (r - 1):.1f}% more"


def dfs_headline(data: dict) -> list[str]:
    """Section 7: DFS against OmniReduce, Top-k on the PS and the dense PS, beside the abstract."""
    rows = []
    for model, f in _dfs_groups(data).items():
        d, o, t, p = (f.get(a) for a in DFS_FAMILY)
        if d is None:
            continue
        cmp = [x for x in (d, o, t, p) if x is not None]
        time_cell = NA
        if p is not None:
            if d["target_s"] is not None and p["target_s"] is not None:
                time_cell = f"{_less(d['target_s'], p['target_s'])} to {100 * d['target']:g}% " \
                            f"({fmt(d['target_s'], '.1f')} against {fmt(p['target_s'], '.1f')} s)"
            else:
                time_cell = f"{_less(d['run'].get('jct_seconds'), p['run'].get('jct_seconds'))} wall time"
        rows.append([str(model), _less(d["captured"], o and o["captured"]) if o else NA, "87.17% less (up to)",
                     _less(d["captured"], t and t["captured"]) if t else NA, time_cell,
                     "74.12% less (ResNet-18)", ", ".join(f"{x['label']} {verdict(x['run'])}" for x in cmp)])
    return table(["model", "DFS payload vs OmniReduce (captured, same density)", "paper",
                  "DFS payload vs Top-k PS", "DFS training time vs dense PS", "paper", "faithful"], rows)
