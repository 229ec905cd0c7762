"""The exact reduction of a step's flows (emulation/simulator/symmetry.py, issue #23).

- the grouping is the coarsest equitable partition: equal to a brute-force colour refinement
  written with Python tuples, and equitable (every link of a link class carries the same number
  of flows of each flow class) on small schedules;
- simulating one communication per class gives the unreduced simulation's sync time (to 1e-9
  relative) and its bytes per NIC, PS on Fat-Tree k=4, 6 and 8 (16, 54 and 128 workers) with
  two-level routing, and on hash ECMP where nothing reduces;
- `reduces`: auto reduces only where simulating every flow would cost and the routing keeps
  the symmetry; bad modes are refused in one line.
"""
from __future__ import annotations

import numpy as np
import pytest

from emulation.simulator import core
from emulation.simulator import platform as simgrid_platform
from emulation.simulator import symmetry
from topologies.spec import build

pytestmark = [pytest.mark.unit]

TOL = 1e-9  # relative: the reduced and unreduced runs solve the same max-min system


def ints(colours):
    """The same partition with small integer colours (nested signatures would grow every round)."""
    ids = {c: i for i, c in enumerate(sorted(set(colours.values()), key=repr))}
    return {k: ids[v] for k, v in colours.items()}


def brute_partition(routes, sizes, caps):
    """Colour refinement with Python tuples, no numpy: (flow classes, link classes) as sets."""
    fc = ints({f: sizes[f] for f in range(len(routes))})
    lc = ints({l: caps[l] for l in range(len(caps))})
    on = {l: [] for l in range(len(caps))}
    for f, r in enumerate(routes):
        for l in r:
            on[l].append(f)
    while True:
        nf = {f: (fc[f], tuple(sorted((lc[l], r.count(l)) for l in set(r)))) for f, r in enumerate(routes)}
        nl = {l: (lc[l], tuple(sorted(nf[f] for f in on[l]))) for l in lc}
        same = len(set(nf.values())) == len(set(fc.values())) and len(set(nl.values())) == len(set(lc.values()))
        fc, lc = ints(nf), ints(nl)
        if same:
            break

    def blocks(col):
        out = {}
        for k, v in col.items():
            out.setdefault(v, set()).add(k)
        return {frozenset(b) for b in out.values()}
    return blocks(fc), blocks(lc)


def blocks_of(labels):
    out = {}
    for i, c in enumerate(np.asarray(labels).tolist()):
        out.setdefault(c, set()).add(i)
    return {frozenset(b) for b in out.values()}


def csr(routes):
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in routes])])
    return indptr, np.array([l for r in routes for l in r], dtype=np.int64)


def schedule_of(spec, algo, ecmp):
    topo = simgrid_platform.indexed(build(spec, bw=1000, ecmp=ecmp))
    p = core.prepare(core.Request(spec, algo, ecmp=ecmp, bw=1000, max_seconds=None, reduce="off"), topo)
    platform = simgrid_platform.platform_for(p.topo, p.pairs)
    return platform, core.schedule(p.form.steps, p.hosts, platform.endpoints)


def test_a_small_case_by_hand():
    # links 0, 1 (capacity 1) and 2 (capacity 2); flows 0 and 1 each alone on a unit link and
    # both on link 2; flow 2 on link 2 only; flow 3 of another size on link 0
    routes = [[0, 2], [1, 2], [2], [0]]
    cls = symmetry.equitable_partition(*csr(routes), [5, 5, 5, 7], [1.0, 1.0, 2.0])
    assert blocks_of(cls.flow_class) == {frozenset({0}), frozenset({1}), frozenset({2}), frozenset({3})}
    routes = [[0, 2], [1, 2], [2]]  # without flow 3, flows 0 and 1 (and links 0 and 1) are interchangeable
    cls = symmetry.equitable_partition(*csr(routes), [5, 5, 5], [1.0, 1.0, 2.0])
    assert blocks_of(cls.flow_class) == {frozenset({0, 1}), frozenset({2})}
    assert blocks_of(cls.link_class) == {frozenset({0, 1}), frozenset({2})}
    # the class {0, 1}: one flow on its unit link, two on link 2
    c = cls.flow_class[0]
    rep = {cls.link_class[l]: l for l in cls.rep_link.tolist()}
    assert sorted(cls.weights[c]) == sorted([(rep[cls.link_class[0]], 1), (rep[cls.link_class[2]], 2)])


@pytest.mark.parametrize("spec,algo,ecmp", [("fattree,k=4", "ps", "two-level"), ("fattree,k=4", "ps", "hash"),
                                            ("fattree,k=4", "ring", "two-level"), ("bcube,n=3,k=2", "ps", "hash"),
                                            ("bcube,n=3,k=2", "bml", "hash")])
def test_grouping_is_the_brute_force_coarsest_equitable_partition(spec, algo, ecmp):
    platform, sched = schedule_of(spec, algo, ecmp)
    names = list(platform.links)
    index = {n: i for i, n in enumerate(names)}
    caps = [platform.links[n] for n in names]
    for step in sched:
        routes = [[index[x] for x in platform.routes[(s, d)]] for s, d, _ in step]
        sizes = [b for _, _, b in step]
        cls = symmetry.equitable_partition(*csr(routes), sizes, caps)
        flows, links = brute_partition(routes, sizes, caps)
        assert blocks_of(cls.flow_class) == flows
        assert blocks_of(cls.link_class) == links
        # equitable: every link of a class carries as many flows of each flow class as its representative
        count = {}
        for f, r in enumerate(routes):
            for l in r:
                count[(l, cls.flow_class[f])] = count.get((l, cls.flow_class[f]), 0) + 1
        for l in range(len(caps)):
            rep = cls.rep_link[cls.link_class[l]]
            for c in range(cls.classes):
                assert count.get((l, c), 0) == count.get((rep, c), 0)
        for c, f in enumerate(cls.rep_flow.tolist()):
            assert all(sizes[g] == sizes[f] for g in np.nonzero(cls.flow_class == c)[0])


def test_ps_on_a_two_level_fattree_reduces_to_a_few_classes():
    platform, sched = schedule_of("fattree,k=4", "ps", "two-level")
    red = symmetry.reduce_schedule(platform, sched)
    d = red.describe()
    assert d["flows_per_step"] == [240, 240] and d["classes_per_step"] == [3, 3]
    # every class's route holds its link classes' representatives n(L, F) times
    assert all(r for r in red.platform.routes.values())


@pytest.mark.skipif(core.simgrid_available() is not None, reason=f"SimGrid is not importable: {core.simgrid_available()}")
@pytest.mark.parametrize("spec,ecmp,classes", [("fattree,k=4", "two-level", 3), ("fattree,k=6", "two-level", 387),
                                               ("fattree,k=8", "two-level", 3), ("fattree,k=4", "hash", 240)])
def test_reduced_simulation_gives_the_unreduced_answer(spec, ecmp, classes):
    runs = {red: core.project(core.Request(spec, "ps", ecmp=ecmp, bw=1000, max_seconds=None, reduce=red))
            for red in ("off", "on")}
    off, on = runs["off"], runs["on"]
    assert on["simulator"]["reduction"]["classes_per_step"] == [classes, classes]
    assert off["simulator"]["reduction"] is None
    # what SimGrid ran per step (the run-time estimate's input): the classes, or every message
    assert on["simulator"]["simulated_messages_per_step"] == [classes, classes]
    assert sum(off["simulator"]["simulated_messages_per_step"]) == off["simulator"]["messages"]
    assert on["median_sync_seconds"] == pytest.approx(off["median_sync_seconds"], rel=TOL)
    assert on["step_seconds"] == pytest.approx(off["step_seconds"], rel=TOL)
    assert on["payload_equal"] and off["payload_equal"]
    assert on["payload_bytes_simulated"] == off["payload_bytes_simulated"]


def test_auto_reduces_only_what_would_cost_and_keeps_its_symmetry():
    two = build("fattree,k=4", bw=1000, ecmp="two-level")
    hashed = build("fattree,k=4", bw=1000, ecmp="hash")
    big = [300_000, 300_000]
    assert core.reduces("auto", two, big) and not core.reduces("auto", two, [240, 240])
    assert not core.reduces("auto", hashed, big)  # collisions break the symmetry: nothing to gain
    assert core.reduces("on", hashed, [1]) and not core.reduces("off", two, big)
    with pytest.raises(ValueError, match="valid: auto, on, off"):
        core.reduces("maybe", two, big)


def test_bad_routes_are_refused_in_one_line():
    with pytest.raises(ValueError, match="indptr"):
        symmetry.equitable_partition([0, 2], [0], [1], [1.0])
    with pytest.raises(ValueError, match="outside"):
        symmetry.equitable_partition([0, 1], [3], [1], [1.0])
