"""`bml`: BML gradient synchronization on BCube(n, k) (Wang et al., NeurIPS 2018).

BCube(n, k) in BML's notation (topologies/bcube.py): N = n^k servers, k levels, NIC l of
every server on a level-l switch shared with the n-1 servers that differ only in digit l
(digit l of server i is (i // n^l) % n). Rank r is server r. BML only talks to one-hop
neighbours, so every message stays under one switch.

Schedule (docs/DESIGN.md, "BML schedule"), elements E = M / 4:
1. Split the gradient into k contiguous parts, one per sync tree p (`base.split`), and each
   part into N blocks (`base.split` again, so sizes may be uneven by one element).
2. Tree p walks the levels in the order L_0..L_{k-1}, L_t = (p + t) mod k. Server i's block
   index in tree p is its digits read in that order (digit L_0 most significant):
   b(i) = sum_t a_{L_t}(i) * n^(k-1-t). Before aggregation stage s, server i holds the run of
   N/n^s blocks whose index starts with its own digits a_{L_0}..a_{L_{s-1}}.
3. Aggregation stage s = 0..k-1 on level L_s: that run is cut into n sub-runs of N/n^(s+1)
   blocks, sub-run d belonging to the neighbour whose digit L_s is d. Server i sends sub-run
   d to that neighbour and receives its own sub-run from each of the n-1 neighbours, adding
   them in (in digit order). After k stages it owns block b(i) of tree p, fully reduced:
   a reduce-scatter by digit.
4. Broadcast stage s = 0..k-1 on level L_{k-1-s} (the aggregation levels in reverse): every
   server sends its reduced run of n^s blocks to its n-1 neighbours on that level and
   receives theirs into place, so the run grows n-fold per stage, to the whole part.
In every stage each NIC carries exactly one tree: tree p's stage uses level (p + s) mod k
(aggregation) or (p + k-1-s) mod k (broadcast), a permutation of the levels over p.
Bytes one server sends on one NIC (docs/DESIGN.md closed forms, exact when k*N divides E):
(n-1)M/(k n^(s+1)) in aggregation stage s, (n-1) n^s M/(k N) in broadcast stage s,
2(N-1)M/(kN) per NIC in all.

The plan is compact: per tree its part, level order and stages (level, blocks per message);
`messages(plan)` expands the rule into explicit (src, dst, start, end) sends, and is what
`traffic`, the executor (`rank_stage`) and the unit tests' simulator all read.
Stages are numbered 0..2k-1 per tree in events and plans: aggregation stage s is stage s,
broadcast stage s is stage k + s (the field `step` carries the per-phase s).

Executor: one thread per tree, so the k trees run at once, each on the Gloo group of its
stage's switch (`groups(plan)`: one group per BCube switch, bound to that level's NIC). A
tree starts its next stage when its own previous stage completed; tags are unique per
(tree, stage), so two trees that meet on one switch group never match each other's messages.
"""
from __future__ import annotations

import threading
import time
from functools import lru_cache

import torch

from topologies.bcube import digit, digits, neighbour, switch_name
from workloads.algorithms.base import (DTYPE_BYTES, Algorithm, Counts, Flow, GroupSpec, Option, check_options,
                                      merge_flows, split)
from workloads.gradients import as_flat

OPTIONS = ("n", "k")  # BCube shape for localhost runs without a topology
AGGREGATE, BROADCAST = "aggregate", "broadcast"


# --- BCube arithmetic: the topology's own (topologies/bcube.py), one copy ---------------
def switch_id(i: int, level: int, n: int, k: int) -> str:
    """Group id of the level-`level` switch of server i: the switch's name in the topology."""
    return "bml-" + switch_name(level, digits(i, n, k), k)


# --- planner -----------------------------------------------------------------------------
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
    trees = []
    for p, part in enumerate(split(ctx.elements, k)):
        order = [(p + t) % k for t in range(k)]
        stages = [{"stage": s, "phase": AGGREGATE, "step": s, "level": order[s], "run": N // n ** (s + 1)}
                  for s in range(k)]
        stages += [{"stage": k + s, "phase": BROADCAST, "step": s, "level": order[k - 1 - s], "run": n**s}
                   for s in range(k)]
        trees.append({"tree": p, "part": list(part), "order": order, "stages": stages})
    return {
        "algorithm": "bml", "n": n, "k": k, "workers": N, "world": N, "elements": ctx.elements,
        "blocks": N,
        "rule": ("tree p: part p of split(elements, k), cut into split(part, N) blocks; server i owns "
                 "block sum_t digit(i, order[t]) * n^(k-1-t); aggregate stage s on level order[s]: "
                 "send the run of `run` blocks of the neighbour's digit within the own run of n*run "
                 "blocks, receive own sub-run from n-1 neighbours and add; broadcast stage s on level "
                 "order[k-1-s]: send the own reduced run of `run` blocks to the n-1 neighbours"),
        "trees": trees,
    }


@lru_cache(maxsize=64)
def _bounds(start: int, end: int, blocks: int) -> tuple[int, ...]:
    """Element offsets of the block boundaries of one part (blocks + 1 of them)."""
    cuts = split(end - start, blocks)
    return tuple(start + a for a, _ in cuts) + (end,)


def _run(plan: dict, tree: dict, first: int, count: int) -> tuple[int, int]:
    b = _bounds(tree["part"][0], tree["part"][1], plan["blocks"])
    return b[first], b[first + count]


def _offset(i: int, order, upto: int, n: int, N: int) -> int:
    """First block of server i's run after its digits order[0..upto-1] fixed it."""
    off, width = 0, N
    for t in range(upto):
        width //= n
        off += digit(i, order[t], n) * width
    return off


def rank_stage(plan: dict, p: int, g: int, rank: int):
    """What `rank` does in stage g of tree p: (stage dict, sends [(dst, start, end)],
    receives [(src, start, end)]), peers in digit order, element ranges in `flat`."""
    n, k, N = plan["n"], plan["k"], plan["blocks"]
    tree = plan["trees"][p]
    st, order = tree["stages"][g], tree["order"]
    level, run, mine = st["level"], st["run"], digit(rank, st["level"], n)
    peers = [(d, neighbour(rank, level, d, n)) for d in range(n) if d != mine]
    if st["phase"] == AGGREGATE:
        base_off = _offset(rank, order, st["step"], n, N)
        own = _run(plan, tree, base_off + mine * run, run)
        sends = [(j, *_run(plan, tree, base_off + d * run, run)) for d, j in peers]
        recvs = [(j, *own) for _, j in peers]
    else:
        m = k - 1 - st["step"]  # the run was fixed by digits order[0..m]
        sends = [(j, *_run(plan, tree, _offset(rank, order, m + 1, n, N), run)) for _, j in peers]
        recvs = [(j, *_run(plan, tree, _offset(j, order, m + 1, n, N), run)) for _, j in peers]
    return st, sends, recvs


def messages(plan: dict):
    """Every message of one sync: (tree, stage, phase, level, src, dst, start, end), stage by stage."""
    for p, tree in enumerate(plan["trees"]):
        for g, st in enumerate(tree["stages"]):
            for src in range(plan["workers"]):
                for dst, start, end in rank_stage(plan, p, g, src)[1]:
                    yield p, g, st["phase"], st["level"], src, dst, start, end


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
    n, k, N = plan["n"], plan["k"], plan["workers"]
    out = []
    for level in range(k):
        for i in range(N):
            if digit(i, level, n) == 0:
                out.append(GroupSpec(switch_id(i, level, n, k),
                                     tuple(neighbour(i, level, d, n) for d in range(n)), level))
    return out


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
