"""Real training of ResNet-20 on the digits through the real worker loop, on localhost (`lo`).

Ranks are forked from this process (`spawn_ranks`) and run `workloads.worker.run` itself,
so what is asserted is the worker's own log: every checked iteration of `topk` and `gtopk`
equals the algorithm's reference over every worker's real gradient (residuals carried by
both sides), `check_iters` stops the checks (and the oracle's extra backward passes) where
it says, every rank ends with the same parameters, and a dense run learns. The last tests
run `syncbed train` (emulation/trainer.py) on a tiny experiment file.
"""
import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
import torch

from workloads import eventlog, worker
from workloads.algorithms import base
from workloads.job import Job
from workloads.models.specs import load
from workloads.training import DataParallelDigits, DigitsTrainer
from tests.parallel.spawn import spawn_ranks

pytestmark = pytest.mark.parallel

REPO = Path(__file__).resolve().parents[2]
MODEL = "resnet20"
WORKERS = 3
BATCH = 8
SEED = 2


@pytest.fixture(scope="module", autouse=True)
def _digits_loaded():
    """Load scikit-learn and the digits once here, so forked ranks find them loaded."""
    DigitsTrainer(0, 1, SEED, BATCH, MODEL)


def _job(tmp_path, spec, iters, check_iters, eval_every=1, lr=0.1):
    layers = load(MODEL).to_list()
    algo, plan = base.plan_for(spec, base.PlanContext(WORKERS, tuple(n for _, n, _ in layers)))
    return {"algorithm": algo.name, "plan": plan, "groups": [], "workers": WORKERS, "servers": 0,
            "world": WORKERS, "model": {"spec": MODEL, "layers": layers}, "iters": iters, "warmup": 0,
            "seed": SEED, "dilation": 0.0, "store": str(tmp_path / "store"), "log_dir": str(tmp_path / "w"),
            "timeout_s": 60, "train": True, "train_model": MODEL, "batch": BATCH, "lr": lr,
            "check_iters": check_iters, "eval_every": eval_every}


def _child(rank, job, out):
    """One rank: the worker loop, counting how often the oracle computed every gradient."""
    try:
        calls = []
        every = DataParallelDigits.all_gradients

        def counted(self, iteration):
            calls.append(iteration)
            return every(self, iteration)

        DataParallelDigits.all_gradients = counted  # in this forked rank only
        log = eventlog.EventLog.for_rank(job["log_dir"], rank)
        worker.run(job, rank, ["lo"], log)
        out.put(("ok", rank, calls))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


def _events(job, rank, kind):
    with open(Path(job["log_dir"]) / f"rank{rank}.jsonl") as f:
        return [e for e in map(json.loads, f) if e["event"] == kind]


def _simulate(spec, iters):
    """The same training in this process, every step the reference's result: what the
    ranks must end with. One thread, as the workers compute."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        dp = DataParallelDigits(0, WORKERS, SEED, BATCH, 0.1, MODEL)
        algo, plan = base.plan_for(spec, base.PlanContext(WORKERS, tuple(dp.layer_sizes())))
        memory = {}
        for it in range(iters):
            dp.apply((algo.reference or base.dense_reference)(plan, dp.all_gradients(it), memory), it)
        return dp.digest()
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("spec", ["gtopk,density=0.001", "topk,density=0.001"])
def test_sparse_training_matches_the_reference_until_check_iters(tmp_path, spec):
    iters, check = 6, 4
    job = _job(tmp_path, spec, iters, check)
    assert job["plan"]["k"] == 270  # 0.001 of ResNet-20's 269,722 elements, rounded up
    calls = spawn_ranks(WORKERS, _child, lambda r: (r, job), timeout_s=120)
    assert all(c == list(range(check)) for c in calls.values()), calls  # no oracle past check_iters
    digests = set()
    for rank in range(WORKERS):
        its = _events(job, rank, "iter")
        assert [e["iter"] for e in its] == list(range(iters))
        for e in its[:check]:
            assert e["checked"] and e["correct"], e
            assert e["max_abs_err"] == 0.0  # the sparse executors equal their reference bit for bit
            assert e["observed"]["k"] == 270
        for e in its[check:]:
            assert e["checked"] is False and "correct" not in e and "max_abs_err" not in e
        digests |= {e["params_sha1"] for e in _events(job, rank, "trained")}
    assert len(digests) == 1, "every rank must hold the same model"
    # and that model is the reference's: checked or not, every step applied the same result
    assert digests == {_simulate(spec, iters)}
    train = _events(job, 0, "train")
    assert [e["iter"] for e in train] == list(range(iters))  # eval_every 1: after each
    assert all(_events(job, r, "train") == [] for r in range(1, WORKERS))


def test_no_check_at_all_and_dense_training_learns(tmp_path):
    iters = 30
    job = _job(tmp_path, "ring", iters, check_iters=0, eval_every=10)
    calls = spawn_ranks(WORKERS, _child, lambda r: (r, job), timeout_s=120)
    assert calls == {r: [] for r in range(WORKERS)}
    for rank in range(WORKERS):
        its = _events(job, rank, "iter")
        assert len(its) == iters and not any(e["checked"] for e in its)
    assert len({e["params_sha1"] for r in range(WORKERS) for e in _events(job, r, "trained")}) == 1
    train = _events(job, 0, "train")
    assert [e["iter"] for e in train] == [0, 9, 19, 29]
    assert train[-1]["loss"] < 0.8 * train[0]["loss"], train
    assert train[-1]["accuracy"] > train[0]["accuracy"], train


def test_training_options_are_refused_with_one_line():
    job = _job(Path("/nowhere"), "ring", 1, None)  # the training options are the Job's (workloads/job.py)
    for bad in ({"check_iters": -1}, {"check_iters": 1.5}, {"check_iters": True}, {"eval_every": 0}):
        with pytest.raises(ValueError, match=f"^job: {next(iter(bad))}=.* is invalid: must be an int >= [01]"):
            Job.from_json({**job, **bad})
    defaults = Job.from_json({k: v for k, v in job.items() if k not in ("check_iters", "eval_every")})
    assert (defaults.check_iters, defaults.eval_every) == (None, 1)
    assert (lambda j: (j.check_iters, j.eval_every))(Job.from_json({**job, "check_iters": 0, "eval_every": 5})) == (0, 5)
    with pytest.raises(ValueError, match="lr_milestones"):
        DataParallelDigits(0, 1, model=MODEL, lr_milestones=[5, 3])
    with pytest.raises(ValueError, match="unknown model 'vgg19'; valid: lenet5, resnet18, resnet20"):
        DataParallelDigits(0, 1, model="vgg19")
    dp = DataParallelDigits(0, 2, lr=0.1, model=MODEL, lr_milestones=[3, 5])
    assert [dp.lr_at(i) for i in (0, 2, 3, 4, 5, 9)] == pytest.approx([0.1, 0.1, 0.01, 0.01, 0.001, 0.001])
    # the network is exactly the `resnet20` spec: its tensors are the spec's layers
    assert dp.layer_sizes() == [layer.numel for layer in load(MODEL).layers]
    assert dp.replicas[0].layer_names() == [layer.name for layer in load(MODEL).layers]
    assert sum(dp.layer_sizes(tensors=False)) == sum(dp.layer_sizes()) == 269_722


def test_worker_refuses_a_job_whose_layers_are_not_the_trained_network(tmp_path):
    job = _job(tmp_path, "ring", 1, 0)
    job["model"] = {"spec": "lenet5", "layers": load("lenet5").to_list()}
    job["plan"] = base.plan_for("ring", base.PlanContext(1, (61_706,)))[1]
    job.update(workers=1, world=1)
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    proc = subprocess.run([sys.executable, "-m", "workloads.worker", "--job", str(path), "--rank", "0",
                           "--nics", "lo"], cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    errors = _events(job, 0, "error")
    assert len(errors) == 1 and "are not those of train_model 'resnet20'" in errors[0]["message"]


def test_syncbed_train_writes_summary_report_and_plot(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(json.dumps({  # YAML is a superset of JSON
        "name": "tiny", "model": MODEL, "workers": [2], "algorithms": ["ring", "gtopk,density=0.001"],
        "iters": 4, "batch": 8, "lr": 0.1, "lr_milestones": [3], "check_iters": 2, "eval_every": 2,
        "timeout": 120, "out": str(tmp_path / "results")}))
    proc = subprocess.run([sys.executable, "-m", "emulation.cli", "train", str(config)], cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True,
                          timeout=150)
    assert proc.returncode == 0, proc.stderr
    progress = [line for line in proc.stdout.splitlines() if line.startswith("[")]
    assert [line.split(":")[0] for line in progress] == ["[1/2] P=2 ring", "[2/2] P=2 gtopk,density=0.001"]
    (out,) = (tmp_path / "results").iterdir()
    assert out.name.endswith("-tiny")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["wall_seconds"] > 0
    assert [(r["algorithm"], r["spec"], r["workers"]) for r in summary["runs"]] == [
        ("ring", "ring", 2), ("gtopk", "gtopk,density=0.001", 2)]
    for run in summary["runs"]:
        assert run["iterations"] == 4 and run["checked_iterations"] == 2 and run["correct"]
        assert run["identical_model"] and run["status"] == "ok" and run["wall_seconds"] > 0
        assert run["curve"]["iter"] == [0, 1, 3] and len(run["curve"]["accuracy"]) == 3
        assert run["final_accuracy"] == run["curve"]["accuracy"][-1]
        assert run["final_loss"] == run["curve"]["loss"][-1]
    assert [c["spec"] for c in summary["comparison"]] == ["gtopk,density=0.001"]
    assert (out / "convergence.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (out / "report.md").read_text()
    assert "| algorithm | P=2 |" in report and "| ring (dense) |" in report and "convergence.png" in report
    # the runner's job writer, on lo: no profiled compute added, no go file, the file's lr schedule
    job = Job.read(out / summary["runs"][1]["dir"] / "job.json")
    assert (job.train, job.train_model, job.dilation, job.go_file) == (True, MODEL, 0.0, None)
    assert (job.hosts, job.lr_milestones, job.lr_gamma, job.warmup) == (["localhost"] * 2, [3], 0.1, 0)
    # a resumed session keeps the finished runs and runs nothing again
    again = subprocess.run([sys.executable, "-m", "emulation.cli", "train", str(config), "--resume", str(out)],
                           cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
                           text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert sum(line.endswith("(kept)") for line in again.stdout.splitlines()) == 2
    resumed = json.loads((out / "summary.json").read_text())
    assert resumed["runs"] == summary["runs"] and [s["runs"] for s in resumed["sessions"]] == [2, 0]


def test_syncbed_train_refuses_a_bad_spec_before_starting_anything(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text(json.dumps({"model": MODEL, "workers": [2], "algorithms": ["gtopk,density=2"],
                                  "out": str(tmp_path / "results")}))
    proc = subprocess.run([sys.executable, "-m", "emulation.cli", "train", str(config)], cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("syncbed: ") and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "results").exists()
