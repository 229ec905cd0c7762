"""`ddp: true` (issue 24): an experiment that runs a DistributedDataParallel model with a syncbed
hook inside the Mininet hosts. Pure parts: the config refuses what cannot run (no training,
servers, algorithms that cannot be hooks) in one line, the job carries the DDP keys, and the
analysis expects the algorithm's closed form summed over the buckets the ranks logged."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulation import analysis, config, workers
from workloads import ddp_hooks
from workloads.algorithms import base

pytestmark = pytest.mark.unit

EXPERIMENT = Path(__file__).resolve().parents[2] / "experiments" / "ddp_resnet20_digits.yaml"


def cfg(**kw):
    kw = {"topologies": ["fattree,k=4"], "algorithms": ["ring"], "workers": 4, "model": "lenet5",
          "train": True, "ddp": True, **kw}
    return config.load(None, **kw)


def test_the_ddp_experiment_file_plans_and_writes_ddp_jobs(tmp_path):
    c = config.load(EXPERIMENT)
    runs = config.validate(c)
    assert c.ddp and c.train and [r.spec for r in runs] == ["ring", "ps", "topk,density=0.01", "gtopk,density=0.01"]
    assert {r.model.spec for r in runs} == {"resnet20"}
    job = json.loads(workers.write_job(runs[2], c, tmp_path, []).read_text())
    assert job["ddp"] is True and job["bucket_mb"] == 0.25 and job["train_model"] == "resnet20"
    assert job["algo_spec"] == "topk,density=0.01" and job["check_iters"] == 3
    plain = json.loads(workers.write_job(runs[0], config.load(None, train=True, model="lenet5"), tmp_path, []).read_text())
    assert plain["ddp"] is False  # a plain training job is not a DDP job (every Job field is written)


@pytest.mark.parametrize("kw,pattern", [
    ({"train": False}, "set train: true"),
    ({"algorithms": ["bml"], "topologies": ["bcube,n=2,k=2"]}, "bml cannot be a DDP hook"),
    ({"algorithms": ["mgwfbp"]}, "mgwfbp cannot be a DDP hook.*bucket_cap_mb"),
    ({"algorithms": ["gloo"]}, "gloo cannot be a DDP hook: gloo under DDP is DDP's own all-reduce"),
    ({"algorithms": ["ps"], "servers": 2}, "servers=2 is invalid"),
    ({"bucket_mb": 0}, "bucket_mb=0 is invalid"),
])
def test_ddp_refuses_what_cannot_run_in_one_line(kw, pattern):
    with pytest.raises(ValueError, match=pattern) as err:
        config.validate(cfg(**kw))
    assert "\n" not in str(err.value)


def test_the_analysis_expects_the_closed_form_of_the_logged_buckets():
    logs = {0: [{"event": "iter", "iter": i, "observed": {"buckets": [1000, 500, 61706 - 1500]}} for i in range(3)]
            + [{"event": "iter", "iter": 3, "observed": {"buckets": [7]}}],  # past the syncs counted
            1: [{"event": "iter", "iter": 0, "observed": {"buckets": [1]}}]}  # rank 0's buckets are the run's
    job = {"algorithm": "topk", "algo_spec": "topk,density=0.01", "world": 4}
    got = analysis.ddp_flows(job, logs, syncs=3)
    algo = base.get("topk")
    want = base.merge_flows(f for n in [1000, 500, 61706 - 1500] * 3
                            for f in algo.traffic(base.plan_for("topk,density=0.01", base.PlanContext(4, (n,)))[1]))
    assert got == want and got == ddp_hooks.closed_form("topk,density=0.01", 4, [1000, 500, 60206] * 3)
    assert all(f.nic == 0 for f in got) and len(got) == 4  # the ring AllGather: each rank to its successor


def test_a_bucket_plan_stays_on_nic_0_and_the_hook_names_what_is_not_a_hook():
    from topologies.spec import build

    bc = build("bcube,n=2,k=2")  # forest on BCube, planned for one NIC: the one process group DDP has
    plan = ddp_hooks.bucket_plan("forest,fallback=none", 4, 4000, bc, bc.hosts()[:4])
    assert {f.nic for f in base.get("forest").traffic(plan)} == {0}
    assert set(ddp_hooks.NOT_HOOKS) == {"bml", "wfbp", "single", "fusion", "mgwfbp"}


def test_the_bucket_oracle_keeps_residuals_per_parameter_across_rebuilt_buckets():
    import torch

    oracle = ddp_hooks.BucketOracle("topk,density=0.5", 2)
    a = [torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([4.0, 3.0, 2.0, 1.0])]
    # parameters 7 (2 elements) and 9 (2 elements) in one bucket: top-2 of each rank's 4 entries
    out = oracle.expected(0, [(7, 0, 2), (9, 2, 2)], a)
    assert torch.equal(out, torch.tensor([4.0, 3.0, 3.0, 4.0]) / 2)
    # what was not sent stays per parameter: rank 0 kept [1, 2] of parameter 7, rank 1 [2, 1] of 9
    assert torch.equal(oracle.residuals[0][7], torch.tensor([1.0, 2.0]))
    assert torch.equal(oracle.residuals[1][9], torch.tensor([2.0, 1.0]))
    # the next step's bucket holds parameter 9 first: the residual follows the parameter
    zero = [torch.zeros(4), torch.zeros(4)]
    out = oracle.expected(0, [(9, 0, 2), (7, 2, 2)], zero)
    assert torch.equal(out, torch.tensor([2.0, 1.0, 1.0, 2.0]) / 2)
