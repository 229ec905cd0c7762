"""Where things run (pure): ranks on a topology's hosts, and a topology's nodes on the
servers of a cluster.

Both read only a `Topology`, so they live with the topologies, not in the emulation or the
simulator that use them:
- `place(topo, count, placement)`: which host runs which rank (`placement:` in the experiment
  YAML; the emulation's config and the simulator).
- `place_on_servers(topo, servers, capacity, explicit)`: which server (machine) emulates each
  node when one experiment spans several with Mininet's cluster support (issue #22); a link
  whose two ends are on different servers becomes a tunnel between them, so the placement
  keeps those few and says which they are (`Placement.crossing`). Its steps:
  1. groups: every Fat-Tree pod (its hosts, edge and aggregation switches) and every BCube
     level-0 group (a level-0 switch and its n servers) stays whole on one server, so only
     agg-core links (Fat-Tree) or level>=1 links (BCube) can cross;
  2. the explicit map pins nodes or whole groups ("pod<p>", "group<j>"); a group with a
     pinned member goes where most of its pinned members go;
  3. the free groups are counted out to the servers so that hosts are balanced, or
     proportional to each server's capacity in hosts and never over it; a tie gives the
     extra group to the later server, since the first one also runs syncbed itself;
  4. which groups share a server: contiguous runs of groups first (BCube's neighbouring
     groups share higher-level switches), then pairwise swaps while a swap lowers the number
     of crossing links;
  5. each remaining switch (Fat-Tree cores, BCube level>=1) goes to the server holding most
     of its neighbours (ties: fewer switches, then server order), the fewest crossings it
     can have once the groups are placed.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .description import Link, Topology

PLACEMENTS = ("ordered", "spread")


def place(topo, count: int, placement: str) -> list[str]:
    """Hosts for ranks 0..count-1: in host order, or round-robin over edge switches/levels."""
    hosts = topo.hosts()
    if placement == "ordered" or count >= len(hosts):
        return hosts[:count]
    groups: dict = {}
    for h in hosts:  # hosts sharing the switch their first NIC hangs off
        sw = topo.peer(topo.host_nics(h)[0].name).node
        groups.setdefault(sw, []).append(h)
    # take one host per switch, walking switches in pod order, until enough
    order, lists = [], list(groups.values())
    while len(order) < count:
        for lst in lists:
            if lst and len(order) < count:
                order.append(lst.pop(0))
    return order


# ---- nodes on the servers of a cluster ---------------------------------------------------
@dataclass(frozen=True)
class Placement:
    """Every node of a topology on one server, and the links that cross between servers."""

    server_of: dict  # node -> server, in topology order
    crossing: list  # [Link] whose two ends are on different servers, in topology order
    servers: tuple = ()  # in the order given; the first runs syncbed
    kinds: dict = field(default_factory=dict)  # node -> "host" | "switch"

    def hosts_on(self, server: str) -> list[str]:
        return self._nodes_on(server, "host")

    def switches_on(self, server: str) -> list[str]:
        return self._nodes_on(server, "switch")

    def crossing_classes(self) -> dict[str, int]:
        """Link class -> how many of its links cross, in the order they first cross."""
        return dict(Counter(link.cls for link in self.crossing))

    def summary(self) -> str:
        """One line: each server's hosts and switches, then the crossing links per class."""
        per = ", ".join(f"{s} {_count(len(self.hosts_on(s)), 'host')} {_count(len(self.switches_on(s)), 'switch')}"
                        for s in self.servers)
        n = len(self.servers)
        if not self.crossing:
            cross = "no link crosses"
        else:
            classes = ", ".join(f"{c}: {k}" for c, k in self.crossing_classes().items())
            cross = f"{len(self.crossing)} link{'s cross' if len(self.crossing) > 1 else ' crosses'} ({classes})"
        return f"{n} server{'s' if n > 1 else ''}: {per}; {cross}"

    def _nodes_on(self, server: str, kind: str) -> list[str]:
        if server not in self.servers:
            raise ValueError(f"cluster: {server!r} is not a server of this placement; valid: {_listed(self.servers)}")
        return [n for n, s in self.server_of.items() if s == server and self.kinds.get(n) == kind]


def groups(topo: Topology) -> dict[str, list[str]]:
    """The nodes kept whole on one server, by group name: "pod<p>" -> a Fat-Tree pod's hosts,
    edge and aggregation switches; "group<j>" -> BCube level-0 switch j and its n servers.
    Nodes in no group (Fat-Tree cores, BCube level>=1 switches) are placed one by one."""
    out: dict[str, list[str]] = {}
    if topo.kind == "fattree":
        pods: dict[int, list[str]] = {}
        for name, node in topo.nodes.items():
            if node.role in ("server", "edge", "agg"):
                pods.setdefault(node.coords[0], []).append(name)
        return {f"pod{p}": pods[p] for p in sorted(pods)}
    if topo.kind == "bcube":
        member: dict[str, int] = {}
        for name, node in topo.nodes.items():
            if node.role == "level0":
                member[name] = node.coords[1]
        for link in topo.links:
            if link.cls == "level0":
                a, b = topo.intfs[link.a].node, topo.intfs[link.b].node
                sw, host = (a, b) if a in member else (b, a)
                member[host] = member[sw]
        by: dict[int, list[str]] = {}
        for name in topo.nodes:  # topology order inside each group
            if name in member:
                by.setdefault(member[name], []).append(name)
        return {f"group{j}": by[j] for j in sorted(by)}
    raise ValueError(f"cluster: cannot place a {topo.kind!r} topology on servers; valid kinds: bcube, fattree")


def place_on_servers(topo: Topology, servers: list[str], capacity: dict[str, int] | None = None,
                     explicit: dict[str, str] | None = None) -> Placement:
    """Every node of `topo` on one of `servers` (the first runs syncbed): groups whole, hosts
    balanced (or proportional to `capacity`, hosts per server, never over it), the fewest
    crossing links found; `explicit` pins nodes or groups (module docstring, steps 1-5).
    Bad input raises a one-line ValueError saying what is valid."""
    servers = _check_servers(servers)
    cap = _check_capacity(capacity, servers)
    whole = groups(topo)
    group_pin, node_pin = _check_explicit(explicit, topo, servers, whole)
    kinds = {n: v.kind for n, v in topo.nodes.items()}
    n_hosts = sum(1 for k in kinds.values() if k == "host")
    if cap is not None and n_hosts > sum(cap.values()):
        raise ValueError(f"cluster: {topo.name} has {n_hosts} hosts but the {len(servers)} servers carry "
                         f"at most {sum(cap.values())} ({_capacities(cap)})")
    index = {s: i for i, s in enumerate(servers)}
    names = list(whole)

    # 2. pinned groups and nodes
    anchor: dict[str, int] = {}  # group -> server index
    for g, nodes in whole.items():
        if g in group_pin:
            anchor[g] = index[group_pin[g]]
        else:
            votes = Counter(index[node_pin[n]] for n in nodes if n in node_pin)
            if votes:
                anchor[g] = min(votes, key=lambda s: (-votes[s], s))
    server_of: dict[str, int] = {n: index[s] for n, s in node_pin.items()}
    for g, s in anchor.items():
        for n in whole[g]:
            server_of.setdefault(n, s)
    load = [0] * len(servers)
    for n, s in server_of.items():
        load[s] += kinds[n] == "host"
    if cap is not None:
        for s, name in enumerate(servers):
            if load[s] > cap[name]:
                raise ValueError(f"cluster: the explicit map puts {load[s]} hosts on {name}, over its capacity "
                                 f"of {cap[name]}; move nodes or raise its capacity")

    # 3. how many free groups each server takes
    free = [g for g in names if g not in anchor]
    size = {g: sum(kinds[n] == "host" for n in whole[g]) for g in names}
    counts = _group_counts([size[g] for g in free], servers, load, cap, topo, free)

    # 4. which free groups go together
    on = _assign_groups(topo, whole, free, counts, server_of)
    for g, s in on.items():
        for n in whole[g]:
            server_of[n] = s

    # 5. the remaining switches, in topology order
    switches = Counter(server_of[n] for n in server_of if kinds[n] == "switch")
    neighbours = _neighbours(topo)
    for n in topo.nodes:
        if n in server_of:
            continue
        near = Counter(server_of[m] for m in neighbours.get(n, []) if m in server_of)
        best = min(range(len(servers)), key=lambda s: (-near[s], switches[s], s))
        server_of[n] = best
        switches[best] += kinds[n] == "switch"

    placed = {n: servers[server_of[n]] for n in topo.nodes}
    crossing = [link for link in topo.links if placed[topo.intfs[link.a].node] != placed[topo.intfs[link.b].node]]
    return Placement(placed, crossing, tuple(servers), kinds)


def group_counts(topo: Topology, servers: list[str], capacity: dict[str, int] | None = None) -> list[int]:
    """How many whole groups each server takes with no explicit map (step 3): balanced over the
    servers, or proportional to `capacity` and within it."""
    servers = _check_servers(servers)
    cap = _check_capacity(capacity, servers)
    whole = groups(topo)
    sizes = [sum(topo.nodes[n].kind == "host" for n in nodes) for nodes in whole.values()]
    if cap is not None and sum(sizes) > sum(cap.values()):
        raise ValueError(f"cluster: {topo.name} has {sum(sizes)} hosts but the {len(servers)} servers carry "
                         f"at most {sum(cap.values())} ({_capacities(cap)})")
    return _group_counts(sizes, servers, [0] * len(servers), cap, topo, list(whole))


def _group_counts(sizes: list[int], servers: list[str], load: list[int], cap: dict | None,
                  topo: Topology, free: list[str]) -> list[int]:
    """Free groups per server, one group at a time to the server whose share of hosts (per
    unit of capacity) stays lowest with it; ties to the later server (the first runs syncbed)."""
    load = list(load)
    limit = [cap[s] if cap is not None else float("inf") for s in servers]
    weight = [cap[s] if cap is not None else 1 for s in servers]
    counts = [0] * len(servers)
    for size in sizes:
        fits = [s for s in range(len(servers)) if load[s] + size <= limit[s]]
        if not fits:
            what = "pods" if topo.kind == "fattree" else "level-0 groups"
            room = " + ".join(str(counts[s] + (limit[s] - load[s]) // size) for s in range(len(servers)))
            left = " left after the explicit map" if len(free) < len(groups(topo)) else ""
            raise ValueError(f"cluster: {topo.name}'s {what} ({size} hosts each, kept whole) do not fit the "
                             f"servers ({_capacities(cap)}): they take {room} of the {len(free)} {what}{left}; "
                             f"give capacities in multiples of {size} hosts or map nodes explicitly")
        best = min(fits, key=lambda s: ((load[s] + size) / weight[s], -s))
        load[best] += size
        counts[best] += 1
    return counts


def _assign_groups(topo: Topology, whole: dict, free: list[str], counts: list[int],
                   server_of: dict) -> dict[str, int]:
    """Free group -> server index with `counts[s]` groups on server s: contiguous runs, then
    pairwise swaps while one lowers the remaining switches' crossing links (step 4)."""
    on, it = {}, iter(free)
    for s, c in enumerate(counts):
        for _ in range(c):
            on[next(it)] = s
    if len(counts) < 2 or len(free) < 2:
        return on
    group_of = {n: g for g in free for n in whole[g]}
    grouped = {n for nodes in whole.values() for n in nodes}
    neighbours = _neighbours(topo)
    rest = [n for n in topo.nodes if n not in grouped]  # placed one by one in step 5
    pinned = {r: server_of[r] for r in rest if r in server_of}
    # per remaining switch: its links to each free group, and to grouped nodes already placed
    to_group = {r: Counter(group_of[m] for m in neighbours.get(r, []) if m in group_of) for r in rest}
    fixed = {r: Counter(server_of[m] for m in neighbours.get(r, []) if m in grouped and m in server_of)
             for r in rest}
    touching: dict[str, list[str]] = {g: [] for g in free}
    for r, c in to_group.items():
        for g in c:
            touching[g].append(r)

    def cost(r, where) -> int:
        c = Counter(fixed[r])
        for g, m in to_group[r].items():
            c[where[g]] += m
        total = sum(c.values())
        return total - (c[pinned[r]] if r in pinned else max(c.values(), default=0))

    improved = True
    while improved:
        improved = False
        for i, a in enumerate(free):
            for b in free[i + 1:]:
                if on[a] == on[b]:
                    continue
                affected = set(touching[a]) | set(touching[b])
                before = sum(cost(r, on) for r in affected)
                on[a], on[b] = on[b], on[a]
                if sum(cost(r, on) for r in affected) < before:
                    improved = True
                else:
                    on[a], on[b] = on[b], on[a]
    return on


def _neighbours(topo: Topology) -> dict[str, list[str]]:
    """Node -> the nodes at the other end of each of its links (a node twice for two links)."""
    out: dict[str, list[str]] = {}
    for link in topo.links:
        a, b = topo.intfs[link.a].node, topo.intfs[link.b].node
        out.setdefault(a, []).append(b)
        out.setdefault(b, []).append(a)
    return out


def _check_servers(servers) -> list[str]:
    if isinstance(servers, str) or not isinstance(servers, (list, tuple)) or not servers:
        raise ValueError(f"cluster: servers must be a non-empty list of names or addresses, got {servers!r}")
    bad = [s for s in servers if not isinstance(s, str) or not s.strip()]
    if bad:
        raise ValueError(f"cluster: server names must be non-empty strings, got {bad[0]!r} in {_listed(servers)}")
    dup = [s for s, c in Counter(servers).items() if c > 1]
    if dup:
        raise ValueError(f"cluster: server {dup[0]} is listed twice; each server once: {_listed(servers)}")
    return list(servers)


def _check_capacity(capacity, servers: list[str]) -> dict | None:
    if capacity is None:
        return None
    if not isinstance(capacity, dict):
        raise ValueError(f"cluster: capacity must map each server to its number of hosts, got {capacity!r}")
    unknown = [s for s in capacity if s not in servers]
    if unknown:
        raise ValueError(f"cluster: capacity names {unknown[0]!r}, which is not a server; valid: {_listed(servers)}")
    missing = [s for s in servers if s not in capacity]
    if missing:
        raise ValueError(f"cluster: capacity gives no host count for {missing[0]}; give one for every server: "
                         f"{_listed(servers)}")
    for s, v in capacity.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"cluster: capacity of {s} must be a whole number of hosts >= 0, got {v!r}")
    return {s: capacity[s] for s in servers}


def _check_explicit(explicit, topo: Topology, servers: list[str], whole: dict) -> tuple[dict, dict]:
    """(group -> server, node -> server) from the user's map; unknown names or servers raise."""
    if explicit is None:
        return {}, {}
    if not isinstance(explicit, dict):
        raise ValueError(f"cluster: the explicit placement must map nodes or groups to servers, got {explicit!r}")
    group_pin, node_pin = {}, {}
    for key, server in explicit.items():
        if key in topo.nodes:
            node_pin[key] = server
        elif key in whole:
            group_pin[key] = server
        else:
            valid = f"{_listed(list(topo.nodes))} or {_listed(list(whole))}"
            raise ValueError(f"cluster: explicit placement names {key!r}, which is no node or group of "
                             f"{topo.name}; valid: {valid}")
        if server not in servers:
            raise ValueError(f"cluster: explicit placement puts {key} on {server!r}, which is not a server; "
                             f"valid: {_listed(servers)}")
    return group_pin, node_pin


def _capacities(cap: dict | None) -> str:
    if cap is None:
        return "no capacity given"
    if len(set(cap.values())) == 1:
        return f"capacity {next(iter(cap.values()))} each"
    return "capacity " + ", ".join(f"{s}: {v}" for s, v in cap.items())


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "es" if noun.endswith("h") else "s")


def _listed(items, most: int = 8) -> str:
    items = [str(i) for i in items]
    if len(items) <= most:
        return ", ".join(items)
    return ", ".join(items[:most]) + f", ... ({len(items)} in all)"
