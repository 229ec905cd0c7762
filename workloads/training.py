"""Real training mode: data-parallel SGD of LeNet-5 on scikit-learn's digits (no download).

Each worker rank keeps one `DigitsTrainer` replica per worker rank (W small LeNet-5s,
identical parameters, each on its own data shard). Its own gradient comes from replica
`rank`; the oracle is the sum over all replicas, computed locally (no network); after
the sync every replica applies the synchronized sum, so all ranks hold the same model
and its held-out loss/accuracy can be plotted against iterations. Synchronized SGD with
W workers of batch b equals single-process SGD with batch W*b (tested in test_models).
"""
from __future__ import annotations

import torch

from workloads.models import DigitsTrainer

RTOL, ATOL = 1e-4, 1e-6  # the sync sums floats in another order than the oracle


class DataParallelDigits:
    def __init__(self, rank: int, workers: int, seed: int = 0, batch: int = 32, lr: float = 0.1):
        self.rank, self.workers, self.lr = rank, workers, lr
        self.replicas = [DigitsTrainer(r, workers, seed, batch) for r in range(workers)]

    def layer_sizes(self) -> list:
        return self.replicas[0].layer_sizes()

    def gradients(self, iteration: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(this rank's gradient, the sum over all workers' gradients) of one iteration."""
        grads = [t.gradients(iteration) for t in self.replicas]
        return grads[self.rank].clone(), torch.stack(grads).sum(0)

    def all_gradients(self, iteration: int) -> list:
        """Every worker's gradient of one iteration, rank order (the inputs of any oracle)."""
        return [t.gradients(iteration) for t in self.replicas]

    def apply(self, synchronized_sum: torch.Tensor) -> None:
        for t in self.replicas:
            t.apply(synchronized_sum, self.workers, self.lr)

    def evaluate(self) -> tuple[float, float]:
        return self.replicas[self.rank].evaluate()

    @staticmethod
    def matches(result: torch.Tensor, expected: torch.Tensor) -> tuple[bool, float]:
        err = float((result - expected).abs().max()) if result.numel() else 0.0
        return bool(torch.allclose(result, expected, rtol=RTOL, atol=ATOL)), err
