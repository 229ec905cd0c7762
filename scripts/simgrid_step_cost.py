"""SimGrid's CPU per step of F concurrent flows, by how the flows end (the run-time estimate's fit,
`emulation/simulator/core.py` `step_seconds`; issue #23).

One step of F flows between seeded random host pairs of a Fat-Tree k = 8 with two-level routing
(the projections' driver actor, `core.simulate`), in three regimes:
- equal: every flow 1 MiB on 1000 Mbit/s links (flows of one bottleneck end together);
- unequal: flow i carries 1 MiB + 64 i bytes (every flow ends at a moment of its own, as the
  classes of a reduced schedule, unequal shards, or chunks of a pipelined schedule do);
- heterogeneous: equal flows, aggregation-core links at 250 Mbit/s (4:1, the forest's scenario 3).
For each, CPU = a F + b F^2 with a the estimate's 1e-4 s per flow and b by relative least
squares (`core.fit_pair_cost`). SimGrid's network model re-solves every
coupled flow's share at each flow's end (network/optim:Full), so b grows with how many distinct
moments the flows end at.

    .venv/bin/python scripts/simgrid_step_cost.py --out docs/results/simgrid-step-cost
"""
from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from emulation.simulator import core
from emulation.simulator import platform as simgrid_platform
from topologies.spec import build

FLOWS = (500, 1000, 2000, 4000, 6000, 8000)
REGIMES = ("equal", "unequal", "heterogeneous")
MIB = 2**20


def one_step(regime: str, flows: int, seed: int = 1) -> dict:
    """Simulate one step of `flows` flows; the child's CPU seconds and the step's simulated time."""
    link_bw = {"agg-core": 250} if regime == "heterogeneous" else None
    fast = simgrid_platform.indexed(build("fattree,k=8", bw=1000, link_bw=link_bw, ecmp="two-level"))
    hosts = fast.hosts()
    rng = random.Random(seed)
    every = [(s, d) for s in hosts for d in hosts if s != d]
    pairs = rng.sample(every, flows)
    platform = simgrid_platform.platform_for(fast, [(s, d, 0) for s, d in pairs])
    step = [(*platform.endpoints[(s, d, 0)], MIB + (64 * i if regime == "unequal" else 0))
            for i, (s, d) in enumerate(pairs)]
    sim = core.simulate(platform, [step])
    return {"regime": regime, "flows": flows, "cpu_seconds": round(sim["wall"]["cpu_seconds"], 4),
            "run_seconds": round(sim["wall"]["run_seconds"], 4), "simulated_seconds": sim["sync_seconds"]}


def fit(points: list) -> dict:
    """cpu = a F + b F^2 with a = core.CPU_PER_FLOW and b by relative least squares
    (`core.fit_pair_cost`), and each point's estimate over its CPU."""
    f = [p["flows"] for p in points]
    y = [p["cpu_seconds"] for p in points]
    b = core.fit_pair_cost(f, y)
    return {"per_flow": core.CPU_PER_FLOW, "per_flow_pair": b,
            "estimate_over_cpu": [round((core.CPU_PER_FLOW * n + b * n * n) / c, 3) for n, c in zip(f, y)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for result.json")
    ap.add_argument("--refit", action="store_true", help="recompute the fits of the points in --out")
    args = ap.parse_args()
    out = Path(args.out)
    if args.refit:
        result = json.loads((out / "result.json").read_text())
        result["fits"] = {r: fit([p for p in result["points"] if p["regime"] == r]) for r in REGIMES}
        (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result["fits"]))
        return
    if core.simgrid_available() is not None:
        raise SystemExit(f"simgrid_step_cost: {core.simgrid_available()}")
    out.mkdir(parents=True, exist_ok=True)
    result = {"what": "SimGrid CPU of one step of F flows on a Fat-Tree k=8 (two-level), driver actor",
              "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "points": [], "fits": {}}
    for regime in REGIMES:
        for flows in FLOWS:
            p = one_step(regime, flows)
            result["points"].append(p)
            print(f"{regime:14s} F={flows:5d}  CPU {p['cpu_seconds']:7.3f} s", flush=True)
        result["fits"][regime] = fit([p for p in result["points"] if p["regime"] == regime])
    result["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    for regime, f in result["fits"].items():
        print(f"{regime:14s} b = {f['per_flow_pair']:.3g} s/flow pair; estimate/CPU {f['estimate_over_cpu']}")

if __name__ == "__main__":
    main()
