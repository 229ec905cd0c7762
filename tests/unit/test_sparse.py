"""Sparse machinery (workloads/sparse.py): top-k tie-break, wire format, gTop-k tree, oracles."""
import math

import pytest
import torch

from workloads import sparse
from workloads.sparse import Residual, SparseSet

pytestmark = pytest.mark.unit


def t(values):
    return torch.tensor(values, dtype=torch.float32)


def idx(values):
    return torch.tensor(values, dtype=torch.int64)


def brute_topk(x, k):
    """Sort by (-|v|, index), take k, return ascending indices."""
    order = sorted(range(x.numel()), key=lambda i: (-abs(float(x[i])), i))
    return sorted(order[:k])


def random_ints(gen, size, low=-4, high=4):
    return torch.randint(low, high + 1, (size,), generator=gen).to(torch.float32)


def sset(indices, values, size):
    return SparseSet(idx(indices), t(values), size)


# --- select_topk -----------------------------------------------------------------------------

@pytest.mark.parametrize("x, k, expected", [
    ([1, 1, 1, 1, 1], 2, [0, 1]),                # all tied: lowest indices
    ([2, -3, 3, 1, -3], 2, [1, 2]),              # three tied at 3, lowest two
    ([2, -3, 3, 1, -3], 4, [0, 1, 2, 4]),        # all above-threshold plus the 2
    ([0, -1, 0, 1, 0, -1], 4, [0, 1, 3, 5]),     # fill with the lowest-index zero
    ([5, -5, 4, -4, 4], 3, [0, 1, 2]),
    ([-0.0, 0.0, 0.0], 1, [0]),                  # -0.0 and 0.0 are tied magnitudes
    ([7, 1, 2], 3, [0, 1, 2]),                   # k == d
])
def test_select_topk_tie_break_hand_cases(x, k, expected):
    indices, values = sparse.select_topk(t(x), k)
    assert indices.dtype == torch.int64 and values.dtype == torch.float32
    assert indices.tolist() == expected
    assert torch.equal(values.view(torch.int32), t(x)[indices].view(torch.int32))


def test_select_topk_matches_brute_force_on_random_integer_tensors():
    gen = torch.Generator().manual_seed(1)
    for trial in range(200):
        d = int(torch.randint(1, 60, (1,), generator=gen))
        x = random_ints(gen, d, -3, 3)  # few distinct magnitudes: ties everywhere
        k = int(torch.randint(1, d + 1, (1,), generator=gen))
        indices, values = sparse.select_topk(x, k)
        assert indices.tolist() == brute_topk(x, k), (trial, x.tolist(), k)
        assert torch.equal(values, x[indices])


def test_select_topk_rejects_bad_k_and_nan():
    x = t([1, 2, 3])
    for k in (0, -1, 4, 1.0, True):
        with pytest.raises(ValueError, match="k must be"):
            sparse.select_topk(x, k)
    with pytest.raises(ValueError, match="NaN"):
        sparse.select_topk(t([1, float("nan")]), 1)
    with pytest.raises(ValueError, match="floating-point"):
        sparse.select_topk(torch.arange(4), 1)


# --- SparseSet -------------------------------------------------------------------------------

def test_pack_unpack_round_trip_is_bit_exact():
    values = t([-0.0, 0.0, 1.5, -3.25e-39, 3.4e38, -float("inf"), 1e-45, 7.0])  # subnormals too
    s = SparseSet(idx([0, 3, 4, 10, 11, 50, 98, 99]), values, 100)
    packed = s.pack()
    assert packed.dtype == torch.int32 and packed.numel() == 2 * s.k
    assert packed[:s.k].tolist() == s.indices.tolist()
    back = SparseSet.unpack(packed, 100)
    assert back.equal(s)
    assert torch.equal(back.values.view(torch.int32), values.view(torch.int32))
    assert math.copysign(1.0, float(back.values[0])) == -1.0  # -0.0 survived
    assert not back.equal(SparseSet(s.indices, values.abs(), 100))  # equal() sees the sign of zero
    empty = SparseSet(idx([]), t([]), 5)
    assert SparseSet.unpack(empty.pack(), 5).equal(empty)


def test_sparse_set_dense_bytes_and_validation():
    s = sset([1, 4], [2, -0.0], 6)
    dense = s.to_dense()
    assert dense.tolist() == [0, 2, 0, 0, 0, 0] and math.copysign(1.0, float(dense[4])) == -1.0
    assert s.nbytes() == 16 and s.nbytes(index_bytes=8, value_bytes=2) == 20
    assert SparseSet.topk(t([0, 3, -3, 1]), 2).indices.tolist() == [1, 2]
    with pytest.raises(ValueError, match="ascending"):
        sset([4, 1], [1, 2], 6)
    with pytest.raises(ValueError, match="ascending"):
        sset([1, 1], [1, 2], 6)
    with pytest.raises(ValueError, match="lie in"):
        sset([1, 6], [1, 2], 6)
    with pytest.raises(ValueError, match="int64"):
        SparseSet(torch.tensor([1], dtype=torch.int32), t([1]), 6)
    with pytest.raises(ValueError, match="float32"):
        SparseSet(idx([1]), torch.tensor([1.0], dtype=torch.float64), 6)
    with pytest.raises(ValueError, match="even length"):
        SparseSet.unpack(torch.zeros(3, dtype=torch.int32), 6)


# --- merge_topk ------------------------------------------------------------------------------

def test_merge_topk_hand_cases():
    a = sset([0, 2, 5], [3, 1, -2], 8)
    b = sset([2, 5, 7], [1, 2, -2], 8)
    # union: 0:3, 2:1+1=2, 5:-2+2=0, 7:-2 -> magnitudes 3, 2, 0, 2; ties 2 vs 7 at |2|
    m = sparse.merge_topk(a, b, 2)
    assert m.indices.tolist() == [0, 2] and m.values.tolist() == [3, 2]
    m = sparse.merge_topk(a, b, 3)
    assert m.indices.tolist() == [0, 2, 7] and m.values.tolist() == [3, 2, -2]
    m = sparse.merge_topk(a, b, 4)  # the cancelled shared entry is a (magnitude 0) candidate
    assert m.indices.tolist() == [0, 2, 5, 7] and m.values.tolist() == [3, 2, 0, -2]
    m = sparse.merge_topk(a, b, 10)  # fewer than k in the union: all kept
    assert m.k == 4
    # Tie across a and b: the lower index wins whichever set it came from.
    m = sparse.merge_topk(sset([6], [4], 8), sset([1], [-4], 8), 1)
    assert m.indices.tolist() == [1] and m.values.tolist() == [-4]
    # A lone -0.0 keeps its sign (written, not added into zeros).
    m = sparse.merge_topk(sset([3], [-0.0], 8), sset([], [], 8), 1)
    assert m.equal(sset([3], [-0.0], 8))
    with pytest.raises(ValueError, match="sizes"):
        sparse.merge_topk(sset([0], [1], 8), sset([0], [1], 9), 1)


def test_merge_topk_matches_brute_force():
    gen = torch.Generator().manual_seed(2)
    d = 40
    for _ in range(100):
        k = int(torch.randint(1, 12, (1,), generator=gen))
        a = SparseSet.topk(random_ints(gen, d), k)
        b = SparseSet.topk(random_ints(gen, d), k)
        union = sorted(set(a.indices.tolist()) | set(b.indices.tolist()))
        summed = a.to_dense() + b.to_dense()
        order = sorted(union, key=lambda i: (-abs(float(summed[i])), i))[:k]
        m = sparse.merge_topk(a, b, k)
        assert m.indices.tolist() == sorted(order)
        assert torch.equal(m.values, summed[m.indices])


# --- gTop-k tree -----------------------------------------------------------------------------

@pytest.mark.parametrize("workers", range(2, 34))
def test_gtopk_rounds_for_any_number_of_workers(workers):
    rounds = sparse.gtopk_rounds(workers)
    assert len(rounds) == math.ceil(math.log2(workers))
    sends = [src for pairs in rounds for src, _ in pairs]
    assert sorted(sends) == list(range(1, workers))  # each non-root sends exactly once, root never
    holding = {r: {r} for r in range(workers)}  # whose data each rank holds
    for j, pairs in enumerate(rounds):
        ranks = [r for pair in pairs for r in pair]
        assert len(ranks) == len(set(ranks)), "a rank in two pairs of one round"
        for src, dst in pairs:
            assert src % 2 ** (j + 1) == 2 ** j and dst == src - 2 ** j and src < workers
            assert holding[src] and holding[dst], "a rank that already sent takes part again"
            holding[dst] |= holding.pop(src)
    assert holding == {0: set(range(workers))}

    bcast = sparse.gtopk_broadcast_rounds(workers)
    assert bcast == [[(d, s) for s, d in pairs] for pairs in reversed(rounds)]
    informed = {0}
    for pairs in bcast:
        for src, dst in pairs:
            assert src in informed and dst not in informed
            informed.add(dst)
    assert informed == set(range(workers))

    for rank in range(workers):
        role = sparse.gtopk_roles(workers, rank)
        assert len(role.reduce_send) == (rank != 0) == len(role.bcast_recv)
        recvs = [(j, s) for j, pairs in enumerate(rounds) for s, d in pairs if d == rank]
        assert recvs == list(role.reduce_recv)
        if rank:
            assert role.parent == role.bcast_recv[0][1] == rank - (rank & -rank)
            # it forwards to its children only after hearing from its parent
            assert all(j > role.bcast_recv[0][0] for j, _ in role.bcast_send)
            assert all(j < role.reduce_send[0][0] for j, _ in role.reduce_recv)
        assert sorted(p for _, p in role.bcast_send) == sorted(p for _, p in role.reduce_recv)


def test_gtopk_rounds_small_cases_and_errors():
    assert sparse.gtopk_rounds(1) == [] and sparse.gtopk_broadcast_rounds(1) == []
    assert sparse.gtopk_rounds(5) == [[(1, 0), (3, 2)], [(2, 0)], [(4, 0)]]
    assert sparse.gtopk_rounds(8) == [[(1, 0), (3, 2), (5, 4), (7, 6)], [(2, 0), (6, 4)], [(4, 0)]]
    role = sparse.gtopk_roles(6, 4)
    assert role.reduce_recv == ((0, 5),) and role.reduce_send == ((2, 0),)
    assert role.bcast_recv == ((0, 0),) and role.bcast_send == ((2, 5),)
    for bad in (0, -2, 2.0):
        with pytest.raises(ValueError, match="positive int"):
            sparse.gtopk_rounds(bad)
    with pytest.raises(ValueError, match="rank"):
        sparse.gtopk_roles(4, 4)


# --- oracles ---------------------------------------------------------------------------------

def test_reference_gtopk_hand_case_p3_with_ties():
    accs = [t([3, -3, 0, 1, 0]),   # local top-2: {0: 3, 1: -3}
            t([0, 2, 2, 2, 0]),    # three tied at 2 -> {1: 2, 2: 2}
            t([0, 0, -4, 0, 2])]   # {2: -4, 4: 2}
    # round 0, 1 -> 0: union {0: 3, 1: -3+2=-1, 2: 2} -> {0: 3, 2: 2}
    # round 1, 2 -> 0: union {0: 3, 2: 2-4=-2, 4: 2} -> 3, then |2| tie 2 vs 4 -> {0: 3, 2: -2}
    result, kept = sparse.reference_gtopk(accs, 2)
    assert result.tolist() == [3, 0, -2, 0, 0]
    assert [k.tolist() for k in kept] == [[0], [2], [2]]
    result_c, kept_c = sparse.reference_gtopk(accs, 2, counted_only=True)
    assert torch.equal(result_c, result) and [k.tolist() for k in kept_c] == [[0], [2], [2]]


def test_reference_gtopk_intersection_residuals_can_lose_a_value():
    """Rank 1's index 0 is dropped in round 0 (1 -> 0), then reaches G through ranks 2 and 3."""
    accs = [t([0, 5]), t([3, 0]), t([4, 0]), t([4, 0])]
    result, kept = sparse.reference_gtopk(accs, 1)
    assert result.tolist() == [8, 0]
    assert [k.tolist() for k in kept] == [[], [0], [0], [0]]  # L_r ∩ G, as the paper does
    sent = sum(acc - _residual(acc, k) for acc, k in zip(accs, kept))
    assert sent.tolist() == [11, 0]  # rank 1's 3 is in neither the result nor its residual
    _, kept_c = sparse.reference_gtopk(accs, 1, counted_only=True)
    assert [k.tolist() for k in kept_c] == [[], [], [0], [0]]
    sent = sum(acc - _residual(acc, k) for acc, k in zip(accs, kept_c))
    assert torch.equal(sent, result)


def _residual(acc, kept):
    memory = Residual(acc.numel())
    memory.update(acc, kept)
    return memory.residual


def test_reference_topk_result_is_the_sum_of_kept_entries():
    gen = torch.Generator().manual_seed(3)
    accs = [random_ints(gen, 50) for _ in range(5)]
    result, kept = sparse.reference_topk(accs, 7)
    expected = torch.zeros(50)
    for acc, k in zip(accs, kept):
        assert k.tolist() == brute_topk(acc, 7)
        expected[k] += acc[k]
    assert torch.equal(result, expected)


@pytest.mark.parametrize("kind, options", [("topk", {}), ("gtopk", {"counted_only": True})])
@pytest.mark.parametrize("workers", [1, 3, 4, 6])
def test_residual_accounting_nothing_lost_or_doubled(kind, options, workers):
    gen = torch.Generator().manual_seed(4 + workers)
    d, k, iterations = 64, 5, 6
    grads = [[random_ints(gen, d, -8, 8) for _ in range(workers)] for _ in range(iterations)]
    records = sparse.reference_iterations(kind, grads, k, **options)
    previous = [torch.zeros(d)] * workers
    for i, rec in enumerate(records):
        sent = torch.zeros(d)
        for r in range(workers):
            acc, res, kept = rec.accs[r], rec.residuals[r], rec.kept[r]
            assert torch.equal(acc, grads[i][r] + previous[r])
            assert torch.equal(res[kept], torch.zeros(kept.numel()))
            outside = torch.ones(d, dtype=torch.bool)
            outside[kept] = False
            assert torch.equal(res[outside], acc[outside])
            sent += acc - res
        assert torch.equal(sent, rec.result)  # integer values: exact in any order
        previous = rec.residuals
    # Over all iterations: everything produced was either delivered or is still held.
    produced = sum(g for it in grads for g in it)
    delivered = sum(rec.result for rec in records) + sum(records[-1].residuals)
    assert torch.equal(produced, delivered)


def test_reference_gtopk_default_residuals_keep_what_missed_the_global_set():
    gen = torch.Generator().manual_seed(5)
    d, k, workers = 64, 6, 5
    grads = [[random_ints(gen, d, -8, 8) for _ in range(workers)] for _ in range(4)]
    for rec in sparse.reference_iterations("gtopk", grads, k):
        global_idx = set(rec.result.nonzero().squeeze(1).tolist())
        for acc, res, kept in zip(rec.accs, rec.residuals, rec.kept):
            local, kept_set = set(brute_topk(acc, k)), set(kept.tolist())
            # kept = L_r ∩ G; G's entries that sum to 0 do not show in result.nonzero()
            assert local & global_idx <= kept_set <= local
            back = sorted(local - set(kept.tolist()))
            assert torch.equal(res[back], acc[back])


def test_reference_gtopk_with_one_worker_is_local_topk():
    acc = t([0, -2, 1, -0.0, 2])
    result, kept = sparse.reference_gtopk([acc], 2)
    assert result.tolist() == [0, -2, 0, 0, 2] and kept[0].tolist() == [1, 4]


def test_references_reject_bad_input():
    with pytest.raises(ValueError, match="unknown sparse reference 'dense'; valid: gtopk, topk"):
        sparse.reference_iterations("dense", [[t([1])]], 1)
    with pytest.raises(ValueError, match="rank 1"):
        sparse.reference_topk([t([1, 2]), t([1, 2, 3])], 1)
    with pytest.raises(ValueError, match="k must be"):
        sparse.reference_gtopk([t([1, 2])], 3)
    with pytest.raises(ValueError, match="float32"):
        Residual(3).accumulate(t([1, 2]))
    with pytest.raises(ValueError, match="positive int"):
        Residual(0)


# --- blocks ----------------------------------------------------------------------------------

def test_block_nonzero_and_union_with_a_short_last_block():
    x = t([0, 0, 0, 1, 0, 0, 0, -0.0, 0, 0, -2])  # blocks of 4: [0..3], [4..7], [8..10]
    assert sparse.block_nonzero(x, 4).tolist() == [True, False, True]
    assert sparse.block_nonzero(t([0, 0, 0, 0, 3]), 4).tolist() == [False, True]
    assert sparse.block_nonzero(x, 11).tolist() == [True]
    masks = [torch.tensor([True, False, False]), torch.tensor([False, False, True])]
    assert sparse.blocks_union(masks).tolist() == [True, False, True]
    with pytest.raises(ValueError, match="at least one"):
        sparse.blocks_union([])
    with pytest.raises(ValueError, match="block"):
        sparse.block_nonzero(x, 0)


def test_block_topk_hand_cases():
    # block norms^2 (block 3): [1+4=5, 9, 0+0+0=0, 4+1=5, 9] -> order 1, 4, 0, 3 (ties -> lower), 2
    x = t([1, 2, 0, 3, 0, 0, 0, 0, 0, 2, 1, 0, 0, 3])  # last block (12, 13) is short
    out, kept = sparse.block_topk(x, 3, 5)
    assert kept.tolist() == [False, True, False, False, True]  # 3 + 2 elements = 5
    assert out.tolist() == [0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]
    out, kept = sparse.block_topk(x, 3, 8)  # next block would make 8: fits
    assert kept.tolist() == [True, True, False, False, True]
    out, kept = sparse.block_topk(x, 3, 7)  # prefix stops at the first block that does not fit
    assert kept.tolist() == [False, True, False, False, True]
    out, kept = sparse.block_topk(x, 3, 1)  # budget below one block: still one block
    assert kept.tolist() == [False, True, False, False, False]
    out, kept = sparse.block_topk(x, 3, 100)  # all-zero blocks are never kept
    assert kept.tolist() == [True, True, False, True, True] and torch.equal(out, x)
    assert sparse.blocks_to_indices(kept, 3, 14).tolist() == [0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13]
    out, kept = sparse.block_topk(torch.zeros(5), 2, 4)
    assert not kept.any() and not out.any()
    assert x.tolist()[3] == 3  # input untouched
    with pytest.raises(ValueError, match="budget"):
        sparse.block_topk(x, 3, 0)


def _brute_keep(energy, block, size, budget):
    """block_topk's rule by a full Python sort: descending energy, ties to the lower index."""
    n = energy.numel()
    order = sorted(range(n), key=lambda i: (-float(energy[i]), i))
    sizes = [block] * (n - 1) + [size - (n - 1) * block]
    total, fitting = 0, 0
    for i in order:
        total += sizes[i]
        if total > budget:
            break
        fitting += 1
    mask = torch.zeros(n, dtype=torch.bool)
    mask[order[:min(max(fitting, 1), int((energy > 0).sum()))]] = True
    return mask


def test_block_keep_selects_the_prefix_a_full_sort_would():
    """The selection (kthvalue, then a sort of the blocks above it) keeps exactly the blocks a
    full stable sort keeps, with many ties, zero blocks and short last blocks."""
    g = torch.Generator().manual_seed(1)
    for _ in range(2000):
        n = int(torch.randint(1, 30, (1,), generator=g))
        block = int(torch.randint(1, 6, (1,), generator=g))
        size = (n - 1) * block + int(torch.randint(1, block + 1, (1,), generator=g))
        energy = torch.randint(0, 4, (n,), generator=g).to(torch.float64)
        budget = int(torch.randint(1, size + 3, (1,), generator=g))
        assert torch.equal(sparse.block_keep(energy, block, size, budget), _brute_keep(energy, block, size, budget))


@pytest.mark.parametrize("d", [1, 15, 16, 1000, 4097])
def test_block_energies_in_one_pass_equal_each_size_alone(d):
    x = torch.randn(d, generator=torch.Generator().manual_seed(d))
    sizes = [16, 32, 64, 256]
    together = sparse.block_energies(x, sizes)
    for b in sizes:
        alone = sparse.block_energies(x, [b])[b]
        assert together[b].shape == (-(-d // b),) and torch.allclose(together[b], alone, rtol=1e-12, atol=0)
        assert torch.equal(sparse.block_topk(x, b, max(1, d // 10), together[b])[1],
                           sparse.block_topk(x, b, max(1, d // 10))[1])
    odd = sparse.block_energies(x, [3, 4])  # not multiples of one another: each size alone
    assert torch.allclose(odd[3], (torch.cat([x, x.new_zeros(-d % 3)]).view(-1, 3).double() ** 2).sum(1))
