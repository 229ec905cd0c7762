"""The pure parts of the analysis: expected bytes laid onto routes, the bound, sync times
from worker logs, the payload comparison, fidelity verdicts, drop/TCP counter parsing and
the calibration pairs, the host configuration commands, and runs stopped part way. Canned
inputs only (a few hand-written captures): no network."""
from __future__ import annotations

import json
import socket
import struct

import pytest

from emulation import analysis, calibrate, network
from topologies.spec import build
from workloads.algorithms import base


@pytest.fixture(autouse=True)
def no_framing(monkeypatch):
    """Route arithmetic by hand is about data bytes; framing has its own tests below."""
    monkeypatch.setattr(base, "GLOO_FRAMING_BYTES", 0)
    monkeypatch.setattr(base, "GLOO_SEND_FRAMING_BYTES", 0)
    monkeypatch.setattr(base, "GLOO_NOTIFY_BYTES", 0)


def framing(monkeypatch, send=100, notify=10):
    monkeypatch.setattr(base, "GLOO_SEND_FRAMING_BYTES", send)
    monkeypatch.setattr(base, "GLOO_NOTIFY_BYTES", notify)
    monkeypatch.setattr(base, "GLOO_FRAMING_BYTES", send + notify)


def test_expected_bytes_add_gloo_framing_per_message_each_direction_its_share(monkeypatch):
    framing(monkeypatch, 100, 10)
    t = build("bcube,n=2,k=2", bw=20)
    hosts = t.hosts()
    out = analysis.expected_nic_bytes(t, hosts, [base.Flow(0, 1, 0, 1000, 3)], syncs=2)
    assert out["h00-eth0"] == {"tx": 2 * (1000 + 3 * 100), "rx": 2 * 3 * 10}
    assert out["h01-eth0"] == {"rx": 2 * (1000 + 3 * 100), "tx": 2 * 3 * 10}


def test_the_receivers_notifications_take_the_reverse_route_through_another_relay(monkeypatch):
    """Issue #19 section 1: ring 1 -> 2 is h01 -> h10 (10.0.0.3), relayed by h11 (digit 1
    first). The receiver's notifications go h10 -> h01 (10.0.0.2), digit 1 first again: via
    h00. So h00-eth1 and h10-eth1, which the data never crosses, carry Gloo's notifications
    (48 B per message), and h11's relay carries only the data and the sender's framing.
    Laying all framing beside the data put these bytes on the wrong ports: the captures of
    every ring-based run on BCube showed them as unexpected ports."""
    framing(monkeypatch, 96, 48)
    t = build("bcube,n=2,k=2")
    hosts = ["h00", "h01", "h10", "h11"]
    got = analysis.expected_nic_bytes(t, hosts, [base.Flow(1, 2, 0, 1000, 5)])
    fwd, back = 1000 + 5 * 96, 5 * 48
    assert got == {
        "h01-eth1": {"tx": fwd, "rx": 0}, "h11-eth1": {"tx": 0, "rx": fwd},
        "h11-eth0": {"tx": fwd, "rx": 0}, "h10-eth0": {"tx": 0, "rx": fwd},
        "h10-eth1": {"tx": back, "rx": 0}, "h00-eth1": {"tx": 0, "rx": back},
        "h00-eth0": {"tx": back, "rx": 0}, "h01-eth0": {"tx": 0, "rx": back},
    }
    ports = analysis.expected_port_bytes(t, hosts, [base.Flow(1, 2, 0, 1000, 5)])
    assert sum(p["tx"] for p in ports.values()) == 2 * fwd + 2 * back  # each leg crosses two switches


def test_wire_flows_keep_the_total_and_split_the_directions():
    flows = [base.Flow(0, 1, 0, 1000, 3), base.Flow(1, 0, 0, 50, 1), base.Flow(2, 2, 0, 7, 1)]
    legs = base.wire_flows(flows)
    assert all(f.messages == 0 and f.payload == f.bytes for f in legs)
    assert sum(f.bytes for f in legs) == sum(f.payload for f in flows if f.src != f.dst)
    assert {(f.src, f.dst): f.bytes for f in legs} == {
        (0, 1): 1000 + 3 * base.GLOO_SEND_FRAMING_BYTES + 1 * base.GLOO_NOTIFY_BYTES,
        (1, 0): 50 + 1 * base.GLOO_SEND_FRAMING_BYTES + 3 * base.GLOO_NOTIFY_BYTES}


@pytest.mark.parametrize("seed", range(4))
def test_wire_flows_are_the_merged_legs(seed):
    """wire_flows sums its legs without making them: the same list as merge_flows of the legs
    made one by one (repeated pairs, zero bytes, no messages, flows to itself, two NICs)."""
    import random

    rng = random.Random(seed)
    flows = [base.Flow(rng.randrange(5), rng.randrange(5), rng.randrange(2), rng.choice([0, 1, 4000]),
                       rng.choice([0, 1, 3])) for _ in range(60)]
    legs = []
    for f in flows:
        if f.src != f.dst:
            legs.append(base.Flow(f.src, f.dst, f.nic, f.bytes + f.messages * base.GLOO_SEND_FRAMING_BYTES, 0))
            if f.messages:
                legs.append(base.Flow(f.dst, f.src, f.nic, f.messages * base.GLOO_NOTIFY_BYTES, 0))
    assert base.wire_flows(flows) == base.merge_flows(legs)


pytestmark = pytest.mark.unit

MIB = 2**20
ELEMENTS = MIB // base.DTYPE_BYTES  # a 1 MiB float32 gradient


def flows_of(algo, topo, hosts, elements=ELEMENTS, **kw):
    ctx = base.PlanContext(workers=len(hosts), layer_sizes=(elements,), nics=len(topo.host_nics(hosts[0])),
                           topology=topo, hosts=tuple(hosts), **kw)
    a, plan = base.plan_for(algo, ctx)
    return a.traffic(plan)


# ---- expected bytes --------------------------------------------------------------------
def test_ring_on_bcube22_relays_by_hand():
    """Ring h00 -> h01 -> h10 -> h11 -> h00 on NIC 0 (level-0 addresses), M = 1 MiB:
    each rank sends B = 2(N-1)M/N = 1.5 MiB to its successor. Routes (topologies/bcube.py:
    highest differing digit first, the address's level last):
      0->1 h00 -> 10.0.0.2 (h01): neighbours on level 0: h00-eth0 -> h01-eth0
      1->2 h01 -> 10.0.0.3 (h10): digit 1 first, relay h11: h01-eth1 -> h11-eth1, h11-eth0 -> h10-eth0
      2->3 h10 -> 10.0.0.4 (h11): neighbours on level 0: h10-eth0 -> h11-eth0
      3->0 h11 -> 10.0.0.1 (h00): digit 1 first, relay h01: h11-eth1 -> h01-eth1, h01-eth0 -> h00-eth0
    h00-eth1 and h10-eth1 carry nothing; h01 and h11 relay on both NICs."""
    t = build("bcube,n=2,k=2")
    hosts = ["h00", "h01", "h10", "h11"]
    flows = flows_of("ring", t, hosts)
    B = 2 * 3 * MIB // 4
    assert B == 1572864
    assert sorted((f.src, f.dst, f.nic, f.bytes) for f in flows) == [(0, 1, 0, B), (1, 2, 0, B), (2, 3, 0, B),
                                                                     (3, 0, 0, B)]
    want = {
        "h00-eth0": {"tx": B, "rx": B}, "h00-eth1": {"tx": 0, "rx": 0},
        "h01-eth0": {"tx": B, "rx": B}, "h01-eth1": {"tx": B, "rx": B},
        "h10-eth0": {"tx": B, "rx": B}, "h10-eth1": {"tx": 0, "rx": 0},
        "h11-eth0": {"tx": B, "rx": B}, "h11-eth1": {"tx": B, "rx": B},
    }
    assert analysis.expected_nic_bytes(t, hosts, flows) == want
    three = analysis.expected_nic_bytes(t, hosts, flows, syncs=3)
    assert three == {nic: {d: 3 * v for d, v in dv.items()} for nic, dv in want.items()}


def test_relay_outside_the_workers_is_still_counted():
    """Two workers h00 and h11 (not neighbours): the relays' NICs appear too."""
    t = build("bcube,n=2,k=2")
    flows = [base.Flow(0, 1, 0, 100), base.Flow(1, 0, 1, 10)]
    got = analysis.expected_nic_bytes(t, ["h00", "h11"], flows)
    # 0->1 to 10.0.0.4 via h10 (digit 1 first); 1->0 to 10.1.0.1: digit 0 first, via h10 too
    assert got == {
        "h00-eth0": {"tx": 0, "rx": 0}, "h00-eth1": {"tx": 100, "rx": 10},
        "h11-eth0": {"tx": 10, "rx": 100}, "h11-eth1": {"tx": 0, "rx": 0},
        "h10-eth0": {"tx": 100, "rx": 10}, "h10-eth1": {"tx": 10, "rx": 100},
    }


def test_bml_on_bcube_uses_one_hop_neighbours_only():
    """docs/DESIGN.md: BML sends 2(N-1)M/(KN) per NIC in all and never relays."""
    t = build("bcube,n=2,k=2")
    hosts = t.hosts()
    got = analysis.expected_nic_bytes(t, hosts, flows_of("bml", t, hosts))
    per_nic = 2 * 3 * MIB // (2 * 4)
    assert got == {n.name: {"tx": per_nic, "rx": per_nic} for h in hosts for n in t.host_nics(h)}


def test_ps_colocated_on_fattree():
    t = build("fattree,k=4")
    hosts = t.hosts()
    got = analysis.expected_nic_bytes(t, hosts, flows_of("ps", t, hosts))
    n = len(hosts)
    each = 2 * (n - 1) * MIB // n  # push (N-1)M/N + pull (N-1)M/N, each direction
    assert got == {f"{h}-eth0": {"tx": each, "rx": each} for h in hosts}


# ---- bound ------------------------------------------------------------------------------
def test_bound_seconds_is_the_busiest_nic_direction():
    t = build("bcube,n=2,k=2", bw=20)
    hosts = ["h00", "h01", "h10", "h11"]
    per_sync = analysis.expected_nic_bytes(t, hosts, flows_of("ring", t, hosts))
    B = 1572864
    assert analysis.bound_seconds(t, per_sync) == pytest.approx(B / (20e6 / 8))
    slow = build("bcube,n=2,k=2", bw=20, link_bw={"level1": 10})
    assert analysis.bound_seconds(slow, per_sync) == pytest.approx(B / (10e6 / 8))  # relays on level 1
    rx_heavy = {"h00-eth0": {"tx": 1000, "rx": 5000}, "h01-eth1": {"tx": 2000, "rx": 0}}
    assert analysis.bound_seconds(slow, rx_heavy) == pytest.approx(max(5000 / 2.5e6, 2000 / 1.25e6))
    assert analysis.bound_seconds(t, {}) == 0.0


# ---- sync times from worker logs ---------------------------------------------------------------
def write_log(d, rank, events, garbage=False):
    lines = [json.dumps(e) for e in events]
    if garbage:
        lines.insert(1, "{not json")
    (d / f"rank{rank}.jsonl").write_text("\n".join(lines) + "\n")


def it(i, t_start, t_ready, t_done, correct=True, warmup=False, **kw):
    return {"event": "iter", "iter": i, "warmup": warmup, "t_start": t_start, "t_ready": t_ready,
            "t_done": t_done, "correct": correct, "max_abs_err": 0.0 if correct else 1.0, **kw}


def test_sync_times_max_done_minus_max_ready(tmp_path):
    write_log(tmp_path, 0, [
        {"event": "start", "rank": 0},
        it(0, 0.0, 1.0, 50.0, warmup=True, correct=False),  # warmup: excluded, even if wrong
        it(1, 100.0, 101.0, 103.0),
        {"event": "stage", "stage": 0},
        it(2, 200.0, 202.0, 203.5),
        {"event": "done"},
    ], garbage=True)
    write_log(tmp_path, 1, [
        it(0, 0.0, 2.0, 60.0, warmup=True),
        it(1, 100.5, 101.5, 104.0),
        {"event": "stage", "stage": 0},
        {"event": "stage", "stage": 1},
        it(2, 199.0, 201.0, 204.0),
        {"event": "done"},
    ])
    r = analysis.sync_times(tmp_path, workers=2)
    assert r["sync_seconds"] == pytest.approx([104.0 - 101.5, 204.0 - 202.0])
    assert r["iteration_seconds"] == pytest.approx([104.0 - 100.5, 204.0 - 200.0])
    assert r["correct"] is True
    assert (r["ranks_done"], r["stage_events"], r["complete_iters"], r["errors"]) == (2, 3, 2, [])


def test_phase_bytes_observations_and_time_to_accuracy(tmp_path):
    """Bytes per phase per sync from the ranks' stage records (warmup left out), the workers'
    zero-block fraction and block sizes, and the first evaluation at the target accuracy."""
    stage = lambda i, phase, b: {"event": "stage", "iter": i, "phase": phase, "bytes": b}  # noqa: E731
    obs = lambda z, b: {"zero_block_fraction": z, "block": b, "sparsify_seconds": z / 10,  # noqa: E731
                        "merge_seconds": z / 100}
    logs = {0: [it(0, 0, 0, 1, warmup=True), stage(0, "push", 999), it(1, 1, 1, 2, observed=obs(0.5, 64)),
                stage(1, "push", 10), stage(1, "pull", 30), it(2, 2, 2, 3, observed=obs(0.7, 256)),
                stage(2, "push", 20), stage(2, "pull", 50),
                {"event": "train", "iter": 1, "loss": 1.0, "accuracy": 0.5, "t": 2.0},
                {"event": "train", "iter": 2, "loss": 0.5, "accuracy": 0.93, "t": 3.5}],
            1: [it(1, 1, 1, 2, observed=obs(0.9, 64)), stage(1, "push", 10), stage(2, "push", 20)],
            2: [it(1, 1, 1, 2, server=True, observed={"union_blocks": 3})]}  # a dedicated server
    assert analysis.phase_bytes(logs) == {"push": 30.0, "pull": 40.0}  # (10+10+20+20)/2, (30+50)/2
    assert analysis.phase_bytes({0: [it(1, 0, 0, 1)]}) == {}
    # what summary.json keeps of them is the algorithm's to say (Algorithm.compute, .summarize)
    summary = analysis.observed_summary(logs, 2, base.get("dfs"))  # block-sparse: a compressor's time, blocks
    # the slowest worker's per sync too: iteration 1 max(0.05, 0.09), iteration 2 0.07
    assert summary == {"zero_block_fraction": pytest.approx(0.7), "blocks_used": {"64": 1, "256": 1},
                       "sparsify_seconds": pytest.approx(0.07), "sparsify_seconds_slowest": pytest.approx(0.08)}
    assert analysis.observed_summary(logs, 2, base.get("topk")) == {  # selection and merges
        "sparsify_seconds": pytest.approx(0.07), "sparsify_seconds_slowest": pytest.approx(0.08),
        "merge_seconds": pytest.approx(0.007), "merge_seconds_slowest": pytest.approx(0.008)}
    assert analysis.observed_summary(logs, 2, base.get("ring")) == {}  # declares nothing
    for n, e in logs.items():
        write_log(tmp_path, n, e)
    training = analysis.sync_times(tmp_path, workers=2)["training"]
    assert training["seconds"] == [2.0, 3.5]  # since the first iteration began (t_start 0)
    assert analysis.time_to_accuracy(training, 0.9) == {"target": 0.9, "iter": 2, "seconds": 3.5}
    assert analysis.time_to_accuracy(training, 0.95) == {"target": 0.95, "iter": None, "seconds": None}
    assert analysis.time_to_accuracy(training, None) is None and analysis.time_to_accuracy(None, 0.9) is None


def test_sync_times_one_wrong_worker_iteration_makes_it_incorrect(tmp_path):
    write_log(tmp_path, 0, [it(1, 0, 1, 2), it(2, 3, 4, 5)])
    write_log(tmp_path, 1, [it(1, 0, 1, 2), it(2, 3, 4, 5, correct=False)])
    assert analysis.sync_times(tmp_path, workers=2)["correct"] is False


def test_sync_times_servers_and_errors(tmp_path):
    # rank 2 is a dedicated server: its verdict does not count, its times do
    write_log(tmp_path, 0, [it(1, 0, 1, 2)])
    write_log(tmp_path, 1, [it(1, 0, 1.5, 2), {"event": "error", "message": "RuntimeError: " + "x" * 500}])
    write_log(tmp_path, 2, [it(1, 0, 0.5, 3, correct=False, server=True)])
    r = analysis.sync_times(tmp_path, workers=2)
    assert r["correct"] is True
    assert r["sync_seconds"] == pytest.approx([3 - 1.5])
    assert len(r["errors"]) == 1 and r["errors"][0].startswith("rank 1: RuntimeError: ")
    assert len(r["errors"][0]) == len("rank 1: ") + 200  # messages are cut
    assert r["ranks_done"] == 0 and r["complete_iters"] == 1


def test_sync_times_complete_iters_counts_workers_not_servers(tmp_path):
    """Worker 1 died before iteration 2: the server's line must not stand in for it."""
    write_log(tmp_path, 0, [it(1, 0, 1, 2), it(2, 3, 4, 5)])
    write_log(tmp_path, 1, [it(1, 0, 1, 2)])
    write_log(tmp_path, 2, [it(1, 0, 1, 2, server=True), it(2, 3, 4, 5, server=True)])
    r = analysis.sync_times(tmp_path, workers=2)
    assert r["complete_iters"] == 1
    assert len(r["sync_seconds"]) == 2  # the partial iteration still has a time


def test_sync_times_no_logs_is_not_correct(tmp_path):
    r = analysis.sync_times(tmp_path, workers=4)
    assert r["sync_seconds"] == [] and r["correct"] is False and r["complete_iters"] == 0
    write_log(tmp_path, 0, [it(0, 0, 1, 2, warmup=True)])  # only warmup
    assert analysis.sync_times(tmp_path, workers=1)["correct"] is False


# ---- compare ------------------------------------------------------------------------------------
def test_compare_within_tolerance():
    expected = {"a": {"tx": 1000, "rx": 2000}, "b": {"tx": 0, "rx": 500}}
    measured = {"a": {"tx": 1029, "rx": 1950}, "b": {"tx": 10, "rx": 500}}
    r = analysis.compare(expected, measured, floor=10)
    assert r["within_tolerance"] is True and r["unexpected"] == []
    assert r["min"] == pytest.approx(0.975) and r["max"] == pytest.approx(1.029)
    assert r["tolerance"] == analysis.PAYLOAD_TOLERANCE == 0.03


@pytest.mark.parametrize("measured_tx", [969, 1031, 0, 2000])
def test_compare_outside_tolerance(measured_tx):
    r = analysis.compare({"a": {"tx": 1000, "rx": 0}}, {"a": {"tx": measured_tx, "rx": 0}}, floor=0)
    assert r["within_tolerance"] is False
    assert r["min"] == r["max"] == pytest.approx(measured_tx / 1000)


def test_compare_unexpected_traffic_above_floor():
    expected = {"a": {"tx": 1000, "rx": 0}, "b": {"tx": 0, "rx": 0}}
    measured = {"a": {"tx": 1000, "rx": 11}, "b": {"tx": 10}, "zz": {"tx": 10**9}}  # zz: not expected at all
    r = analysis.compare(expected, measured, floor=10)
    assert r["unexpected"] == ["a:rx"] and r["within_tolerance"] is False
    assert analysis.compare({"a": {"tx": 0, "rx": 0}}, {}, floor=0)["within_tolerance"] is False  # no ratio
    assert analysis.compare({"a": {"tx": 0, "rx": 0}}, {}, floor=0)["min"] is None


# ---- fidelity -----------------------------------------------------------------------------------
GOOD_CAL = {"classes": {"host": {"ok": True, "measured_mbps": 19.5, "configured_mbps": 20, "ratio": 0.975}}}
GOOD_CPU = {"ovs_cores": {"mean": 0.5}, "machine_busy": {"mean": 0.6}, "workers_cores": {"mean": 0.25},
            "ovs_wait": {"mean": 0.0}, "workers_wait": {"mean": 0.0}}
GOOD_BUSIEST = {"intf": "e0_0-eth3", "peak_ratio": 1.01}


def test_fidelity_faithful():
    f = analysis.fidelity(GOOD_CAL, GOOD_CPU, {"dropped_by_kernel": 0}, GOOD_BUSIEST)
    assert f["faithful"] is True and f["reasons"] == []
    assert (f["ovs_cpu_percent"], f["machine_busy_percent"], f["workers_cpu_percent"]) == (50.0, 60.0, 25.0)
    assert f["calibration"] == {"host": 0.975} and f["capture_drops"] == 0
    assert f["unverified"] == []


def test_fidelity_packets_lost_where_no_counter_sees_them_break_the_verdict():
    """docs/FIDELITY.md #23: fast retransmits over 0.02% of the segments sent with no drop counted
    at any qdisc or OVS port (ovs-vswitchd's send buffer overflowing) make the run not faithful;
    counted drops account for the loss; spurious timeouts (no fast retransmit) do not count."""
    def cap(fast, total=0, timeouts=0):
        return {"dropped_by_kernel": 0, "queue_drops": {"qdisc": {}, "ovs": {}, "total": total, "tcp": {
            "OutSegs": 100000, "TCPFastRetrans": fast, "TCPTimeouts": timeouts, "RetransSegs": fast + timeouts}}}
    lost = analysis.fidelity(GOOD_CAL, GOOD_CPU, cap(300), GOOD_BUSIEST)
    assert lost["faithful"] is False and lost["uncounted_loss_fraction"] == 0.003
    assert lost["reasons"] == ["the hosts fast-retransmitted 0.30% of their segments while no queue counted a drop "
                               "(limit 0.02%): packets were lost where no counter sees them (ovs-vswitchd's send "
                               "buffer, docs/FIDELITY.md #23)"]
    assert analysis.fidelity(GOOD_CAL, GOOD_CPU, cap(10, timeouts=1000), GOOD_BUSIEST)["faithful"] is True
    counted = analysis.fidelity(GOOD_CAL, GOOD_CPU, cap(300, total=250), GOOD_BUSIEST)
    assert counted["faithful"] is True and counted["uncounted_loss_fraction"] == 0.0
    old = analysis.fidelity(GOOD_CAL, GOOD_CPU, {"dropped_by_kernel": 0}, GOOD_BUSIEST)
    assert old["faithful"] is True and old["uncounted_loss_fraction"] is None


def test_fidelity_nothing_measured_is_unverified_not_faithful():
    """Nothing measured is not "nothing wrong": the verdict is None and says what was not checked."""
    f = analysis.fidelity(None, None, None, None)
    assert f["faithful"] is None
    assert f["unverified"] == ["links", "cpu", "capture"]
    assert [r.split(":")[0] for r in f["reasons"]] == ["not verified"] * 3


def test_fidelity_without_calibration_is_unverified():
    """--no-calibrate: everything else measured and fine, the links were not verified."""
    f = analysis.fidelity(None, GOOD_CPU, {"dropped_by_kernel": 0}, GOOD_BUSIEST)
    assert f["faithful"] is None and f["unverified"] == ["links"]
    assert f["reasons"] == ["not verified: link rates were not calibrated (run without --no-calibrate to check them)"]
    assert f["calibration"] == {}
    # an empty calibration (no class measured) verifies nothing either
    assert analysis.fidelity({"classes": {}}, GOOD_CPU, {"dropped_by_kernel": 0}, GOOD_BUSIEST)["faithful"] is None


def test_fidelity_a_broken_invariant_wins_over_an_unverified_one():
    f = analysis.fidelity(None, GOOD_CPU, {"dropped_by_kernel": 3}, GOOD_BUSIEST)
    assert f["faithful"] is False and f["unverified"] == ["links"]
    assert f["reasons"][0] == "capture dropped 3 packets: byte counts are incomplete"
    assert f["reasons"][1].startswith("not verified: link rates")


def test_fidelity_no_capture_and_no_cpu_samples_are_named():
    # --no-capture: Capture.stop() says 0 drops but there is no pcap, so no busiest link
    f = analysis.fidelity(GOOD_CAL, GOOD_CPU, {"captured": None, "dropped_by_kernel": 0}, None)
    assert f["faithful"] is None and f["unverified"] == ["capture"]
    assert f["reasons"] == ["not verified: no capture of the iterations: the busiest link's rate not checked"]
    # a run shorter than one CPU sample
    f = analysis.fidelity(GOOD_CAL, {"samples": 0, "ovs_wait": None, "workers_wait": None},
                          {"dropped_by_kernel": 0}, GOOD_BUSIEST)
    assert f["faithful"] is None and f["unverified"] == ["cpu"]
    assert f["reasons"] == ["not verified: CPU starvation of ovs-vswitchd and the workers was not measured"]


def test_a_peak_is_judged_against_what_htb_burst_and_one_frame_allow():
    """A half-second bin of a link shaped right holds its rate's bytes, HTB's 15 KB burst and one
    frame more: at MTU 9000, 2% of the bin at 20 Mbit/s, 15% at 2.5 (the 8x-dilated forest's
    level 0 peaked at 1.06-1.08x, docs/FIDELITY.md); a peak above 5% more than that still fails."""
    assert analysis.peak_limit(20, 9000) == pytest.approx(1.05 + 24000 * 8 / 10e6)
    assert analysis.peak_limit(2.5, 1500) < analysis.peak_limit(2.5, 9000)
    assert analysis.peak_limit(1000, 9000) == pytest.approx(1.05, abs=1e-3)

    def judged(ratio, mbps, mtu=9000):
        busiest = {"intf": "x", "peak_ratio": ratio, "configured_mbps": mbps}
        return analysis.fidelity(GOOD_CAL, GOOD_CPU, {"dropped_by_kernel": 0}, busiest, mtu=mtu)["faithful"]

    assert judged(1.08, 2.5) is True and judged(1.08, 20) is False
    assert judged(1.25, 2.5) is False and judged(1.08, 2.5, mtu=1500) is True
    assert judged(1.06, 1000) is False


def test_fidelity_reasons():
    cal = {"classes": {"host": GOOD_CAL["classes"]["host"],
                       "agg-core": {"ok": False, "measured_mbps": 12.34, "configured_mbps": 20, "ratio": 0.617}}}
    ovs_wait, w_wait = analysis.MAX_OVS_WAIT + 0.05, analysis.MAX_WORKER_WAIT + 0.05
    cpu = {"ovs_cores": {"mean": 0.9}, "machine_busy": {"mean": 0.95}, "ovs_wait": {"mean": ovs_wait},
           "workers_wait": {"mean": w_wait}}
    f = analysis.fidelity(cal, cpu, {"dropped_by_kernel": 17}, {"intf": "e0_0-eth3", "peak_ratio": 1.2})
    assert f["faithful"] is False
    assert f["reasons"] == [
        "calibration of agg-core: 12.3 of 20 Mbit/s (ratio 0.62 outside 0.80-1.05)",
        "capture dropped 17 packets: byte counts are incomplete",
        "ovs-vswitchd used 0.90 cores on average and the busiest link ran below 85% of its rate while busy: "
        "forwarding was likely CPU-bound",
        f"ovs-vswitchd waited for a CPU {ovs_wait:.0%} of the time (limit {analysis.MAX_OVS_WAIT:.0%}): "
        "forwarding lagged",
        f"workers waited for a CPU {w_wait:.0%} of the time each (limit {analysis.MAX_WORKER_WAIT:.0%})",
        "busiest link e0_0-eth3 peaked at 1.20x its configured rate (HTB's burst and one frame allow 1.05x)",
    ]
    assert all("\n" not in r for r in f["reasons"])
    assert f["workers_cpu_percent"] is None and f["machine_busy_percent"] == 95.0
    assert f["ovs_cpu_wait_percent"] == round(100 * ovs_wait, 1)
    assert f["workers_cpu_wait_percent"] == round(100 * w_wait, 1)


@pytest.mark.parametrize("cal,cpu,capture,busiest,needle", [
    ({"classes": {"level0": {"ok": False, "measured_mbps": 25, "configured_mbps": 20, "ratio": 1.25}}},
     None, None, None, "calibration of level0"),
    (None, None, {"dropped_by_kernel": 1}, None, "capture dropped 1 packets"),
    (None, {"ovs_cores": {"mean": 0.86}}, None, None, "ovs-vswitchd used 0.86 cores"),
    (None, {"ovs_wait": {"mean": analysis.MAX_OVS_WAIT + 0.01}}, None, None, "ovs-vswitchd waited for a CPU"),
    (None, {"workers_wait": {"mean": analysis.MAX_WORKER_WAIT + 0.01}}, None, None, "workers waited for a CPU"),
    (None, None, None, {"intf": "x", "peak_ratio": 1.06}, "busiest link x peaked"),
])
def test_fidelity_each_invariant_alone(cal, cpu, capture, busiest, needle):
    f = analysis.fidelity(cal or GOOD_CAL, {**GOOD_CPU, **(cpu or {})}, capture or {"dropped_by_kernel": 0},
                          busiest or GOOD_BUSIEST)
    assert f["faithful"] is False and len(f["reasons"]) == 1 and needle in f["reasons"][0]
    assert f["unverified"] == []


def test_a_busy_ovs_that_kept_the_links_full_is_a_note_not_a_failure():
    """FIDELITY #16: OVS's forwarding thread takes idle CPU; it fell behind only if the busiest
    link ran below its rate while busy."""
    cpu = {**GOOD_CPU, "ovs_cores": {"mean": 0.93}}
    kept = {"intf": "a1_2-eth2", "peak_ratio": 0.99, "configured_mbps": 20, "busy_mean_mbps": 18.6}
    f = analysis.fidelity(GOOD_CAL, cpu, {"dropped_by_kernel": 0}, kept)
    assert f["faithful"] is True and f["reasons"] == []
    assert f["notes"] == ["ovs-vswitchd used 0.93 cores on average, but the busiest link still ran at 93% of its "
                          "rate while busy: forwarding kept up"]
    lagged = {**kept, "busy_mean_mbps": 15.0}
    f = analysis.fidelity(GOOD_CAL, cpu, {"dropped_by_kernel": 0}, lagged)
    assert f["faithful"] is False and "forwarding was likely CPU-bound" in f["reasons"][0]


def test_forwarding_wait_takes_the_samples_that_overlap_traffic():
    """Issue #21: 32 ranks' top-k selections kept both cores busy while no packet flowed (every
    rank waits out its charge before it sends); the wait over the samples with traffic is
    reported beside the whole iterations' one."""
    cpu = {"interval": 0.5, "series": {"t": [100.5, 101.0, 101.5, 102.0, 102.5],
                                       "ovs_wait": [0.9, 0.9, 0.9, 0.1, None]}}
    traffic = {"t0": 100.0, "bin": 0.5, "busy": [3, 4]}  # payload in [101.5, 102.5)
    # the sample over (101.5, 102.0] overlaps it, the one over (102.0, 102.5] has no value, the
    # one over (101.0, 101.5] only touches it
    assert analysis.forwarding_wait(cpu, traffic) == pytest.approx(0.1)
    assert analysis.forwarding_wait(cpu, {"t0": 100.0, "bin": 0.5, "busy": [0]}) == pytest.approx(0.9)
    assert analysis.forwarding_wait(cpu, {"t0": 200.0, "bin": 0.5, "busy": [0]}) is None  # none overlaps
    assert analysis.forwarding_wait({"ovs_wait": {"mean": 0.3}}, traffic) is None  # no series: older runs
    assert analysis.forwarding_wait(cpu, None) is None and analysis.forwarding_wait(cpu, {**traffic, "busy": []}) is None

    # reported beside the whole iterations' wait, which alone decides (FIDELITY #18: half-second
    # samples over-count a short sync's forwarding wait)
    waited = {**GOOD_CPU, "ovs_wait": {"mean": 0.1}, **cpu}
    f = analysis.fidelity(GOOD_CAL, waited, {"dropped_by_kernel": 0}, GOOD_BUSIEST,
                          traffic={"t0": 100.0, "bin": 0.5, "busy": [0, 1]})
    assert f["faithful"] is True and f["ovs_cpu_wait_forwarding_percent"] == 90.0 and f["reasons"] == []
    f = analysis.fidelity(GOOD_CAL, {**waited, "ovs_wait": {"mean": 0.4}}, {"dropped_by_kernel": 0}, GOOD_BUSIEST,
                          traffic=traffic)
    assert f["faithful"] is False and f["ovs_cpu_wait_forwarding_percent"] == 10.0
    assert f["reasons"] == ["ovs-vswitchd waited for a CPU 40% of the time (limit 15%): forwarding lagged"]
    f = analysis.fidelity(GOOD_CAL, {**GOOD_CPU, "ovs_wait": {"mean": 0.4}}, {"dropped_by_kernel": 0}, GOOD_BUSIEST,
                          traffic=traffic)
    assert "ovs_cpu_wait_forwarding_percent" not in f  # no series: a run recorded before


def test_a_cpu_failure_proposes_a_dilation_and_a_larger_mtu_for_bulk_traffic():
    """Issue #21: the runner proposes what would make the run faithful; no proposal otherwise."""
    assert analysis.cpu_proposal(0.5, 0.0, 0.0, GOOD_BUSIEST) is None
    assert analysis.cpu_proposal(None, None, None, None) is None
    # the worst figure decides: workers waited 0.8 / 0.5 = 1.6x, ovs 0.18 / 0.15 = 1.2x
    p = analysis.cpu_proposal(0.6, 0.18, 0.8, {"payload_per_frame": 800.0})
    assert p["dilation_x"] == 1.6 and p["from"] == "the workers' wait" and p["mtu"] is False
    assert p["factors"] == {"ovs-vswitchd's wait": 1.2, "the workers' wait": 1.6}
    assert "mtu" not in p["text"] and "1.6x this run's" in p["text"]
    # ovs's cores count only where the busiest link lagged (FIDELITY #16), rounded up to a tenth
    lagged = {"configured_mbps": 20, "busy_mean_mbps": 15.0, "payload_per_frame": 8900.0}
    p = analysis.cpu_proposal(0.95, 0.0, 0.0, lagged)
    assert p["dilation_x"] == 1.2 and p["mtu"] is True and "a larger `mtu`" in p["text"]
    assert analysis.cpu_proposal(0.95, 0.0, 0.0, {**lagged, "busy_mean_mbps": 19.0}) is None
    # a failed verdict carries it as a note, a faithful one has none
    f = analysis.fidelity(GOOD_CAL, {**GOOD_CPU, "ovs_wait": {"mean": 0.3}}, {"dropped_by_kernel": 0}, GOOD_BUSIEST)
    assert f["faithful"] is False and f["proposal"]["dilation_x"] == 2.0 and f["notes"][-1].startswith("proposed: ")
    assert "proposal" not in analysis.fidelity(GOOD_CAL, GOOD_CPU, {"dropped_by_kernel": 0}, GOOD_BUSIEST)


def test_a_switch_that_waited_behind_the_workers_is_proposed_realtime_priority():
    """Issue #21: ovs-vswitchd waited while wanting well under a core (gTop-k at P = 32: ran
    11%, waited 39%) -> switch_priority realtime is named beside the dilation; not where it
    wanted about a core (the forest's: ran 22%, waited 75%), not where it waited within its
    limit, not when it already ran so."""
    p = analysis.cpu_proposal(0.11, 0.39, 0.26, GOOD_BUSIEST)
    assert p["switch_priority"] is True and "--switch-priority realtime" in p["text"]
    assert p["dilation_x"] == 2.6  # still proposed: either lever, checked by a rerun
    assert "switch_priority" not in analysis.cpu_proposal(0.22, 0.75, 0.18, GOOD_BUSIEST)
    assert "switch_priority" not in analysis.cpu_proposal(0.46, 0.45, 0.18, GOOD_BUSIEST)
    assert "switch_priority" not in analysis.cpu_proposal(0.11, 0.39, 0.26, GOOD_BUSIEST, switch_priority="realtime")
    assert "switch_priority" not in analysis.cpu_proposal(0.11, 0.0, 0.8, GOOD_BUSIEST)
    assert "switch_priority" not in analysis.cpu_proposal(0.11, 0.39, 0.26, GOOD_BUSIEST, switch_priority=None)
    f = analysis.fidelity(GOOD_CAL, GOOD_CPU, {"dropped_by_kernel": 0}, GOOD_BUSIEST, switch_priority="realtime")
    assert f["switch_priority"] == "realtime" and f["faithful"] is True
    assert "switch_priority" not in analysis.fidelity(GOOD_CAL, GOOD_CPU, {"dropped_by_kernel": 0}, GOOD_BUSIEST)


def test_a_real_setting_run_is_proposed_a_larger_start_up_not_slower_links():
    """Slower links leave a real-setting run's per-message cost as it is: a layer-wise run that
    stands for one is proposed `--dilation-x`, D times the one it ran with."""
    lagged = {"configured_mbps": 20, "busy_mean_mbps": 15.0, "payload_per_frame": 800.0}
    p = analysis.cpu_proposal(0.95, 0.0, 0.0, lagged, startup_x=2.0)
    assert p["dilation_x"] == 1.2 and "--dilation-x 2.4" in p["text"] and "--bw" not in p["text"]
    assert "--bw / 1.2" in analysis.cpu_proposal(0.95, 0.0, 0.0, lagged)["text"]
    wfbp, ring = base.get("wfbp"), base.get("ring")
    cfg = {"real_setting": {"alpha": 1e-3, "beta": 1e-9, "dilation_x": 2}}
    assert analysis._startup_x(cfg, wfbp) == 2.0 and analysis._startup_x(cfg, ring) is None
    assert analysis._startup_x({"real_setting": {"alpha": 1e-3, "beta": 1e-9}}, wfbp) == 1.0
    assert analysis._startup_x({"real_setting": None}, wfbp) is None  # planned on the measured link alone


def test_fidelity_thresholds_are_inclusive():
    f = analysis.fidelity(GOOD_CAL, {"ovs_cores": {"mean": 0.85}, "ovs_wait": {"mean": analysis.MAX_OVS_WAIT},
                                     "workers_wait": {"mean": analysis.MAX_WORKER_WAIT}}, {"dropped_by_kernel": 0},
                          {"intf": "x", "peak_ratio": 1.05})
    assert f["faithful"] is True


# ---- network counters ---------------------------------------------------------------------------
TC_JSON = json.dumps([
    {"kind": "htb", "handle": "5:", "root": True, "dev": "s0_0-eth1", "drops": 3, "bytes": 10, "packets": 1},
    {"kind": "htb", "handle": "5:", "root": True, "dev": "s0_0-eth2", "drops": 0},
    {"kind": "netem", "handle": "10:", "parent": "5:1", "dev": "s0_0-eth1", "drops": 99},  # not root
    {"kind": "ingress", "handle": "ffff:", "parent": "ffff:fff1", "dev": "s0_0-eth1", "drops": 5},
    {"kind": "noqueue", "handle": "0:", "root": True, "dev": "lo", "drops": 7},  # not ours
    {"kind": "htb", "handle": "5:", "root": True, "dev": "h00-eth0"},  # no drops field
])


def test_qdisc_drops():
    names = {"s0_0-eth1", "s0_0-eth2", "h00-eth0"}
    assert network.qdisc_drops(TC_JSON, names) == {"s0_0-eth1": 3, "s0_0-eth2": 0, "h00-eth0": 0}
    assert network.qdisc_drops(TC_JSON, {"other"}) == {}
    for bad in ("", None, "not json", "[{"):
        assert network.qdisc_drops(bad, names) == {}


SNMP = """Ip: Forwarding DefaultTTL InReceives
Ip: 1 64 1000
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 10 5 0 0 2 1000 900 7 0 3 0
Udp: InDatagrams NoPorts
Udp: 5 0
TcpExt: SyncookiesSent TCPTimeouts TCPLossProbes TCPFastRetrans TCPOFOQueue TCPRcvQDrop TCPSpuriousRTOs TCPDSACKRecv TCPDSACKOldSent
TcpExt: 0 2 4 6 8 1 0 3 5
IpExt: InNoRoutes InTruncatedPkts
IpExt: 0 0
"""


def test_parse_snmp():
    assert network.parse_snmp(SNMP) == {
        "OutSegs": 900, "RetransSegs": 7, "TCPTimeouts": 2, "TCPLossProbes": 4, "TCPFastRetrans": 6,
        "TCPOFOQueue": 8, "TCPRcvQDrop": 1, "TCPSpuriousRTOs": 0, "TCPDSACKRecv": 3, "TCPDSACKOldSent": 5}
    assert set(network.parse_snmp(SNMP)) <= set(network.TCP_KEYS)
    assert network.parse_snmp("") == {}
    # a truncated value line (header and values differ in length) is skipped, not misaligned
    assert network.parse_snmp("Tcp: RtoAlgorithm RetransSegs\nTcp: 1\n") == {}


def test_drop_delta():
    before = {"qdisc": {"a": 5, "b": 1}, "ovs": {"s": 2},
              "tcp": {"h1": {"RetransSegs": 10, "OutSegs": 100}, "h2": {"RetransSegs": 1}}}
    after = {"qdisc": {"a": 8, "b": 1, "c": 4}, "ovs": {"s": 2, "t": 1},
             "tcp": {"h1": {"RetransSegs": 12, "OutSegs": 150}, "h2": {"RetransSegs": 4}, "h3": {"OutSegs": 7}}}
    d = network.drop_delta(before, after)
    assert d["qdisc"] == {"a": 3, "c": 4}  # unchanged counters left out
    assert d["ovs"] == {"t": 1}
    assert d["total"] == 8
    assert d["tcp"] == {"RetransSegs": 2 + 3, "OutSegs": 50 + 7}
    assert network.drop_delta({}, {}) == {"qdisc": {}, "ovs": {}, "total": 0, "tcp": {}}
    # a counter that went down (interface recreated) is not a negative drop
    assert network.drop_delta({"qdisc": {"a": 9}}, {"qdisc": {"a": 2}})["total"] == 0


def test_host_commands_put_arp_and_routes_in_one_ip_batch():
    """Fat-Tree k=6 needs 53 static ARP entries per host: as one shell line (over 4,600
    characters) Mininet's pty cut it at 4095 and `ip neigh` failed. They go to `ip -batch`."""
    t = build("fattree,k=6")
    shell, batch = network.host_commands(t, "h0_0_2", 9000, relay=False)
    assert shell[0] == "sysctl -qw net.ipv4.ip_forward=0"
    assert "ethtool -K h0_0_2-eth0 tx off tso off gso off gro off >/dev/null 2>&1" in shell
    assert batch[:2] == ["link set h0_0_2-eth0 mtu 9000", "addr replace 10.0.0.2/8 dev h0_0_2-eth0"]
    neigh = [x for x in batch if x.startswith("neigh replace ")]
    assert len(neigh) == 53 and neigh[0] == "neigh replace 10.0.0.3 lladdr " + t.intfs["h0_0_3-eth0"].mac + \
        " dev h0_0_2-eth0 nud permanent"
    assert not any(x.startswith("ip ") for x in batch)  # `ip -batch` lines name no program
    b = build("bcube,n=4,k=3")
    shell, batch = network.host_commands(b, "h000", 1500, relay=True)
    assert shell[0] == "sysctl -qw net.ipv4.ip_forward=1"
    routes = [x for x in batch if x.startswith("route replace ")]
    assert len(routes) == len(b.routes["h000"]) == 180
    r = b.routes["h000"][0]
    assert routes[0] == f"route replace {r.dst} via {r.via} dev {r.dev} onlink src {r.src}"


# ---- calibration pairs --------------------------------------------------------------------------
def test_calibration_pairs_fattree4():
    t = build("fattree,k=4", bw=20, link_bw={"agg-core": 10})
    pairs = calibrate.calibration_pairs(t)
    assert pairs == {
        "host": ("h0_0_2", "h0_0_3", 20.0, ["host"]),  # same edge switch
        "edge-agg": ("h0_0_2", "h0_1_2", 20.0, ["edge-agg", "host"]),  # same pod
        "agg-core": ("h0_0_2", "h1_0_2", 10.0, ["agg-core", "edge-agg", "host"]),  # next pod
    }
    links = calibrate.path_links(t, "h0_0_2", "h1_0_2")
    assert [link.cls for link in links] == ["host", "edge-agg", "agg-core", "agg-core", "edge-agg", "host"]


def test_calibration_pairs_bcube42():
    t = build("bcube,n=4,k=2", bw=20, link_bw={"level1": 5})
    pairs = calibrate.calibration_pairs(t)
    assert pairs == {
        "level0": ("h00", "h01", 20.0, ["level0"]),
        "level1": ("h00", "h10", 5.0, ["level1"]),  # to h10's level-0 address, over level 1
    }
    # a two-hop pair relays: four host links, both classes, bottleneck the slower one
    links = calibrate.path_links(t, "h00", "h11")
    assert sorted(link.cls for link in links) == ["level0", "level0", "level1", "level1"]


# ---- expected bytes per switch port (the same flows along the controller's ECMP choices) ---------
@pytest.mark.parametrize("spec,algo", [("fattree,k=4", "ps"), ("fattree,k=4", "ring"), ("bcube,n=2,k=2", "ring"),
                                       ("bcube,n=3,k=2", "bml")])
def test_expected_port_bytes_agree_with_nic_bytes(spec, algo):
    t = build(spec)
    hosts = t.hosts()
    flows = flows_of(algo, t, hosts)
    nics = analysis.expected_nic_bytes(t, hosts, flows, syncs=2)
    ports = analysis.expected_port_bytes(t, hosts, flows, syncs=2)
    assert set(ports) == {i.name for i in t.intfs.values() if t.nodes[i.node].kind == "switch"}
    for nic, d in nics.items():  # a NIC's tx is what its switch port receives
        facing = t.peer(nic).name
        assert ports[facing] == {"rx": d["tx"], "tx": d["rx"]}
    for sw in t.switches():  # switches store nothing
        assert sum(ports[i.name]["rx"] for i in t.node_intfs(sw)) == sum(ports[i.name]["tx"] for i in t.node_intfs(sw))
    for link in t.links:  # what leaves one end of a link arrives at the other
        for a, b in ((link.a, link.b), (link.b, link.a)):
            if a in ports and b in ports:
                assert ports[a]["tx"] == ports[b]["rx"]


# ---- runs that stopped part way (SIGTERM, Ctrl-C, a crash) ---------------------------------------
def test_sync_times_complete_syncs_count_warmup_and_end_at_the_last_one(tmp_path):
    write_log(tmp_path, 0, [it(0, 0, 1, 2, warmup=True), it(1, 3, 4, 5), it(2, 6, 7, 8.0)])
    write_log(tmp_path, 1, [it(0, 0, 1, 2.5, warmup=True), it(1, 3, 4, 5.5)])  # stopped during iteration 2
    write_log(tmp_path, 2, [it(0, 0, 1, 2, server=True), it(1, 3, 4, 5.7, server=True)])
    r = analysis.sync_times(tmp_path, workers=2)
    assert (r["complete_syncs"], r["complete_iters"]) == (2, 1)
    assert r["complete_until"] == 5.7  # the last t_done of iteration 1, server included
    assert analysis.sync_times(tmp_path / "none", workers=2)["complete_until"] is None


T0 = 1_700_000_000.0


def pcap_bytes(records, nano=False) -> bytes:
    """Classic pcap, LINUX_SLL2; records: (timestamp, captured bytes, original length)."""
    unit = 10**9 if nano else 10**6
    out = [struct.pack("<IHHiIII", 0xA1B23C4D if nano else 0xA1B2C3D4, 2, 4, 0, 0, 128, 276)]
    for t, raw, orig in records:
        sec = int(t)
        out.append(struct.pack("<IIII", sec, int(round((t - sec) * unit)), len(raw), orig) + raw)
    return b"".join(out)


def tcp_record(t, ifindex, pkttype, src, dst, sport, dport, seq, payload):
    """One TCP segment as tcpdump -i any -s 128 writes it: headers captured, payload only counted."""
    sll2 = struct.pack("!HHIHBB8s", 0x0800, 0, ifindex, 1, pkttype, 6, b"\x02\x00\x00\x00\x00\x01\x00\x00")
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + payload, 0, 0x4000, 64, 6, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, 0, 5 << 4, 0x10, 65535, 0, 0)
    raw = sll2 + ip + tcp
    return t, raw, len(raw) + payload


def test_pcap_until_keeps_records_up_to_the_cut_even_out_of_order(tmp_path):
    recs = [tcp_record(T0 + t, 11, 0, "10.0.0.1", "10.0.0.2", 40000, 5000, i, 100)
            for i, t in enumerate([1.0, 3.0, 2.0, 2.5, 4.0])]
    for nano in (False, True):
        src, dst = tmp_path / f"in{nano}.pcap", tmp_path / f"out{nano}.pcap"
        src.write_bytes(pcap_bytes(recs, nano))
        assert analysis.pcap_until(src, dst, T0 + 2.5) == 3
        assert dst.read_bytes() == pcap_bytes([recs[0], recs[2], recs[3]], nano)
    (tmp_path / "head.pcap").write_bytes(pcap_bytes([]))
    assert analysis.pcap_until(tmp_path / "head.pcap", tmp_path / "o.pcap", T0) == 0
    (tmp_path / "bad.pcap").write_bytes(b"\x0a\x0d\x0d\x0a" + bytes(40))  # pcapng
    with pytest.raises(ValueError, match="not a classic pcap"):
        analysis.pcap_until(tmp_path / "bad.pcap", tmp_path / "o.pcap", T0)


def interrupted_run_folder(root, with_summary_entry=False):
    """An experiment folder as a SIGTERM left it: ring on BCube(4,1), 1 warmup + 5 iterations
    planned; iterations 0 (warmup), 1 and 2 finished on every worker, iteration 3 was cut
    half way (half of its bytes are in the capture, no worker logged it). Bytes in the
    capture: exactly the closed form per sync, at the switch port of each end."""
    t = build("bcube,n=4,k=1", bw=20)
    hosts = t.hosts()
    ctx = base.PlanContext(workers=4, layer_sizes=(ELEMENTS,), nics=1, topology=t, hosts=tuple(hosts))
    algo, plan = base.plan_for("ring", ctx)
    flows = algo.traffic(plan)
    folder = root / "20260101-000000-exp"
    rdir = folder / "01-bcube-4-1-ring-synthetic"
    (rdir / "workers").mkdir(parents=True)
    (rdir / "topology.json").write_text(json.dumps(t.to_dict()))
    (rdir / "job.json").write_text(json.dumps({
        "algorithm": "ring", "plan": plan, "workers": 4, "servers": 0, "hosts": hosts, "iters": 5, "warmup": 1,
        "model": {"spec": "synthetic,mb=1", "layers": [["layer0", ELEMENTS, 0.0]]}}, default=list))
    (rdir / "run.json").write_text(json.dumps({"status": "failed", "error": "interrupted (SIGTERM)"}))
    ports = [i.name for i in t.intfs.values() if t.nodes[i.node].kind == "switch"]
    ifindex = {name: 11 + n for n, name in enumerate(ports)}
    (rdir / "ifindex.json").write_text(json.dumps({v: k for k, v in ifindex.items()}))
    records, seq = [], {}
    for sync, share in ((0, 1.0), (1, 1.0), (2, 1.0), (3, 0.5)):
        for f in flows:
            src, dst = t.host_nics(hosts[f.src])[0], t.host_nics(hosts[f.dst])[0]
            left, k = int(f.payload * share), 0
            while left > 0:
                seg = min(left, 60000)
                for port, pkttype in ((t.peer(src.name).name, 0), (t.peer(dst.name).name, 4)):
                    records.append(tcp_record(T0 + 10 * sync + 1 + k * 1e-3, ifindex[port], pkttype, src.ip, dst.ip,
                                              40000 + f.src, 5000 + f.dst, seq.get(f.src, 0), seg))
                seq[f.src] = seq.get(f.src, 0) + seg
                left -= seg
                k += 1
    (rdir / "capture.pcap").write_bytes(pcap_bytes(records))
    (rdir / "capture.json").write_text(json.dumps({"captured": len(records), "dropped_by_kernel": 0, "counters": {}}))
    for rank in range(4):
        write_log(rdir / "workers", rank, [it(i, T0 + 10 * i, T0 + 10 * i + 0.5, T0 + 10 * i + 6 + rank / 10,
                                              warmup=i == 0) for i in range(3)])
    runs = [{"dir": rdir.name, "topology": "bcube(4,1)", "algorithm": "ring"}] if with_summary_entry else []
    (folder / "summary.json").write_text(json.dumps({"status": "failed", "error": "interrupted (SIGTERM)",
                                                     "experiment": "exp", "networks": [], "runs": runs}))
    return folder, rdir, flows


def test_interrupted_run_is_judged_over_its_completed_syncs(tmp_path):
    folder, rdir, flows = interrupted_run_folder(tmp_path)
    rec = analysis.analyze_run(rdir)
    assert rec["status"] == "failed"
    assert rec["error"] == "interrupted (SIGTERM); 2 of 5 iterations completed"
    assert (rec["iters_completed"], rec["syncs_counted"]) == (2, 3)
    assert len(rec["sync_seconds"]) == 2 and rec["correct"] is True
    assert rec["capture_cut_at"] == pytest.approx(T0 + 20 + 6.3)
    # expected = closed form x 3 completed syncs; the half iteration after the cut is not counted
    pr = rec["payload_ratio"]
    assert pr["min"] == pytest.approx(1.0) and pr["max"] == pytest.approx(1.0) and pr["unexpected"] == []
    assert rec["payload_ok"] is True and rec["links_ok"] is True
    per_nic = 2 * 3 * MIB // 4
    assert rec["payload_bytes_expected"]["h0-eth0"] == {"tx": 3 * per_nic, "rx": 3 * per_nic}
    assert not list(rdir.glob("*completed*")) and (rdir / "capture.pcap").exists()  # the cut copy is gone


def test_analyze_recovers_an_interrupted_run_its_summary_did_not_list(tmp_path, capsys):
    """Issue #6: SIGTERM left the raw files but summary.json listed no run; `syncbed analyze`
    recovered nothing. It now finds the run folder and lists the run with what finished."""
    from emulation import cli

    folder, rdir, _ = interrupted_run_folder(tmp_path)
    assert cli.main(["analyze", str(folder)]) == 0
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["error"] == "interrupted (SIGTERM)"
    [run] = summary["runs"]
    assert run["dir"] == rdir.name and run["status"] == "failed"
    assert run["iters_completed"] == 2 and run["payload_ok"] is True
    assert (folder / "report.md").exists()
    assert "analysing 01-bcube-4-1-ring-synthetic" in capsys.readouterr().out


def test_logged_flows_sum_what_ranks_sent_in_the_counted_iterations(tmp_path):
    logs = tmp_path / "workers"
    logs.mkdir()
    (logs / "rank0.jsonl").write_text("\n".join(json.dumps(e) for e in [
        {"event": "iter", "iter": 0, "sent": [[1, 0, 100, 2]]},
        {"event": "iter", "iter": 1, "sent": [[1, 0, 40, 1], [2, 0, 8, 1]]},
        {"event": "iter", "iter": 2, "sent": [[1, 0, 999, 9]]}]) + "\n")
    (logs / "rank1.jsonl").write_text(json.dumps({"event": "iter", "iter": 0, "sent": [[0, 0, 5, 1]]}) + "\n")
    flows = analysis.logged_flows(logs, syncs=2)  # iteration 2 did not complete everywhere
    assert flows == [base.Flow(0, 1, 0, 140, 3), base.Flow(0, 2, 0, 8, 1), base.Flow(1, 0, 0, 5, 1)]


# ---- the per-step bound ---------------------------------------------------------------
def test_step_bound_sums_each_steps_busiest_link_and_names_a_hash_collision():
    """Two steps on Fat-Tree k=4 with hash ECMP: step 0 sends h0_0_2 -> h1_0_2 and h0_0_3 ->
    h1_0_3 at once (each host link carries one flow: endpoint bound B/bw); step 1 one flow.
    The whole-sync bound spreads step 0's bytes over the sync; the per-step bound adds the
    steps. Where both flows of step 0 hash onto one uplink, that link is named with its step."""
    from emulation.expected import step_bound

    t = build("fattree,k=4", bw=10, ecmp="hash")
    hosts = t.hosts()
    B = 1_000_000
    steps = [[base.Flow(0, 4, 0, B, 0), base.Flow(1, 5, 0, B, 0)], [base.Flow(0, 4, 0, B, 0)]]
    sb = step_bound(t, hosts, steps)
    host = B / (10e6 / 8)
    assert sb["steps"] == 2 and sb["per_step"][1]["seconds"] == pytest.approx(host)
    links0 = [l for l, _ in t.route(hosts[0], t.host_nics(hosts[4])[0].ip)]
    links1 = [l for l, _ in t.route(hosts[1], t.host_nics(hosts[5])[0].ip)]
    common = set(links0) & set(links1)
    if common:  # the two flows hashed onto a shared link: twice the bytes on it in step 0
        assert sb["per_step"][0]["seconds"] == pytest.approx(2 * host)
        assert {c["link"] for c in sb["collisions"]} == common and all(c["step"] == 0 for c in sb["collisions"])
    else:
        assert sb["per_step"][0]["seconds"] == pytest.approx(host) and sb["collisions"] == []
    assert sb["seconds"] == pytest.approx(sb["per_step"][0]["seconds"] + sb["per_step"][1]["seconds"])
    whole = analysis.bound_seconds(t, analysis.expected_port_bytes(t, hosts, [f for s in steps for f in s]))
    assert sb["seconds"] >= whole - 1e-12


def test_step_bound_finds_a_collision_two_level_routing_avoids():
    """Over all pairs between pods 0 and 1 in one step, hash ECMP puts two flows on one uplink
    somewhere; Al-Fares' two-level routing spreads them (no collision)."""
    from emulation.expected import step_bound

    found = {}
    for ecmp in ("hash", "two-level"):
        t = build("fattree,k=4", bw=10, ecmp=ecmp)
        hosts = t.hosts()
        step = [base.Flow(i, 4 + i, 0, 1000, 0) for i in range(4)]
        found[ecmp] = step_bound(t, hosts, [step])["collisions"]
    assert found["two-level"] == []
    assert found["hash"] and all(c["flows"] >= 2 and c["seconds"] > c["endpoint_seconds"] for c in found["hash"])


def test_every_host_pins_its_tcp_congestion_control_and_a_refusal_fails_its_configuration():
    """A namespace inherits the machine's default congestion control (BBR on the machines of
    docs/results, CUBIC on Debian's kernels): every host sets the run's `tcp_cc` before its
    workers make their sockets, and a refusal prints the marker _configure_hosts fails on."""
    t = build("fattree,k=4")
    shell, _ = network.host_commands(t, "h0_0_2", 9000, relay=False)
    cc = [x for x in shell if "tcp_congestion_control" in x]
    assert cc == ["sysctl -qw net.ipv4.tcp_congestion_control=cubic 2>/dev/null "
                  "|| echo syncbed-failed: tcp_congestion_control=cubic refused"]
    shell, _ = network.host_commands(t, "h0_0_2", 9000, relay=False, tcp_cc="bbr")
    assert any(x.startswith("sysctl -qw net.ipv4.tcp_congestion_control=bbr ") for x in shell)


def test_a_minimum_rto_is_set_in_each_host_only_when_asked_and_a_kernel_without_it_is_refused(tmp_path):
    """`tcp_rto_min_ms` (docs/FIDELITY.md #23): the namespace's sysctl in microseconds, its
    refusal failing the configuration; nothing when not given; a kernel without the sysctl
    (before Linux 6.11) is refused by name before anything starts."""
    t = build("fattree,k=4")
    shell, _ = network.host_commands(t, "h0_0_2", 9000, relay=False)
    assert not any("rto_min" in x for x in shell)
    shell, _ = network.host_commands(t, "h0_0_2", 9000, relay=False, tcp_rto_min_ms=2000)
    assert [x for x in shell if "rto_min" in x] == [
        "sysctl -qw net.ipv4.tcp_rto_min_us=2000000 2>/dev/null || echo syncbed-failed: tcp_rto_min_us refused"]
    assert network.tcp_rto_min_problem(None, str(tmp_path / "absent")) is None
    assert network.tcp_rto_min_problem(2000, str(tmp_path)) is None
    problem = network.tcp_rto_min_problem(2000, str(tmp_path / "absent"))
    assert problem.startswith("tcp_rto_min_ms=2000 needs ") and "Linux 6.11 or later" in problem
    assert "omit it for the kernel's 200 ms" in problem


def test_a_congestion_control_the_kernel_lacks_or_does_not_allow_is_named_with_the_valid_ones():
    assert network.tcp_cc_problem("cubic", "reno bbr cubic", "reno bbr cubic") is None
    assert network.tcp_cc_problem("dctcp", "reno bbr cubic", "reno bbr cubic") == (
        "tcp_cc=dctcp is not available in this kernel; available: reno, bbr, cubic")
    problem = network.tcp_cc_problem("cubic", "reno bbr cubic", "reno bbr")
    assert problem.startswith("tcp_cc=cubic is available but not allowed") and "make setup" in problem
