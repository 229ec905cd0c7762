"""`syncbed train` without training: the shared config plans localhost runs (emulation/config.py
`load(defaults=TRAIN_DEFAULTS)`, `validate_local`) and refuses bad files in one line; the
trainer's job is the runner's (workers.job_for) on `lo`; `read_run` over a run's event logs;
the convergence report (emulation/report/convergence.py) of the kept experiment is the kept
report.md, byte for byte. The training itself: tests/parallel/test_training.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from emulation import config, trainer
from emulation.report import convergence
from workloads.eventlog import EventLog
from workloads.job import Job

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
KEPT = REPO / "docs" / "results" / "convergence-gtopk"


def _file(tmp_path, **keys) -> Path:
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump({"model": "lenet5", "workers": [2], "algorithms": ["ring"], "iters": 4, **keys}))
    return path


def _load(path, **overrides):
    return config.load(path, defaults=config.TRAIN_DEFAULTS, **overrides)


def test_the_convergence_file_plans_nine_runs_in_file_order():
    cfg = _load(REPO / "experiments" / "convergence_gtopk.yaml")
    runs = config.validate_local(cfg)
    assert [r.slug for r in runs] == [f"{i:02d}-p{p}-{s}" for i, (p, s) in enumerate(
        ((p, s) for p in (4, 8, 16) for s in ("ring", "topk-density-0-001", "gtopk-density-0-001")), 1)]
    assert [r.dense for r in runs[:3]] == [True, False, False]
    assert all(r.hosts == ["localhost"] * r.workers and r.model.spec == "resnet20" for r in runs)
    assert trainer.settings(cfg, runs) == {**yaml.safe_load((KEPT / "config.yaml").read_text()), "warmup": 0,
                                           "out": "results"}


def test_training_defaults_fill_what_a_file_leaves_out(tmp_path):
    cfg = _load(_file(tmp_path))
    assert (cfg.name, cfg.warmup, cfg.batch, cfg.check_iters, cfg.eval_every, cfg.timeout, cfg.train) == (
        "train", 0, 8, 3, 10, 900.0, True)
    assert config.load(None).warmup == 1  # syncbed run's own defaults are untouched
    cfg = _load(_file(tmp_path, workers=3, lr_milestones=2), iters=5)
    assert (cfg.iters, cfg.lr_milestones) == (5, [2])
    assert [r.workers for r in config.validate_local(cfg)] == [3]


@pytest.mark.parametrize("keys,what", [
    ({"workers": [2, 0]}, "workers=[2, 0] is invalid: must be an integer >= 1 or a list of them"),
    ({"servers": 1}, "servers=1 is invalid: syncbed train runs every rank as a worker"),
    ({"model": ["lenet5", "resnet20"]}, "syncbed train trains one model per file"),
    ({"model": "resnet50"}, "real training needs model(s) among"),
    ({"lr_milestones": [4]}, "lr_milestones must be increasing iterations in 1..3, got [4]"),
    ({"lr_milestones": [3, 2]}, "lr_milestones must be increasing"),
    ({"batch": 0}, "batch=0 is invalid"),
    ({"lr": -1}, "lr=-1 is invalid: must be a number > 0"),
    ({"seed": -1}, "seed=-1 is invalid: must be an integer >= 0"),
    ({"train": False}, "train: false is invalid for syncbed train"),
    ({"ddp": True}, "ddp: true runs a DDP script inside the emulation"),
    ({"algorithms": ["gtopk,density=2"]}, "gtopk: option density='2' is invalid"),
    ({"nope": 1}, "unknown option(s) nope"),
    ({"workers": [200], "batch": 8}, ""),  # more images than the digits have: the trainer's own refusal
])
def test_a_bad_training_file_is_one_line(tmp_path, keys, what):
    with pytest.raises(ValueError) as err:
        config.validate_local(_load(_file(tmp_path, **keys)))
    assert what in str(err.value) and "\n" not in str(err.value)


def test_syncbed_train_refuses_before_anything_starts(tmp_path, capsys):
    from emulation import cli

    assert cli.main(["train", str(_file(tmp_path, servers=2, out=str(tmp_path / "results")))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("syncbed: servers=2 is invalid") and len(err.splitlines()) == 1
    assert not (tmp_path / "results").exists()


def test_the_trainers_job_is_the_runners_on_lo(tmp_path):
    cfg = _load(_file(tmp_path, lr_milestones=[2], check_iters=1, eval_every=2, seed=3))
    (run,) = config.validate_local(cfg)
    job = Job.read(trainer.write_job(cfg, run, tmp_path / "run"))
    assert (job.algorithm, job.workers, job.world, job.iters, job.warmup, job.seed) == ("ring", 2, 2, 4, 0, 3)
    assert (job.train, job.train_model, job.batch, job.lr, job.lr_milestones, job.lr_gamma) == (
        True, "lenet5", 8, 0.1, [2], 0.1)
    assert (job.check_iters, job.eval_every, job.dilation, job.go_file) == (1, 2, 0.0, None)
    assert job.hosts == ["localhost", "localhost"] and job.log_dir == str(tmp_path / "run" / "workers")
    assert job.model.spec == "lenet5" and job.model.layers == run.model.to_list()


def test_read_run_over_the_event_logs(tmp_path):
    for rank in (0, 1):
        log = EventLog.for_rank(tmp_path, rank)
        for it in range(3):
            log.iteration(it, False, 10.0 + it, 10.5 + it, 11.0 + it + rank, [], checked=it < 2,
                          **({"correct": True, "max_abs_err": 1e-7} if it < 2 else {}))
            if rank == 0 and it != 1:
                log.train(it, 2.0 - it / 2, 0.25 * (it + 1))
        log.trained(3, "same")
    rec = trainer.read_run(tmp_path, 2)
    assert (rec["iterations"], rec["checked_iterations"], rec["correct"], rec["identical_model"]) == (3, 2, True, True)
    assert rec["curve"] == {"iter": [0, 2], "accuracy": [0.25, 0.75], "loss": [2.0, 1.0]}
    assert (rec["final_accuracy"], rec["final_loss"], rec["train_seconds"], rec["errors"]) == (0.75, 1.0, 4.0, [])
    assert trainer.read_run(tmp_path, 3)["errors"] == ["rank 2: no log"]


def test_the_kept_convergence_report_is_what_the_report_module_writes():
    summary = json.loads((KEPT / "summary.json").read_text())
    assert convergence.report_markdown(summary) == (KEPT / "report.md").read_text()
    gaps = {(c["spec"], c["workers"]): c["gap_pp"] for c in convergence.compare(summary["runs"])}
    assert gaps == {(c["spec"], c["workers"]): c["gap_pp"] for c in summary["comparison"]}
