"""The algorithm contract's second floor, with real Gloo processes on localhost (`lo`).

A test-only algorithm (`_threshold`, registered in the forked ranks only) uses every new
part at once: typed options, `SyncState` (a residual kept across iterations, the iteration
number), variable-size messages (`Comm.send_var`/`recv_var`: how much it sends depends on
the data), `state.observed`, and its own `reference` oracle, which the worker checks every
iteration. Ranks run `workloads.worker.run` itself, so the JSONL log is the runner's.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from workloads import eventlog, worker
from workloads.algorithms import base
from workloads.comm import Comm
from tests.parallel.spawn import REPO, spawn_ranks

pytestmark = pytest.mark.parallel

LAYERS = [["a", 700, 0.0], ["b", 301, 0.001]]


def _plan(ctx):
    return {"workers": ctx.workers, "threshold": ctx.options["threshold"]}


def _select(acc, threshold):
    idx = (acc.abs() >= threshold).nonzero().flatten()
    return idx, acc[idx]


def _execute(plan, comm, grads, state):
    flat = grads.wait_all()
    residual = state.memory.setdefault("residual", torch.zeros_like(flat))
    acc = flat + residual
    idx, vals = _select(acc, plan["threshold"])
    residual.copy_(acc)
    residual[idx] = 0
    state.observed["sent_entries"] = int(idx.numel())
    state.observed["iteration_seen"] = state.iteration
    if comm.rank != 0:
        works = comm.send_var(idx.to(torch.int32), 0, tag=1) + comm.send_var(vals, 0, tag=2)
        out = torch.empty_like(flat)
        comm.recv(out, 0, tag=3).wait()
        for w in works:
            w.wait()
        return out
    total = torch.zeros_like(flat)
    total[idx] += vals
    for r in range(1, plan["workers"]):
        ridx = comm.recv_var(r, torch.int32, tag=1).long()
        rvals = comm.recv_var(r, torch.float32, tag=2)
        total[ridx] += rvals
    for w in [comm.send(total, r, tag=3) for r in range(1, plan["workers"])]:
        w.wait()
    return total


def _reference(plan, inputs, memory):
    total = torch.zeros_like(inputs[0])
    for r, x in enumerate(inputs):
        res = memory.setdefault(r, torch.zeros_like(x))
        acc = x + res
        idx, vals = _select(acc, plan["threshold"])
        res.copy_(acc)
        res[idx] = 0
        total[idx] += vals
    return total


THRESHOLD = base.Algorithm(name="_threshold", summary="test only", plan=_plan, traffic=lambda plan: [],
                           execute=_execute, reference=_reference, data_dependent=True,
                           options={"threshold": base.Option(6.0, base.number(0, lo_open=True), "a number > 0")})


def _child(rank, job, out):
    import traceback
    try:
        base.registry()[THRESHOLD.name] = THRESHOLD
        log = eventlog.EventLog.for_rank(job["log_dir"], rank)
        worker.run(job, rank, ["lo"], log)
        out.put(("ok", rank, None))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


@pytest.mark.parametrize("workers", [2, 3])
def test_state_reference_and_data_dependent_bytes_through_the_worker(tmp_path, workers):
    base.registry()[THRESHOLD.name] = THRESHOLD
    try:
        _, plan = base.plan_for("_threshold,threshold=9", base.PlanContext(workers, (700, 301)))
    finally:
        base.registry().pop(THRESHOLD.name)
    assert plan["threshold"] == 9.0  # typed from the spec string
    iters = 4
    job = {"algorithm": "_threshold", "plan": plan, "groups": [], "workers": workers, "servers": 0,
           "world": workers, "model": {"spec": "synthetic,test", "layers": LAYERS}, "iters": iters, "warmup": 0,
           "seed": 5, "dilation": 1.0, "store": str(tmp_path / "store"), "log_dir": str(tmp_path / "w"),
           "timeout_s": 30, "sparsity": {"block": 50, "zero_blocks": 0.5, "zero_entries": 0.2}}
    spawn_ranks(workers, _child, lambda r: (r, job), timeout_s=90)
    counts = {}
    for rank in range(workers):
        events = [json.loads(line) for line in open(tmp_path / "w" / f"rank{rank}.jsonl")]
        its = [e for e in events if e["event"] == "iter"]
        assert [e["iter"] for e in its] == list(range(iters))
        assert all(e["correct"] and e["max_abs_err"] == 0.0 for e in its), its
        assert [e["observed"]["iteration_seen"] for e in its] == list(range(iters))
        counts[rank] = [e["observed"]["sent_entries"] for e in its]
        for e in its:
            n = e["observed"]["sent_entries"]
            if rank:  # two variable-size messages to rank 0: 8-byte header + data each
                assert e["sent"] == [[0, 0, 2 * (8 + 4 * n), 2 + 2 * (n > 0)]]
            else:
                assert e["sent"] == [[r, 0, 4 * 1001, 1] for r in range(1, workers)]
    assert len({tuple(c) for c in counts.values()}) > 1 or len(set(counts[0])) > 1, "bytes should vary with data"


def _var_child(rank, store_path, out):
    import traceback
    try:
        comm = Comm(rank, 2, store_path, ["lo"])
        if rank == 0:
            for n in (0, 1, 1000):
                for w in comm.send_var(torch.arange(n, dtype=torch.float32), 1, tag=7):
                    w.wait()
            out.put(("ok", rank, dict(comm.sent)))
        else:
            got = [comm.recv_var(0, torch.float32, tag=7) for _ in range(3)]
            out.put(("ok", rank, [g.tolist() for g in got]))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


def test_variable_size_messages_round_trip_and_are_counted(tmp_path):
    res = spawn_ranks(2, _var_child, lambda r: (r, str(tmp_path / "store")), timeout_s=60)
    assert res[1] == [[], [0.0], [float(i) for i in range(1000)]]
    assert res[0] == {(1, 0): 3 * 8 + 4 * 1 + 4 * 1000}


def _vars_child(rank, store_path, out):
    import traceback
    try:
        comm = Comm(rank, 3, store_path, ["lo"])
        if rank == 0:  # one receive per sender, all posted at once; any order of the senders
            got = comm.recv_vars([2, 1], torch.float32, tag=5)
            out.put(("ok", rank, [g.tolist() for g in got]))
        else:
            for w in comm.send_var(torch.arange(1000 * (rank == 1), dtype=torch.float32) + rank, 0, tag=5):
                w.wait()
            out.put(("ok", rank, dict(comm.sent)))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


def test_variable_size_messages_from_several_senders_at_once(tmp_path):
    res = spawn_ranks(3, _vars_child, lambda r: (r, str(tmp_path / "store")), timeout_s=60)
    assert res[0] == [[], [float(i + 1) for i in range(1000)]]  # rank 2's empty message, then rank 1's
    assert res[1] == {(0, 0): 8 + 4 * 1000} and res[2] == {(0, 0): 8}


def test_sparse_synthetic_gradients_have_zero_blocks_and_an_exact_sum():
    from workloads.gradients import SyntheticGradients

    g = SyntheticGradients(4, 10_000, seed=1, sparsity={"block": 100, "zero_blocks": 0.8})
    xs = g.all_workers(3)
    blocks = torch.stack([x.view(100, 100).abs().sum(1) == 0 for x in xs])
    assert 0.7 < blocks.float().mean() < 0.9
    assert not all(torch.equal(blocks[0], b) for b in blocks[1:]), "workers' zero blocks must differ"
    mine, total = g.mine_and_sum(2, 3)
    assert torch.equal(mine, xs[2]) and torch.equal(total, sum(xs))
    with pytest.raises(ValueError, match="zero_blocks=1.5 must be a fraction"):
        SyntheticGradients(2, 10, 0, {"zero_blocks": 1.5})


def test_probe_mode_times_ring_allreduces_and_the_fit_reads_them(tmp_path):
    """The runner's link probe (emulation/linkprobe.py) as the workers run it, on `lo`."""
    from emulation.linkprobe import read_points
    from workloads.linkmodel import fit_alpha_beta

    sizes = [4096, 65536, 8 << 20]  # 2048x apart: on a busy machine 4 KiB took up to 4.4 ms, 1 MiB 6 ms
    job = {"algorithm": "probe", "plan": {}, "groups": [], "workers": 3, "servers": 0, "world": 3,
           "model": {"spec": "probe", "layers": [["probe", 1, 0.0]]}, "iters": 0, "warmup": 0, "seed": 0,
           "store": str(tmp_path / "store"), "log_dir": str(tmp_path / "w"), "timeout_s": 30,
           "probe": {"sizes_bytes": sizes, "reps": 3}}
    spawn_ranks(3, _child, lambda r: (r, job), timeout_s=90)
    points = read_points(tmp_path / "w" / "rank0.jsonl")
    assert [b for b, _ in points] == sizes and all(s > 0 for _, s in points)
    model = fit_alpha_beta([b for b, _ in points], [s for _, s in points])
    # Timings on a shared machine: no value is asserted, but an 8 MiB ring all-reduce moves 2048x
    # the bytes of a 4 KiB one, so it takes longer and the fit's slope is positive (a fit
    # constrained to beta >= 0 returns 0 when the times do not grow with the size).
    assert points[-1][1] > points[0][1], points
    assert model.beta > 0 and model.points == len(sizes), (model, points)


def _framing_child(rank, store_path, mode, out):
    import time
    import traceback

    from tests.parallel.spawn import written_bytes
    try:
        comm = Comm(rank, 2, store_path, ["lo"])
        comm.barrier()
        n, bufs = 200, [torch.zeros(3) for _ in range(200)]
        w0 = written_bytes()
        if rank == 0:
            time.sleep(0.5 if mode == "recv_first" else 0)
            works = [comm.send(bufs[i], 1, tag=i) for i in range(n)]
        else:
            time.sleep(0.5 if mode == "send_first" else 0)
            works = [comm.recv(bufs[i], 0, tag=i) for i in range(n)]
        for w in works:
            w.wait()
        out.put(("ok", rank, written_bytes() - w0))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


@pytest.mark.parametrize("mode", ["recv_first", "send_first"])
def test_gloo_framing_is_one_constant_whichever_side_posts_first(tmp_path, mode):
    """What the sender and the receiver write per message besides the data, summed, is
    GLOO_FRAMING_BYTES: the constant the closed forms and the capture verdicts use."""
    from tests.parallel.spawn import written_bytes

    if written_bytes() is None:
        pytest.skip("/proc/self/io is not readable here")
    res = spawn_ranks(2, _framing_child, lambda r: (r, str(tmp_path / "store"), mode), timeout_s=60)
    assert (res[0] + res[1] - 200 * 12) / 200 == base.GLOO_FRAMING_BYTES
    # each side's share, which the expected bytes
    # lay on that side's route (the receiver's notification travels back to the sender)
    assert (res[0] - 200 * 12) / 200 == base.GLOO_SEND_FRAMING_BYTES == 96
    assert res[1] / 200 == base.GLOO_NOTIFY_BYTES == 48


def test_only_oracle_ranks_check_and_the_others_log_a_digest_the_analysis_compares(tmp_path):
    from emulation.analysis import sync_times

    base.registry()[THRESHOLD.name] = THRESHOLD
    try:
        _, plan = base.plan_for("_threshold", base.PlanContext(3, (700, 301)))
    finally:
        base.registry().pop(THRESHOLD.name)
    job = {"algorithm": "_threshold", "plan": plan, "groups": [], "workers": 3, "servers": 0, "world": 3,
           "model": {"spec": "synthetic,test", "layers": LAYERS}, "iters": 3, "warmup": 0, "seed": 2,
           "dilation": 1.0, "store": str(tmp_path / "store"), "log_dir": str(tmp_path / "w"), "timeout_s": 30,
           "sparsity": {"block": 50, "zero_blocks": 0.5}, "oracle_ranks": [0]}
    spawn_ranks(3, _child, lambda r: (r, job), timeout_s=90)
    for rank in range(3):
        its = [json.loads(l) for l in open(tmp_path / "w" / f"rank{rank}.jsonl") if '"iter"' in l]
        its = [e for e in its if e["event"] == "iter"]
        assert all(("correct" in e) == (rank == 0) and "digest" in e for e in its)
    assert sync_times(tmp_path / "w", 3)["correct"] is True
    # a rank holding another result is caught through its digest
    path = tmp_path / "w" / "rank2.jsonl"
    path.write_text(path.read_text().replace('"digest": "', '"digest": "ff', 1))
    times = sync_times(tmp_path / "w", 3)
    assert times["correct"] is False and "different results" in times["errors"][-1]


def _pool_child(rank, folder, out):
    import traceback
    try:
        worker.serve_pool(folder, rank, ["lo"])
        out.put(("ok", rank, None))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


def _queue_jobs(tmp_path, workers: int):
    layers = [["a", 700, 0.0], ["b", 301, 0.0]]
    pool = tmp_path / "pool"
    pool.mkdir()
    for n, name in enumerate(["ring", "ps", "gloo"], 1):
        _, plan = base.plan_for(name, base.PlanContext(workers, (700, 301)))
        run = tmp_path / f"run{n}"
        job = {"algorithm": name, "plan": plan, "groups": [
                   {"id": g.id, "ranks": list(g.ranks), "nic": g.nic}
                   for g in base.get(name).groups(plan)],
               "workers": workers, "servers": 0, "world": workers,
               "model": {"spec": "synthetic,test", "layers": layers}, "iters": 2, "warmup": 1, "seed": n,
               "dilation": 1.0, "store": str(run / "store"), "log_dir": str(run / "workers"), "timeout_s": 30}
        run.mkdir()
        (run / "job.json").write_text(json.dumps(job))
        (pool / f"job{n}").write_text(str(run / "job.json"))
    (pool / "stop").touch()  # after the queued jobs
    return pool


def _check_pool_jobs(tmp_path, workers: int):
    for n in (1, 2, 3):
        for rank in range(workers):
            wdir = tmp_path / f"run{n}" / "workers"
            assert (wdir / f"rank{rank}.exit").read_text() == "0"
            events = [json.loads(line) for line in open(wdir / f"rank{rank}.jsonl")]
            its = [e for e in events if e["event"] == "iter"]
            assert len(its) == 3 and all(e["correct"] for e in its)
            assert events[-1]["event"] == "done"
        assert "iter 3/3 rank 0" in (tmp_path / f"run{n}" / "workers" / "rank0.out").read_text()


def test_a_worker_pool_runs_queued_jobs_one_after_another(tmp_path):
    """Pool mode (issue #6 §6): one process per rank runs several runs' jobs, each with its own
    log, result check and exit code file, then leaves on `stop`."""
    pool = _queue_jobs(tmp_path, 3)
    spawn_ranks(3, _pool_child, lambda r: (r, str(pool)), timeout_s=120)
    _check_pool_jobs(tmp_path, 3)


@pytest.mark.skipif(os.geteuid() != 0, reason="setns needs root")
def test_the_fork_server_forks_pool_workers_that_run_the_queue(tmp_path):
    """workloads/zygote.py: torch imported once, one forked worker per rank in the given
    network namespace (here our own), each serving the pool; exit codes recorded."""
    pool = _queue_jobs(tmp_path, 3)
    ranks = [{"rank": r, "netns_pid": os.getpid(), "nics": ["lo"], "out": str(pool / f"rank{r}.out")} for r in range(3)]
    (pool / "ranks.json").write_text(json.dumps(ranks))
    p = subprocess.run([sys.executable, "-m", "workloads.zygote", str(pool)], cwd=REPO, capture_output=True,
                       text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    pids = json.loads((pool / "pids.json").read_text())
    assert len(set(pids.values())) == 3 and os.getpid() not in pids.values()
    assert [(pool / f"exit{r}").read_text() for r in range(3)] == ["0"] * 3
    _check_pool_jobs(tmp_path, 3)
