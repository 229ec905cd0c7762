"""`omnireduce`: zero blocks skipped on a sharded parameter server, fixed block size (the DFS baseline).

Fei, Ho, Sahu, Canini, Sapio, "Efficient Sparse Collective Communication and its application
to Accelerate Distributed Deep Learning", SIGCOMM 2021; read from its public code,
sands-lab/omnireduce (omnireduce-RDMA `worker.cpp`, `aggregator.cpp`). W workers, d
elements, blocks of `block` elements (default 256, as its `block_size`):
1. A block is zero when every |x| <= 0 (its threshold, default 0): `sparse.block_nonzero`.
   With option `density`, element-wise top-k first (`sparse.select_topk` of gradient +
   residual, error feedback in `state.memory`), then the zero blocks of that skipped, so it
   can be compared with `dfs` and `topk_ps` at one density (the DFS paper's comparison).
2. Each worker streams its non-zero blocks to the aggregators, each block with the offset of
   the next non-zero one (ours: each block's own offset, the same 4 bytes per block;
   `workloads/blocks.py`, wire format). Aggregators are sharded as `ps` places them:
   co-located on the workers or on dedicated servers (`servers`); a shard is a run of whole
   blocks.
3. The aggregator sums what arrives and, for each position, moves on to the minimum next
   offset over the workers: it aggregates and returns exactly the union of the workers'
   non-zero blocks, to every worker. Ours sums in rank order and returns the union in one
   message per worker (`_blocksparse`, steps 1-3).
Where ours differs from the RDMA/DPDK code: one Gloo message per (worker, owner) and
direction instead of a window of packets per slot; a slot's first block, which theirs always
sends, is sent only when non-zero; the bytes per block (values + one 4-byte word) are the same.

Bytes depend on the data (`data_dependent`): each rank logs what it handed to `Comm`; the
analysis checks the capture against that. `traffic(plan)` is the dense worst case (every
block non-zero; `_blocksparse.phases`), which is also exactly what a sync of gradients with
no zero entry sends.
"""
from __future__ import annotations

from workloads.algorithms import _blocksparse as bs
from workloads.algorithms.base import Algorithm

OPTIONS = {"block": bs.BLOCK, "density": bs.OPTIONAL_DENSITY}


def validate(ctx) -> None:
    bs.validate_common("omnireduce", ctx)
    block = ctx.options["block"]
    bs.check_block("omnireduce", f"block={block}", block, ctx.elements)


def plan(ctx) -> dict:
    block = ctx.options["block"]
    return {**bs.plan_common("omnireduce", ctx, dense_blocks=[block]), "block": block}


ALGORITHM = Algorithm(
    name="omnireduce",
    summary="OmniReduce (Fei et al. 2021): non-zero blocks to sharded aggregators, their union back; "
            "optional element top-k first (density) with error feedback",
    plan=plan, traffic=bs.traffic, execute=bs.execute_fixed, validate=validate, phases=bs.phases,
    rounds=bs.rounds, options=OPTIONS, uses_servers=True, reference=bs.reference_fixed, data_dependent=True,
    compute=bs.COMPUTE, summarize=bs.summarize, logged_steps=bs.logged_steps,
    modelled_steps=bs.modelled_steps, blocks=bs.modelled_blocks,
)
