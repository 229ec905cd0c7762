"""The one contract every sync algorithm follows, and the registry that names them.

An algorithm is a module in `workloads/algorithms/` that defines `ALGORITHM =
Algorithm(...)`. It has two halves (STYLE.md: plan in pure functions, execute elsewhere):
- pure: `validate(ctx)`, `plan(ctx) -> dict` (JSON-able), `traffic(plan) -> [Flow]`
  (payload bytes of one sync, the closed form the captures are checked against),
  `groups(plan) -> [GroupSpec]` (extra process groups the executor needs) and, optionally,
  `phases(plan) -> [[Flow]]` (the same traffic cut into steps that run one after another,
  for the flow-level bound in emulation/fluid.py; absent = one step, all flows at once);
- executor: `execute(plan, comm, grads) -> torch.Tensor`, run inside the worker, which
  only carries out the plan with Gloo calls through `comm` (workloads/comm.py).

Ranks 0..workers-1 hold gradients; ranks workers..world-1 (if any) are dedicated
servers (PS on S hosts) that hold none. Every rank calls `execute`; a worker gets the
element-wise sum over workers back, which must equal a plain all-reduce.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable

DTYPE_BYTES = 4  # float32 gradients everywhere
# TCP payload Gloo adds per point-to-point message (its preamble and the receiver's
# notification), measured on the emulated network (docs/FIDELITY.md): the captures are
# checked against data bytes + messages x this.
GLOO_FRAMING_BYTES = 126


@dataclass(frozen=True)
class PlanContext:
    """Everything a planner may read. Pure data, no processes."""

    workers: int  # ranks holding gradients
    layer_sizes: tuple  # elements per layer, forward order
    servers: int = 0  # dedicated server ranks after the workers (PS on S hosts)
    nics: int = 1  # NICs per host the algorithm may use (BCube: k)
    topology: Any = None  # topologies.description.Topology or None (localhost tests)
    hosts: tuple = ()  # rank -> host name, when a topology is given
    options: dict = field(default_factory=dict)  # algorithm-specific knobs

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
class GroupSpec:
    """A process group over `ranks` (global ranks, in group-rank order) bound to NIC `nic`."""

    id: str
    ranks: tuple
    nic: int = 0


@dataclass(frozen=True)
class Algorithm:
    name: str
    summary: str  # one line for `syncbed algos` and error messages
    plan: Callable[[PlanContext], dict]
    traffic: Callable[[dict], list]
    execute: Callable  # (plan, comm, grads) -> torch.Tensor
    validate: Callable[[PlanContext], None] = lambda ctx: None
    groups: Callable[[dict], list] = lambda plan: []
    topologies: tuple = ()  # topology kinds it runs on; () = any
    uses_servers: bool = False  # accepts ctx.servers > 0
    phases: Callable[[dict], list] | None = None  # [[Flow]] in order; None: [traffic(plan)]

    def steps(self, plan: dict) -> list:
        """The sync's traffic as consecutive steps of concurrent flows."""
        return self.phases(plan) if self.phases else [self.traffic(plan)]


def check_context(algo: Algorithm, ctx: PlanContext) -> None:
    """Shared input checks, then the algorithm's own; raise ValueError with one line."""
    if ctx.workers < 1:
        raise ValueError(f"{algo.name}: need at least 1 worker, got {ctx.workers}")
    if not ctx.layer_sizes or any(int(s) <= 0 for s in ctx.layer_sizes):
        raise ValueError(f"{algo.name}: layer sizes must be positive element counts")
    if ctx.servers and not algo.uses_servers:
        raise ValueError(f"{algo.name} does not use dedicated servers (servers={ctx.servers}); only "
                         f"{', '.join(a for a, v in registry().items() if v.uses_servers)} do")
    kind = getattr(ctx.topology, "kind", None)
    if algo.topologies and kind is not None and kind not in algo.topologies:
        raise ValueError(f"{algo.name} runs on {' or '.join(algo.topologies)} only, not {ctx.topology.name}")
    algo.validate(ctx)


_REGISTRY: dict[str, Algorithm] = {}


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
    algo = get(name)
    check_context(algo, ctx)
    return algo, algo.plan(ctx)


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
