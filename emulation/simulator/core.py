"""Project an algorithm's sync schedule to thousands of workers in SimGrid (issue #11).

The emulation is faithful up to a few dozen workers on one machine; this runs the same plan
(`Algorithm.steps(plan)`, the same `Flow`s the workers send and the analysis checks) on the
same `Topology` in SimGrid's flow-level network model, at any size the description builds.

    syncbed project --topo fattree,k=16 --algo ring,ps --workers 1024 --mb 4 --bw 1000
    syncbed project --topo fattree,k=8 --topo fattree,k=16 --algo ring,gloo      (a sweep: time against P)
    syncbed project experiments/default.yaml --measured docs/results/default     (validation)

Split of duties:
- `emulation/simulator/platform.py`: Topology -> SimGrid platform (hosts, switches, directed
  links, the description's routes); pure data, then `instantiate`.
- here, pure: `NetworkModel` (the SimGrid options and why), `simulable` (which plans have a
  simulated form), `check_buildable` / `estimate_memory` / `estimate_seconds` (refuse, in one
  line, a description or a projection that would not fit in memory or would run for hours),
  `schedule` (steps -> the messages each step starts);
- here, SimGrid: `simulate` runs one schedule in a forked child process (SimGrid 3.32 allows
  one engine per process, and aborts on a second), with one driver actor that starts every
  message of a step with `Comm.sendto_async` and waits for all of them (the step barrier
  the emulation's analysis also assumes), or, for comparison, one actor per rank (`mode`);
- `project`: one run record with the emulation's summary.json field names plus
  `"simulated": true`.
The sweep of a command (its projections, the measured runs, the results folder) is
`emulation/simulator/sweep.py`; its options are `syncbed project`'s (emulation/cli.py).

Messages. Every `Flow(src, dst, nic, bytes, messages)` of a step becomes one SimGrid
communication of `bytes + messages * GLOO_FRAMING_BYTES` (its TCP payload on the wire, what
the captures measure) from src's host to dst's NIC `nic`, along `Topology.route`.
"""
from __future__ import annotations

import multiprocessing
import os
import resource
import signal
import statistics
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path

from emulation.simulator import platform as simgrid_platform
from emulation.simulator import fanin
from emulation.simulator import orbits
from emulation.simulator import symmetry
from topologies.description import Topology
from workloads.algorithms import base


class TooLarge(ValueError):
    """A projection refused before it starts: its memory or run time estimate is too large."""


MODES = ("driver", "ranks")


# ---- the network model ------------------------------------------------------------------
@dataclass(frozen=True)
class NetworkModel:
    """SimGrid's CM02 model: max-min fair sharing of every directed link among the flows
    crossing it, re-solved at each flow's start and end, with only the corrections below.

    Why not the default LV08: it multiplies link latency by 13.01 and weighs flows by
    (latency + 20537 B / bandwidth) per link (RTT unfairness fitted on real WANs). The
    emulated network has no link delay, every flow of a link queues behind the same HTB
    queue, and the question is the bandwidth term: plain max-min with a bandwidth factor.
    - bandwidth factor = TCP payload per frame that HTB shapes: (MTU - 52) / (MTU + 14)
      (IPv4 20 B + TCP with timestamps 32 B inside the MTU; HTB counts the 14 B Ethernet
      header). 0.9927 at the emulation's MTU 9000, 0.956 at 1500. The messages are payload
      bytes, so this is the rate they can have.
    - latency 0 (and latency factor 1): no delay is emulated; TCP's window limit
      (gamma / 2 RTT) then never binds, as on the emulated LAN.
    - cross-traffic off: SimGrid would charge 5% of each flow to the reverse route for
      ACKs; at MTU 9000 one 66 B ACK per two frames is 0.4%.
    - optim Full (re-solve the whole sharing system at each event) instead of Lazy: the same
      times, and 30% less CPU when every flow of a step shares links with the others (PS on
      Fat-Tree k=8: 16 s against 23 s), which is the case that costs (docs/PROJECTION.md).
    """

    mtu: int = 9000
    bandwidth_factor: float | None = None  # None: from the MTU
    # fan-in efficiency e (emulation/simulator/fanin.py): a link into a NIC crossed by n flows
    # delivers e + (1 - e) / n of its capacity (SimGrid's NONLINEAR sharing); 1: plain max-min
    fan_in: float = 1.0
    # e_o: the same on an oversubscribed switch-to-switch link (fanin.oversubscribed_links); 1: off
    oversubscribed: float = 1.0

    @property
    def factor(self) -> float:
        if self.bandwidth_factor is not None:
            return float(self.bandwidth_factor)
        return (self.mtu - 52) / (self.mtu + 14)

    def cfg(self) -> list:
        return ["--cfg=network/model:CM02", f"--cfg=network/bandwidth-factor:{self.factor:.6f}",
                "--cfg=network/latency-factor:1", "--cfg=network/weight-S:0",
                "--cfg=network/crosstraffic:0", "--cfg=network/optim:Full"]

    def describe(self) -> dict:
        return {"name": "CM02", "bandwidth_factor": round(self.factor, 6), "mtu": self.mtu,
                "latency_s": 0.0, "weight_S": 0, "crosstraffic": False, "optim": "Full", "cfg": self.cfg(),
                "fan_in_efficiency": self.fan_in, "oversubscribed_efficiency": self.oversubscribed}

    def nic_capacity(self, platform, charged: set) -> dict | None:
        """link -> SimGrid NONLINEAR callback (fanin.py) for each link into a NIC (at fan_in) and each
        of the oversubscribed links `charged` (`charged_oversubscribed`, at oversubscribed), or None
        when neither applies."""
        out = {}
        if self.oversubscribed != 1.0:
            cb = fanin.capacity(self.oversubscribed)
            out.update({link: cb for link in charged})
        if self.fan_in != 1.0:
            cb = fanin.capacity(self.fan_in)
            out.update({link: cb for link in fanin.nic_links(platform.routes.values())})
        return out or None

    def charged_oversubscribed(self, platform, sched: list) -> set:
        """The oversubscribed links e_o is charged on: those whose flows in `sched` (steps of (src ep,
        dst ep, bytes)) meet a second one at least as loaded (`fanin.in_series`); none when it is 1."""
        if self.oversubscribed == 1.0:
            return set()
        over = fanin.oversubscribed_links(platform.links, platform.trunks)
        return fanin.in_series(sched, platform.routes, over, platform.links)


def oversubscribed_links_of(topo: Topology) -> set:
    """The topology's oversubscribed links (`fanin.oversubscribed_links` of its platform's links)."""
    return fanin.oversubscribed_links(simgrid_platform.directed_links(topo), simgrid_platform.trunks(topo))


def oversubscribed_charged(req, topo) -> float:
    """The e_o that changes anything in a projection of `req` on `topo`: its `oversubscribed` where
    the topology has oversubscribed links (`fanin.oversubscribed_links`), else 1. Where it is 1 the
    flows may be reduced by symmetry as without it (a calibration's e_o leaves a projection on
    equal links as fast as before)."""
    eo = getattr(req, "oversubscribed", 1.0)
    if eo == 1.0:
        return 1.0
    return eo if oversubscribed_links_of(topo) else 1.0


# ---- pure: what can be simulated, how much memory, which messages ------------------------
def simulable(algo: base.Algorithm) -> str | None:
    """None if the plan has a simulated form; else one line saying why not. A data-dependent
    algorithm has one when it models its bytes (`Algorithm.modelled_steps`; from a measured run,
    `Algorithm.logged_steps` replays what its ranks logged)."""
    if algo.data_dependent and algo.modelled_steps is None:
        return (f"{algo.name}'s bytes depend on the gradients and it gives no model of them "
                f"(Algorithm.modelled_steps): no simulated form")
    return None


@dataclass
class SimForm:
    """A plan as the simulation runs it: consecutive steps of concurrent flows, each step
    released no earlier than `release[i]` seconds after backprop starts, and paying
    `startup[i]` seconds (the all-reduce's fixed cost) before its flows start.

    Algorithms whose sync starts after backprop: compute is not simulated (backprop ended at
    0), every release is 0, each step's start-up its message rounds' latency, and the sync is
    the steps' total. Algorithms whose steps overlap backprop say how (`Algorithm.timeline`,
    a `base.Overlap`: e.g. one step per layer group, released when the group's last layer is
    produced, each paying the plan's all-reduce start-up); the flow model supplies the
    bandwidth term. Iteration = max(last step's end, backprop's end), sync = iteration -
    backprop (the emulation's `sync_seconds`: the communication left after the last gradient
    was ready)."""

    steps: list
    release: list
    startup: list
    backward_seconds: float = 0.0
    overlapped: bool = False  # the steps overlap backprop (Algorithm.timeline)
    # compute seconds charged before each step's flows (after its start-up) and after them
    # (`Algorithm.compute_charges`: a sync's declared Computes from their cost models); [] = none
    before: list = field(default_factory=list)
    after: list = field(default_factory=list)
    # a measured data-dependent run replayed iteration by iteration (`logged`): steps per sync
    # and the warmup syncs left out of the median; 0: all steps are one sync
    per_sync: int = 0
    warmup: int = 0
    bytes_source: str = "plan"  # "plan" (its steps), "model" (modelled_steps), "logged" (logged_steps)
    # per step, the flows into its busiest NIC beyond the first (fanin.extra_flows; what `incast`
    # charges); [] where not counted (steps that overlap backprop keep their own start-ups)
    extra_flows: list = field(default_factory=list)
    # per step, the seconds of each of those flows (`incast_steps`: the incast start-up, capped by
    # the step's flow bytes where a share is given); [] where none is charged
    incast_per_flow: list = field(default_factory=list)
    # per step, the mean bytes of one flow into its busiest NIC (fanin.converging_bytes) where a
    # share caps the start-up (what the record's incast_flow_bytes reports); [] otherwise
    converging_flow_bytes: list = field(default_factory=list)

    @property
    def syncs(self) -> int:
        return len(self.steps) // self.per_sync if self.per_sync else 1

    @property
    def compute_per_sync(self) -> float:
        """Compute seconds one sync is charged (the same for every sync)."""
        n = self.per_sync or len(self.steps)
        return sum(self.before[:n]) + sum(self.after[:n])

    @property
    def extra_flows_per_sync(self) -> float | None:
        """Flows into each step's busiest NIC beyond the first, summed over a sync (a mean over
        replayed syncs); None where not counted."""
        return sum(self.extra_flows) / self.syncs if self.extra_flows else None

    def timing(self) -> tuple:
        zeros = [0.0] * len(self.steps)
        return self.release, self.startup, self.before or zeros, self.after or zeros


def _charged(n: int, syncs: int, before: float, after: float) -> tuple[list, list]:
    """Per step of `syncs` syncs of `n` steps: `before` on each sync's first step, `after` on its last."""
    b, a = [0.0] * (n * syncs), [0.0] * (n * syncs)
    for j in range(syncs):
        b[j * n] += before
        a[j * n + n - 1] += after
    return b, a


def simulated_form(algo: base.Algorithm, plan: dict, round_latency: float = 0.0, costs: dict | None = None,
                   logged: list | None = None, warmup: int = 0, incast: float = 0.0,
                   incast_cap: tuple | None = None, arrival=None) -> SimForm:
    """The plan's SimForm (pure); ValueError (one line) where there is none.

    `round_latency` (seconds): the start-up of one message round, charged `Algorithm.step_rounds`
    times before each step's flows (a ring's 2(N-1) rounds, PS's one per phase): the latency
    term the zero-latency flow model lacks. `incast` (seconds): the start-up of each flow into a
    step's busiest NIC beyond the first (`fanin.extra_flows`), charged with it: what N flows
    converging on one NIC lose to their TCP stalls where that is a time per flow rather than a
    share of the bytes (PS with CUBIC in the hosts: docs/PROJECTION.md, "Fan-in"); with
    `incast_cap` (share, hosts' link Mbit/s) no more per flow than that share of the step's flow
    bytes at that rate (`incast_steps`). The flows into a NIC are those addressed to it, or with
    `arrival` (`fanin.arrivals` of the topology) those whose routes enter it: a BCube server
    receives on the NIC its route ends at and relays on others. A plan whose
    steps overlap backprop (`Algorithm.timeline`) keeps its own start-ups instead (e.g. a measured all-reduce
    start-up a per group, which already prices its rounds).

    `costs` ({Compute key: cost model}): each sync pays its declared Computes' seconds
    (`Algorithm.compute_charges`) before its first step's flows and after its last one's.
    Data-dependent algorithms: `logged` (one {rank: {"sent", "phases"}} per measured iteration,
    warmup first) replays every iteration's steps one after another (`Algorithm.logged_steps`),
    `warmup` of them left out of the median; without it, one sync from `Algorithm.modelled_steps`."""
    why = simulable(algo)
    if why:
        raise ValueError(why)
    if not (round_latency >= 0 and round_latency < float("inf")):
        raise ValueError(f"round latency {round_latency!r} must be a number of seconds >= 0")
    if not (incast >= 0 and incast < float("inf")):
        raise ValueError(f"incast start-up {incast!r} must be a number of seconds >= 0")
    before, after = algo.compute_charges(plan, costs or {})
    if logged is not None:
        if not algo.data_dependent or algo.logged_steps is None:
            raise ValueError(f"{algo.name}: its bytes are the plan's; there is no logged form to replay")
        if not logged:
            raise ValueError(f"{algo.name}: no logged iteration to replay")
        per = [algo.logged_steps(plan, it) for it in logged]
        n = len(per[0])
        if any(len(p) != n for p in per):
            raise ValueError(f"{algo.name}: logged iterations of different step counts")
        rounds = algo.step_rounds(plan)
        if len(rounds) != n:
            raise ValueError(f"{algo.name}: {len(rounds)} round counts for {n} steps")
        b, a = _charged(n, len(per), before, after)
        steps = [s for p in per for s in p]
        extra, fb = fanin.extra_flows(steps, arrival), _flow_bytes(steps, incast_cap, arrival)
        inc = incast_steps(steps, incast, incast_cap, fb)
        return SimForm(steps, [0.0] * n * len(per), _startups(rounds * len(per), extra, round_latency, inc),
                       before=b, after=a, per_sync=n, warmup=int(warmup), bytes_source="logged", extra_flows=extra,
                       incast_per_flow=inc, converging_flow_bytes=fb)
    modelled = algo.data_dependent
    steps = algo.modelled_steps(plan) if modelled else algo.simulated_steps(plan)
    source = "model" if modelled else "plan"
    overlap = algo.timeline(plan)
    b, a = _charged(len(steps), 1, before, after)
    if overlap is not None:
        if not len(overlap.release) == len(overlap.startup) == len(steps):
            raise ValueError(f"{algo.name}: {len(steps)} steps for {len(overlap.release)} release times and "
                             f"{len(overlap.startup)} start-ups")
        return SimForm(steps, [float(t) for t in overlap.release], [float(t) for t in overlap.startup],
                       float(overlap.backward_seconds), True, before=b, after=a, bytes_source=source)
    rounds = algo.step_rounds(plan)
    if len(rounds) != len(steps):
        raise ValueError(f"{algo.name}: {len(rounds)} round counts for {len(steps)} steps")
    extra, fb = fanin.extra_flows(steps, arrival), _flow_bytes(steps, incast_cap, arrival)
    inc = incast_steps(steps, incast, incast_cap, fb)
    return SimForm(steps, [0.0] * len(steps), _startups(rounds, extra, round_latency, inc), before=b, after=a,
                   bytes_source=source, extra_flows=extra, incast_per_flow=inc, converging_flow_bytes=fb)


def _flow_bytes(steps, cap, arrival=None) -> list:
    """Per step, `fanin.converging_bytes` (into the NICs `arrival` says, `fanin.arrivals`) where a
    share caps the start-up, else []."""
    return base.per_step(lambda s: fanin.converging_bytes(s, arrival), steps) if cap and cap[0] else []


def incast_steps(steps, incast: float, cap: tuple | None = None, flow_bytes: list | None = None) -> list:
    """Per step, the seconds each flow into its busiest NIC beyond the first costs: `incast`, or
    with `cap` (share, hosts' link Mbit/s) no more than that share of the step's flow bytes at
    that rate (`fanin.capped_startup` of `fanin.converging_bytes`, or of `flow_bytes` where the
    caller has them: `_flow_bytes`). Pure."""
    if not cap or not cap[0] or not incast:
        return [incast] * len(steps)
    share, mbps = cap
    fb = flow_bytes if flow_bytes else [fanin.converging_bytes(s) for s in steps]
    return [fanin.capped_startup(incast, b, mbps, share) for b in fb]


def _each(incast, n: int) -> list:
    """An incast start-up per step: `incast` itself where it is a list (`incast_steps`), else n times it."""
    return incast if isinstance(incast, list) else [incast] * n


def _startups(rounds: list, extra: list, round_latency: float, incast) -> list:
    """Each step's start-up: L x its message rounds, plus the incast start-up (seconds per flow,
    one for every step or a list: `incast_steps`) x its extra flows."""
    return [round_latency * r + i * x for r, x, i in zip(rounds, extra, _each(incast, len(extra)))]


def past_slack(form: SimForm, incast, slack: float) -> tuple[SimForm, float]:
    """(`form` with its incast start-ups charged only past `slack` seconds, what they charge):
    the start-ups of the whole form (`incast`, seconds per flow for every step or a list per
    step, x its extra flows, summed over its steps and syncs)
    less the seconds its busiest link needs beyond its NICs' (the bound less the non-blocking
    bound, over the same syncs), at least 0, taken from each step's start-up in proportion to its
    extra flows. A NIC's stalls behind a busier uplink cost the sync nothing (docs/PROJECTION.md,
    "Charged only past the slack": form C, the CUBIC validation's). Pure."""
    inc = _each(incast, len(form.extra_flows))
    total = sum(i * x for i, x in zip(inc, form.extra_flows))
    if total <= 0:
        return form, 0.0
    charged = fanin.past_slack(total, slack)
    keep = charged / total
    startup = [s - i * x * (1.0 - keep) for s, x, i in zip(form.startup, form.extra_flows, inc)]
    return replace(form, startup=startup), charged


# Bytes per object, measured on this machine (peak RSS, see docs/PROJECTION.md): a host's
# static route and an ARP entry in the description (BCube(8,3): 774k routes, 283 MB; Fat-Tree
# k=16: 1M ARP entries, 75 MB), an interface, a switch's ECMP table entry for one destination
# NIC, a simulated route (Python tuples of names in the memo and the platform, SimGrid's route
# and its link vector), a concurrent communication (activity, LMM variable and its elements),
# one cell of the full zone's route table.
MEM_BASE = 250e6  # interpreter, torch (imported by the algorithm registry), SimGrid, networkx
MEM_PER_HOST_ROUTE = 370.0
MEM_PER_ARP = 75.0
MEM_PER_INTF = 2000.0
MEM_PER_TABLE_ENTRY = 150.0
MEM_PER_ROUTE = 700.0
MEM_PER_ROUTE_LINK = 260.0
MEM_PER_COMM = 2500.0
MEM_PER_CELL = 8.0
# CPU seconds, measured (PS with two-level routing on Fat-Tree k=6, 8, 10 and 512 workers of
# k=16: 2,862, 16,256, 62,250 and 261,632 flows per step in 0.9, 6.0, 36.9 and 851 s): a step
# of F flows costs ~1e-4 s x F (the Python driver's start and wait, SimGrid's activities) plus
# ~6.2e-9 s x F^2 (SimGrid re-solves the sharing of every coupled flow at each event, and with
# more flows, more of them end at moments of their own). Where flows end apart by design, as
# under hash ECMP on a Fat-Tree (collisions give flows different bottlenecks: k=8 16.5 s against
# 6.0 s with two-level routing), the F^2 term is ~4e-8. A route costs 40 us, a switch's ECMP
# table 12 us per NIC.
# Where a step's flows end apart by their sizes (`step_ends`: the classes of a reduced schedule,
# a pipelined forest's chunks on links of unequal rates) every flow ends at a moment of its own
# and SimGrid re-solves the rest at each: one step of F flows of sizes all different on a Fat-Tree k=8 (two-level) took
# 0.13 s at F = 500 to 10.2 s at F = 6000, 2.7e-7 s x F^2 within 12% (relative least squares with
# the 1e-4 s per flow above; scripts/simgrid_step_cost.py -> docs/results/simgrid-step-cost/,
# regime "unequal"); at F = 8000 it took 46 s, 2.5x that: beyond ~6000 such flows in one step the
# estimate is low.
CPU_PER_FLOW = 1.0e-4
CPU_PER_FLOW_PAIR = 6.2e-9
CPU_PER_FLOW_PAIR_HASH = 4.0e-8
CPU_PER_FLOW_PAIR_APART = 2.7e-7
STEP_ENDS = {"together": CPU_PER_FLOW_PAIR, "hash": CPU_PER_FLOW_PAIR_HASH, "apart": CPU_PER_FLOW_PAIR_APART}
SIZES_TOGETHER = 2  # a step of at most this many payload sizes (equal shards, their remainder) ends together


def fit_pair_cost(flows: list, cpu_seconds: list, per_flow: float = CPU_PER_FLOW) -> float:
    """The F^2 coefficient b of cpu = per_flow x F + b x F^2 that minimises the squared relative
    errors (each point counts alike, from hundreds of flows to thousands)."""
    import numpy as np

    f, y = np.asarray(flows, dtype=float), np.asarray(cpu_seconds, dtype=float)
    x, r = f * f / y, 1.0 - per_flow * f / y
    return float(x @ r / (x @ x))


def ends_apart(topo: Topology) -> bool:
    """Do a step's flows end at moments of their own by design (hash ECMP on a Fat-Tree)?"""
    return topo.kind == "fattree" and topo.params.get("ecmp", "hash") == "hash"


def routing_ends(topo: Topology) -> str:
    """How a step of equal flows ends on `topo`: "hash" under hash ECMP on a Fat-Tree, else "together"."""
    return "hash" if ends_apart(topo) else "together"


def step_ends(topo: Topology, sizes_per_step: list, flows_per_step: list) -> list:
    """How each step's flows end, which sets its F^2 term (`STEP_ENDS`): "apart" where most of a
    step's flows carry a size of their own, or where it carries more than SIZES_TOGETHER sizes
    on links of unequal rates (a pipelined forest's chunks on an oversubscribed Fat-Tree); else
    "hash" under hash ECMP on a Fat-Tree, else "together" (a few sizes on equal links end at a
    few moments: BML's remainders cost nothing measurable). `sizes_per_step`: the distinct
    payload sizes of each step; `flows_per_step`: its flows."""
    default = routing_ends(topo)
    mixed = len({link.bw for link in topo.links}) > 1
    return ["apart" if 2 * n > f or (mixed and n > SIZES_TOGETHER) else default
            for n, f in zip(sizes_per_step, flows_per_step)]


def step_seconds(flows: float, ends: str = "together") -> float:
    """CPU seconds to simulate one step of `flows` concurrent flows that end `ends` (the fits above)."""
    return CPU_PER_FLOW * flows + STEP_ENDS[ends] * flows * flows


def steps_seconds(topo: Topology, flows_per_step: list, sizes_per_step: list | None = None) -> float:
    """CPU seconds to simulate steps of these many flows carrying these many distinct sizes
    (`step_ends`); sizes None: the classes of a reduction or of orbits, which end apart."""
    ends = ["apart"] * len(flows_per_step) if sizes_per_step is None else step_ends(topo, sizes_per_step, flows_per_step)
    return sum(step_seconds(f, e) for f, e in zip(flows_per_step, ends))


CPU_PER_ROUTE = 40e-6
CPU_PER_TABLE_ENTRY = 12e-6
# The reduction (emulation/simulator/symmetry.py): the schedule's messages and their routes as
# arrays, then colour refinement, per flow of a step (measured with PS on Fat-Tree k=8 and k=16,
# docs/PROJECTION.md); its numpy arrays per route link.
CPU_PER_REDUCED_FLOW = 15e-6
MEM_PER_REDUCED_LINK = 120.0
REDUCE_MODES = ("auto", "on", "off")
# auto: reduce where simulating every flow is estimated above this many CPU seconds and routes
# do not break the symmetry by design (hash ECMP on a Fat-Tree: `ends_apart`)
REDUCE_ABOVE_SECONDS = 30.0


def reduces(mode: str, topo: Topology, step_flows: list) -> bool:
    """Does a projection simulate one communication per class of flows (`symmetry.py`)?"""
    if mode not in REDUCE_MODES:
        raise ValueError(f"reduce {mode!r} is unknown; valid: {', '.join(REDUCE_MODES)}")
    if mode != "auto":
        return mode == "on"
    return not ends_apart(topo) and sum(step_seconds(f) for f in step_flows) > REDUCE_ABOVE_SECONDS


def reduced_seconds(flows: float, hops: float) -> float:
    """CPU seconds of the reduction itself for `flows` flows in all (before SimGrid runs the classes)."""
    return CPU_PER_REDUCED_FLOW * flows * max(1.0, hops / 6)


def _nics(topo: Topology) -> int:
    return sum(1 for i in topo.intfs.values() if i.ip)


def description_sizes(topo_spec: str) -> dict:
    """Closed-form sizes of a topology spec, before building it (building BCube(16,3) alone
    would need over 24 GiB): hosts, switches, NICs, interfaces, host routes, ARP entries."""
    from topologies import spec

    kind, params = spec.parse(topo_spec)
    if kind == "fattree":
        k = params["k"]
        hosts, switches, links = k**3 // 4, 5 * k * k // 4, 3 * k**3 // 4
        return {"hosts": hosts, "switches": switches, "nics": hosts, "intfs": 2 * links,
                "host_routes": 0, "arp": hosts * (hosts - 1)}
    n, k = params["n"], params["k"]
    if n < 1 or k < 1 or k > 64:
        return {"hosts": 0, "switches": 0, "nics": 0, "intfs": 0, "host_routes": 0, "arp": 0} if k <= 64 else \
            {"hosts": 2**64, "switches": 2**64, "nics": 2**64, "intfs": 2**64, "host_routes": 2**128, "arp": 0}
    servers = n**k
    # every server holds a /32 route to each NIC of every server it does not share a switch with
    # (BCube(8,3): 1512 = 512 * 3 - 24), and ARP entries for its switch neighbours
    return {"hosts": servers, "switches": k * n ** (k - 1), "nics": servers * k, "intfs": 2 * servers * k,
            "host_routes": servers * max(0, servers * k - k * n), "arp": servers * k * (n - 1)}


def description_bytes(sizes: dict) -> float:
    return (MEM_PER_HOST_ROUTE * sizes["host_routes"] + MEM_PER_ARP * sizes["arp"]
            + MEM_PER_INTF * sizes["intfs"] + MEM_PER_TABLE_ENTRY * sizes["switches"] * sizes["nics"]
            + MEM_PER_CELL * (sizes["hosts"] + sizes["switches"]) ** 2)


def topology_sizes(topo: Topology) -> dict:
    return {"hosts": len(topo.hosts()), "switches": len(topo.switches()), "nics": _nics(topo),
            "intfs": len(topo.intfs), "host_routes": sum(len(v) for v in topo.routes.values()),
            "arp": sum(len(v) for v in topo.arp.values())}


def estimate_memory(topo: Topology | dict, pairs: int, hops: float, comms: int) -> float:
    """Peak bytes of a projection (the parent, and the forked child that simulates): the
    description (a Topology, or the closed-form sizes of one not built yet), its switch
    tables, the routes of the used pairs, the concurrent communications."""
    sizes = topo if isinstance(topo, dict) else topology_sizes(topo)
    return (MEM_BASE + description_bytes(sizes) + pairs * (MEM_PER_ROUTE + MEM_PER_ROUTE_LINK * hops)
            + MEM_PER_COMM * comms)


def check_buildable(topo_spec: str, max_memory: float | None = None) -> None:
    """Refuse (TooLarge, one line) a topology whose description alone would not fit."""
    sizes = description_sizes(topo_spec)
    need = MEM_BASE + description_bytes(sizes)
    have = max_memory if max_memory is not None else available_memory()
    if need > have:
        raise TooLarge(f"{topo_spec} ({sizes['hosts']} hosts, {sizes['switches']} switches, "
                       f"{sizes['host_routes']} host routes) needs about {need / 2**30:.1f} GiB just to describe, "
                       f"{have / 2**30:.1f} GiB available")


def estimate_seconds(topo: Topology, pairs: int, step_flows: list, ends: list | None = None) -> float:
    """CPU seconds a projection may take: routes, switch tables and every step (`step_seconds`,
    each step's flows ending as `ends` says; default: together, or under hash ECMP on a Fat-Tree
    with its larger F^2 term, an upper estimate there)."""
    ends = ends or [routing_ends(topo)] * len(step_flows)
    return (CPU_PER_ROUTE * pairs + CPU_PER_TABLE_ENTRY * len(topo.switches()) * _nics(topo)
            + sum(step_seconds(f, e) for f, e in zip(step_flows, ends)))


def route_hops(topo: Topology) -> int:
    """Links of a longest route, the memory estimate's routes' length."""
    return {"fattree": 6, "bcube": 2 * (topo.params.get("k", 1) + 1)}.get(topo.kind, 8)


def reduced_memory(classes_per_step: list) -> float:
    """Bytes SimGrid needs for a reduced schedule: two endpoints per class in one full zone (its
    N^2 route table: PS on Fat-Tree k=12, 11,808 classes, peaked at 5.1 GB), a route and a
    communication per class."""
    classes = sum(classes_per_step)
    return MEM_BASE + MEM_PER_CELL * (2 * classes) ** 2 + classes * (MEM_PER_ROUTE + 6 * MEM_PER_ROUTE_LINK) \
        + MEM_PER_COMM * max(classes_per_step, default=0)


MEMORY_MARGIN = 0.8  # use at most this share of MemAvailable: the estimates are +-30%


def available_memory() -> float:
    """MemAvailable from /proc/meminfo times MEMORY_MARGIN, bytes (inf where unreadable)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024 * MEMORY_MARGIN
    except OSError:
        pass
    return float("inf")


def schedule(steps: list, hosts: list, endpoints: dict, legs: list | None = None) -> list:
    """Steps of Flows -> steps of (src endpoint, dst endpoint, payload bytes) messages: each
    direction of a connection on its own route (`base.wire_legs`: the data and the sender's
    framing one way, the receiver's notifications the other), as the captures see them.
    `legs`: the steps' `wire_legs` if already made (checking made them)."""
    def msgs(step) -> list:
        return [(*endpoints[(hosts[s], hosts[d], nic)], int(payload)) for s, d, nic, payload in step]

    # a step whose legs are the step before's object (`base.per_step`) shares its messages too:
    # `first_steps` then knows it without sorting, and the child's pipe pickles it once
    return base.per_step(msgs, wire_legs(steps) if legs is None else legs)


def wire_legs(steps: list) -> list:
    """Per step, the (src, dst, nic, payload) legs `schedule` will send (`base.wire_legs`: no
    zero-byte leg, none to itself)."""
    return base.per_step(base.wire_legs, steps)


def pairs_of(steps: list, hosts: list, legs: list | None = None) -> set:
    """The (src host, dst host, NIC) routes the steps use; `legs` if `wire_legs` already made them."""
    distinct = {id(step): step for step in (wire_legs(steps) if legs is None else legs)}  # shared legs once
    return {(hosts[s], hosts[d], nic) for step in distinct.values() for s, d, nic, _ in step}


# ---- SimGrid: one simulation per child process -------------------------------------------
def _import_simgrid():
    """Import SimGrid with its import-time INFO line ('contexts/factory') kept off stderr."""
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        import simgrid
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
    return simgrid


def simgrid_available() -> str | None:
    """None if the simgrid module imports; else why not (one line)."""
    try:
        _import_simgrid()
    except ImportError as e:
        return f"SimGrid's Python module is missing ({e}): apt-get install python3-simgrid (scripts/setup.sh)"
    return None


def repeated_steps(sched: list) -> list:
    """Per step of `sched` (messages as tuples: (src, dst, bytes), or any orderable tuples),
    whether an earlier step carries the same messages (in any order). In the driver a step's flows start on an empty
    network (the step before ended with its every message) and the sharing is deterministic and
    stateless (max-min, the fan-in callbacks a function of the flows on a link now), so such a
    step lasts what that earlier one did: the driver waits that long instead of simulating it
    again (Top-k's all-gather is P - 1 equal ring steps). Pure."""
    return [j != i for i, j in enumerate(first_steps(sched))]


def first_steps(sched: list) -> list:
    """Per step of `sched`, the index of the first step that carries the same messages (in any
    order): its own index where no earlier step does (`repeated_steps`). A step's messages are
    sorted only where an earlier step has as many messages of as many bytes in all (the last
    item of each message), so steps that cannot repeat cost one pass, and a step that is the
    step before's very list (`schedule` shares them: `base.per_step`) none. Pure."""
    by_sig: dict = {}  # (messages, bytes) -> indices of the first steps with it
    keys: dict = {}  # first step's index -> its sorted messages, built when first needed
    out = []
    for i, step in enumerate(sched):
        if i and step is sched[i - 1]:  # the step before's very object (`base.per_step`)
            out.append(out[-1])
            continue
        sig = (len(step), sum(m[-1] for m in step))
        firsts = by_sig.setdefault(sig, [])
        found = i
        if firsts:
            key = tuple(sorted(step))
            for j in firsts:
                if j not in keys:
                    keys[j] = tuple(sorted(sched[j]))
                if keys[j] == key:
                    found = j
                    break
            else:
                keys[i] = key
        if found == i:
            firsts.append(i)
        out.append(found)
    return out


def _run_in_engine(platform, sched, model: NetworkModel, mode: str, inspect: bool, timing=None,
                   repeat: bool = True) -> dict:
    """Runs in the child: build the platform, run the schedule, report times and bytes.
    `timing`: (release, startup[, before, after]) per step (SimForm.timing), or None for all zeros.
    `repeat` (driver mode): a step whose messages an earlier step carried (`repeated_steps`)
    takes that step's duration without being simulated again."""
    simgrid = _import_simgrid()
    t0, c0 = time.perf_counter(), time.process_time()
    engine = simgrid.Engine(["syncbed-project", *model.cfg(), "--log=root.thres:warning",
                             "--log=xbt_cfg.thres:warning"])
    charged = model.charged_oversubscribed(platform, sched)
    hosts = simgrid_platform.instantiate(platform, simgrid, model.nic_capacity(platform, charged))
    t_platform = time.perf_counter() - t0
    step_end: list = []
    sent: dict = {}  # (src ep, dst ep) -> bytes of the communications the actors completed

    def start(step):
        return [(simgrid.Comm.sendto_async(hosts[s], hosts[d], size), (s, d), size) for s, d, size in step]

    zeros = [0.0] * len(sched)
    release, startup, before, after = (tuple(timing) + (zeros, zeros))[:4] if timing is not None else (zeros,) * 4

    def wait_turn(i):  # the step's release (its layers produced), its start-up, then compute before its flows
        if release[i] > simgrid.Engine.clock:
            simgrid.this_actor.sleep_until(release[i])
        if startup[i] + before[i] > 0:
            simgrid.this_actor.sleep_for(startup[i] + before[i])

    def computed(i):  # compute after the step's flows (a merge), before the next step
        if after[i] > 0:
            simgrid.this_actor.sleep_for(after[i])

    def finish(started):
        simgrid.Comm.wait_all([c for c, _, _ in started])
        for c, pair, size in started:
            if c.remaining > 0:
                raise RuntimeError(f"a message {pair[0]} -> {pair[1]} ended with {c.remaining} bytes left")
            sent[pair] = sent.get(pair, 0) + size

    first = first_steps(sched) if repeat and mode == "driver" else list(range(len(sched)))
    repeated = [j != i for i, j in enumerate(first)]
    again = [0] * len(sched)  # per first step, how many later steps repeated it
    if mode == "driver":
        lasted: dict = {}  # a first step's index -> the seconds its flows took

        def driver():
            for i, step in enumerate(sched):
                wait_turn(i)
                if repeated[i]:
                    simgrid.this_actor.sleep_for(lasted[first[i]])
                    again[first[i]] += 1
                else:
                    t = simgrid.Engine.clock
                    finish(start(step))
                    lasted[i] = simgrid.Engine.clock - t
                computed(i)
                step_end.append(simgrid.Engine.clock)
        simgrid.Actor.create("driver", hosts[platform.hosts[0]], driver)
    elif mode == "ranks":
        # one actor per sending host, a barrier after every step: the schedule as the
        # workers run it, for comparison with the driver (same times, more context switches)
        senders = sorted({s for step in sched for s, _, _ in step}) or [platform.hosts[0]]
        barrier = simgrid.Barrier(len(senders))
        mine = {h: [[m for m in step if m[0] == h] for step in sched] for h in senders}

        def rank(h):
            for i, step in enumerate(mine[h]):
                wait_turn(i)
                finish(start(step))
                computed(i)
                barrier.wait()
                if h == senders[0]:
                    step_end.append(simgrid.Engine.clock)
        for h in senders:
            simgrid.Actor.create(f"rank-{h}", hosts[h], rank, h)
    else:
        raise ValueError(f"mode {mode!r} is unknown; valid: {', '.join(MODES)}")
    t1 = time.perf_counter()
    engine.run()
    t_run = time.perf_counter() - t1
    for j, n in enumerate(again):  # the repeated steps' messages, carried as their first step's
        for s, d, size in sched[j] if n else ():
            sent[(s, d)] = sent.get((s, d), 0) + n * size
    # bytes per directed link, along the routes SimGrid itself holds (not the description's)
    link_bytes: dict = {}
    for (s, d), b in sent.items():
        links, _ = hosts[s].route_to(hosts[d])
        for link in links:
            link_bytes[link.name] = link_bytes.get(link.name, 0) + b
    out = {"step_seconds": [b - a for a, b in zip([0.0] + step_end[:-1], step_end)],
           "messages_per_step": [len(step) for step in sched],
           "sizes_per_step": [len({size for _, _, size in step}) for step in sched],
           # steps not simulated again: an earlier step carried the same messages (`repeated_steps`)
           "repeated_steps": repeated,
           "sync_seconds": step_end[-1] if step_end else 0.0,
           "link_bytes": link_bytes, "sent": sent,
           # oversubscribed links that took e_o (those in series with one as loaded: fanin.in_series)
           "oversubscribed_charged_links": len(charged),
           "wall": {"platform_seconds": t_platform, "run_seconds": t_run,
                    "total_seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0},
           # this child's peak (pages shared with the parent at the fork included)
           "child_maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
           "version": simgrid.simgrid_version if isinstance(simgrid.simgrid_version, str) else None}
    if inspect:
        out["inspect"] = {"hosts": sorted(h.name for h in engine.all_hosts),
                          "links": {link.name: link.bandwidth for link in engine.all_links},
                          "netpoints": len(engine.all_netpoints),  # NetPoint has no name in 3.32's Python API
                          "routers": sorted(r for r in platform.routers if engine.netpoint_by_name(r) is not None),
                          "routes": {(s, d): tuple(link.name for link in hosts[s].route_to(hosts[d])[0])
                                     for s, d in platform.routes}}
    return out


def _child(conn, args) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's handler (syncbed project's) is not ours
    try:
        conn.send(("ok", _run_in_engine(*args)))
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which raises
        conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    finally:
        conn.close()


def simulate(platform, sched: list, model: NetworkModel = NetworkModel(), mode: str = "driver",
             inspect: bool = False, timing=None, repeat: bool = True) -> dict:
    """Run `sched` (steps of (src ep, dst ep, bytes)) on `platform` in a forked child;
    `timing` = (release, startup[, compute before, compute after]) per step (SimForm.timing) or None;
    `repeat`: a step that repeats an earlier one's messages is not simulated again (driver mode,
    `repeated_steps`; False: every step simulated, the tests' comparison).

    Returns step_seconds, sync_seconds, link_bytes (per directed link), sent (per endpoint
    pair), messages_per_step and sizes_per_step (every step's, repeated or not),
    repeated_steps (per step: taken from an earlier step, not simulated), wall (platform build,
    run, total, CPU; the child's own) and the child's peak RSS."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is unknown; valid: {', '.join(MODES)}")
    ctx = multiprocessing.get_context("fork")  # the child inherits the platform: nothing pickled
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, (platform, sched, model, mode, inspect, timing, repeat)),
                       daemon=True)
    proc.start()
    send.close()
    try:
        status, payload = recv.recv()
    except EOFError:
        proc.join()
        raise RuntimeError(f"the SimGrid process died (exit code {proc.exitcode}) before reporting") from None
    proc.join()
    if status != "ok":
        raise RuntimeError(f"SimGrid failed: {payload}")
    return payload


# ---- one projection ---------------------------------------------------------------------
@dataclass(frozen=True)
class Request:
    topo: str
    algo: str  # one algorithm spec: name[,key=value...]
    workers: int | None = None  # None: every host (minus servers)
    servers: int = 0
    mb: float = 4.0
    bw: float = 1000.0
    ecmp: str = "hash"
    placement: str = "ordered"
    mode: str = "driver"
    max_memory: float | None = None  # bytes; None: MemAvailable
    max_seconds: float | None = 3600.0  # refuse a projection estimated to take longer (CPU s)
    model: str | None = None  # a model spec (per-layer sizes and backward times); None: one layer of mb MiB
    link: dict | None = None  # {alpha, beta} of an all-reduce for the layer-wise planners; None: provisional
    round_latency: float = 0.0  # seconds per message round (simulated_form); 0: the bandwidth term alone
    incast: float = 0.0  # seconds per flow into a step's busiest NIC beyond the first (simulated_form); 0: none
    # and bytes per such flow at the hosts' slowest NIC link rate, added to it (`incast_of`; a calibration's)
    incast_bytes: float = 0.0
    # charge it only past the sync's slack (`past_slack`: a calibration's form C); False: on every step
    incast_past_slack: bool = False
    # none where the hosts' NICs hang off switches of two ports (fanin.one_switch_input: a calibration's form C)
    incast_one_input_free: bool = False
    # no more per flow than this share of the step's flow bytes at the hosts' link rate
    # (`incast_cap_of`, fanin.capped_startup: a calibration's); 0: no cap
    incast_flow_share: float = 0.0
    fan_in: float = 1.0  # NetworkModel.fan_in: efficiency of n flows into one NIC (fanin.py); 1: off
    oversubscribed: float = 1.0  # NetworkModel.oversubscribed: the same on an oversubscribed link; 1: off
    reduce: str = "auto"  # REDUCE_MODES: one SimGrid communication per class of interchangeable flows
    # ((Compute key, cost model), ...): the sync's compute (Algorithm.compute_charges); () none
    compute: tuple = ()
    compute_source: str = ""  # where the cost models come from (report and summary.json)
    # a measured data-dependent run to replay: its workers' log folder, the syncs its analysis
    # counted (warmup included, as its expected bytes) and its warmup iterations
    logs: str | None = None
    syncs: int | None = None
    warmup: int = 0
    # a measured run's projection: whose plan it simulates and the keys today's plan differs in (sweep.executed)
    plan_source: str = ""
    replanned_differs: tuple = ()


def hosts_link_mbps(topo: Topology, hosts) -> list[float]:
    """The rates (Mbit/s, sorted, each once) of the links of `hosts`' NICs: one where they are equal."""
    return sorted({topo.link_of(n.name).bw for h in hosts for n in topo.host_nics(h)})


def incast_of(req: Request, topo: Topology, hosts) -> float:
    """Seconds per flow into a step's busiest NIC beyond the first (`simulated_form`'s incast):
    req.incast plus req.incast_bytes at the slowest of the hosts' NIC link rates
    (`fanin.incast_startup`), the rate the validation charges a measured run at; none with
    req.incast_one_input_free where the hosts' NICs hang off switches of two ports
    (`fanin.one_switch_input`, read from `topo`'s graph)."""
    if req.incast_one_input_free and req.incast and fanin.one_switch_input(topo, hosts):
        return 0.0
    if not req.incast_bytes:
        return req.incast
    return fanin.incast_startup({"seconds": req.incast, "bytes": req.incast_bytes}, hosts_link_mbps(topo, hosts)[0])


def incast_cap_of(req: Request, topo: Topology, hosts) -> tuple | None:
    """(share, the hosts' slowest NIC link rate) that caps a request's incast start-up per flow
    (`incast_steps`), None without a share."""
    return (req.incast_flow_share, hosts_link_mbps(topo, hosts)[0]) if req.incast_flow_share else None


def logged_iterations(log_dir, syncs: int) -> list[dict]:
    """Per iteration 0..syncs-1 of a measured run, {rank: {"sent": [[dst, nic, bytes, messages]],
    "phases": {phase: data bytes}}} from its ranks' logs (the events `logged_flows` sums; phases
    from its `stage` events), what `Algorithm.logged_steps` reads."""
    from workloads.eventlog import read_logs

    out = [{} for _ in range(syncs)]
    for rank, events in read_logs(Path(log_dir))[0].items():
        for ev in events:
            i = ev.get("iter")
            if not isinstance(i, int) or not 0 <= i < syncs:
                continue
            mine = out[i].setdefault(rank, {"sent": [], "phases": {}})
            if ev.get("event") == "iter":
                mine["sent"] = ev.get("sent") or []
            elif ev.get("event") == "stage" and ev.get("phase"):
                mine["phases"][ev["phase"]] = mine["phases"].get(ev["phase"], 0) + int(ev.get("bytes") or 0)
    return out


@dataclass
class Prepared:
    """A checked projection, before any route is computed: the plan and its estimates."""

    req: Request
    spec: str  # canonical algorithm spec (base.spec_of), as the emulation names runs
    topo: Topology  # indexed (simgrid_platform.indexed)
    hosts: list
    algo: base.Algorithm
    plan: dict
    ctx: base.PlanContext
    form: SimForm
    flows: list
    pairs: set
    memory_bytes: float
    cpu_seconds: float
    model: str = ""
    background: list = field(default_factory=list)  # flows of concurrent jobs (background.parse form)
    reduce: bool = False  # simulate one communication per class of interchangeable flows (symmetry.py)
    # by orbits (`_prepare_orbits`): the plan's blocks and their OrbitForm, no flow listed;
    # else why that path did not apply (None: not tried)
    orbits: object = None
    blocks: list | None = None
    sim_blocks: list | None = None  # blocks SimGrid runs: `blocks`, or them padded to equal shards
    orbits_refused: str | None = None
    legs: list | None = None  # form.steps' `wire_legs`, made once by `checked`

    @property
    def steps(self) -> list:
        return self.form.steps


def nic_bytes(topo: Topology, hosts: list, link_bytes: dict) -> dict:
    """Per host NIC {tx, rx} from bytes per directed link (named by its transmitting interface):
    every NIC of the ranks' hosts, and of any other host that carried bytes (a BCube server that
    relays for the ranks without being one: `expected.expected_nic_bytes` counts it too)."""
    out = {}
    placed = set(hosts)
    for h in topo.hosts():
        for nic in topo.host_nics(h):
            tx, rx = int(link_bytes.get(nic.name, 0)), int(link_bytes.get(topo.peer(nic.name).name, 0))
            if h in placed or tx or rx:
                out[nic.name] = {"tx": tx, "rx": rx}
    return out


def layer_sizes(req: Request) -> tuple:
    """The request's gradient elements per layer (`_layers`' first)."""
    return _layers(req)[0]


def _layers(req: Request):
    """(layer_sizes, layers, model spec) of the request: a registry model, or one layer of mb MiB."""
    if req.model:
        from workloads.models.specs import load

        m = load(req.model)
        return (tuple(m.layer_sizes), tuple((l.name, l.numel, l.backward_s) for l in m.layers), m.spec)
    elements = int(req.mb * 2**20) // base.DTYPE_BYTES
    if elements < 1:
        raise ValueError(f"--mb {req.mb} is less than one float32")
    return (elements,), (("gradient", elements, 0.0),), f"synthetic,mb={req.mb:g}"


def checked(req: Request, topo: Topology, hosts: list, algo: base.Algorithm, plan: dict, ctx, spec: str,
            model: str, background=()) -> Prepared:
    """Estimate memory and CPU of simulating `plan`; refuse (TooLarge, one line) what would not fit.

    The expected bytes (`Prepared.flows`, what the simulated bytes per NIC are checked against):
    the plan's `traffic`; for a data-dependent algorithm replayed from a measured run, what its
    ranks logged (`analysis.logged_flows`, the source the emulation's analysis checks the capture
    against), over all its syncs; modelled, the model's flows."""
    costs = dict(req.compute)  # keys this algorithm does not declare cost it nothing (a sweep's others)
    logged = None
    if req.logs is not None and algo.data_dependent:
        logged = logged_iterations(req.logs, int(req.syncs or 0))
    form = simulated_form(algo, plan, req.round_latency, costs, logged, req.warmup, incast_of(req, topo, hosts),
                          incast_cap_of(req, topo, hosts), fanin.arrivals(topo, hosts))
    steps = form.steps
    legs = wire_legs(steps)
    pairs = pairs_of(steps, hosts, legs)
    hops = route_hops(topo)
    step_flows = [len(s) for s in steps]
    ends = step_ends(topo, base.per_step(lambda s: len({f.payload for f in s}), steps), step_flows)
    # a step that repeats an earlier one is not simulated again in the driver (`repeated_steps`,
    # on the messages the schedule will carry: the steps' `wire_legs`, which `schedule` sends)
    again = repeated_steps(legs) if req.mode == "driver" else [False] * len(steps)
    simulated_flows = [f for f, r in zip(step_flows, again) if not r]
    simulated_ends = [e for e, r in zip(ends, again) if not r]
    # fan-in counts the flows into each NIC: auto never reduces it (on is refused by project)
    reduce = reduces(req.reduce, topo, simulated_flows) and ((req.fan_in, oversubscribed_charged(req, topo)) == (1.0, 1.0)
                                                         or req.reduce == "on")
    if reduce:  # SimGrid holds a few classes at a time; the arrays of the reduction hold every flow
        need = estimate_memory(topo, len(pairs), hops, 0) + MEM_PER_REDUCED_LINK * hops * sum(step_flows)
    else:
        need = estimate_memory(topo, len(pairs), hops, max(step_flows, default=0))
    have = req.max_memory if req.max_memory is not None else available_memory()
    what = (f"{algo.name} on {len(hosts)} hosts of {topo.name} ({len(pairs)} routes, up to "
            f"{max(step_flows, default=0)} concurrent flows)")
    if need > have:
        raise TooLarge(f"{what} needs about {need / 2**30:.1f} GiB, {have / 2**30:.1f} GiB available")
    if reduce:  # routes and the reduction; SimGrid's share is checked on the classes (reduced_run)
        cpu = estimate_seconds(topo, len(pairs), []) + reduced_seconds(sum(step_flows), hops)
    else:
        cpu = estimate_seconds(topo, len(pairs), simulated_flows, simulated_ends)
    if req.max_seconds is not None and cpu > req.max_seconds:
        raise TooLarge(f"{what} would take about {cpu / 3600:.1f} CPU hours to simulate (SimGrid re-solves "
                       f"every coupled flow at each flow's end); limit {req.max_seconds / 60:g} min")
    if logged is not None:
        from emulation.expected import logged_flows

        flows = logged_flows(Path(req.logs), len(logged))
    elif algo.data_dependent:
        flows = base.merge_flows(f for s in steps for f in s)
    else:
        flows = algo.traffic(plan)
    return Prepared(req, spec, topo, hosts, algo, plan, ctx, form, flows, pairs, need, cpu,
                    model, [dict(f) for f in background or ()], reduce, legs=legs)


GROWTH_FROM = (16, 32)  # worker counts whose plans tell how an algorithm's flows grow with P
MEM_PER_PLANNED_FLOW = 600.0  # a Flow in the plan's traffic, its steps and the schedule (Python objects)


def _check_growth(req: Request, name: str, raw: dict, topo: Topology, workers: int, servers: int,
                  layer_sizes, layers) -> None:
    """Before planning thousands of workers (PS on 3456 hosts is 12M flows, gigabytes of Python
    objects before any estimate could refuse it): plan 16 and 32 workers, fit flows ~ P^e, and
    refuse (TooLarge) what the extrapolated flows would not fit in memory or time. Planners
    that cannot plan the small sizes (BML wants whole BCube levels) are planned as asked."""
    import math

    from topologies.placement import place

    if workers <= 2 * GROWTH_FROM[-1]:
        return
    counts, widest, routes, nsteps = [], [], [], []  # per small P: flows, the largest step's, routes, steps
    try:
        for p in GROWTH_FROM:
            ctx = base.PlanContext(workers=p, servers=servers, layer_sizes=layer_sizes, layers=layers,
                                   nics=len(topo.host_nics(topo.hosts()[0])), topology=topo,
                                   hosts=tuple(place(topo, p + servers, req.placement)), options=raw,
                                   link=dict(req.link) if req.link else None)
            algo, plan = base.plan_for(name, ctx)
            steps = algo.simulated_steps(plan)
            counts.append(sum(len(s) for s in steps))
            widest.append(max((len(s) for s in steps), default=0))
            routes.append(len({(f.src, f.dst, f.nic) for s in steps for f in s}))
            nsteps.append(len(steps))
    except (ValueError, KeyError):
        return
    if min(counts) < 1:
        return

    def grown(at: list) -> tuple[float, float]:  # (at `workers`, exponent) of a count fitted as P^e
        e = math.log(max(at[1], 1) / max(at[0], 1)) / math.log(GROWTH_FROM[1] / GROWTH_FROM[0])
        return max(at[1], 1) * (workers / GROWTH_FROM[1]) ** e, e

    flows, e = grown(counts)
    # every flow is a Python object; SimGrid holds the communications of one step at a time and a
    # route per pair (Top-k's P - 1 ring steps: P^2 flows, P concurrent, 2P routes)
    need = MEM_BASE + description_bytes(topology_sizes(topo)) + flows * MEM_PER_PLANNED_FLOW \
        + grown(widest)[0] * MEM_PER_COMM + grown(routes)[0] * (MEM_PER_ROUTE + 6 * MEM_PER_ROUTE_LINK)
    have = req.max_memory if req.max_memory is not None else available_memory()
    what = f"{name} on {workers} workers of {topo.name} (about {flows:,.0f} flows, growing as P^{e:.1f})"
    if need > have:
        raise TooLarge(f"{what} needs about {need / 2**30:.1f} GiB, {have / 2**30:.1f} GiB available")
    if req.reduce == "on" or (req.reduce == "auto" and not ends_apart(topo)):
        cpu = CPU_PER_ROUTE * flows + reduced_seconds(flows, 6)  # the classes are checked once reduced
    else:
        # every step as wide as the largest (an upper estimate: repeated steps cost nothing in the end)
        wide = min(grown(widest)[0], flows)
        cpu = CPU_PER_ROUTE * grown(routes)[0] + min(grown(nsteps)[0], flows / wide) * step_seconds(
            wide, routing_ends(topo))
    if req.max_seconds is not None and cpu > req.max_seconds:
        raise TooLarge(f"{what} would take about {cpu / 3600:.1f} CPU hours to simulate; "
                       f"limit {req.max_seconds / 60:g} min")


def prepare(req: Request, topo: Topology | None = None) -> Prepared:
    """Build, place and plan, estimate memory and time; refuse (ValueError, one line) what cannot
    be simulated or would not fit. Nothing is simulated yet."""
    from topologies.placement import place
    from topologies import spec

    if topo is None:
        check_buildable(req.topo, req.max_memory)
        topo = spec.build(req.topo, bw=req.bw, ecmp=req.ecmp)
    topo = simgrid_platform.indexed(topo)
    if req.mode not in MODES:
        raise ValueError(f"mode {req.mode!r} is unknown; valid: {', '.join(MODES)}")
    name, raw = base.parse_algos(req.algo)[0]
    algo = base.get(name)
    why = simulable(algo)
    if why:
        raise ValueError(why)
    servers = req.servers if algo.uses_servers else 0
    all_hosts = topo.hosts()
    workers = req.workers if req.workers is not None else len(all_hosts) - servers
    if workers < 1 or workers + servers > len(all_hosts):
        raise ValueError(f"{workers} workers + {servers} servers do not fit on {topo.name}, "
                         f"which has {len(all_hosts)} hosts")
    why = algo.refusal(workers, servers, topo)  # what the algorithm declares it accepts
    if why:
        raise base.NotAccepted(why)
    layer_sizes, layers, model = _layers(req)
    by_orbits = _prepare_orbits(req, topo, name, raw, workers, servers, layer_sizes, layers, model)
    if isinstance(by_orbits, Prepared):
        return by_orbits
    try:
        _check_growth(req, name, raw, topo, workers, servers, layer_sizes, layers)
    except TooLarge as e:
        raise TooLarge(f"{e} (not by orbits: {by_orbits})") from None
    hosts = place(topo, workers + servers, req.placement)
    ctx = base.PlanContext(workers=workers, servers=servers, layer_sizes=layer_sizes, layers=layers,
                           nics=len(topo.host_nics(hosts[0])), topology=topo, hosts=tuple(hosts), options=raw,
                           link=dict(req.link) if req.link else None)
    algo, plan = base.plan_for(name, ctx)
    p = checked(req, topo, hosts, algo, plan, ctx, base.spec_of(name, raw), model)
    p.orbits_refused = by_orbits
    return p


def prepare_planned(run, req: Request) -> Prepared:
    """A run of an experiment file (config.validate's PlannedRun: its topology, hosts and plan,
    per-link bandwidths and the model's scaling included), checked for simulation."""
    return checked(req, simgrid_platform.indexed(run.topology), run.hosts, base.get(run.algorithm), run.plan,
                   run.context(),
                   run.spec or run.algorithm, run.model.spec, getattr(run, "background", None))


def less_background(platform, topo: Topology, background) -> dict:
    """Take the background flows' rates (the probed ones where the run measured them, else the
    declared pacing: `background.background_load`) off the capacity of every directed link they
    cross, never below `background.LOAD_FLOOR` of it, as the planners see the network
    (workloads/planners/background.py). A paced flow is a constant load, so this is what
    max-min would leave the plan's flows. Returns {links: how many were reduced, notes}."""
    if not background:
        return {"links": 0, "notes": []}
    from workloads.planners.background import background_load, left_over

    load, notes = background_load(topo, background)
    for link, rate in load.items():
        if link in platform.links:
            platform.links[link] = left_over(platform.links[link], rate)
    return {"links": len(load), "notes": notes}


def simulate_plan(topo: Topology, hosts: list, algo: base.Algorithm, plan: dict,
                  model: "NetworkModel | None" = None, background=None, round_latency: float = 0.0) -> dict:
    """The simulated times of one planned sync (the emulation's analysis calls this for every run):
    simulated_seconds (the sync as the emulation measures it), simulated_iteration_seconds
    (plans whose steps overlap backprop, `Algorithm.timeline`: backprop and the exposed
    communication), simulated_step_seconds. Raises ValueError (one line) for a plan with no
    simulated form, RuntimeError if SimGrid fails."""
    form = simulated_form(algo, plan, round_latency)
    fast = simgrid_platform.indexed(topo)
    legs = wire_legs(form.steps)
    return _times(_run_form(fast, hosts, form, pairs_of(form.steps, hosts, legs), background,
                            model or NetworkModel(), legs=legs)[2], form)


def _run_form(fast: Topology, hosts: list, form: SimForm, pairs, background, model: NetworkModel,
              mode: str = "driver", inspect: bool = False, log=None, reduce: bool = False,
              max_seconds: float | None = None, max_memory: float | None = None, insist: bool = False,
              legs: list | None = None) -> tuple:
    """Platform (less the background), schedule, simulation: (platform, sched, sim, reduced, route seconds).
    With `reduce`, SimGrid runs one communication per class of interchangeable flows
    (`symmetry.reduce_schedule`; sim["reduction"] says how many), refused (TooLarge) if the
    classes are still too many for `max_seconds` or `max_memory`. A reduction that does not pay
    (its classes would take more memory than there is, or more CPU than every flow) is declined
    and every flow simulated, unless `insist` (--reduce on): then it is refused."""
    t0 = time.perf_counter()
    platform = simgrid_platform.platform_for(fast, pairs)
    reduced = less_background(platform, fast, background)
    sched = schedule(form.steps, hosts, platform.endpoints, legs)
    t_routes = time.perf_counter() - t0
    if log:
        log(f"  {len(pairs)} routes in {t_routes:.1f} s; simulating {sum(len(s) for s in sched)} messages "
            f"in {len(sched)} step(s)")
    if not reduce:
        sim = simulate(platform, sched, model, mode, inspect, form.timing())
        return platform, sched, sim, reduced, t_routes
    t1, c1 = time.perf_counter(), time.process_time()
    red = symmetry.reduce_schedule(platform, sched)
    info = red.describe()
    info.update(seconds=round(time.perf_counter() - t1, 3), cpu_seconds=round(time.process_time() - c1, 3))
    cpu = steps_seconds(fast, info["classes_per_step"])
    info["simgrid_cpu_estimate_seconds"] = round(cpu, 3)
    if log:
        log(f"  reduced to {' + '.join(map(str, info['classes_per_step']))} classes of flows in {info['seconds']:.1f} s")
    need = reduced_memory(info["classes_per_step"])
    have = max_memory if max_memory is not None else available_memory()
    kept = [step for step, r in zip(sched, repeated_steps(sched) if mode == "driver" else [False] * len(sched))
            if not r]  # every flow listed, a repeated step is not simulated again
    full = steps_seconds(fast, [len(step) for step in kept], [len({b for _, _, b in step}) for step in kept])
    if not insist and (need > have or cpu >= full):
        if log:
            log(f"  the reduction does not pay ({need / 2**30:.1f} GiB, {cpu:.0f} CPU s for its classes against "
                f"{full:.0f} s for every flow): simulating every flow")
        if max_seconds is not None and full > max_seconds:
            raise TooLarge(f"{sum(info['flows_per_step'])} flows would take about {full / 3600:.1f} CPU hours to "
                           f"simulate and their {sum(info['classes_per_step'])} classes need "
                           f"{need / 2**30:.1f} GiB; limit {max_seconds / 60:g} min")
        # the memory checked before was the reduction's: every flow needs its communications too
        every = estimate_memory(fast, len(pairs), route_hops(fast), max(info["flows_per_step"], default=0))
        if every > have:
            raise TooLarge(f"{sum(info['flows_per_step'])} flows need about {every / 2**30:.1f} GiB to simulate "
                           f"and their {sum(info['classes_per_step'])} classes {need / 2**30:.1f} GiB, "
                           f"{have / 2**30:.1f} GiB available")
        return platform, sched, simulate(platform, sched, model, mode, inspect, form.timing()), reduced, t_routes
    if need > have:
        raise TooLarge(f"{sum(info['classes_per_step'])} classes of {sum(info['flows_per_step'])} flows need about "
                       f"{need / 2**30:.1f} GiB to simulate (one full zone of two endpoints per class), "
                       f"{have / 2**30:.1f} GiB available")
    if max_seconds is not None and cpu > max_seconds:
        raise TooLarge(f"{sum(info['classes_per_step'])} classes of {sum(info['flows_per_step'])} flows would take about "
                       f"{cpu / 3600:.1f} CPU hours to simulate; limit {max_seconds / 60:g} min")
    sim = simulate(red.platform, red.sched, model, mode, inspect, form.timing())
    sim["link_bytes"] = red.link_bytes(sim["sent"])
    sim["reduction"] = info
    return platform, sched, sim, reduced, t_routes


def _identity(p) -> dict:
    """The head of a projection's run record: what was simulated, where (the emulation's names)."""
    fast, ctx = p.topo, p.ctx
    link_mbps = hosts_link_mbps(fast, p.hosts)
    return {"simulated": True, "status": "ok", "error": None,
            "topology": fast.name, "algorithm": p.algo.name, "algo_spec": p.spec,
            "workers": ctx.workers, "servers": ctx.servers, "hosts": p.hosts,
            "model": p.model, "gradient_bytes": ctx.gradient_bytes,
            "link_mbps": link_mbps[0] if len(link_mbps) == 1 else link_mbps, "ecmp": fast.params.get("ecmp"),
            # directed switch-to-switch links slower than the hosts' (where --oversubscribed applies)
            "oversubscribed_links": len(oversubscribed_links_of(fast)),
            # a measured run's projection: whose plan was simulated (sweep.executed)
            **({"plan_source": p.req.plan_source, "replanned_differs": list(p.req.replanned_differs)}
               if p.req.plan_source else {})}


def _simulator_record(sim: dict, model: NetworkModel, p, counts: dict, messages: int, steps: int,
                      route_seconds: float, t0: float, reduction) -> dict:
    """summary.json's `simulator` record of one projection: model, sizes, wall and CPU times,
    estimates against what the child used."""
    return {"name": "SimGrid", "version": sim.get("version"), "network_model": model.describe(),
            "mode": p.req.mode, "platform": counts, "messages": messages, "steps": steps,
            "route_seconds": route_seconds,
            "platform_seconds": round(sim["wall"]["platform_seconds"], 3),
            "run_seconds": round(sim["wall"]["run_seconds"], 3),
            "simgrid_seconds": round(sim["wall"]["total_seconds"], 3),
            "simgrid_cpu_seconds": round(sim["wall"]["cpu_seconds"], 3),
            "wall_seconds": round(time.perf_counter() - t0, 3),
            # what SimGrid ran (the classes where reduced): the run-time estimate's inputs
            "simulated_messages_per_step": sim.get("messages_per_step"),
            "simulated_sizes_per_step": sim.get("sizes_per_step"),
            # steps that repeat an earlier one's messages, not simulated again (`repeated_steps`)
            "repeated_steps": sum(sim.get("repeated_steps") or []),
            # what the run-time estimate charged for them (classes of a reduction end apart)
            "step_estimate_seconds": round(_simulated_steps_seconds(p.topo, sim, reduction is not None), 3),
            "cpu_estimate_seconds": round(p.cpu_seconds, 3),
            "memory_estimate_bytes": int(p.memory_bytes),
            "child_maxrss_bytes": sim["child_maxrss_bytes"],
            "parent_maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "reduction": reduction,
            "oversubscribed_charged_links": sim.get("oversubscribed_charged_links", 0)}


def _simulated_steps_seconds(topo: Topology, sim: dict, reduced: bool) -> float:
    """The run-time estimate's step terms for the steps SimGrid simulated (repeated ones left out)."""
    keep = [not r for r in sim["repeated_steps"]]
    flows = [m for m, k in zip(sim["messages_per_step"], keep) if k]
    sizes = None if reduced else [n for n, k in zip(sim["sizes_per_step"], keep) if k]
    return steps_seconds(topo, flows, sizes)


def _times(sim: dict, form: SimForm) -> dict:
    if form.per_sync:  # a replay of measured iterations: one sync per `per_sync` steps
        ends = [0.0] + [sum(sim["step_seconds"][:(j + 1) * form.per_sync]) for j in range(form.syncs)]
        syncs = [b - a for a, b in zip(ends, ends[1:])]
        counted = syncs[form.warmup:] or syncs
        return {"simulated_seconds": statistics.median(counted), "simulated_iteration_seconds": None,
                "simulated_step_seconds": sim["step_seconds"], "simulated_sync_seconds": counted}
    end = sim["sync_seconds"]
    if form.overlapped:
        iteration = max(end, form.backward_seconds)
        return {"simulated_seconds": iteration - form.backward_seconds, "simulated_iteration_seconds": iteration,
                "simulated_step_seconds": sim["step_seconds"]}
    return {"simulated_seconds": end, "simulated_iteration_seconds": None,
            "simulated_step_seconds": sim["step_seconds"]}


def _incast_charged(p: Prepared, form: SimForm, slack: float) -> tuple[SimForm, float]:
    """(the form to simulate, its incast start-ups' seconds over all its syncs): charged only past
    `slack` (`past_slack`) where the request says so, else on every step as `simulated_form` put them."""
    incast = form.incast_per_flow or incast_of(p.req, p.topo, p.hosts)
    if p.req.incast_past_slack:
        return past_slack(form, incast, slack)
    return form, sum(i * x for i, x in zip(_each(incast, len(form.extra_flows)), form.extra_flows))


def _incast_record(p: Prepared, form: SimForm, charged_per_sync: float) -> dict:
    """The run record's incast facts: how the start-up was charged, its seconds per sync, and
    where a share caps it, that share and the smallest flow it capped (`incast_flow_bytes`: the
    least mean bytes of a flow into a step's busiest NIC over the steps with extra flows)."""
    if not incast_of(p.req, p.topo, p.hosts):
        return {"incast_charged": "none: the NICs' switches have two ports"} if p.req.incast else {}
    flows = [b for b, x in zip(form.converging_flow_bytes, form.extra_flows) if x]
    return {"incast_charged": "past the slack" if p.req.incast_past_slack else "every step",
            "incast_charged_seconds_per_sync": charged_per_sync,
            **({"incast_flow_share": p.req.incast_flow_share,
                "incast_flow_bytes": min(flows) if flows else None} if p.req.incast_flow_share else {})}


def project(req: Request | Prepared, topo: Topology | None = None, inspect: bool = False, log=None) -> dict:
    """One simulated run: a summary.json run record (the emulation's names) plus simulator facts.

    With `inspect`, the record also holds `_sim`, `_platform`, `_steps` (for the tests)."""
    from emulation import expected as analysis  # pure: expected bytes and the bound

    t0 = time.perf_counter()
    p = req if isinstance(req, Prepared) else prepare(req, topo)
    counted = [o for o, v in (("--fan-in", p.req.fan_in), ("--oversubscribed", oversubscribed_charged(p.req, p.topo)))
               if v != 1.0]
    if p.orbits is not None:
        if counted:
            raise ValueError(f"{' and '.join(counted)} count every flow on a link: they cannot run on flow orbits")
        return _project_orbits(p, t0, inspect, log)
    fast, hosts, algo, ctx, flows, form = p.topo, p.hosts, p.algo, p.ctx, p.flows, p.form
    model = NetworkModel(fan_in=p.req.fan_in, oversubscribed=p.req.oversubscribed)
    if counted and p.reduce:
        raise ValueError(f"{' and '.join(counted)} count every flow on a link: they cannot run on a reduced schedule "
                         "(--reduce off)")
    # flows and the simulation cover form.syncs syncs (a replay of measured iterations): bytes
    # compared in total, to the byte, and reported per sync (as the analysis does)
    syncs = form.syncs
    total = analysis.expected_nic_bytes(fast, hosts, flows, 1)

    def one_sync(nics):
        return nics if syncs == 1 else {k: {d: v / syncs for d, v in x.items()} for k, x in nics.items()}
    per_sync = one_sync(total)
    ports = analysis.expected_port_bytes(fast, hosts, flows, 1)
    bound = analysis.bound_seconds(fast, one_sync(ports))
    nonblocking = analysis.bound_seconds(fast, per_sync)
    form, charged = _incast_charged(p, form, (bound - nonblocking) * syncs)
    platform, sched, sim, reduced, t_routes = _run_form(fast, hosts, form, p.pairs, p.background, model,
                                                        p.req.mode, inspect, log, p.reduce, p.req.max_seconds,
                                                        p.req.max_memory, p.req.reduce == "on",
                                                        p.legs if form.steps is p.form.steps else None)
    times = _times(sim, form)
    simulated_total = nic_bytes(fast, hosts, sim["link_bytes"])
    zero = {"tx": 0, "rx": 0}
    mismatched = sorted(k for k in set(total) | set(simulated_total)
                        if total.get(k, zero) != simulated_total.get(k, zero))
    simulated_nics = one_sync(simulated_total)
    t = times["simulated_seconds"]
    rec = {
        **_identity(p),
        "iters": syncs - form.warmup if syncs > 1 else 1, "warmup": form.warmup if syncs > 1 else 0,
        "syncs_counted": syncs,
        "sync_seconds": times.get("simulated_sync_seconds") or [t], "median_sync_seconds": t,
        "step_seconds": sim["step_seconds"] if syncs == 1 else sim["step_seconds"][:form.per_sync],
        "bytes_source": form.bytes_source,
        "compute_seconds_per_sync": form.compute_per_sync,
        "compute_costs": {k: m.describe() for k, m in p.req.compute} or None,
        "compute_source": p.req.compute_source or None,
        "simulated_seconds": t, "round_latency_seconds": p.req.round_latency,
        "rounds_per_sync": None if form.overlapped else sum(algo.step_rounds(p.plan)),
        "incast_seconds": incast_of(p.req, p.topo, p.hosts), "incast_bytes": p.req.incast_bytes,
        "extra_flows_per_sync": None if form.overlapped else form.extra_flows_per_sync,
        **_incast_record(p, form, charged / syncs),
        "bound_seconds": bound, "bound_nonblocking_seconds": nonblocking,
        "sync_over_bound": t / bound if bound else None,
        "payload_bytes_expected": per_sync, "payload_bytes_simulated": simulated_nics,
        "payload_equal": not mismatched, "payload_mismatched": mismatched[:20],
        "framing_bytes_per_sync": sum(f.messages for f in flows) * base.GLOO_FRAMING_BYTES // syncs,
        "data_bytes_per_sync": sum(f.bytes for f in flows) // syncs,
        "switches_total": len(fast.switches()),
        "background_links_reduced": reduced["links"], "background_notes": reduced["notes"],
        "simulator": _simulator_record(sim, model, p, platform.counts(), sum(len(s) for s in sched), len(sched),
                                       round(t_routes, 3), t0, sim.get("reduction")),
    }
    if form.overlapped:
        it = times["simulated_iteration_seconds"]
        rec.update(iteration_seconds=[it], simulated_iteration_seconds=it, backward_seconds=[form.backward_seconds],
                   scaling_efficiency=form.backward_seconds / it if it > 0 else None, **algo.describe(p.plan))
    rec["simulator"]["orbits_refused"] = p.orbits_refused
    if inspect:
        rec.update(_sim=sim, _platform=platform, _steps=p.steps, _sched=sched)
    return rec


# ---- a symmetric plan on a symmetric network: one communication per orbit (issue #23) ----
def _prepare_orbits(req: Request, topo: Topology, name: str, raw: dict, workers: int, servers: int,
                    layer_sizes, layers, model: str):
    """The projection by orbits (`orbits.py`: the plan's blocks under the routed Fat-Tree's or
    BCube's automorphisms, one route per orbit, no flow listed) as a Prepared, or one line saying why
    it does not apply (the projection then lists every flow, as before). `--reduce auto` only:
    `on` keeps the colour refinement of every flow (`symmetry.py`), `off` reduces nothing."""
    from topologies.placement import place

    if req.reduce != "auto":
        return f"--reduce {req.reduce}"
    if (getattr(req, "fan_in", 1.0), oversubscribed_charged(req, topo)) != (1.0, 1.0):
        # a link's capacity would depend on how many flows cross it
        return "a fan-in efficiency below 1 shares a link by its number of flows, which one flow per orbit changes"
    why = orbits.refusal(topo)
    if why:
        return why
    algo = base.get(name)
    if algo.blocks is None:
        return f"{algo.name} gives its steps as flows only (no Algorithm.blocks)"
    if req.logs is not None:
        return "a measured run is replayed flow by flow"
    hosts = place(topo, workers + servers, req.placement)
    ctx = base.PlanContext(workers=workers, servers=servers, layer_sizes=layer_sizes, layers=layers,
                           nics=len(topo.host_nics(hosts[0])), topology=topo, hosts=tuple(hosts), options=raw,
                           link=dict(req.link) if req.link else None)
    algo, plan = base.plan_for(name, ctx)
    if algo.timeline(plan) is not None:
        return f"{algo.name}'s steps overlap backprop (Algorithm.timeline): released one by one, not symmetric"
    blocks = algo.step_blocks(plan)
    why = orbits.steps_refusal(topo, hosts, blocks)
    sim_blocks = blocks
    if why and topo.kind == "bcube":  # relayed bytes have a closed form for equal blocks only
        return why
    if why:  # unequal shards: the same pairs padded to the largest, where that provably changes no time
        placed = blocks is not None and orbits.placement_refusal(topo, hosts) is None
        sim_blocks = orbits.padded(blocks, len(hosts)) if placed else None
        if sim_blocks is None:
            return why
    t0 = time.perf_counter()
    capacity = simgrid_platform.directed_links(topo)
    try:
        form = orbits.orbit_form(topo, hosts, sim_blocks, capacity)
    except ValueError as e:
        return str(e)
    if sim_blocks is not blocks:
        pad = orbits.padded_exact(topo, hosts, blocks, form, capacity)
        if not pad["exact"]:
            bounds = " and ".join(f"{lo:.6g}-{up:.6g} s" for lo, up in zip(pad["lower_seconds"], pad["upper_seconds"]))
            return (f"{why}; padded to the largest shard, the steps' bounds differ ({bounds}), "
                    "so padding would change the answer")
        form.info["padded"] = {
            "why": "shards of unequal sizes: simulated with every flow padded to the step's largest (the same "
                   "pairs and routes); exact because in every step the unequal plan's busiest-NIC bound equals "
                   "the padded flows' max-min completion bound (orbits.padded_exact)",
            "block_bytes": pad["sizes"], "lower_seconds": pad["lower_seconds"], "upper_seconds": pad["upper_seconds"]}
    form.info["seconds"] = round(time.perf_counter() - t0, 3)
    rounds = algo.step_rounds(plan)
    if len(rounds) != len(blocks):
        raise ValueError(f"{algo.name}: {len(rounds)} round counts for {len(blocks)} steps")
    before, after = _charged(len(blocks), 1, *algo.compute_charges(plan, dict(req.compute)))
    # no flow listed: steps stays empty, the timing lists have one entry per step of blocks
    cap = incast_cap_of(req, topo, hosts)
    if topo.kind == "bcube":  # the NICs each route enters, relays too: read off the orbits, no route walked
        most, mean = orbits.into_nics(topo, form, blocks)
        extra, fb = [max(0, x - 1) for x in most], (mean if cap and cap[0] else [])
    else:  # one NIC per host: each flow enters the one it is addressed to
        extra, fb = fanin.extra_flows(blocks), _flow_bytes(blocks, cap)
    inc = incast_steps(blocks, incast_of(req, topo, hosts), cap, fb)
    startups = _startups(rounds, extra, req.round_latency, inc)
    sim_form = SimForm([], [0.0] * len(blocks), startups,
                       before=before, after=after, extra_flows=extra, incast_per_flow=inc, converging_flow_bytes=fb,
                       bytes_source="model" if algo.data_dependent else "plan")  # data-dependent: its modelled blocks
    need = estimate_memory(topo, form.info["routes_walked"], 6, sum(form.info["classes_per_step"]))
    cpu = estimate_seconds(topo, form.info["routes_walked"], form.info["classes_per_step"],
                           ["apart"] * len(form.info["classes_per_step"]))
    have = req.max_memory if req.max_memory is not None else available_memory()
    what = f"{algo.name} on {len(hosts)} hosts of {topo.name} by orbits"
    if need > have:
        raise TooLarge(f"{what} needs about {need / 2**30:.1f} GiB, {have / 2**30:.1f} GiB available")
    if req.max_seconds is not None and cpu > req.max_seconds:
        raise TooLarge(f"{what} would take about {cpu / 3600:.1f} CPU hours; limit {req.max_seconds / 60:g} min")
    p = Prepared(req, base.spec_of(name, raw), topo, hosts, algo, plan, ctx, sim_form, [], set(), need, cpu,
                 model, [], True)
    p.orbits, p.blocks, p.sim_blocks = form, blocks, sim_blocks
    return p


def _project_orbits(p: Prepared, t0: float, inspect: bool, log=None) -> dict:
    """`project` for a Prepared by orbits: SimGrid runs one communication per flow orbit; bytes
    per NIC are laid back from the orbits and checked against the blocks' closed form."""
    from emulation import expected as analysis

    fast, hosts, algo, of = p.topo, p.hosts, p.algo, p.orbits
    # e_o as asked: orbits run only where it changes nothing (`oversubscribed_charged`), the record says it
    model = NetworkModel(oversubscribed=p.req.oversubscribed)
    flows = sum(of.flows_per_step)
    if log:
        log(f"  {flows} flows in {len(of.sched)} step(s) as {' + '.join(map(str, of.info['classes_per_step']))} "
            f"orbits ({of.info['routes_walked']} routes walked, {of.info['seconds']:.1f} s)")
    per_sync = orbits.block_nic_bytes(fast, hosts, p.blocks)
    all_sent = {(a, b): size for step in of.sched for a, b, size in step}
    if p.sim_blocks is p.blocks:
        bound = analysis.bound_seconds(fast, orbits.port_bytes(fast, of.link_bytes(all_sent)))
    else:  # padded: the unequal plan's own bytes are known per NIC only; exactness made its NICs the busiest
        bound = analysis.bound_seconds(fast, per_sync)
    nonblocking = analysis.bound_seconds(fast, per_sync)
    form, charged = _incast_charged(p, p.form, bound - nonblocking)
    sim = simulate(of.platform, of.sched, model, p.req.mode, inspect, form.timing())
    times = _times(sim, form)
    link_bytes = of.link_bytes(sim["sent"])
    # what SimGrid carried against its own closed form (padded: the padded blocks')
    carried = per_sync if p.sim_blocks is p.blocks else orbits.block_nic_bytes(fast, hosts, p.sim_blocks)
    simulated_nics = nic_bytes(fast, hosts, link_bytes)
    zero = {"tx": 0, "rx": 0}
    mismatched = sorted(k for k in set(carried) | set(simulated_nics)
                        if carried.get(k, zero) != simulated_nics.get(k, zero))
    t = times["simulated_seconds"]
    blocks = [b for step in p.blocks for b in step]
    info = dict(of.info)
    info["simgrid_cpu_estimate_seconds"] = round(steps_seconds(p.topo, info["classes_per_step"]), 3)
    rec = {
        **_identity(p),
        "iters": 1, "warmup": 0, "syncs_counted": 1,
        "sync_seconds": [t], "median_sync_seconds": t, "step_seconds": sim["step_seconds"],
        "bytes_source": p.form.bytes_source, "compute_seconds_per_sync": sum(p.form.before) + sum(p.form.after),
        "compute_costs": {k: m.describe() for k, m in p.req.compute} or None,
        "compute_source": p.req.compute_source or None,
        "simulated_seconds": t, "round_latency_seconds": p.req.round_latency,
        "rounds_per_sync": sum(algo.step_rounds(p.plan)),
        "incast_seconds": incast_of(p.req, p.topo, p.hosts), "incast_bytes": p.req.incast_bytes,
        "extra_flows_per_sync": p.form.extra_flows_per_sync, **_incast_record(p, form, charged),
        "bound_seconds": bound, "bound_nonblocking_seconds": nonblocking,
        "sync_over_bound": t / bound if bound else None,
        "payload_bytes_expected": per_sync, "payload_bytes_simulated": simulated_nics,
        "payload_equal": not mismatched, "payload_mismatched": mismatched[:20],
        "framing_bytes_per_sync": sum(b.count * b.messages for b in blocks) * base.GLOO_FRAMING_BYTES,
        "data_bytes_per_sync": sum(b.count * b.bytes for b in blocks),
        "switches_total": len(fast.switches()),
        "background_links_reduced": 0, "background_notes": [],
        "simulator": {**_simulator_record(sim, model, p, of.platform.counts(), flows, len(of.sched),
                                          info["seconds"], t0, info), "orbits_refused": None},
    }
    if p.sim_blocks is not p.blocks:  # payload_equal checked what SimGrid carried: the padded flows
        rec["payload_bytes_padded"] = carried
    if inspect:
        rec.update(_sim=sim, _platform=of.platform, _steps=None, _sched=of.sched, _link_bytes=link_bytes)
    return rec
