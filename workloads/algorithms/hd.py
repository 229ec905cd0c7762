"""`hd`: recursive halving-doubling all-reduce (Rabenseifner), for P a power of two.

Thakur, Rabenseifner, Gropp, "Optimization of Collective Communication Operations in
MPICH", IJHPCA 2005, section 4.4 (what MPICH and Gloo run for mid-size messages). P = 2^L
workers, the gradient of M bytes cut into P near-equal blocks (`base.split`). A rank's
window is a run of blocks, all P at the start; the distances are d_0..d_{L-1}, powers of
two: 1, 2, ..., P/2 with option `first=near` (MPICH's order), P/2, ..., 1 with `first=far`.
1. Reduce-scatter by recursive halving, s = 0..L-1: the partner is rank XOR d_s. Cut the
   window in halves; keep the lower half if the rank's bit d_s is 0, else the upper; send
   the other half to the partner, receive the partner's copy of the kept half and add it.
   The partner had the same window, so the halves match. After L steps the window is one
   block, reduced over all P ranks.
2. All-gather by recursive doubling, s = L-1..0 (the distances in reverse): send the window
   to the partner rank XOR d_s, receive its window (the other half) in place; the window
   doubles back to the whole gradient.
Traffic: in step 1's step s a rank sends M/2^(s+1) bytes, in step 2's the same sizes
reversed: (P-1)M/P in each half and 2(P-1)M/P in all, in L messages per half, one Gloo send
per exchange (none when its half is empty, E < P). Exact for any E (the blocks' sizes).
Steps run one after another (`phases`, 2L of them), each one message round (`rounds`).
"""
from __future__ import annotations

import time

import torch

from workloads.algorithms.base import (DTYPE_BYTES, POWERS_OF_TWO, Algorithm, Flow, Option, merge_flows,
                                       split)
from workloads.gradients import as_flat

FIRST = ("near", "far")


def _first(value) -> str:
    if str(value) not in FIRST:
        raise ValueError(f"must be {' or '.join(FIRST)}")
    return str(value)


OPTIONS = {"first": Option("near", _first, "near (first exchange at distance 1, as MPICH) or far (distance P/2)")}


def plan(ctx) -> dict:
    p = ctx.workers
    distances = [1 << s for s in range(p.bit_length() - 1)]  # 1, 2, ..., P/2
    if ctx.options["first"] == "far":
        distances.reverse()
    return {"algorithm": "hd", "workers": p, "world": ctx.world, "elements": ctx.elements, "nic": 0,
            "first": ctx.options["first"], "distances": distances,
            "blocks": [list(b) for b in split(ctx.elements, p)]}


def exchanges(plan: dict, rank: int) -> list[dict]:
    """`rank`'s 2L exchanges in order (steps 1-2 of the docstring): step, phase, peer and the
    element ranges [a, b) it sends and receives. Both ends of an exchange compute the same ranges."""
    blocks = plan["blocks"]

    def elements(first: int, end: int) -> tuple[int, int]:  # a run of blocks -> its range of the gradient
        return blocks[first][0], blocks[end - 1][1]

    halving, lo, hi = [], 0, plan["workers"]  # the window [lo, hi), in blocks
    for d in plan["distances"]:
        mid = (lo + hi) // 2
        keep, give = ((lo, mid), (mid, hi)) if rank & d == 0 else ((mid, hi), (lo, mid))
        halving.append((rank ^ d, elements(*keep), elements(*give)))
        lo, hi = keep
    out = [{"phase": "reduce_scatter", "peer": peer, "send": give, "recv": keep} for peer, keep, give in halving]
    out += [{"phase": "all_gather", "peer": peer, "send": keep, "recv": give}
            for peer, keep, give in reversed(halving)]
    return [dict(x, step=s) for s, x in enumerate(out)]


def phases(plan: dict) -> list[list[Flow]]:
    """One step per exchange: every rank sends its partner one message (none if empty)."""
    steps = [[] for _ in range(2 * len(plan["distances"]))]
    for rank in range(plan["workers"]):
        for x in exchanges(plan, rank):
            nbytes = DTYPE_BYTES * (x["send"][1] - x["send"][0])
            steps[x["step"]].append(Flow(rank, x["peer"], plan["nic"], nbytes, 1 if nbytes else 0))
    return [merge_flows(step) for step in steps]


def traffic(plan: dict) -> list[Flow]:
    """Closed form: to its partner at distance d_s a rank sends its whole window of step 1's
    step s, P/2^s blocks (M/2^s bytes when P divides E): the half it gives there, and in step 2
    the half it kept; one message per non-empty half. The window starts at block
    sum over t < s of (bit d_t of the rank) * P/2^(t+1)."""
    p, blocks, flows = plan["workers"], plan["blocks"], []
    for rank in range(p):
        lo = 0
        for s, d in enumerate(plan["distances"]):
            half = p >> (s + 1)
            sizes = [blocks[lo + half - 1][1] - blocks[lo][0], blocks[lo + 2 * half - 1][1] - blocks[lo + half][0]]
            flows.append(Flow(rank, rank ^ d, plan["nic"], DTYPE_BYTES * sum(sizes), sum(1 for n in sizes if n)))
            lo += half if rank & d else 0
    return merge_flows(flows)


def execute(plan: dict, comm, grads, state=None):
    flat = as_flat(grads)
    nic = plan["nic"]
    for x in exchanges(plan, comm.rank):
        (sa, sb), (ra, rb) = x["send"], x["recv"]
        t0 = time.time()
        reduce = x["phase"] == "reduce_scatter"
        buf = torch.empty(rb - ra, dtype=flat.dtype) if reduce else flat[ra:rb]
        works = ([comm.recv(buf, x["peer"], nic=nic, tag=x["step"])] if rb > ra else []) + \
                ([comm.send(flat[sa:sb], x["peer"], nic=nic, tag=x["step"])] if sb > sa else [])
        for w in works:
            w.wait()
        if reduce and rb > ra:
            flat[ra:rb] += buf
        comm.record(tree=0, stage=x["step"], nic=nic, phase=x["phase"], t0=t0, t1=time.time(),
                    bytes=DTYPE_BYTES * (sb - sa))
    return flat


ALGORITHM = Algorithm(
    name="hd",
    summary="recursive halving-doubling all-reduce (Rabenseifner): log2 P halving then log2 P doubling "
            "exchanges on NIC 0",
    plan=plan, traffic=traffic, execute=execute, phases=phases, options=OPTIONS, workers=POWERS_OF_TWO,
    rounds=lambda plan: [1] * (2 * len(plan["distances"])),  # one exchange per step
)
