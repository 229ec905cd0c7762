"""BML's schedule on BCube(n, k) (Wang et al., NeurIPS 2018), as pure functions: the sync trees
of a plan, what every server sends and receives in every stage, and the per-switch groups.

No processes, no tensors: integers in, element ranges out. `workloads/algorithms/bml.py` is
the contract glue (options, `plan` calling `trees`, `traffic`/`phases` from `messages`,
`groups` from `switches`) and the executor, which carries out `rank_stage` stage by stage.

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

The plan is compact: per tree its part, level order and stages (level, blocks per message,
`trees`); `messages(plan)` expands the rule into explicit (src, dst, start, end) sends, and is
what the algorithm's `traffic`, its executor (through `rank_stage`) and the unit tests'
simulator all read. Stages are numbered 0..2k-1 per tree in events and plans: aggregation
stage s is stage s, broadcast stage s is stage k + s (the field `step` carries the per-phase s).
"""
from __future__ import annotations

from functools import lru_cache

from topologies.bcube import digit, digits, neighbour, switch_name
from workloads.algorithms.base import split

AGGREGATE, BROADCAST = "aggregate", "broadcast"
RULE = ("tree p: part p of split(elements, k), cut into split(part, N) blocks; server i owns "
        "block sum_t digit(i, order[t]) * n^(k-1-t); aggregate stage s on level order[s]: "
        "send the run of `run` blocks of the neighbour's digit within the own run of n*run "
        "blocks, receive own sub-run from n-1 neighbours and add; broadcast stage s on level "
        "order[k-1-s]: send the own reduced run of `run` blocks to the n-1 neighbours")


# --- BCube arithmetic: the topology's own (topologies/bcube.py), one copy ---------------
def switch_id(i: int, level: int, n: int, k: int) -> str:
    """Group id of the level-`level` switch of server i: the switch's name in the topology."""
    return "bml-" + switch_name(level, digits(i, n, k), k)


def switches(n: int, k: int) -> list[tuple[str, tuple, int]]:
    """Every BCube switch as (group id, its n servers in digit order (group rank = digit), level)."""
    out = []
    for level in range(k):
        for i in range(n**k):
            if digit(i, level, n) == 0:
                out.append((switch_id(i, level, n, k), tuple(neighbour(i, level, d, n) for d in range(n)), level))
    return out


# --- the sync trees (steps 1-4) ------------------------------------------------------------
def trees(n: int, k: int, elements: int) -> list[dict]:
    """The plan's trees: per tree p its part of the gradient, its level order and its 2k stages
    (stage, phase, step, level, run: blocks per message)."""
    N = n**k
    out = []
    for p, part in enumerate(split(elements, k)):
        order = [(p + t) % k for t in range(k)]
        stages = [{"stage": s, "phase": AGGREGATE, "step": s, "level": order[s], "run": N // n ** (s + 1)}
                  for s in range(k)]
        stages += [{"stage": k + s, "phase": BROADCAST, "step": s, "level": order[k - 1 - s], "run": n**s}
                   for s in range(k)]
        out.append({"tree": p, "part": list(part), "order": order, "stages": stages})
    return out


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
