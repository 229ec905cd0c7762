"""The algorithm contract, checked for every registered algorithm without it writing a test.

For each algorithm of the registry, at each worker count of COUNTS it accepts (its
declaration: `Algorithm.refusal`), and with one dedicated server if it uses servers, the
ranks are forked from this process and run `workloads.worker.run`, the real worker loop,
on Gloo over localhost (`lo` for every NIC). The plan is made as a run makes it: on a
topology of a kind the algorithm accepts (BCube(2,2) and BCube(2,3), with 2 and 3 NICs per
host, for 4 and 8 ranks; else Fat-Tree; BCube(P,1) for an algorithm that takes only BCube),
on its first hosts, with that topology's NICs per host. Gradients are the synthetic
ones with whole zero blocks, different per worker, so bytes that depend on the data vary.
Asserted, per case:
1. the plan survives JSON; `phases` and `simulated` (where defined) sum to `traffic`, bytes
   and messages; `rounds` gives one count per simulated step;
2. every iteration on every worker equals the algorithm's oracle (`reference`, else the
   dense sum) exactly: the worker checks it and logs `correct`, `max_abs_err`;
3. every rank, every iteration, handed `Comm` exactly the bytes and messages of its flows
   in `traffic(plan)`; a data-dependent algorithm never more than its flow (traffic is its
   worst case; the analysis lays the logged flows onto the routes). An executor that hands
   its buffer to a Gloo collective instead (`gloo`) logs no send: its flows are traffic's;
4. what each rank's process wrote to its sockets during `execute` (/proc/self/io, less its
   log lines) is, to the byte, the data it sent plus Gloo's framing: GLOO_SEND_FRAMING_BYTES
   per message sent and GLOO_NOTIFY_BYTES per message received. So no byte bypasses `Comm`'s
   count, and the message counts the capture checks rely on are right.
An algorithm's own tests then cover only what is special about it (tests/unit/test_hd.py).
"""
import dataclasses
import json
from pathlib import Path

import pytest

from topologies import spec as topo_spec
from workloads import eventlog, worker
from workloads.algorithms import base
from tests.parallel.spawn import spawn_ranks, written_bytes

pytestmark = pytest.mark.parallel

COUNTS = (2, 3, 4, 8)
SERVER_CASE = (3, 1)  # (workers, servers) for algorithms that use dedicated servers
LAYERS = [["conv", 3001, 0.0], ["fc", 300000, 0.0], ["out", 17, 0.0]]  # 1.2 MB: several segments
SPARSITY = {"block": 64, "zero_blocks": 0.5, "zero_entries": 0.2}
ITERS = 3


def _bcube_shape(ranks: int):
    """(n, k) with n^k = ranks, the most levels first."""
    return next(((round(ranks ** (1 / k)), k) for k in range(ranks.bit_length(), 0, -1)
                 if round(ranks ** (1 / k)) >= 2 and round(ranks ** (1 / k)) ** k == ranks), None)


def topology(algo: base.Algorithm, ranks: int):
    """A topology of a kind `algo` accepts for `ranks` hosts: BCube(n,k) with n^k = ranks when
    that has k >= 2 levels (several NICs per host) or BCube is all it takes, else Fat-Tree."""
    kinds = algo.topologies or ("fattree", "bcube")
    shape = _bcube_shape(ranks)
    if "bcube" in kinds and shape and (shape[1] >= 2 or "fattree" not in kinds):
        return topo_spec.build(f"bcube,n={shape[0]},k={shape[1]}")
    return topo_spec.build(f"fattree,k={next(k for k in range(2, 64, 2) if k**3 // 4 >= ranks)}")


def _cases():
    for name, algo in sorted(base.registry().items()):
        shapes = [(p, 0) for p in COUNTS] + ([SERVER_CASE] if algo.uses_servers else [])
        for workers, servers in shapes:
            if algo.refusal(workers, servers) is None:
                yield pytest.param(name, workers, servers, id=f"{name}-P{workers}" + (f"+S{servers}" if servers else ""))


def _job(tmp_path, name: str, workers: int, servers: int):
    algo = base.get(name)
    world = workers + servers
    topo = topology(algo, world)
    hosts = tuple(topo.hosts()[:world])
    ctx = base.PlanContext(workers, tuple(n for _, n, _ in LAYERS), servers, nics=len(topo.host_nics(hosts[0])),
                           topology=topo, hosts=hosts, layers=tuple(tuple(layer) for layer in LAYERS))
    algo, plan = base.plan_for(name, ctx)
    job = {"algorithm": name, "plan": plan, "workers": workers, "servers": servers, "world": world,
           "groups": [{"id": g.id, "ranks": list(g.ranks), "nic": g.nic} for g in algo.groups(plan)],
           "model": {"spec": "synthetic,contract", "layers": LAYERS}, "iters": ITERS, "warmup": 0, "seed": 7,
           "dilation": 0.0, "store": str(tmp_path / "store"), "log_dir": str(tmp_path / "w"), "timeout_s": 30,
           "sparsity": SPARSITY}
    return algo, plan, job, ctx.nics


class _CountingLog(eventlog.EventLog):
    """The rank's log, counting what it writes (subtracted from the process's socket writes)."""
    written = 0

    def write(self, event: dict) -> None:
        line = json.dumps(event) + "\n"
        self.written += len(line.encode())
        super().write(event)


def _child(rank, job, nics, out):
    import traceback
    try:
        log = _CountingLog(str(Path(job["log_dir"]) / f"rank{rank}.jsonl"))
        algo = base.get(job["algorithm"])

        def execute(plan, comm, grads, state):  # the socket bytes of this call, less the log's
            w0, l0 = written_bytes(), log.written
            result = algo.execute(plan, comm, grads, state)
            if w0 is not None:
                state.observed["contract_wrote"] = written_bytes() - w0 - (log.written - l0)
            return result
        base.registry()[algo.name] = dataclasses.replace(algo, execute=execute)  # this forked rank only
        worker.run(job, rank, ["lo"] * nics, log)
        out.put(("ok", rank, None))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))


def _check_pure(algo, plan):
    again = json.loads(json.dumps(plan))
    assert algo.traffic(again) == algo.traffic(plan), "traffic must read only the JSON plan"
    if algo.phases is not None:
        summed = base.merge_flows(f for step in algo.phases(plan) for f in step)
        assert [(f.src, f.dst, f.nic, f.bytes, f.messages) for f in summed] == \
               [(f.src, f.dst, f.nic, f.bytes, f.messages) for f in base.merge_flows(algo.traffic(plan))], \
               "phases must sum to traffic (bytes and messages per flow)"
    if algo.simulated is not None:
        summed = base.merge_flows(f for step in algo.simulated(plan) for f in step)
        assert [(f.src, f.dst, f.nic, f.bytes, f.messages) for f in summed] == \
               [(f.src, f.dst, f.nic, f.bytes, f.messages) for f in base.merge_flows(algo.traffic(plan))], \
               "simulated steps must sum to traffic (bytes and messages per flow)"
    assert len(algo.step_rounds(plan)) == len(algo.simulated_steps(plan)), "rounds: one count per simulated step"


@pytest.mark.parametrize("name,workers,servers", list(_cases()))
def test_contract(tmp_path, name, workers, servers):
    algo, plan, job, nics = _job(tmp_path, name, workers, servers)
    _check_pure(algo, plan)
    world = workers + servers
    spawn_ranks(world, _child, lambda r: (r, job, nics), timeout_s=90)
    planned = {(f.src, f.dst, f.nic): (f.bytes, f.messages) for f in base.merge_flows(algo.traffic(plan))}
    its = {r: [e for e in map(json.loads, open(tmp_path / "w" / f"rank{r}.jsonl")) if e["event"] == "iter"]
           for r in range(world)}
    assert all([e["iter"] for e in its[r]] == list(range(ITERS)) for r in range(world)), its
    # an executor that hands its buffer to a Gloo collective logs no send: its flows are traffic's
    collective = bool(planned) and not any(e["sent"] for r in its for e in its[r])
    for i in range(ITERS):
        handed = dict(planned) if collective else {
            (r, dst, nic): (b, m) for r in range(world) for dst, nic, b, m in its[r][i]["sent"]}
        for r in range(world):
            e, where = its[r][i], f"{name} P={workers} S={servers} rank {r} iter {i}"
            assert e["correct"] and e["max_abs_err"] == 0.0, f"{where}: result differs from the oracle by {e['max_abs_err']}"
            mine = {(dst, nic): v for (src, dst, nic), v in planned.items() if src == r}
            sent = {(dst, nic): v for (src, dst, nic), v in handed.items() if src == r}
            if algo.data_dependent:
                over = {k: v for k, v in sent.items() if k not in mine or v[0] > mine[k][0] or v[1] > mine[k][1]}
                assert not over, f"{where}: handed Comm more than traffic(plan)'s worst case: {over} vs {mine}"
            else:
                assert sent == mine, f"{where}: handed Comm {sent}, traffic(plan) says {mine} ((dst, nic): (bytes, messages))"
            # what the process wrote to its sockets: its data and Gloo's framing of the messages it
            # sent, and the receiver's notification of each message it received
            wrote = e.get("observed", {}).get("contract_wrote")
            if wrote is not None:
                received = sum(m for (src, dst, _), (_, m) in handed.items() if dst == r)
                want = sum(b + m * base.GLOO_SEND_FRAMING_BYTES for b, m in sent.values()) \
                    + received * base.GLOO_NOTIFY_BYTES
                assert wrote == want, f"{where}: wrote {wrote} bytes to sockets, its flows and their framing are {want}"
