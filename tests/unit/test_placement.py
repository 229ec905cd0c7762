"""Nodes on the servers of a cluster (`topologies.placement.place_on_servers`, issue #22).

Pods and level-0 groups stay whole; hosts are balanced (or proportional to capacity);
the crossing links are as few as brute force over every whole-group assignment and every
placement of the remaining switches finds; the explicit map is honoured; bad input gets
one line. Pure: topologies built with the project's own spec builder, nothing started.
"""
from __future__ import annotations

import time
from collections import Counter
from itertools import product

import pytest

from topologies import spec
from topologies.placement import Placement, group_counts, groups, place_on_servers

pytestmark = pytest.mark.unit

SERVERS = ["10.99.0.1", "10.99.0.2", "10.99.0.3"]


def topo(text):
    return spec.build(text)


def ends(t, link):
    return t.intfs[link.a].node, t.intfs[link.b].node


def check_consistent(t, p: Placement, servers):
    """Every node placed once on a given server; `crossing` is exactly the links that cross."""
    assert list(p.server_of) == list(t.nodes)
    assert set(p.server_of.values()) <= set(servers)
    assert [link for link in t.links if len({p.server_of[n] for n in ends(t, link)}) == 2] == p.crossing
    assert sorted(h for s in servers for h in p.hosts_on(s)) == sorted(t.hosts())
    assert sorted(w for s in servers for w in p.switches_on(s)) == sorted(t.switches())


# ---- groups stay whole, hosts balanced -------------------------------------------------------
@pytest.mark.parametrize("text", ["fattree,k=4", "fattree,k=6", "bcube,n=3,k=2", "bcube,n=4,k=2",
                                  "bcube,n=2,k=3", "bcube,n=3,k=3"])
@pytest.mark.parametrize("count", [2, 3])
def test_groups_stay_whole_and_hosts_are_balanced(text, count):
    t = topo(text)
    servers = SERVERS[:count]
    p = place_on_servers(t, servers)
    check_consistent(t, p, servers)
    for name, nodes in groups(t).items():
        assert len({p.server_of[n] for n in nodes}) == 1, f"{name} split"
    per_group = len(t.hosts()) // len(groups(t))
    hosts = [len(p.hosts_on(s)) for s in servers]
    assert max(hosts) - min(hosts) <= per_group  # within one group of even
    assert sum(hosts) == len(t.hosts())


def test_fattree_only_agg_core_links_cross():
    for k, count in ((4, 2), (4, 3), (6, 2), (6, 3)):
        t = topo(f"fattree,k={k}")
        p = place_on_servers(t, SERVERS[:count])
        assert p.crossing and {link.cls for link in p.crossing} == {"agg-core"}
        # each pod is whole: a pod's hosts, edge and aggregation switches share a server
        for name, nodes in groups(t).items():
            assert {t.nodes[n].role for n in nodes} == {"server", "edge", "agg"}
            assert len(nodes) == (k // 2) ** 2 + k


def test_bcube_groups_are_a_level0_switch_and_its_servers():
    t = topo("bcube,n=3,k=2")
    g = groups(t)
    assert g == {"group0": ["h00", "h01", "h02", "s0_0"], "group1": ["h10", "h11", "h12", "s0_1"],
                 "group2": ["h20", "h21", "h22", "s0_2"]}
    p = place_on_servers(t, SERVERS[:2])
    assert {link.cls for link in p.crossing} == {"level1"}


def test_fattree_k4_over_two_servers_exactly():
    t = topo("fattree,k=4")
    p = place_on_servers(t, SERVERS[:2])
    assert [len(p.hosts_on(s)) for s in SERVERS[:2]] == [8, 8]
    # each core has two aggregation switches on either side: one crossing link per core is
    # impossible, two is the least; cores alternate between the servers (fewer switches)
    assert len(p.crossing) == 8
    assert [p.server_of[c] for c in ("c1_1", "c1_2", "c2_1", "c2_2")] == SERVERS[:2] * 2
    assert p.summary() == ("2 servers: 10.99.0.1 8 hosts 10 switches, 10.99.0.2 8 hosts 10 switches; "
                           "8 links cross (agg-core: 8)")


def test_uneven_split_leaves_the_first_server_lighter():
    # the first server also runs syncbed: the extra group goes to a later one
    assert group_counts(topo("fattree,k=4"), SERVERS) == [1, 1, 2]
    assert group_counts(topo("bcube,n=3,k=2"), SERVERS[:2]) == [1, 2]
    assert group_counts(topo("bcube,n=3,k=3"), SERVERS[:2]) == [4, 5]


def test_one_server_holds_everything():
    t = topo("bcube,n=4,k=2")
    p = place_on_servers(t, ["only"])
    assert set(p.server_of.values()) == {"only"} and p.crossing == []
    assert p.hosts_on("only") == t.hosts() and p.switches_on("only") == t.switches()
    assert p.summary() == "1 server: only 16 hosts 8 switches; no link crosses"


# ---- minimal crossing: brute force --------------------------------------------------------------
def brute_force(t, servers, allowed) -> int:
    """Fewest crossing links over ALL assignments of whole groups to servers whose group counts
    `allowed` accepts, and ALL placements of the remaining switches."""
    whole = groups(t)
    names = list(whole)
    grouped = {n for nodes in whole.values() for n in nodes}
    rest = [n for n in t.nodes if n not in grouped]
    index = {n: i for i, n in enumerate(t.nodes)}
    pairs = [(index[a], index[b]) for a, b in (ends(t, link) for link in t.links)]
    best = None
    for assign in product(range(len(servers)), repeat=len(names)):
        if not allowed([assign.count(s) for s in range(len(servers))]):
            continue
        where = [0] * len(t.nodes)
        for g, s in zip(names, assign):
            for n in whole[g]:
                where[index[n]] = s
        for sw in product(range(len(servers)), repeat=len(rest)):
            for n, s in zip(rest, sw):
                where[index[n]] = s
            crossing = sum(where[a] != where[b] for a, b in pairs)
            best = crossing if best is None else min(best, crossing)
    return best


def balanced(counts):
    return max(counts) - min(counts) <= 1


@pytest.mark.parametrize("text,count", [
    ("fattree,k=4", 2), ("fattree,k=4", 3), ("fattree,k=2", 2),
    ("bcube,n=2,k=2", 2), ("bcube,n=3,k=1", 2), ("bcube,n=3,k=2", 2), ("bcube,n=3,k=2", 3),
    ("bcube,n=4,k=2", 2), ("bcube,n=4,k=2", 3), ("bcube,n=2,k=3", 2), ("bcube,n=2,k=3", 3),
])
def test_crossing_is_minimal_against_brute_force(text, count):
    t = topo(text)
    servers = SERVERS[:count]
    started = time.perf_counter()
    best = brute_force(t, servers, balanced)
    assert time.perf_counter() - started < 2.0, "the brute force outgrew its budget"
    assert len(place_on_servers(t, servers).crossing) == best


@pytest.mark.parametrize("text,capacity", [
    ("fattree,k=4", [4, 12]), ("fattree,k=4", [8, 12]), ("bcube,n=2,k=3", [2, 6]), ("bcube,n=4,k=2", [12, 4]),
])
def test_crossing_is_minimal_within_capacity(text, capacity):
    t = topo(text)
    servers = SERVERS[:2]
    cap = dict(zip(servers, capacity))
    counts = group_counts(t, servers, cap)
    size = len(t.hosts()) // len(groups(t))
    assert all(c * size <= cap[s] for c, s in zip(counts, servers))  # never over capacity
    p = place_on_servers(t, servers, cap)
    assert [len(p.hosts_on(s)) for s in servers] == [c * size for c in counts]
    assert len(p.crossing) == brute_force(t, servers, lambda c: c == counts)


@pytest.mark.parametrize("count", [2, 3])
def test_bcube_3_3_group_assignment_is_optimal(count):
    """27 servers in 9 groups: too many switch placements to enumerate, but every remaining
    switch links only grouped hosts, so given the groups each one's best is independent:
    enumerate every group assignment and give each switch its best server."""
    t = topo("bcube,n=3,k=3")
    servers = SERVERS[:count]
    whole = groups(t)
    names = list(whole)
    grouped = {n: g for g, nodes in whole.items() for n in nodes}
    nb = {r: [] for r in t.nodes if r not in grouped}
    for link in t.links:
        a, b = ends(t, link)
        if a in nb or b in nb:
            assert not (a in nb and b in nb)  # independent given the groups
            r, h = (a, b) if a in nb else (b, a)
            nb[r].append(names.index(grouped[h]))
    best = None
    for assign in product(range(count), repeat=len(names)):
        if not balanced([assign.count(s) for s in range(count)]):
            continue
        crossing = sum(len(hs) - max(Counter(assign[g] for g in hs).values()) for hs in nb.values())
        best = crossing if best is None else min(best, crossing)
    assert len(place_on_servers(t, servers).crossing) == best


def test_remaining_switch_goes_where_most_neighbours_are():
    t = topo("bcube,n=3,k=2")
    p = place_on_servers(t, SERVERS[:2])  # group0 on the first server, groups 1 and 2 on the second
    assert [p.server_of[f"s0_{j}"] for j in range(3)] == [SERVERS[0], SERVERS[1], SERVERS[1]]
    assert all(p.server_of[f"s1_{j}"] == SERVERS[1] for j in range(3))  # 2 of 3 neighbours there
    assert len(p.crossing) == 3


# ---- capacity ---------------------------------------------------------------------------------------
def one_line(fn, *args, match):
    with pytest.raises(ValueError) as e:
        fn(*args)
    msg = str(e.value)
    assert "\n" not in msg and match in msg, msg
    return msg


def test_capacity_too_small_in_total():
    msg = one_line(place_on_servers, topo("fattree,k=4"), SERVERS[:2], {SERVERS[0]: 6, SERVERS[1]: 6},
                   match="fattree(4) has 16 hosts but the 2 servers carry at most 12 (capacity 6 each)")
    assert msg.startswith("cluster: ")


def test_capacity_that_cannot_keep_groups_whole():
    msg = one_line(place_on_servers, topo("fattree,k=4"), SERVERS[:2], {SERVERS[0]: 6, SERVERS[1]: 10},
                   match="kept whole")
    assert "1 + 2 of the 4 pods" in msg and "multiples of 4" in msg


def test_capacity_is_proportional_and_never_exceeded():
    t = topo("fattree,k=6")  # 6 pods of 9 hosts
    cap = dict(zip(SERVERS, [18, 36, 54]))
    counts = group_counts(t, SERVERS, cap)
    assert counts == [1, 2, 3]  # 54 hosts in proportion 1:2:3
    p = place_on_servers(t, SERVERS, cap)
    assert [len(p.hosts_on(s)) for s in SERVERS] == [9, 18, 27]
    tight = place_on_servers(t, SERVERS, dict(zip(SERVERS, [27, 27, 9])))
    assert [len(tight.hosts_on(s)) for s in SERVERS] == [18, 27, 9]  # each within its capacity
    # a server whose share is under one group gets none, rather than more than its share
    assert group_counts(t, SERVERS, dict(zip(SERVERS, [100, 9, 100]))) == [3, 0, 3]


def test_zero_capacity_server_gets_no_host():
    t = topo("bcube,n=3,k=2")
    p = place_on_servers(t, SERVERS[:2], {SERVERS[0]: 0, SERVERS[1]: 9})
    assert p.hosts_on(SERVERS[0]) == [] and p.crossing == []


@pytest.mark.parametrize("capacity,match", [
    ({"10.99.0.1": 8}, "no host count for 10.99.0.2"),
    ({"10.99.0.1": 8, "10.99.0.2": 8, "x": 1}, "'x', which is not a server"),
    ({"10.99.0.1": -1, "10.99.0.2": 8}, "whole number of hosts >= 0"),
    ({"10.99.0.1": 2.5, "10.99.0.2": 8}, "whole number of hosts >= 0"),
])
def test_bad_capacity(capacity, match):
    one_line(place_on_servers, topo("fattree,k=4"), SERVERS[:2], capacity, match=match)


@pytest.mark.parametrize("servers,match", [([], "non-empty list"), ("10.99.0.1", "non-empty list"),
                                           (["a", "a"], "listed twice"), (["a", ""], "non-empty strings")])
def test_bad_servers(servers, match):
    one_line(place_on_servers, topo("fattree,k=4"), servers, match=match)


# ---- explicit map -------------------------------------------------------------------------------------
def test_explicit_groups_and_nodes_are_honoured():
    t = topo("fattree,k=4")
    a, b = SERVERS[:2]
    p = place_on_servers(t, [a, b], explicit={"pod0": b, "c1_1": a})
    assert all(p.server_of[n] == b for n in groups(t)["pod0"])
    assert p.server_of["c1_1"] == a
    assert [len(p.hosts_on(s)) for s in (a, b)] == [8, 8]  # the free pods balance around the pin
    check_consistent(t, p, [a, b])


def test_a_pinned_member_takes_its_group_along():
    t = topo("bcube,n=3,k=2")
    a, b = SERVERS[:2]
    p = place_on_servers(t, [a, b], explicit={"h21": a})
    assert all(p.server_of[n] == a for n in groups(t)["group2"])


def test_a_member_pinned_elsewhere_is_split_off_its_group():
    t = topo("fattree,k=4")
    a, b = SERVERS[:2]
    p = place_on_servers(t, [a, b], explicit={"pod0": a, "h0_0_2": b})
    assert p.server_of["h0_0_2"] == b
    assert all(p.server_of[n] == a for n in groups(t)["pod0"] if n != "h0_0_2")
    assert any(link.cls == "host" for link in p.crossing)
    check_consistent(t, p, [a, b])


def test_everything_pinned_to_one_server():
    t = topo("bcube,n=2,k=2")
    a, b = SERVERS[:2]
    p = place_on_servers(t, [a, b], explicit={"group0": b, "group1": b})
    assert p.hosts_on(a) == [] and p.crossing == []
    assert p.switches_on(b) == t.switches()  # the level-1 switches follow their neighbours


def test_explicit_over_capacity():
    one_line(place_on_servers, topo("fattree,k=4"), SERVERS[:2], {SERVERS[0]: 8, SERVERS[1]: 8},
             {"pod0": SERVERS[0], "pod1": SERVERS[0], "h2_0_2": SERVERS[0]},
             match="puts 12 hosts on 10.99.0.1, over its capacity of 8")


def test_explicit_leaves_groups_that_cannot_fit():
    msg = one_line(place_on_servers, topo("fattree,k=4"), SERVERS[:2], {SERVERS[0]: 10, SERVERS[1]: 6},
                   {"h0_0_2": SERVERS[1]}, match="kept whole")
    assert "left after the explicit map" in msg


def test_explicit_unknown_names_and_servers():
    t = topo("fattree,k=4")
    msg = one_line(place_on_servers, t, SERVERS[:2], None, {"pod9": SERVERS[0]}, match="'pod9', which is no node")
    assert "pod0, pod1, pod2, pod3" in msg and "(36 in all)" in msg  # long lists are cut
    one_line(place_on_servers, t, SERVERS[:2], None, {"h0_0_2": "10.99.0.9"},
             match="puts h0_0_2 on '10.99.0.9', which is not a server; valid: 10.99.0.1, 10.99.0.2")
    one_line(place_on_servers, topo("bcube,n=3,k=2"), SERVERS[:2], None, {"pod0": SERVERS[0]},
             match="group0, group1, group2")


def test_unknown_server_in_a_query():
    p = place_on_servers(topo("bcube,n=2,k=1"), ["a"])
    one_line(p.hosts_on, "b", match="'b' is not a server of this placement; valid: a")
