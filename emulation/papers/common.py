"""What the paper modules share: which runs are comparable, and how a comparison reads.

Pairing works on summary.json run records (plain dicts). Two runs are comparable when
they ran the same model on the same topology with the same number of workers
(`group_key`); a run is named by its full algorithm spec when the record has one
(`topk,density=0.01`), else by its algorithm. Rendering returns Markdown lines built with
the report's own cells (emulation/report/columns.py), so every section looks alike.
"""
from __future__ import annotations

from emulation.report.columns import NA, fmt, table, yes_no
from emulation.report.load import median_of, num


# ---- pairing -------------------------------------------------------------------------
def label(run: dict) -> str:
    return str(run.get("algo_spec") or run.get("algorithm") or "?")


def model_name(run: dict) -> str:
    """`googlenet` for `googlenet`, `googlenet,tensors=0` or `torchvision:googlenet`."""
    return str(run.get("model") or "").split(",")[0].split(":")[-1].strip().lower()


def group_key(run: dict) -> tuple:
    return (run.get("topology"), run.get("model"), run.get("workers"))


def groups(runs: list) -> dict[tuple, list]:
    """Comparable runs, by `group_key`, in the order the runs came."""
    out: dict[tuple, list] = {}
    for r in runs:
        out.setdefault(group_key(r), []).append(r)
    return out


def sync_s(run: dict) -> float | None:
    med = num(run.get("median_sync_seconds"))
    return med if med is not None else median_of(run.get("sync_seconds"))


def iteration_s(run: dict) -> float | None:
    return median_of(run.get("iteration_seconds"))


def compared_seconds(a: dict, b: dict, prefer: str = "iteration") -> tuple[str, float | None, float | None]:
    """(metric, a's seconds, b's seconds): the median iteration time when `prefer` is
    "iteration" and both runs recorded one, else the median sync time (always the same
    metric for both, so the ratio means something)."""
    if prefer == "iteration" and iteration_s(a) is not None and iteration_s(b) is not None:
        return "iteration", iteration_s(a), iteration_s(b)
    return "sync", sync_s(a), sync_s(b)


def bytes_per_sync(run: dict) -> float | None:
    """Payload one sync put on the wire: the captured tx summed over every host NIC, divided
    by the syncs captured (warmup included); else the plan's `data_bytes_per_sync`."""
    measured = run.get("payload_bytes_measured") or {}
    syncs = (num(run.get("iters")) or 0) + (num(run.get("warmup")) or 0)
    tx = sum(num((v or {}).get("tx")) or 0 for v in measured.values() if isinstance(v, dict))
    if tx and syncs:
        return tx / syncs
    return num(run.get("data_bytes_per_sync"))


def ratio(a, b) -> float | None:
    a, b = num(a), num(b)
    return a / b if a is not None and b else None


def speedups(runs: list, subjects, baselines, prefer: str = "iteration", extra=None) -> list[dict]:
    """One row per (run of `subjects`, comparable run of `baselines`): speed-up = the
    baseline's seconds / the subject's, so above 1 means the subject was faster.
    `extra(subject run, baseline run) -> dict` adds a paper's own fields to each row."""
    rows = []
    for (topology, model, workers), members in groups(runs).items():
        for s in (r for r in members if r.get("algorithm") in subjects):
            for b in (r for r in members if r.get("algorithm") in baselines and r is not s):
                metric, ss, bs = compared_seconds(s, b, prefer)
                rows.append({"topology": topology, "model": model, "workers": workers,
                             "subject": label(s), "subject_algorithm": s.get("algorithm"),
                             "baseline": label(b), "baseline_algorithm": b.get("algorithm"),
                             "metric": metric, "subject_s": ss, "baseline_s": bs, "speedup": ratio(bs, ss),
                             "faithful": bool(s.get("faithful")) and bool(b.get("faithful")),
                             **(extra(s, b) if extra else {})})
    return rows


# ---- rendering -----------------------------------------------------------------------
def value_text(claim: dict) -> str:
    v, unit = claim.get("value"), str(claim.get("unit") or "")
    if isinstance(v, (list, tuple)):
        text = "-".join(f"{x:g}" if isinstance(x, (int, float)) else str(x) for x in v)
    elif isinstance(v, (int, float)):
        text = f"{v:g}"
    else:
        text = str(v)
    return text + unit if unit in ("x", "%") else f"{text} {unit}".strip()


def claims_table(claims: list) -> list[str]:
    header = ["claim", "value", "source"]
    notes = any(c.get("note") for c in claims)
    rows = [[c["what"], value_text(c), c["source"]] + ([c.get("note") or ""] if notes else []) for c in claims]
    return table(header + (["our finding"] if notes else []), rows)


def speedup_table(rows: list, subject: str) -> list[str]:
    return table(["topology", "model", "workers", subject, "baseline", "time compared", f"{subject} s",
                  "baseline s", "speed-up", "faithful"],
                 [[str(r["topology"]), str(r["model"]), fmt(r["workers"], "g"), r["subject"], r["baseline"],
                   r["metric"], fmt(r["subject_s"], ".3f"), fmt(r["baseline_s"], ".3f"),
                   NA if r["speedup"] is None else f"{r['speedup']:.2f}x", yes_no(r["faithful"])] for r in rows])


def section(title: str, citation: str, intro: str, body: list[str], claims: list) -> list[str]:
    """A paper's section: heading, citation, what was compared, the comparison, the claims."""
    lines = [f"## {title}", "", f"{citation}", ""]
    if intro:
        lines += [intro, ""]
    lines += body + (["", "### What the paper claims", ""] + claims_table(claims) if claims else [])
    return lines + [""]
