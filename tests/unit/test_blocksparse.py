"""`omnireduce`, `dfs`, `topk_ps`, the codec `workloads/blocks.py` and DFS's block-size planner
(`workloads/planners/blocks.py`) as pure functions: no process runs.

Block formation and the shard layout, the wire format round trip, union accounting of one
simulated sync against counts made directly from the masks, DFS's block-size choice against
brute force, the dense worst case `traffic(plan)`, one-line option errors, and the P = 1
executor against the reference. The distributed executors are checked against the same
references in tests/parallel/test_blocksparse.py.
"""
import json
import math

import pytest
import torch

from tests.threaded_comm import run_ranks, threaded_comms
from workloads import blocks, sparse
from workloads.comm import Comm
from workloads.planners import blocks as block_sizes
from workloads.algorithms import _blocksparse as bs
from workloads.algorithms import base, dfs
from workloads.gradients import SyntheticGradients

pytestmark = pytest.mark.unit

NAMES = ("omnireduce", "dfs", "topk_ps")
SPARSE = {"block": 64, "zero_blocks": 0.5, "zero_entries": 0.2}


@pytest.fixture(autouse=True)
def one_thread():
    """Many small CPU ops on a shared 2-core box: one thread is faster and steadier (a worker runs
    on one too); the previous setting is restored."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def plan(spec, workers, sizes=(2000, 1001), servers=0):
    return base.plan_for(spec, base.PlanContext(workers, tuple(sizes), servers=servers))


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# --- block formation and the shard layout ----------------------------------------------------

@pytest.mark.parametrize("elements", [1, 7, 64, 1000, 3001])
@pytest.mark.parametrize("block", [1, 3, 64, 256])
@pytest.mark.parametrize("parts", [1, 2, 3, 5])
def test_shards_are_runs_of_whole_blocks_that_tile_the_gradient(elements, block, parts):
    spans, ranges = blocks.shard_blocks(elements, block, parts), blocks.shard_ranges(elements, block, parts)
    nblocks = math.ceil(elements / block)
    assert blocks.block_count(elements, block) == nblocks and len(spans) == len(ranges) == parts
    assert spans[0][0] == 0 and spans[-1][1] == nblocks and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert ranges[0][0] == 0 and ranges[-1][1] == elements and all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    sizes = [e - s for s, e in spans]
    assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)  # near-equal, first larger
    for (bs_, be), (start, end) in zip(spans, ranges):
        if be > bs_:
            assert start == bs_ * block  # on the grid: no block straddles two owners
            assert end == min(be * block, elements)  # only the gradient's last block is short
        else:
            assert start == end  # fewer blocks than owners: an empty shard


def test_block_masks_are_the_non_zero_blocks_and_the_last_may_be_short():
    x = torch.zeros(10)
    x[1], x[9] = 3.0, -0.5
    assert sparse.block_nonzero(x, 4).tolist() == [True, False, True]  # [0,4) [4,8) [8,10)
    c, _ = bs.topk_then_blocks({"block": 4, "k": None, "elements": 10}, x, None)
    assert c.mask.tolist() == [True, False, True] and c.kept.tolist() == [0, 1, 2, 3, 8, 9]
    words = bs.push_words({"elements": 10, "owners": [0]}, c)[0]
    assert words[:2].tolist() == [0, 8] and words.numel() == 2 + 4 + 2  # offsets, then 6 values


# --- the wire format -------------------------------------------------------------------------

def random_segment(n, seed, zero_blocks, block):
    x = torch.randn(n, generator=gen(seed))
    x[torch.rand(n, generator=gen(seed + 1)) < 0.2] = 0.0
    x[::7] = -0.0  # signed zeros and a subnormal must survive bit for bit
    if n > 3:
        x[3] = 1e-42
    mask = torch.rand(math.ceil(n / block), generator=gen(seed + 2)) >= zero_blocks
    return x, mask


@pytest.mark.parametrize("block", [1, 3, 64, 100])
@pytest.mark.parametrize("meta", [[], [7], [256, 1, 0, 5]])
@pytest.mark.parametrize("zero_blocks", [0.0, 0.5, 1.0])
def test_wire_format_round_trips_bit_for_bit_with_a_short_last_block(block, meta, zero_blocks):
    d = 1001  # not a multiple of any block above 1: the last block is short
    x, mask = random_segment(d, block, zero_blocks, block)
    for start, end in blocks.shard_ranges(d, block, 3):
        bs_ = start // block
        seg_mask = mask[bs_:bs_ + math.ceil((end - start) / block)]
        words = blocks.encode(meta, x[start:end], seg_mask, block, start)
        msg = blocks.decode(words, len(meta), block, start, end)
        idx = sparse.blocks_to_indices(mask, block, d)
        idx = idx[(idx >= start) & (idx < end)]
        assert msg.meta == meta and msg.blocks == int(seg_mask.sum())
        assert torch.equal(msg.offsets, start + seg_mask.nonzero().squeeze(1) * block)
        assert torch.equal(msg.indices, idx)
        assert torch.equal(msg.values.view(torch.int32), x[idx].view(torch.int32))
        assert words.numel() == len(meta) + msg.blocks + idx.numel()
        assert blocks.message_bytes(words.numel()) == (8 + 4 * words.numel(), 1 + (words.numel() > 0))


def test_one_element_blocks_are_the_sparse_set_pair_format():
    x, mask = random_segment(500, 5, 0.9, 1)
    words = blocks.encode([], x, mask, 1, 0)
    pairs = sparse.SparseSet(mask.nonzero().squeeze(1), x[mask], 500)
    assert torch.equal(words, pairs.pack())  # k int32 indices, then the k values' bits: 8 bytes a pair
    assert sparse.SparseSet.unpack(words, 500).equal(pairs)


@pytest.mark.parametrize("words, why", [
    ([5, 0, 0, 0, 0], "ascending multiples"),  # offset 5 is off the grid of 4
    ([0, 0, 0, 0], "must carry 4 values"),  # one value short
    ([12, 0, 0, 0, 0], "outside the shard"),
    ([4, 0, 0, 0, 0, 0, 0, 0, 0, 0], "ascending multiples"),  # n = 2: offsets 4, 0 descend
])
def test_decode_refuses_broken_messages(words, why):
    with pytest.raises(ValueError, match=why):
        blocks.decode(torch.tensor(words, dtype=torch.int32), 0, 4, 0, 12)


def test_encode_refuses_a_segment_off_the_grid():
    with pytest.raises(ValueError, match="start 3 is not a multiple of 4"):
        blocks.encode([], torch.zeros(8), torch.zeros(2, dtype=torch.bool), 4, 3)


# --- union accounting of one sync --------------------------------------------------------------

def contributions(d, block, workers, seed):
    """Hand-made contributions: random values, random block masks, zeros outside them."""
    out = []
    for w in range(workers):
        x, mask = random_segment(d, seed + 10 * w, 0.6, block)
        x = x * mask.repeat_interleave(block)[:d]
        out.append(bs.Contribution(block, x, mask, sparse.blocks_to_indices(mask, block, d)))
    return out


@pytest.mark.parametrize("workers, servers", [(1, 0), (2, 0), (3, 0), (4, 0), (2, 1), (3, 2), (4, 3)])
@pytest.mark.parametrize("block", [1, 16, 100])
def test_union_accounting_matches_counts_made_from_the_masks(workers, servers, block):
    _, p = plan("omnireduce", workers, (1001,), servers)
    p["block"] = block
    d, owners = 1001, p["owners"]
    cs = contributions(d, block, workers, block)
    rec = bs.simulate(p, bs.fixed(p), cs)
    # the result: every worker's sent values summed in rank order, zeros elsewhere
    total = torch.zeros(d)
    for c in cs:
        total[c.kept] = total[c.kept] + c.x[c.kept]
    assert torch.equal(rec.result, total)
    union = sparse.blocks_union([c.mask for c in cs])
    lengths = torch.full((union.numel(),), block)
    lengths[-1] = d - (union.numel() - 1) * block
    sent = {}
    for s, ((first, end), owner) in enumerate(zip(blocks.shard_blocks(d, block, len(owners)), owners)):
        u = int(union[first:end].sum())
        u_elems = int(lengths[first:end][union[first:end]].sum())
        receivers = [w for w in range(workers) if w != owner]
        obs = rec.observed[owner]
        assert obs["union_blocks"] == u and obs["blocks_down_sent"] == u * len(receivers)
        for w in receivers:  # push: my blocks + their offsets; pull: the union's
            mine = cs[w].mask[first:end]
            up_words = int(mine.sum()) + int(lengths[first:end][mine].sum())
            for src, dst, words in ((w, owner, up_words), (owner, w, u + u_elems)):
                t = sent.setdefault(src, {}).setdefault(dst, [0, 0])
                t[0] += 8 + 4 * words
                t[1] += 1 + (words > 0)
    assert rec.sent == {src: [[dst, 0, b, m] for dst, (b, m) in sorted(per.items())] for src, per in sent.items()}
    for w, c in enumerate(cs):
        others = [(f, e) for (f, e), o in zip(blocks.shard_blocks(d, block, len(owners)), owners) if o != w]
        assert rec.observed[w]["blocks_up_sent"] == sum(int(c.mask[f:e].sum()) for f, e in others)
        assert rec.observed[w]["blocks_down_recv"] == sum(int(union[f:e].sum()) for f, e in others)
        assert rec.observed[w]["zero_block_fraction"] == 1 - int(c.mask.sum()) / c.mask.numel()


def test_lossless_omnireduce_is_the_dense_sum_and_skips_exactly_the_zero_blocks():
    algo, p = plan("omnireduce,block=64", 3)
    grads = SyntheticGradients(3, 3001, 1, SPARSE)
    memory = {}
    for it in range(3):
        xs = grads.all_workers(it)
        assert torch.equal(algo.reference(p, xs, memory), sum(xs))
        zero = [1 - int(sparse.block_nonzero(x, 64).sum()) / 47 for x in xs]
        assert [memory["record"].observed[w]["zero_block_fraction"] for w in range(3)] == zero
        assert 0.3 < sum(zero) / 3 < 0.7  # the synthetic half of the blocks


# --- DFS: the union estimate and the block-size choice -------------------------------------------

def test_union_estimate_is_exact_where_measured_and_within_the_bounds():
    counts = [[3, 5, 2], [6, 9, 4], [12, 20, 7]]  # 3 candidates, 3 workers
    nblocks = [40, 20, 25]
    for exact in (9, 12, 15):
        est = block_sizes.union_estimate(counts, nblocks, 1, exact)
        assert est[1] == exact
        for c, n, e in zip(counts, nblocks, est):
            assert max(c) <= e <= min(sum(c), n)
    # identical masks (union = max): full overlap is assumed for every other candidate too
    assert block_sizes.union_estimate(counts, nblocks, 1, 9) == [5, 9, 20]
    # a union as large as independent choices would give: theta = 1, the independent estimate
    indep = [n * (1 - math.prod(1 - x / n for x in c)) for c, n in zip(counts, nblocks)]
    est = block_sizes.union_estimate(counts, nblocks, 0, round(indep[0]))
    assert abs(est[2] - min(25, indep[2])) <= 1 and est[0] == round(indep[0])
    assert block_sizes.union_estimate([[0, 0]], [0], 0, 0) == [0]  # an empty shard


def brute_force(candidates, pushed, union, receivers):
    """Every candidate's bytes, block by block message by message, then the cheapest (smaller on ties)."""
    costs = {}
    for j, b in enumerate(candidates):
        messages = [pushed[s][j] for s in range(len(pushed))]  # blocks of each push message set
        messages += [union[s][j] for s in range(len(pushed)) for _ in range(receivers[s])]  # each pull
        costs[b] = sum(blocks_in * (4 * b + 4) for blocks_in in messages)
    best = min(costs.values())
    return min(b for b, c in costs.items() if c == best), [costs[b] for b in candidates]


@pytest.mark.parametrize("seed", range(30))
def test_block_choice_minimizes_the_modelled_bytes_over_the_candidates(seed):
    g = gen(seed)
    cands = sorted({int(v) for v in torch.randint(1, 300, (int(torch.randint(1, 6, (1,), generator=g)),),
                                                  generator=g)})
    shards = int(torch.randint(1, 4, (1,), generator=g))
    pushed = torch.randint(0, 30, (shards, len(cands)), generator=g).tolist()
    union = torch.randint(0, 12, (shards, len(cands)), generator=g).tolist()
    receivers = torch.randint(1, 5, (shards,), generator=g).tolist()
    assert block_sizes.choose_block(cands, pushed, union, receivers) == brute_force(cands, pushed, union, receivers)


def test_ties_go_to_the_smaller_block_and_the_first_block_is_nearest_256():
    assert block_sizes.choose_block([16, 64], [[0, 0]], [[0, 0]], [3]) == (16, [0, 0])
    assert block_sizes.first_block([16, 32, 64, 128, 256, 512, 1024]) == 256
    assert block_sizes.first_block([128, 384]) == 128 and block_sizes.first_block([100, 1000]) == 100
    assert block_sizes.first_block([300]) == 300


@pytest.mark.parametrize("workers, servers", [(1, 0), (3, 0), (4, 0), (2, 1), (3, 2)])
@pytest.mark.parametrize("density", [0.05, 1])
def test_dfs_picks_the_argmin_of_the_model_built_from_the_masks(workers, servers, density):
    """Brute force from the workers' own block_topk masks at every candidate (not from the
    messages): the next block size minimizes the modelled bytes, the model at the size used is
    exactly the block bytes that crossed the network, and history and residuals are kept."""
    cands = [16, 32, 64, 128, 256]
    d = 4096  # a multiple of every candidate: no short block, so the model is exact where measured
    _, p = plan(f"dfs,density={density},blocks=16:32:64:128:256", workers, (d,), servers)
    owners, k = p["owners"], p["k"]
    grads = SyntheticGradients(workers, d, 7, SPARSE)
    memory, residuals, block = {}, [sparse.Residual(d) for _ in range(workers)], p["first_block"]
    history = []
    for it in range(4):
        xs = grads.all_workers(it)
        accs = [r.accumulate(x) for r, x in zip(residuals, xs)]
        masks = {b: [sparse.block_topk(a, b, k)[1] for a in accs] for b in cands}
        pushed, union, receivers = [], [], []
        for s, owner in enumerate(owners):
            row_p, counts, nblocks = [], [], []
            for b in cands:
                f, e = blocks.shard_blocks(d, b, len(owners))[s]
                row_p.append(sum(int(m[f:e].sum()) for w, m in enumerate(masks[b]) if w != owner))
                counts.append([int(m[f:e].sum()) for m in masks[b]])
                nblocks.append(e - f)
            f, e = blocks.shard_blocks(d, block, len(owners))[s]
            exact = int(sparse.blocks_union([m[f:e] for m in masks[block]]).sum())
            pushed.append(row_p)
            union.append(block_sizes.union_estimate(counts, nblocks, cands.index(block), exact))
            receivers.append(workers - (owner < workers))
        want, costs = brute_force(cands, pushed, union, receivers)
        result = dfs.reference(p, xs, memory)
        rec = memory["record"]
        history.append(block)
        assert rec.block == block and memory["history"] == history
        assert memory["next"] == (want, costs) and memory["block"] == want
        # the model at the block used: exactly the bytes of the blocks that crossed the network
        crossed = sum(rec.observed[w]["blocks_up_sent"] for w in range(workers))
        crossed += sum(rec.observed[o]["blocks_down_sent"] for o in owners)
        assert costs[cands.index(block)] == (4 * block + 4) * crossed
        expected = torch.zeros(d)
        for w, b_mask in enumerate(masks[block]):
            idx = sparse.blocks_to_indices(b_mask, block, d)
            expected[idx] = expected[idx] + accs[w][idx]
            residuals[w].update(accs[w], idx)
        assert torch.equal(result, expected)
        assert all(torch.equal(a.residual, b.residual) for a, b in zip(memory["residuals"], residuals))
        block = want


# --- the dense worst case, plans and registration ----------------------------------------------

@pytest.mark.parametrize("workers, servers", [(1, 0), (2, 0), (5, 0), (3, 1), (4, 2)])
@pytest.mark.parametrize("spec", ["omnireduce", "omnireduce,block=100", "topk_ps,density=1",
                                  "omnireduce,block=7,density=1"])
def test_traffic_is_what_a_sync_of_gradients_without_zeros_sends(workers, servers, spec):
    algo, p = plan(spec, workers, (2000, 1001), servers)
    xs = [torch.randn(3001, generator=gen(w)) + 100 for w in range(workers)]  # no zero entry
    memory = {}
    algo.reference(p, xs, memory)
    flows = algo.traffic(p)
    assert memory["record"].sent == {src: [[f.dst, f.nic, f.bytes, f.messages] for f in flows if f.src == src]
                                     for src in {f.src for f in flows}}
    push, pull = algo.steps(p)
    assert base.merge_flows(push + pull) == flows
    assert all(f.dst in p["owners"] for f in push) and all(f.src in p["owners"] for f in pull)
    # every owner gets every other worker's whole shard: elements + one offset a block, + 8 per message
    n, block = workers, p["block"]
    assert sum(f.bytes for f in push) == sum(
        (8 + 4 * (e - a + math.ceil((e - a) / block))) * (n - (o < n))
        for o, (a, e) in zip(p["owners"], blocks.shard_ranges(3001, block, len(p["owners"]))))
    assert sum(f.bytes for f in pull) == sum(f.bytes for f in push)
    assert all(f.messages == (2 if servers else 4) for f in flows)  # send_var: 2 a message; co-located: both ways


@pytest.mark.parametrize("workers, servers", [(2, 0), (4, 0), (3, 2)])
def test_dfs_traffic_bounds_every_logged_flow(workers, servers):
    algo, p = plan("dfs,density=0.5,blocks=16:128:1024", workers, (2000, 1001), servers)
    bound = {(f.src, f.dst): f for f in algo.traffic(p)}
    grads, memory, used = SyntheticGradients(workers, 3001, 3, SPARSE), {}, set()
    for it in range(5):
        algo.reference(p, grads.all_workers(it), memory)
        used.add(memory["record"].block)
        for src, per in memory["record"].sent.items():
            for dst, _, nbytes, messages in per:
                f = bound[(src, dst)]
                assert nbytes <= f.bytes and messages == f.messages  # DFS always sends its meta
    assert len(used) > 1


@pytest.mark.parametrize("workers, servers", [(1, 0), (3, 0), (2, 2)])
def test_plans_are_json_and_name_their_owners(workers, servers):
    for spec in ("omnireduce", "omnireduce,density=0.1,block=32", "dfs", "dfs,blocks=1024:16", "topk_ps"):
        algo, p = plan(spec, workers, (2000, 1001), servers)
        again = json.loads(json.dumps(p))
        assert again == p and algo.traffic(again) == algo.traffic(p)
        assert p["owners"] == (list(range(workers)) if not servers else list(range(workers, workers + servers)))
        assert p["header_bytes"] == 4 and p["world"] == workers + servers
    _, p = plan("dfs,blocks=1024:16:16", 2)
    assert p["blocks"] == [16, 1024] and p["meta_words"] == [3, 4] and p["first_block"] == 16
    assert plan("omnireduce", 2)[1]["k"] is None and plan("topk_ps", 2)[1]["k"] == 4  # 0.001 x 3001


def test_the_three_are_registered_data_dependent_with_an_oracle():
    for name in NAMES:
        algo = base.get(name)
        assert algo.uses_servers and algo.data_dependent and algo.reference is not None
    assert base.get("dfs").option_help().startswith("density=0.001 (a number in (0, 1]")
    assert "blocks=16:32:64:128:256:512:1024 (candidate block sizes" in base.get("dfs").option_help()
    assert base.get("omnireduce").option_help().startswith("block=256 (an integer >= 1")
    typed = base.get("dfs").parse_options({"blocks": "64:16", "density": "0.01"})
    assert base.spec_of("dfs", typed) == "dfs,blocks=16:64,density=0.01"
    assert base.get("dfs").parse_options({"blocks": [32, 16]})["blocks"] == (16, 32)  # YAML lists


# --- bad input: one line --------------------------------------------------------------------------

@pytest.mark.parametrize("spec, message", [
    ("omnireduce,block=0", "omnireduce: option block='0' is invalid (must be >= 1); valid: block an integer >= 1"),
    ("omnireduce,block=-4", "omnireduce: option block='-4' is invalid (must be >= 1)"),
    ("omnireduce,block=2.5", "omnireduce: option block='2.5' is invalid (an integer is needed)"),
    ("omnireduce,block=abc", "omnireduce: option block='abc' is invalid"),
    ("omnireduce,block=3002", "omnireduce: block=3002 is larger than the gradient (3001 elements); valid: "
                              "block sizes 1..3001"),
    ("omnireduce,density=0", "omnireduce: option density='0' is invalid (must be > 0)"),
    ("omnireduce,density=1.5", "omnireduce: option density='1.5' is invalid (must be <= 1)"),
    ("dfs,density=0", "dfs: option density='0' is invalid (must be > 0); valid: density a number in (0, 1]"),
    ("dfs,density=2", "dfs: option density='2' is invalid (must be <= 1)"),
    ("dfs,density=nan", "dfs: option density='nan' is invalid (must be a number, not NaN)"),
    ("topk_ps,density=-1", "topk_ps: option density='-1' is invalid (must be > 0)"),
    ("dfs,blocks=16:0", "dfs: option blocks='16:0' is invalid (every block size must be an integer >= 1 "
                        "(must be >= 1)); valid: blocks candidate block sizes"),
    ("dfs,blocks=16:x", "dfs: option blocks='16:x' is invalid (every block size must be an integer >= 1"),
    ("dfs,blocks=16::32", "dfs: option blocks='16::32' is invalid (give block sizes separated by ':')"),
    ("dfs,blocks=16:4096", "dfs: block size 4096 of blocks=16:4096 is larger than the gradient (3001 elements); "
                           "valid: block sizes 1..3001"),
    ("topk_ps,block=4", "topk_ps: unknown option(s) block; valid: density"),
    ("dfs,block=4", "dfs: unknown option(s) block; valid: density, blocks"),
])
def test_bad_options_are_one_line_errors(spec, message):
    with pytest.raises(ValueError) as err:
        plan(spec, 3)
    assert "\n" not in str(err.value) and str(err.value).startswith(message), str(err.value)


def test_the_default_candidates_refuse_a_gradient_smaller_than_the_largest():
    with pytest.raises(ValueError, match=r"^dfs: block size 1024 of blocks=16:32:64:128:256:512:1024 is larger "
                                         r"than the gradient \(1000 elements\)"):
        plan("dfs", 2, (1000,))
    plan("dfs,blocks=16:64", 2, (1000,))


# --- the P = 1 executor ------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["omnireduce", "omnireduce,block=64,density=0.1", "topk_ps,density=0.05",
                                  "dfs,density=0.2,blocks=16:64:256"])
def test_a_single_rank_executes_what_its_reference_says(spec):
    algo, p = plan(spec, 1)
    state, memory = base.SyncState(rank=0, workers=1, world=1), {}
    grads = SyntheticGradients(1, 3001, 2, SPARSE)
    for it in range(4):
        state.begin(it)
        xs = grads.all_workers(it)
        expected = algo.reference(p, xs, memory)
        assert torch.equal(algo.execute(p, threaded_comms(1)[0][0], xs[0].clone(), state), expected)
        observed = dict(memory["record"].observed[0])
        if "next" in memory:
            observed.update(next_block=memory["next"][0], modelled_bytes=memory["next"][1])
        got = dict(state.observed)
        assert got.pop("sparsify_seconds") >= 0  # measured, so not in the reference
        assert got.pop("aggregate_seconds") >= 0  # the single rank owns the one shard: its step 2, timed
        assert got.pop("codec_seconds") > 0  # its encode, its own shard into the result, its finish
        assert got == observed
        assert observed["blocks_up_sent"] == observed["blocks_down_recv"] == observed["blocks_down_sent"] == 0
        if p["k"] is not None:
            assert torch.equal(state.memory["residual"].residual, memory["residuals"][0].residual)
    if p["algorithm"] == "dfs":
        assert state.memory["history"] == memory["history"] and state.memory["block"] == memory["block"]


@pytest.mark.parametrize("workers, servers", [(3, 0), (4, 0), (3, 2)])
@pytest.mark.parametrize("spec", ["omnireduce", "topk_ps,density=0.05", "dfs,density=0.2,blocks=16:64:256"])
def test_every_rank_posts_a_steps_receives_before_its_sends_and_holds_what_the_reference_says(spec, workers, servers):
    """Each step (push, pull) is one `Comm.exchange_vars`: in each half of it (length headers,
    then payloads) a rank posts every receive before any send, so the word that a receive is
    posted never waits behind the rank's own payload (docs/PROJECTION.md, "Fan-in"). Without
    processes (tests/threaded_comm.py); the bytes each rank sent are the reference's."""
    algo, p = plan(spec, workers, servers=servers)
    world, memory = workers + servers, {}
    grads = SyntheticGradients(workers, 3001, 3, SPARSE)
    states = [base.SyncState(rank=r, workers=workers, world=world) for r in range(world)]
    for it in range(2):
        for state in states:
            state.begin(it)
        xs = grads.all_workers(it)
        expected = algo.reference(p, xs, memory)
        comms, box = threaded_comms(world)
        inputs = xs + [torch.zeros(3001)] * servers
        out = run_ranks(lambda plan_, comm, g: algo.execute(plan_, comm, g, states[comm.rank]), p, comms, inputs)
        assert not box, f"messages nobody received: {sorted(box)}"
        assert all(torch.equal(out[w], expected) for w in range(workers))
        for r, comm in enumerate(comms):
            for tag in {t for _, t in comm.posted}:  # push and pull, headers and payloads apart
                kinds = [k for k, t in comm.posted if t == tag]
                assert kinds == sorted(kinds), f"rank {r} posted a send before a receive under tag {tag}: {kinds}"
            sent = {}
            for dst, nic, tag, nbytes in comm.sends:
                b_m = sent.setdefault((dst, nic), [0, 0])
                b_m[0] += nbytes
                b_m[1] += 1
            assert sorted([dst, nic, *b_m] for (dst, nic), b_m in sent.items()) == \
                memory["record"].sent.get(r, []), f"rank {r}"
        assert any(k == "recv" for c in comms for k, t in c.posted if t >= Comm.VAR_DATA_TAG)


@pytest.mark.parametrize("workers, servers", [(3, 0), (2, 2)])
@pytest.mark.parametrize("spec", ["omnireduce", "topk_ps,density=0.05", "dfs,density=0.2,blocks=16:64:256"])
def test_each_step_is_two_rounds_headers_then_payloads_and_the_projection_charges_both(spec, workers, servers):
    """A payload's receive is posted only once its length header arrived (and a Gloo send moves
    nothing until its receive is posted), and a rank sends its payloads only after every header
    it expects arrived: each step waits through the headers' delivery, then the payloads'. The
    projection's latency term counts both (`rounds`), for each step of every simulated form,
    the replay of logged bytes included; a single rank, which sends nothing, is charged none."""
    algo, p = plan(spec, workers, servers=servers)
    world = workers + servers
    grads = SyntheticGradients(workers, 3001, 3, SPARSE)
    states = [base.SyncState(rank=r, workers=workers, world=world) for r in range(world)]
    for state in states:
        state.begin(0)
    comms, _ = threaded_comms(world)
    run_ranks(lambda plan_, comm, g: algo.execute(plan_, comm, g, states[comm.rank]), p, comms,
              grads.all_workers(0) + [torch.zeros(3001)] * servers)
    for r, comm in enumerate(comms):
        for header in (bs.PUSH_TAG, bs.PULL_TAG):
            payload = header + Comm.VAR_DATA_TAG
            at = [(k, t) for k, t in comm.log if t in (header, payload)]
            waits = [i for i, (k, t) in enumerate(at) if (k, t) == ("waited", header)]
            posts = [i for i, (k, t) in enumerate(at) if (k, t) == ("recv", payload)]
            sends = [i for i, (k, t) in enumerate(at) if (k, t) == ("send", payload)]
            assert all(w < q for w, q in zip(waits, posts)), f"rank {r}: a payload receive before its header: {at}"
            assert not waits or not sends or max(waits) < min(sends), f"rank {r}: a payload sent early: {at}"
    # the replay of logged bytes: tests/unit/test_project_compute.py (a measured run's logs)
    forms = [algo.modelled_steps(p), algo.step_blocks(p), algo.phases(p)]
    assert algo.step_rounds(p) == [2, 2] and all(len(f) == 2 for f in forms)
    assert algo.step_rounds(plan(spec, 1)[1]) == [0, 0]
