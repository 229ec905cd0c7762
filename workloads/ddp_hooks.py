"""syncbed's sync algorithms as PyTorch DistributedDataParallel communication hooks.

    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from workloads import ddp_hooks

    dist.init_process_group("gloo", ...)                 # as any DDP script
    model = DDP(net)
    model.register_comm_hook(*ddp_hooks.hook("topk,density=0.01"))

`hook(spec)` returns `(state, hook)` for `DistributedDataParallel.register_comm_hook(state,
hook)`, the convention of PyTorch's own `ddp_comm_hooks` (allreduce, fp16 compression,
PowerSGD with its `PowerSGDState`). DDP calls the hook once per gradient bucket, in bucket
order on every rank; the hook returns a `torch.futures.Future` holding the bucket's tensor
*averaged* over the ranks, as PyTorch's default all-reduce hook does (it divides by the world
size, then all-reduces).

Every byte goes through syncbed's own executor, over the process group DDP already has:
`Comm.over(process_group)` (workloads/comm.py) makes a `Comm` whose NIC 0 is that group, and
the hook runs `algorithm.execute(plan, comm, bucket, state)` with a plan made for the
bucket's size (`base.plan_for(spec, PlanContext(world, (bucket elements,)))`, one per size,
cached). So the bytes each rank hands to Gloo per bucket are the algorithm's
`traffic(plan)` for that size, counted by `Comm` exactly as in the testbed's worker
(`HookState.log`: per bucket, the bytes and messages sent per peer), and the result is what
the algorithm's oracle gives (`reference`, or the dense sum), divided by the world size.

Error feedback (topk, gtopk, the block-sparse PS algorithms with `density`): the residual is
kept per parameter in the hook's state, not per bucket, so it follows each gradient entry
when DDP rebuilds its buckets after the first iteration (their composition and order
change). Per call the executor sees `state.memory["residual"]` over the bucket's elements,
assembled from the parameters' residuals and split back afterwards; anything else an
algorithm keeps in `state.memory` (DFS's block-size history) is kept per bucket index.

Hooks (`HOOKS`): every registered algorithm whose plan needs nothing but the rank count,
the bucket's size and its options, and whose executor uses one process group on one NIC:
gloo, ring, ps (co-located: every rank owns a shard), topk, gtopk, omnireduce, topk_ps,
dfs, forest (and any new algorithm of that shape, e.g. hd). `forest` packs its trees on a
complete graph of the ranks unless the state is given the network and each rank's host
(`hook("forest", topology=..., hosts=[...])`), then on that network's links; a plan that puts
a tree on a NIC other than 0 (BCube) is refused, since one process group binds one NIC.

Not hooks (`NOT_HOOKS` says why, `hook()` refuses with it):
- `bml`: its 2k stages run on k NICs at once over one process group per BCube switch
  (`groups(plan)`), and rank r must be server r of a BCube(n, k); DDP has one process group
  on one NIC, and a bucket cannot say which NIC its bytes take.
- `wfbp`, `single`, `fusion`, `mgwfbp` (layer-wise): they decide which layers form a message
  and when it starts during backprop; in DDP that is the reducer's bucketing, not the hook.
  Their bucket policies map onto DDP's `bucket_cap_mb` (`bucket_cap_mb(spec, model)`):
  `fusion,bucket_mb=B` is DDP's own bucketing with cap B (DDP's default is 25 MiB) and the
  `ring` hook; `single` is one bucket; `wfbp` a bucket per layer. `mgwfbp`'s merged groups
  (from a measured a, b and per-layer backward times) are not size-capped runs of layers,
  so no `bucket_cap_mb` gives them.

`overlap=True` runs the executor on one communication thread (buckets in order), so backward
keeps computing while a bucket is sent, as DDP's own all-reduce does; the default runs it in
the hook call. Every tensor must be float32 on the CPU (syncbed's executors send float32).
"""
# No `from __future__ import annotations`: DDP checks the hook's return annotation as an object.
import collections
import queue
import threading
import time

import torch

from workloads.algorithms import base
from workloads.comm import Comm
from workloads.sparse import Residual
from common.specs import parse_spec

LAYERWISE = ("wfbp", "single", "fusion", "mgwfbp")
NOT_HOOKS = {
    "bml": "bml runs its 2k stages on k NICs at once over one process group per BCube switch "
           "(groups(plan)), rank r being server r of a BCube(n, k); DDP has one process group on one NIC",
    **{name: f"{name} is layer-wise: which layers form a message and when it starts is DDP's bucketing, "
             f"not a hook's; use bucket_cap_mb({name!r}, model) with the ring hook"
             + (" (mgwfbp's merged groups are no size-capped runs of layers: no cap gives them)"
                if name == "mgwfbp" else "")
       for name in LAYERWISE},
}
EVENTS_KEPT = 10_000  # stage events a state keeps when nobody gave it a sink
LOG_KEPT = 10_000  # bucket records a state keeps (the last ones)


def not_a_hook(name: str) -> str | None:
    """Why algorithm `name` cannot be a DDP hook, or None when it can (see the module doc)."""
    algo = base.get(name)
    if name in NOT_HOOKS:
        return NOT_HOOKS[name]
    if algo.topologies:
        return f"{name} runs on {' or '.join(algo.topologies)} only and needs that network's groups"
    if "link" in algo.needs:
        return f"{name} plans with a measured link model (needs=('link',)), which a hook does not have"
    return None


def hooks() -> list[str]:
    """The registered algorithms that can be hooks, sorted."""
    return sorted(name for name in base.registry() if not_a_hook(name) is None)


# Hooks that DDP takes but a syncbed DDP run (`ddp: true`, whose bytes the analysis checks
# against the hook's closed form) refuses, and why.
NOT_RUN_HOOKS = {"gloo": "gloo under DDP is DDP's own all-reduce: its bytes are Gloo's, not counted by a hook"}


def not_a_run_hook(name: str) -> str | None:
    """Why algorithm `name` cannot be the hook of a syncbed DDP run, or None when it can."""
    return not_a_hook(name) or NOT_RUN_HOOKS.get(name)


def run_hooks() -> list[str]:
    """The hooks a syncbed DDP run takes, sorted."""
    return [name for name in hooks() if name not in NOT_RUN_HOOKS]


class HookState:
    """The state DDP hands back to the hook on every call (PyTorch's `PowerSGDState` in spirit).

    - `spec`: the algorithm spec (`topk,density=0.01`); `process_group`: DDP's (None: the
      default group); `topology`, `hosts` (rank -> host name): the network, for planners that
      read it (`forest`);
    - `overlap`: run the executor on a communication thread (see the module doc);
    - `sink`: called with each stage event the executor records (`comm.record`), e.g. a
      worker's event log; None keeps the last EVENTS_KEPT in `events`;
    - `log`: one record per bucket call: step, bucket index, elements, the bytes and messages
      sent per (dst, nic), t0/t1, the executor's `observed`, the bucket's `layout`
      ([(id(parameter), offset, numel)]); the last LOG_KEPT; `keep_log=False` keeps none;
    - `comm`: a `Comm` to use instead of one over `process_group` (syncbed's worker passes its
      own, so the bytes go out of the host's NIC 0 and into its log);
    `step` counts DDP iterations (it advances after the last bucket of one)."""

    def __init__(self, spec: str, process_group=None, *, overlap: bool = False, sink=None,
                 keep_log: bool = True, topology=None, hosts=None, comm: Comm | None = None):
        name, options = parse_spec(spec, "algorithm") if "," in spec else (spec, {})
        self.algorithm = base.get(name)
        why = not_a_hook(name)
        if why:
            raise ValueError(f"{name} cannot be a DDP communication hook: {why}; hooks: {', '.join(hooks())}")
        self.spec, self.options = spec, options
        self.algorithm.parse_options(options)  # unknown or bad options: one line, now
        self.process_group, self.overlap, self.keep_log = process_group, bool(overlap), bool(keep_log)
        self.topology, self.hosts = topology, tuple(hosts or ())
        self.events = collections.deque(maxlen=EVENTS_KEPT)
        self.sink = sink
        self.comm: Comm | None = comm  # given: used as is (the worker's, with its NIC groups and log)
        self.plans: dict[int, dict] = {}
        self.ready_at: float | None = None  # when DDP handed over the last bucket of a step: the gradient exists
        self.residuals: dict[int, torch.Tensor] = {}  # id(parameter) -> its residual (flat)
        self._params: dict[int, torch.nn.Parameter] = {}  # keeps the ids above alive and unique
        self.memory: dict[int, dict] = {}  # bucket index -> the algorithm's other memory
        self.log = collections.deque(maxlen=LOG_KEPT)
        self.step = 0
        self._queue: queue.Queue | None = None
        self._thread: threading.Thread | None = None

    # --- the pure half: plans and their bytes ------------------------------------------------
    @property
    def world(self) -> int:
        return self._comm().world

    def plan(self, elements: int) -> dict:
        """The plan for a bucket of `elements` (made once per size)."""
        if elements not in self.plans:
            self.plans[elements] = bucket_plan(self.spec, self.world, elements, self.topology, self.hosts)
        return self.plans[elements]

    def traffic(self, elements: int) -> list[base.Flow]:
        """The algorithm's closed form for one bucket of `elements`: [Flow(src, dst, nic, bytes, messages)]."""
        return self.algorithm.traffic(self.plan(elements))

    def reset(self) -> None:
        """Forget what the steps so far left: residuals, memory, log, step count (the worker primes
        DDP's buckets with two steps before its measured ones; PowerSGDState has no such need)."""
        self.residuals.clear()
        self.memory.clear()
        self.log.clear()
        self.events.clear()
        self.step, self.ready_at = 0, None

    # --- the executor half -------------------------------------------------------------------
    def _comm(self) -> Comm:
        if self.comm is None:
            import torch.distributed as dist  # noqa: PLC0415

            group = self.process_group or dist.distributed_c10d._get_default_group()
            self.comm = Comm.over(group, sink=self.sink if self.sink is not None else self.events.append)
            why = self.algorithm.refusal(self.comm.world)
            if why:
                raise ValueError(f"{self.spec} as a DDP hook: {why}")
        return self.comm

    def _layout(self, bucket) -> list[tuple[int, int, int]]:
        """[(id(parameter), offset, numel)] of the bucket's gradients in its flat buffer."""
        buf = bucket.buffer()
        out, offset = [], 0
        grads = list(bucket.gradients())
        for i, p in enumerate(bucket.parameters()):
            numel = p.numel()
            g = grads[i] if i < len(grads) else None
            at = offset
            if g is not None and g.numel() == numel and buf.numel():
                delta = (g.data_ptr() - buf.data_ptr()) // buf.element_size()
                if 0 <= delta <= buf.numel() - numel:
                    at = delta
            self._params.setdefault(id(p), p)
            out.append((id(p), at, numel))
            offset = at + numel
        return out

    def _residual_in(self, layout, elements: int) -> Residual:
        res = Residual(elements)
        for key, at, numel in layout:
            if key in self.residuals:
                res.residual[at:at + numel] = self.residuals[key]
        return res

    def _residual_out(self, layout, res: Residual) -> None:
        for key, at, numel in layout:
            self.residuals[key] = res.residual[at:at + numel].clone()

    def run(self, index: int, buffer: torch.Tensor, layout, last: bool) -> torch.Tensor:
        """One bucket through the executor: the averaged bucket tensor."""
        comm = self._comm()
        if buffer.dtype != torch.float32 or buffer.device.type != "cpu":
            raise ValueError(f"{self.spec} hook: syncbed's executors send float32 CPU tensors, "
                             f"got a {buffer.dtype} bucket on {buffer.device}")
        elements = buffer.numel()
        plan = self.plan(elements)
        memory = dict(self.memory.get(index, {}))
        feedback = self.algorithm.reference is not None  # the sparse families keep residuals; dense ones none
        if feedback:
            memory["residual"] = self._residual_in(layout, elements)
        state = base.SyncState(rank=comm.rank, workers=comm.world, world=comm.world, memory=memory)
        state.begin(self.step)
        comm.iteration = self.step
        sent_before, msgs_before = dict(comm.sent), dict(comm.messages)
        t0 = time.time()
        flat = buffer.contiguous()
        result = self.algorithm.execute(plan, comm, flat, state)
        t1 = time.time()
        if feedback:
            self._residual_out(layout, memory.pop("residual"))
        self.memory[index] = memory
        if self.keep_log:
            self.log.append({
                "step": self.step, "bucket": index, "elements": elements, "t0": t0, "t1": t1, "layout": layout,
                "sent": {k: b - sent_before.get(k, 0) for k, b in comm.sent.items() if b != sent_before.get(k, 0)},
                "messages": {k: m - msgs_before.get(k, 0) for k, m in comm.messages.items()
                             if m != msgs_before.get(k, 0)},
                "observed": dict(state.observed)})
        if last:
            self.step += 1
        return result.div_(comm.world)  # DDP averages, as its default all-reduce hook

    # --- overlap: one communication thread, buckets in order ---------------------------------
    def submit(self, index: int, buffer: torch.Tensor, layout, last: bool) -> torch.futures.Future:
        fut: torch.futures.Future = torch.futures.Future()
        if not self.overlap:
            try:
                fut.set_result(self.run(index, buffer, layout, last))
            except BaseException as exc:  # noqa: BLE001 - DDP re-raises it on wait
                fut.set_exception(exc)
            return fut
        if self._thread is None:
            self._queue = queue.Queue()
            self._thread = threading.Thread(target=self._serve, name="syncbed-ddp-hook", daemon=True)
            self._thread.start()
        self._queue.put((index, buffer, layout, last, fut))
        return fut

    def close(self) -> None:
        """Stop the communication thread (overlap), once DDP no longer calls the hook."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = self._queue = None

    def _serve(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            index, buffer, layout, last, fut = item
            try:
                fut.set_result(self.run(index, buffer, layout, last))
            except BaseException as exc:  # noqa: BLE001
                fut.set_exception(exc)


def syncbed_hook(state: HookState, bucket) -> torch.futures.Future[torch.Tensor]:
    """The DDP communication hook: `state.algorithm` on this bucket over DDP's process group;
    a Future holding the bucket averaged over the ranks."""
    if bucket.is_last():
        state.ready_at = time.time()
    return state.submit(bucket.index(), bucket.buffer(), state._layout(bucket), bucket.is_last())


def hook(spec: str, process_group=None, **kwargs) -> tuple:
    """`(state, hook)` for `ddp_model.register_comm_hook(state, hook)`: algorithm `spec`
    (`ring`, `ps`, `topk,density=0.01`, `gtopk,density=0.001,residual=exact`, ...; `hooks()`
    lists them) over `process_group` (None: the default group, which DDP uses unless told
    otherwise). Keyword arguments go to `HookState` (overlap, sink, keep_log, topology, hosts)."""
    return HookState(spec, process_group, **kwargs), syncbed_hook


def bucket_plan(spec: str, world: int, elements: int, topology=None, hosts=()) -> dict:
    """The plan of algorithm `spec` for one bucket of `elements` over `world` ranks, refused in one
    line when it needs more than one process group on NIC 0."""
    name, options = parse_spec(spec, "algorithm") if "," in spec else (spec, {})
    algo = base.get(name)
    ctx = base.PlanContext(workers=int(world), layer_sizes=(int(elements),), topology=topology,
                           hosts=tuple(hosts or ()), options=dict(options))
    _, plan = base.plan_for(name, ctx)
    if algo.groups(plan):
        raise ValueError(f"{spec}: this plan needs process groups of its own ({len(algo.groups(plan))}); "
                         "a DDP hook has DDP's group only")
    if any(f.nic != 0 for f in algo.traffic(plan)):
        raise ValueError(f"{spec}: this plan sends on NICs other than 0; a DDP hook has one process group, on one NIC")
    return plan


def closed_form(spec: str, world: int, buckets, topology=None, hosts=()) -> list[base.Flow]:
    """The algorithm's `traffic` summed over the buckets of one or more steps (`buckets`: their
    element counts), merged per (src, dst, nic): the closed form of a DDP run's bytes."""
    algo = base.get(spec.split(",")[0])
    plans: dict = {}
    flows = []
    for n in buckets:
        if n not in plans:
            plans[n] = bucket_plan(spec, world, int(n), topology, hosts)
        flows += algo.traffic(plans[n])
    return base.merge_flows(flows)


class BucketOracle:
    """What every rank must hold after each bucket: the algorithm's `reference` over every rank's
    bucket (the dense sum when it has none), divided by the world size, with every rank's
    residual kept per parameter (`layout` keys) across steps and bucket rebuilds, and the
    algorithm's other memory per bucket index (the worker's check of a DDP run)."""

    def __init__(self, spec: str, world: int, topology=None, hosts=()):
        self.spec, self.world = spec, int(world)
        self.algorithm = base.get(spec.split(",")[0])
        self.topology, self.hosts = topology, tuple(hosts or ())
        self.plans: dict = {}
        self.residuals = [dict() for _ in range(self.world)]  # rank -> key -> residual
        self.memory: dict = {}  # bucket index -> the reference's other memory

    def expected(self, bucket: int, layout, inputs) -> torch.Tensor:
        """`layout`: [(key, offset, numel)] of the bucket; `inputs`: every rank's bucket, rank order."""
        n = inputs[0].numel()
        if n not in self.plans:
            self.plans[n] = bucket_plan(self.spec, self.world, n, self.topology, self.hosts)
        plan = self.plans[n]
        if self.algorithm.reference is None:
            return base.dense_reference(plan, inputs, {}) / self.world
        memory = dict(self.memory.get(bucket, {}))
        memory["residuals"] = []
        for r in range(self.world):
            res = Residual(n)
            for key, at, numel in layout:
                if key in self.residuals[r]:
                    res.residual[at:at + numel] = self.residuals[r][key]
            memory["residuals"].append(res)
        out = self.algorithm.reference(plan, inputs, memory)
        for r, res in enumerate(memory.pop("residuals")):
            for key, at, numel in layout:
                self.residuals[r][key] = res.residual[at:at + numel].clone()
        self.memory[bucket] = memory
        return out / self.world


def process_group(comm: Comm):
    """A `torch.distributed.ProcessGroup` over `comm`'s NIC 0 Gloo group, for DDP itself (its
    parameter check and broadcast at construction): DDP takes a ProcessGroup, `Comm` holds bare
    Gloo backends (one per NIC, each bound to its interface)."""
    import torch.distributed as dist  # noqa: PLC0415

    pg = dist.ProcessGroup(dist.PrefixStore("ddp/", comm.store), comm.rank, comm.world)
    pg._set_default_backend(dist.ProcessGroup.BackendType.GLOO)
    pg._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, comm.nic(0))
    return pg


def bucket_cap_mb(spec: str, model: torch.nn.Module) -> float:
    """DDP's `bucket_cap_mb` that gives a layer-wise algorithm's grouping with the `ring` hook:
    `fusion,bucket_mb=B` -> B (DDP's default bucketing is fusion with 25); `single` -> larger
    than the model (one bucket); `wfbp` -> smaller than any parameter (a bucket each). mgwfbp
    has no such cap (its groups come from measured costs) and is refused."""
    name, options = parse_spec(spec, "algorithm") if "," in spec else (spec, {})
    sizes = [p.numel() * p.element_size() for p in model.parameters() if p.requires_grad]
    if not sizes:
        raise ValueError("the model has no parameters that need gradients")
    if name == "fusion":
        return float(base.get("fusion").parse_options(options).get("bucket_mb", 25))
    if name == "single":
        return 2.0 * sum(sizes) / 2**20
    if name == "wfbp":
        return 0.5 * min(sizes) / 2**20
    raise ValueError(f"{name}: no bucket_cap_mb gives its grouping; bucket policies exist for fusion, "
                     "single and wfbp")
