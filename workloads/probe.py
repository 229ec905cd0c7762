"""Time the project's ring all-reduce at several sizes: the points the alpha-beta fit needs.

MG-WFBP prices every merge with t(m) = a + b*m (workloads/linkmodel.py). The authors time
all-reduces of a range of sizes and fit a line (HKBU-HPML/MG-WFBP distributed_optimizer.py,
`_benchmark_communication`); here the runner calls `measure_allreduce` in every rank on the
emulated network before it plans, then `linkmodel.fit_alpha_beta` on the result. This module
only times; it knows nothing of the runner, and every byte goes through `Comm` (counted).

What is timed is exactly what the layer-wise algorithms run (`ring.ring_allreduce`, same
segments), over all ranks of `comm` in rank order. For each size and repetition:
1. `comm.store_barrier` (the shared store, no traffic on the emulated links) gathers the ranks;
2. a one-element ring all-reduce, untimed, aligns them: ranks leave a store barrier up to a
   store poll apart, and a ring started by an early rank would charge that skew to alpha;
   after the small ring they are a few message latencies apart instead;
3. each rank times its own ring all-reduce of the size, wall clock, start to its own end.
The median over repetitions of rank 0's times is the result (median: one TCP retransmission
timeout in a repetition must not move the fit); rank 0 shares it through the store, so every
rank returns the same list.
"""
from __future__ import annotations

import itertools
import json
import numbers
import statistics
import time

import torch

from workloads.algorithms.base import DTYPE_BYTES, split
from workloads.algorithms.ring import SEGMENT_ELEMENTS, ring_allreduce, ring_tags

# Store keys must differ between calls (a store barrier's counter is never reset). Every rank
# calls measure_allreduce the same number of times in the same order, so a per-process count
# names the same call on every rank.
_CALLS = itertools.count()


def measure_allreduce(comm, sizes_bytes, reps: int, nic: int = 0,
                      segment_elements: int = SEGMENT_ELEMENTS) -> list[tuple[int, float]]:
    """[(bytes, seconds)] per size: rank 0's median time of a ring all-reduce of that many bytes.

    Sizes are rounded up to whole float32 elements (at least one); the bytes returned are
    the ones all-reduced. Call it on every rank of `comm` with the same arguments."""
    sizes = list(sizes_bytes)
    if not sizes or any(not isinstance(s, numbers.Integral) or isinstance(s, bool) or s <= 0 for s in sizes):
        raise ValueError(f"sizes_bytes must be positive integers (bytes), got {sizes!r}")
    if isinstance(reps, bool) or not isinstance(reps, numbers.Integral) or reps < 1:
        raise ValueError(f"reps must be an integer >= 1, got {reps!r}")
    call = next(_CALLS)
    order = list(range(comm.world))
    align = torch.zeros(1)
    timed_tag = ring_tags(split(1, comm.world), segment_elements)  # after the aligning ring's tags
    mine = []
    for k, size in enumerate(sizes):
        elements = max(1, -(-int(size) // DTYPE_BYTES))
        buf = torch.zeros(elements)  # zeros: the sums stay 0, no overflow or denormals over reps
        times = []
        for rep in range(reps):
            comm.store_barrier(f"probe{call}/{k}/{rep}")  # 1.
            ring_allreduce(comm, align, order, nic, 0, segment_elements)  # 2.
            t0 = time.perf_counter()  # 3.
            ring_allreduce(comm, buf, order, nic, timed_tag, segment_elements)
            times.append(time.perf_counter() - t0)
        mine.append((elements * DTYPE_BYTES, statistics.median(times)))
    key = f"probe{call}/result"
    if comm.rank == 0:
        comm.store.set(key, json.dumps(mine))
        return mine
    return [(int(b), float(s)) for b, s in json.loads(comm.store.get(key))]
