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
2(N-1)M/N bytes (docs/DESIGN.md closed form), exact when N divides E, and 2(N-1)M in total always.

The mechanics are functions of any 1-D slice, so other executors reuse the same ring on
parts of the gradient (the layer-wise algorithms run one per group of layers, each on its
own range of tags): `ring_allreduce` runs it, `ring_flows` is its traffic, `ring_tags` the
number of Gloo tags it uses from its `tag_base`.
"""
from __future__ import annotations

import time

import torch

from workloads.algorithms.base import DTYPE_BYTES, Algorithm, Flow, Option, number, split
from workloads.gradients import as_flat

SEGMENT_ELEMENTS = 16384  # 64 KiB: Gloo frames each message with GLOO_FRAMING_BYTES (144 B), 0.2%
MAX_TAG = 2**31 - 1  # ProcessGroupGloo::send/recv take a C++ int tag and refuse negatives


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


# -- the ring on any slice: segments, traffic, tags, executor ----------------------------------

def segment_count(elements: int, segment_elements: int = SEGMENT_ELEMENTS) -> int:
    """How many segments a chunk of `elements` is sent in: len(segments(...)) without them."""
    return -(-elements // segment_elements) if elements > 0 else 0


def segments(chunks, c: int, segment_elements: int = SEGMENT_ELEMENTS) -> list[tuple[int, int]]:
    """[start, end) of the segments of chunk c (mod N), in the chunks' coordinates (both ends
    of a message compute the same)."""
    start, end = chunks[c % len(chunks)]
    if end <= start:
        return []
    return [(start + a, start + b) for a, b in split(end - start, segment_count(end - start, segment_elements))]


def ring_flows(order, chunks, segment_elements: int = SEGMENT_ELEMENTS, nic: int = 0) -> list[Flow]:
    """Bytes and messages each position sends its successor in one ring all-reduce of `chunks`."""
    n = len(order)
    if n == 1:
        return []
    size = [end - start for start, end in chunks]
    total = sum(size)
    segs = [segment_count(s, segment_elements) for s in size]
    all_segs = sum(segs)
    return [Flow(order[p], order[(p + 1) % n], nic,
                 DTYPE_BYTES * (2 * total - size[(p + 1) % n] - size[(p + 2) % n]),
                 2 * all_segs - segs[(p + 1) % n] - segs[(p + 2) % n])
            for p in range(n)]


def ring_tags(chunks, segment_elements: int = SEGMENT_ELEMENTS) -> int:
    """How many consecutive tags from `tag_base` one `ring_allreduce` of `chunks` uses."""
    n = len(chunks)
    if n == 1:
        return 0
    return 2 * (n - 1) * max(1, max(segment_count(end - start, segment_elements) for start, end in chunks))


def ring_allreduce(comm, flat: torch.Tensor, order, nic: int = 0, tag_base: int = 0,
                   segment_elements: int = SEGMENT_ELEMENTS, chunks=None) -> list[float]:
    """Sum `flat` (a contiguous 1-D tensor or slice) over the ranks of `order`, in place.

    Pipelined: a segment is forwarded as soon as it has arrived (and been added). Step t of
    2(N-1) sends the chunk received at step t-1, so segment j of step t only waits for
    segment j of step t-1, not for the whole step: the successor link never idles while a
    step finishes, and the per-step jitter of 2(N-1) lockstep steps does not add up. All
    receives are posted first (tag `tag_base + t * nseg + j` per step t and segment j; the
    reduce-scatter lands in per-step buffers), then sends follow arrivals. `chunks` are N
    [start, end) ranges of `flat` (default: `split` into N). Returns the wall-clock marks
    [start, end of step 0, ..., end of step 2N-3] (just [start] when N = 1)."""
    n = len(order)
    if n == 1:
        return [time.time()]
    if chunks is None:
        chunks = split(flat.numel(), n)
    last_tag = tag_base + ring_tags(chunks, segment_elements) - 1
    if tag_base < 0 or last_tag > MAX_TAG:
        raise ValueError(f"ring tags {tag_base}..{last_tag} fall outside Gloo's 0..{MAX_TAG}")
    p = order.index(comm.rank)
    succ, pred = order[(p + 1) % n], order[(p - 1) % n]
    steps = 2 * (n - 1)
    # step t: reduce-scatter for t < n-1 (send chunk p-t, receive chunk p-t-1 and add),
    # then all-gather (send chunk p+1-s, receive chunk p-s in place), s = t-(n-1)
    send_chunk = [p - t if t < n - 1 else p + 1 - (t - n + 1) for t in range(steps)]
    recv_chunk = [p - t - 1 if t < n - 1 else p - (t - n + 1) for t in range(steps)]
    seg_of = {c % n: segments(chunks, c, segment_elements) for c in range(n)}
    nseg = max(1, max(len(s) for s in seg_of.values()))
    recvs, bufs = {}, {}
    for t in range(steps):
        for j, (a, b) in enumerate(seg_of[recv_chunk[t] % n]):
            buf = torch.empty(b - a, dtype=flat.dtype) if t < n - 1 else flat[a:b]
            bufs[t, j] = buf
            recvs[t, j] = comm.recv(buf, pred, nic=nic, tag=tag_base + t * nseg + j)
    sends = []

    def send(t):
        for j, (a, b) in enumerate(seg_of[send_chunk[t] % n]):
            sends.append(comm.send(flat[a:b], succ, nic=nic, tag=tag_base + t * nseg + j))

    marks = [time.time()]
    send(0)
    for t in range(steps):
        segs = seg_of[recv_chunk[t] % n]
        for j, (a, b) in enumerate(segs):
            recvs[t, j].wait()
            if t < n - 1:
                flat[a:b] += bufs[t, j]
            if t + 1 < steps:  # forward segment j of the chunk just completed
                sa, sb = seg_of[send_chunk[t + 1] % n][j]
                sends.append(comm.send(flat[sa:sb], succ, nic=nic, tag=tag_base + (t + 1) * nseg + j))
        if not segs and t + 1 < steps:
            send(t + 1)
        marks.append(time.time())
    for w in sends:
        w.wait()
    return marks


def _size(plan: dict, c: int) -> int:
    start, end = plan["chunks"][c % plan["workers"]]
    return end - start


def traffic(plan: dict) -> list[Flow]:
    return ring_flows(plan["order"], plan["chunks"], plan.get("segment_elements", SEGMENT_ELEMENTS), plan["nic"])


def execute(plan: dict, comm, grads, state=None):
    """The whole flat gradient through `ring_allreduce`, one timeline event per step."""
    flat = as_flat(grads)
    n = plan["workers"]
    if n == 1:
        return flat
    nic, order = plan["nic"], plan["order"]
    marks = ring_allreduce(comm, flat, order, nic, 0, plan.get("segment_elements", SEGMENT_ELEMENTS),
                           plan["chunks"])
    p = order.index(comm.rank)
    for t in range(2 * (n - 1)):
        send_chunk = p - t if t < n - 1 else p + 1 - (t - n + 1)
        comm.record(tree=0, stage=t, nic=nic, phase="reduce_scatter" if t < n - 1 else "all_gather",
                    t0=marks[t], t1=marks[t + 1], bytes=_size(plan, send_chunk) * DTYPE_BYTES)
    return flat


ALGORITHM = Algorithm(
    name="ring",
    summary="ring all-reduce (reduce-scatter + all-gather) over send/recv on NIC 0, order from the plan",
    plan=plan, traffic=traffic, execute=execute, validate=validate, options=OPTIONS,
    rounds=lambda plan: [2 * (plan["workers"] - 1)],  # reduce-scatter then all-gather steps
)
