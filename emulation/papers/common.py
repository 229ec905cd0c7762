"""What the paper modules share: which runs are comparable, and how a comparison reads.

Pairing works on summary.json run records (plain dicts). Two runs are comparable when
they ran the same model on the same topology with the same number of workers
(`group_key`); a run is named by its full algorithm spec when the record has one
(`topk,density=0.01`), else by its algorithm. Rendering returns Markdown lines built with
the report's own cells (emulation/results/columns.py), so every section looks alike.
A row keeps the verdicts of the runs it compares (`verdicts`): faithful is True, False or
None (unverified), never a bool of None; which run was not faithful or is unverified, and
every failed check (emulation/checks.py) with its run's name, so a section shows what the
results table shows.
"""
from __future__ import annotations

from emulation import checks
from emulation.results.columns import NA, fmt, table
from emulation.results.load import median_of, num


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
    """Payload one sync put on the wire as the capture saw it: the tx summed over every host
    NIC, divided by the syncs it covered (warmup included); None without a capture (never a
    planned or logged number in its place: a column of captured bytes holds captured bytes)."""
    measured = run.get("payload_bytes_measured") or {}
    syncs = num(run.get("syncs_counted")) or (num(run.get("iters")) or 0) + (num(run.get("warmup")) or 0)
    tx = sum(num((v or {}).get("tx")) or 0 for v in measured.values() if isinstance(v, dict))
    return tx / syncs if tx and syncs else None


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
                             **verdicts([(label(s), s), (label(b), b)]),
                             **(extra(s, b) if extra else {})})
    return rows


# ---- verdicts of the runs a row compares ---------------------------------------------------
def faithful_all(runs: list) -> bool | None:
    """False when any run was not faithful; None when none was unfaithful but one is unverified
    (or was not judged); True only when every run was faithful."""
    vals = [r.get("faithful") for r in runs]
    if any(v is False for v in vals):
        return False
    return True if all(v is True for v in vals) else None


def verdicts(named: list) -> dict:
    """The fields a paper row keeps about the runs it compares, [(name, run record)]:
    `faithful` (faithful_all), `unfaithful` and `unverified` ([(name, why)]: the fidelity
    reasons, or what was not verified), and `failed` ([(name, failed check)], from
    emulation/checks.py: bytes, correctness and fidelity)."""
    unfaithful, unverified, failed = [], [], []
    for name, run in named:
        failed += [(name, f) for f in checks.failed_checks(run)]
        if run.get("faithful") is False:
            unfaithful.append((name, "; ".join(checks.fidelity_failures(run)) or "no reason recorded"))
        elif run.get("faithful") is None:
            unverified.append((name, ", ".join(checks.unverified(run)) or "not judged"))
    return {"faithful": faithful_all([r for _, r in named]), "unfaithful": unfaithful, "unverified": unverified,
            "failed": failed}


def combined(rows: list) -> dict:
    """The verdict fields of several rows as one, each run once (a subject is in every row
    of its group)."""
    out: dict = {"unfaithful": [], "unverified": [], "failed": []}
    for r in rows:
        for key, items in out.items():
            items += [x for x in r[key] if x not in items]
    out["faithful"] = False if out["unfaithful"] else (None if out["unverified"] else True)
    return out


def faithful_cell(row: dict) -> str:
    """yes; or which runs were not faithful and which are unverified, by name."""
    parts = (["**NO**: " + ", ".join(n for n, _ in row["unfaithful"])] if row["unfaithful"] else []) + \
        (["unverified: " + ", ".join(f"{n} ({why})" for n, why in row["unverified"])] if row["unverified"] else [])
    return "; ".join(parts) or "yes"


def failed_cell(row: dict) -> str:
    """Every failed check of the compared runs, each with its run's name; "none"."""
    return "; ".join(f"{n}: {f}" for n, f in row["failed"]) or "none"


def fidelity_sentence(row: dict) -> str | None:
    """Which compared runs were not faithful (and why) or are unverified (and what), so a
    reader knows which times to doubt; None when every run was faithful."""
    parts = [f"{n} was not faithful ({why})" for n, why in row["unfaithful"]] + \
        [f"{n} is unverified ({why} not checked)" if why != "not judged" else f"{n} was not judged"
         for n, why in row["unverified"]]
    if not parts:
        return None
    return "Of these runs, " + "; ".join(parts) + ": read " + ("its" if len(parts) == 1 else "their") + \
        " times with care (see Fidelity)."


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
                  "baseline s", "speed-up", "faithful", "failed checks"],
                 [[str(r["topology"]), str(r["model"]), fmt(r["workers"], "g"), r["subject"], r["baseline"],
                   r["metric"], fmt(r["subject_s"], ".3f"), fmt(r["baseline_s"], ".3f"),
                   NA if r["speedup"] is None else f"{r['speedup']:.2f}x", faithful_cell(r), failed_cell(r)]
                  for r in rows])


def section(title: str, citation: str, intro: str, body: list[str], claims: list) -> list[str]:
    """A paper's section: heading, citation, what was compared, the comparison, the claims."""
    lines = [f"## {title}", "", f"{citation}", ""]
    if intro:
        lines += [intro, ""]
    lines += body + (["", "### What the paper claims", ""] + claims_table(claims) if claims else [])
    return lines + [""]
