"""syncbed algorithms as DDP communication hooks (workloads/ddp_hooks.py), with Gloo on localhost.

2-4 forked ranks train a small MLP on scikit-learn's digits with DistributedDataParallel and
each hook, with buckets small enough that DDP makes several and rebuilds them after the first
step. Each rank returns, per bucket call, its own gradient (the bucket before the hook), the
bucket's parameters and offsets, and the hook's result, plus its parameters after every step
and the hook's log of bytes sent. The parent then checks, step by step:
- the hook's result equals the algorithm's oracle over every rank's bucket divided by the
  world size (DDP averages): the dense sum (close: the ring sums in its own order), or the
  algorithm's `reference` with every rank's residual carried per parameter across steps and
  bucket rebuilds (bit for bit, as the worker's oracle check);
- every rank's parameters equal SGD stepped with those oracle gradients from DDP's initial
  parameters (and, dense, the default all-reduce DDP run's);
- the bytes and messages each rank handed to Gloo per bucket equal the algorithm's
  `traffic(plan)` for that bucket size (data-dependent algorithms: never more).
"""
from __future__ import annotations

import os
import pickle
import traceback

import pytest
import torch

from tests.parallel.spawn import spawn_ranks
from workloads import ddp_hooks
from workloads.algorithms import base
from workloads.sparse import Residual

pytestmark = pytest.mark.parallel

SPECS = ("ring", "ps", "gloo", "hd", "forest", "topk,density=0.05", "gtopk,density=0.05",
         "gtopk,density=0.05,residual=exact", "omnireduce,density=0.1,block=16", "topk_ps,density=0.1",
         "dfs,density=0.1,blocks=16:32:64")  # dfs: every candidate block must fit the smallest bucket
DEFAULT = "(DDP default all-reduce)"
STEPS, BATCH, LR = 4, 12, 0.1
# DDP's bucketing: every parameter in one bucket for the first step, then buckets rebuilt in the
# order the gradients arrived, each closed once it holds bucket_cap_mb: the default (25 MiB) keeps
# one bucket (in the new order), 0.004 MiB (~1000 elements) makes three of the 4,522-parameter MLP
BUCKETS = {"one, reordered": {}, "several": {"bucket_cap_mb": 0.004}}


def specs_for(world: int) -> list[str]:
    """The specs whose algorithm accepts `world` ranks (hd: powers of two)."""
    return [s for s in SPECS if s.split(",")[0] in base.registry()
            and base.get(s.split(",")[0]).refusal(world) is None]


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.ReLU(),
                               torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))


def flat_params(model) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()


def _child(rank, world, init, specs, overlap, buckets, out):
    try:
        import torch.distributed as dist
        import torch.nn.functional as F
        from sklearn.datasets import load_digits
        from torch.nn.parallel import DistributedDataParallel as DDP

        os.environ["GLOO_SOCKET_IFNAME"] = "lo"
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
        digits = load_digits()
        x, y = torch.tensor(digits.data, dtype=torch.float32) / 16, torch.tensor(digits.target)
        results = {}
        for spec in [DEFAULT, *specs]:
            net = mlp()
            if rank:  # DDP must broadcast rank 0's parameters: differ on purpose
                with torch.no_grad():
                    for p in net.parameters():
                        p.add_(1.0)
            model = DDP(net, **BUCKETS[buckets])
            index = {id(p): i for i, p in enumerate(model.module.parameters())}
            calls, current, state = [], [0], None
            if spec != DEFAULT:
                state, hook = ddp_hooks.hook(spec, overlap=overlap)

                def recording(st, bucket, hook=hook, calls=calls, index=index, current=current):
                    call = {"step": current[0], "bucket": bucket.index(), "input": bucket.buffer().clone(),
                            "layout": [(index[k], at, n) for k, at, n in st._layout(bucket)]}

                    def keep(fut, call=call):
                        call["result"] = fut.value().clone()
                        calls.append(call)
                        return fut.value()
                    return hook(st, bucket).then(keep)

                model.register_comm_hook(state, recording)
            opt = torch.optim.SGD(model.parameters(), lr=LR)
            trajectory = [flat_params(model.module)]
            for step in range(STEPS):
                current[0] = step
                start = (step * world + rank) * BATCH
                opt.zero_grad()
                F.cross_entropy(model(x[start:start + BATCH]), y[start:start + BATCH]).backward()
                opt.step()
                trajectory.append(flat_params(model.module))
            results[spec] = {"params": trajectory, "calls": calls,
                             "shapes": [tuple(p.shape) for p in model.module.parameters()],
                             "log": [] if state is None else [{k: v for k, v in rec.items() if k != "observed"}
                                                              for rec in state.log]}
            dist.barrier()
        dist.destroy_process_group()
        out.put(("ok", rank, pickle.dumps(results)))  # plain pickle: tensors inline, not shared memory
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


def _oracle_run(spec: str, world: int, ranks: dict):
    """Step by step: the oracle's averaged bucket per (step, bucket), checked against every
    rank's hook result; returns the oracle gradients per step, per parameter."""
    algo = base.get(spec.split(",")[0])
    plans: dict = {}
    residual = [dict() for _ in range(world)]  # rank -> parameter index -> residual
    other: dict = {}  # bucket index -> the oracle's other memory
    per_step = []
    calls = [sorted(ranks[r][spec]["calls"], key=lambda c: (c["step"], c["bucket"])) for r in range(world)]
    assert all(len(c) == len(calls[0]) for c in calls)
    shapes = ranks[0][spec]["shapes"]
    for step in range(STEPS):
        grads = {}
        mine = [[c for c in calls[r] if c["step"] == step] for r in range(world)]
        assert mine[0], f"{spec}: no bucket in step {step}"
        for b in range(len(mine[0])):
            group = [mine[r][b] for r in range(world)]
            layout = group[0]["layout"]
            assert all(c["layout"] == layout and c["bucket"] == group[0]["bucket"] for c in group)
            inputs = [c["input"] for c in group]
            n = inputs[0].numel()
            if n not in plans:
                plans[n] = base.plan_for(spec, base.PlanContext(world, (n,)))[1]
            if algo.reference is None:
                expected = base.dense_reference(plans[n], inputs, {})
            else:
                memory = dict(other.get(group[0]["bucket"], {}))
                memory["residuals"] = []
                for r in range(world):
                    res = Residual(n)
                    for i, at, numel in layout:
                        if i in residual[r]:
                            res.residual[at:at + numel] = residual[r][i]
                    memory["residuals"].append(res)
                expected = algo.reference(plans[n], inputs, memory)
                for r, res in enumerate(memory.pop("residuals")):
                    for i, at, numel in layout:
                        residual[r][i] = res.residual[at:at + numel].clone()
                other[group[0]["bucket"]] = memory
            expected = expected / world
            for r, c in enumerate(group):
                if algo.reference is None:  # the ring (or Gloo) sums in its own order
                    torch.testing.assert_close(c["result"], expected, rtol=1e-5, atol=1e-7,
                                               msg=f"{spec}: rank {r} step {step} bucket {c['bucket']}")
                else:  # the executors add in the oracle's order: bit for bit
                    assert torch.equal(c["result"], expected), \
                        f"{spec}: rank {r} step {step} bucket {c['bucket']}: max err " \
                        f"{(c['result'] - expected).abs().max()}"
            for i, at, numel in layout:
                grads[i] = expected[at:at + numel].reshape(shapes[i])
        assert sorted(grads) == list(range(len(shapes))), f"{spec}: step {step} missed parameters"
        per_step.append([grads[i] for i in range(len(shapes))])
    return algo, plans, per_step


def _sgd(start: torch.Tensor, shapes, per_step) -> list[torch.Tensor]:
    """Parameters after each step of SGD with the oracle gradients (as torch.optim.SGD steps)."""
    params, offset = [], 0
    for shape in shapes:
        numel = int(torch.Size(shape).numel())
        params.append(start[offset:offset + numel].reshape(shape).clone())
        offset += numel
    out = []
    for grads in per_step:
        for p, g in zip(params, grads):
            p.add_(g, alpha=-LR)
        out.append(torch.cat([p.reshape(-1) for p in params]))
    return out


@pytest.mark.parametrize("world,overlap,buckets", [(2, False, "one, reordered"), (2, True, "several"),
                                                    (3, True, "several"), (4, False, "several")])
def test_ddp_trains_with_each_syncbed_hook_as_its_oracle_says(tmp_path, world, overlap, buckets):
    specs = specs_for(world)
    init = f"file://{tmp_path / 'store'}"
    ranks = {r: pickle.loads(v) for r, v in
             spawn_ranks(world, _child, lambda r: (r, world, init, specs, overlap, buckets), timeout_s=240).items()}
    per_step = [len([c for c in ranks[0]["ring"]["calls"] if c["step"] == s]) for s in range(STEPS)]
    assert per_step == [1] * STEPS if buckets == "one, reordered" else (per_step[0] == 1 and min(per_step[1:]) > 1), \
        per_step
    default = ranks[0][DEFAULT]["params"]
    for spec in specs:
        trajectories = [ranks[r][spec]["params"] for r in range(world)]
        for r in range(1, world):  # DDP keeps the replicas identical
            for a, b in zip(trajectories[0], trajectories[r]):
                assert torch.equal(a, b), f"{spec}: rank {r} diverged from rank 0"
        assert torch.equal(trajectories[0][0], default[0])  # rank 0's parameters, broadcast by DDP
        algo, plans, per_step = _oracle_run(spec, world, ranks)
        want = _sgd(trajectories[0][0], ranks[0][spec]["shapes"], per_step)
        for step, (got, exp) in enumerate(zip(trajectories[0][1:], want)):
            if algo.reference is None:
                torch.testing.assert_close(got, exp, rtol=1e-5, atol=1e-6, msg=f"{spec} step {step}")
            else:
                assert torch.equal(got, exp), f"{spec} step {step}: max err {(got - exp).abs().max()}"
        if algo.reference is None:  # a dense hook trains as DDP's own all-reduce does
            for step, (got, exp) in enumerate(zip(trajectories[0], default)):
                torch.testing.assert_close(got, exp, rtol=1e-5, atol=1e-6, msg=f"{spec} vs DDP, step {step}")
        # the bytes: what each rank handed to Gloo per bucket, against the closed form
        for r in range(world):
            log = ranks[r][spec]["log"]
            assert [(e["step"], e["bucket"]) for e in log] == \
                sorted((c["step"], c["bucket"]) for c in ranks[r][spec]["calls"])
            for e in log:
                flows = [f for f in algo.traffic(plans[e["elements"]]) if f.src == r]
                want_bytes = {(f.dst, f.nic): f.bytes for f in flows}
                want_msgs = {(f.dst, f.nic): f.messages for f in flows}
                if algo.name == "gloo":  # Gloo's own all_reduce: its bytes are Gloo's, not handed to Comm.send
                    assert e["sent"] == {}
                elif algo.data_dependent:
                    assert set(e["sent"]) <= set(want_bytes) and all(
                        b <= want_bytes[k] for k, b in e["sent"].items()), (spec, r, e)
                else:
                    assert (e["sent"], e["messages"]) == (want_bytes, want_msgs), (spec, r, e)


def test_algorithms_that_cannot_be_hooks_say_why():
    for name in ("bml", "wfbp", "single", "fusion", "mgwfbp"):
        assert ddp_hooks.not_a_hook(name)
        with pytest.raises(ValueError, match="cannot be a DDP communication hook"):
            ddp_hooks.hook(name)
    assert {"ring", "ps", "topk", "gtopk"} <= set(ddp_hooks.hooks())
    assert set(ddp_hooks.hooks()) | set(ddp_hooks.NOT_HOOKS) == set(base.registry())
    with pytest.raises(ValueError, match="density"):
        ddp_hooks.hook("topk,density=2")
    model = mlp()
    assert ddp_hooks.bucket_cap_mb("fusion,bucket_mb=64", model) == 64.0
    assert ddp_hooks.bucket_cap_mb("single", model) * 2**20 > 4 * 4522
    with pytest.raises(ValueError, match="no bucket_cap_mb"):
        ddp_hooks.bucket_cap_mb("mgwfbp", model)
