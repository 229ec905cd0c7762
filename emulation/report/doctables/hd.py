"""docs/ADDING_AN_ALGORITHM.md: the hd walkthrough's measured table."""
from __future__ import annotations

from emulation.papers import common
from emulation.report.doctables.cells import runs_of, verdict
from emulation.results.columns import fmt, table
from emulation.results.load import num


HD_FOLDERS = ("hd-default", "hd-default-two-level")


def hd_default(data: dict) -> list[str]:
    """hd against ring and gloo in the default setting: sync, both bounds, shared links."""
    rows = []
    for folder in HD_FOLDERS:
        for r in runs_of(data, f"{folder}/summary.json"):
            sync = common.sync_s(r)
            step = num(r.get("bound_step_seconds"))
            c = r.get("collisions") or {}
            first = (c.get("first") or [None])[0]
            shared = (f"{c['count']} (step {first['step']}: {first['link']}, {first['flows']} flows)"
                      if c.get("count") else "none")
            ecmp = data[f"{folder}/config.yaml"].get("ecmp", "hash")
            rows.append([f"`{folder}`", f"{r['topology']}" + (f", {ecmp} ECMP" if r["topology"].startswith("fattree") else ""),
                         common.label(r), fmt(sync, ".3f"), fmt(r.get("bound_seconds"), ".3f"), fmt(step, ".3f"),
                         fmt(sync / step if sync and step else None, ".2f"), shared, verdict(r)])
    return table(["results folder", "network", "algorithm", "median sync s", "bound s", "step bound s",
                  "sync / step bound", "shared links (first)", "faithful"], rows)
