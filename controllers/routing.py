"""Proactive routes for every switch, computed from the topology description alone.

Plain Python, no Ryu: the Ryu app (`syncbed_app.py`) only translates these rules into
OpenFlow 1.3 messages, so the routing is unit-tested without a switch.

For each switch and each host address, the output ports are those on all shortest
switch-only paths towards the switch port facing that address (description.
`switch_ports_to`). One port -> an output action; several (Fat-Tree upward) -> an
OpenFlow `select` group, which OVS hashes per flow (ECMP). Frames are matched on the
destination MAC, not the destination IP: a BCube server relaying a packet sends it to
the next hop's MAC while the IP header still names the final server, which the
level-l switch of the next hop does not know. ARP on the target protocol address, so ARP requests are routed
like unicast instead of flooded (no broadcast loops in a Fat-Tree, and no ARP on
links that do not lead to the target). Everything else (LLDP, IPv6) is dropped by the
table-miss entry: nothing reaches the controller and nothing floods.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    dst_ip: str
    dst_mac: str
    ports: tuple  # one port: output; several: select group over them


@dataclass(frozen=True)
class SwitchPlan:
    name: str
    dpid: int
    rules: tuple  # Rule, sorted by dst_ip
    groups: dict  # ports tuple -> group id


def plan_switch(topo, switch: str) -> SwitchPlan:
    rules, groups = [], {}
    for ip, mac in sorted((i.ip, i.mac) for i in topo.intfs.values() if i.ip):
        ports = tuple(topo.switch_ports_to(switch, ip))
        if not ports:
            continue  # unreachable from here without a host relaying (BCube)
        if len(ports) > 1 and ports not in groups:
            groups[ports] = len(groups) + 1
        rules.append(Rule(ip, mac, ports))
    return SwitchPlan(switch, topo.nodes[switch].dpid, tuple(rules), groups)


def plan_all(topo) -> dict[int, SwitchPlan]:
    """dpid -> SwitchPlan for every switch of the topology."""
    return {topo.nodes[s].dpid: plan_switch(topo, s) for s in topo.switches()}
