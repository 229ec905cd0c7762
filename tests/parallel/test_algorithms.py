"""Every baseline against a plain all_reduce, with real Gloo processes on localhost (`lo`).

Ranks are forked from this process (torch is imported once, so W=7 costs no 7 imports);
each runs every case and sends back its result summary, and the test asserts. Besides the
sums, each case checks the bytes: what `Comm.send` was handed equals `traffic(plan)`, and
what the process actually wrote to its sockets (/proc/self/io wchar) equals it too, up to
Gloo's per-message header. The last tests run `python -m workloads.worker` as the runner
does and read the JSONL logs.
"""
import json
import multiprocessing as mp
import re
import traceback
from pathlib import Path

import pytest
import torch

from workloads.algorithms import base
from workloads.comm import Comm
from workloads.gradients import GradientStream
from tests.parallel.spawn import run_worker_processes, spawn_ranks, written_bytes

pytestmark = pytest.mark.parallel

WORLDS = (1, 2, 3, 4, 7)
SIZES = (1, 5, 1000, 12347, 1_300_003)  # < N, uneven, and > 4 MiB (Gloo's many-segment path)
HEADER_SLACK = 256  # bytes per message Gloo adds to the payload in wchar (exactly GLOO_FRAMING_BYTES = 144)
SPAWN_TIMEOUT_S = 90


def _layers(size):
    cut = [size // 7, size // 2] if size >= 3 else []
    bounds = [0, *cut, size]
    return [(f"l{i}", b - a, 0.0) for i, (a, b) in enumerate(zip(bounds, bounds[1:])) if b > a]


def _run_case(comm, name, workers, servers, size, reference_pg):
    """Run one algorithm on this rank; returns what the parent asserts on."""
    layers = _layers(size)
    algo, plan = base.plan_for(name, base.PlanContext(workers, tuple(n for _, n, _ in layers), servers))
    is_worker = comm.rank < workers
    if is_worker:
        g = torch.Generator().manual_seed(size * 1000 + comm.rank)
        grads = torch.randn(size, generator=g)
        reference = grads.clone()
        if workers > 1:
            reference_pg.allreduce([reference]).wait()
    else:
        grads, reference = torch.zeros(size), None
    stream = GradientStream(layers, grads, dilation=0.0)
    comm.barrier()
    sent, messages, wchar = dict(comm.sent), dict(comm.messages), written_bytes()
    stream.start()
    out = algo.execute(plan, comm, stream)
    wrote = written_bytes() - wchar if wchar is not None else None
    return {
        "name": name, "size": size, "rank": comm.rank,
        "close": bool(torch.allclose(out, reference, rtol=1e-5, atol=1e-5)) if is_worker else True,
        "max_diff": float((out - reference).abs().max()) if is_worker else 0.0,
        "sent": {k: v - sent.get(k, 0) for k, v in comm.sent.items() if v != sent.get(k, 0)},
        "messages": sum(comm.messages.values()) - sum(messages.values()),
        "wchar": wrote,
        "flows": [(f.src, f.dst, f.nic, f.bytes) for f in algo.traffic(plan)],
        "plan": plan,
    }


def _child(rank, world, workers, servers, store, cases, out):
    try:
        torch.set_num_threads(1)
        groups = [base.GroupSpec("workers", tuple(range(workers)))] if servers else []
        comm = Comm(rank, world, store, ["lo"], groups, timeout_s=30)
        reference_pg = comm.group("workers")[0] if servers and rank < workers else comm.nic(0)
        results = [_run_case(comm, name, workers, servers, size, reference_pg) for name, size in cases]
        comm.barrier()
        out.put(("ok", rank, results))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


def _spawn(tmp_path, world, workers, servers, cases):
    """Fork `world` ranks running `cases`; returns {rank: [case result]}."""
    return spawn_ranks(world, _child, lambda r: (r, world, workers, servers, str(tmp_path / "store"), cases),
                       SPAWN_TIMEOUT_S)


def _check_bytes(res):
    """Payload handed to send and bytes written to sockets both equal traffic(plan) for this rank."""
    mine = {(dst, nic): b for src, dst, nic, b in res["flows"] if src == res["rank"]}
    expected = sum(mine.values())
    if res["name"] != "gloo":  # gloo's bytes are moved by Gloo itself, not by Comm.send
        assert res["sent"] == mine, f"{res['name']} size {res['size']} rank {res['rank']}"
        messages = res["messages"]
    else:
        messages = 2 * res["plan"]["segments"]
    if res["wchar"] is not None:
        extra = res["wchar"] - expected
        assert 0 <= extra <= HEADER_SLACK * messages + 1024, (
            f"{res['name']} size {res['size']} rank {res['rank']}: wrote {res['wchar']} bytes, "
            f"traffic() says {expected}")


@pytest.mark.parametrize("world", WORLDS)
def test_dense_algorithms_equal_allreduce(tmp_path, world):
    cases = [(name, size) for name in ("gloo", "ring", "ps") for size in SIZES]
    results = _spawn(tmp_path, world, world, 0, cases)
    for rank in range(world):
        for res in results[rank]:
            assert res["close"], f"{res['name']} size {res['size']} rank {rank}: max diff {res['max_diff']}"
            _check_bytes(res)


@pytest.mark.parametrize("workers", WORLDS)
def test_ps_on_two_dedicated_servers_equals_allreduce(tmp_path, workers):
    cases = [("ps", size) for size in SIZES]
    results = _spawn(tmp_path, workers + 2, workers, 2, cases)
    for rank in range(workers + 2):
        for res in results[rank]:
            assert res["close"], f"ps size {res['size']} rank {rank}: max diff {res['max_diff']}"
            _check_bytes(res)


def _comm_child(rank, world, store, out):
    try:
        groups = [base.GroupSpec("odd", (3, 1), nic=1), base.GroupSpec("all", (0, 1, 2, 3))]
        comm = Comm(rank, world, store, ["lo", "lo"], groups, timeout_s=30)
        got = torch.zeros(2)
        works = [comm.send(torch.full((2,), float(rank)), (rank + 1) % world, nic=1, tag=7),
                 comm.recv(got, (rank - 1) % world, nic=1, tag=7)]
        for w in works:
            w.wait()
        summary = {"recv": got.tolist(), "groups": {}}
        for gid in ("odd", "all"):
            try:
                pg, ranks = comm.group(gid)
            except ValueError as exc:
                summary["groups"][gid] = str(exc)
                continue
            t = torch.tensor([float(rank)])
            pg.allreduce([t]).wait()
            summary["groups"][gid] = [t.item(), pg.rank(), list(ranks)]
        comm.record(phase="x", t0=1.0)
        comm.iteration = 4
        comm.record(event="mark", stage=2)
        summary["events"] = comm.events
        comm.barrier()
        out.put(("ok", rank, summary))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


def test_comm_nics_groups_and_events(tmp_path):
    ctx, world = mp.get_context("fork"), 4
    out = ctx.Queue()
    procs = [ctx.Process(target=_comm_child, args=(r, world, str(tmp_path / "store"), out)) for r in range(world)]
    for p in procs:
        p.start()
    got = {}
    for _ in range(world):
        status, rank, payload = out.get(timeout=SPAWN_TIMEOUT_S)
        assert status == "ok", payload
        got[rank] = payload
    for p in procs:
        p.join(timeout=10)
    for rank, s in got.items():
        assert s["recv"] == [float((rank - 1) % world)] * 2
        assert s["groups"]["all"] == [6.0, rank, [0, 1, 2, 3]]
        if rank in (1, 3):  # group rank = index in spec.ranks
            assert s["groups"]["odd"] == [4.0, [3, 1].index(rank), [3, 1]]
        else:
            assert "is not in a group 'odd'; its groups: all" in s["groups"]["odd"]
        assert s["events"] == [{"event": "stage", "phase": "x", "t0": 1.0},
                               {"event": "mark", "iter": 4, "stage": 2}]


# --- the worker process, as the runner starts it --------------------------------------------

LAYERS = [["conv", 3001, 0.004], ["fc", 20000, 0.01], ["out", 17, 0.002]]
PROGRESS = re.compile(r"^iter (\d+)/(\d+) rank 0 synced in \d+\.\d{3} s$")


def _job(tmp_path, name, workers, servers=0, iters=3, warmup=1, crash=None, timeout_s=30):
    ctx = base.PlanContext(workers, tuple(n for _, n, _ in LAYERS), servers)
    algo, plan = base.plan_for(name, ctx)
    job = {"algorithm": name, "plan": plan, "groups": [], "workers": workers, "servers": servers,
           "world": workers + servers, "model": {"spec": "synthetic,test", "layers": LAYERS},
           "iters": iters, "warmup": warmup, "seed": 3, "dilation": 1.0,
           "store": str(tmp_path / "store"), "log_dir": str(tmp_path / "workers"),
           "timeout_s": timeout_s, "crash": crash}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return path, job


def _run_workers(path, world, timeout=60):
    return run_worker_processes(path, world, timeout=timeout)


def _events(job, rank):
    with open(Path(job["log_dir"]) / f"rank{rank}.jsonl") as f:
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("name,workers,servers", [("ring", 3, 0), ("gloo", 2, 0), ("ps", 2, 1)])
def test_worker_processes_write_correct_ordered_logs(tmp_path, name, workers, servers):
    path, job = _job(tmp_path, name, workers, servers)
    world, total = workers + servers, job["warmup"] + job["iters"]
    codes, outputs = _run_workers(path, world)
    assert codes == [0] * world, [err for _, err in outputs]
    lines = outputs[0][0].splitlines()
    assert [PROGRESS.match(line).groups() for line in lines] == [(str(i + 1), str(total)) for i in range(total)]
    backward = sum(t for _, _, t in LAYERS) * job["dilation"]
    iters = {}
    for rank in range(world):
        events = _events(job, rank)
        assert events[0]["event"] == "start" and events[0]["rank"] == rank
        assert events[-1]["event"] == "done"
        mine = [e for e in events if e["event"] == "iter"]
        assert [e["iter"] for e in mine] == list(range(total))
        assert [e["warmup"] for e in mine] == [i < job["warmup"] for i in range(total)]
        assert all(e["correct"] and e["max_abs_err"] == 0.0 for e in mine)
        assert all(e.get("server", False) == (rank >= workers) for e in mine)
        for e in mine:
            assert e["t_start"] <= e["t_ready"] <= e["t_done"]
            if rank < workers:
                assert e["t_ready"] - e["t_start"] >= backward - 1e-3
        assert all(a["t_done"] <= b["t_start"] for a, b in zip(mine, mine[1:]))
        assert all(e["iter"] in range(total) for e in events if e["event"] == "stage")
        if world > 1 and name != "gloo":
            assert any(e["event"] == "stage" for e in events)
        iters[rank] = mine
    for i in range(total):  # nobody holds the sum before every worker's gradient exists
        assert min(iters[r][i]["t_done"] for r in iters) >= max(iters[r][i]["t_ready"] for r in range(workers))


def test_worker_crash_injection_exits_3_and_peers_fail(tmp_path):
    path, job = _job(tmp_path, "ring", 3, crash={"rank": 1, "iter": 1}, timeout_s=20)
    codes, outputs = _run_workers(path, 3)
    assert codes[1] == 3
    assert codes[0] != 0 and codes[2] != 0, "peers of a crashed rank must not report success"
    crashed = _events(job, 1)
    assert [e["iter"] for e in crashed if e["event"] == "iter"] == [0]
    assert crashed[-1]["event"] == "error" and "injected crash" in crashed[-1]["message"]
    for rank in (0, 2):
        last = _events(job, rank)[-1]
        assert last["event"] == "error" and "\n" not in last["message"]
        assert f"worker rank {rank}: error:" in outputs[rank][1]


def test_worker_rejects_a_bad_job_with_one_error_event(tmp_path):
    path, job = _job(tmp_path, "ring", 1)
    job["algorithm"] = "allreduce"
    path.write_text(json.dumps(job))
    codes, outputs = _run_workers(path, 1)
    assert codes == [1]
    errors = [e for e in _events(job, 0) if e["event"] == "error"]
    assert len(errors) == 1 and "unknown algorithm 'allreduce'; valid: " in errors[0]["message"]


@pytest.mark.parametrize("name", ["ring", "ps"])
def test_worker_trains_lenet5_on_digits_and_converges(tmp_path, name):
    """Real training mode: every iteration's synchronized gradient equals the sum of all
    ranks' real LeNet-5 gradients, and the shared model learns the digits."""
    from workloads.models.specs import load

    layers = load("lenet5").to_list()
    workers = 3
    ctx = base.PlanContext(workers, tuple(n for _, n, _ in layers))
    _, plan = base.plan_for(name, ctx)
    job = {"algorithm": name, "plan": plan, "groups": [], "workers": workers, "servers": 0, "world": workers,
           "model": {"spec": "lenet5", "layers": layers}, "iters": 60, "warmup": 0, "seed": 1, "dilation": 0.0,
           "store": str(tmp_path / "store"), "log_dir": str(tmp_path / "workers"), "timeout_s": 60,
           "train": True, "lr": 0.1, "batch": 16}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    codes, outputs = _run_workers(path, workers, timeout=120)
    assert codes == [0] * workers, [err for _, err in outputs]
    for rank in range(workers):
        its = [e for e in _events(job, rank) if e["event"] == "iter"]
        assert len(its) == 60 and all(e["correct"] for e in its), rank
    train = [e for e in _events(job, 0) if e["event"] == "train"]
    assert len(train) == 60
    assert train[-1]["loss"] < train[0]["loss"]
    assert train[-1]["accuracy"] > 0.6, train[-1]
