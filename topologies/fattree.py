"""Fat-Tree(k) after Al-Fares, Loukissas, Vahdat (SIGCOMM 2008), as a plain `Topology`.

k pods; each pod has k/2 edge and k/2 aggregation switches; (k/2)^2 core switches;
k^3/4 hosts, 5k^2/4 switches. Names, addresses and dpids encode the position
(RipL's convention), so routes can be read from names alone:
- host  h<p>_<e>_<i>  IP 10.p.e.i (i = 2..k/2+1), one NIC h..-eth0
- edge  e<p>_<e>      (e = 0..k/2-1)   dpid p<<16 | e<<8 | 1
- agg   a<p>_<a>      (a = k/2..k-1)   dpid p<<16 | a<<8 | 1
- core  c<j>_<i>      (j, i = 1..k/2)  dpid k<<16 | j<<8 | i
Ports: edge/agg ports 1..k/2 face down, k/2+1..k face up; core port p+1 faces pod p.
All hosts share 10.0.0.0/8; switches route by destination IP (ECMP upward).
Link classes: "host" (host-edge), "edge-agg", "agg-core".
"""
from __future__ import annotations

from .description import Intf, Node, Topology, intf_name, mac_from_ip


# The description's size grows as k^6 (every host's ARP entries for every other host): k=24
# (3456 hosts) takes about 1 GiB; SimGrid projections go that far (emulation/simulator/core.py refuses
# what would not fit from a closed-form estimate), the emulation to k=8 (topologies/spec.py).
MAX_K = 32


def build(k: int, bw: float, link_bw: dict | None = None) -> Topology:
    if k < 2 or k % 2:
        raise ValueError(f"Fat-Tree k={k} is invalid: k must be an even number >= 2")
    if k > MAX_K:
        raise ValueError(f"Fat-Tree k={k} is too large: at most k={MAX_K} ({MAX_K**3 // 4} hosts) is supported")
    link_bw = link_bw or {}
    h = k // 2
    t = Topology(f"fattree({k})", "fattree", {"k": k})

    def bw_of(cls):
        return link_bw.get(cls, bw)

    for p in range(k):
        for e in range(h):
            edge = t.add_node(Node(f"e{p}_{e}", "switch", "edge", (p << 16) | (e << 8) | 1, (p, e, 1)))
            for i in range(2, h + 2):
                ip = f"10.{p}.{e}.{i}"
                host = t.add_node(Node(f"h{p}_{e}_{i}", "host", "server", coords=(p, e, i)))
                t.add_link(Intf(intf_name(host.name, 0), host.name, 0, ip, 8, mac_from_ip(ip)),
                           Intf(intf_name(edge.name, i - 1), edge.name, i - 1), "host", bw_of("host"))
        for a in range(h, k):
            t.add_node(Node(f"a{p}_{a}", "switch", "agg", (p << 16) | (a << 8) | 1, (p, a, 1)))
        for e in range(h):
            for a in range(h, k):
                t.add_link(Intf(intf_name(f"e{p}_{e}", a + 1), f"e{p}_{e}", a + 1),
                           Intf(intf_name(f"a{p}_{a}", e + 1), f"a{p}_{a}", e + 1), "edge-agg", bw_of("edge-agg"))
    for j in range(1, h + 1):
        for i in range(1, h + 1):
            core = t.add_node(Node(f"c{j}_{i}", "switch", "core", (k << 16) | (j << 8) | i, (k, j, i)))
            for p in range(k):
                a = h + j - 1
                t.add_link(Intf(intf_name(f"a{p}_{a}", h + i), f"a{p}_{a}", h + i),
                           Intf(intf_name(core.name, p + 1), core.name, p + 1), "agg-core", bw_of("agg-core"))
    hosts = t.hosts()
    # every host's ARP names every other host (k^3/4 squared entries: 12M at k = 24), so each
    # host's (ip, mac) is looked up once, not once per entry
    known = [(o, t.intfs[intf_name(o, 0)].ip, t.intfs[intf_name(o, 0)].mac) for o in hosts]
    for host in hosts:
        me = intf_name(host, 0)
        t.routes[host] = []
        t.arp[host] = [(ip, mac, me) for o, ip, mac in known if o != host]
    return t
