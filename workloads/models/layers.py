"""A model as the sync algorithms see it: `Model`, a tuple of `Layer(name, numel,
backward_s)` in forward order, and `scaled`, the time dilation of a model.

A sync algorithm never needs the network itself, only what backpropagation hands it:
the gradient of each layer (elements, float32: `common.units.DTYPE_BYTES` each) and when it
becomes ready. `backward_s` is the time backpropagation spends between the previous layer's
gradient (in backward order) and this one's (MG-WFBP's t_b^(l); Shi et al., INFOCOM 2019).
What a layer is (a module or a parameter tensor) is the spec's `tensors` option, see
workloads/models/profiles.py. No torch here: job.json carries a model as `Model.to_list()`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from common.units import DTYPE_BYTES


@dataclass(frozen=True)
class Layer:
    """One parameter-owning module: gradient elements and its share of backward time."""

    name: str
    numel: int
    backward_s: float

    def __post_init__(self):
        if not isinstance(self.numel, int) or isinstance(self.numel, bool) or self.numel < 1:
            raise ValueError(f"layer {self.name!r}: numel must be a positive int, got {self.numel!r}")
        if not (isinstance(self.backward_s, (int, float)) and math.isfinite(self.backward_s)
                and self.backward_s >= 0):
            raise ValueError(
                f"layer {self.name!r}: backward_s must be a finite number >= 0, got {self.backward_s!r}")


@dataclass(frozen=True)
class Model:
    """A model's gradient as a sync algorithm sees it. `source` says how it was obtained."""

    spec: str
    layers: tuple
    source: str

    def __post_init__(self):
        if not self.layers:
            raise ValueError(f"model {self.spec!r} has no layers")
        object.__setattr__(self, "layers", tuple(self.layers))

    @property
    def elements(self) -> int:
        return sum(layer.numel for layer in self.layers)

    @property
    def bytes(self) -> int:
        return self.elements * DTYPE_BYTES

    @property
    def backward_s(self) -> float:
        return math.fsum(layer.backward_s for layer in self.layers)

    @property
    def layer_sizes(self) -> tuple:
        return tuple(layer.numel for layer in self.layers)

    def to_list(self) -> list:
        """`[[name, numel, backward_s], ...]`, the form job.json carries."""
        return [[layer.name, layer.numel, layer.backward_s] for layer in self.layers]

    @classmethod
    def from_list(cls, spec: str, rows: Iterable, source: str = "") -> "Model":
        """Inverse of `to_list` (e.g. a worker rebuilding the model from job.json)."""
        return cls(spec, tuple(Layer(str(n), int(k), float(t)) for n, k, t in rows), source)


def scaled(model: Model, size_factor: float = 1.0, time_factor: float = 1.0) -> Model:
    """Time dilation: every layer's numel divided by `size_factor` (rounded, at least 1)
    and every backward time multiplied by `time_factor`.

    Communication time is roughly bytes / bandwidth, so what a run preserves is the
    ratio of compute to communication. Emulating links D times slower than the real
    cluster keeps that ratio with `time_factor=D` (same gradients, compute stretched:
    a D-times longer run), or with `size_factor=D` (gradients D times smaller, same
    compute: same wall time, valid while per-message latency stays negligible).
    The two may be combined; the ratio changes by size_factor * time_factor.
    `spec` is kept; `source` records the scaling.
    """
    for label, factor in (("size_factor", size_factor), ("time_factor", time_factor)):
        if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor > 0):
            raise ValueError(f"scaled(): {label} must be a finite number > 0, got {factor!r}")
    if size_factor == 1 and time_factor == 1:
        return model
    layers = tuple(
        Layer(layer.name, max(1, round(layer.numel / size_factor)), layer.backward_s * time_factor)
        for layer in model.layers)
    note = f"scaled: sizes / {size_factor:g}, backward times x {time_factor:g}"
    return Model(model.spec, layers, f"{model.source}; {note}" if model.source else note)