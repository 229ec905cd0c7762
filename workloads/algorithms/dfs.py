"""`dfs`: sparsification that forms zero blocks, with a block size chosen per iteration for both directions.

Yang, Zhao, Zhao, Xu, "DFS: Joint Data Formatting and Sparsification for Efficient
Communication in Distributed Machine Learning", Computer Networks 2023, DOI
10.1016/j.comnet.2023.109777. Only the abstract is available: every worker sparsifies "to
derive as many blocks with all-zero gradients as possible", streams block by block skipping
zero blocks, (i) chooses the block size dynamically, (ii) accounts for both worker -> PS and
PS -> worker, (iii) sparsifies so as to form more or larger zero blocks. Everything else
below is our reconstruction; docs/dfs.md says which is which and why.

W workers, d elements, k = ceil(density x d) (`topk.k_of`), candidate block sizes B (option
`blocks`, default 16:32:...:1024), owners placed as `ps` does (co-located or dedicated). At
iteration t every rank uses the same block size b_t (b_0 = `first_block(B)`, the
candidate nearest OmniReduce's 256; `first_block`, `union_estimate` and `choose_block` are the
block-size planner, workloads/planners/blocks.py):
1. acc = gradient + residual (`sparse.Residual` in `state.memory`; error feedback).
2. For every candidate b in B: `sparse.block_topk` at b (energies from one pass,
   `sparse.block_energies`), the blocks of largest L2
   norm whose elements fit the budget k (at least one block; never a zero block). The
   result at b_t is what is sent; at the other candidates only how many blocks it keeps in
   each shard of that candidate's layout matters (c_w,s(b)).
3. Push, as OmniReduce (`_blocksparse`): to each owner s its kept blocks of shard s, with
   meta words [b_t, c_w,s(b) for b in B].
4. The owner sums in rank order, takes the union of the pushed blocks and pulls it back to
   every worker with meta words [pushed_s(b) for b in B] + [U_s(b) for b in B]:
   pushed_s(b) = sum of c_w,s(b) over the workers other than the owner (the blocks that
   would cross the network), U_s(b) = `union_estimate` (exact at b_t, the union it
   just formed; between full overlap and no overlap elsewhere, calibrated by how the
   union at b_t compares with independent choices).
5. Every worker now holds the same statistics of every shard and picks
   b_{t+1} = `choose_block`: the candidate of least modelled bytes,
   (4b + 4) x sum_s (pushed_s(b) + receivers_s x U_s(b)), ties to the smaller block. No
   extra message and no extra round: the statistics ride on the sync's own messages
   (4 (1 + |B|) bytes per push, 8 |B| per pull), one iteration late.
6. residual = acc with zeros at the kept blocks' elements (`sparse.blocks_to_indices`).
A dedicated server holds no gradient and makes no choice: it reads b_t from the pushes.

`reference` runs the same sync for every worker in one process (`_blocksparse.simulate`),
keeping every rank's residual and the block-size history in its memory, so the worker's
check is exact. `traffic(plan)`: the dense worst case, per flow the largest over the
candidates (`_blocksparse.phases`); what a sync really sends is in the ranks' logs.
"""
from __future__ import annotations


from workloads import blocks
from workloads.planners.blocks import choose_block, first_block, union_estimate
from workloads.algorithms import _blocksparse as bs
from workloads.algorithms.base import Algorithm, Option, number
from workloads.algorithms.topk import DENSITY, SPARSIFY, reference_memory, residual_of
from workloads.gradients import as_flat
from workloads.sparse import block_energies, block_keep, blocks_to_indices, keep_blocks

DEFAULT_BLOCKS = "16:32:64:128:256:512:1024"  # as a spec writes it (the default is shown, not parsed)


def _candidates(value) -> tuple:
    """`"16:64"`, `[16, 64]` (YAML) or `16` -> (16, 64): sorted, without repeats."""
    if isinstance(value, str):
        items = [v.strip() for v in value.split(":")]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        items = [value]
    if not items or any(v == "" for v in items):
        raise ValueError("give block sizes separated by ':'")
    try:
        sizes = [number(1, integer=True)(v) for v in items]
    except (TypeError, ValueError) as e:
        raise ValueError(f"every block size must be an integer >= 1 ({e})") from None
    return tuple(sorted(set(sizes)))


OPTIONS = {
    "density": DENSITY,
    "blocks": Option(DEFAULT_BLOCKS, _candidates,
                     "candidate block sizes in elements, integers >= 1 separated by ':' (each at most the "
                     "gradient's elements)"),
}


def validate(ctx) -> None:
    bs.validate_common("dfs", ctx)
    cands = _candidates(ctx.options["blocks"])
    for b in cands:
        bs.check_block("dfs", f"block size {b} of blocks={':'.join(map(str, cands))}", b, ctx.elements)


def plan(ctx) -> dict:
    cands = list(_candidates(ctx.options["blocks"]))
    p = bs.plan_common("dfs", ctx, dense_blocks=cands, meta_words=(1 + len(cands), 2 * len(cands)))
    return {**p, "blocks": cands, "first_block": first_block(cands)}


# --- the pieces executor and reference share -------------------------------------------------

def rules(plan: dict) -> bs.Rules:
    """Step 4's pull meta from the pushes' meta (identical on the owner and in the oracle)."""
    cands, d, parts = plan["blocks"], plan["elements"], len(plan["owners"])

    def down_meta(shard, owner, block, metas, union):
        counts = [[m[1 + j] for m in metas] for j in range(len(cands))]
        nblocks = [end - first for first, end in (blocks.shard_blocks(d, b, parts)[shard] for b in cands)]
        pushed = [sum(c for w, c in enumerate(row) if w != owner) for row in counts]
        return pushed + union_estimate(counts, nblocks, cands.index(block), union)

    return bs.Rules(block=None, up_words=1 + len(cands), down_words=2 * len(cands), down_meta=down_meta)


def contribution(plan: dict, acc, block: int) -> bs.Contribution:
    """Steps 2-3 for one worker: the blocks it sends at `block`, its counts at every candidate."""
    cands, d, k, parts = plan["blocks"], plan["elements"], plan["k"], len(plan["owners"])
    counts, mask = [], None
    energies = block_energies(acc, cands)  # one pass over acc for every candidate
    for b in cands:
        kept = block_keep(energies[b], b, d, k)
        counts.append([int(kept[s:e].sum()) for s, e in blocks.shard_blocks(d, b, parts)])
        if b == block:
            mask = kept
    x = keep_blocks(acc, mask, block)
    up_meta = [[block] + [row[s] for row in counts] for s in range(parts)]
    return bs.Contribution(block, x, mask, blocks_to_indices(mask, block, d), up_meta)


def decide(plan: dict, down_meta: dict) -> tuple[int, list]:
    """Step 5: (b_{t+1}, modelled bytes per candidate) from every shard's pull meta."""
    c, n = len(plan["blocks"]), plan["workers"]
    shards = range(len(plan["owners"]))
    receivers = [n - (1 if owner < n else 0) for owner in plan["owners"]]
    return choose_block(plan["blocks"], [down_meta[s][:c] for s in shards],
                        [down_meta[s][c:] for s in shards], receivers)


def _remember(memory: dict, plan: dict, used: int, chosen: int) -> None:
    memory["block"] = chosen
    memory.setdefault("history", []).append(used)


def modelled(plan: dict) -> list:
    """The bytes model of one sync (`_blocksparse.modelled_steps`) at the first block size, whole
    blocks kept within the budget k (step 2): for another size, give `blocks=B` alone."""
    return bs.modelled_steps(plan, whole_blocks=True)


def modelled_blocks(plan: dict) -> list:
    """`modelled` as FlowBlocks (`_blocksparse.modelled_blocks`, whole blocks within the budget)."""
    return bs.modelled_blocks(plan, whole_blocks=True)


# --- executor and oracle ---------------------------------------------------------------------

def execute(plan: dict, comm, grads, state):
    flat = as_flat(grads)
    if comm.rank >= plan["workers"]:  # a dedicated server: sums, counts, makes no choice
        ex = bs.exchange(plan, rules(plan), comm, None, state)
        state.observed.update(ex.observed)
        return flat
    block = state.memory.get("block", plan["first_block"])
    residual = residual_of(state, plan["elements"])
    with state.computing(SPARSIFY.key):
        acc = residual.accumulate(flat)  # 1.
        c = contribution(plan, acc, block)  # 2.
    ex = bs.exchange(plan, rules(plan), comm, c, state)  # 3., 4. (the owner's 4. timed: bs.AGGREGATE)
    with state.computing(bs.CODEC.key):  # the worker's finish, timed with its encode and decodes
        chosen, cost = decide(plan, ex.down_meta)  # 5.
        residual.update(acc, c.kept)  # 6.
    _remember(state.memory, plan, block, chosen)
    state.observed.update(ex.observed, next_block=chosen, modelled_bytes=cost)
    return ex.result


def reference(plan: dict, inputs, memory: dict):
    """What every worker must hold: the same sync over every worker (`_blocksparse.simulate`), with
    every rank's residual, the block size and its history kept in `memory` (last `Record` under
    "record", its choice under "next", for the tests)."""
    residuals = reference_memory(memory, len(inputs), plan["elements"])
    block = memory.get("block", plan["first_block"])
    accs = [r.accumulate(x) for r, x in zip(residuals, inputs)]
    parts = [contribution(plan, acc, block) for acc in accs]
    record = bs.simulate(plan, rules(plan), parts)
    chosen, cost = decide(plan, dict(enumerate(record.down_meta)))
    for r, acc, c in zip(residuals, accs, parts):
        r.update(acc, c.kept)
    _remember(memory, plan, block, chosen)
    memory["record"], memory["next"] = record, (chosen, cost)
    return record.result


ALGORITHM = Algorithm(
    name="dfs",
    summary="DFS (Yang et al. 2023, reconstructed from the abstract): block top-k within a density budget, "
            "block size chosen per iteration for both directions, zero blocks skipped on a sharded PS",
    plan=plan, traffic=bs.traffic, execute=execute, validate=validate, phases=bs.phases, rounds=bs.rounds,
    options=OPTIONS, uses_servers=True, reference=reference, data_dependent=True,
    compute=bs.COMPUTE, summarize=bs.summarize, logged_steps=bs.logged_steps,
    modelled_steps=modelled, blocks=modelled_blocks,
)
