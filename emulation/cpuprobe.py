"""This machine's speed at a run's start, in the workers' own compressor code (issue #23).

The emulated workers' compute (top-k selection, block encoding, aggregation) runs on this
machine's CPU, whose speed varied between days by about a factor of two with the same code
(docs/PROJECTION.md, "Compute and data-dependent bytes": a selection cost model fitted on one
day's runs falls short on another's, while the same code outside any emulation ran as slowly as
inside it that day). So every run records, before its workers start, how long this machine takes
for one fixed selection: Top-k's `sparsify` (`Residual.accumulate`, then `select_topk`, which
`SparseSet.topk` runs, at density 0.001) on a fixed synthetic gradient of `ELEMENTS` elements,
one thread, `REPS` times;
summary.json keeps the fastest as `cpu_probe_seconds` (the least disturbed by whatever else
ran, such as the previous run's analysis at idle priority). Two runs' compute can then be compared
(or a cost model fitted in units of it) across days. Takes about a fifth of a second once torch is loaded.
"""
from __future__ import annotations

import math
import statistics
import time

ELEMENTS = 1 << 20
REPS = 7
DENSITY = 0.001
WHAT = (f"the sparse workers' selection (Residual.accumulate, select_topk at density {DENSITY}) on a synthetic "
        f"gradient of {ELEMENTS} elements, one thread, the fastest of {REPS}")


def selection_seconds(elements: int = ELEMENTS, reps: int = REPS) -> list[float]:
    """Each repetition's seconds of the selection (with error feedback between them, as a worker)."""
    import torch

    from workloads.gradients import SyntheticGradients
    from workloads.sparse import Residual

    if reps < 1:
        raise ValueError(f"the CPU probe needs reps >= 1, got {reps}")
    k = math.ceil(DENSITY * elements)  # as the algorithms' k at this density
    grad = SyntheticGradients(1, elements, 0).mine(0, 0)
    residual = Residual(elements)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as each worker computes
    try:
        return [select_once(residual, grad, k) for _ in range(reps)]
    finally:
        torch.set_num_threads(threads)


def select_once(residual, grad, k: int) -> float:
    """Seconds of one worker's selection (what topk.execute times as `sparsify`), then its
    error-feedback update, untimed as in the executor."""
    from workloads.sparse import select_topk

    t0 = time.perf_counter()
    acc = residual.accumulate(grad)
    indices, _ = select_topk(acc, k)  # the selection SparseSet.topk makes in the executors
    secs = time.perf_counter() - t0
    residual.update(acc, indices)
    return secs


def measure() -> dict:
    """The record a run keeps (run.json "cpu_probe"; summary.json `cpu_probe_seconds`)."""
    secs = selection_seconds()
    return {"what": WHAT, "elements": ELEMENTS, "seconds": [round(s, 6) for s in secs],
            "fastest_seconds": min(secs), "median_seconds": statistics.median(secs)}
