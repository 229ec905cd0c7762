"""What concurrent background flows take of the network's links, as every planner and the
simulation see it (issue #10): a paced flow is a constant load on every directed link of
its route, and a link keeps at least LOAD_FLOOR of its capacity (slow, not absent).

Pure: a topology description and the flows (`PlanContext.background`, the form
emulation/background.py parses) in, bytes/s per directed link out. The forest planner
(workloads/planners/forest.py) packs its trees into what is left; the SimGrid simulation
(emulation/simulator/core.py, `less_background`) takes the same load off its platform's links.
"""
from __future__ import annotations

LOAD_FLOOR = 0.05  # a link the background fills keeps this share of its capacity: slow, not absent


def background_load(topo, flows) -> tuple[dict, list]:
    """({link id: bytes/s the background flows take}, notes): each flow's rate on every link of
    its route (`Topology.route` to the destination's first NIC, as iperf3 targets it). The rate
    is the one measured before the run (`measured_mbps`, the runner's probe) when there is one,
    else the declared pacing (`mbps`); an unlimited flow that was not measured takes what TCP
    leaves it, unknown: it is left out and named in the notes."""
    load, notes = {}, []
    for f in flows:
        rate = f.get("measured_mbps") if f.get("measured_mbps") is not None else f.get("mbps")
        if not rate:
            notes.append(f"background flow {f['src']}->{f['dst']} is unlimited and was not measured: its rate is "
                         "unknown, so the capacities it crosses stay as configured")
            continue
        for tx, _ in topo.route(f["src"], topo.host_nics(f["dst"])[0].ip):
            load[tx] = load.get(tx, 0.0) + float(rate) * 1e6 / 8
    return load, notes


def left_over(capacity: float, load: float) -> float:
    """What `load` (bytes/s) leaves of a directed link of `capacity`, never below LOAD_FLOOR of it."""
    return max(capacity - load, LOAD_FLOOR * capacity)
