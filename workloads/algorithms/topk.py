"""`topk`: Top-k sparsification with error feedback, the (index, value) pairs all-gathered on a ring.

The Top-k S-SGD baseline of Shi et al., "A Distributed Synchronous SGD Algorithm with Global
Top-k Sparsification for Low Bandwidth Networks", ICDCS 2019 (their Algorithm 1 with an
AllGather; O(kP) traffic per rank, against O(k log P) for `gtopk`). Rank p of P, d gradient
elements, k = ceil(density * d) (`k_of`):
1. acc = gradient + residual (`sparse.Residual`, kept in `state.memory`; error feedback).
2. L_p = `sparse.select_topk(acc, k)`: the k entries of largest |acc|, ties to the lower
   index, so every rank (and the oracle) picks the same entries. Packed with
   `SparseSet.pack`: k int32 indices then the k values' bits, 8k bytes.
3. Ring AllGather, steps s = 0..P-2: send the set of rank (p - s) mod P to the successor
   p + 1 and receive the set of rank (p - s - 1) mod P from the predecessor p - 1; the set
   received in step s is forwarded, as received, in step s + 1. Every rank receives the
   (P-1) other sets, (P-1)k pairs.
4. result = zeros(d), then for r = 0..P-1 in rank order: result[idx_r] += val_r. This is the
   order `sparse.reference_topk` adds in, so the result equals the oracle bit for bit.
5. residual = acc with zeros at idx_p: everything sent is counted in the result.

Why a ring rather than a direct send to every peer: the bytes per rank are the same, (P-1)
messages of 8k bytes out and in, but a ring keeps one flow per NIC at a time (the
bandwidth-optimal AllGather MPI uses for long messages), where direct sends start P-1 flows
per rank at once and make every Fat-Tree uplink carry contended flows; it costs (P-1)
message latencies instead of one, which the closed form below shows as P-1 steps.

Traffic (docs/DESIGN.md, "Top-k AllGather"): each rank sends (P-1) messages of 8k bytes to its
successor and receives as many from its predecessor. Not data dependent: `select_topk`
always returns exactly k entries (zero-valued ones included when fewer are non-zero), so
every message is 8k bytes, whatever the gradients.

Option `density` (shared with `gtopk`): a number in (0, 1]; k = ceil(density * d) computed on
the decimal the user wrote (0.07 of 100 elements is 7, not ceil(7.000000000000001) = 8).
"""
from __future__ import annotations

import math
import time
from fractions import Fraction

import torch

from workloads.algorithms.base import Algorithm, Compute, Flow, Option, merge_flows, number
from workloads.gradients import as_flat
from workloads.sparse import INT32_MAX, Residual, SparseSet, reference_topk

PAIR_BYTES = 8  # one int32 index + one float32 value's bits (SparseSet.pack)
DENSITY_VALID = "a number in (0, 1]: k = ceil(density x gradient elements), at least 1"


def _density(value) -> float:
    v = float(number(0, 1, lo_open=True)(value))
    if math.isnan(v):
        raise ValueError("must be a number, not NaN")
    return v


DENSITY = Option(0.001, _density, DENSITY_VALID)


def k_of(density: float, elements: int, algo: str = "topk") -> int:
    """k = ceil(density * elements) on the decimal value of `density`; ValueError unless 1 <= k <= elements."""
    if isinstance(elements, bool) or not isinstance(elements, int) or elements < 1:
        raise ValueError(f"{algo}: the gradient must have a positive int element count, got {elements!r}")
    try:
        # repr gives the shortest decimal that round-trips: the number the user wrote
        k = math.ceil(Fraction(repr(float(density))) * elements)
    except (TypeError, ValueError, OverflowError):
        k = None
    if k is None or not 1 <= k <= elements:
        raise ValueError(f"{algo}: density={density!r} gives k={k} of {elements} elements; valid: density "
                         f"{DENSITY_VALID}")
    return k


def check_elements(algo: str, elements: int) -> None:
    """Packed indices are int32 (`SparseSet.pack`): refuse a gradient whose indices do not fit."""
    if elements - 1 > INT32_MAX:
        raise ValueError(f"{algo}: {elements} elements do not fit the int32 indices of the wire format "
                         f"(at most {INT32_MAX + 1})")


def residual_of(state, elements: int) -> Residual:
    """This rank's error-feedback memory, made on the first iteration and kept in `state.memory`."""
    if state is None:
        raise ValueError("sparse algorithms keep residuals across iterations: pass the rank's SyncState")
    residual = state.memory.get("residual")
    if residual is None:
        residual = state.memory["residual"] = Residual(elements)
    return residual


def reference_memory(memory: dict, workers: int, elements: int) -> list[Residual]:
    """Every rank's residual as the oracle keeps it (one list in the worker's oracle memory)."""
    residuals = memory.get("residuals")
    if residuals is None:
        residuals = memory["residuals"] = [Residual(elements) for _ in range(workers)]
    return residuals


# --- planner -------------------------------------------------------------------------------

OPTIONS = {"density": DENSITY}
# The compressor's CPU inside the sync, which the sparse executors log as durations
# (`Algorithm.compute`): error feedback and selection, done first; merging sparse sets, the
# residual's update and densifying, done last (topk, gtopk).
SPARSIFY = Compute("sparsify_seconds", "sparsify", "start", stated_as="compress")
MERGE = Compute("merge_seconds", "merge", "end")


def validate(ctx) -> None:
    check_elements("topk", ctx.elements)
    k_of(ctx.options["density"], ctx.elements)


def plan(ctx) -> dict:
    return {"algorithm": "topk", "workers": ctx.workers, "world": ctx.world, "elements": ctx.elements,
            "nic": 0, "density": ctx.options["density"], "k": k_of(ctx.options["density"], ctx.elements),
            "allgather": "ring", "pair_bytes": PAIR_BYTES}


def phases(plan: dict) -> list[list[Flow]]:
    """The P-1 ring steps: in each, every rank sends one set of k pairs to its successor. The
    steps are equal, so they share one step's Flows (each its own list): the projection's
    passes answer a repeat from the step before (`base.per_step`), and P^2 Flows are P."""
    n, nbytes = plan["workers"], PAIR_BYTES * plan["k"]
    step = [Flow(p, (p + 1) % n, plan["nic"], nbytes) for p in range(n)]
    return [list(step) for _ in range(n - 1)]


def rounds(plan: dict) -> list[int]:
    """One message round per ring step (the default's count, without listing the steps)."""
    return [1] * (plan["workers"] - 1)


def traffic(plan: dict) -> list[Flow]:
    """Each rank sends (P-1) messages of 8k bytes to its successor: (P-1)k pairs (`phases`
    merged, tested)."""
    n, nbytes = plan["workers"], PAIR_BYTES * plan["k"]
    if n < 2:
        return []
    return merge_flows(Flow(p, (p + 1) % n, plan["nic"], (n - 1) * nbytes, n - 1) for p in range(n))


# --- executor ------------------------------------------------------------------------------

def execute(plan: dict, comm, grads, state):
    flat = as_flat(grads)
    d, k, n, nic, me = plan["elements"], plan["k"], plan["workers"], plan["nic"], comm.rank
    residual = residual_of(state, d)
    with state.computing(SPARSIFY.key):
        acc = residual.accumulate(flat)  # 1.
        local = SparseSet.topk(acc, k)  # 2.
    sets = {me: local}
    if n > 1:  # 3. all receives posted first, so no ordering of ranks can block a send
        succ, pred = (me + 1) % n, (me - 1) % n
        bufs = [torch.empty(2 * k, dtype=torch.int32) for _ in range(n - 1)]
        recvs = [comm.recv(buf, pred, nic=nic, tag=s) for s, buf in enumerate(bufs)]
        packed = local.pack()  # referenced until its send completed
        sends = [comm.send(packed, succ, nic=nic, tag=0)]
        marks = [time.time()]
        for s in range(n - 1):
            recvs[s].wait()
            if s + 1 < n - 1:  # forward the bits as received: no re-encoding on the way
                sends.append(comm.send(bufs[s], succ, nic=nic, tag=s + 1))
            sets[(me - s - 1) % n] = SparseSet.unpack(bufs[s], d)
            marks.append(time.time())
        for w in sends:
            w.wait()
        for s in range(n - 1):
            comm.record(tree=0, stage=s, nic=nic, phase="allgather", t0=marks[s], t1=marks[s + 1],
                        bytes=PAIR_BYTES * k)
    t_merge = time.perf_counter()
    result = torch.zeros(d, dtype=torch.float32)  # 4. rank order, as reference_topk
    for r in range(n):
        result[sets[r].indices] = result[sets[r].indices] + sets[r].values
    residual.update(acc, local.indices)  # 5.
    # the compressor's other CPU: scatter-adding P k pairs and the residual (step 4-5)
    state.observed.update(k=k, pairs_sent=(n - 1) * k, kept=k, allgather_steps=n - 1,
                          merge_seconds=time.perf_counter() - t_merge)
    return result


def describe(plan: dict) -> dict:
    """What summary.json keeps of a sparse plan (topk and gtopk alike)."""
    return {"density": plan["density"], "k": plan["k"]}


def reference(plan: dict, inputs, memory: dict):
    """What every worker must hold: `sparse.reference_topk` over every rank's acc, residuals kept."""
    residuals = reference_memory(memory, len(inputs), plan["elements"])
    accs = [m.accumulate(x) for m, x in zip(residuals, inputs)]
    result, kept = reference_topk(accs, plan["k"])
    for m, acc, idx in zip(residuals, accs, kept):
        m.update(acc, idx)
    return result


ALGORITHM = Algorithm(
    name="topk",
    summary="Top-k sparsification with error feedback, (index, value) pairs all-gathered on a ring "
            "(Shi et al. 2019's baseline)",
    plan=plan, traffic=traffic, execute=execute, validate=validate, phases=phases, rounds=rounds, options=OPTIONS,
    reference=reference, data_dependent=False,
    describe=describe, compute=(SPARSIFY, MERGE),
)
