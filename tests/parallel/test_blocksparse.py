"""`omnireduce`, `dfs` and `topk_ps` through the real worker loop, with real Gloo processes on localhost (`lo`).

Each forked rank runs `workloads.worker.run` once per job, so what is asserted is the worker's
own per-iteration check against the algorithm's exact `reference` (every rank's residual and
DFS's block-size history carried across iterations by both sides), and, per rank and
iteration, that the bytes and messages it logged (`sent`) and its `observed` are what the
reference's simulation of that sync says (the analysis lays those logs onto the routes: the
algorithms are data dependent). World sizes 2, 3 and 4, owners co-located or on 1-2 dedicated
servers; the jobs have whole zero blocks (job "sparsity", different per worker), so the
unions, the skipped blocks and DFS's choices vary from one iteration to the next.
"""
import json
from pathlib import Path

import pytest

from workloads import worker
from workloads.algorithms import base
from workloads.gradients import SyntheticGradients
from tests.parallel.spawn import jobs_child as _child, spawn_ranks

pytestmark = pytest.mark.parallel

LAYERS = [["a", 2000, 0.0], ["b", 1001, 0.0]]
ITERS = 3
SEED = 23
SPARSE = {"block": 64, "zero_blocks": 0.5, "zero_entries": 0.2}
JOBS = (  # (spec, sparsity), run on every (workers, servers)
    ("omnireduce,block=64", SPARSE),
    ("omnireduce,block=100,density=0.3", SPARSE),
    ("topk_ps,density=0.05", SPARSE),
    ("dfs,density=0.2,blocks=16:64:256", SPARSE),
    ("dfs,density=1,blocks=16:32:64:128", SPARSE),
)
DENSE_JOBS = (  # on two of them only (each job costs a Gloo rendezvous)
    ("omnireduce", None),  # every block non-zero, so the logs equal traffic(plan)
    ("dfs", None),  # the defaults: density 0.001 (k = 4), blocks 16..1024
)


@pytest.fixture(autouse=True)
def one_thread():
    """The references this process recomputes are many small CPU ops: one thread, as the ranks."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _job(tmp_path, i, spec, sparsity, workers, servers):
    _, plan = base.plan_for(spec, base.PlanContext(workers, tuple(n for _, n, _ in LAYERS), servers=servers))
    job = {"algorithm": plan["algorithm"], "plan": plan, "groups": [], "workers": workers, "servers": servers,
           "world": workers + servers, "model": {"spec": "synthetic,test", "layers": LAYERS}, "iters": ITERS,
           "warmup": 0, "seed": SEED, "dilation": 0.0, "store": str(tmp_path / f"store{i}"),
           "log_dir": str(tmp_path / f"job{i}"), "timeout_s": 30}
    if sparsity:
        job["sparsity"] = sparsity
    return job


def _expected(job):
    """Per iteration, the reference's simulation of the sync: (Record, DFS's next choice or None)."""
    algo, plan = base.get(job["algorithm"]), job["plan"]
    grads = SyntheticGradients(job["workers"], plan["elements"], SEED, job.get("sparsity"))
    memory, out = {}, []
    for it in range(ITERS):
        algo.reference(plan, grads.all_workers(it), memory)
        out.append((memory["record"], memory.get("next")))
    return out


@pytest.mark.parametrize("workers, servers, dense", [(2, 0, False), (3, 0, True), (4, 0, False), (2, 1, True),
                                                     (3, 2, False)])
def test_block_sparse_algorithms_equal_their_references_through_the_worker(tmp_path, workers, servers, dense):
    world = workers + servers
    specs = JOBS + (DENSE_JOBS if dense else ())
    jobs = [_job(tmp_path, i, spec, sparsity, workers, servers) for i, (spec, sparsity) in enumerate(specs)]
    spawn_ranks(world, _child, lambda r: (r, jobs), timeout_s=60)
    histories = {}
    for (spec, sparsity), job in zip(specs, jobs):
        algo, plan = base.get(job["algorithm"]), job["plan"]
        assert algo.data_dependent and algo.uses_servers
        expected = _expected(job)
        bound = {(f.src, f.dst): (f.bytes, f.messages) for f in algo.traffic(plan)}
        histories[spec] = [rec.block for rec, _ in expected]
        for rank in range(world):
            what = f"{spec} sparsity={sparsity} W={workers} S={servers} rank {rank}"
            events = [json.loads(line) for line in open(Path(job["log_dir"]) / f"rank{rank}.jsonl")]
            assert not [e for e in events if e["event"] == "error"], what
            its = [e for e in events if e["event"] == "iter"]
            assert [e["iter"] for e in its] == list(range(ITERS)), what
            for it, (e, (rec, chosen)) in enumerate(zip(its, expected)):
                where = (what, it)
                if rank < workers:
                    assert e["correct"] and e["max_abs_err"] == 0.0, (where, e)
                else:
                    assert e["server"], where
                # the bytes and messages this rank handed to Comm: what the reference sends
                assert e["sent"] == rec.sent.get(rank, []), (where, e["sent"], rec.sent.get(rank))
                for dst, _, nbytes, messages in e["sent"]:
                    assert nbytes <= bound[(rank, dst)][0] and messages == bound[(rank, dst)][1], where
                observed = dict(rec.observed[rank])
                if chosen is not None and rank < workers:
                    observed.update(next_block=chosen[0], modelled_bytes=chosen[1])
                got = dict(e["observed"])
                if rank < workers:  # the compressor's own time and the codec's: measured, so not in the reference
                    assert got.pop("sparsify_seconds") >= 0, where
                    assert got.pop("codec_seconds") > 0, where
                if rank in plan["owners"]:  # an owner's decode, sum and encode (step 2): measured too
                    assert got.pop("aggregate_seconds") >= 0, where
                assert got == observed, (where, e["observed"], observed)
            if sparsity is None and plan["algorithm"] == "omnireduce":
                mine = [[f.dst, f.nic, f.bytes, f.messages] for f in algo.traffic(plan) if f.src == rank]
                assert [e["sent"] for e in its] == [mine] * ITERS, what
    # DFS's choices move: from the first candidate (nearest 256) to the synthetic zero blocks' 64 when
    # every non-zero block fits the budget, and to the smallest block when not even one does (k = 4)
    dense_budget = histories["dfs,density=1,blocks=16:32:64:128"]
    assert dense_budget[0] == 128 and dense_budget[-1] == 64, histories
    if dense:
        assert histories["dfs"] == [256] + [16] * (ITERS - 1), histories
