"""Topology-adaptive parameter synchronization: a forest of aggregation/broadcast trees.

Zhang, Wu, Li, INFOCOM 2021 (`CITATION`); only the abstract is available. On
heterogeneous bandwidth the best synchronization topology is a set of trees rooted at
different workers, each aggregating and broadcasting one partition of the gradient; a
near-optimal forest packing uses the available bandwidth, and aggregation overlaps
broadcast.

`pair(runs)`: for each (topology, model, workers), every forest run against every ring,
PS, gloo and BML run (iteration time, else sync time), each row with the forest run's plan
(planned time, cut bound, capacities packed). Rendering: the speed-ups, the plan against
the measurement, and the claims.
"""
from __future__ import annotations

from emulation.papers import Paper, common
from emulation.results.columns import NA, fmt, table
from emulation.results.load import num

BASELINES = ("ring", "ps", "gloo", "bml")

CITATION = ('Z. Zhang, C. Wu, Z. Li, "Near-Optimal Topology-adaptive Parameter Synchronization in Distributed '
            'DNN Training", IEEE INFOCOM 2021, DOI 10.1109/INFOCOM42981.2021.9488678.')
CLAIMS = [
    {"what": "speed-up over state-of-the-art parameter synchronization schemes (up to)", "value": 18.3, "unit": "x",
     "source": "the abstract"},
]


def _details(s: dict, _b: dict) -> dict:
    """The forest run's own plan against its measurement: planned time, the cut bound (over what
    the background leaves too, when it ran with background flows), and which capacities it packed."""
    measured = common.sync_s(s)
    cut = num(s.get("bound_cut_seconds"))
    cut_available = num(s.get("bound_cut_available_seconds"))
    return {"forest_sync_s": measured, "planned_s": num(s.get("planned_seconds")), "cut_s": cut,
            "cut_available_s": cut_available, "over_cut": common.ratio(measured, cut),
            "over_cut_available": common.ratio(measured, cut_available), "capacity": s.get("capacity"),
            "background_source": s.get("background_source"),
            "planned_configured_s": num(s.get("planned_seconds_configured")), "trees": s.get("trees")}


def pair(runs: list) -> list[dict]:
    return common.speedups(runs, ("forest",), BASELINES, prefer="iteration", extra=_details)


def _plan_table(rows: list[dict]) -> list[str]:
    seen, lines = set(), []
    for r in rows:
        key = (r["topology"], r["model"], r["workers"], r["subject"])
        if key in seen:
            continue
        seen.add(key)
        capacity = r["capacity"] or NA
        if r["background_source"]:
            capacity += f" (background {r['background_source']})"
        lines.append([str(r["topology"]), fmt(r["workers"], "g"), r["subject"], fmt(r["trees"], "g"),
                      fmt(r["forest_sync_s"], ".3f"), fmt(r["planned_s"], ".3f"), fmt(r["cut_s"], ".3f"),
                      fmt(r["over_cut"], ".2f"), capacity, fmt(r["planned_configured_s"], ".3f"),
                      fmt(r["cut_available_s"], ".3f"), fmt(r["over_cut_available"], ".2f")])
    return table(["topology", "workers", "forest", "trees", "measured sync s", "planned s", "cut bound s",
                  "measured / cut", "capacities packed", "planned on configured capacities s",
                  "cut bound on available s", "measured / available cut"], lines)


def render(rows: list[dict]) -> list[str]:
    intro = ("Same model, topology and workers. Speed-up = baseline time / forest time. The plan table sets each "
             "forest run against its own plan and the cut bound on all-reduce time (docs/forest.md); with background "
             "flows, the planner packs what they leave (their rates as measured before the run, else as declared) "
             "and the configured-capacity plan and the bound on the available capacities are shown beside it.")
    body = common.speedup_table(rows, "forest") + ["", "The forest's plan against its measurement:", ""] + \
        _plan_table(rows)
    return common.section("Forest packing against ring, PS and all-reduce (Zhang, Wu, Li, INFOCOM 2021)", CITATION,
                          intro, body, CLAIMS)


PAPER = Paper(name="forest", citation=CITATION, claims=CLAIMS, algorithms=("forest",), pair=pair, render=render)
