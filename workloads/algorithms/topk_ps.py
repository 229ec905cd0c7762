"""`topk_ps`: element-wise Top-k on a sharded parameter server, the sparsification that ignores formatting.

The baseline the DFS paper (Yang et al., Computer Networks 2023) contrasts with: workers
prune to a density without caring how the survivors lie, and ship (index, value) pairs.
W workers, d elements, k = ceil(density x d) (`topk.k_of`, the same k as `topk`, `gtopk`,
`dfs` and `omnireduce,density=`):
1. acc = gradient + residual (`sparse.Residual` in `state.memory`); its k entries of
   largest |acc| (`sparse.select_topk`, ties to the lower index); the residual is zeroed there.
2. Push: each worker sends every shard owner (placed as `ps` does: co-located or dedicated
   servers) its non-zero pairs of that shard: k' int32 indices, then the k' values' bits,
   i.e. `sparse.SparseSet.pack`, 8 bytes a pair. A zero-valued top-k entry (fewer than k
   non-zero entries) is not sent: it carries nothing, as OmniReduce skips zero blocks.
3. The owner sums the pairs in rank order and sends every worker the union of the indices
   with the summed values (the same pair format).
This is the block-sparse machinery (`_blocksparse`) with one-element blocks: its wire format
at block 1 is exactly `SparseSet.pack`, and the dense worst case `traffic(plan)` is every
entry as a pair (density 1, no zero entry).
"""
from __future__ import annotations

from workloads.algorithms import _blocksparse as bs
from workloads.algorithms.base import Algorithm
from workloads.algorithms.topk import DENSITY

OPTIONS = {"density": DENSITY}


def validate(ctx) -> None:
    bs.validate_common("topk_ps", ctx)


def plan(ctx) -> dict:
    return {**bs.plan_common("topk_ps", ctx, dense_blocks=[1]), "block": 1, "pair_bytes": 8}


ALGORITHM = Algorithm(
    name="topk_ps",
    summary="element-wise Top-k with error feedback on a sharded PS: (index, value) pairs to the owners, "
            "the union summed back (DFS's unformatted baseline)",
    plan=plan, traffic=bs.traffic, execute=bs.execute_fixed, validate=validate, phases=bs.phases,
    rounds=bs.rounds, options=OPTIONS, uses_servers=True, reference=bs.reference_fixed, data_dependent=True,
    compute=bs.COMPUTE, summarize=bs.summarize, logged_steps=bs.logged_steps,
    modelled_steps=bs.modelled_steps, blocks=bs.modelled_blocks,
)
