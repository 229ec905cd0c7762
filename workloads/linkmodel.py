"""The alpha-beta model of one all-reduce, t(m) = alpha + beta * m, and its fit to timings.

MG-WFBP (Shi, Chu, Li, INFOCOM 2019) prices every merge with this model: alpha is the
start-up a merge saves, beta the seconds per byte it still pays (workloads/planners/merge.py). The
authors' code (HKBU-HPML/MG-WFBP distributed_optimizer.py, `_benchmark_communication`)
times all-reduces of a range of sizes and fits a line with scikit-learn's LinearRegression
(sizes in elements x 4 bytes), taking the intercept as alpha and the slope as beta.

Duties: `LinkModel` holds a model and where it came from, and round-trips through JSON so a
run can keep its calibration with its results; `fit_alpha_beta` turns measurements into one.
Timing the all-reduces is the executor's job, not this module's.

Fit (least squares, numpy only):
1. Solve min ||alpha + beta * m_i - t_i||^2 over all points.
2. A negative alpha or beta is physically meaningless (and the merge planners reject it).
   Timings spread over three decades of size: the plain fit's intercept is then decided by
   the noise of the largest sizes (milliseconds on seconds), and can come out negative where
   the smallest all-reduce plainly took milliseconds (measured: 5.6 ms at 4 KiB, plain
   intercept -3.5 ms, four workers at 20 Mbit/s, 2026-11-25). Then the same line is fitted
   with relative errors (each residual over its time, numpy's weights 1/t), whose
   intercept the small sizes decide; `source` says so and gives the plain fit. The authors'
   code would pass a negative intercept on.
3. If that is still negative, the fit is constrained: alpha >= 0, beta >= 0
   (a two-variable non-negative least squares, solved exactly by also trying the best line
   with alpha = 0, with beta = 0, and (0, 0), and keeping the best feasible one). `source`
   says when a constraint was active and what the unconstrained fit was.
4. R^2 = 1 - SSE / SST of the model returned; None when all times are equal (SST = 0).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, fields

import numpy as np


def _finite(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


@dataclass(frozen=True)
class LinkModel:
    """t(m) = alpha + beta * m seconds for an all-reduce of m bytes.

    alpha:  start-up seconds (>= 0)
    beta:   seconds per byte (>= 0)
    r2:     coefficient of determination of the fit, None if not fitted or undefined
    source: where the numbers come from ("least squares over 12 points", "given", ...)
    points: measurements the fit used (0 when the model was given, not fitted)
    """

    alpha: float
    beta: float
    r2: float | None = None
    source: str = "given"
    points: int = 0

    def __post_init__(self):
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if not _finite(value) or value < 0:
                raise ValueError(f"LinkModel {name} must be a finite number >= 0, got {value!r}")
        if self.r2 is not None and (not _finite(self.r2) or self.r2 > 1):
            raise ValueError(f"LinkModel r2 must be None or a number <= 1, got {self.r2!r}")
        if not isinstance(self.points, numbers.Integral) or self.points < 0:
            raise ValueError(f"LinkModel points must be an integer >= 0, got {self.points!r}")

    def t(self, m):
        """Seconds to all-reduce `m` bytes (a number or a numpy array of them)."""
        return self.alpha + self.beta * m

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "LinkModel":
        valid = tuple(f.name for f in fields(cls))
        unknown = sorted(set(data) - set(valid))
        if unknown:
            raise ValueError(f"LinkModel: unknown key(s) {', '.join(unknown)}; valid: {', '.join(valid)}")
        missing = [k for k in ("alpha", "beta") if k not in data]
        if missing:
            raise ValueError(f"LinkModel needs {' and '.join(missing)} (seconds and seconds per byte)")
        return cls(**data)


def _sse(alpha: float, beta: float, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.sum((alpha + beta * x - y) ** 2))


def fit_alpha_beta(sizes_bytes, seconds) -> LinkModel:
    """Least-squares alpha and beta (both >= 0) from all-reduce timings; see the module doc."""
    x = np.asarray(sizes_bytes, dtype=float).ravel()
    y = np.asarray(seconds, dtype=float).ravel()
    if x.size != y.size:
        raise ValueError(f"need one time per size; got {x.size} sizes and {y.size} times")
    if not np.all(np.isfinite(x)) or np.any(x < 0) or not np.all(np.isfinite(y)) or np.any(y < 0):
        raise ValueError("sizes (bytes) and times (seconds) must be finite numbers >= 0")
    if np.unique(x).size < 2:
        raise ValueError(f"a line needs at least 2 distinct sizes, got {np.unique(x).size}")
    # 1. Unconstrained least squares; x is centred so the solve stays well conditioned
    #    when sizes reach gigabytes and times are milliseconds.
    mean_x = float(x.mean())
    beta, centred = np.polyfit(x - mean_x, y, 1)
    alpha = float(centred - beta * mean_x)
    beta = float(beta)
    note = ""
    # 2. A negative intercept from the largest sizes' noise: relative errors instead.
    if alpha < 0 and beta > 0 and np.all(y > 0):
        w_beta, w_centred = np.polyfit(x - mean_x, y, 1, w=1.0 / y)
        w_alpha = float(w_centred - w_beta * mean_x)
        if w_alpha >= 0 and w_beta >= 0:
            note = (f", weighted by 1/t (relative errors: the plain fit's alpha was {alpha:.3g} s, "
                    f"beta {beta:.3g} s/B)")
            alpha, beta = w_alpha, float(w_beta)
    # 3. Non-negative: the best line on each boundary of alpha >= 0, beta >= 0.
    if alpha < 0 or beta < 0:
        candidates = [(0.0, max(0.0, float(x @ y / (x @ x)))), (max(0.0, float(y.mean())), 0.0), (0.0, 0.0)]
        new_alpha, new_beta = min(candidates, key=lambda c: _sse(c[0], c[1], x, y))
        note = (f", constrained to alpha, beta >= 0 (unconstrained fit: alpha={alpha:.3g} s, "
                f"beta={beta:.3g} s/B)")
        alpha, beta = new_alpha, new_beta
    # 4. R^2 of the line returned.
    # Compare values, not SST with 0: the mean of equal floats need not equal them exactly.
    r2 = None if np.all(y == y[0]) else 1.0 - _sse(alpha, beta, x, y) / float(np.sum((y - y.mean()) ** 2))
    return LinkModel(alpha=alpha, beta=beta, r2=r2,
                     source=f"least squares over {x.size} points{note}", points=int(x.size))


def stand_in(real: LinkModel, emulated: LinkModel) -> tuple[float, float]:
    """(size_scale, time_factor) that make the emulated network stand in for the real one.

    With gradients divided by s and every time multiplied by D, the emulated all-reduce of a
    scaled tensor takes a_e + b_e m/s; setting D = a_e / a_r and s = (a_r b_e) / (a_e b_r)
    makes that exactly D (a_r + b_r m): start-up against per-byte cost, a : (b x size), is the
    real setting's for every tensor, and compute stretched by the same D keeps compute :
    communication. Both models need a > 0 and b > 0 (a zero alpha has no stand-in)."""
    for label, m in (("real", real), ("emulated", emulated)):
        if not (m.alpha > 0 and m.beta > 0):
            raise ValueError(f"{label} link model needs alpha > 0 and beta > 0 to scale to, got "
                             f"alpha={m.alpha}, beta={m.beta}")
    time_factor = emulated.alpha / real.alpha
    size_scale = (real.alpha * emulated.beta) / (emulated.alpha * real.beta)
    return size_scale, time_factor
