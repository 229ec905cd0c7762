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

`machine()` records what the run ran on beside it (run.json "machine"): the CPU as the kernel
names it, its vector extensions, the kernel, and the versions of Python, torch and numpy with the
instruction set torch dispatches to. The training path of the ResNet runs moved between two days
with the same code (docs/dfs.md, section 7) and the machine had been booted again in between:
with this record, two runs' machines can be told apart, or shown equal.
"""
from __future__ import annotations

import math
import platform
import statistics
import time
from pathlib import Path

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


# the vector extensions torch's and oneDNN's kernels dispatch on (a change here can change results)
SIMD_PREFIXES = ("sse4", "avx", "fma", "amx")
# and the libraries whose answers a run's numbers rest on: torch computes, the planners pack
# and merge with scipy (HiGHS) and networkx (requirements.txt pins them)
PACKAGES = ("torch", "numpy", "scipy", "networkx")


def cpu_info(text: str) -> dict:
    """The first processor's identity in /proc/cpuinfo's `text`: model name, family, model,
    stepping, and its vector extensions (SIMD_PREFIXES), sorted; {} for an empty text."""
    first = {}
    for line in text.splitlines():
        if not line.strip():
            if first:
                break
            continue
        key, _, value = line.partition(":")
        first.setdefault(key.strip(), value.strip())
    if not first:
        return {}
    flags = sorted(f for f in first.get("flags", "").split() if f.startswith(SIMD_PREFIXES))
    return {"model_name": first.get("model name"), "family": first.get("cpu family"), "model": first.get("model"),
            "stepping": first.get("stepping"), "simd": flags}


def machine() -> dict:
    """What a run ran on (run.json "machine"): CPU, kernel, package versions, torch's CPU capability."""
    import os
    from importlib import metadata

    try:
        cpu = cpu_info(Path("/proc/cpuinfo").read_text())
    except OSError:
        cpu = {}
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    try:
        import torch
        capability = torch.backends.cpu.get_cpu_capability()
    except (ImportError, AttributeError):
        capability = None
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(), "versions": versions,
            "torch_cpu_capability": capability}
