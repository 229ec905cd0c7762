"""BML's planner (workloads/planners/bml.py; docs/DESIGN.md, "BML schedule") as pure functions:
simulated in numpy it gives exactly the all-reduce at every server; every stage puts exactly
one tree on each NIC; bytes per NIC per stage are the closed forms; sends stay between one-hop
neighbours on the stage's level; the per-switch groups are the topology's switches; bad input
fails in one line. The executor is also run here against in-process fake process groups
(threads, no sockets)."""
import json
import threading
from collections import defaultdict

import numpy as np
import pytest
import torch

from tests.threaded_comm import run_ranks
from topologies import spec
from topologies.bcube import server_name
from workloads.algorithms import base, bml
from workloads.planners import bml as schedule

pytestmark = pytest.mark.unit

SHAPES = ((2, 2), (3, 2), (4, 2), (2, 3), (3, 3))
B = base.DTYPE_BYTES


def ctx(n, k, elements, **kw):
    # Uneven layers on purpose: the planner must only care about the total.
    layers = (elements,) if elements < 3 else (elements // 3, elements - elements // 3)
    return base.PlanContext(workers=kw.pop("workers", n**k), layer_sizes=layers,
                            options=kw.pop("options", {"n": n, "k": k}), **kw)


def make(n, k, elements):
    algo, plan = base.plan_for("bml", ctx(n, k, elements))
    return algo, json.loads(json.dumps(plan))  # what the worker reads from job.json


def sizes(n, k):
    """Divisible by k*N, not divisible, and fewer elements than blocks (empty blocks)."""
    N = n**k
    return (k * N * 7, k * N * 5 + 3, 1009, k * N - 1, 5)


def simulate(plan, data):
    """Apply messages(plan) stage by stage on per-server copies of `data` (N x E integers):
    an aggregation message adds the sender's values at the start of the stage into the
    receiver's range, a broadcast message overwrites it. Trees touch disjoint ranges."""
    bufs = data.copy()
    by_stage = defaultdict(list)
    for msg in schedule.messages(plan):
        by_stage[(msg[0], msg[1])].append(msg)
    stages = sorted(by_stage, key=lambda key: (key[1], key[0]))
    for key in stages:
        snap = bufs.copy()
        for _, _, phase, _, src, dst, start, end in by_stage[key]:
            if phase == "aggregate":
                bufs[dst, start:end] += snap[src, start:end]
            else:
                bufs[dst, start:end] = snap[src, start:end]
    return bufs


def digits_differ(a, b, n, k):
    return [l for l in range(k) if bml.digit(a, l, n) != bml.digit(b, l, n)]


@pytest.mark.parametrize("n,k", SHAPES)
def test_simulated_plan_is_an_all_reduce_at_every_server(n, k):
    rng = np.random.default_rng(n * 10 + k)
    for e in sizes(n, k):
        _, plan = make(n, k, e)
        data = rng.integers(-1000, 1000, size=(n**k, e), dtype=np.int64)
        out = simulate(plan, data)
        assert (out == data.sum(axis=0)).all(), f"BCube({n},{k}) E={e}"


@pytest.mark.parametrize("n,k", SHAPES)
def test_aggregation_alone_is_a_reduce_scatter_of_one_block_per_tree(n, k):
    e = k * n**k * 3 + 2
    _, plan = make(n, k, e)
    data = np.random.default_rng(1).integers(-50, 50, size=(n**k, e), dtype=np.int64)
    agg = {"trees": plan["trees"], **{key: v for key, v in plan.items() if key != "trees"}}
    agg["trees"] = [dict(t, stages=t["stages"][:k]) for t in plan["trees"]]
    out = simulate(agg, data)
    total = data.sum(axis=0)
    owned = np.zeros(e, dtype=int)
    for i in range(n**k):
        for p in range(k):
            _, _, recvs = schedule.rank_stage(plan, p, k - 1, i)  # last aggregation: own block
            start, end = recvs[0][1:]
            assert (out[i, start:end] == total[start:end]).all()
            owned[start:end] += 1
    assert (owned == 1).all()  # the blocks partition the gradient, one owner each


@pytest.mark.parametrize("n,k", SHAPES)
def test_every_stage_puts_exactly_one_tree_on_each_nic(n, k):
    _, plan = make(n, k, k * n**k * 4)  # divisible: no empty block hides a tree
    for g in range(2 * k):
        levels = [t["stages"][g]["level"] for t in plan["trees"]]
        assert sorted(levels) == list(range(k))
    trees = defaultdict(set)
    for p, g, _, level, src, dst, _, _ in schedule.messages(plan):
        trees[(g, src, level)].add(p)
        trees[(g, dst, level)].add(p)  # the receiving side of the NIC too
    assert set(trees) == {(g, i, l) for g in range(2 * k) for i in range(n**k) for l in range(k)}
    assert all(len(ps) == 1 for ps in trees.values())


@pytest.mark.parametrize("n,k", SHAPES)
def test_tree_levels_follow_p_plus_s_then_reverse(n, k):
    _, plan = make(n, k, 1000)
    for p, tree in enumerate(plan["trees"]):
        for s in range(k):
            agg, bc = tree["stages"][s], tree["stages"][k + s]
            assert (agg["phase"], agg["step"], agg["level"]) == ("aggregate", s, (p + s) % k)
            assert (bc["phase"], bc["step"], bc["level"]) == ("broadcast", s, (p + k - 1 - s) % k)


@pytest.mark.parametrize("n,k", SHAPES)
def test_bytes_per_nic_per_stage_equal_the_closed_forms(n, k):
    N = n**k
    e = k * N * 6
    m = B * e
    _, plan = make(n, k, e)
    sent = defaultdict(int)
    for _, g, _, level, src, _, start, end in schedule.messages(plan):
        sent[(g, src, level)] += B * (end - start)
    for g in range(2 * k):
        s = g if g < k else g - k
        want = (n - 1) * m // (k * n ** (s + 1)) if g < k else (n - 1) * n**s * m // (k * N)
        for i in range(N):
            for level in range(k):
                assert sent[(g, i, level)] == want, (g, i, level)


@pytest.mark.parametrize("n,k", SHAPES)
def test_traffic_totals_per_nic(n, k):
    N = n**k
    for e in sizes(n, k):
        algo, plan = make(n, k, e)
        m = B * e
        flows = algo.traffic(plan)
        tx, rx = defaultdict(int), defaultdict(int)
        for f in flows:
            assert f.bytes > 0
            tx[(f.src, f.nic)] += f.bytes
            rx[(f.dst, f.nic)] += f.bytes
        # Every element crosses the network 2(N-1) times in all, whatever the rounding.
        assert sum(f.bytes for f in flows) == 2 * (N - 1) * m
        # Per NIC: the plan's true counts, from the messages themselves.
        counted = defaultdict(int)
        for *_, level, src, _, start, end in schedule.messages(plan):
            counted[(src, level)] += B * (end - start)
        assert dict(tx) == {key: v for key, v in counted.items() if v}
        if e % (k * N) == 0:
            want = 2 * (N - 1) * m // (k * N)
            assert set(tx.values()) == {want} and set(rx.values()) == {want}
            assert len(tx) == N * k
        else:  # a block is within 2 elements of E/(kN); each NIC sends 2(N-1) blocks' worth
            for v in tx.values():
                assert abs(v - 2 * (N - 1) * m / (k * N)) <= B * 2 * 2 * (N - 1)


@pytest.mark.parametrize("n,k", SHAPES)
def test_sends_only_to_one_hop_neighbours_on_the_stage_level(n, k):
    _, plan = make(n, k, 12345)
    count = 0
    for p, g, _, level, src, dst, start, end in schedule.messages(plan):
        assert level == plan["trees"][p]["stages"][g]["level"]
        assert digits_differ(src, dst, n, k) == [level]
        assert plan["trees"][p]["part"][0] <= start <= end <= plan["trees"][p]["part"][1]
        count += 1
    # n-1 messages per server per tree per stage
    assert count == k * 2 * k * n**k * (n - 1)


@pytest.mark.parametrize("n,k", SHAPES)
def test_a_stage_never_sends_what_it_receives_into(n, k):
    """The executor reads send ranges while receiving: they must not overlap."""
    _, plan = make(n, k, 999)
    for p in range(k):
        for g in range(2 * k):
            for i in range(n**k):
                _, sends, recvs = schedule.rank_stage(plan, p, g, i)
                for _, s0, s1 in sends:
                    for _, r0, r1 in recvs:
                        assert s1 <= r0 or r1 <= s0 or s0 == s1 or r0 == r1


@pytest.mark.parametrize("n,k", SHAPES)
def test_groups_are_the_topology_switches(n, k):
    topo = spec.build(f"bcube,n={n},k={k}")
    _, plan = base.plan_for("bml", base.PlanContext(
        workers=n**k, layer_sizes=(1000,), nics=k, topology=topo,
        hosts=tuple(server_name(r, n, k) for r in range(n**k))))
    groups = bml.groups(plan)
    switches = {name for name, node in topo.nodes.items() if node.kind == "switch"}
    assert len(groups) == len(switches) == k * n ** (k - 1)
    assert {g.id.removeprefix("bml-") for g in groups} == switches
    for g in groups:
        sw = g.id.removeprefix("bml-")
        members = {}
        for link in topo.links:
            ends = {topo.intfs[link.a].node: topo.intfs[link.a], topo.intfs[link.b].node: topo.intfs[link.b]}
            if sw in ends:
                host = next(node for node in ends if node != sw)
                members[host] = ends[host].port  # the host's NIC index
        assert set(members) == {server_name(r, n, k) for r in g.ranks}
        assert set(members.values()) == {g.nic}
        assert [bml.digit(r, g.nic, n) for r in g.ranks] == list(range(n))  # group rank = digit
    # every server is in exactly one group per level
    for level in range(k):
        ranks = sorted(r for g in groups if g.nic == level for r in g.ranks)
        assert ranks == list(range(n**k))


def test_plan_from_topology_equals_plan_from_options():
    topo = spec.build("bcube,n=3,k=2")
    from_topo = bml.plan(base.PlanContext(workers=9, layer_sizes=(77, 1000), topology=topo))
    from_opts = bml.plan(ctx(3, 2, 1077))
    assert from_topo == from_opts
    assert json.loads(json.dumps(from_topo)) == from_topo


def test_registry_knows_bml():
    algo = base.get("bml")
    assert algo.topologies == ("bcube",) and not algo.uses_servers


@pytest.mark.parametrize("make_ctx,pattern", [
    (lambda: base.PlanContext(workers=16, layer_sizes=(100,), topology=spec.build("fattree,k=4")),
     r"bml runs on bcube only.*fattree"),
    (lambda: ctx(2, 2, 100, options={}), r"bml runs on bcube only: give a bcube topology, or options n and k"),
    (lambda: ctx(3, 2, 100, workers=8), r"BCube\(3,2\) has 9 servers but workers=8"),
    (lambda: base.PlanContext(workers=4, layer_sizes=(100,), topology=spec.build("bcube,n=3,k=2")),
     r"BCube\(3,2\) has 9 servers but workers=4"),
    (lambda: ctx(1, 2, 100, workers=2), r"not a BCube: need n >= 2"),
    (lambda: ctx(2, 0, 100, workers=2), r"not a BCube: need n >= 2 .* k >= 1"),
    (lambda: ctx(2, 2, 100, options={"n": 2, "k": 2, "trees": 3}), r"unknown option\(s\) trees; valid: n, k"),
    (lambda: ctx(2, 2, 100, options={"n": "two", "k": 2}), r"option n must be an integer"),
    (lambda: base.PlanContext(workers=9, layer_sizes=(100,), topology=spec.build("bcube,n=3,k=2"),
                              options={"n": 4}), r"option n=4 contradicts the topology bcube\(3,2\)"),
    (lambda: base.PlanContext(workers=4, layer_sizes=(100,), topology=spec.build("bcube,n=2,k=2"),
                              hosts=("h00", "h10", "h01", "h11")), r"rank r must run on server r.*rank 1 is on h10"),
])
def test_bad_input_is_rejected_in_one_line(make_ctx, pattern):
    for call in (lambda c: base.plan_for("bml", c), lambda c: bml.plan(c)):
        with pytest.raises(ValueError, match=pattern) as err:
            call(make_ctx())
        assert "\n" not in str(err.value)


@pytest.mark.parametrize("make_ctx,pattern", [
    (lambda: ctx(2, 2, 100, servers=2), r"^bml does not use dedicated servers \(servers=2\); only .*ps.* do$"),
    (lambda: ctx(2, 2, 100, workers=1), r"^bml does not run with 1 workers; valid: n\^k of its BCube\(n,k\)"),
])
def test_what_bml_declares_it_accepts_is_refused_in_one_line(make_ctx, pattern):
    with pytest.raises(base.NotAccepted, match=pattern):
        base.plan_for("bml", make_ctx())


# --- the executor against in-process fake groups ------------------------------------------
class _Mailbox:
    """Point-to-point messages between threads, matched by (group, src, dst, tag) like Gloo."""

    def __init__(self):
        self.cond = threading.Condition()
        self.box = {}

    def put(self, key, tensor):
        with self.cond:
            assert key not in self.box, f"two messages in flight with the same key {key}"
            self.box[key] = tensor.clone()
            self.cond.notify_all()

    def take(self, key, timeout=20):
        with self.cond:
            assert self.cond.wait_for(lambda: key in self.box, timeout), f"no message {key}"
            return self.box.pop(key)


class _Done:
    def wait(self):
        return True


class _Recv:
    def __init__(self, mailbox, key, into):
        self.mailbox, self.key, self.into = mailbox, key, into

    def wait(self):
        got = self.mailbox.take(self.key)
        assert got.numel() == self.into.numel()
        self.into.copy_(got)
        return True


class _FakePG:
    def __init__(self, gid, ranks, me, mailbox):
        self.gid, self.ranks, self.me, self.mailbox = gid, ranks, me, mailbox

    def send(self, tensors, dst, tag):
        self.mailbox.put((self.gid, self.me, self.ranks[dst], tag), tensors[0])
        return _Done()

    def recv(self, tensors, src, tag):
        return _Recv(self.mailbox, (self.gid, self.ranks[src], self.me, tag), tensors[0])


class _FakeComm:
    def __init__(self, rank, world, groups, mailbox):
        self.rank, self.world = rank, world
        self._groups = {g.id: (_FakePG(g.id, g.ranks, rank, mailbox), g.ranks) for g in groups if rank in g.ranks}
        self.events, self.sent, self.messages = [], {}, {}

    def group(self, gid):
        if gid not in self._groups:
            raise ValueError(f"rank {self.rank} is not in a group {gid!r}; its groups: (none)")
        return self._groups[gid]

    def count(self, dst, nic, nbytes):  # as workloads.comm.Comm.count
        self.sent[(dst, nic)] = self.sent.get((dst, nic), 0) + nbytes
        self.messages[(dst, nic)] = self.messages.get((dst, nic), 0) + 1

    def record(self, **event):
        self.events.append(event)


@pytest.mark.parametrize("n,k", SHAPES)
def test_executor_with_fake_groups_returns_the_sum(n, k):
    N = n**k
    e = k * N * 3 + 5
    algo, plan = make(n, k, e)
    mailbox = _Mailbox()
    comms = [_FakeComm(r, N, algo.groups(plan), mailbox) for r in range(N)]
    grads = [torch.randint(-9, 10, (e,), generator=torch.Generator().manual_seed(r)).float() for r in range(N)]
    want = torch.stack(grads).sum(0)
    out = run_ranks(algo.execute, plan, comms, grads)
    for r in range(N):
        assert torch.equal(out[r], want), r
        stages = sorted((ev["tree"], ev["stage"]) for ev in comms[r].events)
        assert stages == [(p, g) for p in range(k) for g in range(2 * k)]
        sent = defaultdict(int)
        for (dst, nic), v in comms[r].sent.items():
            sent[(dst, nic)] += v
        assert dict(sent) == {(f.dst, f.nic): f.bytes for f in algo.traffic(plan) if f.src == r}
        for ev in comms[r].events:
            assert ev["event"] == "stage" and ev["nic"] == plan["trees"][ev["tree"]]["stages"][ev["stage"]]["level"]
            assert ev["t0"] <= ev["t1"]


def test_executor_without_switch_groups_says_how_to_build_them():
    algo, plan = make(2, 2, 100)
    with pytest.raises(ValueError, match=r"bml needs its per-switch groups: .*'bml-s0_0'.*groups=bml.groups\(plan\)"):
        algo.execute(plan, _FakeComm(0, 4, [], _Mailbox()), torch.zeros(100))


def test_a_plan_for_another_size_is_refused_before_executing():
    _, plan = make(2, 2, 100)
    with pytest.raises(ValueError, match="bml plan is for 4 ranks and 100 elements, got 4 ranks and 99"):
        base.check_plan(plan, 4, 99)
