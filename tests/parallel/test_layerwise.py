"""The layer-wise algorithms (wfbp, single, fusion, mgwfbp) with real Gloo processes on localhost.

Each rank builds a GradientStream whose layers arrive over time (non-zero backward times),
runs every case and reports; the parent asserts: the result equals torch's Gloo all_reduce
of the same integer-valued gradients exactly, the bytes and sends handed to `Comm.send`
equal `traffic(plan)` per (dst, nic), the timeline events are there and ordered, and WFBP's
first all-reduce starts while backprop is still running (the overlap the paper is about).
The probe (`workloads/probe.py`) is timed on the same ring; the worker runs mgwfbp end to end.
"""
import json
import traceback
from pathlib import Path

import pytest
import torch

from workloads import eventlog, gradients, linkmodel, probe, worker
from workloads.algorithms import base
from workloads.algorithms.ring import ring_flows
from workloads.comm import Comm
from tests.parallel.spawn import spawn_ranks

pytestmark = pytest.mark.parallel

WORLDS = (1, 2, 3, 5)
SPAWN_TIMEOUT_S = 120
MS = 1e-3

# Uneven, with 1-element layers, one layer over several ring segments (16384 elements each)
# when split over 2 ranks, and a run of 1-element layers (fewer elements than ranks).
UNEVEN = [("emb", 1, 0.5 * MS), ("conv1", 3001, 1 * MS), ("b1", 1, 0.2 * MS), ("b2", 1, 0.0),
          ("fc1", 40000, 2 * MS), ("fc1.b", 17, 0.3 * MS), ("out", 5, 0.5 * MS), ("out.b", 1, 0.1 * MS)]
# More layers than elements per chunk: 40 one-element layers.
TINY = [(f"t{i}", 1, 0.1 * MS) for i in range(40)]
LAYER_SETS = {"uneven": UNEVEN, "tiny": TINY}
SPECS = ("wfbp", "single", "fusion,bucket_mb=0.01", "fusion,bucket_mb=0.00001", "fusion", "mgwfbp",
         "mgwfbp,merge=optimal,a=0.002,b=1e-9", "mgwfbp,a=0.0005,b=1e-8")


def _run_case(comm, spec, layer_set, seed):
    layers = LAYER_SETS[layer_set]
    size = sum(n for _, n, _ in layers)
    algo, plan = base.plan_for(spec, base.PlanContext(comm.world, tuple(n for _, n, _ in layers),
                                                      layers=tuple(layers)))
    values = gradients.synthetic(comm.rank, size, seed, 0)  # integer-valued: every sum is exact
    reference = values.clone()
    if comm.world > 1:
        comm.nic(0).allreduce([reference]).wait()
    expected = gradients.expected_sum(comm.world, size, seed, 0)
    stream = gradients.GradientStream(layers, values)
    comm.barrier()
    sent, messages, events = dict(comm.sent), dict(comm.messages), len(comm.events)
    stream.start()
    out = algo.execute(plan, comm, stream, base.SyncState(comm.rank, comm.world, comm.world))
    return {
        "spec": spec, "layers": layer_set, "rank": comm.rank,
        "equal_torch": bool(torch.equal(out, reference)), "equal_oracle": bool(torch.equal(out, expected)),
        "max_diff": float((out - reference).abs().max()),
        "sent": {k: v - sent.get(k, 0) for k, v in comm.sent.items() if v != sent.get(k, 0)},
        "messages": {k: v - messages.get(k, 0) for k, v in comm.messages.items() if v != messages.get(k, 0)},
        "flows": [(f.src, f.dst, f.nic, f.bytes, f.messages) for f in algo.traffic(plan)],
        "events": comm.events[events:], "t_start": stream.t_start, "t_ready": stream.t_ready, "plan": plan,
    }


def _child(rank, world, store, cases, out):
    try:
        torch.set_num_threads(1)
        comm = Comm(rank, world, store, ["lo"], timeout_s=60)
        results = [_run_case(comm, spec, layer_set, seed) for seed, (spec, layer_set) in enumerate(cases)]
        comm.barrier()
        out.put(("ok", rank, results))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


def _spawn(tmp_path, world, cases):
    return spawn_ranks(world, _child, lambda r: (r, world, str(tmp_path / "store"), cases), SPAWN_TIMEOUT_S)


def _check_timeline(res):
    plan, events = res["plan"], res["events"]
    backward = [e for e in events if e["phase"] == "backward"]
    allreduce = [e for e in events if e["phase"] == "allreduce"]
    count = plan["layer_count"]
    assert [e["layer"] for e in backward] == list(range(count - 1, -1, -1))  # production order
    assert backward[0]["t0"] == res["t_start"]
    assert all(a["t1"] == b["t0"] and a["t0"] <= a["t1"] for a, b in zip(backward, backward[1:]))
    assert [e["group"] for e in allreduce] == list(range(len(plan["groups"])))
    assert [e["layers"] for e in allreduce] == plan["groups"]
    ready = {e["layer"]: e["t1"] for e in backward}
    for a, b in zip(allreduce, allreduce[1:]):  # one all-reduce at a time, in launch order
        assert a["t1"] <= b["t0"]
    for e in allreduce:  # never before its last layer exists (the watcher may stamp a bit late)
        assert e["t0"] >= ready[e["layers"][-1]] - 0.05 and e["t0"] <= e["t1"]
    mine = sum(f[3] for f in res["flows"] if f[0] == res["rank"])
    assert sum(e["bytes"] for e in allreduce) == mine


@pytest.mark.parametrize("world", WORLDS)
def test_layerwise_algorithms_equal_allreduce_and_traffic(tmp_path, world):
    cases = [(spec, layer_set) for layer_set in LAYER_SETS for spec in SPECS]
    results = _spawn(tmp_path, world, cases)
    for rank in range(world):
        assert len(results[rank]) == len(cases)
        for res in results[rank]:
            what = f"{res['spec']} on {res['layers']}, world {world}, rank {rank}"
            assert res["equal_torch"] and res["equal_oracle"], f"{what}: max diff {res['max_diff']}"
            mine = {(dst, nic): (b, m) for src, dst, nic, b, m in res["flows"] if src == rank}
            assert res["sent"] == {k: b for k, (b, _) in mine.items()}, what
            assert res["messages"] == {k: m for k, (_, m) in mine.items()}, what
            _check_timeline(res)


def test_groupings_differ_so_the_cases_mean_something():
    layers = tuple(UNEVEN)
    ctx = base.PlanContext(3, tuple(n for _, n, _ in layers), layers=layers)
    groups = {spec: len(base.plan_for(spec, ctx)[1]["groups"]) for spec in SPECS}
    assert groups["wfbp"] == len(UNEVEN) and groups["single"] == 1
    assert 1 < groups["fusion,bucket_mb=0.01"] < len(UNEVEN)
    assert len(set(groups.values())) >= 3, groups


# --- overlap ------------------------------------------------------------------------------

OVERLAP = [("first", 20000, 40 * MS), ("middle", 20000, 40 * MS), ("last", 20000, 0.0)]


def _overlap_child(rank, world, store, out):
    try:
        torch.set_num_threads(1)
        comm = Comm(rank, world, store, ["lo"], timeout_s=60)
        got = {}
        for spec in ("wfbp", "single"):
            algo, plan = base.plan_for(spec, base.PlanContext(world, tuple(n for _, n, _ in OVERLAP),
                                                              layers=tuple(OVERLAP)))
            values = gradients.synthetic(rank, plan["elements"], 9, 0)
            stream = gradients.GradientStream(OVERLAP, values)
            comm.store_barrier(spec)
            before = len(comm.events)
            stream.start()
            out_t = algo.execute(plan, comm, stream)
            assert torch.equal(out_t, gradients.expected_sum(world, plan["elements"], 9, 0))
            allreduce = [e for e in comm.events[before:] if e["phase"] == "allreduce"]
            got[spec] = {"t_start": stream.t_start, "t_ready": stream.t_ready,
                         "starts": [e["t0"] for e in allreduce], "ends": [e["t1"] for e in allreduce]}
        comm.barrier()
        out.put(("ok", rank, got))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


@pytest.mark.parametrize("world", [2, 3])
def test_wfbp_starts_communicating_before_backprop_ends(tmp_path, world):
    results = spawn_ranks(world, _overlap_child, lambda r: (r, world, str(tmp_path / "store")), SPAWN_TIMEOUT_S)
    for rank, got in results.items():
        wfbp, single = got["wfbp"], got["single"]
        backward = wfbp["t_ready"] - wfbp["t_start"]
        assert backward >= 0.08 - 1e-3
        # The last layer is ready at once: its all-reduce starts with at least half of backprop
        # still to run, and is done before backprop ends (80 KB on loopback).
        assert wfbp["starts"][0] < wfbp["t_ready"] - 0.04, (rank, wfbp)
        assert wfbp["ends"][0] < wfbp["t_ready"], (rank, wfbp)
        # SyncEASGD waits for all of backprop.
        assert len(single["starts"]) == 1 and single["starts"][0] >= single["t_ready"]


CHARGE_S = 0.05


def _charge_child(rank, world, store, out):
    try:
        torch.set_num_threads(1)
        comm = Comm(rank, world, store, ["lo"], timeout_s=60)
        ctx = base.PlanContext(world, tuple(n for _, n, _ in UNEVEN), layers=tuple(UNEVEN), startup_charge_s=CHARGE_S)
        algo, plan = base.plan_for("wfbp", ctx)
        values = gradients.synthetic(rank, plan["elements"], 3, 0)
        stream = gradients.GradientStream(UNEVEN, values)
        comm.store_barrier("charge")
        before = len(comm.events)
        stream.start()
        flat = algo.execute(plan, comm, stream)
        spans = [e["t1"] - e["t0"] for e in comm.events[before:] if e["phase"] == "allreduce"]
        comm.barrier()
        out.put(("ok", rank, {"equal": bool(torch.equal(flat, gradients.expected_sum(world, plan["elements"], 3, 0))),
                              "spans": spans, "groups": len(plan["groups"]), "charge": plan["startup_charge_s"]}))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


def test_a_charged_start_up_is_waited_inside_each_all_reduce(tmp_path):
    """A dilated real setting's start-up (`startup_charge_s`, emulation/replan.py) is waited
    before every group's ring, inside its span, and changes no sum."""
    results = spawn_ranks(2, _charge_child, lambda r: (r, 2, str(tmp_path / "store")), SPAWN_TIMEOUT_S)
    for rank, got in results.items():
        assert got["equal"] and got["charge"] == CHARGE_S
        assert len(got["spans"]) == got["groups"] == len(UNEVEN)
        assert min(got["spans"]) >= CHARGE_S, (rank, got["spans"])


# --- the probe ------------------------------------------------------------------------------

PROBE_SIZES = [4, 4096, 4_000_000]


def _probe_child(rank, world, store, out):
    try:
        torch.set_num_threads(1)
        comm = Comm(rank, world, store, ["lo"], timeout_s=60)
        first = probe.measure_allreduce(comm, PROBE_SIZES, reps=3)
        sent = dict(comm.sent)
        second = probe.measure_allreduce(comm, [6], reps=2)  # a second call: fresh store keys
        comm.barrier()
        out.put(("ok", rank, {"first": first, "second": second, "sent": sent}))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


@pytest.mark.parametrize("world", [1, 3])
def test_probe_times_the_ring_and_every_rank_returns_rank_0s_medians(tmp_path, world):
    results = spawn_ranks(world, _probe_child, lambda r: (r, world, str(tmp_path / "store")), SPAWN_TIMEOUT_S)
    first = results[0]["first"]
    assert all(results[r]["first"] == first for r in results)
    assert [b for b, _ in first] == PROBE_SIZES and all(s > 0 for _, s in first)
    assert [b for b, _ in results[0]["second"]] == [8]  # rounded up to whole float32 elements
    if world > 1:
        assert first[-1][1] > first[0][1]  # 4 MB takes longer than 4 bytes
        model = linkmodel.fit_alpha_beta(*zip(*first))
        assert model.beta > 0
        # Each repetition of each size: a one-element aligning ring, then the timed one, all
        # through Comm.
        for rank, res in results.items():
            expected = 3 * sum(ring_flows(list(range(world)), base.split(1, world))[rank].bytes
                               + ring_flows(list(range(world)), base.split(b // 4, world))[rank].bytes
                               for b in PROBE_SIZES)
            assert sum(res["sent"].values()) == expected
    else:
        assert results[0]["sent"] == {}


# --- the worker, as the runner starts it ----------------------------------------------------------

def _worker_child(rank, job, out):
    try:
        log = eventlog.EventLog.for_rank(job["log_dir"], rank)
        worker.run(job, rank, ["lo"], log)
        out.put(("ok", rank, None))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


def test_worker_runs_mgwfbp_and_logs_the_overlap_timeline(tmp_path):
    workers, iters = 3, 3
    layers = [list(layer) for layer in UNEVEN]
    ctx = base.PlanContext(workers, tuple(n for _, n, _ in layers), layers=tuple(map(tuple, layers)),
                           link=linkmodel.LinkModel(1e-3, 1e-9, source="test"))
    _, plan = base.plan_for("mgwfbp", ctx)
    assert plan["provisional"] is False and plan["alpha"] == 1e-3
    job = {"algorithm": "mgwfbp", "plan": plan, "groups": [], "workers": workers, "servers": 0,
           "world": workers, "model": {"spec": "synthetic,test", "layers": layers}, "iters": iters,
           "warmup": 1, "seed": 4, "dilation": 1.0, "store": str(tmp_path / "store"),
           "log_dir": str(tmp_path / "w"), "timeout_s": 60}
    spawn_ranks(workers, _worker_child, lambda r: (r, job), SPAWN_TIMEOUT_S)
    for rank in range(workers):
        events = [json.loads(line) for line in open(tmp_path / "w" / f"rank{rank}.jsonl")]
        its = [e for e in events if e["event"] == "iter"]
        assert len(its) == iters + 1 and all(e["correct"] and e["max_abs_err"] == 0.0 for e in its)
        for it in range(iters + 1):
            stages = [e for e in events if e["event"] == "stage" and e["iter"] == it]
            assert sum(e["phase"] == "backward" for e in stages) == len(layers)
            assert [e["layers"] for e in stages if e["phase"] == "allreduce"] == plan["groups"]
