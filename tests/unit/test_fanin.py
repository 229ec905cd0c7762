"""Fan-in in the projection (emulation/simulator/fanin.py, NetworkModel.fan_in in core.py) and the
split its fit uses (emulation/report/doctables/projection.py).

- eff(n) = e + (1 - e) / n: one flow unchanged, bounds, bad e refused;
- the fit recovers a known e from synthetic runs (simulated = t / eff(n, e), measured at e_true);
- inside SimGrid (NONLINEAR sharing on the links into NICs): a plan with one flow per NIC is
  unchanged, n flows into one NIC take 1 / eff(n) longer, 1 is plain max-min;
- the split of the fan-in fit never has a folder on both sides;
- `--fan-in` takes every algorithm's e and an executor's own (ALGO=E), each request gets its
  algorithm's, and the docs refuse a run simulated with another than its executor's fitted e;
- the incast start-up: flows into a step's busiest NIC counted from flows or blocks alike, charged
  per flow beyond the first (exactly, with and without the reduction by orbits; a ring pays
  none), bad values refused, its closed-form fit recovers a known one from its fit half's large
  runs, and the CUBIC table charges it to PS (e = 1) where it says;
- oversubscribed links (e_o): only switch-to-switch links slower than the hosts' are, e_o slows
  PS's many flows on them by less than 1 / e_o and a ring's one flow per link not at all, bad
  values and values given with a calibration are refused, and a calibration charges its e_o to
  every algorithm (an older file without one: none).
"""
from __future__ import annotations

import pytest

from emulation.simulator import core
from emulation.simulator import fanin

pytestmark = pytest.mark.unit

needs_simgrid = pytest.mark.skipif(core.simgrid_available() is not None,
                                   reason=f"SimGrid is not importable: {core.simgrid_available()}")


def test_efficiency_leaves_one_flow_alone_and_falls_toward_e():
    for e in (0.3, 0.6, 1.0):
        assert fanin.efficiency(1, e) == 1.0
        assert fanin.efficiency(0, e) == 1.0
        assert fanin.efficiency(2, e) == pytest.approx(e + (1 - e) / 2)
        effs = [fanin.efficiency(n, e) for n in range(1, 50)]
        assert all(a >= b for a, b in zip(effs, effs[1:]))  # more flows, less each
        assert min(effs) > e or e == 1.0
    assert fanin.capacity(0.5)(100.0, 4) == pytest.approx(100.0 * (0.5 + 0.5 / 4))


def test_shape_sets_how_fast_the_loss_comes_with_n():
    e = 0.6
    for n in (2, 3, 8):
        assert fanin.efficiency(n, e, 1.0) == fanin.efficiency(n, e)  # shape 1 is the model
        assert fanin.efficiency(n, e, 2.0) == pytest.approx(e + (1 - e) / n ** 2)
        assert e < fanin.efficiency(n, e, 3.0) < fanin.efficiency(n, e, 1.0) < fanin.efficiency(n, e, 0.5) < 1
    assert fanin.efficiency(1, e, 3.0) == 1.0
    assert fanin.capacity(e, 2.0)(100.0, 3) == pytest.approx(100.0 * (e + (1 - e) / 9))
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="fan-in shape"):
            fanin.capacity(e, bad)


@pytest.mark.parametrize("e", [0.0, -0.1, 1.01, float("nan")])
def test_bad_efficiency_is_refused(e):
    with pytest.raises(ValueError, match="fan-in efficiency"):
        fanin.efficiency(3, e)
    with pytest.raises(ValueError):
        fanin.capacity(e)


def test_fan_in_values_give_every_algorithms_e_and_each_executors_own():
    algos = ("ps", "bml", "forest", "ring")
    assert fanin.parse(None, algos) == (1.0, {})
    assert fanin.parse(0.7, algos) == (0.7, {})
    assert fanin.parse(["0.7", "forest=1", "bml=0.5"], algos) == (0.7, {"forest": 1.0, "bml": 0.5})
    assert fanin.parse(["forest=0.9"], algos) == (1.0, {"forest": 0.9})  # no E: the others lose nothing


@pytest.mark.parametrize("values, match", [
    (["0.7", "0.8"], "one value for every algorithm"), (["forest=0.9", "forest=0.8"], "forest given twice"),
    (["tree=0.9"], "no algorithm 'tree'; valid: bml, forest, ps, ring"), (["forest=1.2"], r"in \(0, 1\]"),
    (["0"], r"in \(0, 1\]"), (["forest=fast"], "give V or ALGO=V")])
def test_bad_fan_in_values_are_refused_in_one_line(values, match):
    with pytest.raises(ValueError, match=match):
        fanin.parse(values, ("ps", "bml", "forest", "ring"))


def test_each_projected_algorithm_gets_its_own_fan_in_or_every_algorithms():
    from emulation.simulator import sweep

    s = sweep.Sweep(topo=["fattree,k=4"], algo=["ps", "forest", "ring"], fan_in=["0.6", "forest=0.9"])
    got = {req.algo: req.fan_in for req, _ in sweep.requests(s, {})}
    assert got == {"ps": 0.6, "forest": 0.9, "ring": 0.6}
    with pytest.raises(ValueError, match="no algorithm 'tre'"):
        sweep.requests(sweep.Sweep(topo=["fattree,k=4"], algo=["ps"], fan_in=["tre=0.5"]), {})


def test_each_projected_algorithm_gets_its_own_round_latency_or_every_algorithms():
    from emulation.simulator import sweep

    s = sweep.Sweep(topo=["bcube,n=3,k=1"], algo=["bml", "ring"], round_latency=["0.004", "bml=0.04"])
    got = {req.algo: req.round_latency for req, _ in sweep.requests(s, {})}
    assert got == {"bml": 0.04, "ring": 0.004}
    s = sweep.Sweep(topo=["bcube,n=3,k=1"], algo=["bml", "ring"], round_latency=0.002)  # a script's number
    assert {req.round_latency for req, _ in sweep.requests(s, {})} == {0.002}
    assert sweep.round_latencies(None) == (0.0, {})  # the CLI's default: bandwidth only
    for bad, match in ((["-1"], "must be a number of seconds >= 0"), (["bml=1", "bml=2"], "bml given twice"),
                       (["ml=0.1"], "no algorithm 'ml'; valid: .*bml"), (["0.1", "0.2"], "one value for every")):
        with pytest.raises(ValueError, match=match):
            sweep.round_latencies(bad)


def test_fan_in_counts_flows_per_link():
    assert fanin.fan_in([["a", "b"], ["c", "c", "c", "d"]]) == 3
    assert fanin.fan_in([["a", "b", "c"]]) == 1
    assert fanin.nic_links([("up", "core", "down1"), ("up", "down2"), ()]) == {"down1", "down2"}


def test_egress_links_are_every_link_out_of_a_switch_port():
    routes = [("h1-up", "s1-core", "s2-h2"), ("h2-up", "s2-h3"), ("h3-up", "s3-relay", "h2-up", "s2-h1"), ()]
    # a relay's own egress (h2-up) is the first link of its own flows: a host's, not a switch's
    assert fanin.egress_links(routes) == {"s1-core", "s2-h2", "s2-h3", "s3-relay", "s2-h1"}
    assert fanin.nic_links(routes) <= fanin.egress_links(routes)


@pytest.mark.parametrize("e_true", [0.35, 0.6, 0.85])
def test_fit_recovers_a_known_efficiency(e_true):
    # synthetic runs: bandwidth terms t with fan-in n; what a run measures is t / eff(n, e_true)
    runs = [(1.0, 2), (2.5, 3), (0.7, 15), (4.0, 8), (1.2, 1)]
    measured = [t / fanin.efficiency(n, e_true) for t, n in runs]
    e, cost = fanin.fit(lambda e: [t / fanin.efficiency(n, e) / m for (t, n), m in zip(runs, measured)])
    assert e == pytest.approx(e_true, abs=2e-3)
    assert cost < 1e-5


def test_fit_needs_a_run():
    with pytest.raises(ValueError, match="at least one run"):
        fanin.fit(lambda e: [])


@needs_simgrid
@pytest.mark.parametrize("spec,algo", [("fattree,k=4", "ring"), ("bcube,n=3,k=2", "ring")])
def test_one_flow_per_nic_is_unchanged(spec, algo):
    plain = core.project(core.Request(spec, algo, mb=4, bw=20))
    with_fan_in = core.project(core.Request(spec, algo, mb=4, bw=20, fan_in=0.3))
    assert with_fan_in["simulator"]["network_model"]["fan_in_efficiency"] == 0.3
    # the only second flow into a NIC is the successor's notifications (Gloo's framing back),
    # while it lasts: 0.08% at e = 0.3 on Fat-Tree k=4
    assert with_fan_in["simulated_seconds"] == pytest.approx(plain["simulated_seconds"], rel=2e-3)


@needs_simgrid
def test_a_single_flow_per_nic_is_exactly_unchanged():
    # a permutation (every host sends to the next, nothing else): one flow into each NIC
    from emulation.simulator import platform as simgrid_platform
    from topologies.spec import build

    topo = simgrid_platform.indexed(build("fattree,k=4", bw=20))
    hosts = topo.hosts()
    pairs = [(a, b, 0) for a, b in zip(hosts, hosts[1:] + hosts[:1])]
    platform = simgrid_platform.platform_for(topo, pairs + [(hosts[2], hosts[1], 0)])
    sched = [[(*platform.endpoints[pr], 10**6 * (i + 1)) for i, pr in enumerate(pairs)]]
    plain = core.simulate(platform, sched)
    for e in (0.2, 0.64):
        got = core.simulate(platform, sched, core.NetworkModel(fan_in=e))
        assert got["step_seconds"] == plain["step_seconds"]
    # and two flows into one NIC do pay: the same bytes, 1 / eff(2) longer
    two = [[(*platform.endpoints[pairs[0]], 10**6), (*platform.endpoints[(hosts[2], hosts[1], 0)], 10**6)]]
    assert core.simulate(platform, two, core.NetworkModel(fan_in=0.5))["sync_seconds"] == pytest.approx(
        core.simulate(platform, two)["sync_seconds"] / fanin.efficiency(2, 0.5), rel=1e-9)


@needs_simgrid
def test_n_flows_into_a_nic_take_one_over_eff_longer():
    # sharded PS on Fat-Tree k=4 with two-level routing (non-blocking): every NIC receives from
    # the 15 other ranks in each phase, all NIC links loaded alike, so each phase is the
    # plain max-min time divided by eff(15)
    req = dict(topo="fattree,k=4", algo="ps", workers=16, mb=4, bw=20, ecmp="two-level", reduce="off")
    plain = core.project(core.Request(**req))
    prep = core.prepare(core.Request(**req))
    n = fanin.fan_in([[(f.dst, f.nic) for f in step if f.bytes > 0] for step in prep.steps])
    assert n == 15
    e = 0.5
    got = core.project(core.Request(**req, fan_in=e))
    assert got["simulated_seconds"] == pytest.approx(plain["simulated_seconds"] / fanin.efficiency(n, e), rel=1e-2)
    assert got["payload_equal"]  # the same bytes, only slower
    assert core.project(core.Request(**req, fan_in=1.0))["simulated_seconds"] == plain["simulated_seconds"]


@needs_simgrid
def test_fan_in_is_refused_on_a_reduced_schedule():
    with pytest.raises(ValueError, match="reduced schedule"):
        core.project(core.Request("fattree,k=4", "ps", 16, mb=1, bw=20, ecmp="two-level", fan_in=0.5, reduce="on"))


def test_fan_in_fit_split_never_has_a_folder_on_both_sides():
    from emulation.report.doctables import projection as pt

    halves = {}
    for folder in pt.FAN_IN_FOLDERS:
        halves.setdefault(pt.in_fit_half(pt.projected_name(folder)), set()).add(folder)
    assert set(halves) == {True, False}  # both halves hold folders
    assert not halves[True] & halves[False]
    rows = [{"folder": f, "fit": pt.in_fit_half(pt.projected_name(f))} for f in pt.FAN_IN_FOLDERS for _ in range(2)]
    fit, held = pt.fan_in_split(rows)
    assert {r["folder"] for r in fit}.isdisjoint({r["folder"] for r in held})
    assert len(fit) + len(held) == len(rows)


def _fan_in_data():
    from pathlib import Path

    from emulation.report import docs
    from emulation.report.doctables import projection as pt

    return pt, docs.load_sources(Path(__file__).resolve().parents[2] / "docs/results", pt.FAN_IN_SOURCES)


def test_the_fan_in_table_reports_each_run_on_its_folders_side_and_refuses_another_e():
    import copy

    pt, data = _fan_in_data()
    fit, lat, rows = pt._fan_in_rows(data)
    assert rows and all(r["fit"] == pt.in_fit_half(r["experiment"]) for r in rows)
    # the fit used only fit-half folders
    assert all(pt.in_fit_half(r["experiment"]) for r in fit["runs"])
    other = copy.deepcopy(data)
    other[pt.FAN_IN_FIT]["fan_in_efficiency"] += 0.01
    with pytest.raises(ValueError, match="not the fitted e"):
        pt._fan_in_rows(other)
    # an executor with its own e: each of its runs must have been simulated with that one
    own = fit.get("fan_in_by_algorithm") or {}
    assert all(r["fan_in_e"] == own.get(r["algorithm"], fit["fan_in_efficiency"]) for r in rows)
    for algo in {r["algorithm"] for r in rows} & {"forest", "dfs", "omnireduce"}:
        other = copy.deepcopy(data)
        other[pt.FAN_IN_FIT].setdefault("fan_in_by_algorithm", {})[algo] = own.get(
            algo, fit["fan_in_efficiency"]) * 0.9
        with pytest.raises(ValueError, match="not the fitted e"):
            pt._fan_in_rows(other)


def test_an_executors_own_round_latency_recovers_a_known_one_from_its_fit_half_only():
    from emulation.report.doctables import projection as pt

    MB = 2**20

    def row(meas, sim, fit, algo="bml", size=4 * MB, rounds=4, superseded=None, topology="bcube(3,2)"):
        return {"algorithm": algo, "measured_seconds": meas, "fan_in_sim": sim, "rounds": rounds, "fit": fit,
                "gradient_bytes": size, "superseded": superseded, "experiment": f"x{meas}", "topology": topology}

    rows = [row(1.0 + 0.04 * 4, 1.0, True), row(2.0 + 0.04 * 4, 2.0, True, topology="bcube(4,1)"),
            row(9.0, 1.0, False),  # held out: never fitted on
            row(5.0, 1.0, True, size=MB // 4),  # under 2 MiB: latency-bound, not fitted on
            row(6.0, 1.0, True, rounds=6, topology="bcube(2,3)"),  # one flow into each NIC: a ring's rounds
            row(7.0, 1.0, True, superseded="sends first"), row(3.0, 1.0, True, algo="ps", rounds=2)]
    own = pt.own_latency(rows, 0.004)
    assert set(own) == set(pt.OWN_LATENCY) == {"bml"}
    assert own["bml"]["seconds"] == pytest.approx(0.04) and own["bml"]["runs"] == 2
    assert pt.round_latency_of(rows[0], 0.004, own) == pytest.approx(0.04)
    assert pt.round_latency_of(rows[3], 0.004, own) == 0.004  # below 2 MiB: the ring's L
    assert pt.round_latency_of(rows[4], 0.004, own) == 0.004  # BCube(2,k): the ring's L
    assert pt.round_latency_of(rows[-1], 0.004, own) == 0.004  # PS has none of its own
    assert pt.own_latency([r for r in rows if not r["fit"]], 0.004)["bml"]["seconds"] == 0.004  # none to fit: L


def test_the_fan_in_table_charges_bmls_own_latency_on_its_large_runs_only():
    pt, data = _fan_in_data()
    fit, lat, rows = pt._fan_in_rows(data)
    own = fit["round_latency_by_algorithm"]["bml"]["seconds"]
    assert own > lat  # BML's stages start up slower than a ring's round
    for r in rows:
        want = own if pt.charged_own(r) else lat
        assert pt.charged_own(r) == (r["algorithm"] == "bml" and r["gradient_bytes"] >= pt.LATENCY_MIN_BYTES
                                     and not r["topology"].startswith("bcube(2,"))
        assert r["fan_in_seconds"] == pytest.approx(r["fan_in_sim"] + want * (r["rounds"] or 0))


def test_converging_counts_the_flows_into_a_steps_busiest_nic_from_flows_or_blocks():
    from workloads.algorithms.base import Flow, FlowBlock

    ring = [Flow(i, (i + 1) % 4, 0, 100) for i in range(4)]
    assert fanin.converging(ring) == 1 and fanin.extra_flows([ring]) == [0]
    into_0 = [Flow(s, 0, 0, 100) for s in (1, 2, 3)] + [Flow(1, 2, 0, 100), Flow(3, 0, 1, 100), Flow(2, 0, 0, 0)]
    assert fanin.converging(into_0) == 3  # NIC 1 of rank 0 and a flow of 0 bytes do not add
    block = FlowBlock(tuple(range(16)), tuple(range(16)), 0, 1000)  # a sharded PS phase on 16 ranks
    assert fanin.converging([block]) == 15 == fanin.converging(block.flows())
    two = [FlowBlock((0, 1, 2), (3,), 0, 10), FlowBlock((4, 5), (3, 6), 0, 10)]
    assert fanin.converging(two) == 5 == fanin.converging([f for b in two for f in b.flows()])
    assert fanin.extra_flows([[], ring, [block]]) == [0, 0, 14]


@pytest.mark.parametrize("topo, workers", [("bcube,n=3,k=2", 9), ("bcube,n=4,k=2", 16), ("bcube,n=2,k=3", 8),
                                            ("bcube,n=3,k=2", 6)])
def test_on_bcube_the_flows_into_a_nic_are_those_whose_routes_enter_it(topo, workers):
    # a sharded PS phase addresses every shard to NIC 0, but a BCube server receives on the NIC
    # its route ends at and relays on others: the oracle walks every flow's route (THE walker,
    # Topology.route) and counts the receiving interfaces that are NICs
    from collections import Counter

    from topologies import spec
    from workloads.algorithms.base import Flow, FlowBlock

    t = spec.build(topo, bw=5)
    hosts = sorted(t.hosts())[:workers]
    nics = {n.name for h in t.hosts() for n in t.host_nics(h)}
    into = Counter(rx for d in hosts for s in hosts if s != d
                   for _, rx in t.route(s, t.host_nics(d)[0].ip) if rx in nics)
    arrival = fanin.arrivals(t, hosts)
    block = [FlowBlock(tuple(range(workers)), tuple(range(workers)), 0, 1000)]
    assert fanin.converging(block, arrival) == max(into.values()) < workers - 1 == fanin.converging(block)
    assert fanin.converging(block[0].flows(), arrival) == max(into.values())
    assert fanin.extra_flows([block, block], arrival) == [max(into.values()) - 1] * 2
    assert fanin.converging_bytes(block, arrival) == 1000.0
    one = [Flow(1, 0, 1, 10)]  # addressed to NIC 1: enters the NIC(s) its route does
    assert fanin.converging(one, arrival) == 1
    assert fanin.arrivals(spec.build("fattree,k=4", bw=5), hosts) is None  # one NIC per host: as addressed


@needs_simgrid
def test_a_bcube_projection_charges_the_flows_its_routes_converge():
    # PS on BCube(3,2), 9 workers: 6 of a NIC's 8 flows arrive on one NIC, so 2 x 5 extra flows a sync, not 2 x 7
    req = dict(topo="bcube,n=3,k=2", workers=9, mb=0.25, bw=5, algo="ps")
    plain = core.project(core.Request(**req))
    got = core.project(core.Request(incast=0.01, **req))
    assert plain["extra_flows_per_sync"] == got["extra_flows_per_sync"] == 10
    assert got["simulated_seconds"] == pytest.approx(plain["simulated_seconds"] + 0.01 * 10, rel=1e-6)


@needs_simgrid
@pytest.mark.parametrize("reduce", ["off", "auto"])
def test_the_incast_start_up_is_charged_per_flow_into_the_busiest_nic_beyond_the_first(reduce):
    # sharded PS on Fat-Tree k=4, 16 workers: two phases, 15 flows into every NIC in each, so
    # 2 x 14 extra flows; the ring, one flow into each NIC per round, pays nothing
    req = dict(topo="fattree,k=4", workers=16, mb=1, bw=20, ecmp="two-level", reduce=reduce)
    plain = core.project(core.Request(algo="ps", **req))
    got = core.project(core.Request(algo="ps", incast=0.01, **req))
    assert plain["extra_flows_per_sync"] == got["extra_flows_per_sync"] == 28
    assert got["simulated_seconds"] == pytest.approx(plain["simulated_seconds"] + 0.01 * 28, rel=1e-6)
    assert got["incast_seconds"] == 0.01 and got["payload_equal"]
    ring = core.project(core.Request(algo="ring", incast=0.01, **req))
    assert ring["extra_flows_per_sync"] == 0
    assert ring["simulated_seconds"] == core.project(core.Request(algo="ring", **req))["simulated_seconds"]


def test_a_bad_incast_start_up_is_refused_in_one_line():
    from emulation.simulator import sweep
    from workloads.algorithms import base

    with pytest.raises(ValueError, match="incast start-up -0.1 must be a number of seconds >= 0"):
        core.simulated_form(base.get("ps"), {}, incast=-0.1)
    s = sweep.Sweep(topo=["fattree,k=4"], algo=["ps", "ring"], incast=["ps=0.015"])
    assert {req.algo: req.incast for req, _ in sweep.requests(s, {})} == {"ps": 0.015, "ring": 0.0}
    for bad, match in ((["-1"], "must be a number of seconds >= 0"), (["ps=1", "ps=2"], "ps given twice"),
                       (["pss=0.1"], "no algorithm 'pss'")):
        with pytest.raises(ValueError, match=match):
            sweep.incasts(bad)


def test_an_incast_start_up_recovers_a_known_one_from_its_fit_half_large_runs_only():
    from emulation.report.doctables import projection as pt

    MB = 2**20

    def row(meas, sim, fit, extra, algo="ps", size=4 * MB, rounds=2, superseded=None, workers=16, mbps=10.0):
        return {"algorithm": algo, "measured_seconds": meas, "fan_in_sim": sim, "rounds": rounds, "fit": fit,
                "gradient_bytes": size, "superseded": superseded, "experiment": f"x{meas}", "extra_flows": extra,
                "workers": workers, "link_mbps": mbps}

    lat, c = 0.003, 0.015
    rows = [row(1.0 + 2 * lat + c * 28, 1.0, True, 28), row(2.0 + 2 * lat + c * 14, 2.0, True, 14, workers=9),
            row(9.0, 1.0, False, 28, workers=32),  # held out: never fitted on
            row(5.0, 1.0, True, 14, size=MB // 4),  # under 2 MiB: its flows do not stall, not fitted on
            row(7.0, 1.0, True, 28, superseded="sends first"), row(3.0, 1.0, True, 0, algo="ring", rounds=30)]
    inc = pt.incast_fit(rows, lat, ("ps",))
    # one link rate: a time alone
    assert inc["ps"]["seconds"] == pytest.approx(c) and inc["ps"]["bytes"] == 0 and inc["ps"]["runs"] == 2
    assert inc["ps"]["max_workers"] == 16  # the largest P it was fitted on (the held-out 32 is not)
    assert [pt.charged_incast(r, inc) for r in rows] == [True, True, True, False, True, False]
    assert pt.incast_fit(rows, lat, ()) == {}  # the BBR validation: no algorithm takes one
    with pytest.raises(ValueError, match="no faithful fit-half ps run"):
        pt.incast_fit([r for r in rows if not r["fit"]], lat, ("ps",))


def test_the_incast_fit_tells_a_time_from_bytes_at_the_link_rate_when_rates_differ():
    """`fit_incast` (non-negative least squares on the relative error) recovers a start-up of
    t + 8 b / r from runs at 5, 10 and 20 Mbit/s, and matches a brute-force grid on noisy ones."""
    import itertools

    import numpy as np

    from emulation.report.doctables import projection as pt
    from emulation.simulator import fanin

    t, b = 0.008, 15_000.0
    pts = [(base + x * fanin.incast_startup({"seconds": t, "bytes": b}, r), base, x, r)
           for base, x, r in ((3.0, 60, 10.0), (6.5, 100, 5.0), (1.5, 14, 20.0), (4.0, 40, 10.0))]
    assert pt.fit_incast(pts) == pytest.approx((t, b), rel=1e-6)
    assert fanin.incast_startup({"seconds": t, "bytes": b}, 5.0) == pytest.approx(t + 0.024)
    assert fanin.incast_startup({"seconds": t}, 5.0) == t and fanin.incast_startup(None, 5.0) == 0.0
    noisy = [(m * f, s, x, r) for (m, s, x, r), f in zip(pts, (1.04, 0.97, 1.02, 0.99))]

    def cost(tt, bb):
        return sum(((s + x * (tt + 8 * bb / (r * 1e6))) / m - 1) ** 2 for m, s, x, r in noisy)
    grid = min(itertools.product(np.linspace(0, 0.03, 301), np.linspace(0, 40_000, 401)), key=lambda p: cost(*p))
    got = pt.fit_incast(noisy)
    assert cost(*got) <= cost(*grid) + 1e-12
    assert got[0] == pytest.approx(grid[0], abs=2e-4) and got[1] == pytest.approx(grid[1], abs=200)
    assert pt.fit_incast([(m, s, x, 10.0) for m, s, x, _ in pts])[1] == 0  # one rate: a time alone
    with pytest.raises(ValueError, match="needs a run with converging flows"):
        pt.fit_incast([(1.0, 1.0, 0, 10.0)])


def test_the_incast_fit_past_the_slack_matches_brute_force_and_charges_nothing_hidden():
    """`fit_incast_past_slack`: the start-up charged only past the seconds the busiest link needs
    beyond the NICs' (h). Exact data are recovered; on noisy ones the fit is no worse than a
    brute-force grid; a run whose slack exceeds every candidate's charge constrains nothing, and
    with h = 0 everywhere it is `fit_incast`."""
    import itertools

    import numpy as np

    from emulation.report.doctables import projection as pt
    from emulation.simulator import fanin

    t, b = 0.006, 20_000.0

    def meas(base, x, r, h):
        return base + max(0.0, x * fanin.incast_startup({"seconds": t, "bytes": b}, r) - h)
    runs = ((3.0, 60, 10.0, 0.0), (6.5, 100, 5.0, 0.5), (1.5, 14, 20.0, 0.0), (4.0, 40, 10.0, 0.3),
            (9.0, 44, 5.0, 0.0), (5.0, 36, 10.0, 30.0))  # the last: slack far above any charge
    pts = [(meas(*v), v[0], v[1], v[2], v[3]) for v in runs]
    assert pt.fit_incast_past_slack(pts) == pytest.approx((t, b), rel=1e-4)
    noisy = [(m * f, s, x, r, h) for (m, s, x, r, h), f in zip(pts, (1.04, 0.97, 1.02, 0.99, 1.03, 0.98))]

    def cost(tt, bb):
        return sum(((s + max(0.0, x * (tt + 8 * bb / (r * 1e6)) - h)) / m - 1) ** 2 for m, s, x, r, h in noisy)
    grid = min(itertools.product(np.linspace(0, 0.03, 151), np.linspace(0, 50_000, 201)), key=lambda p: cost(*p))
    got = pt.fit_incast_past_slack(noisy)
    assert cost(*got) <= cost(*grid) + 1e-12
    flat = [(m, s, x, r, 0.0) for m, s, x, r, _ in noisy]  # no slack anywhere: the plain fit
    assert pt.fit_incast_past_slack(flat) == pytest.approx(pt.fit_incast([p[:4] for p in flat]), rel=1e-3, abs=1e-6)
    assert pt.incast_slack({"sim": {"bound_seconds": 5.0, "bound_nonblocking_seconds": 3.0}}) == pytest.approx(2.0)
    assert pt.incast_slack({"sim": {"bound_seconds": 3.0, "bound_nonblocking_seconds": 3.0}}) == 0.0
    with pytest.raises(ValueError, match="needs a run with converging flows"):
        pt.fit_incast_past_slack([(1.0, 1.0, 0, 10.0, 0.0)])


def test_a_projection_charges_the_incast_start_ups_bytes_at_the_hosts_link_rate():
    """core.incast_of: the bytes of an incast start-up at the hosts' NIC rate, so PS at 5 Mbit/s
    pays 8 ms + 12.5 kB per converging flow = 28 ms and at 20 Mbit/s 13 ms; what it adds to the
    simulated sync is that times its extra flows, and nothing changes the flows themselves."""
    from emulation.simulator import core

    recs = {bw: core.project(core.Request("fattree,k=4", "ps", workers=8, mb=2, bw=bw, incast=0.008,
                                          incast_bytes=12_500)) for bw in (5.0, 20.0)}
    plain = {bw: core.project(core.Request("fattree,k=4", "ps", workers=8, mb=2, bw=bw)) for bw in (5.0, 20.0)}
    for bw, want in ((5.0, 0.028), (20.0, 0.013)):
        r = recs[bw]
        assert r["incast_seconds"] == pytest.approx(want) and r["incast_bytes"] == 12_500
        assert r["extra_flows_per_sync"] > 0
        assert r["simulated_seconds"] == pytest.approx(plain[bw]["simulated_seconds"] + want * r["extra_flows_per_sync"],
                                                       rel=1e-6)


def test_the_share_per_kind_charges_form_d_at_d_s_share_and_form_c_uncapped():
    from pathlib import Path

    from emulation.report import docs
    from emulation.report.doctables import projection as pt

    data = docs.load_sources(Path(__file__).resolve().parents[2] / "docs/results", pt.CUBIC_FAN_IN_SOURCES)
    fit, lat, rows = pt._fan_in_rows(data, pt.CUBIC_FAN_IN)
    inc = fit["incast_by_algorithm"]["ps"]
    ps = pt.faithful_ps(rows)
    assert ps and {pt.topology_kind(r) for r in ps} == {"fattree", "bcube"}
    for r in ps:  # at D's own share the ratio is the validation's
        assert pt._share_ratio(r, lat, inc, inc["flow_share"]) == pytest.approx(r["fan_in_ratio"], rel=1e-12)
        uncapped = pt._share_ratio(r, lat, inc, 0.0)  # no cap: form C, at 2 MiB or more at least what D charges
        if r["gradient_bytes"] >= pt.LATENCY_MIN_BYTES:
            assert uncapped >= r["fan_in_ratio"] - 1e-12
        else:  # C charges nothing under 2 MiB
            assert uncapped == pytest.approx(pt._flow_model(r, lat) / r["measured_seconds"], rel=1e-12)
    lines = pt._share_by_kind(rows, lat, inc)
    assert any(f"`{f.split('/')[-1]}`" in line for f in pt.SHARE_KIND_TEST for line in lines)


def test_the_cubic_fan_in_table_gives_ps_e_1_and_its_incast_start_up_on_its_large_runs_only():
    from pathlib import Path

    from emulation.report import docs
    from emulation.report.doctables import projection as pt

    data = docs.load_sources(Path(__file__).resolve().parents[2] / "docs/results", pt.CUBIC_FAN_IN_SOURCES)
    fit, lat, rows = pt._fan_in_rows(data, pt.CUBIC_FAN_IN)
    assert fit["fit_algorithms"] == ["bml"] and fit["fan_in_by_algorithm"]["ps"] == 1.0
    inc = fit["incast_by_algorithm"]["ps"]
    assert inc["seconds"] > 0 or inc["bytes"] > 0
    ps = [r for r in rows if r["algorithm"] == "ps"]
    assert ps and all(r["fan_in_e"] == 1.0 for r in ps)
    assert inc["past_slack"] and inc["one_switch_input_free"]  # form C since 2026-12-04
    assert inc["flow_share"] > 0  # form D since the afternoon of 2026-12-04: capped by the flow's bytes
    for r in rows:
        c = min(inc["seconds"] + 8 * inc["bytes"] / (r["link_mbps"] * 1e6),
                inc["flow_share"] * 8 * pt.ps_flow_bytes(r) / (r["link_mbps"] * 1e6))
        slack = max(0.0, r["sim"]["bound_seconds"] - r["sim"]["bound_nonblocking_seconds"])
        charged = pt.charged_incast(r, fit["incast_by_algorithm"]) and not r["topology"].startswith("bcube(2,")
        extra = max(0.0, c * r["extra_flows"] - slack) if charged else 0.0
        assert r["fan_in_seconds"] == pytest.approx(r["fan_in_sim"] + r["fan_in_l"] * (r["rounds"] or 0) + extra)
    assert any(r["topology"].startswith("bcube(2,") and r["algorithm"] == "ps" for r in rows)  # the rule is used


def test_past_slack_takes_the_slack_off_the_start_ups_in_proportion_to_their_flows():
    form = core.SimForm([[], []], [0.0, 0.0], [0.01 + 0.02 * 3, 0.01 + 0.02 * 1], extra_flows=[3, 1])
    same, charged = core.past_slack(form, 0.02, 0.0)
    assert same.startup == form.startup and charged == pytest.approx(0.08)
    got, charged = core.past_slack(form, 0.02, 0.05)  # 0.08 s of start-ups, 0.05 s hidden: 0.03 charged
    assert charged == pytest.approx(0.03)
    assert got.startup == pytest.approx([0.01 + 0.06 * 0.375, 0.01 + 0.02 * 0.375])
    assert form.startup == [0.01 + 0.02 * 3, 0.01 + 0.02 * 1]  # the form given is left as it was
    hidden, charged = core.past_slack(form, 0.02, 0.5)  # all hidden: L x rounds alone
    assert charged == 0.0 and hidden.startup == pytest.approx([0.01, 0.01])
    assert core.past_slack(form, 0.02, -1.0)[1] == pytest.approx(0.08)  # no negative slack


@needs_simgrid
@pytest.mark.parametrize("reduce", ["off", "auto"])
def test_a_projection_charges_the_incast_start_up_only_past_the_slack_where_asked(reduce):
    """PS on forest scenario 3's Fat-Tree (the core at a quarter of the hosts' rate): its busiest
    links are core links, so the start-ups are charged only past the seconds they need beyond the
    NICs' (the bound less the non-blocking bound), by every flow or by orbits alike; on a
    non-blocking Fat-Tree the NICs are the busiest links and past the slack is every step."""
    from topologies import spec

    req = dict(topo="fattree,k=4", workers=16, mb=2, bw=10, ecmp="two-level", reduce=reduce)
    for link_bw, hidden in (({"agg-core": 2.5}, True), (None, False)):
        topo = spec.build("fattree,k=4", bw=10, link_bw=link_bw, ecmp="two-level")
        plain = core.project(core.Request(**req, algo="ps"), topo)
        every = core.project(core.Request(**req, algo="ps", incast=0.05), topo)
        past = core.project(core.Request(**req, algo="ps", incast=0.05, incast_past_slack=True), topo)
        x = plain["extra_flows_per_sync"]
        slack = plain["bound_seconds"] - plain["bound_nonblocking_seconds"]
        assert (slack > 0.05 * x / 10) == hidden, slack  # a slack that hides a real share of it, or none
        assert every["incast_charged"] == "every step" and every["incast_charged_seconds_per_sync"] == pytest.approx(0.05 * x)
        assert past["incast_charged"] == "past the slack"
        want = max(0.0, 0.05 * x - slack)
        assert past["incast_charged_seconds_per_sync"] == pytest.approx(want)
        assert past["simulated_seconds"] == pytest.approx(plain["simulated_seconds"] + want, rel=1e-6)
        assert every["simulated_seconds"] == pytest.approx(plain["simulated_seconds"] + 0.05 * x, rel=1e-6)
        assert (past["simulated_seconds"] < every["simulated_seconds"] - 1e-6) == hidden


def test_oversubscribed_links_are_the_switch_links_slower_than_the_hosts():
    from emulation.simulator import platform as sp
    from topologies import spec

    def over(topo):
        return fanin.oversubscribed_links(sp.directed_links(topo), sp.trunks(topo))

    s3 = spec.build("fattree,k=4", bw=10, link_bw={"agg-core": 2.5}, ecmp="two-level")
    core_links = {x for link in s3.links if link.cls == "agg-core" for x in (link.a, link.b)}
    assert len(core_links) == 32 and over(s3) == core_links  # both directions of every agg-core link
    assert sp.trunks(s3) > core_links  # edge-agg links are trunks too, at the hosts' speed
    assert over(spec.build("fattree,k=4", bw=10)) == set()  # equal links: none
    assert over(spec.build("bcube,n=4,k=2", bw=10, link_bw={"level1": 2.5})) == set()  # BCube: no trunks
    # slower host links make no trunk oversubscribed: the fastest host link sets the bar
    slow_hosts = spec.build("fattree,k=4", bw=10, link_bw={"h0_0_2": 5})
    assert over(slow_hosts) == set()


def test_in_series_charges_the_links_whose_flows_meet_a_second_one_as_loaded():
    # two oversubscribed links in a row (up "u", down "d"), each 1 byte/s
    links = {"u": 1.0, "d": 1.0, "u2": 1.0, "nic": 4.0}
    over = {"u", "d", "u2"}
    routes = {("a", "b"): ("x", "u", "d", "nic"), ("c", "b"): ("y", "u2", "d", "nic"),
              ("a", "e"): ("x", "u", "nic")}
    # equal loads on u and d: both charged
    assert fanin.in_series([[("a", "b", 10)]], routes, over, links) == {"u", "d"}
    # d carries two flows, u one: u's flow meets the busier d (charged), d's tighter queue is not
    assert fanin.in_series([[("a", "b", 10), ("c", "b", 10)]], routes, over, links) == {"u", "u2"}
    # one oversubscribed link on the route: nothing in series
    assert fanin.in_series([[("a", "e", 10)]], routes, over, links) == set()
    # a link outside `over` (the NIC) does not count; no oversubscribed links: none
    assert fanin.in_series([[("a", "b", 10)]], routes, {"u"}, links) == set()
    assert fanin.in_series([[("a", "b", 10)]], routes, set(), links) == set()
    # per step: a link is charged where some step puts it in series
    steps = [[("a", "e", 10)], [("a", "b", 10)]]
    assert fanin.in_series(steps, routes, over, links) == {"u", "d"}
    # loads are bytes / capacity: a link twice as fast with twice the bytes is as loaded
    assert fanin.in_series([[("a", "b", 10)]], routes, over, {**links, "d": 2.0}) == {"d"}


@needs_simgrid
def test_an_oversubscribed_core_slows_many_flows_and_leaves_a_ring_alone():
    # PS on forest scenario 3's Fat-Tree at half speed: the core is its bottleneck and carries
    # many flows per link, so e_o makes it slower (and by less than 1/e_o: eff(n) > e_o); a ring
    # on the same Fat-Tree at e_o is simulated as at 1 where its core links carry one flow each
    from emulation.simulator import platform as sp
    from topologies import spec

    req = dict(topo="fattree,k=4", workers=16, mb=2, bw=10, ecmp="two-level", reduce="off")
    s3 = spec.build("fattree,k=4", bw=10, link_bw={"agg-core": 2.5}, ecmp="two-level")

    def sim(algo, eo):
        return core.project(core.Request(**req, algo=algo, oversubscribed=eo), s3)

    plain, slowed = sim("ps", 1.0), sim("ps", 0.8)
    assert plain["oversubscribed_links"] == 32
    # every core link equally loaded, each flow crossing two in a row: all 32 take e_o
    assert slowed["simulator"]["oversubscribed_charged_links"] == 32
    assert plain["simulator"]["oversubscribed_charged_links"] == 0
    assert plain["simulated_seconds"] < slowed["simulated_seconds"] < plain["simulated_seconds"] / 0.8 + 1e-9
    assert slowed["payload_equal"] and slowed["simulator"]["network_model"]["oversubscribed_efficiency"] == 0.8
    from collections import Counter

    from workloads.algorithms import base

    prep = core.prepare(core.Request(**req, algo="ring"), s3)
    over = fanin.oversubscribed_links(sp.directed_links(prep.topo), sp.trunks(prep.topo))
    h = prep.hosts
    on_slow = [Counter(tx for f in base.wire_flows(step) if f.payload > 0 and f.src != f.dst
                       for tx, _ in prep.topo.route(h[f.src], prep.topo.host_nics(h[f.dst])[f.nic].ip) if tx in over)
               for step in prep.steps]
    busiest = max((max(c.values()) for c in on_slow if c), default=0)
    assert busiest >= 1  # the ring crosses the core
    ring, ring_slowed = sim("ring", 1.0)["simulated_seconds"], sim("ring", 0.8)["simulated_seconds"]
    assert ring_slowed == pytest.approx(ring, rel=1e-9) if busiest == 1 else ring_slowed > ring
    with pytest.raises(ValueError, match="reduced schedule"):
        core.project(core.Request(**{**req, "reduce": "on"}, algo="ps", oversubscribed=0.8), s3)


@needs_simgrid
def test_e_o_spares_a_core_whose_busiest_links_feed_less_loaded_ones():
    # PS on a k=6 Fat-Tree with its core at 4:1 (as ovs-sndbuf/ps-k6-p24-core4to1-64m and
    # -p27-core4to1-ordered-bw5-64m measured): 24 workers spread load the core unevenly, the busiest
    # links' flows going down less loaded links, so the busiest take no e_o and the sync
    # is the flow model's; 27 workers filling three pods load every used core link equally, and
    # every one takes e_o
    from topologies import spec

    k6 = spec.build("fattree,k=6", bw=10, link_bw={"agg-core": 2.5}, ecmp="two-level")

    def sim(workers, placement, eo):
        return core.project(core.Request("fattree,k=6", "ps", workers, mb=2, bw=10, ecmp="two-level",
                                         placement=placement, reduce="off", oversubscribed=eo), k6)

    plain, slowed = sim(24, "spread", 1.0), sim(24, "spread", 0.8)
    assert 0 < slowed["simulator"]["oversubscribed_charged_links"] < slowed["oversubscribed_links"]
    assert slowed["simulated_seconds"] == pytest.approx(plain["simulated_seconds"], rel=0.01)
    packed, packed_slowed = sim(27, "ordered", 1.0), sim(27, "ordered", 0.8)
    assert packed_slowed["simulator"]["oversubscribed_charged_links"] == 54  # 3 pods x 9 links, up and down
    assert packed_slowed["simulated_seconds"] > packed["simulated_seconds"] * 1.1


def test_oversubscribed_values_are_refused_in_one_line_and_with_a_calibration():
    from emulation.simulator import sweep

    for bad in (0.0, 1.5, -1):
        with pytest.raises(ValueError, match=r"--oversubscribed .* give a number in \(0, 1\]"):
            sweep.requests(sweep.Sweep(topo=["fattree,k=4"], algo=["ps"], oversubscribed=bad), {})
    with pytest.raises(ValueError, match="sets --oversubscribed itself"):
        sweep.requests(sweep.Sweep(topo=["fattree,k=4"], algo=["ps"], oversubscribed=0.8, calibration="cubic"), {})
    reqs = sweep.requests(sweep.Sweep(topo=["fattree,k=4"], algo=["ps", "ring"], oversubscribed=0.8), {})
    assert [r.oversubscribed for r, _ in reqs] == [0.8, 0.8]  # every algorithm's


def test_a_calibration_charges_its_oversubscribed_efficiency_to_every_algorithm():
    from emulation.simulator import calibration

    cal = {"round_latency_seconds": 0.003, "round_latency_by_algorithm": {}, "incast_by_algorithm": {},
           "fan_in_efficiency": 0.6, "fan_in_by_algorithm": {"ps": 1.0}}
    assert calibration.parameters(cal, "ps", "fattree(4)", 2**21).oversubscribed == 1.0  # an older file: none
    cal["oversubscribed_efficiency"] = 0.8
    assert {calibration.parameters(cal, a, "fattree(4)", 2**21).oversubscribed for a in ("ps", "ring", "forest")} == {0.8}


def test_an_oversubscribed_efficiency_leaves_equal_links_reduced_by_symmetry():
    # a calibration's e_o on a Fat-Tree of equal links changes nothing, so PS keeps its orbits
    # (what lets --calibration cubic reach thousands of workers); on forest scenario 3's core it
    # counts every flow and the orbits are refused
    from topologies import spec

    req = dict(topo="fattree,k=4", algo="ps", workers=16, mb=2, bw=10, ecmp="two-level")
    assert core.oversubscribed_charged(core.Request(**req, oversubscribed=0.8), spec.build("fattree,k=4", bw=10)) == 1.0
    assert core.prepare(core.Request(**req, oversubscribed=0.8)).orbits is not None
    if core.simgrid_available() is None:  # the same time, and the record says what was asked
        at, plain = core.project(core.Request(**req, oversubscribed=0.8)), core.project(core.Request(**req))
        assert at["simulated_seconds"] == plain["simulated_seconds"]
        assert at["simulator"]["network_model"]["oversubscribed_efficiency"] == 0.8
    s3 = spec.build("fattree,k=4", bw=10, link_bw={"agg-core": 2.5}, ecmp="two-level")
    assert core.oversubscribed_charged(core.Request(**req, oversubscribed=0.8), s3) == 0.8
    assert core.prepare(core.Request(**req, oversubscribed=0.8), s3).orbits is None


def test_converging_bytes_is_the_mean_flow_into_the_busiest_nics():
    from workloads.algorithms.base import Flow, FlowBlock

    # a sharded PS phase on 4 ranks: 3 flows of 100 bytes into every NIC
    assert fanin.converging_bytes([FlowBlock((0, 1, 2, 3), (0, 1, 2, 3), 0, 100)]) == 100.0
    # rank 3 receives three flows (10, 20, 60 bytes), rank 0 one of 1000: the busiest NIC's mean
    step = [Flow(0, 3, 0, 10), Flow(1, 3, 0, 20), Flow(2, 3, 0, 60), Flow(3, 0, 0, 1000), Flow(1, 2, 0, 0)]
    assert fanin.converging_bytes(step) == pytest.approx(30.0) and fanin.converging(step) == 3
    assert fanin.converging_bytes([]) == 0.0


def test_a_capped_start_up_is_at_most_its_share_of_the_flows_bytes():
    # 6 ms + 20 kB at 5 Mbit/s = 38 ms; a flow of 25 kB takes 40 ms at 5 Mbit/s, half of it 20 ms
    per = fanin.incast_startup({"seconds": 0.006, "bytes": 20_000}, 5.0)
    assert per == pytest.approx(0.038)
    assert fanin.capped_startup(per, 25_000, 5.0, 0.5) == pytest.approx(0.020)
    assert fanin.capped_startup(per, 250_000, 5.0, 0.5) == pytest.approx(0.038)  # large flows: the start-up
    assert fanin.capped_startup(per, 25_000, 5.0, 0.0) == per  # no share: no cap
    with pytest.raises(ValueError, match="needs a share > 0 and a link rate"):
        fanin.capped_startup(per, 25_000, 0.0, 0.5)


def test_the_incast_share_fit_finds_the_share_that_made_the_runs_and_beats_a_grid():
    import numpy as np

    from emulation.report.doctables import projection as pt

    c = 0.5

    def meas(base, x, S, f, h):
        return base + max(0.0, x * min(S, c * f) - h)
    # (base s, extra flows, start-up s, one flow at the link rate s, slack s): small flows cap, large ones do not
    runs = ((0.7, 16, 0.04, 0.05, 0.0), (1.5, 16, 0.04, 0.09, 0.0), (3.0, 16, 0.04, 0.19, 0.0),
            (0.3, 8, 0.015, 0.012, 0.0), (6.0, 16, 0.04, 0.37, 0.2), (0.5, 6, 0.03, 0.02, 0.0))
    pts = [(meas(*v), *v) for v in runs]
    assert pt.fit_incast_share(pts) == pytest.approx(c, abs=1e-4)
    noisy = [(m * f, *rest) for (m, *rest), f in zip(pts, (1.04, 0.97, 1.02, 0.99, 1.03, 0.98))]

    def cost(cc):
        return sum(((b + max(0.0, x * min(S, cc * fl) - h)) / m - 1) ** 2 for m, b, x, S, fl, h in noisy)
    got = pt.fit_incast_share(noisy)
    assert cost(got) <= min(cost(x) for x in np.linspace(0, 4, 40001)) + 1e-12
    # where no run's cap binds the cost is flat past the largest share that matters: the least of
    # those, to the grid's step (1e-3)
    big = [(m, b, x, S, 10 * fl, h) for m, b, x, S, fl, h in pts[1:3]]
    assert pt.fit_incast_share(big) == pytest.approx(max(S / fl for _, _, _, S, fl, _ in big), abs=1e-3)
    with pytest.raises(ValueError, match="needs a run with converging flows"):
        pt.fit_incast_share([(1.0, 1.0, 0, 0.01, 0.01, 0.0)])


def test_a_calibrated_projection_caps_each_steps_start_up_by_its_flows_bytes():
    """core.incast_steps: PS at P = 9 with 0.25 MiB sends flows of 29 kB; a share of 0.5 caps
    the start-up at 0.5 x 29 kB at 5 Mbit/s, and the record says the share it was charged with."""
    from emulation.simulator import core

    kw = dict(workers=9, mb=0.25, bw=5.0, incast=0.006, incast_bytes=20_000)
    capped = core.project(core.Request("fattree,k=4", "ps", incast_flow_share=0.5, **kw))
    whole = core.project(core.Request("fattree,k=4", "ps", **kw))
    plain = core.project(core.Request("fattree,k=4", "ps", workers=9, mb=0.25, bw=5.0))
    flow = 0.25 * 2**20 / 4 // 9 * 4  # a shard of the gradient, in whole float32 elements
    per = min(0.038, 0.5 * 8 * flow / 5e6)
    x = capped["extra_flows_per_sync"]
    assert x == 14 and capped["incast_flow_share"] == 0.5  # 8 flows into each NIC per phase, 7 extra
    assert capped["incast_flow_bytes"] == pytest.approx(flow, rel=1e-3)  # the smallest flow it capped and "incast_flow_share" not in whole
    assert capped["simulated_seconds"] == pytest.approx(plain["simulated_seconds"] + per * x, rel=1e-3)
    assert whole["simulated_seconds"] == pytest.approx(plain["simulated_seconds"] + 0.038 * x, rel=1e-6)
    steps = [[]]  # an empty step sends nothing: the start-up as given (it has no extra flow to charge)
    assert core.incast_steps(steps, 0.02, (0.5, 5.0)) == [0.0] and core.incast_steps(steps, 0.02) == [0.02]


def test_a_miss_says_where_the_emulated_links_ran_below_their_rate():
    from emulation.report.doctables import projection as pt

    def run(busy, host):
        return {"run": {"fidelity": {"busiest_link": {"busy_mean_mbps": busy, "configured_mbps": 100.0},
                                     "calibration": {"host": host}}}}

    assert pt._link_note(run(87.0, 0.99)) == "; busiest link at 87% of its rate while busy; host links calibrated at 0.99"
    assert pt._link_note(run(98.0, 0.89)) == "; busiest link at 98% of its rate while busy; host links calibrated at 0.89"
    assert pt._link_note(run(98.0, 0.99)) == "" and pt._link_note({}) == ""


def test_bcube_ps_runs_are_shown_counted_as_addressed_and_along_their_routes():
    # every faithful BCube PS run of the CUBIC validation: as addressed 2(P - 2) extra flows a sync (P - 1
    # into NIC 0 per phase), along the routes fewer, the count its projection charged
    from pathlib import Path

    from emulation.report import docs
    from emulation.report.doctables import projection as pt

    data = docs.load_sources(Path(__file__).resolve().parents[2] / "docs/results", pt.CUBIC_FAN_IN_SOURCES)
    fit, lat, rows = pt._fan_in_rows(data, pt.CUBIC_FAN_IN)
    lines = pt._along_routes(pt.faithful_ps(rows), lat, fit["incast_by_algorithm"]["ps"])
    body = [line.split(" | ") for line in lines if line.startswith("| tcp-cc")]
    assert len(body) >= 20 and all(c[1].startswith("bcube") for c in body)
    for c in body:
        p, addressed, routed = int(c[2]), int(c[6]), float(c[7])
        assert addressed == 2 * (p - 2) and 0 < routed < addressed
