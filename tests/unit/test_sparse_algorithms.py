"""`topk` and `gtopk` as pure functions: k from density, option errors, closed-form traffic, plans.

No process runs here except the P = 1 executor (it talks to nobody); the distributed
executors are checked against their references in tests/parallel/test_sparse_algorithms.py.
"""
import json
import math

import pytest
import torch

from workloads import sparse
from workloads.algorithms import base, gtopk, topk
from workloads.gradients import SyntheticGradients

pytestmark = pytest.mark.unit


def plan(spec, workers, sizes=(600, 401)):
    return base.plan_for(spec, base.PlanContext(workers, tuple(sizes)))


# --- k from density --------------------------------------------------------------------------

@pytest.mark.parametrize("density, elements, k", [
    (0.001, 1000, 1), (0.001, 1001, 2),   # ceil, not round: 1.001 -> 2
    (0.0015, 1000, 2),                    # 1.5 -> 2
    (1e-12, 5, 1),                        # never 0
    (1, 7, 7), (1.0, 1, 1), (0.5, 1, 1),  # k == d
    (0.07, 100, 7), (0.14, 100, 14),      # float products 7.000000000000001, 14.000000000000002
    (0.57, 100, 57),                      # 56.99999999999999
])
def test_k_is_ceil_of_density_times_elements_on_the_written_decimal(density, elements, k):
    assert topk.k_of(density, elements) == k
    assert plan(f"gtopk,density={density}", 3, (elements,))[1]["k"] == k


@pytest.mark.parametrize("density, elements", [(0.0, 10), (-0.5, 10), (1.5, 10), (float("nan"), 10),
                                               (float("inf"), 10), (0.5, 0)])
def test_k_of_refuses_what_gives_no_valid_k_in_one_line(density, elements):
    with pytest.raises(ValueError) as err:
        topk.k_of(density, elements)
    assert "\n" not in str(err.value)
    assert "positive int element count" in str(err.value) or "valid: density a number in (0, 1]" in str(err.value)


@pytest.mark.parametrize("name", ["topk", "gtopk"])
@pytest.mark.parametrize("value, why", [("0", "must be > 0"), ("-0.1", "must be > 0"), ("1.5", "must be <= 1"),
                                        ("nan", "not NaN"), ("inf", "must be <= 1"), ("abc", "could not convert")])
def test_bad_density_is_a_one_line_error_listing_what_is_valid(name, value, why):
    with pytest.raises(ValueError) as err:
        plan(f"{name},density={value}", 4)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{name}: option density={value!r} is invalid") and why in msg
    assert msg.endswith("valid: density a number in (0, 1]: k = ceil(density x gradient elements), at least 1")


def test_residual_option_is_gtopk_only_and_checked():
    assert plan("gtopk", 4)[1]["residual"] == "paper"  # the paper's rule by default
    assert plan("gtopk,residual=EXACT", 4)[1]["residual"] == "exact"
    with pytest.raises(ValueError, match=r"^gtopk: option residual='x' is invalid \(must be one of paper, exact\); "
                                         r"valid: residual paper .* or exact .*$"):
        plan("gtopk,residual=x", 4)
    with pytest.raises(ValueError, match=r"^topk: unknown option\(s\) residual; valid: density$"):
        plan("topk,residual=paper", 4)


@pytest.mark.parametrize("name", ["topk", "gtopk"])
def test_gradients_whose_indices_overflow_int32_are_refused(name):
    plan(name, 2, (2**31,))  # index 2^31 - 1 still fits
    with pytest.raises(ValueError, match=rf"^{name}: 2147483649 elements do not fit the int32 indices"):
        plan(name, 2, (2**31 + 1,))


# --- traffic closed forms --------------------------------------------------------------------

def lowbit(r):
    return r & -r


def gtopk_children(r, workers):
    rounds = math.ceil(math.log2(workers)) if workers > 1 else 0
    limit = rounds if r == 0 else (lowbit(r).bit_length() - 1)  # j < trailing zeros of r
    return [r + (1 << j) for j in range(limit) if r + (1 << j) < workers]


@pytest.mark.parametrize("workers", range(2, 34))
def test_topk_ring_allgather_closed_form(workers):
    algo, p = plan("topk,density=0.01", workers)
    k = p["k"]
    assert k == 11 and p["allgather"] == "ring"
    assert algo.traffic(p) == [base.Flow(r, (r + 1) % workers, 0, (workers - 1) * 8 * k, workers - 1)
                               for r in range(workers)]
    received = {r: sum(f.bytes for f in algo.traffic(p) if f.dst == r) for r in range(workers)}
    assert received == {r: (workers - 1) * k * 8 for r in range(workers)}  # (P-1)k pairs each
    steps = algo.steps(p)
    assert len(steps) == workers - 1 and all(len(s) == workers and {f.bytes for f in s} == {8 * k} for s in steps)


@pytest.mark.parametrize("residual", ["paper", "exact"])
@pytest.mark.parametrize("workers", range(2, 34))
def test_gtopk_tree_closed_form(workers, residual):
    algo, p = plan(f"gtopk,density=0.05,residual={residual}", workers)
    k, rounds = p["k"], math.ceil(math.log2(workers))
    up, down = 8 * k, 8 * k + (4 * math.ceil(k / 32) if residual == "exact" else 0)
    assert k == 51 and p["mask_bytes"] == down - up
    expected = sorted([base.Flow(r, r - lowbit(r), 0, up, 1) for r in range(1, workers)]
                      + [base.Flow(r, c, 0, down, 1) for r in range(workers) for c in gtopk_children(r, workers)],
                      key=lambda f: (f.src, f.dst))
    assert algo.traffic(p) == expected
    assert sum(f.messages for f in expected) == 2 * (workers - 1)
    assert sum(f.bytes for f in expected) == (workers - 1) * (up + down)
    steps = algo.steps(p)
    assert len(steps) == 2 * rounds
    for r in range(workers):
        up_in = [f for s in steps[:rounds] for f in s if f.dst == r]
        down_out = [f for s in steps[rounds:] for f in s if f.src == r]
        assert len(up_in) <= rounds and len(down_out) <= rounds  # O(k log P), not (P-1)k
        assert len([f for s in steps[:rounds] for f in s if f.src == r]) == (r != 0)  # each sends once
    assert len([f for s in steps[:rounds] for f in s if f.dst == 0]) == rounds  # the root merges R sets
    for s in steps:  # within a round a rank talks to at most one peer
        ranks = [x for f in s for x in (f.src, f.dst)]
        assert len(ranks) == len(set(ranks))


def test_busiest_receiver_gets_log2_p_sets_in_gtopk_and_p_minus_1_in_topk():
    for workers in range(2, 34):
        received = {}
        for name in ("topk", "gtopk"):
            algo, p = plan(f"{name},density=0.05", workers)
            received[name] = max(sum(f.bytes for f in algo.traffic(p) if f.dst == r) for r in range(workers))
        assert received["topk"] == (workers - 1) * 8 * 51
        assert received["gtopk"] == math.ceil(math.log2(workers)) * 8 * 51  # equal for P = 2, 3; less from 4


@pytest.mark.parametrize("workers", [1, 2, 5, 8, 33])
def test_plans_are_json_and_roles_match_the_tree(workers):
    for spec in ("topk", "gtopk", "gtopk,residual=exact,density=0.2"):
        algo, p = plan(spec, workers)
        again = json.loads(json.dumps(p))
        assert again == p and algo.traffic(again) == algo.traffic(p)
    _, p = plan("gtopk", workers)
    for r in range(workers):
        role = sparse.gtopk_roles(workers, r)
        assert gtopk.roles(p, r) == {key: [list(x) for x in getattr(role, key)]
                                     for key in ("reduce_recv", "reduce_send", "bcast_recv", "bcast_send")}


def test_both_are_registered_with_an_oracle_and_plan_sized_bytes():
    for name in ("topk", "gtopk"):
        algo = base.get(name)
        assert algo.reference is not None and not algo.data_dependent
        assert algo.option_help().startswith("density=0.001 (a number in (0, 1]")
    assert base.spec_of("gtopk", plan("gtopk,residual=exact", 3)[0].parse_options({"residual": "exact"})) == \
        "gtopk,density=0.001,residual=exact"


# --- oracle memory and the P = 1 executor ----------------------------------------------------

class Solo:
    """The Comm of a single rank: nobody to talk to."""
    rank = 0

    def record(self, **event):
        pass


@pytest.mark.parametrize("spec, kind, options", [("topk,density=0.1", "topk", {}),
                                                 ("gtopk,density=0.1", "gtopk", {}),
                                                 ("gtopk,density=0.1,residual=exact", "gtopk",
                                                  {"counted_only": True})])
def test_reference_keeps_every_residual_across_iterations(spec, kind, options):
    algo, p = plan(spec, 4, (97,))
    grads = SyntheticGradients(4, 97, 3, {"block": 8, "zero_blocks": 0.5})
    inputs = [grads.all_workers(i) for i in range(5)]
    records = sparse.reference_iterations(kind, inputs, p["k"], **options)
    memory = {}
    for xs, rec in zip(inputs, records):
        assert torch.equal(algo.reference(p, xs, memory), rec.result)
        assert all(torch.equal(m.residual, r) for m, r in zip(memory["residuals"], rec.residuals))


@pytest.mark.parametrize("spec", ["topk,density=0.1", "gtopk,density=0.1", "gtopk,density=0.1,residual=exact"])
def test_a_single_rank_keeps_its_top_k_and_the_rest_as_residual(spec):
    algo, p = plan(spec, 1, (50, 47))
    state, memory = base.SyncState(rank=0, workers=1, world=1), {}
    grads = SyntheticGradients(1, 97, 2)
    for it in range(4):
        state.begin(it)
        x = grads.all_workers(it)
        expected = algo.reference(p, x, memory)
        assert torch.equal(algo.execute(p, Solo(), x[0].clone(), state), expected)
        assert torch.equal(state.memory["residual"].residual, memory["residuals"][0].residual)
        assert state.observed["k"] == 10 and state.observed["kept"] == 10 and state.observed["pairs_sent"] == 0
        # the compressor's CPU, measured apart: selection, then merges and the residual's update
        assert state.observed["sparsify_seconds"] >= 0 and state.observed["merge_seconds"] >= 0


def test_survival_bits_round_trip():
    gen = torch.Generator().manual_seed(0)
    for k in (1, 7, 8, 31, 32, 33, 64, 100):
        mask = torch.rand(k, generator=gen) < 0.5
        words = gtopk._bits(mask, gtopk.mask_bytes(k))
        assert words.dtype == torch.int32 and words.numel() * 4 == gtopk.mask_bytes(k)
        assert torch.equal(gtopk._unbits(words, k), mask)
