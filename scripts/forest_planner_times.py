"""The forest planner's run time on Fat-Trees, for docs/forest.md ("Planner run time").

    .venv/bin/python scripts/forest_planner_times.py [--repeats 3] [--out docs/results/forest-planner-times/result.json]

Pure computation, no emulation, under a minute: for each case of tests/unit/test_forest.py's
`test_planner_run_time` (Fat-Tree k=4 with 16 workers, k=8 with 64), the routes alone (the
overlay the planner packs, `forest.overlay_from_topology`: one `Topology.route` per pair) and
the whole plan as the test times it (routes, column generation, bounded trees, cut bound),
`--repeats` times each on a fresh topology, with the plan's rounds, trees, height and rate
against the optimum. A timing: it varies with the CPU and its load, so the file says which
machine and when, and `syncbed docs` prints it as measured then. Run it on an idle machine.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.unit import test_forest as tf  # noqa: E402
from topologies.spec import build  # noqa: E402
from workloads.planners import forest as packing  # noqa: E402

CASES = ((4, 16), (8, 64))  # test_planner_run_time's


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def case(k: int, workers: int, repeats: int) -> dict:
    routes, whole, p = [], [], None
    for _ in range(repeats):
        topo = build(f"fattree,k={k}")
        t0 = time.perf_counter()
        packing.overlay_from_topology(topo, topo.hosts()[:workers])
        routes.append(time.perf_counter() - t0)
        topo = build(f"fattree,k={k}")  # fresh: no route cached by the first
        t0 = time.perf_counter()
        _, p = tf.plan(topo, topo.hosts()[:workers])
        whole.append(time.perf_counter() - t0)
        print(f"fattree(k={k}), {workers} workers: routes {routes[-1]:.2f} s, plan {whole[-1]:.2f} s", flush=True)
    return {"k": k, "workers": workers, "hosts": k ** 3 // 4, "routes_seconds": routes, "plan_seconds": whole,
            "plan_median_seconds": statistics.median(whole), "routes_median_seconds": statistics.median(routes),
            "rounds": p["iterations"], "trees": len(p["trees"]), "max_height": p["max_height"],
            "rate_over_optimum": p["rate"] / p["rate_upper"], "converged": bool(p["converged"])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "docs/results/forest-planner-times/result.json")
    a = ap.parse_args(argv)
    if a.repeats < 1:
        ap.error(f"--repeats {a.repeats}: give 1 or more")
    out = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "command": "scripts/forest_planner_times.py",
           "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "load_1min_before": os.getloadavg()[0]},
           "repeats": a.repeats, "cases": [case(k, w, a.repeats) for k, w in CASES]}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
