"""`ring`: our own ring all-reduce (reduce-scatter + all-gather) over point-to-point send/recv.

Unlike `gloo`, every byte is sent by this module, so the ring order is a plan decision
(option `order`, a permutation of the worker ranks; rank order by default) and each step
can be put on a timeline. Steps, for the rank at position p of the order, successor
p+1 and predecessor p-1 (mod N), the gradient cut into N near-equal chunks (`base.split`):
1. Reduce-scatter, s = 0..N-2: send chunk (p - s) to the successor while receiving chunk
   (p - s - 1) from the predecessor, and add it in. Position p then owns chunk p + 1, reduced.
2. All-gather, s = 0..N-2: send chunk (p + 1 - s), receive chunk (p - s) in place.
Send and receive of a step are posted together and then waited on, so no step deadlocks.
Traffic: each rank sends 2E - |chunk p+1| - |chunk p+2| elements to its successor:
2(N-1)M/N bytes (DESIGN.md closed form), exact when N divides E, and 2(N-1)M in total always.
"""
from __future__ import annotations

import time

import torch

from workloads.algorithms.base import DTYPE_BYTES, Algorithm, Flow, check_options, split
from workloads.gradients import as_flat

OPTIONS = ("order",)


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
    check_options("ring", ctx.options, OPTIONS)
    _order(ctx)


def plan(ctx) -> dict:
    validate(ctx)
    return {"algorithm": "ring", "workers": ctx.workers, "world": ctx.world, "elements": ctx.elements,
            "nic": 0, "order": _order(ctx), "chunks": [list(c) for c in split(ctx.elements, ctx.workers)]}


def _size(plan: dict, c: int) -> int:
    start, end = plan["chunks"][c % plan["workers"]]
    return end - start


def traffic(plan: dict) -> list[Flow]:
    n, order = plan["workers"], plan["order"]
    if n == 1:
        return []
    return [Flow(order[p], order[(p + 1) % n], plan["nic"],
                 DTYPE_BYTES * (2 * plan["elements"] - _size(plan, p + 1) - _size(plan, p + 2)))
            for p in range(n)]


def _step(comm, plan, phase, stage, send_c, recv_c, flat, into):
    """Post the send of chunk send_c and the receive of chunk recv_c, wait both; returns recv view."""
    n, nic, order = plan["workers"], plan["nic"], plan["order"]
    p = order.index(comm.rank)
    succ, pred = order[(p + 1) % n], order[(p - 1) % n]
    (s0, s1), (r0, r1) = plan["chunks"][send_c % n], plan["chunks"][recv_c % n]
    tag = stage if phase == "reduce_scatter" else n + stage
    t0, works = time.time(), []
    recv_view = into[: r1 - r0] if into is not None else flat[r0:r1]
    if r1 > r0:  # empty chunks (E < N) are skipped by both ends, which know the sizes
        works.append(comm.recv(recv_view, pred, nic=nic, tag=tag))
    if s1 > s0:
        works.append(comm.send(flat[s0:s1], succ, nic=nic, tag=tag))
    for work in works:
        work.wait()
    comm.record(tree=0, stage=stage, nic=nic, phase=phase, t0=t0, t1=time.time(),
                bytes=DTYPE_BYTES * (s1 - s0))
    return (r0, r1), recv_view


def execute(plan: dict, comm, grads):
    flat = as_flat(grads)
    n = plan["workers"]
    if comm.world != plan["world"] or flat.numel() != plan["elements"]:
        raise ValueError(f"ring plan is for {plan['world']} ranks and {plan['elements']} elements, "
                         f"got {comm.world} ranks and {flat.numel()} elements")
    if n == 1:
        return flat
    p = plan["order"].index(comm.rank)
    tmp = torch.empty(max(end - start for start, end in plan["chunks"]), dtype=flat.dtype)
    for s in range(n - 1):  # 1. reduce-scatter
        (r0, r1), got = _step(comm, plan, "reduce_scatter", s, p - s, p - s - 1, flat, tmp)
        flat[r0:r1] += got
    for s in range(n - 1):  # 2. all-gather, received straight into place
        _step(comm, plan, "all_gather", s, p + 1 - s, p - s, flat, None)
    return flat


ALGORITHM = Algorithm(
    name="ring",
    summary="ring all-reduce (reduce-scatter + all-gather) over send/recv on NIC 0, order from the plan",
    plan=plan, traffic=traffic, execute=execute, validate=validate,
)
