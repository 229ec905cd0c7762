"""The forest planner against the optimum, computed for docs/forest.md ("Measured: how near the optimum").

    .venv/bin/python scripts/forest_planner_tables.py [--out docs/results/forest-planner/result.json]

Pure computation with the project's planner (workloads/planners/forest.py through
`base.plan_for`), no emulation, under a minute:

1. Tiny networks: the packing's rate against the LP over ALL spanning trees (every NIC choice,
   enumerated), and with max_trees = 1, 2, 3 against the best set of that many trees. The
   networks, the enumeration and the packings' settings are tests/unit/test_forest.py's own
   (tiny_networks, four_worker_overlays, lp_over_all_trees, best_of_k_trees), which require the
   same optimum.
2. The scenario topologies (16 workers, a 4 MiB gradient, 20 Mbit/s links unless changed, the
   default hash ECMP routes): the forest's plan (fallback=none, so the trees are shown even where
   the ring would run): bandwidth term, pipeline model, rate against column generation's optimum,
   trees and height, and the planner's own timer (a timing: it varies with the CPU and its load);
   ring (rank order, NIC 0) and co-located PS as the busiest link of their traffic on the same
   routes (`busiest_seconds` of the unit test); the cut bound and ForestColl's RS+AG bound; and the
   rate against the optimum planned again with the tallest height the planner tries
   (max_height = 2 ceil(log2 N)), and with that and twice the default tree cap.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.unit import test_forest as tf  # noqa: E402
from topologies.spec import build  # noqa: E402
from workloads.planners import forest as packing  # noqa: E402

WORKERS = 16
TALL = 2 * packing.default_height(WORKERS)  # the tallest height `pack` tries for 16 workers
MORE_TREES = 2 * packing.MAX_TREES

# tests/unit/test_forest.py's networks (its keys) -> how docs/forest.md names them
TINY = {
    "uniform complete 4": "uniform complete graph, 4 workers",
    "uniform complete 5": "uniform complete graph, 5 workers",
    "star, unequal host links": "star, host links 4, 3, 2, 1.5, 1",
    "dumbbell": "dumbbell h1 - s1 =c= s2 - {h2, h3}, c = 1/4 of the host links",
    "complete digraph, random asymmetric": "complete digraph, 5 workers, random asymmetric capacities (seed 3)",
    "complete digraph, random asymmetric (2)": "complete digraph, 5 workers, random asymmetric capacities (seed 7)",
    "fattree(4), 5 unequal hosts": "Fat-Tree k=4, 5 workers, host links 20/16/12/10/8 Mbit/s",
    "bcube(2,2), level 1 slow, 2 NICs": "BCube(2,2), level 1 at 1/4, both NICs",
}
FOUR = {
    "uniform complete 4": "uniform complete graph",
    "star, unequal host links": "star, host links 4, 3, 2, 1",
    "complete digraph, random asymmetric": "complete digraph, random asymmetric capacities (seed 5)",
    "fattree(4), 4 unequal hosts": "Fat-Tree k=4, host links 20/16/12/10 Mbit/s",
}
CAPS = (1, 2, 3)

# the scenario topologies: (name, topology spec, bandwidth overrides from the built topology)
SCENARIOS = (
    ("Fat-Tree k=4, homogeneous", "fattree,k=4", lambda topo: {}),
    ("Fat-Tree k=4, a quarter of hosts at 5 Mbit/s", "fattree,k=4",
     lambda topo: {h: 5.0 for h in topo.hosts()[::4]}),  # one host per pod, as the unit test
    ("Fat-Tree k=4, agg-core at 5 Mbit/s", "fattree,k=4", lambda topo: {"agg-core": 5.0}),
    ("Fat-Tree k=4, edge-agg at 10 Mbit/s", "fattree,k=4", lambda topo: {"edge-agg": 10.0}),
    ("BCube(4,2), homogeneous", "bcube,n=4,k=2", lambda topo: {}),
    ("BCube(4,2), level 1 at 5 Mbit/s", "bcube,n=4,k=2", lambda topo: {"level1": 5.0}),
)
FOREST = "forest,fallback=none"


def tiny_rows() -> tuple[list, list]:
    rows = []
    for name, (ov, _, _) in tf.tiny_networks().items():
        cols, loads = tf.all_tree_columns(ov)
        best = tf.lp_value(cols, loads)
        got = packing.pack(ov)
        row = {"network": TINY[name], "test_name": name, "trees_enumerated": len(loads), "lp_all_trees": best,
               "rate": got.rate, "rate_over_optimum": got.rate / best, "trees": len(got.trees),
               "column_generation_optimum_over_lp": got.optimum / best, "converged": got.converged}
        rows.append(row)
        print(json.dumps(row), flush=True)
    capped = []
    for name, ov in tf.four_worker_overlays().items():
        for k in CAPS:
            best = tf.best_of_k_trees(ov, k)
            got = packing.pack(ov, max_trees=k, max_height=tf.CAPPED_MAX_HEIGHT)
            row = {"network": FOUR[name], "test_name": name, "max_trees": k, "max_height": tf.CAPPED_MAX_HEIGHT,
                   "best_of_k_trees": best, "rate": got.rate, "rate_over_best": got.rate / best,
                   "trees": len(got.trees)}
            capped.append(row)
            print(json.dumps(row), flush=True)
    return rows, capped


def _forest(topo, hosts, options: str = "") -> dict:
    algo, p = tf.plan(topo, hosts, spec=FOREST + options)
    assert not p.get("fallback") and p["trees"], "fallback=none plans trees"
    return {"algo": algo, "plan": p}


def scenario_rows() -> list:
    rows = []
    for name, spec, overrides in SCENARIOS:
        topo = build(spec)
        link_bw = overrides(topo)
        topo.set_bandwidth(link_bw)
        hosts = topo.hosts()[:WORKERS]
        f = _forest(topo, hosts)
        p = f["plan"]
        busiest = {a: tf.busiest_seconds(topo, hosts, algo.traffic(q))
                   for a, (algo, q) in ((a, tf.plan(topo, hosts, spec=a)) for a in ("ring", "ps"))}
        tall = _forest(topo, hosts, f",max_height={TALL}")["plan"]
        more = _forest(topo, hosts, f",max_height={TALL},max_trees={MORE_TREES}")["plan"]
        row = {"network": name, "topology": spec, "link_bw": link_bw, "workers": len(hosts),
               "nics": len(topo.host_nics(hosts[0])),
               "forest_bandwidth_seconds": p["planned_seconds"],
               "forest_busiest_link_seconds": tf.busiest_seconds(topo, hosts, f["algo"].traffic(p)),
               "forest_pipeline_seconds": p["pipeline_seconds"],
               "ring_seconds": busiest["ring"], "ps_seconds": busiest["ps"],
               "cut_bound_seconds": p["bound_cut_seconds"], "rsag_bound_seconds": p["bound_rsag_seconds"],
               "rate_over_optimum": p["rate"] / p["rate_optimum"], "converged": p["converged"],
               "rate_upper_over_optimum": p["rate_upper"] / p["rate_optimum"],
               "trees": len(p["trees"]), "max_height": p["max_height"],
               "heights": sorted({t["height"] for t in p["trees"]}), "method": p["method"],
               "planner_seconds": p["planner_seconds"],
               "tall": {"max_height": TALL, "rate_over_optimum": tall["rate"] / tall["rate_optimum"],
                        "trees": len(tall["trees"]), "pipeline_seconds": tall["pipeline_seconds"]},
               "tall_more_trees": {"max_height": TALL, "max_trees": MORE_TREES,
                                   "rate_over_optimum": more["rate"] / more["rate_optimum"],
                                   "trees": len(more["trees"]), "pipeline_seconds": more["pipeline_seconds"]}}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs/results/forest-planner/result.json"))
    args = ap.parse_args(argv)
    started = time.perf_counter()
    tiny, capped = tiny_rows()
    scenarios = scenario_rows()
    out = {"what": "the forest planner against the optimum: on tiny networks against the LP over all spanning "
                   "trees (and the best k trees), and on the scenario topologies (16 workers, 4 MiB, 20 Mbit/s, "
                   "hash ECMP) against the ring, PS and the bounds; pure computation, no emulation",
           "command": "scripts/forest_planner_tables.py",
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "gradient_bytes": tf.M, "bandwidth_mbps": 20.0, "forest_spec": FOREST,
           "tiny": tiny, "capped": capped, "scenarios": scenarios,
           "wall_seconds": round(time.perf_counter() - started, 1)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out} ({out['wall_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
