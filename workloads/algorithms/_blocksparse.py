"""The block-sparse parameter server that `omnireduce`, `dfs` and `topk_ps` share: executor and oracle.

Each of the three modules decides what a worker sends in one sync (a `Contribution`: the
sparsified gradient, its mask of non-zero blocks, the entries counted) and what its
messages piggyback (`Rules`); this module moves it. The pure half is the codec (shard layout,
wire format: `workloads/blocks.py`) and, for DFS, the block-size planner
(`workloads/planners/blocks.py`).

One sync at block size b, W workers, owners as `ps` places them (co-located: worker i owns
shard i; dedicated: ranks W..W+S-1), shards of whole blocks (`blocks.shard_blocks`):
1. Push: every worker sends every owner but itself one message (`Comm.send_var`, tag
   PUSH_TAG) with its non-zero blocks of that owner's shard: `blocks.encode`, meta words
   first. A message goes even when it carries no block, so no owner waits on a guess and a
   dedicated server learns b from the meta (DFS).
2. Aggregate: the owner decodes the W contributions (its own as a co-located worker goes
   through the same encode/decode) and sums them in rank order into a zeroed shard:
   shard[i] = ((0 + x_0[i]) + x_1[i]) + ... over the workers that sent a block covering i.
   The union of the blocks any worker sent is what OmniReduce's aggregator streams back
   (the minimum next offset over workers, sands-lab/omnireduce `aggregator.cpp`).
3. Pull: the owner sends every worker but itself one message (tag PULL_TAG) with the union's
   blocks of the summed shard; every worker writes them into a zeroed result.
A step is one `Comm.exchange_vars` on every rank: its receives posted first (headers, then
payloads as their headers arrive), then its sends, which are waited for at the end; nothing
waits on a peer before its own headers are sent, so no ordering of ranks can deadlock Gloo.
A payload's receive waits for its header, and a rank sends no payload before every header it
expects arrived: two rounds of start-up per step (`rounds`; the projection charged one until
2026-12-05, docs/PROJECTION.md).
Both orders matter because a Gloo send waits until its receive is posted: receiving one sender
after another (before 2026-11-28, `recv_var` in rank order) let an owner's pushes, and a
worker's pulls, through one at a time, every owner starting with the same sender; posting the
sends before the receives (until 2026-11-29) held the word that a receive was posted behind
the rank's own payload to that peer, as in PS (docs/PROJECTION.md, "Fan-in").

`simulate` does the same sync in one process over every worker's contribution and returns
what every rank must hold, send (the very same int32 words, so the bytes) and observe: the
`reference` of each algorithm runs it, so the worker's per-iteration check is exact and the
parallel tests compare every rank's logged `sent` and `observed` with it.

Observed per rank (`state.observed`): `block` (the iteration's block size); as a worker
`blocks_up_sent` (blocks pushed over the network), `blocks_down_recv`, `zero_block_fraction`
(of its own blocks, over the whole gradient), `kept` (entries counted; the residual is zeroed
there); as an owner `blocks_up_recv`, `union_blocks` (of its shard) and `blocks_down_sent`
(union blocks x receivers).
"""
from __future__ import annotations

import statistics
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Callable

import torch

from workloads import blocks
from workloads.algorithms.base import Compute, Flow, FlowBlock, Option, merge_flows, number
from workloads.algorithms.topk import (DENSITY, DENSITY_VALID, SPARSIFY, check_elements, k_of,
                                       reference_memory, residual_of)
from workloads.gradients import as_flat
from workloads.sparse import Residual, block_nonzero, blocks_to_indices, select_topk

PUSH_TAG, PULL_TAG = 0, 1
STEPS = ("push", "pull")  # one `Comm.exchange_vars` each, in this order


# --- options and plans -----------------------------------------------------------------------

OPTIONAL_DENSITY = Option(None, DENSITY.convert,
                          DENSITY_VALID + "; not given: no sparsification, every non-zero block is sent "
                                          "(OmniReduce as published)")
BLOCK = Option(256, number(1, integer=True),
               "an integer >= 1 (elements per block), at most the gradient's elements")


def check_block(algo: str, what: str, block: int, elements: int) -> None:
    """A block larger than the gradient is refused (one line)."""
    if block > elements:
        raise ValueError(f"{algo}: {what} is larger than the gradient ({elements} elements); valid: block sizes "
                         f"1..{elements}")


def validate_common(algo: str, ctx) -> None:
    check_elements(algo, ctx.elements)
    if ctx.options.get("density") is not None:
        k_of(ctx.options["density"], ctx.elements, algo)


def owners_of(workers: int, servers: int) -> list[int]:
    """Shard owners as `ps` places them: every worker (servers = 0) or the S dedicated ranks."""
    return list(range(workers)) if servers == 0 else list(range(workers, workers + servers))


def plan_common(name: str, ctx, *, dense_blocks, meta_words=(0, 0)) -> dict:
    """The fields every block-sparse plan has. `dense_blocks`: the block sizes `traffic`
    takes its dense worst case over; `meta_words`: (push, pull) meta words per message."""
    density = ctx.options.get("density")
    return {"algorithm": name, "workers": ctx.workers, "servers": ctx.servers, "world": ctx.world,
            "elements": ctx.elements, "nic": 0, "owners": owners_of(ctx.workers, ctx.servers),
            "density": density, "k": None if density is None else k_of(density, ctx.elements, name),
            "header_bytes": blocks.HEADER_BYTES, "meta_words": list(meta_words),
            "dense_blocks": [int(b) for b in dense_blocks]}


# --- traffic: the dense worst case -------------------------------------------------------------

def phases(plan: dict) -> list[list[Flow]]:
    """Push, then pull, in the dense worst case: every block of every shard non-zero at every
    worker (density 1, no zero entries). Per flow the largest message over `dense_blocks` (DFS's
    candidates: a shard's extent depends on the block size), so each flow bounds every iteration's.
    Bytes per message: send_var's 8-byte length header + 4 x (meta + blocks + elements); 2 messages."""
    n, d, nic, owners = plan["workers"], plan["elements"], plan["nic"], plan["owners"]
    up_meta, down_meta = plan["meta_words"]
    steps = []
    for step, meta in zip(STEPS, (up_meta, down_meta)):
        biggest: dict = {}
        for b in plan["dense_blocks"]:
            for owner, (start, end) in zip(owners, blocks.shard_ranges(d, b, len(owners))):
                size = blocks.message_bytes(blocks.dense_words(meta, start, end, b))
                for w in range(n):
                    if w != owner:
                        key = (w, owner) if step == "push" else (owner, w)
                        biggest[key] = max(biggest.get(key, (0, 0)), size)
        steps.append(merge_flows(Flow(src, dst, nic, nbytes, messages)
                                 for (src, dst), (nbytes, messages) in biggest.items()))
    return steps


def rounds(plan: dict) -> list[int]:
    """Two message rounds per step, push and pull (`Algorithm.rounds`, the projection's latency
    term): in `Comm.exchange_vars` a payload's receive is posted only once its length header
    arrived, a Gloo send moves nothing until its receive is posted, and a rank sends its
    payloads only after every header it expects arrived, so each step waits through the
    headers' delivery, then the payloads'. None for a single rank, which sends nothing. (A step
    whose every message is empty has no payload round; the projection charges it two all the
    same.)"""
    return [2 if plan["world"] > 1 else 0] * len(STEPS)


def traffic(plan: dict) -> list[Flow]:
    """The dense worst case of one sync (`phases`), both steps together. The logged bytes of a
    real iteration are never more (they are what the analysis checks the capture against)."""
    return merge_flows(f for step in phases(plan) for f in step)


# --- the simulated form: logged or modelled bytes in the shape of `phases` ---------------------

def logged_steps(plan: dict, ranks: dict) -> list[list[Flow]]:
    """One measured iteration as [push flows, pull flows] (`Algorithm.logged_steps`), from every
    rank's `sent` ({rank: {"sent": [[dst, nic, bytes, messages]], "phases": {"push": b, "pull": b}}}).
    Exact: an owner sends every worker but itself the same pull message (step 3), so its logged
    pull bytes split evenly over the plan's pull flows from it (a `send_var` of w words is
    8 + 4w bytes in 1 + (w > 0) messages); what else it sent a rank is its push."""
    pulls: dict = {}
    for f in phases(plan)[1]:
        pulls.setdefault(f.src, []).append((f.dst, f.nic))
    push, pull = [], []
    for rank, logged in sorted(ranks.items()):
        sent = {(int(d), int(n)): [int(b), int(m)] for d, n, b, m in logged.get("sent") or []}
        total = int((logged.get("phases") or {}).get("pull", 0))
        dsts = pulls.get(rank, [])
        each = total // len(dsts) if dsts else 0
        if total and (not dsts or each * len(dsts) != total):
            raise ValueError(f"{plan['algorithm']}: rank {rank} logged {total} pull bytes, not one message "
                             f"for each of its {len(dsts)} receivers")
        for dst, nic in dsts if total else []:
            b, m = sent.get((dst, nic), [0, 0])
            msgs = 1 + (each > blocks.VAR_HEADER_BYTES)
            if b < each or m < msgs:
                raise ValueError(f"{plan['algorithm']}: rank {rank} logged {b} bytes to rank {dst}, less than "
                                 f"its pull of {each}")
            pull.append(Flow(rank, dst, nic, each, msgs))
            sent[(dst, nic)] = [b - each, m - msgs]
        push += [Flow(rank, dst, nic, b, m) for (dst, nic), (b, m) in sent.items()]
    return [merge_flows(push), merge_flows(pull)]


def modelled_steps(plan: dict, whole_blocks: bool = False) -> list[list[Flow]]:
    """One sync as [push flows, pull flows] from a model of its bytes (ours, not the papers'), for
    a projection with nothing measured (`Algorithm.modelled_steps`). Every worker keeps the same
    share q of the b-element blocks (b: the plan's `block`, DFS's `first_block`), placed
    uniformly and independently of the other workers:
    - no density (OmniReduce as published): q = 1, the dense case (`phases`);
    - `whole_blocks` (DFS: whole blocks within the budget k): q = max(1, k // b) / blocks;
    - otherwise (top-k elements, then zero blocks skipped; `topk_ps` is b = 1):
      q = 1 - (1 - k/d)^b, the chance a block holds one of k uniformly placed elements.
    A worker pushes each owner q x its shard's blocks; the owner's union of W workers' is
    shard blocks x (1 - (1 - q)^W), pulled by every worker but the owner (whole blocks, rounded
    on the running total over shards, so the gradient's total is rounded once). Gradients
    are not uniform (ResNet-18's top-k gather in few layers: the measured union is smaller),
    so this is a model to compare sizes with, and the measured form replays the logs."""
    n, nic = plan["workers"], plan["nic"]
    push, pull = [], []
    for owner, up, down in _modelled_messages(plan, whole_blocks):
        for w in range(n):
            if w != owner:
                push.append(Flow(w, owner, nic, *up))
                pull.append(Flow(owner, w, nic, *down))
    return [merge_flows(push), merge_flows(pull)]


def modelled_blocks(plan: dict, whole_blocks: bool = False) -> list[list[FlowBlock]]:
    """`modelled_steps` as FlowBlocks (`Algorithm.blocks` of a data-dependent algorithm): per
    step, one block per message size, every worker to the owners of that size and back, so a
    projection with nothing measured reduces it by symmetry as it does PS (issue #23). Expanding
    them gives `modelled_steps` flow for flow (tested)."""
    workers, nic = tuple(range(plan["workers"])), plan["nic"]
    ups: dict = {}
    downs: dict = {}
    for owner, up, down in _modelled_messages(plan, whole_blocks):
        ups.setdefault(up, []).append(owner)
        downs.setdefault(down, []).append(owner)
    return [[FlowBlock(workers, tuple(o), nic, *m) for m, o in sorted(ups.items())],
            [FlowBlock(tuple(o), workers, nic, *m) for m, o in sorted(downs.items())]]


def _modelled_messages(plan: dict, whole_blocks: bool) -> list[tuple]:
    """(owner, (push bytes, messages), (pull bytes, messages)) per owner: `modelled_steps`'s model."""
    d = plan["elements"]
    b = int(plan.get("block") or plan["first_block"])
    nb = blocks.block_count(d, b)
    k = plan.get("k")
    if k is None:
        q = 1.0
    elif whole_blocks:
        q = min(1.0, max(1, k // b) / nb)
    else:
        q = 1.0 - (1.0 - k / d) ** b
    up_meta, down_meta = plan["meta_words"]
    u = 1.0 - (1.0 - q) ** plan["workers"]
    owners = plan["owners"]
    out = []
    for owner, (first, end), (start, stop) in zip(owners, blocks.shard_blocks(d, b, len(owners)),
                                                 blocks.shard_ranges(d, b, len(owners))):
        kept = round(q * end) - round(q * first)
        union = round(u * end) - round(u * first)
        out.append((owner, tuple(blocks.message_bytes(up_meta + kept + min(kept * b, stop - start))),
                    tuple(blocks.message_bytes(down_meta + union + min(union * b, stop - start)))))
    return out


# --- one worker's part and the messages' meta --------------------------------------------------

@dataclass
class Contribution:
    """What one worker puts into one sync."""

    block: int
    x: torch.Tensor  # the sparsified gradient it sends (zeros elsewhere), flat float32
    mask: torch.Tensor  # bool per block of `block`: the blocks it sends (only non-zero ones)
    kept: torch.Tensor  # int64 element indices counted in the result (its residual is zeroed there)
    up_meta: list = field(default_factory=list)  # per shard: the meta words of its push to that owner


@dataclass(frozen=True)
class Rules:
    """What an algorithm piggybacks: meta word counts, the block size a push says it uses, and
    the pull's meta from the pushes (`down_meta(shard, owner, block, up metas in rank order,
    union blocks) -> words`). The default: no meta, one fixed block size."""

    block: int | None = None  # fixed block size; None: the push's meta[0] says (DFS)
    up_words: int = 0
    down_words: int = 0
    down_meta: Callable = lambda shard, owner, block, metas, union: []

    def block_of(self, meta: list) -> int:
        return self.block if self.block is not None else int(meta[0])


def fixed(plan: dict) -> Rules:
    return Rules(block=plan["block"])


def push_words(plan: dict, c: Contribution) -> list[torch.Tensor]:
    """The words of this worker's push to each owner, in shard order."""
    d, parts = plan["elements"], len(plan["owners"])
    out = []
    for s, ((bs, be), (start, end)) in enumerate(zip(blocks.shard_blocks(d, c.block, parts),
                                                     blocks.shard_ranges(d, c.block, parts))):
        meta = c.up_meta[s] if c.up_meta else []
        out.append(blocks.encode(meta, c.x[start:end], c.mask[bs:be], c.block, start))
    return out


@dataclass
class Aggregate:
    """One owner's shard after step 2."""

    start: int
    end: int
    total: torch.Tensor  # the summed shard (zeros outside the union)
    union: torch.Tensor  # bool per block of the shard
    up_blocks: list  # blocks each worker pushed, rank order
    down_meta: list
    words: torch.Tensor  # the pull message


def aggregate(plan: dict, rules: Rules, shard: int, block: int, pushes: list) -> Aggregate:
    """Step 2 for shard `shard` from every worker's push words (rank order), then the pull's words."""
    d, parts = plan["elements"], len(plan["owners"])
    (bs, be), (start, end) = blocks.shard_blocks(d, block, parts)[shard], blocks.shard_ranges(d, block, parts)[shard]
    total = torch.zeros(end - start, dtype=torch.float32)
    union = torch.zeros(be - bs, dtype=torch.bool)
    metas, up_blocks = [], []
    for w, words in enumerate(pushes):
        msg = blocks.decode(words, rules.up_words, block, start, end)
        if rules.block_of(msg.meta) != block:  # cannot happen: every worker computes the same size
            raise RuntimeError(f"{plan['algorithm']}: worker {w} pushed blocks of {rules.block_of(msg.meta)} "
                               f"elements, the others {block}")
        pos = msg.indices - start
        total[pos] = total[pos] + msg.values
        union[(msg.offsets - start) // block] = True
        metas.append(msg.meta)
        up_blocks.append(msg.blocks)
    down_meta = [int(v) for v in rules.down_meta(shard, plan["owners"][shard], block, metas, int(union.sum()))]
    if len(down_meta) != rules.down_words:
        raise RuntimeError(f"{plan['algorithm']}: pull meta has {len(down_meta)} words, not {rules.down_words}")
    return Aggregate(start, end, total, union, up_blocks, down_meta,
                     blocks.encode(down_meta, total, union, block, start))


def _worker_observed(c: Contribution, up_sent: int, down_recv: int) -> dict:
    return {"blocks_up_sent": up_sent, "blocks_down_recv": down_recv,
            "zero_block_fraction": 1.0 - int(c.mask.sum()) / c.mask.numel(), "kept": int(c.kept.numel())}


def _owner_observed(plan: dict, agg: Aggregate, owner: int) -> dict:
    receivers = sum(1 for w in range(plan["workers"]) if w != owner)
    union = int(agg.union.sum())
    return {"blocks_up_recv": sum(n for w, n in enumerate(agg.up_blocks) if w != owner), "union_blocks": union,
            "blocks_down_sent": union * receivers}


# --- what the analysis keeps (Algorithm.compute, Algorithm.summarize) --------------------------

# A shard owner's step 2 (`aggregate`: decode the W pushes, sum them, form the union, encode the
# pull), between its last push received and its first pull sent: serial (its pulls wait for it),
# and the sync waits for the slowest owner (every worker needs every owner's pull), so one sync's
# is the max over the owners. Charged after the sync's last step in the simulation: the same sum,
# steps being serial. Runs logged before it was timed (docs/results/dfs-resnet18-digits) lack it,
# and replay as before.
AGGREGATE = Compute("aggregate_seconds", "aggregate", "end", across="max")
# A worker's own CPU in the sync besides its selection: encoding its pushes (before the first is
# sent), decoding the pulls into its result (after every pull arrived) and its finish (the
# residual update; DFS's choice of the next block size): serial, and the sync waits for the
# slowest worker (`<key>_slowest`). Runs logged before it was timed lack it and replay without it.
CODEC = Compute("codec_seconds", "codec", "end")
# a worker's error feedback, selection and blocks; an owner's aggregation; a worker's codec; logged
# as durations
COMPUTE = (SPARSIFY, AGGREGATE, CODEC)


def timed(state, key: str):
    """`state.computing(key)`, or nothing without a state (the oracle, tests calling `exchange`)."""
    return state.computing(key) if state is not None else nullcontext()


def summarize(observed: dict) -> dict:
    """summary.json's figures of a block-sparse run from the workers' observations ({worker
    rank: [observed of each measured iteration]}): `zero_block_fraction`, the mean over workers
    and iterations of the share of its own blocks a worker did not send, and `blocks_used`,
    {block size: measured iterations that used it} as rank 0 logged them (every rank uses the
    same size; DFS's choice)."""
    zero = [float(o["zero_block_fraction"]) for obs in observed.values() for o in obs
            if o.get("zero_block_fraction") is not None]
    used: dict = {}
    for o in observed.get(0, []):
        if o.get("block") is not None:
            used[int(o["block"])] = used.get(int(o["block"]), 0) + 1
    out = {}
    if zero:
        out["zero_block_fraction"] = statistics.fmean(zero)
    if used:
        out["blocks_used"] = {str(b): n for b, n in sorted(used.items())}
    return out


# --- the oracle: the whole sync in one process ------------------------------------------------

@dataclass
class Record:
    """One simulated sync: what every worker holds, and every rank's sends and observations."""

    block: int
    result: torch.Tensor
    kept: list  # per worker
    sent: dict  # src rank -> [[dst, nic, bytes, messages], ...] sorted by dst (the worker's `sent`)
    observed: dict  # rank -> dict
    down_meta: list  # per shard


def simulate(plan: dict, rules: Rules, contributions: list) -> Record:
    """Steps 1-3 over every worker's contribution (rank order), with the executor's own functions."""
    n, owners, nic, d = plan["workers"], plan["owners"], plan["nic"], plan["elements"]
    block = contributions[0].block
    if any(c.block != block for c in contributions):
        raise ValueError("every worker of one sync must use the same block size")
    pushes = [push_words(plan, c) for c in contributions]
    result = torch.zeros(d, dtype=torch.float32)
    sent: dict = {}
    observed: dict = {r: {"block": block} for r in range(plan["world"])}
    up_sent, down_recv = [0] * n, [0] * n
    down_meta = []

    def count(src, dst, words):
        b, m = blocks.message_bytes(words.numel())
        t = sent.setdefault(src, {}).setdefault(dst, [0, 0])
        t[0] += b
        t[1] += m

    for s, owner in enumerate(owners):
        agg = aggregate(plan, rules, s, block, [pushes[w][s] for w in range(n)])
        result[agg.start:agg.end] = agg.total
        down_meta.append(agg.down_meta)
        for w in range(n):
            if w != owner:
                count(w, owner, pushes[w][s])
                count(owner, w, agg.words)
                up_sent[w] += agg.up_blocks[w]
                down_recv[w] += int(agg.union.sum())
        observed[owner].update(_owner_observed(plan, agg, owner))
    for w, c in enumerate(contributions):
        observed[w].update(_worker_observed(c, up_sent[w], down_recv[w]))
    return Record(block, result, [c.kept for c in contributions],
                  {src: [[dst, nic, b, m] for dst, (b, m) in sorted(per.items())] for src, per in sent.items()},
                  observed, down_meta)


# --- the executor ----------------------------------------------------------------------------

@dataclass
class Exchange:
    """What one rank got from one sync: the result (workers), the pulls' meta per shard, observations."""

    result: torch.Tensor | None
    down_meta: dict  # shard -> meta words (workers: every shard; owners: their own)
    observed: dict
    block: int | None


def exchange(plan: dict, rules: Rules, comm, contribution: Contribution | None, state=None) -> Exchange:
    """Steps 1-3 on this rank; `contribution` is None on a dedicated server. With `state` (the
    rank's `SyncState`), an owner's step 2 is timed as the Compute `AGGREGATE` and a worker's
    encoding and decoding as `CODEC`."""
    me, n, owners, nic, d = comm.rank, plan["workers"], plan["owners"], plan["nic"], plan["elements"]
    works, keep = [], []  # keep: tensors referenced until their sends completed
    observed: dict = {}
    block = contribution.block if contribution is not None else None
    up_sent = 0

    t0 = time.time()  # 1. push
    pushes = None
    if contribution is not None:
        with timed(state, CODEC.key):
            pushes = push_words(plan, contribution)
    pushed_bytes, sends = 0, []
    if pushes is not None:
        spans = blocks.shard_blocks(d, block, len(owners))
        for s, owner in enumerate(owners):
            if owner != me:
                sends.append((pushes[s], owner))
                pushed_bytes += blocks.message_bytes(pushes[s].numel())[0]
                up_sent += int(contribution.mask[spans[s][0]:spans[s][1]].sum())
    agg, mine = None, owners.index(me) if me in owners else None
    senders = [w for w in range(n) if w != me] if mine is not None else []
    got, posted = comm.exchange_vars(sends, senders, torch.int32, nic=nic, tag=PUSH_TAG)
    works += posted
    keep += [t for t, _ in sends]
    if mine is not None:  # 2. aggregate my shard
        got = dict(zip(senders, got))
        words = [pushes[mine] if w == me else got[w] for w in range(n)]
        if block is None:  # a dedicated server learns the block size from the pushes
            block = rules.block_of(words[0][:rules.up_words].tolist())
        with timed(state, AGGREGATE.key):
            agg = aggregate(plan, rules, mine, block, words)
    comm.record(tree=0, stage=0, nic=nic, phase="push", t0=t0, t1=time.time(), bytes=pushed_bytes)

    t0, pulled_bytes, sends = time.time(), 0, []  # 3. pull
    if agg is not None:
        sends = [(agg.words, w) for w in range(n) if w != me]
        pulled_bytes = len(sends) * blocks.message_bytes(agg.words.numel())[0]
        keep.append(agg.words)
        observed.update(_owner_observed(plan, agg, me))
    result, down_meta, senders = None, {}, []
    if contribution is not None:
        with timed(state, CODEC.key):
            result, down_recv = torch.zeros(d, dtype=torch.float32), 0
        senders = [owner for owner in owners if owner != me]
    pulls, posted = comm.exchange_vars(sends, senders, torch.int32, nic=nic, tag=PULL_TAG)
    works += posted
    pulls = dict(zip(senders, pulls))
    if contribution is not None:
        ranges = blocks.shard_ranges(d, block, len(owners))
        for s, owner in enumerate(owners):
            start, end = ranges[s]
            if owner == me:
                with timed(state, CODEC.key):
                    result[start:end] = agg.total
                down_meta[s] = agg.down_meta
                continue
            words = pulls[owner]
            with timed(state, CODEC.key):
                msg = blocks.decode(words, rules.down_words, block, start, end)
                result[msg.indices] = msg.values
            down_meta[s] = msg.meta
            down_recv += msg.blocks
        observed.update(_worker_observed(contribution, up_sent, down_recv))
    elif agg is not None:
        down_meta[mine] = agg.down_meta
    for w in works:
        w.wait()
    comm.record(tree=0, stage=1, nic=nic, phase="pull", t0=t0, t1=time.time(), bytes=pulled_bytes)
    observed = {"block": block, **observed}
    return Exchange(result, down_meta, observed, block)


# --- fixed block size: omnireduce and topk_ps ---------------------------------------------------

def topk_then_blocks(plan: dict, flat: torch.Tensor, residual: Residual | None) -> tuple[Contribution, torch.Tensor]:
    """(contribution, acc) at the plan's fixed block size.

    Without a density (plan k is None): the gradient as it is, every non-zero block sent,
    everything counted (lossless, no residual). With one: acc = gradient + residual, its k
    entries of largest |acc| (`sparse.select_topk`, ties to the lower index) kept, the rest
    zeroed, then the non-zero blocks of that sent; the residual is zeroed at the k entries
    (a kept entry that is 0 was nothing to send)."""
    block, k, d = plan["block"], plan["k"], plan["elements"]
    if k is None:
        mask = block_nonzero(flat, block)
        return Contribution(block, flat, mask, blocks_to_indices(mask, block, d)), flat
    acc = residual.accumulate(flat)
    idx, values = select_topk(acc, k)
    x = torch.zeros(d, dtype=torch.float32)
    x[idx] = values
    return Contribution(block, x, block_nonzero(x, block), idx), acc


def execute_fixed(plan: dict, comm, grads, state):
    """The executor of `omnireduce` and `topk_ps`; a dedicated server returns its zeros."""
    flat = as_flat(grads)
    residual = c = acc = None
    if comm.rank < plan["workers"]:
        residual = residual_of(state, plan["elements"]) if plan["k"] is not None else None
        with state.computing(SPARSIFY.key):
            c, acc = topk_then_blocks(plan, flat, residual)
    ex = exchange(plan, fixed(plan), comm, c, state)
    if residual is not None:
        with state.computing(CODEC.key):
            residual.update(acc, c.kept)
    state.observed.update(ex.observed)
    return ex.result if ex.result is not None else flat


def reference_fixed(plan: dict, inputs, memory: dict):
    """What every worker must hold: `simulate` over every worker's contribution, every rank's
    residual kept in `memory` (with the last `Record` under "record", for the tests)."""
    residuals = (reference_memory(memory, len(inputs), plan["elements"]) if plan["k"] is not None
                 else [None] * len(inputs))
    parts = [topk_then_blocks(plan, x, r) for x, r in zip(inputs, residuals)]
    record = simulate(plan, fixed(plan), [c for c, _ in parts])
    for r, (c, acc) in zip(residuals, parts):
        if r is not None:
            r.update(acc, c.kept)
    memory["record"] = record
    return record.result
