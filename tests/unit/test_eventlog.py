"""workloads/eventlog.py: the workers' log format, written and read by one module, and the
one definition of an iteration's sync time: max over ranks of t_done - max over ranks of
t_ready (servers included, warmup excluded)."""
from __future__ import annotations

import pytest

from workloads import eventlog
from workloads.eventlog import EventLog, IterationTimes, iteration_times, read_logs, sync_series

pytestmark = pytest.mark.unit


def it(i, t_start, t_ready, t_done, warmup=False):
    return {"event": "iter", "iter": i, "warmup": warmup, "t_start": t_start, "t_ready": t_ready, "t_done": t_done}


def test_sync_time_is_max_done_minus_max_ready_over_ranks():
    logs = {0: [it(0, 0.0, 1.0, 9.0, warmup=True), it(1, 10.0, 10.2, 12.0), it(2, 13.0, 13.5, 14.0)],
            1: [it(0, 0.0, 2.0, 3.0, warmup=True), it(1, 10.1, 10.5, 11.0), it(2, 13.2, 13.3, 14.5)],
            2: [it(1, 10.0, 10.0, 11.5)]}  # a server: its times count too
    times = iteration_times(logs)
    assert [t.iter for t in times] == [1, 2]  # warmup excluded
    assert times[0] == IterationTimes(1, first_start=10.0, start=10.1, ready=10.5, done=12.0)
    assert sync_series(logs) == [t.sync for t in times] == pytest.approx([1.5, 1.0])
    assert times[0].iteration == pytest.approx(12.0 - 10.1) and times[0].backward == pytest.approx(10.5 - 10.1)
    assert [t.iter for t in iteration_times(logs, warmup=True)] == [0, 1, 2]
    assert iteration_times(logs, warmup=True)[0].sync == 9.0 - 2.0


def test_events_without_times_and_other_kinds_are_not_timed():
    logs = {0: [{"event": "stage", "iter": 1, "t0": 0.0, "t1": 99.0}, it(1, 1.0, 2.0, 3.0),
                {"event": "iter", "iter": 1, "warmup": False, "t_ready": None, "t_done": 50.0},
                {"event": "iter", "warmup": False, "t_ready": 0.0, "t_done": 50.0}],
            1: [{"event": "iter", "iter": 1, "warmup": False, "t_ready": 2.5, "t_done": 3.5}]}
    [t] = iteration_times(logs)
    assert (t.start, t.ready, t.done, t.sync) == (1.0, 2.5, 3.5, 1.0)
    assert sync_series({}) == []


def test_what_the_writer_writes_the_reader_reads(tmp_path):
    log = EventLog.for_rank(tmp_path / "w", 3)
    log.start(3, "h03", 42)
    log.connected()
    ev = log.iteration(0, True, 1.0, 2.0, 3.0, [[0, 0, 8, 1]], observed={}, correct=True, max_abs_err=0.0)
    log.iteration(1, False, 4.0, 5.0, 6.5, [], observed={"k": 1}, checked=False)
    log.write({"event": "stage", "iter": 1, "t0": 4.0, "t1": 5.0})
    log.train(1, 0.5, 0.75)
    log.trained(2, "abc")
    log.done()
    (tmp_path / "w" / "rank5.jsonl").write_text('{"event": "start"}\n{"event": "do')  # a torn last line
    (tmp_path / "w" / "rankx.jsonl").write_text("{}\n")  # not a rank's log
    logs, torn = read_logs(tmp_path / "w")
    assert list(logs) == [3, 5] and torn == {5: 1}
    kinds = [e["event"] for e in logs[3]]
    assert kinds == ["start", "connected", "iter", "iter", "stage", "train", "trained", "done"]
    assert logs[3][2] == ev and "observed" not in ev  # empty observations are left out
    assert list(logs[3][3]) == ["event", "iter", "warmup", "t_start", "t_ready", "t_done", "sent", "observed",
                                "checked"]
    assert logs[3][0]["host"] == "h03" and logs[3][6]["params_sha1"] == "abc"
    assert sync_series(logs) == [1.5]


def test_sent_since_counts_only_the_new_bytes_per_peer_and_nic():
    before, msgs_before = {(1, 0): 100, (2, 1): 50}, {(1, 0): 2, (2, 1): 1}
    sent, msgs = {(1, 0): 180, (2, 1): 50, (0, 0): 8}, {(1, 0): 3, (2, 1): 1, (0, 0): 1}
    assert eventlog.sent_since(sent, msgs, before, msgs_before) == [[0, 0, 8, 1], [1, 0, 80, 1]]


def test_the_training_curve_is_the_train_events_in_iteration_order(tmp_path):
    log = EventLog(eventlog.log_path(tmp_path, 0))
    log.train(2, 0.5, 0.75)
    log.train(1, 0.9, 0.5)
    log.trained(2, "abc")
    logs, _ = read_logs(tmp_path)
    curve = eventlog.training_curve(logs)
    assert [(it, loss, acc) for it, loss, acc, _ in curve] == [(1, 0.9, 0.5), (2, 0.5, 0.75)]
    assert all(isinstance(t, float) for *_, t in curve)
    assert eventlog.training_curve({}) == []
