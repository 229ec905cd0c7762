"""Where a rank's gradient comes from and what its result is checked against: one strategy per
source, all with the same interface, so the worker loop (`workloads/worker.py`) names none.

`source_for(job, rank, layers, reference)` returns the first of `SOURCES` whose `applies`:
- `Server`: a dedicated server (rank >= workers) holds no gradient: zeros of the full size,
  nothing to check (`"server": true`);
- `Training`: real training (`job.train`, workloads/training.py): the rank's real gradient;
  for the first `check_iters` iterations every worker's, for the oracle;
- `SyntheticOracle`: synthetic gradients whose oracle needs every worker's gradient (the
  algorithm has its own `reference`, or the gradients have zero blocks, `job.sparsity`):
  rebuilt on every rank that checks (`job.oracle_ranks`; the others log a digest);
- `Dense`: synthetic dense gradients checked against the closed-form sum
  (`gradients.iteration_data`: nobody else's gradient is needed).

Per iteration the loop calls `gradient(it)` -> (GradientStream, expected or None) before the
barrier, `check(result, expected)` -> the `iter` event's verdict fields after the sync,
`after(it, result)` once the event is logged, and `finish()` at the end.
"""
from __future__ import annotations

import hashlib

import torch

from workloads.algorithms import base
from workloads.gradients import GradientStream, SyntheticGradients
from workloads.job import Job


class Source:
    """The interface, and what every source that holds a gradient shares."""

    def __init__(self, job: Job, rank: int, layers: list, reference, log):
        self.job, self.rank, self.layers, self.log = job, rank, layers, log
        self.size = sum(int(layer[1]) for layer in layers)
        self.reference = reference  # the algorithm's own oracle, or None: the dense sum
        self.memory: dict = {}  # the oracle's own state across iterations (e.g. every rank's residual)

    @classmethod
    def applies(cls, job: Job, rank: int, reference) -> bool:
        raise NotImplementedError

    def gradient(self, it: int) -> tuple[GradientStream, torch.Tensor | None]:
        """This rank's gradient of iteration `it` as a stream, and the expected result (None:
        not checked in this iteration)."""
        raise NotImplementedError

    def verdict(self, result: torch.Tensor, expected: torch.Tensor) -> dict:
        """Exact comparison (synthetic gradients are small integers: every sum is exact)."""
        err = float((result - expected).abs().max()) if self.size else 0.0
        return {"correct": err == 0.0, "max_abs_err": err}

    def check(self, result: torch.Tensor, expected: torch.Tensor | None) -> dict:
        """The `iter` event's verdict: `checked: false` when nothing was compared, and a digest
        of the result when only some ranks check (`job.oracle_ranks`)."""
        fields = {"checked": False} if expected is None else self.verdict(result, expected)
        if self.job.oracle_ranks is not None:
            fields["digest"] = hashlib.blake2b(result.contiguous().numpy().tobytes(), digest_size=8).hexdigest()
        return fields

    def after(self, it: int, result: torch.Tensor) -> None:
        """After the iteration's event is logged (training applies the result)."""

    def finish(self) -> None:
        """After the last iteration."""

    def _oracle(self, inputs: list) -> tuple[torch.Tensor, torch.Tensor]:
        """(this rank's gradient, the expected result) from every worker's gradient."""
        expected = (self.reference or base.dense_reference)(self.job.plan, inputs, self.memory)
        return inputs[self.rank].clone(), expected

    def _stream(self, values: torch.Tensor) -> GradientStream:
        return GradientStream(self.layers, values, self.job.dilation)


class Server(Source):
    """A dedicated server: no gradient, no compute time, nothing to check."""

    @classmethod
    def applies(cls, job, rank, reference) -> bool:
        return rank >= job.workers

    def gradient(self, it):
        return GradientStream(self.layers, None, 0.0), None

    def check(self, result, expected) -> dict:
        return {"correct": True, "max_abs_err": 0.0, "server": True}


class Training(Source):
    """The rank's real gradient of `train_model` on the digits; every replica applies the result."""

    @classmethod
    def applies(cls, job, rank, reference) -> bool:
        return job.train

    def __init__(self, job, rank, layers, reference, log):
        super().__init__(job, rank, layers, reference, log)
        from workloads.training import DataParallelDigits  # noqa: PLC0415 (scikit-learn, only here)

        model = job.train_model
        self.trainer = DataParallelDigits(rank, job.workers, job.seed, job.batch, job.lr, model,
                                          list(job.lr_milestones), job.lr_gamma)
        sizes = [int(layer[1]) for layer in layers]
        if sizes not in (self.trainer.layer_sizes(False), self.trainer.layer_sizes(True)):
            raise ValueError(f"train: the job's layers (model {job.model.spec!r}) are not those of "
                             f"train_model {model!r}; training needs model {model} unscaled")
        self.total = job.warmup + job.iters

    def gradient(self, it):
        # past check_iters: this rank's own gradient only, nothing checked (nor the oracle's memory updated)
        if self.job.check_iters is None or it < self.job.check_iters:
            values, expected = self._oracle(self.trainer.all_gradients(it))
        else:
            values, expected = self.trainer.own_gradient(it), None
        return self._stream(values), expected

    def verdict(self, result, expected) -> dict:
        ok, err = self.trainer.matches(result, expected)
        return {"checked": True, "correct": ok, "max_abs_err": err}

    def after(self, it, result) -> None:
        self.trainer.apply(result, it)  # every replica, checked or not: all ranks stay identical
        if self.rank == 0 and self.job.evaluates_after(it):
            loss, acc = self.trainer.evaluate()
            self.log.train(it, loss, acc)

    def finish(self) -> None:  # equal on every rank when the replicas stayed identical
        self.log.trained(self.total, self.trainer.digest())


class SyntheticOracle(Source):
    """Synthetic gradients checked against an oracle over every worker's gradient."""

    @classmethod
    def applies(cls, job, rank, reference) -> bool:
        return reference is not None or bool(job.sparsity)

    def __init__(self, job, rank, layers, reference, log):
        super().__init__(job, rank, layers, reference, log)
        self.synthetic = SyntheticGradients(job.workers, self.size, job.seed, job.sparsity)
        # every worker's gradient costs O(workers x elements) memory on each rank that checks;
        # the runner may name the ranks that check, the others log a digest of their result
        self.checks = job.oracle_ranks is None or rank in job.oracle_ranks

    def gradient(self, it):
        if self.checks:
            values, expected = self._oracle(self.synthetic.all_workers(it))
        else:
            values, expected = self.synthetic.mine(self.rank, it), None
        return self._stream(values), expected


class Dense(Source):
    """Dense synthetic gradients: this rank's own and the closed-form sum."""

    @classmethod
    def applies(cls, job, rank, reference) -> bool:
        return True

    def __init__(self, job, rank, layers, reference, log):
        super().__init__(job, rank, layers, reference, log)
        self.synthetic = SyntheticGradients(job.workers, self.size, job.seed, job.sparsity)

    def gradient(self, it):
        values, expected = self.synthetic.mine_and_sum(self.rank, it)
        return self._stream(values), expected


SOURCES = (Server, Training, SyntheticOracle, Dense)  # the first that applies is the rank's


def source_for(job: Job, rank: int, layers: list, reference, log) -> Source:
    """The gradient source of `rank` in `job` (`reference`: the algorithm's, or None)."""
    cls = next(c for c in SOURCES if c.applies(job, rank, reference))
    return cls(job, rank, layers, reference, log)
