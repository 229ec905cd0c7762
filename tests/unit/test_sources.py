"""workloads/sources.py: one gradient source per kind, picked by the first that applies, all
with the same interface (gradient, check, after, finish); the worker loop names none."""
from __future__ import annotations

import pytest
import torch

from workloads import gradients, sources
from workloads.job import Job, JobModel

pytestmark = pytest.mark.unit

LAYERS = [["fc1", 96, 0.0], ["fc0", 32, 0.0]]


def job(**kw) -> Job:
    return Job.from_json({"algorithm": "ring", "plan": {}, "workers": 3, "world": 4, "servers": 1,
                          "model": {"spec": "synthetic,test", "layers": LAYERS}, "iters": 2,
                          "store": "/s", "log_dir": "/l", "dilation": 0.0, **kw})


def produced(stream) -> torch.Tensor:
    """The whole gradient a stream produces (what the executor would read)."""
    stream.start()
    return stream.wait_all()


def picked(j: Job, rank: int, reference=None) -> type:
    return next(c for c in sources.SOURCES if c.applies(j, rank, reference))


def never(plan, inputs, memory):  # an algorithm's own reference: here twice the dense sum
    return 2 * sum(inputs)


def test_the_first_source_that_applies_is_the_ranks():
    assert picked(job(), 3) is sources.Server  # rank >= workers, training or not
    assert picked(job(train=True, train_model="lenet5"), 3) is sources.Server
    assert picked(job(train=True, train_model="lenet5"), 0) is sources.Training
    assert picked(job(), 0, reference=never) is sources.SyntheticOracle
    assert picked(job(sparsity={"block": 16, "zero_blocks": 0.5}), 0) is sources.SyntheticOracle
    assert picked(job(), 0) is sources.Dense
    assert all(issubclass(c, sources.Source) for c in sources.SOURCES)


def test_dense_is_the_closed_form_and_checks_exactly():
    s = sources.source_for(job(), 1, job().layers, None, log=None)
    stream, expected = s.gradient(0)
    mine, total = gradients.iteration_data(1, 3, 128, 0, 0)
    assert torch.equal(produced(stream), mine) and torch.equal(expected, total)
    assert s.check(expected.clone(), expected) == {"correct": True, "max_abs_err": 0.0}
    assert s.check(expected + 1, expected) == {"correct": False, "max_abs_err": 1.0}


def test_an_oracle_over_every_worker_and_the_ranks_that_do_not_check():
    j = job(oracle_ranks=[0])
    checking = sources.source_for(j, 0, j.layers, never, log=None)
    _, expected = checking.gradient(1)
    inputs = gradients.SyntheticGradients(3, 128, 0).all_workers(1)
    assert torch.equal(expected, 2 * sum(inputs))
    verdict = checking.check(expected, expected)
    assert verdict["correct"] is True and len(verdict["digest"]) == 16  # only some check: every rank digests
    other = sources.source_for(j, 2, j.layers, never, log=None)
    stream, nothing = other.gradient(1)
    assert nothing is None and torch.equal(produced(stream), inputs[2])
    assert other.check(2 * sum(inputs), None) == {"checked": False, "digest": verdict["digest"]}


def test_a_server_holds_nothing_and_is_not_checked():
    s = sources.source_for(job(), 3, job().layers, None, log=None)
    stream, expected = s.gradient(0)
    assert expected is None and not produced(stream).any()  # zeros of the full size
    assert s.check(torch.zeros(128), None) == {"correct": True, "max_abs_err": 0.0, "server": True}
