"""A SimGrid platform from the project's own `Topology`: no second description of the network.

Two halves (docs/STYLE.md: plan in pure functions, execute elsewhere):
- `platform_for(topo, hosts, pairs)` is pure Python: it reads the description and returns a
  `Platform`, plain data: the SimGrid hosts (the topology's hosts), routers (its switches),
  one link per direction of every topology link, named by the interface that transmits onto
  it (as `expected.links_of` and `analysis.bound_seconds` name directed links), with that
  link's bandwidth, and one route per (source, destination) pair the simulation will use,
  equal to `Topology.route` (the controller's per-pair ECMP choice and BCube's relaying
  servers included). Unit-testable without SimGrid.
- `instantiate(platform)` creates it inside a running SimGrid engine (`simgrid` 3.32 Python
  API): one `NetZone.create_full_zone` (a route table indexed by netpoint pairs, filled with
  `add_route(src, dst, None, None, [LinkInRoute], symmetrical=False)`), hosts with unit speed
  (nothing is computed yet), switches as routers, links with zero latency (the emulated
  network has no link delay: tc's netem is not built, docs/ENVIRONMENT.md).

Why a full zone and explicit routes rather than SimGrid's `create_fatTree_zone`: the routes
must be the controller's hashed ECMP choices and BCube's server relays, which no built-in
cluster zone reproduces; the description already computes them (`Topology.route`).

Destination endpoints. `Topology.route(src_host, dst_ip)` depends on which NIC of the
destination the flow is addressed to (BCube level l reaches NIC l), while a full zone holds
one route per pair of SimGrid hosts. The destination endpoint of (src, dst, nic) is the host
itself, unless the same (src, dst) pair is used with several NICs: then every NIC but the
lowest gets an alias endpoint `<host>#nic<l>` (a zero-work SimGrid host standing for that NIC).
No algorithm today needs one; they keep the route table exact if one does.
"""
from __future__ import annotations

import copy
import ipaddress
from dataclasses import dataclass, field

from topologies.description import Topology


@dataclass
class Platform:
    """What SimGrid will hold, as plain data (names only; bandwidths in bytes/s)."""

    name: str
    hosts: list  # SimGrid host names: the topology's hosts, then alias endpoints if any
    routers: list  # the topology's switches
    links: dict  # directed link (name of the transmitting interface) -> bytes/s
    routes: dict = field(default_factory=dict)  # (src endpoint, dst endpoint) -> (link, ...)
    endpoints: dict = field(default_factory=dict)  # (src host, dst host, nic) -> (src ep, dst ep)
    # directed links between two switches (every other link has a host at one end: a NIC's); the
    # reduced platforms of symmetry.py and orbits.py leave it empty (they refuse fan-in models)
    trunks: frozenset = frozenset()

    def counts(self) -> dict:
        return {"hosts": len(self.hosts), "routers": len(self.routers), "links": len(self.links),
                "routes": len(self.routes), "route_links": sum(len(r) for r in self.routes.values())}


def indexed(topo: Topology) -> Topology:
    """A shallow copy of `topo` whose host routes are parsed once and whose routes are memoized
    per (source host, destination IP), for thousands of hosts.

    `_next_hop` parses every route of the host and `route` calls it at every hop (before
    `Topology.node_intfs` kept an index of its own, the two made 1.3 ms per route on Fat-Tree
    k=16, 40 us indexed, and 17 ms on BCube(8,3), 0.05 ms), and PS at 1024 workers needs 1M
    routes. The walker itself stays
    `Topology.route` (the one the analysis and the controller read); only its lookups get
    faster. The caller's object is not modified; an indexed copy is returned as is, so its
    caches (the switch tables, the memo) serve every projection."""
    if getattr(topo, "_indexed", False):
        return topo
    fast = copy.copy(topo)
    fast._indexed = True
    fast._next_hop = _parsed_next_hop(fast)
    walk = fast.route  # bound to the copy: its hops read the parsed routes
    memo: dict = {}

    def route(src_host: str, dst_ip: str):
        key = (src_host, dst_ip)
        r = memo.get(key)
        if r is None:
            r = memo[key] = walk(src_host, dst_ip)
        return r

    fast.route = route
    return fast


def _parsed_next_hop(topo: Topology):
    """`Topology._next_hop` (the first of the host's routes that contains the destination, else
    a connected subnet) over routes parsed once: a BCube(8,3) server holds 1512 /32 routes,
    which the description parses again at every hop (35 ms a route)."""
    tables: dict = {}

    def table(host):
        t = tables.get(host)
        if t is None:
            exact, nets = {}, []  # exact: first /32 route per address; nets: the others, in order
            for pos, r in enumerate(topo.routes.get(host, [])):
                if r.dst.endswith("/32"):  # the builders write dotted quads: compare as strings
                    exact.setdefault(r.dst[:-3], (pos, r.via, r.dev))
                else:
                    nets.append((pos, ipaddress.ip_network(r.dst, strict=False), r.via, r.dev))
            connected = [(ipaddress.ip_network(f"{n.ip}/{n.prefixlen}", strict=False), n.name)
                         for n in topo.host_nics(host)]
            t = tables[host] = (exact, nets, connected)
        return t

    def next_hop(host: str, dst_ip: str) -> tuple[str, str]:
        exact, nets, connected = table(host)
        best = exact.get(dst_ip)  # addresses are dotted quads, as the builders write them
        if best is not None and (not nets or nets[0][0] > best[0]):
            return best[1], best[2]  # no other route comes first: nothing to parse (BCube's /32s)
        addr = ipaddress.ip_address(dst_ip)
        if best is None and str(addr) != dst_ip:
            best = exact.get(str(addr))
        for pos, net, via, dev in nets:
            if best is not None and pos > best[0]:
                break
            if addr in net:
                best = (pos, via, dev)
                break
        if best is not None:
            return best[1], best[2]
        for net, dev in connected:
            if addr in net:
                return dst_ip, dev
        raise ValueError(f"{host} has no route to {dst_ip}")

    return next_hop


def directed_links(topo: Topology) -> dict:
    """Directed link name (its transmitting interface) -> bytes/s; two per topology link."""
    out = {}
    for link in topo.links:
        out[link.a] = out[link.b] = link.bw * 1e6 / 8
    return out


def trunks(topo: Topology) -> frozenset:
    """The directed links (`directed_links`' names) whose both ends are switches."""
    switch = set(topo.switches())
    return frozenset(x for link in topo.links if {topo.intfs[link.a].node, topo.intfs[link.b].node} <= switch
                     for x in (link.a, link.b))


def endpoints_for(pairs) -> dict:
    """(src host, dst host, nic) -> (src endpoint, dst endpoint); see the module docstring."""
    nics: dict = {}
    for src, dst, nic in pairs:
        nics.setdefault((src, dst), set()).add(int(nic))
    out = {}
    for (src, dst), used in nics.items():
        low = min(used)
        for nic in used:
            out[(src, dst, nic)] = (src, dst if nic == low else f"{dst}#nic{nic}")
    return out


def platform_for(topo: Topology, pairs) -> Platform:
    """The platform holding every topology node and link, and the routes of `pairs`
    ((src host, dst host, nic): a flow from src to dst's NIC `nic`), from `Topology.route`."""
    pairs = sorted(set(pairs))
    for src, dst, _ in pairs:
        if src == dst:
            raise ValueError(f"a flow from {src} to itself has no route to simulate")
    eps = endpoints_for(pairs)
    aliases = sorted({d for _, d in eps.values() if "#nic" in d})
    routes = {}
    for src, dst, nic in pairs:
        dst_ip = topo.host_nics(dst)[nic].ip
        routes[eps[(src, dst, nic)]] = tuple(tx for tx, _ in topo.route(src, dst_ip))
    return Platform(topo.name, topo.hosts() + aliases, topo.switches(), directed_links(topo), routes, eps,
                    trunks(topo))


def instantiate(platform: Platform, simgrid, capacity_of_flows: dict | None = None) -> dict:
    """Create `platform` in the current SimGrid engine (the `simgrid` module is passed in: it is
    imported only in the process that runs the simulation). Returns name -> simgrid.Host.
    `capacity_of_flows`: link name -> (capacity, concurrent flows) -> usable capacity, set as the
    link's NONLINEAR sharing policy (fan-in: emulation/simulator/fanin.py); other links SHARED."""
    zone = simgrid.NetZone.create_full_zone(f"syncbed-{platform.name}")
    hosts = {h: zone.create_host(h, 1.0).seal() for h in platform.hosts}
    for r in platform.routers:
        zone.create_router(r)
    nonlinear = capacity_of_flows or {}
    links = {}
    for name, bw in platform.links.items():
        link = zone.create_link(name, float(bw)).set_latency(0.0)
        if name in nonlinear:
            link.set_sharing_policy(simgrid.Link.SharingPolicy.NONLINEAR, nonlinear[name])
        links[name] = link.seal()
    in_route = {}  # one LinkInRoute per link, shared by every route that crosses it
    for (src, dst), route in platform.routes.items():
        lr = []
        for name in route:
            x = in_route.get(name)
            if x is None:
                x = in_route[name] = simgrid.LinkInRoute(links[name])
            lr.append(x)
        zone.add_route(hosts[src].netpoint, hosts[dst].netpoint, None, None, lr, False)
    zone.seal()
    return hosts
