"""`forest` against a plain all_reduce, with real Gloo processes on localhost (`lo` per NIC).

Packings: the planner's default on a complete graph of equal links (several trees), one
tree (max_trees=1), the same with the children's receives all posted at the start (window=0)
and one chunk ahead (window=1), uneven rates (a Fat-Tree whose host links differ),
and a BCube whose trees use both NICs. For every case and rank: the result equals the
all-reduce (exactly for integer-valued gradients, and every rank holds the same bits), and
the bytes and messages handed to Comm equal traffic(plan).
"""
import hashlib
import json
import traceback

import pytest
import torch

from topologies.spec import build
from workloads.algorithms import base
from workloads.comm import Comm
from workloads.gradients import GradientStream
from tests.parallel.spawn import run_worker_processes, spawn_ranks

pytestmark = pytest.mark.parallel


WORLDS = (2, 3, 4, 5)
SIZES = (1, 7, 12347, 300_003)  # fewer elements than trees, uneven, many chunks per tree
SPAWN_TIMEOUT_S = 60


def _layers(size):
    cut = [size // 7, size // 2] if size >= 3 else []
    bounds = [0, *cut, size]
    return [(f"l{i}", b - a, 0.0) for i, (a, b) in enumerate(zip(bounds, bounds[1:])) if b > a]


def _contexts(world, size):
    """name -> PlanContext of every packing the test runs at this world size."""
    sizes = tuple(n for _, n, _ in _layers(size))
    ft = build("fattree,k=4")  # host links of 20, 16, 12, 10, 8 Mbit/s: trees of uneven rates
    ft.set_bandwidth(dict(zip(ft.hosts(), (20.0, 16.0, 12.0, 10.0, 8.0))))
    even = build("fattree,k=4")
    out = {
        "complete": base.PlanContext(world, sizes),
        "one-tree": base.PlanContext(world, sizes, options={"max_trees": 1}),
        # the children's receives: every one posted at the start, or one chunk ahead (buffer reuse)
        "all-posted": base.PlanContext(world, sizes, options={"window": 0}),
        "window-one": base.PlanContext(world, sizes, options={"window": 1, "chunk_elements": 4096}),
        "fattree-uneven": base.PlanContext(world, sizes, topology=ft, hosts=tuple(ft.hosts()[:world]),
                                           options={"fallback": "none"}),
        # homogeneous: the planner falls back to the ring, which the forest then executes
        "fattree-even": base.PlanContext(world, sizes, topology=even, hosts=tuple(even.hosts()[:world])),
    }
    if world <= 4:
        bc = build("bcube,n=2,k=2")
        bc.set_bandwidth({"level1": 5.0})
        out["bcube-2nics"] = base.PlanContext(world, sizes, nics=2, topology=bc, hosts=tuple(bc.hosts()[:world]),
                                              options={"chunk_elements": 4096, "fallback": "none"})
    return out


def _plans(world):
    """(name, size) -> plan, made once in the parent as the runner does (the ranks fork with it)."""
    return {(name, size): base.plan_for("forest", ctx)[1]
            for size in SIZES for name, ctx in _contexts(world, size).items()}


def _run_case(comm, plan, name, size, integer):
    algo = base.get("forest")
    g = torch.Generator().manual_seed(size * 1000 + comm.rank * 7 + integer)
    grads = torch.randint(-8, 9, (size,), generator=g).float() if integer else torch.randn(size, generator=g)
    reference = grads.clone()
    comm.nic(0).allreduce([reference]).wait()
    stream = GradientStream(_layers(size), grads, dilation=0.0)
    comm.barrier()
    sent, messages, events = dict(comm.sent), dict(comm.messages), len(comm.events)
    stream.start()
    out = algo.execute(plan, comm, stream)
    return {
        "case": f"{name} size {size} {'integer' if integer else 'normal'} rank {comm.rank}",
        "equal": bool(torch.equal(out, reference)),
        "close": bool(torch.allclose(out, reference, rtol=1e-5, atol=1e-5)),
        "max_diff": float((out - reference).abs().max()),
        "digest": hashlib.sha1(out.numpy().tobytes()).hexdigest(),
        "sent": {k: v - sent.get(k, 0) for k, v in comm.sent.items() if v != sent.get(k, 0)},
        "messages": {k: v - messages.get(k, 0) for k, v in comm.messages.items() if v != messages.get(k, 0)},
        "flows": [(f.src, f.dst, f.nic, f.bytes, f.messages) for f in algo.traffic(plan)],
        "events": comm.events[events:],
        "trees": len(plan["trees"]),
        "rates": [t["rate"] for t in plan["trees"]],
        "nics": sorted({n for t in plan["trees"] for n in t["nic_up"] + t["nic_down"] if n >= 0}),
    }


def _child(rank, world, plans, store, out):
    try:
        torch.set_num_threads(1)
        comm = Comm(rank, world, store, ["lo", "lo"], timeout_s=30)
        results = [_run_case(comm, plan, name, size, integer)
                   for (name, size), plan in plans.items() for integer in (True, False)]
        comm.barrier()
        out.put(("ok", rank, results))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


@pytest.mark.parametrize("world", WORLDS)
def test_forest_equals_allreduce_and_its_traffic(tmp_path, world):
    plans = _plans(world)
    results = spawn_ranks(world, _child, lambda r: (r, world, plans, str(tmp_path / "store")), SPAWN_TIMEOUT_S)
    cases = len(results[0])
    for i in range(cases):
        digests = {results[r][i]["digest"] for r in range(world)}
        assert len(digests) == 1, f"{results[0][i]['case']}: ranks hold different results"
    for rank in range(world):
        for res in results[rank]:
            what = res["case"]
            if "integer" in what:
                assert res["equal"], f"{what}: max diff {res['max_diff']}"
            assert res["close"], f"{what}: max diff {res['max_diff']}"
            mine = {(dst, nic): b for src, dst, nic, b, _ in res["flows"] if src == rank}
            assert res["sent"] == mine, what
            assert res["messages"] == {(dst, nic): m for src, dst, nic, _, m in res["flows"] if src == rank}, what
            # one reduce event per tree, one broadcast event per tree this rank does not root
            phases = {e["phase"] for e in res["events"]}
            if phases & {"reduce_scatter", "all_gather"}:  # fell back to the ring: its phases, no tree
                assert what.startswith("fattree-even") and phases <= {"reduce_scatter", "all_gather"}, what
            else:
                assert sum(e["phase"] == "reduce" for e in res["events"]) == res["trees"], what
            assert all(e["t0"] <= e["t1"] for e in res["events"]), what
    by_case = {res["case"].rsplit(" rank", 1)[0]: res for res in results[0]}
    assert by_case["one-tree size 300003 normal"]["trees"] == 1
    if world >= 3:
        assert by_case["complete size 300003 normal"]["trees"] >= 2
        rates = by_case["fattree-uneven size 300003 normal"]["rates"]
        assert len(set(round(r) for r in rates)) >= 2, f"rates not uneven: {rates}"
    if world == 4:  # all of BCube(2,2): trees cross both levels, each on its own NIC
        assert by_case["bcube-2nics size 300003 normal"]["nics"] == [0, 1]


def test_worker_processes_run_a_forest_job(tmp_path):
    """The runner's path: the plan through job.json (JSON round trip), `python -m
    workloads.worker` per rank, the synthetic oracle on every iteration, timeline events."""
    layers = [["conv", 3001, 0.0], ["fc", 40000, 0.0], ["out", 17, 0.0]]
    ft = build("fattree,k=4")
    ft.set_bandwidth(dict(zip(ft.hosts(), (20.0, 16.0, 12.0))))
    workers = 3
    ctx = base.PlanContext(workers, tuple(n for _, n, _ in layers), topology=ft, hosts=tuple(ft.hosts()[:workers]))
    _, plan = base.plan_for("forest", ctx)
    job = {"algorithm": "forest", "plan": plan, "groups": [], "workers": workers, "servers": 0, "world": workers,
           "model": {"spec": "synthetic,test", "layers": layers}, "iters": 3, "warmup": 1, "seed": 5,
           "dilation": 1.0, "store": str(tmp_path / "store"), "log_dir": str(tmp_path / "workers"),
           "timeout_s": 30, "crash": None}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    codes, outputs = run_worker_processes(path, workers)
    assert codes == [0] * workers, [err for _, err in outputs]
    for rank in range(workers):
        with open(tmp_path / "workers" / f"rank{rank}.jsonl") as f:
            events = [json.loads(line) for line in f]
        iters = [e for e in events if e["event"] == "iter"]
        assert len(iters) == 4 and all(e["correct"] and e["max_abs_err"] == 0.0 for e in iters)
        stages = [e for e in events if e["event"] == "stage"]
        assert {e["phase"] for e in stages} <= {"reduce", "broadcast"} and stages
