"""DFS's block-size planner: the union estimate, the modelled bytes per candidate block size, and
the choice (docs/dfs.md says what is the paper's and what is ours).

Pure integers and floats, no tensors, no processes. `workloads/algorithms/dfs.py` calls it from
its plan (`first_block`) and, every iteration, from its executor and its oracle (the statistics
ride on the sync's own messages, one iteration late); the block layout and the wire format it
prices are the codec's (workloads/blocks.py, HEADER_BYTES).

For each candidate b, the bytes of one sync are (4b + HEADER_BYTES) x sum over shards of
(blocks pushed over the network + receivers x blocks of the union), every block counted as b
elements; per-message constants (length headers, meta words, Gloo framing) do not depend on b
and are left out.
"""
from __future__ import annotations

from common.units import DTYPE_BYTES
from workloads.blocks import HEADER_BYTES

NEAR_BLOCK = 256  # OmniReduce's default block size; DFS's first iteration uses the candidate nearest it


def union_estimate(counts, nblocks, current: int, exact_union: int) -> list[int]:
    """Estimated union of the workers' non-zero blocks of one shard, per candidate block size.

    counts[j][w]: blocks worker w keeps in the shard at candidate j; nblocks[j]: the shard's
    blocks at candidate j; at candidate `current` (the block size used) the union is known
    exactly, `exact_union`. For every other candidate the union lies between
    L = max_w counts (full overlap) and min(sum_w counts, nblocks) (no overlap); the estimate
    is L + theta (I - L), clipped to those bounds, where I = N (1 - prod_w (1 - c_w / N)) is
    the union of independent uniform choices and theta is measured at `current`:
    theta = (U - L) / (I - L) there (1 when I == L). It is exact at `current`. Float64 in a
    fixed order, so every rank that evaluates it gets the same integers.
    """
    def bounds(c, n):
        low, high = max(c, default=0), min(sum(c), n)
        if n == 0:
            return 0, 0, 0.0
        miss = 1.0
        for x in c:
            miss *= 1.0 - x / n
        return low, high, n * (1.0 - miss)

    low, _, indep = bounds(counts[current], nblocks[current])
    theta = (exact_union - low) / (indep - low) if indep - low > 1e-9 else 1.0
    theta = max(theta, 0.0)
    out = []
    for j, (c, n) in enumerate(zip(counts, nblocks)):
        if j == current:
            out.append(int(exact_union))
            continue
        low, high, indep = bounds(c, n)
        out.append(int(min(high, max(low, round(low + theta * (indep - low))))))
    return out


def modelled_bytes(candidates, pushed, union, receivers) -> list[int]:
    """Modelled bytes of one sync per candidate block size b (both directions):
    (4b + HEADER_BYTES) x sum over shards s of (pushed[s][j] + receivers[s] x union[s][j]).

    pushed[s][j]: blocks the workers other than shard s's owner push to it at candidate j;
    union[s][j]: (estimated) blocks of the union the owner sends back, to receivers[s] workers."""
    return [(DTYPE_BYTES * b + HEADER_BYTES) * sum(p[j] + r * u[j] for p, u, r in zip(pushed, union, receivers))
            for j, b in enumerate(candidates)]


def choose_block(candidates, pushed, union, receivers) -> tuple[int, list[int]]:
    """(the candidate of least `modelled_bytes`, ties to the smaller block; the modelled bytes)."""
    cost = modelled_bytes(candidates, pushed, union, receivers)
    best = min(range(len(candidates)), key=lambda j: (cost[j], candidates[j]))
    return candidates[best], cost


def first_block(candidates) -> int:
    """DFS's block size before any statistics exist: the candidate nearest OmniReduce's 256
    elements (ties to the smaller)."""
    return min(candidates, key=lambda b: (abs(b - NEAR_BLOCK), b))
