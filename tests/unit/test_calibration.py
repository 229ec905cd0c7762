"""`syncbed project --calibration` (emulation/simulator/calibration.py): the shipped files are
what docs/results gives today, they charge every validated run what the validation charged
it, and the sweep applies them per run (no SimGrid needed)."""
import json
from pathlib import Path

import pytest

from emulation.report import docs
from emulation.report.doctables import projection as pt
from emulation.simulator import calibration, fanin, sweep

RESULTS = Path(__file__).resolve().parents[2] / "docs/results"
MB = 2**20
CAL = {"name": "x", "congestion_control": "x", "round_latency_seconds": 0.003, "fan_in_efficiency": 0.6,
       "fan_in_by_algorithm": {"ps": 1.0, "forest": 0.9},
       "round_latency_by_algorithm": {"bml": {"seconds": 0.006, "min_gradient_bytes": 2 * MB, "min_bcube_n": 3}},
       "incast_by_algorithm": {"ps": {"seconds": 0.013, "bytes": 12_500, "min_gradient_bytes": 2 * MB}}}


@pytest.mark.parametrize("algo,topo,size,want", [
    ("bml", "bcube(4,2)", 4 * MB, (0.006, 0.6, 0.0)),
    ("bml", "bcube,n=3,k=2", 2 * MB, (0.006, 0.6, 0.0)),  # a spec as --topo gives it
    ("bml", "bcube(2,3)", 4 * MB, (0.003, 0.6, 0.0)),  # one flow into each NIC per stage: L
    ("bml", "bcube(4,2)", 2 * MB - 4, (0.003, 0.6, 0.0)),  # below 2 MiB: L
    ("ps", "fattree(4)", 2 * MB, (0.003, 1.0, 0.013)),
    ("ps", "fattree(4)", MB, (0.003, 1.0, 0.0)),  # LeNet-5's size: no incast start-up
    ("forest", "bcube(4,2)", 4 * MB, (0.003, 0.9, 0.0)),
    ("ring", "fattree,k=8", 4 * MB, (0.003, 0.6, 0.0)),
])
def test_parameters_charge_each_value_where_it_was_fitted(algo, topo, size, want):
    c = calibration.parameters(CAL, algo, topo, size)
    assert (c.round_latency, c.fan_in, c.incast) == want
    assert c.incast_bytes == (12_500 if c.incast else 0.0)  # the start-up's bytes go where its time goes


def test_the_start_up_in_form_c_is_charged_past_the_slack_and_not_into_nics_of_two_port_switches():
    c_form = {**CAL, "incast_by_algorithm": {"ps": {**CAL["incast_by_algorithm"]["ps"], "past_slack": True,
                                                    "one_switch_input_free": True}}}
    for topo in ("fattree(4)", "bcube(3,2)", "bcube(2,3)", "bcube,n=2,k=4"):
        c = calibration.parameters(c_form, "ps", topo, 4 * MB)
        assert (c.incast, c.incast_bytes, c.incast_past_slack, c.incast_one_input_free) == (0.013, 12_500, True, True)
    # the projection reads the rule from the built topology's graph (core.incast_of), the docs by name
    assert [calibration.one_switch_input(t) for t in ("bcube(2,3)", "bcube,n=2,k=4", "fattree(2)")] == [True] * 3
    assert [calibration.one_switch_input(t) for t in ("bcube(3,2)", "bcube(4,2)", "fattree(4)", "fattree,k=6")] == [False] * 4
    a = calibration.parameters(CAL, "ps", "bcube(2,3)", 4 * MB)  # form A: every step, everywhere
    assert a.incast == 0.013 and not a.incast_one_input_free and not a.incast_past_slack


def test_the_two_port_rule_reads_the_switches_in_front_of_the_workers_nics():
    """`fanin.one_switch_input` reads the degree of the switch each NIC of the given hosts hangs
    off, not the topology's name: every NIC of BCube(2,k) and of Fat-Tree k=2 (one host per edge
    switch, one uplink) has a switch of two ports; BCube(3,2)'s and Fat-Tree k=4's have more."""
    from topologies.spec import build

    for spec, want in (("bcube,n=2,k=3", True), ("fattree,k=2", True), ("bcube,n=3,k=2", False),
                       ("fattree,k=4", False)):
        topo = build(spec)
        assert fanin.one_switch_input(topo, topo.hosts()) is want, spec
        assert fanin.one_switch_input(topo, topo.hosts()[:1]) is want, spec
    topo = build("bcube,n=2,k=3")
    assert fanin.one_switch_input(topo, []) is False  # no NIC: nothing to spare


def test_the_projection_spares_two_port_nics_the_start_up_and_says_so():
    """With the CUBIC calibration (form C), PS on BCube(2,3) is charged no incast start-up and
    its record says why; on BCube(3,2) it is charged (the requests carry the same values)."""
    from emulation.simulator import core

    reqs = {}
    for topo in ("bcube,n=2,k=3", "bcube,n=3,k=2"):
        s = sweep.Sweep(topo=[topo], algo=["ps"], mb=4.0, calibration="cubic")
        (req, _), = sweep.requests(s, {})
        assert req.incast > 0 and req.incast_one_input_free and req.incast_past_slack
        reqs[topo] = req
    from topologies.spec import build

    two, three = build("bcube,n=2,k=3"), build("bcube,n=3,k=2")
    assert core.incast_of(reqs["bcube,n=2,k=3"], two, two.hosts()) == 0.0
    assert core.incast_of(reqs["bcube,n=3,k=2"], three, three.hosts()) > reqs["bcube,n=3,k=2"].incast


def test_a_typed_incast_start_up_is_charged_past_the_slack_when_asked():
    """`--incast S --incast-past-slack`: form C by hand (without the two-port rule, which is the
    calibration's); without the flag, every step."""
    for flag in (False, True):
        s = sweep.Sweep(topo=["fattree,k=4"], algo=["ps,ring"], incast=["ps=0.01"], incast_past_slack=flag)
        reqs = {r.algo: r for r, _ in sweep.requests(s, {})}
        assert reqs["ps"].incast == 0.01 and reqs["ps"].incast_past_slack == flag
        assert reqs["ring"].incast == 0.0


def test_an_unknown_calibration_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"'reno' is not one; give one of bbr, cubic"):
        calibration.load("reno")


@pytest.mark.parametrize("fan", [pt.BBR_FAN_IN, pt.CUBIC_FAN_IN], ids=lambda f: f.cc)
def test_the_shipped_file_is_what_the_results_give_and_charges_each_run_as_the_validation(fan):
    data = docs.load_sources(RESULTS, fan.sources)
    want = json.loads(json.dumps(pt.calibration_record(data, fan)))
    assert calibration.load(fan.cc) == want, f"rerun `python scripts/fan_in.py calibration --cc {fan.cc}`"
    _, _, rows = pt._fan_in_rows(data, fan)
    assert rows
    for r in rows:
        c = calibration.parameters(want, r["algorithm"], r["topology"], r["gradient_bytes"])
        incast = 0.0 if c.incast_one_input_free and calibration.one_switch_input(r["topology"]) else \
            fanin.incast_startup({"seconds": c.incast, "bytes": c.incast_bytes}, r["link_mbps"])
        if incast and c.incast_flow_share:  # form D: no more than a share of the flow's bytes (core.incast_steps)
            incast = fanin.capped_startup(incast, pt.ps_flow_bytes(r), r["link_mbps"], c.incast_flow_share)
        assert (c.round_latency, c.fan_in, incast) == (r["fan_in_l"], r["fan_in_e"], r["fan_in_incast"]), r["experiment"]
        # where it charges a start-up, it does so as the validation: past the slack (form C)
        assert c.incast_past_slack == (bool(c.incast) and fan.cc == "cubic"), r["experiment"]
        # e_o changes a projection only on a topology with oversubscribed links, as in the validation
        assert (c.oversubscribed if r["oversubscribed"] else 1.0) == r["fan_in_eo"], r["experiment"]


def test_the_cubic_file_charges_ps_an_incast_start_up_and_bml_its_own_latency():
    cal = calibration.load("cubic")
    assert cal["incast_by_algorithm"]["ps"]["seconds"] > 0 and cal["fan_in_by_algorithm"]["ps"] == 1.0
    assert cal["round_latency_by_algorithm"]["bml"]["seconds"] > 0
    assert "cubic" in calibration.describe(cal) and "per converging flow" in calibration.describe(cal)


def test_the_sweep_charges_each_request_its_calibrated_values():
    cal = calibration.load("cubic")
    s = sweep.Sweep(topo=["bcube,n=4,k=2"], algo=["bml,ps,ring"], mb=4.0, calibration="cubic")
    reqs = {r.algo: r for r, _ in sweep.requests(s, {})}
    assert reqs["bml"].round_latency == cal["round_latency_by_algorithm"]["bml"]["seconds"]
    assert reqs["ps"].incast == cal["incast_by_algorithm"]["ps"]["seconds"] and reqs["ps"].fan_in == 1.0
    assert (reqs["ring"].round_latency, reqs["ring"].fan_in, reqs["ring"].incast) == (
        cal["round_latency_seconds"], cal["fan_in_efficiency"], 0.0)
    assert {r.oversubscribed for r in reqs.values()} == {cal.get("oversubscribed_efficiency", 1.0)}  # every algorithm's
    # form D (since the afternoon of 2026-12-04): charged at every size, capped by the flows' bytes
    small = sweep.Sweep(topo=["bcube,n=4,k=2"], algo=["ps"], mb=1.0, calibration="cubic")
    assert [(r.incast, r.incast_flow_share) for r, _ in sweep.requests(small, {})] == [
        (cal["incast_by_algorithm"]["ps"]["seconds"], cal["incast_by_algorithm"]["ps"]["flow_share"])]
    assert cal["incast_by_algorithm"]["ps"]["flow_share"] > 0 and cal["incast_by_algorithm"]["ps"]["min_gradient_bytes"] == 0


@pytest.mark.parametrize("typed", [{"round_latency": ["0.003"]}, {"incast": ["ps=0.01"]}, {"fan_in": ["0.7"]},
                                   {"oversubscribed": 0.8}, {"incast_past_slack": True}])
def test_a_calibration_with_the_values_it_sets_is_refused(typed):
    s = sweep.Sweep(topo=["fattree,k=4"], algo=["ps"], calibration="cubic", **typed)
    with pytest.raises(ValueError, match=r"--calibration cubic sets --\S+ itself; give either"):
        sweep.requests(s, {})


@pytest.mark.skipif(__import__("emulation.simulator.core", fromlist=["x"]).simgrid_available() is not None,
                    reason="SimGrid is not importable")
def test_syncbed_project_with_a_calibration_charges_it_and_says_so(tmp_path):
    """End to end in SimGrid: PS on BCube(3,2) at 4 MiB pays L per round and its incast start-up
    (its time and its bytes at the 20 Mbit/s of the hosts' links) per extra converging flow over
    the bandwidth term; the report names the calibration."""
    from emulation import cli

    cal = calibration.load("cubic")
    assert cli.main(["project", "--topo", "bcube,n=3,k=2", "--algo", "ps", "--mb", "4", "--bw", "20",
                     "--out", str(tmp_path / "plain")]) == 0
    assert cli.main(["project", "--topo", "bcube,n=3,k=2", "--algo", "ps", "--mb", "4", "--bw", "20",
                     "--calibration", "cubic", "--out", str(tmp_path / "cal")]) == 0
    plain, got = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("plain", "cal"))
    r0, r = plain["runs"][0], got["runs"][0]
    x = cal["incast_by_algorithm"]["ps"]
    inc = x["seconds"] + 8 * x.get("bytes", 0.0) / 20e6
    assert r["incast_seconds"] == pytest.approx(inc, rel=1e-9) and r["incast_bytes"] == x.get("bytes", 0.0)
    assert r["extra_flows_per_sync"] == 2 * 5  # the routes put 6 of each server's 8 flows into one NIC, push and pull
    # form C: past the sync's slack (its busiest link's seconds beyond its NICs')
    assert r["incast_charged"] == "past the slack"
    charged = max(0.0, inc * 10 - (r0["bound_seconds"] - r0["bound_nonblocking_seconds"]))
    assert r["incast_charged_seconds_per_sync"] == pytest.approx(charged) and charged > 0
    assert r["median_sync_seconds"] == pytest.approx(r0["median_sync_seconds"] + cal["round_latency_seconds"]
                                                     * r["rounds_per_sync"] + charged, rel=1e-6)
    assert got["calibration"] == cal
    assert "Charged by `--calibration`, each where it was fitted: calibration cubic" in \
        (tmp_path / "cal" / "report.md").read_text()
    # BCube(2,3): its NICs hang off switches of two ports, so no start-up, and the record says so
    assert cli.main(["project", "--topo", "bcube,n=2,k=3", "--algo", "ps", "--mb", "4", "--bw", "20",
                     "--calibration", "cubic", "--out", str(tmp_path / "two")]) == 0
    two = json.loads((tmp_path / "two" / "summary.json").read_text())["runs"][0]
    assert two["incast_charged"] == "none: the NICs' switches have two ports" and two["incast_seconds"] == 0.0
    assert "no incast start-up on bcube(2,3): its workers' NICs hang off switches of two ports" in \
        (tmp_path / "two" / "report.md").read_text()


def test_the_report_says_when_ps_converges_more_flows_than_the_incast_start_up_was_fitted_on():
    from emulation.report.projection import render

    cal = calibration.load("cubic")
    most = cal["incast_by_algorithm"]["ps"]["max_workers_fitted"]

    def report(p):
        run = {"topology": "fattree(6)", "algorithm": "ps", "algo_spec": "ps", "workers": p, "model": "synthetic,mb=2",
               "incast_seconds": cal["incast_by_algorithm"]["ps"]["seconds"], "round_latency_seconds": 0.003,
               "median_sync_seconds": 1.0, "bound_seconds": 0.9,
               "simulator": {"network_model": {"name": "CM02"}}}
        return render({"experiment": "x", "status": "ok", "runs": [run], "calibration": cal}, [])

    assert "Beyond the fitted range" not in report(most)
    assert f"**Beyond the fitted range:** PS at P = {most + 8} converge" in report(most + 8)


def test_the_report_says_when_ps_flows_are_smaller_than_the_cap_was_fitted_down_to():
    """Form D's share was fitted on flows of two frames or more; PS at P = 1024 with 4 MiB sends
    flows of 4 kB, where the emulation's sub-frame runs lost far more than the cap charges."""
    from emulation.report.projection import render

    cal = calibration.load("cubic")
    least = cal["incast_by_algorithm"]["ps"]["flow_share_min_flow_bytes"]
    assert least > 9000  # two frames at MTU 9000: what the fit half reached

    def report(flow):
        run = {"topology": "fattree(16)", "algorithm": "ps", "algo_spec": "ps", "workers": 16, "model": "synthetic,mb=2",
               "incast_seconds": cal["incast_by_algorithm"]["ps"]["seconds"], "round_latency_seconds": 0.003,
               "incast_flow_share": cal["incast_by_algorithm"]["ps"]["flow_share"], "incast_flow_bytes": flow,
               "median_sync_seconds": 1.0, "bound_seconds": 0.9, "simulator": {"network_model": {"name": "CM02"}}}
        return render({"experiment": "x", "status": "ok", "runs": [run], "calibration": cal}, [])

    assert "Below the fitted flow size" not in report(least)
    assert "**Below the fitted flow size:** PS on fattree(16) at P = 16 (4.1 kB)" in report(4096)
