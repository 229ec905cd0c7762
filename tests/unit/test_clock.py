"""Clock offsets between servers (`emulation.clock`, issue #22): the NTP estimate from round
trips, putting events on the first server's clock, and the verdict on whether the offsets
are known well enough. Pure, but for one local probe (a python3 child on this machine)."""
from __future__ import annotations

import random

import pytest

from emulation import clock
from emulation.clock import Offset, Sample, correct, correct_events, estimate, faithful
from workloads import eventlog

pytestmark = pytest.mark.unit


def one_line(fn, *args, match, **kw):
    with pytest.raises(ValueError) as e:
        fn(*args, **kw)
    msg = str(e.value)
    assert "\n" not in msg and match in msg, msg
    return msg


# ---- estimate ---------------------------------------------------------------------------------
def test_estimate_takes_the_shortest_round_trip():
    samples = [Sample(0.0, 105.0, 10.0), Sample(20.0, 121.5, 22.0), Sample(30.0, 140.0, 36.0)]
    off = estimate(samples)
    assert off == Offset(offset=100.5, error=1.0, rtt=2.0, n=3)
    assert off.offset == 121.5 - (20.0 + 22.0) / 2


def test_symmetric_delays_give_the_exact_offset():
    rng = random.Random(1)
    for _ in range(200):
        true = rng.uniform(-5, 5)
        t0 = rng.uniform(1e9, 2e9)
        d = rng.uniform(0, 0.01)  # the same delay out and back
        off = estimate([Sample(t0, t0 + d + true, t0 + 2 * d)])
        assert off.offset == pytest.approx(true, abs=1e-6)
        assert off.error == pytest.approx(d, abs=1e-6)


def test_asymmetric_delays_stay_within_the_bound():
    """Any split of each round trip into out and back delays: the true offset is within
    offset +- error of the estimate (the remote read happened inside the round trip)."""
    rng = random.Random(7)
    for _ in range(500):
        true = rng.uniform(-1, 1)
        samples, t = [], rng.uniform(1e9, 2e9)
        for _ in range(rng.randint(1, 20)):
            out, back = rng.expovariate(1e3), rng.expovariate(1e3)
            samples.append(Sample(t, t + out + true, t + out + back))
            t += out + back + rng.uniform(0, 0.1)
        off = estimate(samples)
        assert abs(off.offset - true) <= off.error + 1e-9
        assert off.rtt == min(s.rtt for s in samples) and off.n == len(samples)


def test_estimate_refuses_bad_samples():
    one_line(estimate, [], match="no samples")
    one_line(estimate, [Sample(2.0, 1.0, 1.0)], match="t0 <= t1")
    one_line(estimate, [Sample(0.0, float("nan"), 1.0)], match="finite times")


# ---- correct -----------------------------------------------------------------------------------
def test_correct_round_trip():
    off = Offset(2.5, 0.001, 0.002, 10)
    assert correct(12.5, off) == 10.0
    assert correct(12.5, 2.5) == 10.0
    assert correct(10.0 + off.offset, off) == 10.0  # local -> remote -> local
    one_line(correct, 1.0, "2", match="finite number of seconds")


def test_timestamp_keys_are_those_the_event_log_writes(tmp_path):
    """Every time of day the workers' event log writes is a key correct_events shifts."""
    log = eventlog.EventLog.for_rank(tmp_path, 0)
    log.start(0, "h1", 1)
    log.connected()
    log.iteration(0, False, 1.0, 2.0, 3.0, [[1, 0, 10, 1]], observed={"sparsify": 0.1}, correct=True)
    log.write({"event": "stage", "iter": 0, "phase": "push", "t0": 1.5, "t1": 1.7})
    log.train(0, 1.0, 0.5)
    log.trained(1, "x")
    log.probe([[1, 2]])
    log.error("boom")
    log.done()
    logs, _ = eventlog.read_logs(tmp_path)
    events = logs[0]
    timed = {k for ev in events for k in ev if k == "t" or k.startswith("t_") or k in ("t0", "t1")}
    assert timed == set(clock.TIMESTAMP_KEYS)


def test_correct_events_shifts_every_timestamp_and_nothing_else():
    events = [
        {"event": "start", "rank": 3, "host": "h1", "pid": 7, "t": 100.0},
        {"event": "iter", "iter": 0, "warmup": False, "t_start": 101.0, "t_ready": 102.0, "t_done": 103.5,
         "sent": [[1, 0, 4096, 2]], "observed": {"sparsify": 0.25}, "correct": True},
        {"event": "stage", "iter": 0, "phase": "push", "t0": 102.1, "t1": 102.9, "bytes": 4096},
        {"event": "iter", "iter": 1, "warmup": False, "t_start": None, "t_ready": 104.0, "t_done": 105.0},
    ]
    before = [dict(e) for e in events]
    off = Offset(100.0, 0.001, 0.002, 20)
    local = correct_events(events, off)
    assert events == before  # copies: the input is unchanged
    assert local[0] == {**events[0], "t": 0.0}
    assert [local[1][k] for k in ("t_start", "t_ready", "t_done")] == [1.0, 2.0, 3.5]
    assert local[1]["sent"] == [[1, 0, 4096, 2]] and local[1]["observed"] == {"sparsify": 0.25}
    assert (local[2]["t0"], local[2]["t1"], local[2]["bytes"]) == (pytest.approx(2.1), pytest.approx(2.9), 4096)
    assert local[3]["t_start"] is None and local[3]["t_ready"] == 4.0
    # and back: the remote clock again
    assert correct_events(local, -100.0) == events
    # sync times (differences on one clock) do not move
    assert local[1]["t_done"] - local[1]["t_ready"] == events[1]["t_done"] - events[1]["t_ready"]


def test_correct_events_puts_two_servers_on_one_clock():
    # rank 0 on the first server, rank 1 on a server whose clock runs 3 s ahead
    logs = {0: [{"event": "iter", "iter": 0, "t_start": 10.0, "t_ready": 11.0, "t_done": 12.0}],
            1: correct_events([{"event": "iter", "iter": 0, "t_start": 13.2, "t_ready": 14.5, "t_done": 15.0}],
                              Offset(3.0, 0.0005, 0.001, 20))}
    (it,) = eventlog.iteration_times(logs)
    assert it.sync == pytest.approx(12.0 - 11.5)


# ---- faithful ----------------------------------------------------------------------------------
def test_faithful_threshold():
    offs = [Offset(0.2, 0.001, 0.002, 20, "10.99.0.2"), Offset(-0.1, 0.004, 0.008, 20, "10.99.0.3")]
    ok, why = faithful(offs, 0.1)  # 5% of 100 ms = 5 ms > 4 ms
    assert ok and "10.99.0.3" in why and "\n" not in why
    ok, why = faithful(offs, 0.08)  # 4 ms: exactly at the limit is still faithful
    assert ok
    ok, why = faithful(offs, 0.05)  # 2.5 ms < 4 ms
    assert not ok and "\n" not in why
    assert "10.99.0.3" in why and "4.000 ms" in why and "2.500 ms" in why and "50.000 ms" in why
    assert faithful(offs, 0.05, limit=0.1)[0]
    assert faithful([], 0.001) == (True, "one server: every event is on one clock")


def test_faithful_names_an_unnamed_server_by_position():
    ok, why = faithful([Offset(0.0, 0.0, 0.0, 1), Offset(0.0, 0.01, 0.02, 1)], 0.1)
    assert not ok and "server #3" in why


@pytest.mark.parametrize("sync,limit,match", [(0, 0.05, "positive number"), (float("nan"), 0.05, "positive number"),
                                              (0.1, 0, "fraction between 0 and 1")])
def test_faithful_refuses_bad_input(sync, limit, match):
    one_line(faithful, [Offset(0.0, 0.0, 0.0, 1)], sync, limit=limit, match=match)


# ---- probe: one local process ------------------------------------------------------------------
def test_probe_this_machine_reads_its_own_clock():
    off = clock.probe([], n=10)
    assert off.n == 10 and off.server == "localhost"
    assert abs(off.offset) <= off.error  # the same clock: offset 0 within the bound
    assert off.error < 0.05


def test_probe_quotes_the_snippet_for_a_remote_shell():
    # like ssh: the words after the prefix are joined into one line a shell parses again
    like_ssh = ["sh", "-c", 'eval "$*"', "sh"]
    off = clock.probe(like_ssh, n=3, server="fake", shell=True)
    assert off.server == "fake" and abs(off.offset) <= off.error
    with pytest.raises(RuntimeError, match="cannot read the clock of fake"):
        clock.probe(like_ssh, n=3, server="fake", shell=False)


def test_probe_reports_a_reader_that_dies_or_hangs():
    with pytest.raises(RuntimeError, match=r"clock of x: its clock reader exited \(boom\)"):
        clock.probe(["sh", "-c", "echo boom >&2; exit 3"], n=2, server="x")
    with pytest.raises(RuntimeError, match="no answer within 0.3 s"):
        clock.probe(["sh", "-c", "exec sleep 5"], n=2, server="y", timeout=0.3)
    one_line(clock.probe, "ssh host", match="argv list")
