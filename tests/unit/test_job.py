"""workloads/job.py: the one definition of job.json. A job survives the JSON round trip
field for field, every field has a default but the required ones, and anything invalid is
refused in one line naming the field and what is valid."""
from __future__ import annotations

import dataclasses
import json

import pytest

from workloads.algorithms.base import GroupSpec
from workloads.job import Crash, Job, JobModel, Probe

pytestmark = pytest.mark.unit


def job(**kw) -> Job:
    return Job(**{"algorithm": "ring", "plan": {"algorithm": "ring"}, "workers": 3, "world": 4, "servers": 1,
                  "model": JobModel("synthetic,mb=1", [["fc1", 1000, 0.01], ["fc0", 24, 0.0]]), "iters": 5,
                  "store": "/run/store", "log_dir": "/run/workers", **kw})


def test_round_trip_through_json_file(tmp_path):
    j = job(algo_spec="ring", groups=[GroupSpec("g0", (0, 1), 1)], warmup=1, seed=7, dilation=2.5,
            hosts=["h0", "h1", "h2", "h3"], go_file="/run/go", crash=Crash(2, 3),
            background=[{"src": "h9", "dst": "h8", "mbps": None, "port": 5201}],
            sparsity={"block": 256, "zero_blocks": 0.9, "zero_entries": 0.5}, oracle_ranks=[0],
            train=True, train_model="resnet20", batch=8, lr=0.05, lr_milestones=[3, 6], lr_gamma=0.5,
            check_iters=2, eval_every=3, target_accuracy=0.9)
    j.check()
    path = j.write(tmp_path / "job.json")
    again = Job.read(path)
    assert again == j
    assert again.to_json() == json.loads(path.read_text()) == j.to_json()
    assert again.groups == [GroupSpec("g0", (0, 1), 1)] and again.crash == Crash(2, 3)
    assert again.layers == [("fc1", 1000, 0.01), ("fc0", 24, 0.0)] and again.elements == 1024


def test_json_keys_are_those_job_json_always_had():
    d = job(probe=Probe([4096, 16384], 2), ddp=False).check().to_json()
    assert set(d) == {f.name for f in dataclasses.fields(Job)}
    assert d["model"] == {"spec": "synthetic,mb=1", "layers": [["fc1", 1000, 0.01], ["fc0", 24, 0.0]]}
    assert d["probe"] == {"sizes_bytes": [4096, 16384], "reps": 2} and d["crash"] is None
    assert d["groups"] == [] and d["algo_spec"] == "ring"  # "": the algorithm's name


def test_an_old_job_json_with_only_the_required_keys_reads_with_defaults():
    old = {"algorithm": "ps", "plan": {}, "workers": 2, "world": 2, "model": {"spec": "s", "layers": [["a", 4, 0]]},
           "iters": 3, "store": "s", "log_dir": "l", "timeout_s": 60}
    j = Job.from_json(old)
    assert (j.servers, j.warmup, j.seed, j.dilation, j.timeout_s, j.go_file, j.crash) == (0, 0, 0, 1.0, 60.0, None, None)
    assert isinstance(j.timeout_s, float) and j.spec == "ps" and not j.train and not j.ddp


@pytest.mark.parametrize("change,pattern", [
    ({"iters": -1}, r"^job: iters=-1 is invalid: must be an int >= 0$"),
    ({"workers": True}, r"^job: workers=True is invalid: must be an int >= 1$"),
    ({"world": 2}, r"^job: world=2 is invalid: must be an int >= 3$"),
    ({"servers": 0}, r"^job: servers=0 is invalid: must be world - workers = 1$"),
    ({"timeout_s": 0}, r"^job: timeout_s=0 is invalid: must be a number > 0"),
    ({"check_iters": 1.5}, r"^job: check_iters=1.5 is invalid: must be an int >= 0 .* or null"),
    ({"check_iters": -1}, r"^job: check_iters=-1 is invalid"),
    ({"check_iters": True}, r"^job: check_iters=True is invalid"),
    ({"eval_every": 0}, r"^job: eval_every=0 is invalid: must be an int >= 1$"),
    ({"crash": {"rank": 1}}, r"^job: crash=\{'rank': 1\} is invalid: must be \{rank, iter\} or null$"),
    ({"model": {"spec": "s", "layers": [["a", 0, 0.0]]}}, r"^job: model.layers=\['a', 0, 0.0\] is invalid"),
    ({"groups": [{"id": "g", "ranks": [0, 9]}]}, r"^job: groups\[g\].ranks=\[0, 9\] is invalid: must be ranks in 0..3$"),
    ({"oracle_ranks": [3]}, r"^job: oracle_ranks=\[3\] is invalid: must be a list of worker ranks in 0..2"),
    ({"ddp": 1}, r"^job: ddp=1 is invalid: must be true or false$"),
    ({"ddp": True}, r"^job: servers=1 is invalid: must be 0 with ddp"),
    ({"colour": "red"}, r"^job: unknown field\(s\) colour; valid: algorithm, plan, "),
])
def test_a_bad_field_is_refused_in_one_line(change, pattern):
    d = {**job().check().to_json(), **change}
    with pytest.raises(ValueError, match=pattern) as err:
        Job.from_json(d)
    assert "\n" not in str(err.value)


def test_a_missing_required_field_is_named():
    d = job().check().to_json()
    del d["store"], d["iters"]
    with pytest.raises(ValueError, match=r"^job: missing field\(s\) iters, store; a job needs algorithm, plan, "):
        Job.from_json(d)
    with pytest.raises(ValueError, match="^job: must be a JSON object"):
        Job.from_json([1])


def test_rank_0_evaluates_after_the_first_every_nth_and_the_last_iteration():
    j = job(warmup=1, iters=9, eval_every=4).check()
    assert [i for i in range(10) if j.evaluates_after(i)] == [0, 3, 7, 9]
