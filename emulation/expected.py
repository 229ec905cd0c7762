"""Expected bytes of an algorithm's flows on the installed routes, and the busiest-link bound.

Pure: a topology description and flows in, bytes and seconds out. The analysis checks the
captures against these; the SimGrid simulation (emulation/simulator/core.py) reports the bound next
to its own times.
- Expected payload per host NIC: the flows laid onto `Topology.route` (a relaying BCube
  server's NICs carry the flows it forwards, docs/DESIGN.md), each direction of a
  connection on its own route: the data and the sender's framing from src to dst, the
  receiver's notifications from dst to src (`base.wire_flows`; on BCube the two directions
  can relay through different servers).
- Expected payload per switch port: the same flows through the switches along the
  controller's deterministic ECMP choices.
- Bound: the busiest directed link's expected bytes of one sync over its bandwidth: no
  schedule can beat it on this routing (ECMP collisions included).
- The expected flows of an algorithm whose bytes depend on the data: what its ranks logged
  (`logged_flows`, the one function here that reads files), shared by the analysis and the
  simulation's replay of a measured run.
"""
from __future__ import annotations

from pathlib import Path

from topologies.description import Topology
from workloads.algorithms import base
from workloads.algorithms.base import wire_flows
from workloads.eventlog import read_logs


def links_of(topo: Topology, hosts: list, flow) -> list[str]:
    """Directed links a flow crosses, each named by the interface that transmits onto it:
    the sending NIC of each host-to-host hop (relays included), then each switch egress."""
    dst_ip = topo.host_nics(hosts[flow.dst])[flow.nic].ip
    return [tx for tx, _ in topo.route(hosts[flow.src], dst_ip)]


def expected_nic_bytes(topo: Topology, hosts: list, flows: list, syncs: int = 1) -> dict:
    """host NIC -> {"tx", "rx"} payload bytes of `syncs` syncs, laid onto the routes."""
    out = {n.name: {"tx": 0, "rx": 0} for h in hosts for n in topo.host_nics(h)}
    for f in wire_flows(flows):
        dst_ip = topo.host_nics(hosts[f.dst])[f.nic].ip
        b = f.payload * syncs
        for tx, rx in topo.route(hosts[f.src], dst_ip):
            if tx in out or topo.nodes[topo.intfs[tx].node].kind == "host":
                out.setdefault(tx, {"tx": 0, "rx": 0})["tx"] += b
            if rx in out or topo.nodes[topo.intfs[rx].node].kind == "host":
                out.setdefault(rx, {"tx": 0, "rx": 0})["rx"] += b
    return out


def expected_port_bytes(topo: Topology, hosts: list, flows: list, syncs: int = 1) -> dict:
    """switch port -> {"rx" (into the switch), "tx" (out of it)} payload bytes."""
    out = {i.name: {"tx": 0, "rx": 0} for i in topo.intfs.values() if topo.nodes[i.node].kind == "switch"}
    for f in wire_flows(flows):
        dst_ip = topo.host_nics(hosts[f.dst])[f.nic].ip
        for tx, rx in topo.route(hosts[f.src], dst_ip):
            if tx in out:  # a switch egress
                out[tx]["tx"] += f.payload * syncs
            if rx in out:  # a switch ingress
                out[rx]["rx"] += f.payload * syncs
    return out


def bound_seconds(topo: Topology, per_sync: dict) -> float:
    """Largest expected bytes / bandwidth over the given interfaces and directions."""
    worst = 0.0
    for intf, d in per_sync.items():
        bw = topo.link_of(intf).bw * 1e6 / 8
        worst = max(worst, d["tx"] / bw, d["rx"] / bw)
    return worst


def step_bound(topo: Topology, hosts: list, steps: list) -> dict:
    """The per-step bound of a schedule that runs its steps one after another (`Algorithm.steps`:
    PS push then pull, BML's 2k stages, halving-doubling's exchanges, one group after another):
    each step lasts at least its busiest directed link's bytes over that link's bandwidth, on
    the installed routes, so no such schedule beats the sum. `bound_seconds` spreads the whole
    sync's bytes over the links instead, which a step-by-step algorithm cannot reach when its
    steps load different links; with one step the two are equal.

    Collisions: in a step, a link shared by two or more of its flows whose time exceeds the
    step's endpoint bound (the busiest source or destination NIC if every flow went straight
    from its NIC to its peer's, as on a non-blocking fabric): the plan assumed those flows
    apart and the routes put them together (hash ECMP, a relay). Each is reported with its
    step, link, flows and seconds against the endpoint bound."""
    routes: dict = {}

    def route(src: int, dst: int, nic: int) -> list:
        key = (src, dst, nic)
        if key not in routes:
            routes[key] = topo.route(hosts[src], topo.host_nics(hosts[dst])[nic].ip)
        return routes[key]

    def bps(intf: str) -> float:
        return topo.link_of(intf).bw * 1e6 / 8

    total, per_step, collisions = 0.0, [], []
    for i, step in enumerate(steps):
        load: dict = {}  # directed link (its transmitting interface) -> bytes
        sharing: dict = {}  # directed link -> the forward flows crossing it
        ends: dict = {}  # (src NIC, "tx") / (dst NIC, "rx") -> bytes, as on a non-blocking fabric
        for f in wire_flows(step):
            hops = route(f.src, f.dst, f.nic)
            for tx, _ in hops:
                load[tx] = load.get(tx, 0) + f.bytes
            src_nic = hops[0][0]  # the NIC the source's routes send it out of
            dst_nic = topo.host_nics(hosts[f.dst])[f.nic].name
            ends[(src_nic, "tx")] = ends.get((src_nic, "tx"), 0) + f.bytes
            ends[(dst_nic, "rx")] = ends.get((dst_nic, "rx"), 0) + f.bytes
        for f in step:
            if f.bytes and f.src != f.dst:
                for tx, _ in route(f.src, f.dst, f.nic):
                    sharing.setdefault(tx, set()).add((f.src, f.dst))
        busiest = max(((b / bps(tx), tx) for tx, b in load.items()), default=(0.0, None))
        endpoint = max((b / bps(nic) for (nic, _), b in ends.items()), default=0.0)
        total += busiest[0]
        per_step.append({"seconds": busiest[0], "link": busiest[1], "endpoint_seconds": endpoint})
        for tx, flows in sharing.items():
            t = load[tx] / bps(tx)
            if len(flows) >= 2 and t > endpoint * (1 + 1e-9):
                collisions.append({"step": i, "link": tx, "flows": len(flows), "seconds": t,
                                   "endpoint_seconds": endpoint})
    collisions.sort(key=lambda c: (-c["seconds"] / max(c["endpoint_seconds"], 1e-12), c["step"], c["link"]))
    return {"seconds": total, "steps": len(steps), "per_step": per_step, "collisions": collisions}


def logged_flows(log_dir: Path, syncs: int, logs: dict | None = None) -> list:
    """The flows the ranks handed to `Comm.send` in iterations 0..syncs-1 (warmup included, as
    the capture covers them), summed per (src, dst, nic): the expected traffic of an
    algorithm whose bytes depend on the data (`Algorithm.data_dependent`)."""
    flows = []
    for rank, events in (logs if logs is not None else read_logs(log_dir)[0]).items():
        for ev in events:
            if ev.get("event") == "iter" and ev.get("iter", syncs) < syncs:
                flows += [base.Flow(rank, int(dst), int(nic), int(b), int(m)) for dst, nic, b, m in ev.get("sent", [])]
    return base.merge_flows(flows)
