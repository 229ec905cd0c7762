"""controllers/routing.py: proactive switch rules from the description, no switch, no Ryu.

A switch gets one rule per destination MAC (its first equal-cost port) and, where it has
several equal-cost ports, one higher-priority (source MAC, destination MAC) rule per
source whose shortest paths cross it, with the port `Topology.ecmp_port` hashes for that
pair. Frames are walked through the planned rules the way OVS matches them (source+
destination first, then destination) to show that every host NIC reaches every other,
without loops, along exactly the path the analysis assumes (`Topology.switch_path`).
"""
from __future__ import annotations

from collections import Counter

import pytest

from controllers.routing import plan_all, plan_switch
from topologies.spec import build

pytestmark = pytest.mark.unit

FOREIGN_MAC = "02:ff:00:00:00:01"  # a source no per-source rule names


def host_nics(topo):
    return [i for i in topo.intfs.values() if i.ip]


def by_name(plans):
    return {p.name: p for p in plans.values()}


def tables(plans):
    """switch -> (exact {(src_mac, dst_mac): port}, fallback {dst_mac: port})."""
    out = {}
    for p in plans.values():
        exact = {(r.src_mac, r.dst_mac): r.port for r in p.rules if r.src_mac}
        fallback = {r.dst_mac: r.port for r in p.rules if not r.src_mac}
        out[p.name] = (exact, fallback)
    return out


def walk(topo, tabs, tx_intf: str, src_mac: str, dst_mac: str) -> tuple[str, list[str]]:
    """(host interface the frame ends on, switch interfaces crossed in order); raises on a
    loop, a missing rule or a port that leads nowhere."""
    port = topo.peer(tx_intf)
    seen, path = set(), []
    while True:
        sw = port.node
        assert topo.nodes[sw].kind == "switch"
        assert sw not in seen, f"loop through {sw} from {tx_intf} to {dst_mac}"
        seen.add(sw)
        exact, fallback = tabs[sw]
        out_port = exact.get((src_mac, dst_mac), fallback.get(dst_mac))
        assert out_port is not None, f"{sw} has no rule for {dst_mac} (from {tx_intf})"
        out = f"{sw}-eth{out_port}"
        assert out in topo.intfs, f"{sw} outputs on missing port {out_port}"
        assert out != port.name, f"{sw} sends {dst_mac} back where it came from"
        path += [port.name, out]
        nxt = topo.peer(out)
        if topo.nodes[nxt.node].kind == "host":
            return nxt.name, path
        port = nxt


def all_ecmp_ends(topo, tx_intf: str, dst_ip: str) -> set[str]:
    """Host interfaces reachable by taking *any* equal-cost port at every switch."""
    ends = set()

    def go(port, seen):
        sw = port.node
        assert sw not in seen, f"loop {seen} towards {dst_ip}"
        ports = topo.switch_ports_to(sw, dst_ip)
        assert ports, f"{sw} cannot reach {dst_ip}"
        for p in ports:
            nxt = topo.peer(f"{sw}-eth{p}")
            if topo.nodes[nxt.node].kind == "host":
                ends.add(nxt.name)
            else:
                go(nxt, seen | {sw})

    go(topo.peer(tx_intf), frozenset())
    return ends


@pytest.fixture(scope="module")
def fattree4():
    t = build("fattree,k=4")
    return t, plan_all(t)


def test_plan_all_keys_are_dpids(fattree4):
    t, plans = fattree4
    assert sorted(plans) == sorted(t.nodes[s].dpid for s in t.switches())
    for dpid, p in plans.items():
        assert p.dpid == dpid and t.nodes[p.name].dpid == dpid
        assert plan_switch(t, p.name) == p  # deterministic


def test_fattree_every_switch_routes_every_host(fattree4):
    t, plans = fattree4
    k = t.params["k"]
    want = sorted((i.ip, i.mac) for i in host_nics(t))
    for p in plans.values():
        base = [r for r in p.rules if not r.src_mac]
        assert sorted((r.dst_ip, r.dst_mac) for r in base) == want  # exactly one each
        for r in p.rules:
            assert 1 <= r.port <= k
            assert r.port in t.switch_ports_to(p.name, r.dst_ip)
            assert r.dst_mac == t.ip_owner(r.dst_ip).mac
        for r in base:
            assert r.port == t.switch_ports_to(p.name, r.dst_ip)[0]
        # one choice per (source, destination): no two rules OVS would have to pick between
        keys = Counter((r.src_mac, r.dst_mac) for r in p.rules)
        assert max(keys.values()) == 1


def test_fattree_ecmp_rules_per_role(fattree4):
    t, plans = fattree4
    mac_node = {i.mac: i.node for i in host_nics(t)}
    for sw, p in by_name(plans).items():
        role = t.nodes[sw].role
        per_src = [r for r in p.rules if r.src_mac]
        for r in per_src:
            assert r.port == t.ecmp_port(sw, t.intfs[f"{mac_node[r.src_mac]}-eth0"].ip, r.dst_ip)
            assert len(t.switch_ports_to(sw, r.dst_ip)) == 2  # only where there is a choice
        base = {r.dst_ip: r.port for r in p.rules if not r.src_mac}
        if role == "core":
            assert per_src == []  # one port down per pod
            for ip, port in base.items():
                assert port == t.nodes[t.peer(t.ip_owner(ip).name).node].coords[0] + 1
        elif role == "edge":
            pod, e = t.nodes[sw].coords[:2]
            mine = {h for h in t.hosts() if t.nodes[h].coords[:2] == (pod, e)}
            for ip, port in base.items():
                owner = t.ip_owner(ip)
                assert port == (t.peer(owner.name).port if owner.node in mine else 3)
            # a choice for each of its own hosts towards each remote host, and for no one else
            assert {mac_node[r.src_mac] for r in per_src} == mine
            assert len(per_src) == len(mine) * (len(t.hosts()) - len(mine))
            assert {r.port for r in per_src} == {3, 4}  # both uplinks used
        else:  # agg: down to its pod in one port, a choice upward for its pod's sources
            pod = t.nodes[sw].coords[0]
            pod_hosts = {h for h in t.hosts() if t.nodes[h].coords[0] == pod}
            for r in per_src:
                assert mac_node[r.src_mac] in pod_hosts
                assert t.nodes[t.ip_owner(r.dst_ip).node].coords[0] != pod
            assert len(per_src) == len(pod_hosts) * (len(t.hosts()) - len(pod_hosts))
            assert {r.port for r in per_src} == {3, 4}


def test_bcube_switches_route_only_their_own_servers():
    t = build("bcube,n=3,k=2")
    n = t.params["n"]
    for sw, p in by_name(plan_all(t)).items():
        assert len(p.rules) == n
        assert all(not r.src_mac for r in p.rules)  # no choices: one switch per segment
        attached = {t.peer(i.name).ip: i.port for i in t.node_intfs(sw)}
        assert {r.dst_ip: r.port for r in p.rules} == attached
        for r in p.rules:
            assert r.dst_mac == t.ip_owner(r.dst_ip).mac


@pytest.mark.parametrize("spec", ["fattree,k=2", "fattree,k=4", "fattree,k=6"])
def test_fattree_frames_reach_their_destination_without_loops(spec):
    t = build(spec)
    tabs = tables(plan_all(t))
    nics = host_nics(t)
    for src in nics:
        for dst in nics:
            if dst is src:
                continue
            end, path = walk(t, tabs, src.name, src.mac, dst.mac)
            assert end == dst.name
            assert path == t.switch_path(src.name, dst.ip)  # what the analysis lays bytes on
            a, b = t.nodes[src.node].coords, t.nodes[dst.node].coords
            assert len(path) // 2 == (1 if a[:2] == b[:2] else 3 if a[0] == b[0] else 5)  # shortest
            # a source without its own rules still arrives, on the destination rules alone
            assert walk(t, tabs, src.name, FOREIGN_MAC, dst.mac)[0] == dst.name
            if spec != "fattree,k=6":  # any equal-cost choice at any switch arrives too
                assert all_ecmp_ends(t, src.name, dst.ip) == {dst.name}


def test_fattree4_ecmp_spreads_over_every_core(fattree4):
    """The reason for per-pair rules: every core switch carries some host pair."""
    t, plans = fattree4
    tabs = tables(plans)
    used = Counter()
    nics = host_nics(t)
    for src in nics:
        for dst in nics:
            if dst is not src:
                _, path = walk(t, tabs, src.name, src.mac, dst.mac)
                used.update({x.split("-eth")[0] for x in path})
    assert all(used[s] > 0 for s in t.switches())


@pytest.mark.parametrize("spec", ["bcube,n=2,k=2", "bcube,n=3,k=2", "bcube,n=2,k=3"])
def test_bcube_frames_follow_host_hops(spec):
    """Each host-to-host segment crosses one switch: a frame addressed to the next hop's MAC
    (the IP header still names the final server) lands on exactly that NIC."""
    t = build(spec)
    tabs = tables(plan_all(t))
    for h in t.hosts():
        for o in t.hosts():
            if o == h:
                continue
            for nic in t.host_nics(o):
                hops = t.host_hops(h, nic.ip)
                for tx, rx in hops:
                    end, path = walk(t, tabs, tx, t.intfs[tx].mac, t.intfs[rx].mac)
                    assert end == rx and len(path) == 2
                    assert path == t.switch_path(tx, t.intfs[rx].ip)
                assert t.intfs[hops[-1][1]].node == o


def test_two_level_ecmp_makes_all_to_all_meet_the_nonblocking_bound():
    """Al-Fares' two-level spreading: PS (all-to-all) loads no link more than a host link;
    the per-pair hash collides (as real ECMP does) and loads some core links more."""
    from emulation.analysis import bound_seconds, expected_nic_bytes, expected_port_bytes
    from workloads.algorithms import base as algos

    algo, plan = algos.plan_for("ps", algos.PlanContext(workers=16, layer_sizes=(1 << 20,)))
    flows = algo.traffic(plan)
    bounds = {}
    for ecmp in ("hash", "two-level"):
        t = build("fattree,k=4", bw=20, ecmp=ecmp)
        hosts = t.hosts()
        bounds[ecmp] = (bound_seconds(t, expected_port_bytes(t, hosts, flows)),
                        bound_seconds(t, expected_nic_bytes(t, hosts, flows)))
    routed, nonblocking = bounds["two-level"]
    assert routed == pytest.approx(nonblocking)
    assert bounds["hash"][0] > 1.2 * bounds["hash"][1]


def test_unknown_ecmp_method_is_rejected_with_the_valid_ones():
    with pytest.raises(ValueError, match=r"ecmp 'random' is unknown; valid: hash, two-level"):
        build("fattree,k=4", ecmp="random")
