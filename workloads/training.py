"""Real training mode: data-parallel SGD on scikit-learn's digits (no download).

The network is a key of `models.TRAIN_MODELS` (job option `train_model`): LeNet-5 (the
default) or ResNet-20, whose 269,722-element gradient keeps k = 270 entries at gTop-k's
density 0.001. Each worker rank keeps one `DigitsTrainer` replica per worker rank (W
networks, identical parameters, each on its own data shard, sharing one copy of the data).
Its own gradient comes from replica `rank`; the oracle needs every worker's gradient, so
`all_gradients` computes all W locally (no network): O(W) backward passes per rank and
iteration, O(W^2) over the job. `own_gradient` computes replica `rank`'s alone, for the
iterations past the job's `check_iters`, where nothing is checked any more.

After the sync every replica applies the synchronized sum, checked or not, so all ranks
hold the same parameters and rank 0's held-out loss/accuracy can be plotted against
iterations. Synchronized SGD with W workers of batch b equals single-process SGD with
batch W*b (tested in test_models; for LeNet-5 exactly, ResNet-20's BatchNorm normalises
per rank as DDP without SyncBatchNorm does). A replica whose gradient is no longer
computed keeps its last BatchNorm running statistics; only replica `rank` is evaluated.

The learning rate follows torch's `MultiStepLR`: `lr`, multiplied by `lr_gamma` at each
iteration of `lr_milestones` (none by default: constant, as before).
"""
from __future__ import annotations

import hashlib

import torch

from workloads.models import DigitsTrainer

RTOL, ATOL = 1e-4, 1e-6  # the sync sums floats in another order than the oracle


class DataParallelDigits:
    def __init__(self, rank: int, workers: int, seed: int = 0, batch: int = 32, lr: float = 0.1,
                 model: str = "lenet5", lr_milestones=(), lr_gamma: float = 0.1):
        if not (isinstance(lr, (int, float)) and lr > 0):
            raise ValueError(f"DataParallelDigits: lr must be a number > 0, got {lr!r}")
        milestones = list(lr_milestones or ())
        if any(not isinstance(m, int) or isinstance(m, bool) or m < 1 for m in milestones) \
                or milestones != sorted(set(milestones)):
            raise ValueError(f"DataParallelDigits: lr_milestones must be increasing ints >= 1 "
                             f"(iterations where lr is multiplied by lr_gamma), got {lr_milestones!r}")
        if not (isinstance(lr_gamma, (int, float)) and lr_gamma > 0):
            raise ValueError(f"DataParallelDigits: lr_gamma must be a number > 0, got {lr_gamma!r}")
        self.rank, self.workers, self.lr = rank, workers, float(lr)
        self.lr_milestones, self.lr_gamma = milestones, float(lr_gamma)
        self.replicas = [DigitsTrainer(r, workers, seed, batch, model) for r in range(workers)]

    def layer_sizes(self, tensors: bool | None = None) -> list:
        return self.replicas[0].layer_sizes(tensors)

    def lr_at(self, iteration: int) -> float:
        """The learning rate of `iteration` (MultiStepLR: lr * gamma^(milestones <= iteration))."""
        return self.lr * self.lr_gamma ** sum(m <= iteration for m in self.lr_milestones)

    def own_gradient(self, iteration: int) -> torch.Tensor:
        """This rank's gradient of one iteration, nobody else's computed."""
        return self.replicas[self.rank].gradients(iteration)

    def gradients(self, iteration: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(this rank's gradient, the sum over all workers' gradients) of one iteration."""
        grads = self.all_gradients(iteration)
        return grads[self.rank].clone(), torch.stack(grads).sum(0)

    def all_gradients(self, iteration: int) -> list:
        """Every worker's gradient of one iteration, rank order (the inputs of any oracle)."""
        return [t.gradients(iteration) for t in self.replicas]

    def apply(self, synchronized_sum: torch.Tensor, iteration: int | None = None) -> None:
        """Every replica steps with the synchronized sum (at `iteration`'s learning rate;
        None: the base lr)."""
        lr = self.lr if iteration is None else self.lr_at(iteration)
        for t in self.replicas:
            t.apply(synchronized_sum, self.workers, lr)

    def evaluate(self) -> tuple[float, float]:
        return self.replicas[self.rank].evaluate()

    def digest(self) -> str:
        """SHA-1 of this rank's parameters (float32 bytes): equal on every rank when the
        model stayed identical."""
        return hashlib.sha1(self.replicas[self.rank].parameters_flat().numpy().tobytes()).hexdigest()

    @staticmethod
    def matches(result: torch.Tensor, expected: torch.Tensor) -> tuple[bool, float]:
        err = float((result - expected).abs().max()) if result.numel() else 0.0
        return bool(torch.allclose(result, expected, rtol=RTOL, atol=ATOL)), err
