"""`ps`: sharded parameter server, either co-located on the workers or on S dedicated ranks.

The gradient is cut into shards (`base.split`), each owned by one server:
- servers = 0 (co-located): the N workers are the servers; worker i owns shard i of N.
- servers = S > 0 (`PlanContext.servers`): ranks N..N+S-1 hold no gradient; rank N+s owns
  shard s of S. This is the PS-on-Fat-Tree baseline BML (Wang et al., NeurIPS 2018) is
  compared against.
Steps of one sync:
1. Push: every worker sends shard j to its owner (keeping its own shard when co-located);
   each owner receives the shard from every other worker and sums in rank order.
2. Pull: each owner sends its reduced shard to every worker that is not itself.
Every phase posts all its sends and receives first and then waits, so no ordering of ranks
can deadlock Gloo; a worker waits for its pushes before receiving pulls into the same buffer.
Traffic (docs/DESIGN.md closed forms): co-located, each worker pushes (N-1)M/N and pulls (N-1)M/N;
dedicated, each worker pushes M and pulls M, each server receives NM/S and sends NM/S.
"""
from __future__ import annotations

import time

import torch

from workloads.algorithms.base import DTYPE_BYTES, Algorithm, Flow, FlowBlock, merge_flows, split
from workloads.gradients import as_flat

PUSH_TAG, PULL_TAG = 0, 1


def plan(ctx) -> dict:
    n, s = ctx.workers, ctx.servers
    owners = list(range(n)) if s == 0 else list(range(n, n + s))
    return {"algorithm": "ps", "workers": n, "servers": s, "world": ctx.world, "elements": ctx.elements,
            "nic": 0, "owners": owners, "shards": [list(c) for c in split(ctx.elements, len(owners))]}


def _phases(plan: dict):
    """(phase, src, dst, (start, end)) of every message of one sync, push first."""
    for phase in ("push", "pull"):
        for owner, (start, end) in zip(plan["owners"], plan["shards"]):
            if end == start:
                continue
            for w in range(plan["workers"]):
                if w != owner:
                    src, dst = (w, owner) if phase == "push" else (owner, w)
                    yield phase, src, dst, (start, end)


def phases(plan: dict) -> list[list[Flow]]:
    """Push, then pull: an owner sends its reduced shard only after every push reached it."""
    return [merge_flows(Flow(src, dst, plan["nic"], DTYPE_BYTES * (end - start))
                        for phase, src, dst, (start, end) in _phases(plan) if phase == name)
            for name in ("push", "pull")]


def blocks(plan: dict) -> list[list[FlowBlock]]:
    """`phases` as FlowBlocks (base.Algorithm.blocks): per step, one block per shard size,
    push from every worker to the owners of that size, pull back; a co-located owner keeps its
    own shard (the block's src != dst). O(P) numbers for P(P-1) flows."""
    workers = tuple(range(plan["workers"]))
    by_size: dict = {}
    for owner, (start, end) in zip(plan["owners"], plan["shards"]):
        if end > start:
            by_size.setdefault(DTYPE_BYTES * (end - start), []).append(owner)
    push = [FlowBlock(workers, tuple(o), plan["nic"], b) for b, o in sorted(by_size.items())]
    pull = [FlowBlock(tuple(o), workers, plan["nic"], b) for b, o in sorted(by_size.items())]
    return [push, pull]


def traffic(plan: dict) -> list[Flow]:
    """Payload bytes per (src, dst) of one sync: both steps together."""
    return merge_flows(f for step in phases(plan) for f in step)


def _wait(works) -> None:
    for work in works:
        work.wait()


def _post(comm, nic: int, tag: int, recvs: list, sends: list) -> list:
    """Post every receive of a step, then every send; the Works. Receives first: a Gloo send
    moves no data before its receiver has told the sender it posted the receive, and (our
    reading of the capture) that word waits behind the receiver's own payload to the sender on
    their connection. Posting a send first held rank 0's whole push back until the others'
    pushes to it had arrived (until 2026-11-29: docs/PROJECTION.md, "Fan-in")."""
    works = [comm.recv(buf, src, nic=nic, tag=tag) for src, buf in recvs]
    return works + [comm.send(buf, dst, nic=nic, tag=tag) for dst, buf in sends]


def execute(plan: dict, comm, grads, state=None):
    """Workers return the summed gradient; a dedicated server returns its buffer with only its
    own shard filled in (it holds no gradient, so pass it zeros of the full size)."""
    flat = as_flat(grads)
    me, nic, n = comm.rank, plan["nic"], plan["workers"]
    messages = list(_phases(plan))
    is_worker = me < n

    # 1. push: send my shards to their owners; receive every worker's copy of the shard I own.
    # Every receive is posted before any send, in both phases (`_post`).
    t0 = time.time()
    incoming = {src: torch.empty(end - start, dtype=flat.dtype)
                for phase, src, dst, (start, end) in messages if phase == "push" and dst == me}
    _wait(_post(comm, nic, PUSH_TAG, list(incoming.items()),
                [(dst, flat[s:e]) for phase, src, dst, (s, e) in messages if phase == "push" and src == me]))
    pushed = sum(DTYPE_BYTES * (e - s) for ph, src, _, (s, e) in messages if ph == "push" and src == me)
    comm.record(tree=0, stage=0, nic=nic, phase="push", t0=t0, t1=time.time(), bytes=pushed)

    if me in plan["owners"]:  # sum in rank order (own copy at its place), written into my shard
        start, end = plan["shards"][plan["owners"].index(me)]
        if end > start:
            parts = [flat[start:end] if w == me else incoming[w] for w in range(n)]
            total = parts[0].clone()
            for part in parts[1:]:
                total += part
            flat[start:end] = total

    # 2. pull: owners send the reduced shard to every other worker; workers receive in place.
    t0 = time.time()
    _wait(_post(comm, nic, PULL_TAG,
                [(src, flat[s:e]) for phase, src, dst, (s, e) in messages if phase == "pull" and dst == me and is_worker],
                [(dst, flat[s:e]) for phase, src, dst, (s, e) in messages if phase == "pull" and src == me]))
    pulled = sum(DTYPE_BYTES * (e - s) for ph, src, _, (s, e) in messages if ph == "pull" and src == me)
    comm.record(tree=0, stage=1, nic=nic, phase="pull", t0=t0, t1=time.time(), bytes=pulled)
    return flat


ALGORITHM = Algorithm(
    name="ps",
    summary="sharded parameter server: co-located on all workers (servers=0) or on S dedicated ranks",
    plan=plan, traffic=traffic, execute=execute, uses_servers=True, phases=phases, blocks=blocks,
)
