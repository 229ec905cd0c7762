"""BCube(n, k) in the BML paper's notation, as a plain `Topology`.

BML (Wang et al., NeurIPS 2018) writes BCube(n, k) for a network of n^k servers with
k levels: every server has k NICs, NIC l attached to one of the n^(k-1) level-l
switches of n ports, k*n^(k-1) switches in all. The BCube paper (Guo et al.,
SIGCOMM 2009) calls the same network BCube_(k-1) with n ports per switch:
BML BCube(n, k) == SIGCOMM BCube_{k-1}(n). BML's 9-server testbed is BCube(3,2).

Names carry the structure (RipL style):
- server  h<a_{k-1}..a_0>: its id written as k base-n digits (hex, so n <= 16);
  NIC l is h<digits>-eth<l>, on subnet 10.l.0.0/16, address 10.l.hi.lo of (id + 1).
- switch  s<l>_<the other k-1 digits>: the level-l switch shared by the servers that
  differ only in digit l; port a_l + 1 faces the server whose digit l is a_l.
Servers relay for non-neighbours, correcting one digit per hop (BCube's
server-centric routing): highest differing digit first, the destination address's
own level last, so the last hop lands on the NIC that owns the address when it can.
Each relayed route names the server's own address on the destination's level as the
preferred source, so both ends of a connection use the same level's addresses.
"""
from __future__ import annotations

from .description import Intf, Node, Route, Topology, intf_name, mac_from_ip

MAX_N = 16  # one hex digit per level in the names


def digits(i: int, n: int, k: int) -> tuple[int, ...]:
    """Server id -> (a_{k-1}, ..., a_0)."""
    return tuple(digit(i, l, n) for l in reversed(range(k)))


def digit(i: int, level: int, n: int) -> int:
    """Digit `level` (a_level) of server i."""
    return (i // n**level) % n


def server_id(ds: tuple[int, ...], n: int) -> int:
    i = 0
    for d in ds:
        i = i * n + d
    return i


def server_name(i: int, n: int, k: int) -> str:
    return "h" + "".join(f"{d:x}" for d in digits(i, n, k))


def server_ip(i: int, level: int) -> str:
    return f"10.{level}.{(i + 1) >> 8}.{(i + 1) & 255}"


def switch_name(level: int, ds: tuple[int, ...], k: int) -> str:
    other = "".join(f"{d:x}" for pos, d in enumerate(ds) if pos != k - 1 - level)
    return f"s{level}_{other or '0'}"


def neighbour(i: int, level: int, digit: int, n: int) -> int:
    """Server i with its digit `level` replaced by `digit`."""
    p = n**level
    return i - ((i // p) % n) * p + digit * p


def build(n: int, k: int, bw: float, link_bw: dict | None = None) -> Topology:
    if n < 2 or n > MAX_N:
        raise ValueError(f"BCube n={n} is out of range: n (ports per switch) must be 2..{MAX_N}")
    if k < 1:
        raise ValueError(f"BCube k={k} is out of range: k (levels, NICs per server) must be >= 1")
    if n**k > 4096:
        raise ValueError(f"BCube({n},{k}) has {n**k} servers: at most 4096 are supported")
    link_bw = link_bw or {}
    N = n**k
    t = Topology(f"bcube({n},{k})", "bcube", {"n": n, "k": k},
                 notes=f"BML BCube({n},{k}) = SIGCOMM'09 BCube_{k - 1} with {n}-port switches")
    for i in range(N):
        t.add_node(Node(server_name(i, n, k), "host", "server", coords=digits(i, n, k)))
    for level in range(k):
        for j in range(n ** (k - 1)):
            # j enumerates the other digits; the server with digit l = 0 names the switch
            low, high = j % n**level, j // n**level
            first = high * n ** (level + 1) + low
            ds = digits(first, n, k)
            name = switch_name(level, ds, k)
            t.add_node(Node(name, "switch", f"level{level}", dpid=((level + 1) << 24) + j,
                            coords=(level, j)))
            for a in range(n):
                i = neighbour(first, level, a, n)
                ip = server_ip(i, level)
                h = Intf(intf_name(server_name(i, n, k), level), server_name(i, n, k), level,
                         ip, 16, mac_from_ip(ip))
                s = Intf(intf_name(name, a + 1), name, a + 1)
                cls = f"level{level}"
                t.add_link(h, s, cls, link_bw.get(cls, bw))
    # BCube(10,3) and up hold N^2 k routes: the tables below are computed once, not per route
    ds_all = [digits(i, n, k) for i in range(N)]
    ips = [[server_ip(i, level) for i in range(N)] for level in range(k)]
    to = [[f"{ip}/32" for ip in row] for row in ips]
    # per set of differing levels (k bools, not all False), the level each destination level m's
    # route leaves on: the highest differing level other than m, else m itself
    orders = [[lv for lv in reversed(range(k)) if lv != m] + [m] for m in range(k)]
    first_hop = {}
    for mask in range(1, 2**k):
        differ = tuple(bool(mask >> lv & 1) for lv in range(k))
        first_hop[differ] = [next(lv for lv in orders[m] if differ[lv]) for m in range(k)]
    for i in range(N):
        host = server_name(i, n, k)
        devs = [intf_name(host, level) for level in range(k)]
        routes, arp = [], []
        for level in range(k):
            for a in range(n):
                j = neighbour(i, level, a, n)
                if j != i:
                    ip = ips[level][j]
                    arp.append((ip, mac_from_ip(ip), devs[level]))
        di = ds_all[i]
        for d in range(N):
            if d == i:
                continue
            dd = ds_all[d]
            hops = first_hop[tuple(di[k - 1 - lv] != dd[k - 1 - lv] for lv in range(k))]
            for m, lv in enumerate(hops):
                hop = i + (dd[k - 1 - lv] - di[k - 1 - lv]) * n**lv  # neighbour(i, lv, its digit of d)
                if hop == d and lv == m:
                    continue  # on the connected level-m subnet, one switch away
                # src: a connection to a level-m address speaks from our level-m address
                # (Gloo does not bind the source when it connects), so replies are
                # addressed on level m too, not to the NIC this hop leaves from
                routes.append(Route(to[m][d], ips[lv][hop], devs[lv], ips[m][i]))
        t.routes[host] = routes
        t.arp[host] = arp
    return t
