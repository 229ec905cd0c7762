"""timeline.json (emulation/timeline.py): a Chrome trace a person opens in Perfetto, checked
against the worker logs it was built from: valid trace JSON, one process per rank, each
thread's slices in order and properly nested, every iteration's backward and sync slice equal
to its `iter` event's t_start..t_ready..t_done, every `stage` event present with its times,
counters from the capture's per-link series; `analyze_run` writes it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from emulation import analysis, timeline
from workloads.algorithms import base
from workloads.eventlog import read_logs

pytestmark = pytest.mark.unit

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
KEPT_RUN = RESULTS / "bml-bcube32-vs-ps-fattree" / "01-bcube-3-2-bml-synthetic"  # BML: two trees at once
T = 1_800_000_000.0  # wall clock of the hand-written run


def _iter(it, t_start, t_ready, t_done, warmup=False, observed=None):
    ev = {"event": "iter", "iter": it, "warmup": warmup, "t_start": t_start, "t_ready": t_ready,
          "t_done": t_done, "sent": [[1, 0, 4000, 2]], "correct": True, "max_abs_err": 0.0}
    if observed:
        ev["observed"] = observed
    return ev


def _stage(it, tree, stage, phase, t0, t1, nic=0):
    return {"event": "stage", "iter": it, "tree": tree, "stage": stage, "nic": nic, "phase": phase,
            "t0": t0, "t1": t1, "bytes": 2000}


def hand_written_run(folder: Path) -> Path:
    """Two ranks, two iterations: rank 0 runs a ring (stages nest in its sync), rank 1 a
    two-tree schedule whose trees overlap (BML-like), with a sparsifier's observed seconds, which
    the job's algorithm (topk) declares as compute durations (`Algorithm.compute`)."""
    workers = folder / "workers"
    workers.mkdir(parents=True)
    logs = {
        0: [{"event": "start", "rank": 0, "host": "h00", "pid": 1, "t": T},
            {"event": "connected", "t": T + 0.1},
            _stage(0, 0, 0, "reduce_scatter", T + 1.0, T + 1.2), _stage(0, 0, 1, "all_gather", T + 1.2, T + 1.4),
            _iter(0, T + 0.5, T + 1.0, T + 1.5, warmup=True),
            _stage(1, 0, 0, "reduce_scatter", T + 2.5, T + 2.6), _stage(1, 0, 1, "all_gather", T + 2.6, T + 2.8),
            _iter(1, T + 2.0, T + 2.5, T + 3.0, observed={"sparsify_seconds": 0.05, "merge_seconds": 0.1}),
            {"event": "done", "t": T + 3.1}],
        1: [{"event": "start", "rank": 1, "host": "h01", "pid": 2, "t": T},
            _stage(0, 0, 0, "aggregate", T + 1.0, T + 1.3), _stage(0, 1, 0, "aggregate", T + 1.1, T + 1.4, nic=1),
            _iter(0, T + 0.5, T + 1.0, T + 1.5, warmup=True),
            _stage(1, 0, 0, "aggregate", T + 2.5, T + 2.9), _stage(1, 1, 0, "aggregate", T + 2.6, T + 2.95, nic=1),
            "torn line {",
            _iter(1, T + 2.1, T + 2.5, T + 3.0)],
    }
    for rank, events in logs.items():
        (workers / f"rank{rank}.jsonl").write_text(
            "\n".join(e if isinstance(e, str) else json.dumps(e) for e in events) + "\n")
    (folder / "job.json").write_text(json.dumps({"algorithm": "topk", "algo_spec": "topk", "hosts": ["h00", "h01"]}))
    (folder / "capture_counts.json").write_text(json.dumps({"measured": {"rates": {
        "t0": T + 0.5, "bin": 0.5, "links": {"s0-eth1:rx": [0, 62500, 125000], "s0-eth2:tx": [1000, 0, 0]}}}}))
    return folder


def x_events(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def check_trace(trace: dict, logs: dict) -> None:
    """What any timeline must satisfy against the logs it came from."""
    json.loads(json.dumps(trace))  # JSON, no NaN or objects
    assert trace["displayTimeUnit"] == "ms" and isinstance(trace["traceEvents"], list)
    for e in trace["traceEvents"]:
        assert e["ph"] in ("X", "M", "C") and isinstance(e["pid"], int) and isinstance(e["name"], str)
        if e["ph"] in ("X", "C"):
            assert e["ts"] >= 0
        if e["ph"] == "X":
            assert e["dur"] >= 0 and isinstance(e["tid"], int)
    # one process per rank, named
    names = [e for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
    rank_pids = [e["pid"] for e in names if e["pid"] != timeline.NET_PID]
    assert sorted(rank_pids) == sorted(logs) and len(set(rank_pids)) == len(rank_pids)
    assert all(e["args"]["name"].startswith(f"rank {e['pid']}") for e in names if e["pid"] != timeline.NET_PID)
    # per rank, slices in time order; per thread, properly nested (what viewers need)
    by_pid, by_thread = {}, {}
    for e in x_events(trace):
        by_pid.setdefault(e["pid"], []).append(e["ts"])
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for ts in by_pid.values():
        assert ts == sorted(ts)
    for evs in by_thread.values():
        open_ends: list[float] = []
        for e in evs:
            end = e["ts"] + e["dur"]
            while open_ends and open_ends[-1] <= e["ts"] + 1e-6:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1] + 1e-6, f"{e['name']} overlaps its parent"
            open_ends.append(end)
    # every iteration's backward and sync equal the log's times; every stage is there
    t0 = trace["otherData"]["t0_epoch"]

    def us(t):
        return (t - t0) * 1e6

    slices = {(e["pid"], e["cat"], e["args"].get("iter"), e["name"]): e for e in x_events(trace)}
    for rank, events in logs.items():
        for ev in events:
            if ev.get("event") == "iter":
                sync = slices[(rank, "sync", ev["iter"], "sync")]
                assert sync["ts"] == pytest.approx(us(ev["t_ready"]), abs=1e-3)
                assert sync["ts"] + sync["dur"] == pytest.approx(us(ev["t_done"]), abs=2e-3)
                assert sync["args"]["sent_bytes"] == sum(s[2] for s in ev["sent"])
                back = slices[(rank, "backward", ev["iter"], "backward")]
                assert back["ts"] == pytest.approx(us(ev["t_start"]), abs=1e-3)
                assert back["ts"] + back["dur"] == pytest.approx(us(ev["t_ready"]), abs=2e-3)
            elif ev.get("event") == "stage":
                match = [e for e in x_events(trace) if e["pid"] == rank and e["cat"] == "stage"
                         and e["args"].get("iter") == ev["iter"] and e["args"].get("tree") == ev.get("tree")
                         and e["args"].get("stage") == ev.get("stage") and e["args"].get("phase") == ev["phase"]
                         and e["ts"] == pytest.approx(us(ev["t0"]), abs=1e-3)]
                assert len(match) == 1, ev
                assert match[0]["ts"] + match[0]["dur"] == pytest.approx(us(ev["t1"]), abs=2e-3)


def test_hand_written_run_gives_a_trace_that_agrees_with_its_logs(tmp_path):
    run = hand_written_run(tmp_path / "01-run")
    path = timeline.write(run)
    assert path == run / "timeline.json"
    trace = json.loads(path.read_text())  # valid JSON on disk
    logs = read_logs(run / "workers")[0]
    check_trace(trace, logs)
    assert trace["otherData"]["t0_epoch"] == T + 0.5  # the first event: rank 0's first backward (and bin 0)
    xs = x_events(trace)
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
               if e["ph"] == "M" and e["name"] == "thread_name"}
    # rank 0: the ring's steps nest in their sync, on the iteration thread
    ring = [e for e in xs if e["pid"] == 0 and e["cat"] == "stage"]
    assert {threads[(0, e["tid"])] for e in ring} == {"iteration"}
    # rank 1: tree 1 overlaps tree 0, so it has a thread of its own
    trees = {e["args"]["tree"]: threads[(1, e["tid"])] for e in xs if e["pid"] == 1 and e["cat"] == "stage"}
    assert trees == {0: "iteration", 1: "tree 1"}
    # the sparsifier's logged durations, placed at the sync's start and end and saying so
    compute = {e["name"]: e for e in xs if e["pid"] == 0 and e["cat"] == "compute"}
    assert compute["sparsify"]["ts"] == pytest.approx(2.0e6) and compute["sparsify"]["dur"] == pytest.approx(5e4)
    assert compute["merge"]["ts"] + compute["merge"]["dur"] == pytest.approx(2.5e6)
    assert "inferred" in compute["merge"]["args"]["placed"]
    # an algorithm that declares no compute durations gets no compute slices from the same logs
    assert not [s for s in timeline.slices(logs) if s["kind"] == "compute"]
    assert {s["name"] for s in timeline.slices(logs, base.get("topk").compute) if s["kind"] == "compute"} == \
        {"sparsify", "merge"}
    # the store barrier between iterations
    between = [e for e in xs if e["pid"] == 0 and e["cat"] == "between"]
    assert [(e["ts"], e["dur"]) for e in between] == [(pytest.approx(1.0e6), pytest.approx(0.5e6))]
    # process names carry the host
    assert {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
            if e["ph"] == "M" and e["name"] == "process_name"}[1] == "rank 1 (h01)"
    # counters: Mbit/s per bin of the busiest link first, closed by a zero
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    rx = [e for e in counters if e["name"] == "s0-eth1:rx Mbit/s"]
    assert [e["args"]["Mbit/s"] for e in rx] == [0.0, 1.0, 2.0, 0.0]
    assert [e["ts"] for e in rx] == [0.0, 0.5e6, 1.0e6, 1.5e6]
    assert {e["pid"] for e in counters} == {timeline.NET_PID}


def test_a_kept_run_folder_gives_a_trace_that_agrees_with_its_logs(tmp_path):
    run = tmp_path / KEPT_RUN.name
    shutil.copytree(KEPT_RUN / "workers", run / "workers")
    shutil.copy(KEPT_RUN / "job.json", run / "job.json")
    trace = json.loads(timeline.write(run).read_text())
    logs = read_logs(run / "workers")[0]
    check_trace(trace, logs)
    assert len([e for e in x_events(trace) if e["cat"] == "stage"]) == sum(
        ev.get("event") == "stage" for events in logs.values() for ev in events)


def test_analyze_run_writes_the_timeline(tmp_path):
    run = tmp_path / KEPT_RUN.name
    shutil.copytree(KEPT_RUN, run)
    (run / "timeline.json").unlink(missing_ok=True)
    analysis.analyze_run(run)
    check_trace(json.loads((run / "timeline.json").read_text()), read_logs(run / "workers")[0])


def test_link_rates_keeps_the_busiest_directions_of_the_capture_series():
    counts = SimpleNamespace(series_t0=10.0, series={(1, "rx"): np.array([5, 0, 5]), (1, "tx"): np.array([0, 0, 0]),
                                                     (2, "rx"): np.array([100, 50, 0]), (9, "rx"): np.array([999])})
    topo = SimpleNamespace(intfs={"s0-eth1": None, "s0-eth2": None})
    rates = analysis.link_rates(counts, {1: "s0-eth1", 2: "s0-eth2", 9: "lo"}, topo, top=2)
    assert rates == {"t0": 10.0, "bin": analysis.SERIES_BIN,
                     "links": {"s0-eth2:rx": [100, 50, 0], "s0-eth1:rx": [5, 0, 5]}}
    assert analysis.link_rates(SimpleNamespace(series=None, series_t0=None), {}, topo) is None


def test_a_run_without_logs_still_gives_a_valid_empty_trace(tmp_path):
    (tmp_path / "workers").mkdir()
    trace = json.loads(timeline.write(tmp_path).read_text())
    assert trace["traceEvents"] == [] and trace["displayTimeUnit"] == "ms"


def test_the_report_links_each_runs_timeline_and_says_how_to_open_it():
    from emulation.report.markdown import md_timelines

    text = "\n".join(md_timelines([("1. fattree(4) ring", "01-fattree-4-ring-synthetic/timeline.json")]))
    assert "[timeline.json](01-fattree-4-ring-synthetic/timeline.json)" in text
    assert "ui.perfetto.dev" in text and "Open trace file" in text and "chrome://tracing" in text
    assert md_timelines([]) == []
