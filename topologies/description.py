"""The plain description of a topology that every other part of syncbed reads.

A `Topology` lists nodes (hosts and switches), interfaces (with port numbers, IPs and
MACs), links (with a link class and a bandwidth), the static IP routes and ARP entries
each host needs, and nothing Mininet-specific. It is computed once from a spec
(`topologies.spec.build`) and handed on: the Ryu app computes flows from it, the
Mininet `Topo` is built from it, the planners read hosts and NICs from it, and the
analysis lays traffic onto its routes. It round-trips through JSON (`to_dict` /
`from_dict`) so the controller, a separate process, reads the same object.

Routing in this description is split the way the network splits it:
- switches forward by destination IP along shortest switch-only paths (the controller
  installs them; several equal paths become an ECMP select group);
- hosts hold /32 routes for destinations they cannot reach on a connected subnet
  (BCube's server-centric relaying); `host_hops` follows those routes.
"""
from __future__ import annotations

import ipaddress
import hashlib
from dataclasses import asdict, dataclass, field

import networkx as nx


@dataclass(frozen=True)
class Node:
    name: str
    kind: str  # "host" | "switch"
    role: str  # "server" | "edge" | "agg" | "core" | "level<l>"
    dpid: int = 0  # switches only
    coords: tuple = ()  # the structure encoded in the name: BCube digits, (pod, sw, id)


def intf_name(node: str, port: int) -> str:
    """Mininet's interface name: "<node>-eth<port>" (the one place that spells it)."""
    return f"{node}-eth{port}"


def intf_node(name: str) -> str:
    """The node of an interface name ("h0_0_2-eth0" -> "h0_0_2"); "" when it is not one."""
    node, sep, port = name.rpartition("-eth")
    return node if sep and port.isdigit() else ""


@dataclass(frozen=True)
class Intf:
    name: str  # Mininet interface name "<node>-eth<port>"
    node: str
    port: int  # OpenFlow port number on switches; NIC index + 0 on hosts (eth<port>)
    ip: str = ""  # hosts only
    prefixlen: int = 0
    mac: str = ""


@dataclass(frozen=True)
class Link:
    a: str  # interface names
    b: str
    cls: str  # link class: "host", "edge-agg", "agg-core", "level0", ...
    bw: float  # Mbit/s, each direction


@dataclass(frozen=True)
class Route:
    dst: str  # "a.b.c.d/32" or a subnet
    via: str  # next-hop IP
    dev: str  # outgoing host interface
    src: str = ""  # preferred source address: keeps both directions of a flow on one level


@dataclass
class Topology:
    name: str  # e.g. "bcube(4,2)" or "fattree(4)"
    kind: str  # "bcube" | "fattree"
    params: dict
    nodes: dict = field(default_factory=dict)  # name -> Node
    intfs: dict = field(default_factory=dict)  # name -> Intf
    links: list = field(default_factory=list)
    routes: dict = field(default_factory=dict)  # host -> [Route]
    arp: dict = field(default_factory=dict)  # host -> [(ip, mac, dev)]
    notes: str = ""

    # ---- building -------------------------------------------------------------
    def add_node(self, node: Node) -> Node:
        if node.name in self.nodes:
            raise ValueError(f"duplicate node {node.name}")
        self.nodes[node.name] = node
        return node

    def add_link(self, a: Intf, b: Intf, cls: str, bw: float) -> Link:
        for i in (a, b):
            if i.name in self.intfs:
                raise ValueError(f"duplicate interface {i.name}")
            self.intfs[i.name] = i
        self.__dict__.pop("_node_intf_cache", None)  # node_intfs' index is of the interfaces before
        link = Link(a.name, b.name, cls, float(bw))
        self.links.append(link)
        return link

    # ---- queries ----------------------------------------------------------------
    def hosts(self) -> list[str]:
        return [n for n, v in self.nodes.items() if v.kind == "host"]

    def switches(self) -> list[str]:
        return [n for n, v in self.nodes.items() if v.kind == "switch"]

    def node_intfs(self, node: str) -> list[Intf]:
        """A node's interfaces in port order, from an index of every node's (built once, dropped
        by `add_link`): a scan of all interfaces per call was a ninth of the forest plan's time on
        Fat-Tree k=8, whose routes ask it at every switch they cross."""
        if not hasattr(self, "_node_intf_cache"):
            by: dict[str, list[Intf]] = {}
            for i in self.intfs.values():
                by.setdefault(i.node, []).append(i)
            self._node_intf_cache = {n: sorted(v, key=lambda i: i.port) for n, v in by.items()}
        return list(self._node_intf_cache.get(node, ()))

    def host_nics(self, host: str) -> list[Intf]:
        """NICs of a host in level order (BCube: NIC l is on level l)."""
        return self.node_intfs(host)

    def peer(self, intf: str) -> Intf:
        return self.intfs[self._peer_of()[intf]]

    def link_of(self, intf: str) -> Link:
        return self._link_by_intf()[intf]

    def link_classes(self) -> dict[str, float]:
        """class -> Mbit/s of its first link (per-link overrides may make a class uneven)."""
        out: dict[str, float] = {}
        for link in self.links:
            out.setdefault(link.cls, link.bw)
        return out

    def ip_owner(self, ip: str) -> Intf:
        try:
            return self._by_ip()[ip]
        except KeyError:
            raise ValueError(f"no interface has IP {ip}") from None

    def graph(self) -> nx.Graph:
        """Nodes and links; each edge carries its interface names, class and bandwidth."""
        g = nx.Graph()
        for name, node in self.nodes.items():
            g.add_node(name, kind=node.kind, role=node.role)
        for link in self.links:
            a, b = self.intfs[link.a], self.intfs[link.b]
            g.add_edge(a.node, b.node, intfs={a.node: a.name, b.node: b.name}, cls=link.cls, bw=link.bw)
        return g

    def switch_ports_to(self, switch: str, dst_ip: str) -> list[int]:
        """Output ports of `switch` on all shortest switch-only paths to the host owning dst_ip.

        The destination host must hang off some switch reachable without crossing a host
        (BCube switches reach only their own n servers: other destinations get [])."""
        return self._switch_routes().get(switch, {}).get(dst_ip, [])

    def ecmp_port(self, switch: str, src_ip: str, dst_ip: str) -> int:
        """The one port this switch uses for packets from src_ip to dst_ip.

        params["ecmp"] == "hash" (default): ECMP over all shortest paths, hashed per
        (switch, source, destination) with BLAKE2b
        (deterministic, like a switch's hash; collisions included). Not CRC32: it is linear,
        and its low bits were the same for every pair of these regular addresses. The controller
        installs exactly these choices, so the analysis can follow every packet."""
        ports = self.switch_ports_to(switch, dst_ip)
        if len(ports) <= 1:
            return ports[0] if ports else 0
        if self.params.get("ecmp") == "two-level":
            # Al-Fares' two-level tables: the uplink is chosen by the destination's host id
            # (last address byte) shifted by the switch's index, so destinations spread
            # evenly over the uplinks and all-to-all traffic meets a non-blocking network.
            host_id = int(dst_ip.rsplit(".", 1)[1])
            return ports[(host_id + self.nodes[switch].coords[1]) % len(ports)]
        h = hashlib.blake2b(f"{switch}|{src_ip}|{dst_ip}".encode(), digest_size=8).digest()
        return ports[int.from_bytes(h, "big") % len(ports)]

    def switch_path(self, tx_intf: str, dst_ip: str) -> list[str]:
        """Switch interfaces (ingress and egress, in order) a segment from tx_intf crosses."""
        src_ip = self.intfs[tx_intf].ip
        port = self.peer(tx_intf)
        out = []
        while True:
            out.append(port.name)
            egress = self.ecmp_port(port.node, src_ip, dst_ip)
            e = next(i for i in self.node_intfs(port.node) if i.port == egress)
            out.append(e.name)
            nxt = self.peer(e.name)
            if self.nodes[nxt.node].kind == "host":
                return out
            port = nxt
            if len(out) > 4 * len(self.nodes):
                raise RuntimeError(f"switch loop from {tx_intf} to {dst_ip}")

    def can_transit(self, switch: str, src_ip: str, dst_ip: str) -> bool:
        """Whether `switch` lies on a shortest switch path from src_ip's to dst_ip's switch."""
        d = self._switch_dist()
        a = self.peer(self.ip_owner(src_ip).name).node
        b = self.peer(self.ip_owner(dst_ip).name).node
        try:
            return d[a][switch] + d[switch][b] == d[a][b]
        except KeyError:
            return False

    def host_hops(self, src_host: str, dst_ip: str) -> list[tuple[str, str]]:
        """Host-to-host segments a packet from src_host to dst_ip takes: [(tx_intf, rx_intf)].

        One segment when the destination is on a connected subnet reachable through the
        switches; more when hosts relay (BCube). The rx interface of the last segment
        belongs to the destination host (not necessarily the interface owning dst_ip)."""
        dst_host = self.ip_owner(dst_ip).node
        hops: list[tuple[str, str]] = []
        here = src_host
        while here != dst_host:
            nxt_ip, dev = self._next_hop(here, dst_ip)
            rx = self.ip_owner(nxt_ip)
            hops.append((dev, rx.name))
            here = rx.node
            if len(hops) > len(self.nodes):
                raise RuntimeError(f"routing loop from {src_host} to {dst_ip}")
        return hops

    def route(self, src_host: str, dst_ip: str) -> list[tuple[str, str]]:
        """THE route walker: every directed link a packet from src_host to dst_ip crosses, in
        order, as (transmitting interface, receiving interface): host relays (BCube) and the
        controller's ECMP choices included. The expected-bytes analysis, the flow-level bound
        and calibration all read routes from here, so they cannot disagree."""
        out = []
        for tx, rx in self.host_hops(src_host, dst_ip):
            path = self.switch_path(tx, self.intfs[rx].ip)  # [ingress, egress, ingress, ...]
            sends = [tx] + path[1::2]
            receives = path[0::2] + [rx]
            out += list(zip(sends, receives))
        return out

    def set_bandwidth(self, overrides: dict) -> None:
        """Per-link bandwidth over the class defaults: keys are a link class, a host (all its
        links), or an interface (the one link it is on); later keys win over earlier ones,
        so put classes first. Unknown keys are refused, listing the kinds of valid keys."""
        by_intf = self._link_by_intf()
        hosts = set(self.hosts())
        new = {id(link): link.bw for link in self.links}
        for key, mbps in overrides.items():
            if key in self.link_classes():
                chosen = [link for link in self.links if link.cls == key]
            elif key in hosts:
                chosen = [by_intf[i.name] for i in self.host_nics(key)]
            elif key in by_intf:
                chosen = [by_intf[key]]
            else:
                raise ValueError(f"link_bw key {key!r} is not a link class, host or interface of {self.name}; "
                                 f"classes: {', '.join(sorted(self.link_classes()))}; hosts e.g. "
                                 f"{self.hosts()[0]}; interfaces e.g. {self.host_nics(self.hosts()[0])[0].name}")
            for link in chosen:
                new[id(link)] = float(mbps)
        self.links = [Link(link.a, link.b, link.cls, new[id(link)]) for link in self.links]
        for cache in ("_link_cache",):
            self.__dict__.pop(cache, None)

    def switches_between(self, tx_intf: str, rx_intf: str) -> list[list[str]]:
        """All shortest switch paths carrying one host-to-host segment (ECMP: several)."""
        g = self.graph()
        a, b = self.intfs[tx_intf].node, self.intfs[rx_intf].node
        sw = g.subgraph([n for n in g if self.nodes[n].kind == "switch"] + [a, b]).copy()
        # the segment starts and ends on these two NICs, not on the hosts' other NICs
        for host, keep in ((a, tx_intf), (b, rx_intf)):
            for nb in list(sw.neighbors(host)):
                if sw.edges[host, nb]["intfs"][host] != keep:
                    sw.remove_edge(host, nb)
        return [p[1:-1] for p in nx.all_shortest_paths(sw, a, b)]

    # ---- (de)serialisation -------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "params": self.params,
            "notes": self.notes,
            "nodes": [asdict(n) for n in self.nodes.values()],
            "intfs": [asdict(i) for i in self.intfs.values()],
            "links": [asdict(link) for link in self.links],
            "routes": {h: [asdict(r) for r in rs] for h, rs in self.routes.items()},
            "arp": {h: [list(e) for e in es] for h, es in self.arp.items()},
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Topology":
        t = cls(d["name"], d["kind"], dict(d["params"]), notes=d.get("notes", ""))
        for n in d["nodes"]:
            t.nodes[n["name"]] = Node(n["name"], n["kind"], n["role"], n["dpid"], tuple(n["coords"]))
        for i in d["intfs"]:
            t.intfs[i["name"]] = Intf(**i)
        t.links = [Link(**link) for link in d["links"]]
        t.routes = {h: [Route(**r) for r in rs] for h, rs in d["routes"].items()}
        t.arp = {h: [tuple(e) for e in es] for h, es in d["arp"].items()}
        return t

    def summary(self) -> dict:
        hosts = self.hosts()
        return {
            "topology": self.name,
            "servers": len(hosts),
            "switches": len(self.switches()),
            "links": len(self.links),
            "nics_per_server": len(self.host_nics(hosts[0])) if hosts else 0,
            "link_classes": self.link_classes(),
        }

    # ---- internals ---------------------------------------------------------------
    def _peer_of(self) -> dict:
        if not hasattr(self, "_peer_cache"):
            m = {}
            for link in self.links:
                m[link.a], m[link.b] = link.b, link.a
            self._peer_cache = m
        return self._peer_cache

    def _link_by_intf(self) -> dict:
        if not hasattr(self, "_link_cache"):
            self._link_cache = {x: link for link in self.links for x in (link.a, link.b)}
        return self._link_cache

    def _by_ip(self) -> dict:
        if not hasattr(self, "_ip_cache"):
            self._ip_cache = {i.ip: i for i in self.intfs.values() if i.ip}
        return self._ip_cache

    def _next_hop(self, host: str, dst_ip: str) -> tuple[str, str]:
        """(next-hop IP, outgoing dev) by longest prefix: /32 routes, then connected subnets."""
        for r in self.routes.get(host, []):
            if ipaddress.ip_address(dst_ip) in ipaddress.ip_network(r.dst, strict=False):
                return r.via, r.dev
        for nic in self.host_nics(host):
            net = ipaddress.ip_network(f"{nic.ip}/{nic.prefixlen}", strict=False)
            if ipaddress.ip_address(dst_ip) in net:
                return dst_ip, nic.name
        raise ValueError(f"{host} has no route to {dst_ip}")

    def _switch_dist(self) -> dict:
        if not hasattr(self, "_dist_cache"):
            g = self.graph()
            sub = g.subgraph(self.switches())
            self._dist_cache = dict(nx.all_pairs_shortest_path_length(sub))
        return self._dist_cache

    def _switch_routes(self) -> dict:
        """switch -> dst_ip -> sorted output ports (all shortest switch-only paths)."""
        if hasattr(self, "_sw_cache"):
            return self._sw_cache
        g = self.graph()
        switches = self.switches()
        table: dict[str, dict[str, list[int]]] = {s: {} for s in switches}
        # the switch-only graph as a graph of its own, not a filtered view (whose every neighbour
        # step was most of this table's time at k = 24), and each switch's port toward each
        # switch neighbour read once
        sub = g.subgraph(switches).copy()
        port = {}
        for a, b, names in sub.edges(data="intfs"):
            port[a, b], port[b, a] = self.intfs[names[a]].port, self.intfs[names[b]].port
        # The ports toward a NIC depend only on the switch it attaches to: one BFS per attaching
        # switch, shared by its NICs (k/2 hosts per Fat-Tree edge switch; n per BCube switch)
        toward: dict[str, dict[str, list[int]]] = {}
        for nic in self.intfs.values():
            if not nic.ip:
                continue
            attach = self.intfs[self._peer_of()[nic.name]]  # switch port facing this NIC
            if attach.node not in toward:
                dist = nx.single_source_shortest_path_length(sub, attach.node)
                ports_to = {}
                for s, d in dist.items():
                    if s != attach.node:
                        ports_to[s] = sorted(port[s, nb] for nb in sub.neighbors(s) if dist.get(nb) == d - 1)
                toward[attach.node] = ports_to
            for s, ports in toward[attach.node].items():
                table[s][nic.ip] = list(ports)
            table[attach.node][nic.ip] = [attach.port]
        self._sw_cache = table
        return table


def mac_from_ip(ip: str) -> str:
    """Locally administered MAC that encodes the IPv4 address (02:00:a:b:c:d)."""
    a, b, c, d = (int(x) for x in ip.split("."))
    return f"02:00:{a:02x}:{b:02x}:{c:02x}:{d:02x}"
