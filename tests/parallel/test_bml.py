"""BML against a plain all_reduce, with real Gloo processes on localhost (`lo` for every NIC).

Ranks are forked from this process (as in test_algorithms.py), build a `Comm` with k NICs and
BML's per-switch groups, and run every size through `bml.execute`; the test asserts the sum,
the bytes handed to the switch groups (= traffic(plan)), what the process wrote to its sockets
(/proc/self/io), and one timeline event per (tree, stage). The last test runs
`python -m workloads.worker` on a BML job, as the runner does, and reads the JSONL logs.
"""
import json
import traceback
from collections import defaultdict

import pytest
import torch

from workloads.algorithms import base, bml
from workloads.planners import bml as schedule
from workloads.comm import Comm
from workloads.gradients import GradientStream
from tests.parallel.spawn import run_worker_processes, spawn_ranks, written_bytes

pytestmark = pytest.mark.parallel

SHAPES = ((2, 2), (3, 2))
SIZES = (1, 7, 1000, 12347, 1_300_003)  # < k*N (empty blocks), uneven, and several MiB
HEADER_SLACK = 512  # bytes per message Gloo may add to the payload
SPAWN_TIMEOUT_S = 90


def _layers(size):
    cut = [size // 7, size // 2] if size >= 3 else []
    bounds = [0, *cut, size]
    return [(f"l{i}", b - a, 0.0) for i, (a, b) in enumerate(zip(bounds, bounds[1:])) if b > a]


def _ctx(n, k, size):
    return base.PlanContext(n**k, tuple(m for _, m, _ in _layers(size)), nics=k, options={"n": n, "k": k})


def _run_case(comm, n, k, size):
    algo, plan = base.plan_for("bml", _ctx(n, k, size))
    g = torch.Generator().manual_seed(size * 1000 + comm.rank)
    grads = torch.randn(size, generator=g)
    reference = grads.clone()
    comm.nic(0).allreduce([reference]).wait()
    stream = GradientStream(_layers(size), grads, dilation=0.0)
    comm.barrier()
    sent, messages, wchar, events = dict(comm.sent), dict(comm.messages), written_bytes(), len(comm.events)
    stream.start()
    out = algo.execute(plan, comm, stream)
    wrote = written_bytes() - wchar if wchar is not None else None
    return {
        "size": size, "rank": comm.rank,
        "close": bool(torch.allclose(out, reference, rtol=1e-5, atol=1e-5)),
        "max_diff": float((out - reference).abs().max()),
        "sent": {key: v - sent.get(key, 0) for key, v in comm.sent.items() if v != sent.get(key, 0)},
        "messages": sum(comm.messages.values()) - sum(messages.values()),
        "wchar": wrote,
        "events": comm.events[events:],
        "flows": [(f.src, f.dst, f.nic, f.bytes) for f in algo.traffic(plan)],
        "plan": plan,
    }


def _child(rank, n, k, store, out):
    try:
        torch.set_num_threads(1)
        probe = bml.plan(_ctx(n, k, 1))  # groups depend on the shape only
        comm = Comm(rank, n**k, store, ["lo"] * k, bml.groups(probe), timeout_s=30)
        results = [_run_case(comm, n, k, size) for size in SIZES]
        comm.barrier()
        out.put(("ok", rank, results))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


def _spawn(tmp_path, n, k):
    return spawn_ranks(n**k, _child, lambda r: (r, n, k, str(tmp_path / "store")), SPAWN_TIMEOUT_S)


def _stage_bytes(plan, rank):
    """(tree, stage) -> payload bytes `rank` sends in it, from the plan."""
    out = defaultdict(int)
    for p, g, _, _, src, _, start, end in schedule.messages(plan):
        if src == rank:
            out[(p, g)] += base.DTYPE_BYTES * (end - start)
    return out


@pytest.mark.parametrize("n,k", SHAPES)
def test_bml_equals_allreduce_on_bcube(tmp_path, n, k):
    results = _spawn(tmp_path, n, k)
    for rank in range(n**k):
        for res in results[rank]:
            what = f"BCube({n},{k}) size {res['size']} rank {rank}"
            assert res["close"], f"{what}: max diff {res['max_diff']}"
            mine = {(dst, nic): b for src, dst, nic, b in res["flows"] if src == rank}
            assert res["sent"] == mine, what
            if res["wchar"] is not None:
                extra = res["wchar"] - sum(mine.values())
                assert 0 <= extra <= HEADER_SLACK * res["messages"] + 4096, f"{what}: wrote {res['wchar']}"
            # One event per (tree, stage), on the stage's NIC, with this rank's planned bytes.
            plan, per_stage = res["plan"], _stage_bytes(res["plan"], rank)
            got = {(e["tree"], e["stage"]): e for e in res["events"]}
            assert len(got) == len(res["events"]) == k * 2 * k, what
            for (p, g), e in got.items():
                st = plan["trees"][p]["stages"][g]
                assert e["event"] == "stage" and (e["nic"], e["phase"]) == (st["level"], st["phase"]), what
                assert e["bytes"] == per_stage[(p, g)] and e["t0"] <= e["t1"], what
            for p in range(k):  # a tree's stages run one after another
                t = [got[(p, g)] for g in range(2 * k)]
                assert all(a["t1"] <= b["t0"] for a, b in zip(t, t[1:])), what


def test_worker_process_runs_bml_with_switch_groups(tmp_path):
    """The runner's path: job.json with the plan and groups, `python -m workloads.worker`."""
    n, k = 2, 2
    layers = [["conv", 3001, 0.004], ["fc", 20000, 0.01], ["out", 17, 0.002]]
    algo, plan = base.plan_for("bml", base.PlanContext(n**k, tuple(m for _, m, _ in layers), nics=k,
                                                       options={"n": n, "k": k}))
    job = {"algorithm": "bml", "plan": plan, "workers": n**k, "servers": 0, "world": n**k,
           "groups": [{"id": g.id, "ranks": list(g.ranks), "nic": g.nic} for g in algo.groups(plan)],
           "model": {"spec": "synthetic,test", "layers": layers}, "iters": 2, "warmup": 1, "seed": 5,
           "dilation": 1.0, "store": str(tmp_path / "store"), "log_dir": str(tmp_path / "workers"),
           "timeout_s": 30, "crash": None}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    codes, outputs = run_worker_processes(path, n**k, nics=",".join(["lo"] * k))
    assert codes == [0] * n**k, [err for _, err in outputs]
    total = job["warmup"] + job["iters"]
    for rank in range(n**k):
        with open(tmp_path / "workers" / f"rank{rank}.jsonl") as f:
            events = [json.loads(line) for line in f]
        assert events[-1]["event"] == "done"
        iters = [e for e in events if e["event"] == "iter"]
        assert [e["iter"] for e in iters] == list(range(total))
        assert all(e["correct"] and e["max_abs_err"] == 0.0 for e in iters)  # exact integer oracle
        stages = sorted((e["iter"], e["tree"], e["stage"]) for e in events if e["event"] == "stage")
        assert stages == [(i, p, g) for i in range(total) for p in range(k) for g in range(2 * k)]
        for e in events:
            if e["event"] == "stage":
                assert e["phase"] in ("aggregate", "broadcast") and e["nic"] in range(k)
