"""Expected bytes of an algorithm's flows on the installed routes, and the busiest-link bound.

Pure: a topology description and flows in, bytes and seconds out. The analysis checks the
captures against these; the SimGrid simulation (emulation/project.py) reports the bound next
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
"""
from __future__ import annotations

from topologies.description import Topology
from workloads.algorithms.base import wire_flows


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
