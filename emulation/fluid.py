"""The flow-level bound: how long one sync takes if every link were shared max-min fairly.

`analysis.bound_seconds` divides the busiest link's bytes by its bandwidth, which no
schedule can beat. This module is one step more concrete and still ideal: it lays the
algorithm's steps (`Algorithm.steps`, e.g. PS's push then pull, BML's 2k stages) onto the
routes the controller installs, and lets each step's flows share every directed link
max-min fairly (progressive filling), re-sharing whenever a flow finishes. A step starts
when the previous one has ended. The result is at least the busiest-link bound; where it
is higher, the algorithm's step structure or its flows' routes cost time even with ideal
sharing, and where the measurement is far above both, the cause is packet-level (TCP
windows, queues, CPU), not the flow pattern (docs/FIDELITY.md #9).

    python -m emulation.fluid --topo bcube,n=4,k=2 --algo ps --workers 16 --mb 4

All of it is pure: a topology description and flows in, seconds out.
"""
from __future__ import annotations

import argparse
import sys

from topologies.description import Topology

MAX_FLOWS = 20000  # per step; beyond this the model would take minutes: report None


def links_of(topo: Topology, hosts: list, flow) -> list[str]:
    """Directed links a flow crosses, each named by the interface that transmits onto it:
    the sending NIC of each host-to-host hop (relays included), then each switch egress."""
    dst_ip = topo.host_nics(hosts[flow.dst])[flow.nic].ip
    return [tx for tx, _ in topo.route(hosts[flow.src], dst_ip)]


def maxmin_rates(paths: list[list[str]], capacity: dict) -> list[float]:
    """Max-min fair rates (bytes/s) by progressive filling: the link with the smallest fair
    share fixes the rate of every flow still unfixed on it, until all are fixed."""
    left = {l: capacity[l] for p in paths for l in p}
    users: dict[str, set] = {l: set() for l in left}
    for i, p in enumerate(paths):
        for l in p:
            users[l].add(i)
    rates = [0.0] * len(paths)
    unfixed = {i for i, p in enumerate(paths) if p}
    while unfixed:
        link = min((l for l in users if users[l]), key=lambda l: left[l] / len(users[l]))
        share = left[link] / len(users[link])
        for i in list(users[link]):
            rates[i] = share
            unfixed.discard(i)
            for l in paths[i]:
                left[l] -= share
                users[l].discard(i)
    return rates


def step_seconds(paths: list[list[str]], sizes: list[float], capacity: dict) -> float:
    """Time until every flow of one step has moved its bytes, re-sharing at each completion."""
    remaining = {i: float(b) for i, b in enumerate(sizes) if b > 0}
    t = 0.0
    while remaining:
        ids = sorted(remaining)
        rates = maxmin_rates([paths[i] for i in ids], capacity)
        if any(r <= 0 for r in rates):
            raise ValueError("a flow with bytes to send crosses no link")
        dt = min(remaining[i] / r for i, r in zip(ids, rates))
        t += dt
        for i, r in zip(ids, rates):
            remaining[i] -= r * dt
            if remaining[i] <= 1e-9 * sizes[i]:
                del remaining[i]
    return t


def fluid_seconds(topo: Topology, hosts: list, steps: list[list]) -> float | None:
    """Sum over the steps of their max-min fair completion times; None if a step is too large."""
    if any(len(step) > MAX_FLOWS for step in steps):
        return None
    total = 0.0
    for step in steps:
        paths = [links_of(topo, hosts, f) for f in step]
        capacity = {l: topo.link_of(l).bw * 1e6 / 8 for p in paths for l in p}
        total += step_seconds(paths, [f.payload for f in step], capacity)
    return total


def main(argv=None) -> int:
    from topologies import spec
    from workloads.algorithms import base

    ap = argparse.ArgumentParser(prog="python -m emulation.fluid", description=__doc__.split("\n")[0])
    ap.add_argument("--topo", required=True, help="bcube,n=N,k=K | fattree,k=K")
    ap.add_argument("--algo", required=True)
    ap.add_argument("--workers", type=int, required=True)
    ap.add_argument("--mb", type=float, default=4.0, help="gradient MiB (one layer)")
    ap.add_argument("--bw", type=float, default=20.0, help="Mbit/s on every link")
    ap.add_argument("--ecmp", default="hash", choices=spec.ECMP_METHODS)
    a = ap.parse_args(argv)
    try:
        topo = spec.build(a.topo, bw=a.bw, ecmp=a.ecmp)
        hosts = topo.hosts()
        if not 1 <= a.workers <= len(hosts):
            raise ValueError(f"--workers must be 1..{len(hosts)} on {topo.name}, got {a.workers}")
        hosts = hosts[:a.workers]
        nics = len(topo.host_nics(hosts[0]))
        ctx = base.PlanContext(workers=a.workers, layer_sizes=(int(a.mb * 2**20) // base.DTYPE_BYTES,),
                               nics=nics, topology=topo, hosts=tuple(hosts))
        algo, plan = base.plan_for(a.algo, ctx)
    except ValueError as e:
        print(f"fluid: {e}", file=sys.stderr)
        return 2
    from emulation.expected import bound_seconds, expected_port_bytes

    steps = algo.steps(plan)
    bound = bound_seconds(topo, expected_port_bytes(topo, hosts, algo.traffic(plan)))
    fluid = fluid_seconds(topo, hosts, steps)
    print(f"{topo.name} {a.algo}, {a.workers} workers, {a.mb:g} MiB, {a.bw:g} Mbit/s, ecmp {a.ecmp}: "
          f"{len(steps)} step(s), busiest-link bound {bound:.3f} s, max-min fluid {fluid:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
