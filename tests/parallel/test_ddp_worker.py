"""`"ddp": true` jobs through the real worker (workloads/worker.py -> workloads/ddp_worker.py)
with Gloo on localhost: what the emulation runs inside the Mininet hosts, minus Mininet.

Each forked rank runs `worker.run` on a DDP job (LeNet-5 on the digits, small buckets) for
every hook; then, from the logs alone, as the analysis reads them: every iteration checked
against the oracle and correct, every bucket's bytes equal to the algorithm's closed form for
its size (`observed.closed_form`), the bytes each rank logged equal to `analysis.ddp_flows`
(the closed form over the logged buckets, which the analysis lays onto the routes and checks
the capture against), every replica ending with the same parameters, and the run's timeline
valid."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulation import analysis, timeline
from tests.parallel.spawn import jobs_child as _child, spawn_ranks
from workloads import eventlog, worker
from workloads.algorithms import base

pytestmark = pytest.mark.parallel

SPECS = ("ring", "ps", "topk,density=0.01", "gtopk,density=0.01")
ITERS, WARMUP = 3, 1


def _job(tmp_path, i, spec, world):
    from workloads.training import DigitsTrainer

    sizes = DigitsTrainer(0, world, 0, 16, "lenet5").layer_sizes()
    layers = [[f"l{j}", n, 0.0] for j, n in enumerate(sizes)]
    _, plan = base.plan_for(spec, base.PlanContext(world, tuple(sizes)))
    return {"algorithm": plan["algorithm"], "algo_spec": spec, "plan": plan, "groups": [], "workers": world,
            "servers": 0, "world": world, "model": {"spec": "lenet5", "layers": layers}, "iters": ITERS,
            "warmup": WARMUP, "seed": 0, "store": str(tmp_path / f"store{i}"), "log_dir": str(tmp_path / f"job{i}"),
            "timeout_s": 60, "train": True, "train_model": "lenet5", "batch": 16, "lr": 0.1, "check_iters": None,
            "eval_every": 1, "ddp": True, "bucket_mb": 0.05}


@pytest.mark.parametrize("world", [2, 3])
def test_ddp_jobs_train_correctly_and_send_the_closed_form(tmp_path, world):
    jobs = [_job(tmp_path, i, spec, world) for i, spec in enumerate(SPECS)]
    spawn_ranks(world, _child, lambda r: (r, jobs), timeout_s=240)
    for spec, job in zip(SPECS, jobs):
        logs, torn = eventlog.read_logs(job["log_dir"])
        assert not torn and sorted(logs) == list(range(world))
        digests = set()
        for rank, events in logs.items():
            kinds = [e["event"] for e in events]
            assert "error" not in kinds, (spec, rank, [e for e in events if e["event"] == "error"])
            iters = [e for e in events if e["event"] == "iter"]
            assert [e["iter"] for e in iters] == list(range(WARMUP + ITERS))
            for e in iters:
                assert e["checked"] and e["correct"], (spec, rank, e["iter"], e.get("max_abs_err"))
                assert e["observed"]["closed_form"] and e["observed"]["ddp"], (spec, rank, e)
                assert len(e["observed"]["buckets"]) > 1  # 0.05 MiB buckets of a 241 KiB gradient
                assert sum(e["observed"]["buckets"]) == sum(layer[1] for layer in job["model"]["layers"])
                assert e["t_start"] <= e["t_ready"] <= e["t_done"]
            digests |= {e["params_sha1"] for e in events if e["event"] == "trained"}
        assert len(digests) == 1, f"{spec}: the replicas diverged"
        # the analysis's expectation, from rank 0's logged buckets, equals what every rank sent
        syncs = WARMUP + ITERS
        expected = {(f.src, f.dst, f.nic): (f.bytes, f.messages) for f in analysis.ddp_flows(job, logs, syncs)}
        logged = {(f.src, f.dst, f.nic): (f.bytes, f.messages)
                  for f in analysis.logged_flows(Path(job["log_dir"]), syncs, logs)}
        assert logged == expected, spec
        times = analysis.sync_times(Path(job["log_dir"]), world, logs)
        assert times["correct"] and times["complete_iters"] == ITERS
        trace = json.loads(json.dumps(timeline.build(logs)))
        assert {e["pid"] for e in trace["traceEvents"] if e.get("name") == "process_name"} == set(range(world))
