"""Cost models of the CPU work inside a sync (`base.Compute`), for the simulation (issue #23).

A sparse algorithm's sync is its flows plus compute its executor does between them (top-k
selection and error feedback before the first message, merging after the last; `Algorithm.compute`
declares them, `Algorithm.compute_charges` places them). The simulation charges each from a
`CostModel`: seconds = c0 + c1 x size, size = `Compute.size(plan)` (the gradient's elements).

Pure: `CostModel` (checked parameters), `parse` (the CLI's `--compute KEY=C0:C1`, one-line
errors), `fit` (numpy least squares over measured points), `work` (the size a measured run's
compute scaled with on the machine that ran it: P workers sharing its cores). Which runs a
model was fitted on, and that it was fitted on the fit half of the result folders only, is
docs/PROJECTION.md's "Compute and data-dependent bytes" (emulation/report/doctables/projection.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class CostModel:
    """seconds(size) = c0 + c1 x size: a fixed cost and a cost per element, both >= 0 and finite."""

    c0: float
    c1: float = 0.0

    def __post_init__(self):
        for name, v in (("c0", self.c0), ("c1", self.c1)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"cost model {name}={v!r} must be a finite number of seconds >= 0")

    def seconds(self, size: float) -> float:
        return self.c0 + self.c1 * float(size)

    def describe(self) -> dict:
        return {"c0_seconds": self.c0, "c1_seconds_per_element": self.c1}


SYNTAX = "KEY=C0:C1 (seconds = C0 + C1 x gradient elements, both >= 0; C1 may be left out)"


def parse(text: str) -> tuple[str, CostModel]:
    """`KEY=0.002:3e-8` -> ("KEY", CostModel(0.002, 3e-8)); ValueError, one line."""
    key, eq, rest = str(text).partition("=")
    key = key.strip()
    if not eq or not key or not rest.strip():
        raise ValueError(f"--compute {text!r}: give {SYNTAX}")
    parts = rest.split(":")
    if len(parts) > 2:
        raise ValueError(f"--compute {text!r}: give {SYNTAX}")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"--compute {text!r}: {rest!r} is not numbers; give {SYNTAX}") from None
    try:
        return key, CostModel(*values)
    except ValueError as e:
        raise ValueError(f"--compute {text!r}: {e}") from None


def fit(points) -> CostModel:
    """The least-squares CostModel through `points` ((size, seconds), ...), numpy's lstsq;
    a negative coefficient is clipped to 0 and the other refitted (a cost is never negative).
    ValueError with fewer than two distinct sizes."""
    import numpy as np

    pts = [(float(x), float(y)) for x, y in points]
    if len({x for x, _ in pts}) < 2:
        raise ValueError(f"fitting a cost model needs points at two sizes or more, got {len(pts)} point(s) at "
                         f"{len({x for x, _ in pts})} size(s)")
    x = np.array([p[0] for p in pts])
    y = np.array([p[1] for p in pts])
    (c0, c1), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(x), x]), y, rcond=None)
    if c1 < 0:  # no per-element cost: the mean
        return CostModel(max(0.0, float(y.mean())), 0.0)
    if c0 < 0:  # through the origin
        return CostModel(0.0, max(0.0, float((x @ y) / (x @ x))))
    return CostModel(float(c0), float(c1))


def work(elements: float, workers: int, cores: int) -> float:
    """The size a measured compute scaled with on the machine that ran it: every worker does it at
    once on `cores` cores (the emulation's workers share one machine), so each takes as long as
    elements x workers / cores elements would on a core of its own (at least the elements)."""
    if workers < 1 or cores < 1:
        raise ValueError(f"workers {workers} and cores {cores} must be >= 1")
    return float(elements) * max(1.0, workers / cores)
