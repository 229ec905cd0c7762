"""`topk` and `gtopk` through the real worker loop, with real Gloo processes on localhost (`lo`).

Each forked rank runs `workloads.worker.run` once per job, so what is asserted is the worker's
own per-iteration oracle check against the algorithm's `reference` (every rank's residual
carried across iterations by both sides), the bytes it logs per iteration against
`traffic(plan)`, and `state.observed`. P covers non-powers of two (3, 5, 7: ranks that idle
in a round of the gTop-k tree). The sparse jobs (whole zero blocks) make ties and
zero-valued pairs common: with density 0.6 the local top-k holds more entries than are
non-zero, so the tie-break among zeros decides what is sent.
"""
import json
from pathlib import Path

import pytest

from workloads import sparse, worker
from workloads.algorithms import base, gtopk
from workloads.gradients import SyntheticGradients
from tests.parallel.spawn import jobs_child as _child, spawn_ranks

pytestmark = pytest.mark.parallel

LAYERS = [["a", 2000, 0.0], ["b", 1001, 0.0]]
ITERS = 4
SEED = 11
SPARSE = {"block": 64, "zero_blocks": 0.5}
JOBS = (  # (spec, sparsity)
    ("topk,density=0.02", None),
    ("topk,density=0.6", SPARSE),
    ("gtopk", None),  # the default density: k = ceil(0.001 x 3001) = 4
    ("gtopk,density=0.02", SPARSE),
    ("gtopk,density=0.6", SPARSE),
    ("gtopk,density=0.02,residual=exact", None),
    ("gtopk,density=0.6,residual=exact", SPARSE),
)


def _job(tmp_path, i, spec, sparsity, workers):
    _, plan = base.plan_for(spec, base.PlanContext(workers, tuple(n for _, n, _ in LAYERS)))
    job = {"algorithm": plan["algorithm"], "plan": plan, "groups": [], "workers": workers, "servers": 0,
           "world": workers, "model": {"spec": "synthetic,test", "layers": LAYERS}, "iters": ITERS,
           "warmup": 0, "seed": SEED, "dilation": 0.0, "store": str(tmp_path / f"store{i}"),
           "log_dir": str(tmp_path / f"job{i}"), "timeout_s": 30}
    if sparsity:
        job["sparsity"] = sparsity
    return job


def _kept_counts(job):
    """Per iteration, per rank: how many local entries the reference counts (so its residual
    rule is checked directly, not only through later iterations' sums)."""
    plan = job["plan"]
    grads = SyntheticGradients(job["workers"], plan["elements"], SEED, job.get("sparsity"))
    options = {"counted_only": True} if plan.get("residual") == "exact" else {}
    records = sparse.reference_iterations(plan["algorithm"], [grads.all_workers(i) for i in range(ITERS)],
                                          plan["k"], **options)
    return [[int(idx.numel()) for idx in rec.kept] for rec in records]


@pytest.mark.parametrize("workers", [2, 3, 4, 5, 7])
def test_topk_and_gtopk_equal_their_references_through_the_worker(tmp_path, workers):
    jobs = [_job(tmp_path, i, spec, sparsity, workers) for i, (spec, sparsity) in enumerate(JOBS)]
    spawn_ranks(workers, _child, lambda r: (r, jobs), timeout_s=50)
    for (spec, sparsity), job in zip(JOBS, jobs):
        algo, plan = base.get(job["algorithm"]), job["plan"]
        assert not algo.data_dependent  # so the logged bytes must be the plan's, every iteration
        flows = algo.traffic(plan)
        kept = _kept_counts(job)
        for rank in range(workers):
            what = f"{spec} sparsity={sparsity} P={workers} rank {rank}"
            events = [json.loads(line) for line in open(Path(job["log_dir"]) / f"rank{rank}.jsonl")]
            assert not [e for e in events if e["event"] == "error"], what
            its = [e for e in events if e["event"] == "iter"]
            assert [e["iter"] for e in its] == list(range(ITERS)), what
            assert all(e["correct"] and e["max_abs_err"] == 0.0 for e in its), (what, its)
            sent = [[f.dst, f.nic, f.bytes, f.messages] for f in flows if f.src == rank]
            assert [e["sent"] for e in its] == [sent] * ITERS, what
            for it, e in enumerate(its):
                obs = e["observed"]
                assert obs["k"] == plan["k"] and obs["kept"] == kept[it][rank], (what, it, obs)
                if plan["algorithm"] == "topk":
                    assert obs["pairs_sent"] == (workers - 1) * plan["k"], what
                else:
                    role = gtopk.roles(plan, rank)
                    assert {key: obs[key] for key in role} == role, what
                    assert obs["pairs_sent"] == plan["k"] * (len(role["reduce_send"]) + len(role["bcast_send"]))
