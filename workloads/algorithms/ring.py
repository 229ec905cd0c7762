"""`ring`: our own ring all-reduce (reduce-scatter + all-gather) over point-to-point send/recv.

Unlike `gloo`, every byte is sent by this module, so the ring order is a plan decision
(option `order`, a permutation of the worker ranks; rank order by default) and each step
can be put on a timeline. Steps, for the rank at position p of the order, successor
p+1 and predecessor p-1 (mod N), the gradient cut into N near-equal chunks (`base.split`):
1. Reduce-scatter, s = 0..N-2: send chunk (p - s) to the successor while receiving chunk
   (p - s - 1) from the predecessor, and add it in. Position p then owns chunk p + 1, reduced.
2. All-gather, s = 0..N-2: send chunk (p + 1 - s), receive chunk (p - s) in place.
Pipelined: each chunk is cut into segments of at most `segment_elements` (64 KiB); a
segment is forwarded as soon as it has arrived, so the ring streams instead of stepping.
Traffic: each rank sends 2E - |chunk p+1| - |chunk p+2| elements to its successor:
2(N-1)M/N bytes (DESIGN.md closed form), exact when N divides E, and 2(N-1)M in total always.
"""
from __future__ import annotations

import time

import torch

from workloads.algorithms.base import DTYPE_BYTES, Algorithm, Flow, Option, number, split
from workloads.gradients import as_flat

SEGMENT_ELEMENTS = 16384  # 64 KiB: Gloo frames each message with GLOO_FRAMING_BYTES (126 B), 0.2%


def _as_order(value):
    if isinstance(value, str):  # from a spec: order=2:0:3:1
        value = value.split(":")
    return [int(r) for r in value]


OPTIONS = {
    "order": Option(None, _as_order, "a permutation of the worker ranks (YAML list, or 2:0:3:1 in a spec)"),
    "segment_elements": Option(SEGMENT_ELEMENTS, number(1, integer=True), "an integer >= 1"),
}


def _order(ctx) -> list[int]:
    order = ctx.options.get("order")
    if order is None:
        return list(range(ctx.workers))
    try:
        order = [int(r) for r in order]
    except (TypeError, ValueError):
        order = None
    if order is None or sorted(order) != list(range(ctx.workers)):
        raise ValueError(f"ring: option order must be a permutation of the worker ranks 0..{ctx.workers - 1}, "
                         f"got {ctx.options.get('order')!r}")
    return order


def validate(ctx) -> None:
    _order(ctx)


def plan(ctx) -> dict:
    return {"algorithm": "ring", "workers": ctx.workers, "world": ctx.world, "elements": ctx.elements,
            "nic": 0, "order": _order(ctx), "chunks": [list(c) for c in split(ctx.elements, ctx.workers)],
            "segment_elements": int(ctx.options.get("segment_elements") or SEGMENT_ELEMENTS)}


def _size(plan: dict, c: int) -> int:
    start, end = plan["chunks"][c % plan["workers"]]
    return end - start


def traffic(plan: dict) -> list[Flow]:
    n, order = plan["workers"], plan["order"]
    if n == 1:
        return []
    segs = [len(_segments(plan, c)) for c in range(n)]
    return [Flow(order[p], order[(p + 1) % n], plan["nic"],
                 DTYPE_BYTES * (2 * plan["elements"] - _size(plan, p + 1) - _size(plan, p + 2)),
                 2 * sum(segs) - segs[(p + 1) % n] - segs[(p + 2) % n])
            for p in range(n)]


def _segments(plan: dict, c: int) -> list[tuple[int, int]]:
    """Absolute [start, end) of the segments of chunk c (both ends compute the same)."""
    start, end = plan["chunks"][c % plan["workers"]]
    if end <= start:
        return []
    seg = plan.get("segment_elements", SEGMENT_ELEMENTS)
    return [(start + a, start + b) for a, b in split(end - start, -(-(end - start) // seg))]


def execute(plan: dict, comm, grads, state=None):
    """Pipelined ring: a segment is forwarded as soon as it has arrived (and been added).

    Step t of 2(N-1) sends the chunk received at step t-1, so segment j of step t only
    waits for segment j of step t-1, not for the whole step: the successor link never
    idles while a step finishes, and the per-step jitter of 2(N-1) lockstep steps does
    not add up. All receives are posted first (unique tag per step and segment; the
    reduce-scatter lands in per-step buffers), then sends follow arrivals."""
    flat = as_flat(grads)
    n = plan["workers"]
    if n == 1:
        return flat
    nic, order = plan["nic"], plan["order"]
    p = order.index(comm.rank)
    succ, pred = order[(p + 1) % n], order[(p - 1) % n]
    steps = 2 * (n - 1)
    # step t: reduce-scatter for t < n-1 (send chunk p-t, receive chunk p-t-1 and add),
    # then all-gather (send chunk p+1-s, receive chunk p-s in place), s = t-(n-1)
    send_chunk = [p - t if t < n - 1 else p + 1 - (t - n + 1) for t in range(steps)]
    recv_chunk = [p - t - 1 if t < n - 1 else p - (t - n + 1) for t in range(steps)]
    nseg = max(1, max(len(_segments(plan, c)) for c in range(n)))
    recvs, bufs = {}, {}
    for t in range(steps):
        for j, (a, b) in enumerate(_segments(plan, recv_chunk[t])):
            buf = torch.empty(b - a, dtype=flat.dtype) if t < n - 1 else flat[a:b]
            bufs[t, j] = buf
            recvs[t, j] = comm.recv(buf, pred, nic=nic, tag=t * nseg + j)
    sends = []

    def send(t):
        for j, (a, b) in enumerate(_segments(plan, send_chunk[t])):
            sends.append(comm.send(flat[a:b], succ, nic=nic, tag=t * nseg + j))

    t_start = time.time()
    send(0)
    marks = [t_start]
    for t in range(steps):
        segs = _segments(plan, recv_chunk[t])
        for j, (a, b) in enumerate(segs):
            recvs[t, j].wait()
            if t < n - 1:
                flat[a:b] += bufs[t, j]
            if t + 1 < steps:  # forward segment j of the chunk just completed
                sa, sb = _segments(plan, send_chunk[t + 1])[j]
                sends.append(comm.send(flat[sa:sb], succ, nic=nic, tag=(t + 1) * nseg + j))
        if not segs and t + 1 < steps:
            send(t + 1)
        marks.append(time.time())
    for w in sends:
        w.wait()
    for t in range(steps):
        a, b = plan["chunks"][send_chunk[t] % n]
        comm.record(tree=0, stage=t, nic=nic, phase="reduce_scatter" if t < n - 1 else "all_gather",
                    t0=marks[t], t1=marks[t + 1], bytes=(b - a) * DTYPE_BYTES)
    return flat


ALGORITHM = Algorithm(
    name="ring",
    summary="ring all-reduce (reduce-scatter + all-gather) over send/recv on NIC 0, order from the plan",
    plan=plan, traffic=traffic, execute=execute, validate=validate, options=OPTIONS,
)
