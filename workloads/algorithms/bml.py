"""`bml`: BML gradient synchronization on BCube(n, k) (Wang et al., NeurIPS 2018).

BCube(n, k): N = n^k servers, k levels, NIC l of every server on a level-l switch (rank r is
server r). k sync trees each reduce-scatter then all-gather one k-th of the gradient in k
aggregation and k broadcast stages, every message between one-hop neighbours under one switch,
every NIC carrying one tree per stage. The schedule itself, its steps numbered, its closed
forms and the plan's compact form, is the planner's: workloads/planners/bml.py (`trees`,
`rank_stage`, `messages`, `switches`). This module is the contract's glue around it: the
BCube shape from the topology or options (`shape`, `validate`), `plan` (the planner's trees in
a JSON plan), `phases`/`traffic` (its messages as flows, stage by stage), `groups` (one Gloo
group per BCube switch) and the executor.

Executor: one thread per tree, so the k trees run at once, each on the Gloo group of its
stage's switch (`groups(plan)`: one group per BCube switch, bound to that level's NIC). A
tree starts its next stage when its own previous stage completed; tags are unique per
(tree, stage), so two trees that meet on one switch group never match each other's messages.
"""
from __future__ import annotations

import threading
import time

import torch

from topologies.bcube import digit
from workloads.algorithms.base import (DTYPE_BYTES, Algorithm, Counts, Flow, GroupSpec, Option, check_options,
                                      merge_flows)
from workloads.gradients import as_flat
from workloads.planners.bml import AGGREGATE, RULE, messages, rank_stage, switch_id, switches, trees

OPTIONS = ("n", "k")  # BCube shape for localhost runs without a topology


# --- options and plan --------------------------------------------------------------------
def _as_int(value, what: str) -> int:
    try:
        if isinstance(value, bool) or int(value) != value:
            raise ValueError
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"bml: {what} must be an integer, got {value!r}") from None


def _from_spec(value):
    return int(value) if isinstance(value, str) and value.strip().isdigit() else value


def shape(ctx) -> tuple[int, int]:
    """(n, k) of the BCube the plan is for: from ctx.topology, else from options n and k."""
    check_options("bml", ctx.options, OPTIONS)
    topo = ctx.topology
    if topo is not None:
        if getattr(topo, "kind", None) != "bcube":
            raise ValueError(f"bml runs on bcube only, not {getattr(topo, 'name', topo)!r}; "
                             "use topology bcube,n=N,k=K")
        n, k = (_as_int(topo.params.get(key), f"topology parameter {key}") for key in ("n", "k"))
        for key, val in (("n", n), ("k", k)):
            if key in ctx.options and _as_int(ctx.options[key], f"option {key}") != val:
                raise ValueError(f"bml: option {key}={ctx.options[key]} contradicts the topology {topo.name}; "
                                 "drop the option")
    elif "n" in ctx.options and "k" in ctx.options:
        n, k = _as_int(ctx.options["n"], "option n"), _as_int(ctx.options["k"], "option k")
    else:
        raise ValueError("bml runs on bcube only: give a bcube topology, or options n and k "
                         "for a localhost run")
    if n < 2 or k < 1:
        raise ValueError(f"bml: BCube({n},{k}) is not a BCube: need n >= 2 ports per switch and k >= 1 levels")
    return n, k


def validate(ctx) -> None:
    n, k = shape(ctx)  # dedicated servers and counts below 2: refused by the declaration (ALGORITHM)
    if ctx.workers != n**k:
        raise ValueError(f"bml: BCube({n},{k}) has {n**k} servers but workers={ctx.workers}; "
                         f"BML runs one worker per server (rank r = server r), so set workers={n**k}")
    if ctx.topology is not None and ctx.hosts:
        from topologies.bcube import server_name  # noqa: PLC0415

        wrong = [r for r, h in enumerate(ctx.hosts) if h != server_name(r, n, k)]
        if wrong or len(ctx.hosts) != n**k:
            r = wrong[0] if wrong else len(ctx.hosts)
            raise ValueError(f"bml: rank r must run on server r ({server_name(0, n, k)}, "
                             f"{server_name(1, n, k)}, ...), but hosts has {len(ctx.hosts)} entries and rank {r} "
                             f"is on {ctx.hosts[r] if r < len(ctx.hosts) else 'nothing'}")


def plan(ctx) -> dict:
    validate(ctx)
    n, k = shape(ctx)
    N = n**k
    return {"algorithm": "bml", "n": n, "k": k, "workers": N, "world": N, "elements": ctx.elements,
            "blocks": N, "rule": RULE, "trees": trees(n, k, ctx.elements)}


# --- traffic and groups, from the planner's messages and switches ----------------------------
def phases(plan: dict) -> list[list[Flow]]:
    """Stage g of every tree at once (the trees run in parallel on different NICs), g = 0..2k-1."""
    stages: dict[int, list] = {}
    for _, g, _, level, src, dst, start, end in messages(plan):
        stages.setdefault(g, []).append(Flow(src, dst, level, DTYPE_BYTES * (end - start)))
    return [merge_flows(stages[g]) for g in sorted(stages)]


def traffic(plan: dict) -> list[Flow]:
    """Payload bytes per (src, dst, NIC = level) of one sync; empty blocks send nothing."""
    return merge_flows(f for stage in phases(plan) for f in stage)


def groups(plan: dict) -> list[GroupSpec]:
    """One group per BCube switch: its n servers in digit order (group rank = digit), on NIC l."""
    return [GroupSpec(gid, ranks, level) for gid, ranks, level in switches(plan["n"], plan["k"])]


# --- executor ----------------------------------------------------------------------------
def _send(comm, pg, dst: int, digit_of_dst: int, tensor, nic: int, tag: int):
    # Comm.send only speaks the per-NIC groups over all ranks; the switch group is ours, so
    # account the send in Comm's counters (thread-safe: k trees send at once).
    if hasattr(comm, "count"):
        comm.count(dst, nic, tensor.numel() * tensor.element_size())
    return pg.send([tensor], digit_of_dst, tag)


def _switch_groups(plan: dict, comm) -> dict:
    """level -> (process group, ranks) of this rank's switch on that level."""
    out = {}
    for level in range(plan["k"]):
        gid = switch_id(comm.rank, level, plan["n"], plan["k"])
        try:
            out[level] = comm.group(gid)
        except ValueError as exc:
            raise ValueError(f"bml needs its per-switch groups: {exc}; build Comm with "
                             "groups=bml.groups(plan) (job.json \"groups\")") from None
    return out


def _tree(plan: dict, comm, flat: torch.Tensor, p: int, switch: dict) -> None:
    n, k, me = plan["n"], plan["k"], comm.rank
    tree = plan["trees"][p]
    for g in range(len(tree["stages"])):
        st, sends, recvs = rank_stage(plan, p, g, me)
        level = st["level"]
        pg, ranks = switch[level]
        tag = p * 2 * k + g  # unique per (tree, stage): trees may meet on one switch group
        t0, works, temps = time.time(), [], []
        for src, start, end in recvs:
            if end > start:  # empty blocks (E < k*N) are skipped by both ends, which know the sizes
                buf = torch.empty(end - start, dtype=flat.dtype) if st["phase"] == AGGREGATE else flat[start:end]
                temps.append((digit(src, level, n), buf))
                works.append(pg.recv([buf], ranks.index(src), tag))
        sent = 0
        for dst, start, end in sends:
            if end > start:
                works.append(_send(comm, pg, dst, ranks.index(dst), flat[start:end], level, tag))
                sent += DTYPE_BYTES * (end - start)
        for work in works:
            work.wait()
        if st["phase"] == AGGREGATE and temps:
            # Sum in digit order, own copy at its digit, like the ps owner sums in rank order.
            start, end = recvs[0][1], recvs[0][2]
            parts = dict(temps)
            parts[digit(me, level, n)] = flat[start:end]
            total = parts[0].clone()
            for d in range(1, n):
                total += parts[d]
            flat[start:end] = total
        t1 = time.time()
        comm.record(event="stage", tree=p, stage=g, step=st["step"], nic=level, phase=st["phase"],
                    t0=t0, t1=t1, bytes=sent)


def execute(plan: dict, comm, grads, state=None):
    flat = as_flat(grads)
    switch = _switch_groups(plan, comm)
    errors: list[BaseException] = []

    def run(p):
        try:
            _tree(plan, comm, flat, p, switch)
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(p,), name=f"bml-tree{p}", daemon=True)
               for p in range(plan["k"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"bml tree failed on rank {comm.rank}: {type(errors[0]).__name__}: {errors[0]}") \
            from errors[0]
    return flat


ALGORITHM = Algorithm(
    name="bml",
    summary="BML on BCube(n,k): k sync trees, k aggregation + k broadcast stages, one NIC per tree per stage",
    plan=plan, traffic=traffic, execute=execute, validate=validate, groups=groups,
    topologies=("bcube",), phases=phases,
    # one worker per server: N = n^k (validate checks it against the BCube); any N >= 2 is BCube(N,1)
    workers=Counts(lambda p: p >= 2, "n^k of its BCube(n,k), one per server (any count >= 2)"),
    # n and k are for localhost runs without a topology; shape() checks them against it
    options={"n": Option(None, _from_spec, "an integer >= 2 (ports per switch)"),
             "k": Option(None, _from_spec, "an integer >= 1 (levels)")},
)
