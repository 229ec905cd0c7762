"""Planners of the baseline algorithms, as pure functions: traffic equals docs/DESIGN.md's closed
forms, plans survive JSON, bad input fails with a message that lists what is valid."""
import json

import pytest

from workloads.algorithms import base, gloo

pytestmark = pytest.mark.unit

WORKERS = (1, 2, 3, 4, 7, 16)
# Divisible and not, fewer elements than ranks, and large enough for Gloo's > 2N segments.
ELEMENTS = (1, 5, 1000, 12347, 7 * 16 * 4096, 4_000_003)


def ctx(workers, elements, servers=0, **options):
    # Uneven layers on purpose: planners must only care about the total.
    layers = (elements,) if elements < 3 else (elements // 3, elements - elements // 3)
    return base.PlanContext(workers=workers, layer_sizes=layers, servers=servers, options=options)


def tx_rx(flows):
    tx, rx = {}, {}
    for f in flows:
        tx[f.src] = tx.get(f.src, 0) + f.bytes
        rx[f.dst] = rx.get(f.dst, 0) + f.bytes
    return tx, rx


def test_registry_lists_the_baselines():
    assert {"gloo", "ring", "ps"} <= set(base.registry())
    assert base.get("ps").uses_servers and not base.get("ring").uses_servers


def test_unknown_algorithm_lists_valid_names():
    with pytest.raises(ValueError, match="unknown algorithm 'allreduce'.*valid:.*gloo.*ps.*ring"):
        base.get("allreduce")


@pytest.mark.parametrize("n", WORKERS)
@pytest.mark.parametrize("e", ELEMENTS)
def test_ring_sends_2_n_minus_1_over_n_to_successor(n, e):
    algo, plan = base.plan_for("ring", ctx(n, e))
    flows = algo.traffic(plan)
    m = 4 * e
    if n == 1:
        assert flows == []
        return
    assert sorted((f.src, f.dst) for f in flows) == sorted((r, (r + 1) % n) for r in range(n))
    assert sum(f.bytes for f in flows) == 2 * (n - 1) * m
    for f in flows:  # uneven chunks differ by one element, two chunks are left out per rank
        assert abs(f.bytes - 2 * (n - 1) * m / n) <= 2 * 4
        if e % n == 0:
            assert f.bytes == 2 * (n - 1) * m // n


def test_ring_follows_the_planned_order():
    algo, plan = base.plan_for("ring", ctx(4, 4000, order=[2, 0, 3, 1]))
    assert sorted((f.src, f.dst) for f in algo.traffic(plan)) == [(0, 3), (1, 2), (2, 0), (3, 1)]


@pytest.mark.parametrize("n", WORKERS)
@pytest.mark.parametrize("e", ELEMENTS)
def test_gloo_ring_sends_to_predecessor(n, e):
    algo, plan = base.plan_for("gloo", ctx(n, e))
    flows = algo.traffic(plan)
    m = 4 * e
    if n == 1:
        assert flows == []
        return
    assert sorted((f.src, f.dst) for f in flows) == sorted((r, (r - 1) % n) for r in range(n))
    assert sum(f.bytes for f in flows) == 2 * (n - 1) * m
    chunk = plan["segments"] // n * plan["segment_bytes"]
    for f in flows:  # Gloo's chunks are whole segments: each may be off by up to a chunk
        assert abs(f.bytes - 2 * (n - 1) * m / n) <= 2 * chunk


@pytest.mark.parametrize("n", WORKERS)
def test_gloo_even_buffer_matches_closed_form_exactly(n):
    e = 2 * n * 1024  # 2N segments of exactly 4 KiB
    algo, plan = base.plan_for("gloo", ctx(n, e))
    assert all(f.bytes == 2 * (n - 1) * 4 * e // n for f in algo.traffic(plan))


def test_gloo_segments_follow_gloo_source():
    assert gloo.segments(4 * 1000, 3) == (6, 668)  # minimum 2N, rounded up to whole floats
    assert gloo.segments(5 * 2**20 + 12, 2) == (6, 873816)  # ceil(B / 1 MiB) = 6 > 2N
    assert sum(gloo.chunk_bytes(4_000_012, 3)) == 4_000_012
    assert gloo.chunk_bytes(8, 7) == [8, 0, 0, 0, 0, 0, 0]  # 14 segments of 4 B, 2 per rank


@pytest.mark.parametrize("n", WORKERS)
@pytest.mark.parametrize("e", ELEMENTS)
def test_ps_colocated_pushes_and_pulls_n_minus_1_over_n(n, e):
    algo, plan = base.plan_for("ps", ctx(n, e))
    flows = algo.traffic(plan)
    m = 4 * e
    assert all(f.src < n and f.dst < n and f.src != f.dst for f in flows)
    assert sum(f.bytes for f in flows) == 2 * (n - 1) * m  # (N-1)M/N push + pull per worker
    if e % n == 0:
        tx, rx = tx_rx(flows)
        for r in range(n) if n > 1 else ():
            assert tx[r] == rx[r] == 2 * (n - 1) * m // n


@pytest.mark.parametrize("n", WORKERS)
@pytest.mark.parametrize("s", (1, 2, 3))
@pytest.mark.parametrize("e", ELEMENTS)
def test_ps_dedicated_servers(n, s, e):
    algo, plan = base.plan_for("ps", ctx(n, e, servers=s))
    flows = algo.traffic(plan)
    m = 4 * e
    tx, rx = tx_rx(flows)
    for w in range(n):  # each worker pushes M and pulls M
        assert tx[w] == rx[w] == m
    for k, (start, end) in enumerate(plan["shards"]):  # each server gets and sends N * its shard
        server = n + k
        assert tx.get(server, 0) == rx.get(server, 0) == n * 4 * (end - start)
        if e % s == 0:
            assert tx[server] == n * m // s
    assert all((f.src < n) != (f.dst < n) for f in flows)  # only worker <-> server traffic


@pytest.mark.parametrize("name,servers", [("gloo", 0), ("ring", 0), ("ps", 0), ("ps", 2)])
def test_plans_are_json_and_traffic_reads_only_the_plan(name, servers):
    algo, plan = base.plan_for(name, ctx(7, 12347, servers=servers))
    again = json.loads(json.dumps(plan))
    assert again == plan
    assert algo.traffic(again) == algo.traffic(plan)
    assert algo.groups(again) == []


def test_ring_order_must_be_a_permutation():
    with pytest.raises(ValueError, match=r"permutation of the worker ranks 0\.\.3"):
        base.plan_for("ring", ctx(4, 100, order=[0, 1, 1, 3]))


@pytest.mark.parametrize("name", ["gloo", "ring", "ps"])
def test_unknown_option_lists_valid_options(name):
    with pytest.raises(ValueError, match=rf"{name}: unknown option\(s\) chunk_kb; valid: "):
        base.plan_for(name, ctx(2, 100, chunk_kb=64))


@pytest.mark.parametrize("name", ["gloo", "ring"])
def test_servers_only_for_algorithms_that_use_them(name):
    with pytest.raises(ValueError, match=rf"{name} does not use dedicated servers.*only .*ps.* do"):
        base.plan_for(name, ctx(4, 100, servers=2))


def test_bad_context_is_one_line_value_error():
    with pytest.raises(ValueError, match="at least 1 worker"):
        base.plan_for("ring", base.PlanContext(workers=0, layer_sizes=(10,)))
    with pytest.raises(ValueError, match="layer sizes must be positive"):
        base.plan_for("ps", base.PlanContext(workers=2, layer_sizes=(10, 0)))


def test_an_algorithm_declares_the_worker_counts_it_takes_and_is_refused_in_one_line(monkeypatch):
    """The declaration alone (`workers=base.POWERS_OF_TWO`) is what a new algorithm writes:
    check_context refuses other counts with one line naming the nearest valid ones."""
    ring = base.get("ring")
    pow2 = base.Algorithm(name="_pow2", summary="test only", plan=ring.plan, traffic=ring.traffic,
                          execute=ring.execute, validate=ring.validate, options=ring.options,
                          workers=base.POWERS_OF_TWO)
    monkeypatch.setitem(base.registry(), "_pow2", pow2)
    assert [p for p in range(1, 33) if pow2.refusal(p) is None] == [1, 2, 4, 8, 16, 32]
    with pytest.raises(base.NotAccepted) as err:
        base.plan_for("_pow2", ctx(12, 100))
    assert str(err.value) == "_pow2 does not run with 12 workers; valid: a power of two (1, 2, 4, 8, ...), e.g. 8 or 16"
    assert base.plan_for("_pow2", ctx(16, 100))[1]["workers"] == 16
    # servers and topology kinds go through the same one line
    assert "does not use dedicated servers" in pow2.refusal(4, 2)
    assert base.get("bml").refusal(9, 0, build_topology("fattree,k=4")) == "bml runs on bcube only, not fattree(4)"
    assert base.get("bml").refusal(1) == ("bml does not run with 1 workers; valid: n^k of its BCube(n,k), one per "
                                          "server (any count >= 2), e.g. 2")
    assert base.get("ps").refusal(7, 3) is None and base.ANY_COUNT.ok(1) and not base.ANY_COUNT.ok(0)
    assert "workers a power of two" in pow2.accepts_help() and "any topology" in pow2.accepts_help()


def build_topology(spec):
    from topologies.spec import build

    return build(spec)


def test_merge_flows_sums_per_pair_and_drops_empty():
    flows = [base.Flow(0, 1, 0, 5), base.Flow(0, 1, 0, 7), base.Flow(1, 0, 1, 0), base.Flow(1, 0, 0, 2)]
    assert base.merge_flows(flows) == [base.Flow(0, 1, 0, 12, 2), base.Flow(1, 0, 0, 2, 1)]
