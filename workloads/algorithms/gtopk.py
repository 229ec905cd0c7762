"""`gtopk`: global Top-k sparsification (gTop-k) with error feedback, merged up a binomial tree.

Shi et al., "A Distributed Synchronous SGD Algorithm with Global Top-k Sparsification for
Low Bandwidth Networks", ICDCS 2019 (arXiv 1901.04359), its gTopKAllReduce. Rank p of P,
d gradient elements, k = ceil(density * d) (`topk.k_of`), R = ceil(log2 P) rounds:
1. acc = gradient + residual (`sparse.Residual`, kept in `state.memory`; error feedback).
2. L_p = `sparse.select_topk(acc, k)` (ties to the lower index); the rank's held set S = L_p.
3. Reduction, rounds j = 0..R-1 of `sparse.gtopk_rounds(P)` (any P, not only powers of two):
   a receiver merges each child's set into its own, S = `merge_topk(S, child's, k)` (the
   receiver's set as a, the sender's as b: the order `sparse.reference_gtopk` uses); a sender
   sends S to its parent (`SparseSet.pack`: 8k bytes), once, in round j = its lowest set
   bit, and is then done reducing.
4. Broadcast, rounds of `sparse.gtopk_broadcast_rounds(P)` (the reduction tree reversed):
   the root's S is the global set G; every other rank receives G from its parent and
   forwards it to its children, in round order.
5. result = G.to_dense() on every rank, bit for bit `reference_gtopk`'s.
6. residual = acc with zeros at the rank's counted entries, by option `residual`:
   - `paper` (default): L_p ∩ G, the rule of the paper and the authors' code
     (hclhkbu/gtopkssgd): local top-k entries outside G go back to the residual. It can lose
     a value: an index p sent can be dropped by a merge on the way up and still reach G
     through another subtree; p's value is then in neither the result nor its residual
     (`sparse.reference_gtopk`, the caveat of step 4).
   - `exact`: only the entries whose value is summed into G (`reference_gtopk(...,
     counted_only=True)`), so sum_p (acc_p - residual_p) == result. Each rank knows which of
     its own and its children's entries its S still carries after its merges (an index still
     in S after a merge carries every contribution it carried; one dropped never regains
     them, even if the index comes back from another child). The rest comes down with the
     broadcast: with G, the parent sends each child a bit set over the k pairs that child
     sent up, marking those counted in G (the root: all of G); ceil(k/32) int32 words
     appended to the message, 4 ceil(k/32) bytes, 1/64 of the 8k.

Traffic (docs/DESIGN.md, "gTop-k"): rank p != 0 sends one message of 8k bytes to its parent
p - lowbit(p) in the reduction, and one of 8k bytes (+ 4 ceil(k/32) for `exact`) to each
child p + 2^j (j < trailing zeros of p, all j < R for the root, p + 2^j < P) in the broadcast:
(P-1) messages up and (P-1) down in all, 2R steps. No rank receives more than R messages of
k pairs in the reduction (the root receives exactly R) or sends more than R in the broadcast:
O(k log P) against topk's (P-1)k per rank.

Not data dependent, so messages are fixed-size (`comm.send`, no count header): L_p always
has exactly k entries (`select_topk` fills with zero-valued entries when fewer are non-zero)
and the union of two k-entry sets has at least k entries, so every `merge_topk` keeps
exactly k; a set of any other size would be a broken invariant, and raises.
"""
from __future__ import annotations

import time

import torch

from workloads.algorithms.base import Algorithm, Flow, Option, merge_flows
from workloads.algorithms.topk import (DENSITY, MERGE, PAIR_BYTES, SPARSIFY, check_elements, describe, k_of,
                                       reference_memory, residual_of)
from workloads.gradients import as_flat
from workloads.sparse import SparseSet, gtopk_broadcast_rounds, gtopk_rounds, merge_topk, reference_gtopk

RESIDUAL_RULES = ("paper", "exact")
REDUCE_TAG, BCAST_TAG = 0, 1
_SHIFTS = torch.arange(8, dtype=torch.uint8)


def _residual_rule(value) -> str:
    if not isinstance(value, str) or value.strip().lower() not in RESIDUAL_RULES:
        raise ValueError(f"must be one of {', '.join(RESIDUAL_RULES)}")
    return value.strip().lower()


OPTIONS = {
    "density": DENSITY,
    "residual": Option("paper", _residual_rule,
                       "paper (local top-k entries outside the global set go back, as Shi et al.) or exact "
                       "(only entries summed into the global set count; a k-bit set rides on the broadcast)"),
}


def mask_bytes(k: int) -> int:
    """Bytes of the survival bit set `exact` appends to a broadcast message: whole int32 words."""
    return 4 * -(-k // 32)


# --- planner -------------------------------------------------------------------------------

def validate(ctx) -> None:
    check_elements("gtopk", ctx.elements)
    k_of(ctx.options["density"], ctx.elements, "gtopk")


def plan(ctx) -> dict:
    k = k_of(ctx.options["density"], ctx.elements, "gtopk")
    rule = ctx.options["residual"]
    return {"algorithm": "gtopk", "workers": ctx.workers, "world": ctx.world, "elements": ctx.elements,
            "nic": 0, "density": ctx.options["density"], "k": k, "residual": rule, "pair_bytes": PAIR_BYTES,
            "mask_bytes": mask_bytes(k) if rule == "exact" else 0,
            "reduce_rounds": [[[s, d] for s, d in pairs] for pairs in gtopk_rounds(ctx.workers)],
            "broadcast_rounds": [[[s, d] for s, d in pairs] for pairs in gtopk_broadcast_rounds(ctx.workers)]}


def roles(plan: dict, rank: int) -> dict:
    """`rank`'s [round, peer] lists in the plan's rounds (as `sparse.gtopk_roles`, from the plan)."""
    def pick(rounds, mine, peer):
        return [[j, pair[peer]] for j, pairs in enumerate(rounds) for pair in pairs if pair[mine] == rank]
    return {"reduce_recv": pick(plan["reduce_rounds"], 1, 0), "reduce_send": pick(plan["reduce_rounds"], 0, 1),
            "bcast_recv": pick(plan["broadcast_rounds"], 1, 0), "bcast_send": pick(plan["broadcast_rounds"], 0, 1)}


def phases(plan: dict) -> list[list[Flow]]:
    """R reduction rounds, then R broadcast rounds; each pair moves one set of k pairs."""
    up = PAIR_BYTES * plan["k"]
    down = up + plan["mask_bytes"]
    return ([[Flow(s, d, plan["nic"], up) for s, d in pairs] for pairs in plan["reduce_rounds"]]
            + [[Flow(s, d, plan["nic"], down) for s, d in pairs] for pairs in plan["broadcast_rounds"]])


def traffic(plan: dict) -> list[Flow]:
    return merge_flows(f for step in phases(plan) for f in step)


# --- executor ------------------------------------------------------------------------------

def _bits(mask: torch.Tensor, nbytes: int) -> torch.Tensor:
    """A bool mask as int32 words (bit i of byte i // 8 is entry i), `nbytes` long."""
    padded = torch.zeros(nbytes * 8, dtype=torch.uint8)
    padded[:mask.numel()] = mask.to(torch.uint8)
    return (padded.view(-1, 8) << _SHIFTS).sum(1).to(torch.uint8).view(torch.int32)


def _unbits(words: torch.Tensor, k: int) -> torch.Tensor:
    return ((words.contiguous().view(torch.uint8).unsqueeze(1) >> _SHIFTS) & 1).reshape(-1)[:k].bool()


def _full(s: SparseSet, k: int, what: str) -> SparseSet:
    if s.k != k:  # cannot happen (module docstring); a fixed-size message would carry garbage
        raise RuntimeError(f"gtopk: {what} holds {s.k} pairs, not k={k}: merge_topk of two k-sets must keep k")
    return s


def execute(plan: dict, comm, grads, state):
    flat = as_flat(grads)
    d, k, nic, me = plan["elements"], plan["k"], plan["nic"], comm.rank
    exact = plan["residual"] == "exact"
    role = roles(plan, me)
    residual = residual_of(state, d)
    with state.computing(SPARSIFY.key):
        acc = residual.accumulate(flat)  # 1.
        local = SparseSet.topk(acc, k)  # 2.
    # Every receive posted first (buffers are fixed-size), so no ordering of ranks can block.
    up_bufs = {src: torch.empty(2 * k, dtype=torch.int32) for _, src in role["reduce_recv"]}
    ups = {src: comm.recv(buf, src, nic=nic, tag=REDUCE_TAG) for src, buf in up_bufs.items()}
    down_buf = torch.empty(2 * k + plan["mask_bytes"] // 4, dtype=torch.int32)
    downs = [comm.recv(down_buf, src, nic=nic, tag=BCAST_TAG) for _, src in role["bcast_recv"]]

    held = local  # 3.
    carried = {me: (local, torch.ones(k, dtype=torch.bool))}  # source rank -> (its set, entries held carries)
    merging = 0.0  # the compressor's other CPU: merges, the residual's update, the dense result
    for j, src in role["reduce_recv"]:
        t0 = time.time()
        ups[src].wait()
        t_merge = time.perf_counter()
        theirs = SparseSet.unpack(up_bufs[src], d)
        held = _full(merge_topk(held, theirs, k), k, "a merged set")
        merging += time.perf_counter() - t_merge
        if exact:
            for s, alive in carried.values():
                alive &= torch.isin(s.indices, held.indices)
            carried[src] = (theirs, torch.isin(theirs.indices, held.indices))
        comm.record(tree=0, stage=j, nic=nic, phase="reduce", t0=t0, t1=time.time(), bytes=0)
    sends, packed = [], held.pack()  # `packed` referenced until its send completed
    for j, dst in role["reduce_send"]:
        t0 = time.time()
        sends.append(comm.send(packed, dst, nic=nic, tag=REDUCE_TAG))
        comm.record(tree=0, stage=j, nic=nic, phase="reduce", t0=t0, t1=time.time(), bytes=PAIR_BYTES * k)

    rounds = len(plan["reduce_rounds"])  # 4.
    t0 = time.time()
    if downs:
        downs[0].wait()
        final = _full(SparseSet.unpack(down_buf[:2 * k], d), k, "the broadcast set")
        pairs = down_buf[:2 * k]  # forwarded as received
        counted = held.indices[_unbits(down_buf[2 * k:], k)] if exact else None  # bits over what I sent up
    else:  # the root
        final, pairs, counted = held, packed, held.indices
    # Round by round, each send completed before the next: a child forwards while its
    # parent serves the next one (the binomial broadcast), instead of sharing the NIC.
    for b, dst in role["bcast_send"]:
        msg = pairs
        if exact:
            theirs, alive = carried[dst]
            msg = torch.cat([pairs, _bits(alive & torch.isin(theirs.indices, counted), plan["mask_bytes"])])
        comm.send(msg, dst, nic=nic, tag=BCAST_TAG).wait()
        comm.record(tree=0, stage=rounds + b, nic=nic, phase="broadcast", t0=t0, t1=time.time(),
                    bytes=msg.numel() * msg.element_size())
        t0 = time.time()
    t_merge = time.perf_counter()
    if exact:  # 6.
        kept = local.indices[carried[me][1] & torch.isin(local.indices, counted)]
    else:
        kept = local.indices[torch.isin(local.indices, final.indices)]
    residual.update(acc, kept)
    merging += time.perf_counter() - t_merge
    for w in sends:
        w.wait()
    t_merge = time.perf_counter()
    result = final.to_dense()  # 5.
    merging += time.perf_counter() - t_merge
    state.observed.update(k=k, pairs_sent=k * (len(role["reduce_send"]) + len(role["bcast_send"])),
                          kept=int(kept.numel()), merge_seconds=merging, **role)
    return result


def reference(plan: dict, inputs, memory: dict):
    """What every worker must hold: `sparse.reference_gtopk` over every rank's acc, residuals kept
    by the plan's rule (`exact`: counted_only=True)."""
    residuals = reference_memory(memory, len(inputs), plan["elements"])
    accs = [m.accumulate(x) for m, x in zip(residuals, inputs)]
    result, kept = reference_gtopk(accs, plan["k"], counted_only=plan["residual"] == "exact")
    for m, acc, idx in zip(residuals, accs, kept):
        m.update(acc, idx)
    return result


ALGORITHM = Algorithm(
    name="gtopk",
    summary="global Top-k (Shi et al. 2019): local top-k merged up a binomial tree (any P), global k broadcast, "
            "error feedback",
    plan=plan, traffic=traffic, execute=execute, validate=validate, phases=phases, options=OPTIONS,
    reference=reference, data_dependent=False,
    describe=describe, compute=(SPARSIFY, MERGE),
)
