"""The projection by orbits (emulation/simulator/orbits.py, issue #23): a symmetric plan on a
symmetric network, one SimGrid communication per orbit of flows, no flow listed.

- the generators are automorphisms of the routed Fat-Tree (every route of k = 4, 6, 8 maps onto
  the route of the image pair; capacities kept), and not of hash ECMP;
- PS's blocks (`Algorithm.blocks`) are its phases, flow for flow, co-located or not, equal
  shards or not;
- the orbits are the orbits: computed by brute force (union-find over the generators' images
  of every pair) they are the 2 (k/2)^2 - 1 classes with the sizes and the n(L, F) the form
  uses, which hold on every link of each link orbit (equitable);
- the projection by orbits gives the unreduced simulation's sync and step times (1e-9
  relative), bytes per NIC, expected bytes, bound and byte totals: PS on Fat-Tree k = 4, 6, 8
  with two-level routing (k = 6 with a gradient of equal shards), and per-class bandwidths;
- the block-sparse algorithms' modelled steps (nothing measured) are blocks too, by orbits
  with the unreduced answer, padded where their owners' messages differ;
- unequal shards (PS's 4 MiB over 54 or 3456 owners) are simulated padded to the largest shard,
  the same pairs and routes, where the two bounds of `orbits.padded_exact` meet: the unreduced
  simulation of the unequal plan gives the same times (k = 4, 6, 8) and bytes per NIC of the
  unequal plan; where the bounds part (a core slower than the hosts' links) it is refused;
- where the symmetry does not hold it is refused and named, and the projection falls back to
  listing every flow with the same answer as `--reduce off`: hash ECMP, one host's link at
  another bandwidth, a placement no symmetry keeps, shards some owners lack, dedicated servers, an
  algorithm without blocks;
- a placement on fewer hosts than the Fat-Tree has is projected by the orbits of the generators
  that keep it (pod swaps, the shifts): they are the brute-force orbits of its pairs, and the
  answer is the unreduced one (equal shards, padded ones, a slower core);
- on a BCube whose every server is a rank, each level's digit values permuted are automorphisms
  of the routes to every address; the 2^k - 1 orbits are the brute-force ones and equitable; the
  relayed bytes' closed form per NIC is the routes' bytes; PS by orbits gives the unreduced
  answer, with the flows into each NIC (relays included) for an incast start-up read off the
  orbits; fewer servers or unequal shards fall back, named.
"""
from __future__ import annotations

import pytest

from emulation import expected as analysis
from emulation.report import projection as projection_report
from emulation.simulator import core, orbits
from emulation.simulator import platform as simgrid_platform
from topologies.spec import build
from workloads.algorithms import base

pytestmark = [pytest.mark.unit]

TOL = 1e-9
needs_simgrid = pytest.mark.skipif(core.simgrid_available() is not None,
                                   reason=f"SimGrid is not importable: {core.simgrid_available()}")


def fattree(k, ecmp="two-level"):
    return simgrid_platform.indexed(build(f"fattree,k={k}", bw=1000, ecmp=ecmp))


def equal_shards_mb(hosts: int) -> float:
    """A gradient (MiB) that `hosts` owners split into equal shards: 4096 elements each."""
    return hosts * 4096 * base.DTYPE_BYTES / 2**20


@pytest.mark.parametrize("k", [4, 6, 8])
def test_the_generators_are_automorphisms_of_two_level_routes(k):
    topo = fattree(k)
    assert orbits.refusal(topo) is None
    assert orbits.check_generators(topo) == []


def test_hash_ecmp_has_no_such_group_and_is_refused():
    topo = fattree(4, "hash")
    assert "hash ECMP" in orbits.refusal(topo)
    assert orbits.check_generators(topo)  # the brute force finds routes the generators do not keep


@pytest.mark.parametrize("workers,servers,elements", [(16, 0, 4096 * 16), (16, 0, 1001), (5, 0, 7), (12, 3, 1000)])
def test_ps_blocks_are_its_phases(workers, servers, elements):
    ctx = base.PlanContext(workers=workers, servers=servers, layer_sizes=(elements,))
    algo, plan = base.plan_for("ps", ctx)
    blocks = algo.step_blocks(plan)
    steps = algo.steps(plan)
    assert len(blocks) == len(steps) == 2
    for bl, st in zip(blocks, steps):
        listed = base.merge_flows(f for b in bl for f in b.flows())
        assert listed == base.merge_flows(st)
        assert sum(b.count for b in bl) == len(st)
    assert algo.step_rounds(plan) == [1, 1]
    assert base.get("ring").step_blocks({}) is None  # the default: no block form


def brute_pair_orbits(hosts, gens):
    """Orbits of the ordered pairs of distinct `hosts` under `gens`, by union-find (brute force)."""
    pairs = [(s, d) for s in hosts for d in hosts if s != d]
    parent = {p: p for p in pairs}

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for m in gens.values():
        for s, d in pairs:
            a, b = find((s, d)), find((m[s], m[d]))
            if a != b:
                parent[b] = a
    out = {}
    for p in pairs:
        out.setdefault(find(p), set()).add(p)
    return sorted(sorted(o) for o in out.values())


def pair_orbits(topo):
    """Orbits of every (src, dst) host pair under the generators, by union-find (brute force)."""
    return [set(o) for o in brute_pair_orbits(topo.hosts(), orbits.generators(topo))]


@pytest.mark.parametrize("k", [4, 6])
def test_the_orbits_are_the_brute_force_orbits_and_equitable(k):
    topo = fattree(k)
    hosts = topo.hosts()
    P, h = len(hosts), k // 2
    ctx = base.PlanContext(workers=P, layer_sizes=(4096 * P,), topology=topo, hosts=tuple(hosts))
    algo, plan = base.plan_for("ps", ctx)
    form = orbits.orbit_form(topo, hosts, algo.step_blocks(plan), simgrid_platform.directed_links(topo))
    brute = pair_orbits(topo)
    assert len(brute) == 2 * h * h - 1 == form.info["classes_per_step"][0]
    # the form's representatives from h0_0_2, in its order
    reps = [(f"h{p}_{e}_{t + 2}") for p in (0, 1) for e in range(h) for t in range(h)]
    reps = [d for d in reps if d != "h0_0_2"]
    orbit_of_pair = {pair: i for i, o in enumerate(brute) for pair in o}
    by_rep = [next(o for o in brute if ("h0_0_2", d) in o) for d in reps]
    assert sorted(len(o) for o in by_rep) == sorted(len(o) for o in brute)
    link_orbit = form.orbit_of
    # equitable: every link of an orbit L carries exactly n(L, F) flows of each flow orbit F
    on_link: dict = {}
    for s in hosts:
        for d in hosts:
            if s != d:
                for tx, _ in topo.route(s, topo.host_nics(d)[0].ip):
                    key = (tx, orbit_of_pair[(s, d)])
                    on_link[key] = on_link.get(key, 0) + 1
    for c, (orbit, n) in enumerate(zip(by_rep, form.n[0])):
        o = orbit_of_pair[next(iter(orbit))]
        for link, lo in link_orbit.items():
            assert on_link.get((link, o), 0) == n.get(lo, 0), (c, link)


@needs_simgrid
@pytest.mark.parametrize("k,mb", [(4, 4.0), (6, equal_shards_mb(54)), (8, 4.0)])
def test_projection_by_orbits_gives_the_unreduced_answer(k, mb):
    spec = f"fattree,k={k}"
    runs = {red: core.project(core.Request(spec, "ps", ecmp="two-level", bw=1000, mb=mb, max_seconds=None,
                                           reduce=red)) for red in ("off", "auto")}
    off, by = runs["off"], runs["auto"]
    assert by["simulator"]["reduction"]["method"].startswith("orbits")
    assert by["simulator"]["orbits_refused"] is None and off["simulator"]["orbits_refused"] == "--reduce off"
    assert by["simulator"]["reduction"]["classes_per_step"] == [2 * (k // 2) ** 2 - 1] * 2
    assert by["simulator"]["simulated_messages_per_step"] == [2 * (k // 2) ** 2 - 1] * 2
    same_answer(by, off)
    assert by["simulator"]["messages"] == off["simulator"]["messages"]


def same_answer(by, off):
    """The projection by orbits gives the unreduced one's times, bytes per NIC, bound and totals."""
    assert by["median_sync_seconds"] == pytest.approx(off["median_sync_seconds"], rel=TOL)
    assert by["step_seconds"] == pytest.approx(off["step_seconds"], rel=TOL)
    assert by["payload_equal"] and off["payload_equal"]
    assert by["payload_bytes_simulated"] == off["payload_bytes_simulated"]
    assert by["payload_bytes_expected"] == off["payload_bytes_expected"]
    for key in ("bound_seconds", "bound_nonblocking_seconds", "data_bytes_per_sync", "framing_bytes_per_sync",
                "rounds_per_sync"):
        assert by[key] == off[key], key


@pytest.mark.parametrize("k,workers,placement", [(4, 8, "ordered"), (4, 12, "spread"), (4, 5, "spread"),
                                                 (6, 27, "ordered"), (6, 36, "spread")])
def test_a_placements_generators_keep_it_and_its_pair_orbits_are_the_brute_force_ones(k, workers, placement):
    from topologies.placement import place
    topo = fattree(k)
    hosts = place(topo, workers, placement)
    gens = orbits.placement_generators(topo, hosts)
    assert gens and orbits.placement_refusal(topo, hosts) is None
    for m in gens.values():
        assert {m[h] for h in hosts} == set(hosts)
    assert orbits.check_generators(topo, pairs=[(s, d) for s in hosts[:3] for d in hosts if s != d]) == []
    found = orbits.pair_orbits(hosts, gens)
    brute = brute_pair_orbits(hosts, gens)
    assert sorted(m for _, _, m in found) == sorted(len(o) for o in brute)
    index = {h: i for i, h in enumerate(hosts)}
    for s, d, m in found:  # each representative is its orbit's least pair, with the orbit's size
        orbit = next(o for o in brute if (s, d) in o)
        assert len(orbit) == m and min(orbit, key=lambda p: (index[p[0]], index[p[1]])) == (s, d)


@needs_simgrid
@pytest.mark.parametrize("k,workers,placement,mb,link_bw", [
    (4, 8, "ordered", None, None), (4, 12, "spread", None, None), (6, 27, "ordered", None, None),
    (6, 36, "spread", None, {"agg-core": 250}),  # a slower core keeps a placement's symmetry
    (4, 8, "spread", 1.00001, None), (6, 27, "ordered", 1.00001, None)])  # unequal shards, padded (proved exact)
def test_a_placement_on_fewer_hosts_by_orbits_gives_the_unreduced_answer(k, workers, placement, mb, link_bw):
    topo = build(f"fattree,k={k}", bw=1000, ecmp="two-level")
    if link_bw:
        topo.set_bandwidth(link_bw)
    topo = simgrid_platform.indexed(topo)
    req = dict(ecmp="two-level", bw=1000, max_seconds=None, workers=workers, placement=placement,
               mb=mb or equal_shards_mb(workers))
    by = core.project(core.Request(f"fattree,k={k}", "ps", **req), topo)
    off = core.project(core.Request(f"fattree,k={k}", "ps", reduce="off", **req), topo)
    red = by["simulator"]["reduction"]
    assert red["method"].startswith("orbits of the placement's symmetries"), by["simulator"]["orbits_refused"]
    assert red["classes_per_step"][0] < workers * (workers - 1)
    assert ("padded" in red) == (mb is not None)
    assert by["median_sync_seconds"] == pytest.approx(off["median_sync_seconds"], rel=TOL)
    assert by["step_seconds"] == pytest.approx(off["step_seconds"], rel=TOL)
    assert by["payload_equal"] and off["payload_equal"]
    assert by["payload_bytes_expected"] == off["payload_bytes_expected"]
    for key in ("bound_seconds", "bound_nonblocking_seconds", "data_bytes_per_sync", "framing_bytes_per_sync"):
        assert by[key] == off[key], key


def test_padded_is_one_block_per_step_where_the_parts_cover_every_rank():
    ctx = base.PlanContext(workers=16, servers=0, layer_sizes=(1001,))
    _, plan = base.plan_for("ps", ctx)
    blocks = base.get("ps").step_blocks(plan)
    assert [len(step) for step in blocks] == [2, 2]  # shards of 63 and 62 elements
    pad = orbits.padded(blocks, 16)
    every = tuple(range(16))
    assert pad == [[base.FlowBlock(every, every, 0, 63 * base.DTYPE_BYTES, 1)]] * 2
    assert orbits.steps_refusal(fattree(4), fattree(4).hosts(), pad) is None
    _, plan = base.plan_for("ps", base.PlanContext(workers=16, servers=0, layer_sizes=(10,)))  # 6 owners hold none
    assert orbits.padded(base.get("ps").step_blocks(plan), 16) is None
    _, plan = base.plan_for("ps", base.PlanContext(workers=14, servers=2, layer_sizes=(1000,)))
    assert orbits.padded(base.get("ps").step_blocks(plan), 16) is None


@needs_simgrid
@pytest.mark.parametrize("k,mb", [(4, 1.00001), (6, 4.0), (8, 4.00001)])
def test_unequal_shards_padded_give_the_unreduced_answer(k, mb):
    spec = f"fattree,k={k}"
    runs = {red: core.project(core.Request(spec, "ps", ecmp="two-level", bw=1000, mb=mb, max_seconds=None,
                                           reduce=red)) for red in ("off", "auto")}
    off, by = runs["off"], runs["auto"]
    red = by["simulator"]["reduction"]
    assert red["method"].startswith("orbits") and by["simulator"]["orbits_refused"] is None
    sizes = red["padded"]["block_bytes"]
    assert all(len(s) == 2 and s[1] - s[0] == base.DTYPE_BYTES for s in sizes)  # shards really unequal
    assert red["padded"]["lower_seconds"] == pytest.approx(red["padded"]["upper_seconds"], rel=TOL)
    assert by["median_sync_seconds"] == pytest.approx(off["median_sync_seconds"], rel=TOL)
    assert by["step_seconds"] == pytest.approx(off["step_seconds"], rel=TOL)
    assert by["payload_equal"] and off["payload_equal"]
    assert by["payload_bytes_expected"] == off["payload_bytes_expected"] == off["payload_bytes_simulated"]
    assert by["payload_bytes_padded"] == by["payload_bytes_simulated"] != by["payload_bytes_expected"]
    for key in ("bound_seconds", "bound_nonblocking_seconds", "data_bytes_per_sync", "framing_bytes_per_sync",
                "rounds_per_sync"):
        assert by[key] == off[key], key
    lines = projection_report.padded_lines([by, off])  # the report says which run was padded, once
    assert len(lines) == 4 and "padded to the largest" in lines[2]


@needs_simgrid
@pytest.mark.parametrize("algo,mb", [("dfs,density=0.01", 4.0), ("omnireduce,density=0.01", 1.0),
                                     ("topk_ps,density=0.001", 4.0), ("omnireduce", 1.0)])
def test_block_sparse_models_by_orbits_give_the_unreduced_answer(algo, mb):
    # nothing measured: their modelled steps as blocks (Algorithm.blocks of a data-dependent
    # algorithm), by orbits, padded where the owners' modelled messages differ in size
    runs = {red: core.project(core.Request("fattree,k=4", algo, ecmp="two-level", bw=1000, mb=mb, max_seconds=None,
                                           reduce=red)) for red in ("off", "auto")}
    off, by = runs["off"], runs["auto"]
    assert by["simulator"]["reduction"]["method"].startswith("orbits") and by["simulator"]["orbits_refused"] is None
    assert by["bytes_source"] == off["bytes_source"] == "model"
    assert by["median_sync_seconds"] == pytest.approx(off["median_sync_seconds"], rel=TOL)
    assert by["step_seconds"] == pytest.approx(off["step_seconds"], rel=TOL)
    assert by["payload_equal"] and by["payload_bytes_expected"] == off["payload_bytes_expected"]
    assert by["bound_seconds"] == off["bound_seconds"]


@needs_simgrid
def test_block_sparse_models_whose_padding_changes_the_answer_list_every_flow():
    # 0.01 MiB at density 0.001: some owners' pushes carry a kept element, others none
    falls_back(fattree(4), core.Request("fattree,k=4", "topk_ps,density=0.001", ecmp="two-level", bw=1000, mb=0.01,
                                        max_seconds=None), "padding would change the answer")


@needs_simgrid
def test_unequal_shards_on_a_slower_core_are_not_padded():
    topo = build("fattree,k=4", bw=1000, ecmp="two-level")
    topo.set_bandwidth({"agg-core": 250})
    falls_back(simgrid_platform.indexed(topo),
               core.Request("fattree,k=4", "ps", ecmp="two-level", bw=1000, mb=1.00001, max_seconds=None),
               "padding would change the answer")


@needs_simgrid
def test_orbit_link_bytes_are_the_routes_bytes():
    topo = fattree(4)
    p = core.prepare(core.Request("fattree,k=4", "ps", ecmp="two-level", bw=1000, max_seconds=None), topo)
    assert p.orbits is not None
    rec = core.project(p, inspect=True)
    flows = p.algo.traffic(p.plan)
    ports = analysis.expected_port_bytes(topo, p.hosts, flows, 1)
    assert orbits.port_bytes(topo, rec["_link_bytes"]) == ports


def falls_back(topo, req, why):
    """`auto` refuses the orbits (named) and lists every flow, with `off`'s answer."""
    p = core.prepare(req, topo)
    assert p.orbits is None and why in p.orbits_refused, p.orbits_refused
    rec = core.project(p)
    off = core.project(core.Request(**{**req.__dict__, "reduce": "off"}), topo)
    assert rec["simulator"]["orbits_refused"] == p.orbits_refused
    assert rec["median_sync_seconds"] == pytest.approx(off["median_sync_seconds"], rel=TOL)
    assert rec["payload_equal"] and rec["payload_bytes_simulated"] == off["payload_bytes_simulated"]


@needs_simgrid
def test_hash_ecmp_falls_back_named():
    falls_back(fattree(4, "hash"), core.Request("fattree,k=4", "ps", ecmp="hash", bw=1000, max_seconds=None),
               "hash ECMP")


@needs_simgrid
def test_one_slower_host_link_falls_back_named():
    topo = build("fattree,k=4", bw=1000, ecmp="two-level")
    topo.set_bandwidth({"h0_0_2": 500})
    falls_back(simgrid_platform.indexed(topo),
               core.Request("fattree,k=4", "ps", ecmp="two-level", bw=1000, max_seconds=None), "unequal capacities")


@needs_simgrid
def test_per_class_bandwidths_keep_the_symmetry():
    topo = build("fattree,k=4", bw=1000, ecmp="two-level")
    topo.set_bandwidth({"agg-core": 250})
    topo = simgrid_platform.indexed(topo)
    req = core.Request("fattree,k=4", "ps", ecmp="two-level", bw=1000, max_seconds=None)
    by, off = core.project(req, topo), core.project(core.Request(**{**req.__dict__, "reduce": "off"}), topo)
    assert by["simulator"]["reduction"]["method"].startswith("orbits")
    assert by["median_sync_seconds"] == pytest.approx(off["median_sync_seconds"], rel=TOL)
    assert by["payload_bytes_simulated"] == off["payload_bytes_simulated"] and by["bound_seconds"] == off["bound_seconds"]


@needs_simgrid
@pytest.mark.parametrize("kw,why", [(dict(workers=3), "no symmetry of the routed Fat-Tree moves a worker"),
                                    (dict(mb=0.00001), "unequal shards"),
                                    (dict(workers=14, servers=2), "dedicated servers"),
                                    (dict(algo="ring"), "no Algorithm.blocks")])
def test_asymmetric_plans_fall_back_named(kw, why):
    req = core.Request("fattree,k=4", kw.pop("algo", "ps"), ecmp="two-level", bw=1000, max_seconds=None, **kw)
    falls_back(fattree(4), req, why)


def test_on_keeps_the_colour_refinement():
    p = core.prepare(core.Request("fattree,k=4", "ps", ecmp="two-level", bw=1000, max_seconds=None, reduce="on"),
                     fattree(4))
    assert p.orbits is None and p.orbits_refused == "--reduce on" and p.reduce


@needs_simgrid
def test_round_latency_is_charged_as_when_every_flow_is_listed():
    req = dict(ecmp="two-level", bw=1000, max_seconds=None, round_latency=3e-5)
    by = core.project(core.Request("fattree,k=4", "ps", **req))
    off = core.project(core.Request("fattree,k=4", "ps", reduce="off", **req))
    assert by["simulator"]["reduction"]["method"].startswith("orbits")
    assert by["median_sync_seconds"] == pytest.approx(off["median_sync_seconds"], rel=TOL)
    assert by["step_seconds"] == pytest.approx(off["step_seconds"], rel=TOL)


@pytest.mark.parametrize("name", [n for n, a in base.registry().items() if a.blocks is not None])
@pytest.mark.parametrize("workers,servers", [(1, 0), (4, 0), (7, 0), (6, 2)])
def test_every_algorithm_with_blocks_expands_them_to_its_steps(name, workers, servers):
    algo = base.get(name)
    if algo.refusal(workers, servers):
        pytest.skip(algo.refusal(workers, servers))
    for elements in (3, 1000, 4096 * workers):
        try:
            _, plan = base.plan_for(name, base.PlanContext(workers=workers, servers=servers, layer_sizes=(elements,)))
        except ValueError:  # a gradient the algorithm refuses (DFS's block sizes above 3 elements)
            continue
        blocks = algo.step_blocks(plan)
        if blocks is None:
            continue
        # a data-dependent algorithm's blocks are its modelled steps (what a projection with
        # nothing measured simulates), a plan's are its steps
        steps = algo.modelled_steps(plan) if algo.data_dependent else algo.steps(plan)
        assert len(blocks) == len(steps)
        for bl, st in zip(blocks, steps):
            assert base.merge_flows(f for b in bl for f in b.flows()) == base.merge_flows(st)


def test_a_refusal_of_the_listed_flows_names_why_not_by_orbits():
    req = core.Request("fattree,k=8", "ps", ecmp="hash", bw=1000, max_memory=200e6)
    with pytest.raises(core.TooLarge, match=r"GiB available \(not by orbits: hash ECMP"):
        core.prepare(req, fattree(8, "hash"))


@needs_simgrid
def test_a_placement_whose_padding_is_not_proved_exact_lists_every_flow():
    # 12 workers spread on k=4 (two on some edge switches, one on others), unequal shards: the
    # padded step's two bounds part, so the unequal plan is simulated flow by flow, with off's answer
    req = core.Request("fattree,k=4", "ps", ecmp="two-level", bw=1000, max_seconds=None, workers=12,
                       placement="spread", mb=1.00001)
    falls_back(fattree(4), req, "padding would change the answer")


# ---- BCube: each level's digit values permuted (orbits.bcube_generators) -------------------
def bcube(n, k):
    return simgrid_platform.indexed(build(f"bcube,n={n},k={k}", bw=1000))


@pytest.mark.parametrize("n,k", [(2, 3), (3, 2), (4, 2), (3, 3)])
def test_bcube_generators_are_automorphisms_of_its_routes_to_every_address(n, k):
    topo = bcube(n, k)
    assert orbits.refusal(topo) is None
    assert orbits.check_generators(topo) == []  # every pair, to each of the destination's k addresses


@pytest.mark.parametrize("n,k", [(2, 3), (3, 2), (4, 2)])
def test_bcube_orbits_are_the_brute_force_orbits_and_equitable(n, k):
    topo = bcube(n, k)
    hosts = topo.hosts()
    P = len(hosts)
    brute = pair_orbits(topo)
    ctx = base.PlanContext(workers=P, layer_sizes=(4096 * P,), topology=topo, hosts=tuple(hosts),
                           nics=len(topo.host_nics(hosts[0])))
    algo, plan = base.plan_for("ps", ctx)
    blocks = algo.step_blocks(plan)
    form = orbits.orbit_form(topo, hosts, blocks, simgrid_platform.directed_links(topo))
    assert len(brute) == 2 ** k - 1 == form.info["classes_per_step"][0]
    # one orbit per non-empty set D of differing digits, of P (n - 1)^|D| pairs
    assert sorted(len(o) for o in brute) == sorted(P * (n - 1) ** bin(x).count("1") for x in range(1, 2 ** k))
    orbit_of_pair = {pair: i for i, o in enumerate(brute) for pair in o}
    nic = blocks[0][0].nic
    on_link: dict = {}
    for s in hosts:
        for d in hosts:
            if s != d:
                for tx, _ in topo.route(s, topo.host_nics(d)[nic].ip):
                    key = (tx, orbit_of_pair[(s, d)])
                    on_link[key] = on_link.get(key, 0) + 1
    zero = "h" + "0" * k
    reps = [(zero, "h" + "".join(str((x >> (k - 1 - p)) & 1) for p in range(k))) for x in range(1, 2 ** k)]
    for (s, d), counts in zip(reps, form.n[0]):  # equitable: n(L, F) flows of F on every link of L
        o = orbit_of_pair[(s, d)]
        for link, lo in form.orbit_of.items():
            assert on_link.get((link, o), 0) == counts.get(lo, 0), (s, d, link)


@pytest.mark.parametrize("n,k", [(2, 3), (3, 2), (4, 2)])
def test_bcube_relayed_nic_bytes_closed_form_is_the_routes_bytes(n, k):
    topo = bcube(n, k)
    hosts = topo.hosts()
    P = len(hosts)
    for elements in (4096 * P, 3 * P):
        ctx = base.PlanContext(workers=P, layer_sizes=(elements,), topology=topo, hosts=tuple(hosts),
                               nics=len(topo.host_nics(hosts[0])))
        algo, plan = base.plan_for("ps", ctx)
        laid = analysis.expected_nic_bytes(topo, hosts, algo.traffic(plan), 1)
        assert orbits.block_nic_bytes(topo, hosts, algo.step_blocks(plan)) == laid
    with pytest.raises(ValueError, match="a rank on every server"):
        orbits.bcube_nic_bytes(topo, hosts[:-1], [])


@needs_simgrid
@pytest.mark.parametrize("n,k,incast", [(2, 3, False), (3, 2, False), (4, 2, True), (3, 3, True)])
def test_ps_on_bcube_by_orbits_gives_the_unreduced_answer(n, k, incast):
    # with an incast start-up capped by the flows' bytes, the flows into each NIC (relays
    # included) are read off the orbits instead of walked route by route
    spec = f"bcube,n={n},k={k}"
    topo = bcube(n, k)
    extra = dict(incast=0.004, incast_bytes=20e3, incast_flow_share=0.4) if incast else {}
    req = dict(bw=1000, mb=equal_shards_mb(n ** k), max_seconds=None, **extra)
    by = core.project(core.Request(spec, "ps", **req), topo)
    off = core.project(core.Request(spec, "ps", reduce="off", **req), topo)
    red = by["simulator"]["reduction"]
    assert red["method"].startswith("orbits of the routed BCube"), by["simulator"]["orbits_refused"]
    assert red["classes_per_step"] == [2 ** k - 1] * 2
    assert by["extra_flows_per_sync"] == off["extra_flows_per_sync"] > 0
    same_answer(by, off)
    if incast:
        assert by["incast_seconds"] == off["incast_seconds"] > 0


@needs_simgrid
@pytest.mark.parametrize("kw,why", [(dict(workers=8), "only a placement on every server"),
                                    (dict(mb=0.00001), "unequal shards")])
def test_ps_on_bcube_without_its_symmetry_falls_back_named(kw, why):
    req = core.Request("bcube,n=3,k=2", "ps", bw=1000, max_seconds=None, **kw)
    falls_back(bcube(3, 2), req, why)
