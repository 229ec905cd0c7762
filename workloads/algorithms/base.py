"""The one contract every sync algorithm follows, and the registry that names them.

An algorithm is a module in `workloads/algorithms/` that defines `ALGORITHM =
Algorithm(...)`. It has two halves (docs/STYLE.md: plan in pure functions, execute elsewhere):
- pure: `options` (the knobs it reads, typed, with defaults: `Option`), `validate(ctx)`,
  `plan(ctx) -> dict` (JSON-able), `traffic(plan) -> [Flow]` (payload bytes of one sync,
  the closed form the captures are checked against), `groups(plan) -> [GroupSpec]` (extra
  process groups the executor needs) and, optionally, `phases(plan) -> [[Flow]]` (the same
  traffic cut into steps that run one after another, for the flow-level bound in
  the SimGrid simulation, emulation/simulator/core.py; absent = one step, all flows at once) and,
  optionally, `simulated(plan) -> [[Flow]]` (the steps the simulation runs when the sync's
  timing is not that of its `phases`: a pipeline's fill, its first chunk hop by hop, as serial
  steps before the rest; the same flows in total, so bytes and the analysis's step bound stay
  the plan's; absent = its `phases`) and,
  optionally, `rounds(plan) -> [int]` (per simulated step, the message rounds it waits through
  one after another, e.g. a ring's 2(N-1); the projection's latency term; absent = 1 per step) and,
  optionally, `blocks(plan) -> [[FlowBlock]] | None` (the same steps, each as all-to-all
  blocks of equal flows, so the projection can reduce a symmetric plan by symmetry without
  listing its P(P-1) flows, issue #23; for a data-dependent algorithm its `modelled_steps`,
  what a projection with nothing measured runs; absent or None = the projection lists every
  flow);
- executor: `execute(plan, comm, grads, state) -> torch.Tensor`, run inside the worker,
  which only carries out the plan with Gloo calls through `comm` (workloads/comm.py).
  `state` (`SyncState`) is made once per rank and run and handed to every call: the
  iteration number and whatever the algorithm keeps across iterations (residuals).
- optional oracle: `reference(plan, inputs, memory) -> Tensor`, the exact result every
  worker must hold, computed from every worker's gradient (`inputs`, rank order) with
  `memory` kept across iterations. None: the dense sum (a plain all-reduce).
- `data_dependent`: the bytes of an iteration depend on the gradients (sparsification);
  the expected bytes then come from what the ranks handed to `Comm` in that iteration
  (logged per iteration), not from `traffic(plan)`, which stays the plan's estimate. Such an
  algorithm gives its simulated form (emulation/simulator/core.py) two ways, in the shape of
  its `phases`: `logged_steps(plan, ranks) -> [[Flow]]`, one measured iteration's steps from
  what every rank logged in it (`ranks`: {rank: {"sent": [[dst, nic, bytes, messages], ...],
  "phases": {phase: data bytes}}}; the flows must sum to "sent" exactly), and
  `modelled_steps(plan) -> [[Flow]]`, one sync's steps from a model of its bytes (density,
  block size) where nothing was measured. Without `modelled_steps` it has no simulated form.
- what it accepts, declared once: `workers` (a `Counts`: the worker counts it runs with, e.g.
  `POWERS_OF_TWO`; default any count >= 1), `uses_servers` (dedicated server ranks) and
  `topologies` (kinds; () = any). `Algorithm.refusal` says in one line what is wrong and
  what is valid; `check_context` refuses with it, and the registry-wide tests, the
  projection's sweeps and `syncbed algos` read the same declaration.
- what the emulation reads of it, so that the emulation names no algorithm (each has a
  default, so most algorithms write none of them): `describe(plan) -> dict` (plan facts for
  summary.json; default {}), `timeline(plan) -> Overlap | None` (the overlap of its steps with
  backprop, for the SimGrid simulation, emulation/simulator/core.py; default None: the sync
  starts after backprop, all steps released at once), `compute` (a tuple of `Compute`: CPU
  durations its executor times with `state.computing(key)`, which the trace draws and
  summary.json averages; a run may state the real setting's cost of one, and `computing`
  then charges that instead of this CPU's time: `SyncState.charged`; the simulation charges
  each one's seconds from a cost model, before the first step or after the last (its `at`):
  `Algorithm.compute_charges`; default ()) and
  `summarize(observed) -> dict` (its own per-run figures from the workers' `state.observed`
  of the measured iterations, {worker rank: [observed, ...]}; default {}). `Algorithm.figures`
  is what the analysis puts in summary.json from them.
- `needs`: measured inputs the planner reads (`"link"`: the all-reduce cost model a, b;
  `"backward"`: per-layer backward times; `"background"`: the rates of the run's background
  flows, measured once they run, in `PlanContext.background`). Planning happens once with provisional values
  to validate the input, and again once the measurement exists; job.json keeps the plan
  actually used.

Ranks 0..workers-1 hold gradients; ranks workers..world-1 (if any) are dedicated
servers (PS on S hosts) that hold none. Every rank calls `execute`; a worker gets the
element-wise sum over workers back (or the algorithm's own reference result).

Algorithm specs: `name[,key=value...]` (`topk,density=0.01`); `parse_algos` reads a list
of them where a comma-separated token without `=` starts the next algorithm, so the old
`ring,ps` still means two algorithms. `spec_of(name, options)` is the canonical string
recorded in summaries, reports and run folder names.
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

from common.specs import parse_spec
from common.units import DTYPE_BYTES

# TCP payload Gloo adds per point-to-point message: three 48-byte ops of its tcp pair
# protocol, measured exactly with /proc/self/io on localhost for either posting order
# (tests/parallel/test_contract.py) and consistent with the captures (docs/FIDELITY.md #10).
# The sender writes two of them with the data; the receiver writes the third, its
# "ready to receive" notification, on the same connection in the OTHER direction. On BCube
# that direction's route may relay through another server than the data's (one digit is
# corrected per hop, in the same order both ways), so the expected bytes lay the
# notification on the reverse route (`wire_flows`), not beside the data (issue #19).
GLOO_SEND_FRAMING_BYTES = 96  # written by the sender, towards the receiver
GLOO_NOTIFY_BYTES = 48  # written by the receiver, towards the sender
GLOO_FRAMING_BYTES = GLOO_SEND_FRAMING_BYTES + GLOO_NOTIFY_BYTES


@dataclass(frozen=True)
class PlanContext:
    """Everything a planner may read. Pure data, no processes."""

    workers: int  # ranks holding gradients
    layer_sizes: tuple  # elements per layer, forward order
    servers: int = 0  # dedicated server ranks after the workers (PS on S hosts)
    nics: int = 1  # NICs per host the algorithm may use (BCube: k)
    topology: Any = None  # topologies.description.Topology or None (localhost tests)
    hosts: tuple = ()  # rank -> host name, when a topology is given
    options: dict = field(default_factory=dict)  # algorithm-specific knobs (typed after check_context)
    layers: tuple = ()  # ((name, numel, backward_s), ...) forward order, as the run produces them
    link: Any = None  # workloads.linkmodel.LinkModel (measured or given) for planners that need one
    size_scale: float = 1.0  # the run's gradients are the real model's / size_scale (time dilation)
    background: tuple = ()  # concurrent flows ({"src", "dst", "mbps" or None}) the run shares the links with
    # seconds the executor waits before each collective: start-up the emulated network lacks
    # (a real setting's `dilation_x`, emulation/replan.py); only for algorithms that need "startup"
    startup_charge_s: float = 0.0

    @property
    def world(self) -> int:
        return self.workers + self.servers

    @property
    def elements(self) -> int:
        return int(sum(self.layer_sizes))

    @property
    def gradient_bytes(self) -> int:
        return self.elements * DTYPE_BYTES


@dataclass(frozen=True)
class Flow:
    """Payload bytes one rank sends another during one sync, on NIC `nic` of both."""

    src: int
    dst: int
    nic: int
    bytes: int
    messages: int = 1  # Gloo send operations carrying those bytes (each adds framing)

    @property
    def payload(self) -> int:
        """TCP payload on the wire: the data plus Gloo's framing per message."""
        return self.bytes + self.messages * GLOO_FRAMING_BYTES


@dataclass(frozen=True)
class FlowBlock:
    """Every ordered pair of `srcs` x `dsts` with src != dst: one `Flow(src, dst, nic, bytes,
    messages)` each, in a few numbers instead of |srcs| x |dsts| objects (`Algorithm.blocks`).
    A sharded PS step on P ranks is one or two blocks instead of P(P-1) flows, which is what
    lets the projection reduce it by symmetry without listing every flow (issue #23)."""

    srcs: tuple  # ranks
    dsts: tuple  # ranks
    nic: int
    bytes: int
    messages: int = 1

    @property
    def count(self) -> int:
        """How many flows the block stands for."""
        return len(self.srcs) * len(self.dsts) - len(set(self.srcs) & set(self.dsts))

    def flows(self) -> list["Flow"]:
        """The block's flows, listed (small plans and tests only: this is what blocks avoid)."""
        return [Flow(s, d, self.nic, self.bytes, self.messages) for s in self.srcs for d in self.dsts if s != d]


@dataclass(frozen=True)
class GroupSpec:
    """A process group over `ranks` (global ranks, in group-rank order) bound to NIC `nic`."""

    id: str
    ranks: tuple
    nic: int = 0


@dataclass(frozen=True)
class Option:
    """One knob of an algorithm: its default, a converter from the spec's string (or a YAML
    value) that raises ValueError, and what is valid (shown in errors and `syncbed algos`)."""

    default: Any
    convert: Callable[[Any], Any]
    valid: str

    def parse(self, algo: str, key: str, value):
        try:
            return self.convert(value)
        except (TypeError, ValueError) as e:
            detail = f" ({e})" if str(e) else ""
            raise ValueError(f"{algo}: option {key}={value!r} is invalid{detail}; valid: {key} {self.valid}") \
                from None


def number(lo: float | None = None, hi: float | None = None, *, integer: bool = False,
           lo_open: bool = False) -> Callable[[Any], Any]:
    """A converter for numeric options: bounds checked, bools refused."""
    def convert(value):
        if isinstance(value, bool):
            raise ValueError("a number is needed")
        v = int(value) if integer and float(value) == int(float(value)) else float(value)
        if integer and not isinstance(v, int):
            raise ValueError("an integer is needed")
        if lo is not None and (v < lo or (lo_open and v == lo)):
            raise ValueError(f"must be {'>' if lo_open else '>='} {lo}")
        if hi is not None and v > hi:
            raise ValueError(f"must be <= {hi}")
        return v
    return convert


class NotAccepted(ValueError):
    """An algorithm does not take this worker count, server count or topology kind
    (`Algorithm.refusal`): a sweep may skip the case where any other bad input is an error."""


@dataclass(frozen=True)
class Counts:
    """The worker counts an algorithm accepts: `ok(P)`, and what is valid in words (shown
    in the refusal line and by `syncbed algos`)."""

    ok: Callable[[int], bool]
    valid: str

    def near(self, p: int, reach: int = 64) -> list[int]:
        """The accepted counts nearest to `p` below and above it (within `reach`), for the refusal line."""
        below = next((q for q in range(p - 1, max(0, p - reach), -1) if self.ok(q)), None)
        above = next((q for q in range(p + 1, p + reach) if self.ok(q)), None)
        return [q for q in (below, above) if q is not None]


ANY_COUNT = Counts(lambda p: p >= 1, "any count >= 1")
POWERS_OF_TWO = Counts(lambda p: p >= 1 and p & (p - 1) == 0, "a power of two (1, 2, 4, 8, ...)")


@dataclass(frozen=True)
class Overlap:
    """How a plan's steps overlap backprop (`Algorithm.timeline`), seconds since backprop began:
    step i may start no earlier than `release[i]` (when the last gradient it carries is
    produced) and pays `startup[i]` (its all-reduce's fixed cost) before its flows start;
    backprop itself ends at `backward_seconds`. The sync is then what is left after backprop."""

    release: tuple
    startup: tuple
    backward_seconds: float


# A charged compute whose work took more than this times its charge made the sync longer than
# the real setting's (the analysis's fidelity verdict, emulation/analysis.py)
OVERRUN = 1.05


# how a Compute's durations on the ranks of one sync combine (`Compute.across`)
ACROSS = ("mean", "max")


@dataclass(frozen=True)
class Compute:
    """CPU work inside the sync that the executor logs only as a duration, `state.observed[key]`
    seconds (no `stage` event times it: a compressor's selection, its merges). The run's trace
    (emulation/timeline.py) draws it as a slice `name` at the sync's start or end (`at`), and
    summary.json keeps its mean over the workers' measured iterations under `key`.

    A run may state what it costs in the real setting (`SyncState.charged`, e.g. the top-k
    selection's time on the paper's GPU, from `real_compress_s` in the experiment): the
    executor's `state.computing(key)` then takes exactly that long, whatever this machine's
    CPU took, and logs both (docs/FIDELITY.md #17)."""

    key: str
    name: str
    at: str = "start"  # "start" or "end" of the sync
    # the kind of real cost an experiment may state for it ("compress": `real_compress_s`);
    # "": none, always this CPU's time
    stated_as: str = ""
    # the executor does it between its messages, never while they fly, so the sync is its flows
    # plus it: replaying its logged mean in the simulation (`syncbed project --measured`) is honest
    serial: bool = True
    # how one sync's durations on several ranks make the sync's (`Algorithm.figures`): "mean", every
    # rank does its own at once (a worker's selection); "max", the sync waits for the slowest rank's
    # (a shard owner's aggregation: every worker needs every owner's pull)
    across: str = "mean"

    def __post_init__(self):
        if self.at not in ("start", "end"):
            raise ValueError(f"Compute {self.key}: at={self.at!r} must be 'start' or 'end'")
        if self.across not in ACROSS:
            raise ValueError(f"Compute {self.key}: across={self.across!r} must be one of {', '.join(ACROSS)}")

    @staticmethod
    def size(plan: dict) -> float:
        """What a cost model's per-element term multiplies (`CostModel`, emulation/simulator/
        costs.py): the gradient's elements, which a selection, an error feedback or a merge into a
        dense result each pass over once."""
        return float(plan["elements"])


@dataclass
class SyncState:
    """One rank's state across the iterations of a run (PyTorch's PowerSGDState in spirit).

    Made once by the worker and handed to every `execute`; fields grouped by role:
    - who: `rank`, `workers` (ranks holding gradients), `world`;
    - when: `iteration`, set by the worker before each call (no side channel);
    - memory: what the algorithm keeps from one iteration to the next (error-feedback
      residuals, a block-size history), by name, owned by the algorithm;
    - observed: what this iteration measured and wants logged (cleared each iteration,
      written into the rank's `iter` event under "observed").
    """

    rank: int
    workers: int
    world: int
    iteration: int = 0
    memory: dict = field(default_factory=dict)
    observed: dict = field(default_factory=dict)
    # Compute key -> the seconds one sync's work is charged (the real setting's stated cost,
    # already time-dilated); a key not here is charged what this CPU took
    charged: dict = field(default_factory=dict)

    def begin(self, iteration: int) -> None:
        self.iteration = int(iteration)
        self.observed = {}

    @contextmanager
    def computing(self, key: str):
        """Time the block as the Compute `key` of this sync, adding to what it logged so far.

        Charged (`charged[key]` seconds): the block is padded to that duration with a sleep,
        so the sync spends what the real setting would; `observed[key]` is the time it took
        (the charge, or more when this CPU overran it), `key_cpu` this CPU's time and
        `key_charged` the charge, so a run shows both and the analysis flags an overrun."""
        t0 = time.perf_counter()
        yield
        spent = time.perf_counter() - t0
        charge = self.charged.get(key)
        if charge is not None:
            if spent < charge:
                time.sleep(charge - spent)
            self.observed[f"{key}_cpu"] = self.observed.get(f"{key}_cpu", 0.0) + spent
            self.observed[f"{key}_charged"] = self.observed.get(f"{key}_charged", 0.0) + charge
            spent = max(spent, time.perf_counter() - t0)
        self.observed[key] = self.observed.get(key, 0.0) + spent


def _per_iteration(observed: dict, key: str) -> list[list[float]]:
    """Per measured iteration (the i-th entry of every rank's list), the `key` durations the ranks
    logged in it ([] where none did)."""
    n = max((len(v) for v in observed.values()), default=0)
    return [[float(obs[i][key]) for obs in observed.values() if i < len(obs) and obs[i].get(key) is not None]
            for i in range(n)]


@dataclass(frozen=True)
class Algorithm:
    name: str
    summary: str  # one line for `syncbed algos` and error messages
    plan: Callable[[PlanContext], dict]
    traffic: Callable[[dict], list]
    execute: Callable  # (plan, comm, grads, state) -> torch.Tensor
    validate: Callable[[PlanContext], None] = lambda ctx: None
    groups: Callable[[dict], list] = lambda plan: []
    topologies: tuple = ()  # topology kinds it runs on; () = any
    uses_servers: bool = False  # accepts ctx.servers > 0
    workers: Counts = ANY_COUNT  # worker counts it runs with (`refusal`)
    phases: Callable[[dict], list] | None = None  # [[Flow]] in order; None: [traffic(plan)]
    options: dict = field(default_factory=dict)  # name -> Option
    reference: Callable | None = None  # (plan, inputs, memory) -> Tensor; None: the dense sum
    data_dependent: bool = False  # expected bytes come from the ranks' per-iteration logs
    # measured planner inputs: "link" (a, b of an all-reduce), "background" (flow rates),
    # "startup" (waits `PlanContext.startup_charge_s` before each collective, which a time
    # dilation of a real setting's start-up asks for: `real_setting.dilation_x`)
    needs: tuple = ()
    describe: Callable[[dict], dict] = lambda plan: {}  # plan facts for summary.json (JSON-able)
    # the overlap of the plan's steps with backprop (Overlap: layer-wise algorithms), which the
    # simulation follows; None: the steps start when backprop has ended, all at once
    timeline: Callable[[dict], Overlap | None] = lambda plan: None
    compute: tuple = ()  # Compute: CPU durations the executor logs in state.observed
    # {worker rank: [state.observed of each measured iteration]} -> its own summary.json figures
    summarize: Callable[[dict], dict] = lambda observed: {}
    # the steps the simulation runs where they are not `steps(plan)` (a pipeline's fill as serial
    # steps, see the module docstring); the same flows in total; None: `steps(plan)`
    simulated: Callable[[dict], list] | None = None
    # message rounds each simulated step waits through one after another (a ring's 2(N-1)
    # steps); the projection charges a per-round latency for each; None: one round per step
    rounds: Callable[[dict], list] | None = None
    # data-dependent algorithms' simulated form (see the module docstring): one measured
    # iteration's steps from the ranks' logs, and one sync's steps from a model of its bytes
    logged_steps: Callable[[dict, dict], list] | None = None
    modelled_steps: Callable[[dict], list] | None = None

    # the same steps as `steps(plan)` (a data-dependent algorithm: as `modelled_steps(plan)`),
    # each as FlowBlocks (all-to-all blocks of equal flows), for a plan whose flows are too many
    # to list (PS: P(P-1) a step); returns None where the plan has no such form. None (the
    # default): the projection lists every flow
    blocks: Callable[[dict], list | None] | None = None

    def steps(self, plan: dict) -> list:
        """The sync's traffic as consecutive steps of concurrent flows."""
        return self.phases(plan) if self.phases else [self.traffic(plan)]

    def simulated_steps(self, plan: dict) -> list:
        """The steps the simulation runs (`simulated`, else `steps(plan)`): the same flows in total."""
        return self.simulated(plan) if self.simulated else self.steps(plan)

    def step_blocks(self, plan: dict) -> list | None:
        """The steps as lists of `FlowBlock`s (`blocks`), or None where the algorithm or this
        plan has no block form. Expanding them gives `steps(plan)` flow for flow, a
        data-dependent algorithm's `modelled_steps(plan)` (tested)."""
        return self.blocks(plan) if self.blocks else None

    def compute_charges(self, plan: dict, costs: dict) -> tuple[float, float]:
        """(seconds before the first step, seconds after the last) of one sync: each declared
        `Compute` whose key `costs` holds ({key: a cost model, anything with `seconds(size)`}),
        at its `at`, for the plan's `Compute.size`. A key not in `costs` costs nothing."""
        before = after = 0.0
        for c in self.compute:
            if c.key in costs:
                secs = float(costs[c.key].seconds(c.size(plan)))
                if c.at == "start":
                    before += secs
                else:
                    after += secs
        return before, after

    def step_rounds(self, plan: dict) -> list[int]:
        """Sequential message rounds per simulated step (`rounds`, else 1 each): the latency term."""
        if self.rounds:
            return list(self.rounds(plan))
        blocks = self.step_blocks(plan)  # counting steps without listing their flows
        return [1] * (len(blocks) if blocks is not None else len(self.simulated_steps(plan)))

    def figures(self, observed: dict) -> dict:
        """What summary.json keeps of the workers' observations (`observed`: {worker rank:
        [state.observed of each measured iteration]}): the mean of each `compute` duration
        that was logged (`Compute.across`: "mean" over ranks and iterations; "max", the mean over
        iterations of the slowest rank's), then the algorithm's own `summarize`. A "mean" one also
        gets `<key>_slowest`, the mean over iterations of the slowest rank's: what a sync whose
        ranks wait for each other waits for (the projection's replay charges it, issue #23)."""
        out = {}
        for c in self.compute:
            for key in (c.key, f"{c.key}_cpu", f"{c.key}_charged"):
                if c.across == "max":
                    secs = [max(v) for v in _per_iteration(observed, key) if v]
                else:
                    secs = [float(obs[key]) for rank_obs in observed.values() for obs in rank_obs
                            if obs.get(key) is not None]
                if secs:
                    out[key] = statistics.fmean(secs)
            if c.across == "mean":
                slowest = [max(v) for v in _per_iteration(observed, c.key) if v]
                if slowest:
                    out[f"{c.key}_slowest"] = statistics.fmean(slowest)
            overran = [obs[f"{c.key}_cpu"] / obs[f"{c.key}_charged"] for rank_obs in observed.values()
                       for obs in rank_obs if obs.get(f"{c.key}_charged")]
            if overran:
                over = [r for r in overran if r > OVERRUN]
                out.setdefault("charged_overruns", {})[c.key] = {
                    "syncs": len(overran), "overran": len(over), "max_ratio": round(max(overran), 3)}
        return {**out, **self.summarize(observed)}

    def refusal(self, workers: int, servers: int = 0, topology=None) -> str | None:
        """Why it does not run with `workers` workers and `servers` dedicated servers on
        `topology` (its kind), in one line saying what is valid; None when it does."""
        if workers < 1:
            return f"{self.name}: need at least 1 worker, got {workers}"
        if not self.workers.ok(workers):
            near = " or ".join(map(str, self.workers.near(workers)))
            return (f"{self.name} does not run with {workers} workers; valid: {self.workers.valid}"
                    + (f", e.g. {near}" if near else ""))
        if servers and not self.uses_servers:
            return (f"{self.name} does not use dedicated servers (servers={servers}); only "
                    f"{', '.join(a for a, v in registry().items() if v.uses_servers)} do")
        kind = getattr(topology, "kind", None)
        if self.topologies and kind is not None and kind not in self.topologies:
            return f"{self.name} runs on {' or '.join(self.topologies)} only, not {topology.name}"
        return None

    def accepts_help(self) -> str:
        """What it accepts, for `syncbed algos`."""
        return ", ".join([f"workers {self.workers.valid}",
                          "dedicated servers" if self.uses_servers else "no dedicated servers",
                          f"{' or '.join(self.topologies)} only" if self.topologies else "any topology"])

    def parse_options(self, raw: dict) -> dict:
        """Typed options with defaults filled in; unknown names refused, listing the valid ones."""
        raw = raw or {}
        check_options(self.name, raw, tuple(self.options))
        typed = {key: (opt.parse(self.name, key, raw[key]) if key in raw else opt.default)
                 for key, opt in self.options.items()}
        return {key: v for key, v in typed.items() if v is not None}  # None: "not given"

    def option_help(self) -> str:
        return ", ".join((f"{k}={o.default}" if o.default is not None else k) + f" ({o.valid})"
                         for k, o in self.options.items()) or "(no options)"


def check_context(algo: Algorithm, ctx: PlanContext) -> PlanContext:
    """Shared input checks, then the algorithm's own; raise ValueError with one line.

    Returns the context with typed options (defaults filled in), which is what `plan` gets."""
    why = algo.refusal(ctx.workers, ctx.servers, ctx.topology)
    if why:
        raise NotAccepted(why)
    if not ctx.layer_sizes or any(int(s) <= 0 for s in ctx.layer_sizes):
        raise ValueError(f"{algo.name}: layer sizes must be positive element counts")
    if ctx.layers and tuple(int(l[1]) for l in ctx.layers) != tuple(int(s) for s in ctx.layer_sizes):
        raise ValueError(f"{algo.name}: layers and layer_sizes disagree")
    ctx = dataclasses.replace(ctx, options=algo.parse_options(ctx.options))
    algo.validate(ctx)
    return ctx


_REGISTRY: dict[str, Algorithm] = {}
# What `syncbed run` compares when an experiment file names no algorithm, and what `syncbed
# train` trains with when a training file names none: named here, beside the registry, so
# that the emulation names no algorithm (emulation/config.py reads them).
DEFAULT_ALGORITHMS = ("gloo", "ring", "ps")
DEFAULT_TRAIN_ALGORITHMS = ("ring",)


def registry() -> dict[str, Algorithm]:
    """name -> Algorithm, discovered from the modules of this package once."""
    if not _REGISTRY:
        import workloads.algorithms as pkg

        for mod in pkgutil.iter_modules(pkg.__path__):
            if mod.name == "base":
                continue
            algo = getattr(importlib.import_module(f"{pkg.__name__}.{mod.name}"), "ALGORITHM", None)
            if algo is not None:
                _REGISTRY[algo.name] = algo
    return _REGISTRY


def get(name: str) -> Algorithm:
    reg = registry()
    if name not in reg:
        raise ValueError(f"unknown algorithm {name!r}; valid: {', '.join(sorted(reg))}")
    return reg[name]


def plan_for(name: str, ctx: PlanContext) -> tuple[Algorithm, dict]:
    """Check the context once (shared checks, typed options, the algorithm's validate), then plan.

    `name` may be a spec with options (`topk,density=0.01`); they are merged over ctx.options."""
    name, opts = parse_spec(name, "algorithm") if "," in name else (name, {})
    algo = get(name)
    if opts:
        ctx = dataclasses.replace(ctx, options={**ctx.options, **opts})
    ctx = check_context(algo, ctx)
    plan = algo.plan(ctx)
    plan.setdefault("algorithm", algo.name)
    plan.setdefault("world", ctx.world)
    plan.setdefault("elements", ctx.elements)
    return algo, plan


def check_plan(plan: dict, world: int, elements: int) -> None:
    """The check every executor needs, done once by the worker before the first `execute`."""
    if plan.get("world") != world or plan.get("elements") != elements:
        raise ValueError(f"{plan.get('algorithm')} plan is for {plan.get('world')} ranks and "
                         f"{plan.get('elements')} elements, got {world} ranks and {elements} elements")


def parse_algos(specs) -> list[tuple[str, dict]]:
    """`["ring,ps", "topk,density=0.01"]` (or one string) -> [(name, {key: raw value})].

    Within one string a token without `=` starts a new algorithm, so `ring,ps` is two and
    `topk,density=0.01,gtopk` is topk with an option, then gtopk. Names are checked."""
    if isinstance(specs, str):
        specs = [specs]
    out: list[tuple[str, dict]] = []
    for spec in specs:
        if isinstance(spec, dict):  # YAML: {name: {options}} or {name: x, key: v}
            for name, opts in spec.items():
                get(str(name))
                out.append((str(name), dict(opts or {})))
            continue
        current: list[str] = []
        for token in [t.strip() for t in str(spec).split(",") if t.strip()]:
            if "=" not in token and current:
                out.append(parse_spec(",".join(current), "algorithm"))
                current = []
            current.append(token)
        if current:
            out.append(parse_spec(",".join(current), "algorithm"))
    for name, _ in out:
        get(name)
    if not out:
        raise ValueError(f"no algorithm given; valid: {', '.join(sorted(registry()))}")
    return out


def spec_of(name: str, options: dict | None = None) -> str:
    """Canonical spec string: `name` then `key=value` in sorted order (lists joined by `:`)."""
    def fmt(v):
        if isinstance(v, (list, tuple)):
            return ":".join(str(x) for x in v)
        return f"{v:g}" if isinstance(v, float) else str(v)
    return ",".join([name] + [f"{k}={fmt(v)}" for k, v in sorted((options or {}).items())])


def per_algorithm(values, algorithms, option: str, valid: str, check, default: float) -> tuple[float, dict]:
    """(the value for every algorithm, {algorithm: its own}) from an option's values (the
    projection's `--fan-in`, `--round-latency`): a number V (every algorithm's; at most one, else
    `default`) or ALGO=V (that algorithm's, repeatable). `values` may be a number or a list of
    strings; `algorithms`: the valid names; `valid` says what V may be ("a number in (0, 1]");
    `check(v)` is False for a V outside it. ValueError in one line naming what is wrong and what
    is valid, before anything runs."""
    if values is None:
        values = []
    elif isinstance(values, (int, float)):
        values = [values]
    every, own = None, {}
    for v in values:
        name, _, num = str(v).rpartition("=")
        try:
            x = float(num)
        except ValueError:
            raise ValueError(f"{option} {v!r}: give V or ALGO=V with V {valid}") from None
        if not check(x):
            raise ValueError(f"{option} {v!r}: the value must be {valid}")
        if not name:
            if every is not None:
                raise ValueError(f"{option} {v!r}: one value for every algorithm at most (got {every:g} already); "
                                 "give the others as ALGO=V")
            every = x
        elif name not in algorithms:
            raise ValueError(f"{option} {v!r}: no algorithm {name!r}; valid: {', '.join(sorted(algorithms))}")
        elif name in own:
            raise ValueError(f"{option} {v!r}: {name} given twice")
        else:
            own[name] = x
    return (default if every is None else every), own


def split(total: int, parts: int) -> list[tuple[int, int]]:
    """[start, end) of `parts` near-equal contiguous chunks of `total` (first ones larger)."""
    base, extra = divmod(total, parts)
    out, start = [], 0
    for i in range(parts):
        end = start + base + (1 if i < extra else 0)
        out.append((start, end))
        start = end
    return out


def check_options(name: str, options: dict, valid: tuple) -> None:
    """Reject option names an algorithm does not read, listing the ones it does."""
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(f"{name}: unknown option(s) {', '.join(unknown)}; valid: "
                         f"{', '.join(valid) if valid else '(none)'}")


def merge_flows(flows) -> list[Flow]:
    """One Flow per (src, dst, nic) with the bytes summed; zero-byte flows dropped; sorted."""
    total: dict[tuple, list] = {}
    for f in flows:
        t = total.setdefault((f.src, f.dst, f.nic), [0, 0])
        t[0] += int(f.bytes)
        t[1] += int(f.messages) if f.bytes else 0
    return [Flow(s, d, n, b, m) for (s, d, n), (b, m) in sorted(total.items()) if b > 0]


def same_step(a, b) -> bool:
    """Whether steps `a` and `b` hold the very same flow objects, in the same order (identity,
    not equality: one pass of pointer comparisons). An algorithm whose steps repeat may share one
    step's Flows among them (Top-k's P - 1 ring steps), and the projection's passes over steps
    then answer a repeat from the step before (`per_step`) instead of walking its flows again."""
    return a is b or (len(a) == len(b) and all(x is y for x, y in zip(a, b)))


def per_step(fn, steps) -> list:
    """[fn(step) for step in steps], but a step that is `same_step` as the one before takes that
    step's answer (the same object, so callers must not mutate it). Equal to the plain list for
    any pure `fn` (tested)."""
    out, prev = [], None
    for s in steps:
        out.append(out[-1] if out and same_step(s, prev) else fn(s))
        prev = s
    return out


def wire_flows(flows) -> list[Flow]:
    """`wire_legs` as Flows (messages 0, so `payload == bytes`)."""
    return [Flow(s, d, n, b, 0) for s, d, n, b in wire_legs(flows)]


def wire_legs(flows) -> list[tuple[int, int, int, int]]:
    """The TCP payload `flows` put on the wire, one (src, dst, nic, bytes) per direction of
    each connection: src -> dst carries the data and the sender's
    GLOO_SEND_FRAMING_BYTES per message, dst -> src (the same NIC's connection, on its own
    route) the receiver's GLOO_NOTIFY_BYTES per message. Summed over both directions it is
    `sum(f.payload)`; what differs is which links carry the notifications. Sorted, zero bytes
    and src == dst dropped (as `merge_flows` of the legs; summed here without making them: the
    legs were most of a projection's Python time at thousands of workers)."""
    total: dict[tuple, int] = {}
    for f in flows:
        if f.src == f.dst:
            continue
        key = (f.src, f.dst, f.nic)
        total[key] = total.get(key, 0) + int(f.bytes) + int(f.messages) * GLOO_SEND_FRAMING_BYTES
        if f.messages:
            back = (f.dst, f.src, f.nic)
            total[back] = total.get(back, 0) + int(f.messages) * GLOO_NOTIFY_BYTES
    return [(s, d, n, b) for (s, d, n), b in sorted(total.items()) if b > 0]


def dense_reference(plan: dict, inputs, memory: dict):
    """The default oracle: the element-wise sum of every worker's gradient, in rank order."""
    total = inputs[0].clone()
    for x in inputs[1:]:
        total += x
    return total
