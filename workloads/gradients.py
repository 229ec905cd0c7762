"""Synthetic gradients with a local correctness oracle, and the stream that "produces" them.

Oracle (docs/ARCHITECTURE.md, "Correctness oracle without network"): worker r's gradient at
iteration i is `A_i + (r + 1) * B_i`, where A_i and B_i are integer-valued float32 tensors
drawn from a generator seeded by (seed, i). Every partial sum is a small integer, so float32
addition is exact in any order and the sum over W workers, `W*A_i + W(W+1)/2 * B_i`, can be
computed by every rank without the network: a missing, doubled or misplaced contribution
changes it.

`GradientStream` stands in for backprop. It owns the flat gradient buffer (layers laid out in
forward order) and fills it layer by layer in backward order (last layer first), each after
that layer's backward time times a dilation factor, in a background thread. A slice is zero
until its layer is produced, so an executor that reads a layer before `wait_layer` returned
gets a wrong sum and the oracle catches it. Baselines call `wait_all()` and sync `flat`;
wait-free backprop executors (MG-WFBP) wait per layer, on the same object.
"""
from __future__ import annotations

import hashlib
import threading
import time

import torch

VALUE_RANGE = 8  # A and B entries lie in [-8, 8]: sums stay exact far beyond 1000 workers


def _generator(seed: int, iteration: int) -> torch.Generator:
    # Hash (seed, i): torch's CPU generator (mt19937) keeps only 32 bits of its seed, so
    # packing seed and i side by side into 64 bits would make every seed look the same.
    digest = hashlib.blake2b(f"syncbed:{int(seed)}:{int(iteration)}".encode(), digest_size=4).digest()
    g = torch.Generator()
    g.manual_seed(int.from_bytes(digest, "little"))
    return g


def components(size: int, seed: int, iteration: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(A_i, B_i): integer-valued float32 tensors of `size` elements, seeded by (seed, i)."""
    g = _generator(seed, iteration)
    a = torch.randint(-VALUE_RANGE, VALUE_RANGE + 1, (size,), generator=g, dtype=torch.float32)
    b = torch.randint(-VALUE_RANGE, VALUE_RANGE + 1, (size,), generator=g, dtype=torch.float32)
    return a, b


def synthetic(rank: int, size: int, seed: int, iteration: int) -> torch.Tensor:
    """Worker `rank`'s gradient at iteration `iteration`: A_i + (rank + 1) * B_i."""
    a, b = components(size, seed, iteration)
    return a.add_(b, alpha=rank + 1)


def expected_sum(workers: int, size: int, seed: int, iteration: int) -> torch.Tensor:
    """Sum of `synthetic` over ranks 0..workers-1: W*A_i + W(W+1)/2 * B_i (exact in float32)."""
    a, b = components(size, seed, iteration)
    return a.mul_(workers).add_(b, alpha=workers * (workers + 1) // 2)


def iteration_data(rank: int, workers: int, size: int, seed: int, iteration: int):
    """(worker `rank`'s gradient, expected sum over all workers), sharing one draw of A and B."""
    a, b = components(size, seed, iteration)
    values = a + b * (rank + 1)
    expected = a.mul_(workers).add_(b, alpha=workers * (workers + 1) // 2)
    return values, expected


SPARSITY_KEYS = ("block", "zero_blocks", "zero_entries")


def check_sparsity(sparsity) -> dict | None:
    """Validate the synthetic-sparsity option: {block: elements >= 1, zero_blocks: fraction of
    blocks all zero, zero_entries: fraction of the remaining entries zero}, or None (dense)."""
    if not sparsity:
        return None
    if not isinstance(sparsity, dict) or set(sparsity) - set(SPARSITY_KEYS):
        raise ValueError(f"sparsity must be a mapping with keys {', '.join(SPARSITY_KEYS)}, got {sparsity!r}")
    block = sparsity.get("block", 256)
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise ValueError(f"sparsity block={block!r} must be an integer >= 1 (elements)")
    out = {"block": block}
    for key in ("zero_blocks", "zero_entries"):
        v = sparsity.get(key, 0.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
            raise ValueError(f"sparsity {key}={v!r} must be a fraction in [0, 1)")
        out[key] = float(v)
    return out


def sparse_mask(rank: int, size: int, seed: int, iteration: int, sparsity: dict) -> torch.Tensor:
    """Worker `rank`'s keep-mask at iteration `iteration`: whole blocks zero with probability
    zero_blocks, then single entries with probability zero_entries; seeded by (seed, i, rank)
    so workers differ (the union of their non-zero blocks is what a PS sends back)."""
    g = _generator(seed * 1_000_003 + 7919 * (rank + 1), iteration)
    block = sparsity["block"]
    blocks = -(-size // block)
    keep_block = torch.rand(blocks, generator=g) >= sparsity["zero_blocks"]
    mask = keep_block.repeat_interleave(block)[:size]
    if sparsity["zero_entries"]:
        mask &= torch.rand(size, generator=g) >= sparsity["zero_entries"]
    return mask


class SyntheticGradients:
    """Every worker's synthetic gradient of an iteration, dense or with zero blocks.

    Dense: the closed form above (no other worker's gradient is needed for the sum).
    Sparse: worker r's dense gradient times its own seeded mask; the values stay small
    integers, so the sum (or any reference built from these inputs) is exact in any order."""

    def __init__(self, workers: int, size: int, seed: int, sparsity: dict | None = None):
        self.workers, self.size, self.seed = workers, size, seed
        self.sparsity = check_sparsity(sparsity)

    @property
    def sparse(self) -> bool:
        return self.sparsity is not None

    def all_workers(self, iteration: int) -> list:
        a, b = components(self.size, self.seed, iteration)
        out = []
        for r in range(self.workers):
            x = a + b * (r + 1)
            if self.sparsity:
                x *= sparse_mask(r, self.size, self.seed, iteration, self.sparsity)
            out.append(x)
        return out

    def mine(self, rank: int, iteration: int) -> torch.Tensor:
        """Worker `rank`'s gradient alone (a rank that does not check the oracle)."""
        a, b = components(self.size, self.seed, iteration)
        x = a.add_(b, alpha=rank + 1)
        if self.sparsity:
            x *= sparse_mask(rank, self.size, self.seed, iteration, self.sparsity)
        return x

    def mine_and_sum(self, rank: int, iteration: int):
        """(worker `rank`'s gradient, the dense sum) without building the others (dense only)."""
        if self.sparsity:
            inputs = self.all_workers(iteration)
            total = inputs[0].clone()
            for x in inputs[1:]:
                total += x
            return inputs[rank], total
        return iteration_data(rank, self.workers, self.size, self.seed, iteration)


def as_flat(grads) -> torch.Tensor:
    """The complete flat gradient of `grads`: a GradientStream (waits for all layers) or a tensor."""
    if isinstance(grads, torch.Tensor):
        return grads
    grads.wait_all()
    return grads.flat


def _layer_fields(layer) -> tuple[str, int, float]:
    if isinstance(layer, (list, tuple)):
        name, numel, backward_s = layer
    else:  # workloads.models.layers.Layer or anything with these attributes
        name, numel, backward_s = layer.name, layer.numel, layer.backward_s
    if int(numel) <= 0 or float(backward_s) < 0:
        raise ValueError(f"layer {name!r}: numel must be > 0 and backward_s >= 0, got {numel}, {backward_s}")
    return str(name), int(numel), float(backward_s)


class GradientStream:
    """One iteration's gradient, produced layer by layer in backward order by a thread.

    layers:   [(offset, size)] in forward order (offsets into `flat`)
    flat:     the gradient buffer; a layer's slice is filled when the layer is produced
    t_start:  wall clock when backward began (`start()`); t_ready: when the last one (layer 0) was
    """

    def __init__(self, layers, values: torch.Tensor | None = None, dilation: float = 1.0):
        fields = [_layer_fields(layer) for layer in layers]
        if not fields:
            raise ValueError("a gradient stream needs at least one layer")
        if dilation < 0:
            raise ValueError(f"dilation must be >= 0, got {dilation}")
        self.names = [f[0] for f in fields]
        self.backward_s = [f[2] * dilation for f in fields]
        self.layers, offset = [], 0
        for _, numel, _ in fields:
            self.layers.append((offset, numel))
            offset += numel
        self.size = offset
        if values is None:
            values = torch.zeros(self.size, dtype=torch.float32)
        if values.dtype != torch.float32 or values.dim() != 1 or values.numel() != self.size:
            raise ValueError(f"values must be a 1-D float32 tensor of {self.size} elements, got "
                             f"{values.dtype} of shape {tuple(values.shape)}")
        self._values = values
        self.flat = torch.zeros(self.size, dtype=torch.float32)
        self._ready = [threading.Event() for _ in self.layers]
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.t_start: float | None = None
        self.t_ready: float | None = None

    @property
    def order(self) -> list[int]:
        """Layer indices in the order backward produces them (last layer first)."""
        return list(range(len(self.layers) - 1, -1, -1))

    def start(self) -> "GradientStream":
        """Begin backward now (sets `t_start`); returns self."""
        if self._thread is not None:
            raise RuntimeError("this gradient stream was already started; make one per iteration")
        self.t_start = time.time()
        self._thread = threading.Thread(target=self._produce, name="backward", daemon=True)
        self._thread.start()
        return self

    def _produce(self) -> None:
        try:
            # Sleep to absolute deadlines so many tiny layers do not accumulate sleep overshoot.
            deadline = self.t_start
            for i in self.order:
                deadline += self.backward_s[i]
                delay = deadline - time.time()
                if delay > 0:
                    time.sleep(delay)
                offset, size = self.layers[i]
                self.flat[offset:offset + size].copy_(self._values[offset:offset + size])
                if i == 0:
                    self.t_ready = time.time()
                self._ready[i].set()
        except BaseException as exc:  # wake every waiter; they re-raise
            self._error = exc
            for event in self._ready:
                event.set()

    def wait_layer(self, i: int) -> torch.Tensor:
        """Block until layer `i` (forward index) exists; returns its slice of `flat`."""
        if self._thread is None:
            raise RuntimeError("call start() before waiting for layers")
        self._ready[i].wait()
        if self._error is not None:
            raise RuntimeError(f"gradient stream failed: {self._error}") from self._error
        offset, size = self.layers[i]
        return self.flat[offset:offset + size]

    def wait_all(self) -> torch.Tensor:
        """Block until the whole gradient exists (`t_ready` is set); returns `flat`."""
        self.wait_layer(0)  # layer 0 is produced last
        self._thread.join()
        return self.flat
