"""Topologies as pure graphs, RipL style: closed-form counts, port symmetry, id round-trips.

BCube(n,k) is in BML's notation (docs/DESIGN.md): n^k servers, k levels, k NICs per server,
n^(k-1) switches of n ports per level. Fat-Tree(k) after Al-Fares et al.: k^3/4 hosts,
5k^2/4 switches. No root, no Mininet processes: `mininet.topo.Topo` is only a graph.
"""
from __future__ import annotations

import ipaddress
import json
import re
from itertools import product

import pytest

from topologies import bcube, fattree, spec
from topologies.description import Topology, mac_from_ip

pytestmark = pytest.mark.unit

BCUBES = [(2, 1), (2, 2), (3, 2), (4, 2), (2, 3), (3, 3), (4, 3)]
FATTREES = [2, 4, 6, 8]


def bc(n, k, **kw):
    return spec.build(f"bcube,n={n},k={k}", **kw)


def ft(k, **kw):
    return spec.build(f"fattree,k={k}", **kw)


def name_digits(host: str) -> tuple:
    return tuple(int(c, 16) for c in host[1:])


def ip_to_server(ip: str) -> tuple[int, int]:
    """BCube NIC address 10.l.hi.lo -> (server id, level)."""
    a, level, hi, lo = (int(x) for x in ip.split("."))
    assert a == 10
    return hi * 256 + lo - 1, level


# ---- BCube ------------------------------------------------------------------------------
@pytest.mark.parametrize("n,k", BCUBES)
def test_bcube_closed_form_counts(n, k):
    t = bc(n, k)
    assert t.kind == "bcube" and t.name == f"bcube({n},{k})" and t.params == {"n": n, "k": k, "ecmp": "hash"}
    assert len(t.hosts()) == n**k
    assert len(t.switches()) == k * n ** (k - 1)
    assert len(t.links) == n**k * k
    for level in range(k):
        assert sum(1 for s in t.switches() if t.nodes[s].role == f"level{level}") == n ** (k - 1)
    s = t.summary()
    assert (s["servers"], s["switches"], s["links"], s["nics_per_server"]) == (n**k, k * n ** (k - 1), n**k * k, k)
    assert s["link_classes"] == {f"level{lv}": 20.0 for lv in range(k)}


@pytest.mark.parametrize("n,k", BCUBES)
def test_bcube_ports_and_neighbours(n, k):
    t = bc(n, k)
    for h in t.hosts():
        nics = t.host_nics(h)
        assert [i.port for i in nics] == list(range(k))  # NIC l is eth<l>, on level l
        assert [i.name for i in nics] == [f"{h}-eth{lv}" for lv in range(k)]
        for lv, nic in enumerate(nics):
            sw = t.peer(nic.name).node
            assert t.nodes[sw].role == f"level{lv}"
            assert t.link_of(nic.name).cls == f"level{lv}"
            assert t.peer(t.peer(nic.name).name) == nic  # symmetry
    for sw in t.switches():
        ports = t.node_intfs(sw)
        assert [i.port for i in ports] == list(range(1, n + 1))
        level = int(t.nodes[sw].role[len("level"):])
        servers = [t.peer(i.name) for i in ports]
        assert all(nic.port == level for nic in servers)  # every server on its level-l NIC
        ds = [name_digits(nic.node) for nic in servers]
        pos = k - 1 - level  # digits are written a_{k-1} .. a_0
        for i, d in zip(ports, ds):
            assert d[pos] == i.port - 1  # port a_l + 1 faces the server whose digit l is a_l
        others = {d[:pos] + d[pos + 1:] for d in ds}
        assert len(others) == 1  # level-l neighbours differ only in digit l
        assert sw == f"s{level}_" + ("".join(f"{x:x}" for x in others.pop()) or "0")


@pytest.mark.parametrize("n,k", BCUBES)
def test_bcube_names_digits_ips_round_trip(n, k):
    t = bc(n, k)
    assert t.hosts() == [bcube.server_name(i, n, k) for i in range(n**k)]
    for i in range(n**k):
        ds = bcube.digits(i, n, k)
        assert len(ds) == k and all(0 <= d < n for d in ds)
        assert bcube.server_id(ds, n) == i
        name = bcube.server_name(i, n, k)
        assert name_digits(name) == ds == t.nodes[name].coords
        for lv in range(k):
            ip = bcube.server_ip(i, lv)
            assert ip_to_server(ip) == (i, lv)
            owner = t.ip_owner(ip)
            assert (owner.node, owner.port, owner.prefixlen) == (name, lv, 16)
            assert ipaddress.ip_address(ip) in ipaddress.ip_network(f"10.{lv}.0.0/16")
            for a in range(n):
                j = bcube.neighbour(i, lv, a, n)
                dj = bcube.digits(j, n, k)
                assert dj[k - 1 - lv] == a
                assert [x for p, x in enumerate(dj) if p != k - 1 - lv] == \
                       [x for p, x in enumerate(ds) if p != k - 1 - lv]
    dpids = [t.nodes[s].dpid for s in t.switches()]
    assert len(set(dpids)) == len(dpids) and all(d > 0 for d in dpids)
    for s in t.switches():
        level, j = t.nodes[s].coords
        assert t.nodes[s].dpid == ((level + 1) << 24) + j


@pytest.mark.parametrize("n,k", BCUBES)
def test_bcube_addresses_unique_and_macs_encode_ips(n, k):
    t = bc(n, k)
    nics = [i for i in t.intfs.values() if i.ip]
    assert len(nics) == n**k * k
    assert len({i.ip for i in nics}) == len(nics)
    assert len({i.mac for i in nics}) == len(nics)
    for i in nics:
        assert i.mac == mac_from_ip(i.ip)
        assert ip_from_mac(i.mac) == i.ip
    # switch ports carry no address
    assert all(not i.ip and not i.mac for i in t.intfs.values() if t.nodes[i.node].kind == "switch")


def ip_from_mac(mac: str) -> str:
    octets = mac.split(":")
    assert octets[:2] == ["02", "00"]  # locally administered, unicast
    return ".".join(str(int(o, 16)) for o in octets[2:])


@pytest.mark.parametrize("ip", ["10.0.0.1", "10.3.15.255", "10.255.1.0", "192.168.7.42", "0.0.0.0"])
def test_mac_from_ip_round_trip(ip):
    mac = mac_from_ip(ip)
    assert re.fullmatch(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", mac)
    assert ip_from_mac(mac) == ip


def _sources(n, k):
    """Every server up to 16 servers; beyond (BCube(3,3), BCube(4,3): host_hops parses every
    route, ~20 s for all of BCube(4,3)) the two ends and servers that together take every
    value in every digit, each still routed to every address of every other server."""
    N = n**k
    if N <= 16:
        return range(N)
    return sorted({0, N - 1} | {bcube.server_id(tuple((d + p) % n for p in range(k)), n) for d in range(n)})


@pytest.mark.parametrize("n,k", BCUBES)
def test_bcube_relaying_corrects_one_digit_per_hop(n, k):
    """Server-centric routing: each hop goes between level-l neighbours on NIC l, fixes
    digit l, at most k hops, ends on the destination server (any of its NICs)."""
    t = bc(n, k)
    for i in _sources(n, k):
        src = bcube.server_name(i, n, k)
        for j in range(n**k):
            if j == i:
                continue
            dst = bcube.server_name(j, n, k)
            want = bcube.digits(j, n, k)
            differing = sum(a != b for a, b in zip(bcube.digits(i, n, k), want))
            for m in range(k):
                hops = t.host_hops(src, bcube.server_ip(j, m))
                assert len(hops) == differing <= k
                here, fixed = src, []
                for tx, rx in hops:
                    a, b = t.intfs[tx], t.intfs[rx]
                    assert a.node == here and a.port == b.port  # same level on both ends
                    lv = a.port
                    da, db = name_digits(a.node), name_digits(b.node)
                    changed = [p for p in range(k) if da[p] != db[p]]
                    assert changed == [k - 1 - lv]  # level-l neighbours: only digit l differs
                    assert db[k - 1 - lv] == want[k - 1 - lv]  # ...and it is corrected
                    assert t.peer(tx).node == t.peer(rx).node  # through one level-l switch
                    fixed.append(lv)
                    here = b.node
                assert here == dst
                # highest differing digit first, the address's own level last
                mine = bcube.digits(i, n, k)
                wrong = [lv for lv in reversed(range(k)) if mine[k - 1 - lv] != want[k - 1 - lv]]
                assert fixed == [lv for lv in wrong if lv != m] + [lv for lv in wrong if lv == m]


@pytest.mark.parametrize("n,k", [(3, 2), (2, 3)])
def test_bcube_segments_cross_exactly_one_switch(n, k):
    t = bc(n, k)
    segments = {hop for h in t.hosts() for o in t.hosts() if o != h
                for nic in t.host_nics(o) for hop in t.host_hops(h, nic.ip)}
    assert len(segments) == n**k * k * (n - 1)  # every ordered pair of neighbours, per level
    for tx, rx in segments:
        assert t.switches_between(tx, rx) == [[t.peer(tx).node]]


@pytest.mark.parametrize("n,k", [(2, 2), (3, 2), (4, 2), (2, 3), (3, 3)])
def test_bcube_routes_name_the_source_on_the_destination_level(n, k):
    t = bc(n, k)
    for h in t.hosts():
        i = bcube.server_id(name_digits(h), n)
        nics = {nic.name for nic in t.host_nics(h)}
        arp = {(ip, dev) for ip, _, dev in t.arp[h]}
        for r in t.routes[h]:
            net = ipaddress.ip_network(r.dst)
            assert net.prefixlen == 32
            dst_server, m = ip_to_server(str(net.network_address))
            assert dst_server != i
            assert r.src == bcube.server_ip(i, m)  # own address on the destination's level
            assert r.dev in nics
            via_server, lv = ip_to_server(r.via)
            assert r.dev == f"{h}-eth{lv}"  # next hop on the level of the outgoing NIC
            assert (r.via, r.dev) in arp  # static ARP covers every next hop
        # one route per (other server, level) except one-switch-away addresses on their own level
        one_hop = (n - 1) * k
        assert len(t.routes[h]) == (n**k - 1) * k - one_hop
        assert len(t.arp[h]) == one_hop
        for ip, mac, dev in t.arp[h]:
            assert mac == mac_from_ip(ip) and t.ip_owner(ip).port == int(dev.rsplit("eth", 1)[1])


# ---- Fat-Tree -----------------------------------------------------------------------------
@pytest.mark.parametrize("k", FATTREES)
def test_fattree_closed_form_counts(k):
    t = ft(k)
    assert t.kind == "fattree" and t.name == f"fattree({k})"
    assert len(t.hosts()) == k**3 // 4
    assert len(t.switches()) == 5 * k**2 // 4
    roles = [t.nodes[s].role for s in t.switches()]
    assert roles.count("edge") == roles.count("agg") == k * k // 2
    assert roles.count("core") == (k // 2) ** 2
    assert len(t.links) == 3 * k**3 // 4  # host-edge, edge-agg, agg-core: k^3/4 each
    classes = [link.cls for link in t.links]
    assert classes.count("host") == classes.count("edge-agg") == classes.count("agg-core") == k**3 // 4


@pytest.mark.parametrize("k", FATTREES)
def test_fattree_names_addresses_dpids(k):
    t = ft(k)
    h = k // 2
    for host in t.hosts():
        p, e, i = t.nodes[host].coords
        assert host == f"h{p}_{e}_{i}" and 0 <= p < k and 0 <= e < h and 2 <= i <= h + 1
        (nic,) = t.host_nics(host)
        assert (nic.name, nic.port, nic.ip, nic.prefixlen) == (f"{host}-eth0", 0, f"10.{p}.{e}.{i}", 8)
        assert nic.mac == mac_from_ip(nic.ip) and ip_from_mac(nic.mac) == nic.ip
        assert t.peer(nic.name).name == f"e{p}_{e}-eth{i - 1}"
        assert t.routes[host] == []  # one flat /8: switches do all the routing
        assert len(t.arp[host]) == k**3 // 4 - 1
    assert len({i.ip for i in t.intfs.values() if i.ip}) == k**3 // 4
    assert len({i.mac for i in t.intfs.values() if i.mac}) == k**3 // 4
    dpids = {}
    for s in t.switches():
        node = t.nodes[s]
        d = node.dpid
        dpids[d] = s
        if node.role == "core":
            assert s == f"c{(d >> 8) & 0xff}_{d & 0xff}" and d >> 16 == k
        else:
            p, x = d >> 16, (d >> 8) & 0xff
            assert d & 0xff == 1 and 0 <= p < k
            prefix = "e" if node.role == "edge" else "a"
            assert s == f"{prefix}{p}_{x}"
            assert (x < h) == (node.role == "edge")
    assert len(dpids) == len(t.switches())


@pytest.mark.parametrize("k", FATTREES)
def test_fattree_every_switch_has_k_ports(k):
    t = ft(k)
    h = k // 2
    for s in t.switches():
        ports = t.node_intfs(s)
        assert [i.port for i in ports] == list(range(1, k + 1))
        role = t.nodes[s].role
        peers = [t.nodes[t.peer(i.name).node].role for i in ports]
        if role == "edge":
            assert peers == ["server"] * h + ["agg"] * h  # 1..k/2 down, k/2+1..k up
        elif role == "agg":
            assert peers == ["edge"] * h + ["core"] * h
        else:
            assert peers == ["agg"] * k
            for i in ports:  # core port p+1 faces pod p
                assert t.nodes[t.peer(i.name).node].coords[0] == i.port - 1
        for i in ports:
            assert t.peer(t.peer(i.name).name) == i


@pytest.mark.parametrize("k", FATTREES)
def test_fattree_switch_ports_ecmp_up_single_down(k):
    t = ft(k)
    h = k // 2
    up = list(range(h + 1, k + 1))
    src_edge = "e0_0"
    for host in t.hosts():
        p, e, i = t.nodes[host].coords
        ip = t.host_nics(host)[0].ip
        if (p, e) == (0, 0):
            assert t.switch_ports_to(src_edge, ip) == [i - 1]
        else:  # another subnet: every uplink is a shortest path
            assert t.switch_ports_to(src_edge, ip) == up
        for j, x in product(range(1, h + 1), repeat=2):
            assert t.switch_ports_to(f"c{j}_{x}", ip) == [p + 1]  # one port down at a core
        for a in range(h, k):
            agg = f"a{p}_{a}"
            assert t.switch_ports_to(agg, ip) == [e + 1]
            if p != 0:
                assert t.switch_ports_to(f"a0_{a}", ip) == up


@pytest.mark.parametrize("k", FATTREES)
def test_fattree_paths_between_pods(k):
    t = ft(k)
    h = k // 2
    a = "h0_0_2-eth0"
    pairs = [("h0_0_2-eth0", f"h{k - 1}_{h - 1}_{h + 1}-eth0")]
    if k > 2:
        pairs.append((a, "h1_0_2-eth0"))
    for tx, rx in pairs:
        paths = t.switches_between(tx, rx)
        assert len(paths) == h**2
        assert len({tuple(p) for p in paths}) == h**2
        for path in paths:
            assert len(path) == 5
            assert [t.nodes[s].role for s in path] == ["edge", "agg", "core", "agg", "edge"]
            assert path[0] == t.peer(tx).node and path[-1] == t.peer(rx).node
        assert t.host_hops(t.intfs[tx].node, t.intfs[rx].ip) == [(tx, rx)]
    if h > 1:  # same pod, other edge: k/2 paths over the pod's aggregation switches
        paths = t.switches_between(a, "h0_1_2-eth0")
        assert len(paths) == h and all(len(p) == 3 for p in paths)
        assert t.switches_between(a, "h0_0_3-eth0") == [["e0_0"]]  # same edge switch


# ---- serialisation -------------------------------------------------------------------------
@pytest.mark.parametrize("s", ["bcube,n=2,k=1", "bcube,n=3,k=2", "bcube,n=2,k=3", "fattree,k=2", "fattree,k=4"])
def test_json_round_trip(s):
    t = spec.build(s, bw=15, link_bw={"level0": 5} if s.startswith("bcube") else {"agg-core": 7})
    u = Topology.from_dict(json.loads(json.dumps(t.to_dict())))
    assert u == t
    assert u.to_dict() == t.to_dict()
    for h in t.hosts():
        for o in t.hosts():
            for nic in t.host_nics(o):
                if o != h:
                    assert u.host_hops(h, nic.ip) == t.host_hops(h, nic.ip)
    for sw in t.switches():
        for nic in (i for i in t.intfs.values() if i.ip):
            assert u.switch_ports_to(sw, nic.ip) == t.switch_ports_to(sw, nic.ip)


# ---- specs and their errors ----------------------------------------------------------------
def test_spec_parse():
    assert spec.parse("bcube,n=3,k=2") == ("bcube", {"n": 3, "k": 2})
    assert spec.parse("bcube") == ("bcube", {"n": 4, "k": 2})
    assert spec.parse(" fattree , k=6 ") == ("fattree", {"k": 6})
    assert spec.parse("Fat-Tree,k=8") == ("fattree", {"k": 8})


@pytest.mark.parametrize("bad,pattern", [
    ("", r"empty topology spec; valid: bcube.*fattree"),
    ("mesh,k=2", r"unknown topology 'mesh'; valid: bcube,n=N,k=K.*fattree,k=K"),
    ("bcube,x=3", r"bad parameter 'x=3' for bcube; valid:"),
    ("fattree,n=4", r"bad parameter 'n=4' for fattree"),
    ("bcube,n=", r"option 'n=' is not key=value; valid:"),
    ("bcube,n=three", r"parameter n of bcube must be an integer, got 'three'"),
    ("bcube,n=1,k=2", r"BCube n=1 is out of range"),
    ("bcube,n=0,k=2", r"BCube n=0 is out of range"),
    ("bcube,n=17,k=1", r"BCube n=17 is out of range"),
    ("bcube,n=2,k=0", r"BCube k=0 is out of range"),
    ("bcube,n=16,k=4", r"65536 servers"),
    ("fattree,k=3", r"Fat-Tree k=3 is invalid: k must be an even number"),
    ("fattree,k=0", r"Fat-Tree k=0 is invalid"),
    ("fattree,k=34", r"Fat-Tree k=34 is too large: at most k=32 \(8192 hosts\)"),
])
def test_spec_errors_are_one_line(bad, pattern):
    with pytest.raises(ValueError, match=pattern) as e:
        spec.build(bad)
    assert "\n" not in str(e.value)


def test_unknown_topology_lists_every_builder():
    with pytest.raises(ValueError) as e:
        spec.parse("torus")
    for name in spec.BUILDERS:
        assert name in str(e.value)


@pytest.mark.parametrize("bw", [0, -5, 1000.5, 5000, "fast", None, float("nan")])
def test_bandwidth_out_of_range(bw):
    with pytest.raises(ValueError, match=r"bw") as e:
        spec.build("fattree,k=4", bw=bw)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match=r"link_bw\[host\]"):
        spec.build("fattree,k=4", bw=10, link_bw={"host": bw})


def test_bandwidth_limits_are_inclusive_of_1000():
    assert spec.build("fattree,k=2", bw=1000).link_classes() == {"host": 1000.0, "edge-agg": 1000.0,
                                                                 "agg-core": 1000.0}
    assert spec.build("bcube,n=2,k=1", bw=0.5).links[0].bw == 0.5


@pytest.mark.parametrize("s,link_bw,pattern", [
    ("fattree,k=4", {"level0": 5}, r"link_bw key 'level0' is not a link class, host or interface of fattree\(4\); "
                                   r"classes: agg-core, edge-agg, host; hosts e.g. h0_0_2"),
    ("bcube,n=2,k=2", {"level2": 5}, r"link_bw key 'level2' is not a link class, host or interface of bcube\(2,2\); "
                                     r"classes: level0, level1"),
])
def test_unknown_link_class(s, link_bw, pattern):
    with pytest.raises(ValueError, match=pattern):
        spec.build(s, link_bw=link_bw)


def test_link_bw_takes_classes_hosts_and_interfaces_most_specific_wins():
    t = spec.build("fattree,k=4", bw=20, link_bw={"h0_0_2": 5, "host": 10, "e0_0-eth3": 2})
    assert t.link_of("h0_0_2-eth0").bw == 5 and t.link_of("h0_0_3-eth0").bw == 10
    assert t.link_of("e0_0-eth3").bw == 2 and t.link_of("e0_0-eth4").bw == 20


def test_per_class_link_bandwidth():
    t = spec.build("fattree,k=4", bw=30, link_bw={"agg-core": 10, "host": 50})
    assert t.link_classes() == {"host": 50.0, "edge-agg": 30.0, "agg-core": 10.0}
    for link in t.links:
        assert link.bw == {"host": 50.0, "edge-agg": 30.0, "agg-core": 10.0}[link.cls]
    b = spec.build("bcube,n=3,k=2", bw=20, link_bw={"level1": 5})
    assert {link.bw for link in b.links if link.cls == "level0"} == {20.0}
    assert {link.bw for link in b.links if link.cls == "level1"} == {5.0}
    # the builders take link_bw directly too
    assert bcube.build(2, 2, bw=8, link_bw={"level0": 4}).link_classes() == {"level0": 4.0, "level1": 8.0}
    assert fattree.build(2, bw=8).link_classes() == {"host": 8.0, "edge-agg": 8.0, "agg-core": 8.0}


# ---- Mininet Topo objects (graphs only: no root, nothing started) ---------------------------
@pytest.mark.parametrize("name,params,s", [
    ("bcube", {"n": 3, "k": 2, "bw": 12.0}, "bcube,n=3,k=2"),
    ("bcube", {"n": 2, "k": 3, "bw": 12.0}, "bcube,n=2,k=3"),
    ("fattree", {"k": 4, "bw": 12.0}, "fattree,k=4"),
])
def test_mininet_topos_mirror_the_description(name, params, s):
    from topologies.mn import topos

    assert set(topos) == {"bcube", "fattree"}
    topo = topos[name](**params)
    d = spec.build(s, bw=params["bw"])
    assert sorted(topo.hosts()) == sorted(d.hosts())
    assert sorted(topo.switches()) == sorted(d.switches())
    links = topo.links(withInfo=True)
    assert len(links) == len(d.links)
    want = {(d.intfs[link.a].name, d.intfs[link.b].name): link for link in d.links}
    for a, b, info in links:
        link = want[(info["intfName1"], info["intfName2"])]
        ia, ib = d.intfs[link.a], d.intfs[link.b]
        assert (a, b) == (ia.node, ib.node)
        assert info["bw"] == link.bw == params["bw"]
        assert (info["port1"], info["port2"]) == (ia.port, ib.port)
        if ia.mac:  # host NIC: its MAC and IP come from the description
            assert info["addr1"] == ia.mac and info["params1"] == {"ip": f"{ia.ip}/{ia.prefixlen}"}
        else:
            assert "addr1" not in info and "params1" not in info
        assert "addr2" not in info and "params2" not in info  # the switch side has no address
    for sw in d.switches():
        info = topo.nodeInfo(sw)
        assert info["dpid"] == f"{d.nodes[sw].dpid:016x}" and info["protocols"] == "OpenFlow13"
    for h in d.hosts():
        nic0 = d.host_nics(h)[0]
        assert topo.nodeInfo(h)["ip"] == f"{nic0.ip}/{nic0.prefixlen}"
        assert topo.nodeInfo(h)["mac"] == nic0.mac


def test_route_walks_relays_and_installed_ecmp_links_in_order():
    t = spec.build("bcube,n=3,k=2")
    r = t.route("h00", t.host_nics("h11")[0].ip)
    # every hop's receiver transmits the next one (same node), and it ends on h11
    for (tx, rx), (tx2, _) in zip(r, r[1:]):
        assert t.intfs[rx].node == t.intfs[tx2].node
    assert t.intfs[r[-1][1]].node == "h11" and t.intfs[r[0][0]].node == "h00"
    assert all(t.peer(tx).name == rx for tx, rx in r)
    ft = spec.build("fattree,k=4")
    r = ft.route("h0_0_2", ft.host_nics("h1_0_2")[0].ip)
    assert len(r) == 6 and [ft.intfs[rx].node for _, rx in r][:-1] == [
        ft.intfs[tx].node for tx, _ in r][1:]
    assert [tx for tx, _ in r][1:] == ft.switch_path("h0_0_2-eth0", ft.host_nics("h1_0_2")[0].ip)[1::2]


def test_per_link_bandwidth_overrides_classes_hosts_and_interfaces():
    t = spec.build("fattree,k=4", bw=100)
    t.set_bandwidth({"agg-core": 50, "h0_0_2": 10, "e1_0-eth3": 7})
    assert {link.bw for link in t.links if link.cls == "agg-core"} == {50.0}
    assert t.link_of("h0_0_2-eth0").bw == 10.0 and t.link_of("h0_0_3-eth0").bw == 100.0
    assert t.link_of("e1_0-eth3").bw == 7.0
    with pytest.raises(ValueError, match=r"link_bw key 'nope' is not a link class, host or interface of fattree\(4\); classes: agg-core, edge-agg, host"):
        t.set_bandwidth({"nope": 1})


def test_a_topology_name_as_results_record_it_is_a_spec():
    from topologies.spec import spec_of_name

    assert spec_of_name("bcube(4,2)") == "bcube,n=4,k=2" and spec_of_name("fattree(6)") == "fattree,k=6"
    assert spec_of_name("bcube,n=2,k=3") == "bcube,n=2,k=3"  # a spec stays one
    with pytest.raises(ValueError, match=r"^topology name 'torus\(3\)' is not one of bcube\(n,k\), fattree\(k\)$"):
        spec_of_name("torus(3)")
    with pytest.raises(ValueError, match=r"^topology name 'bcube\(4\)' is not one of"):
        spec_of_name("bcube(4)")


def test_node_intfs_index_follows_added_links():
    """node_intfs answers from an index built on first use; a link added after must show in it,
    in port order, as the scan it replaced answered."""
    from topologies.description import Intf, Node
    t = Topology(name="t", kind="fattree", params={})
    for n, kind in (("s1", "switch"), ("h1", "host"), ("h2", "host")):
        t.add_node(Node(name=n, kind=kind, role="edge" if kind == "switch" else "server"))
    t.add_link(Intf("s1-eth2", "s1", 2), Intf("h2-eth0", "h2", 0), "host", 10)
    assert [i.port for i in t.node_intfs("s1")] == [2]
    t.add_link(Intf("s1-eth1", "s1", 1), Intf("h1-eth0", "h1", 0), "host", 10)
    assert [i.name for i in t.node_intfs("s1")] == ["s1-eth1", "s1-eth2"]
    assert t.node_intfs("nobody") == []
    t.node_intfs("s1").clear()  # a copy: the caller cannot change the index
    assert len(t.node_intfs("s1")) == 2
