"""Fan-in: what N concurrent TCP flows into one NIC lose against one (issue #23).

Why. The flow model gives every link its capacity whatever the number of flows sharing it
(max-min fills it). On the emulated network, N-1 flows converging on one host's NIC (a sharded
PS phase, a BML stage's group) queue in the switch port's HTB queue in front of that NIC, and
their windows, losses and retransmission timeouts leave the port idle part of the time
(TCP incast, docs/FIDELITY.md #9): measured PS and BML sit well above their busiest-link bound
while rings, one flow per NIC, sit at it. (Since 2026-11-29 much of PS's part is known to have
been its executor posting sends before receives, not TCP: docs/PROJECTION.md, "Fan-in". What
BML and the fixed PS still lose is what e stands for now.)

Model (one parameter, e, 0 < e <= 1). The link into a NIC carrying n concurrent flows delivers

    C x eff(n),   eff(n) = e + (1 - e) / n

of its capacity C: one flow gets it all (eff(1) = 1), and the loss grows with n toward 1 - e
(the fraction of time a deep shared queue leaves the port idle when many windows compete).
It is applied inside SimGrid, by SimGrid's own NONLINEAR sharing policy (`Link.set_sharing_policy`:
the link's capacity is a function of the number of flows crossing it, re-evaluated at every
event) on every link into a NIC (the last link of a route: where incast queues), so it follows
the flows as they start and end and needs no algorithm's name: any plan with fan-in gets it.
No built-in option expresses it (docs/PROJECTION.md, "Fan-in").

e is fitted on the fit half of the measured folders (`fit`: least squares of simulated /
measured - 1 over the faithful runs with fan-in, each simulated at the candidate e) and reported
on the other half (emulation/report/doctables/projection.py).

The incast start-up (`converging`, `extra_flows`; `core.simulated_form`'s `incast`, `syncbed
project --incast`) is the other form of the same loss: a time per flow into a step's busiest
NIC beyond the first, not a share of its bytes. With CUBIC in the hosts PS's runs lose about
the same seconds at 2 and at 3.8 MiB, growing with the flows into a NIC, so the CUBIC
validation gives PS that instead of e (docs/PROJECTION.md, "Fan-in"). Since PS lost more per
flow at 5 Mbit/s than at 10, the start-up is a time plus some bytes at the hosts' link rate
(`incast_startup`).

An oversubscribed tier (a switch-to-switch link slower than the hosts' links: forest scenario 3's
aggregation-core links) loses in its own way: with CUBIC, PS there lost the same share of its
sync at half and at a quarter of the link speeds (docs/FIDELITY.md #23), a share of the slow
links' rate, not a time per flow. So those links (`oversubscribed_links`) take an efficiency of
their own, e_o, in the same form eff(n), every algorithm's (a ring crossing them one flow per
link loses nothing), fitted on the fit-half runs with such links (`scripts/fan_in.py fit`).
Only where flows meet two of them in a row, the second at least as loaded (`in_series`): PS on
a k=6 Fat-Tree with its core at 4:1 and its 24 workers spread lost nothing beyond the flow
model, its busiest core links feeding less loaded ones, as did PS with 9 workers spread on
k=4, while PS with every used core link equally loaded lost on k=4 with 16 and with 8 workers
and on k=6 with three full pods (not faithful there; docs/PROJECTION.md, "With CUBIC in the
hosts")."""
from __future__ import annotations


def efficiency(n: int, e: float, shape: float = 1.0) -> float:
    """eff(n) = e + (1 - e) / n^shape: the share of a NIC link's capacity that n concurrent flows
    get. The model is shape 1; `scripts/fan_in.py shape` profiles others (a larger shape loses
    most of 1 - e by n = 2 or 3; the held-out half does not earn another shape than 1:
    docs/PROJECTION.md, "Fan-in")."""
    if not 0 < e <= 1:
        raise ValueError(f"fan-in efficiency {e!r} must be in (0, 1]")
    if not 0 < shape < float("inf"):
        raise ValueError(f"fan-in shape {shape!r} must be a positive number")
    if n <= 1:
        return 1.0
    return e + (1.0 - e) / n ** shape


def parse(values, algorithms) -> tuple[float, dict]:
    """(e for every algorithm, {algorithm: its own e}) from `--fan-in` values: a number E (every
    algorithm's; at most one, default 1) or ALGO=E (that algorithm's, repeatable), as
    `base.per_algorithm` reads them. Why per algorithm: what n flows into a NIC lose depends on
    how an executor sends them (docs/PROJECTION.md, "Fan-in")."""
    from workloads.algorithms import base

    return base.per_algorithm(values, algorithms, "--fan-in", "a number in (0, 1] (1: no fan-in loss)",
                              lambda e: 0 < e <= 1, 1.0)


def arguments(e: float, own: dict) -> list[str]:
    """The `--fan-in` values (as `parse` reads them) of every algorithm's e and each algorithm's
    own, 4 decimals as the docs print them."""
    return [f"{e:.4f}", *(f"{a}={v:.4f}" for a, v in sorted(own.items()))]


def capacity(e: float, shape: float = 1.0):
    """The NONLINEAR callback SimGrid calls: (capacity, concurrent flows) -> usable capacity."""
    efficiency(1, e, shape)  # validates e and the shape before the engine runs

    def cb(c: float, n: int) -> float:
        return c * efficiency(n, e, shape)
    return cb


def nic_links(routes) -> set:
    """The directed links into a NIC: the last link of every route (`Platform.routes` values)."""
    return {r[-1] for r in routes if r}


def oversubscribed_links(links: dict, trunks) -> set:
    """Of `links` (directed link -> capacity, `Platform.links`), those among `trunks` (the directed
    switch-to-switch links, `Platform.trunks`) slower than the fastest link with a host at one
    end: where flows from hosts that could send faster converge on less capacity (an
    oversubscribed core). None on a Fat-Tree of equal links or on a BCube (no switch-to-switch
    links)."""
    edge = [bw for name, bw in links.items() if name not in trunks]
    if not trunks or not edge:
        return set()
    fastest = max(edge)
    return {name for name in trunks if links[name] < fastest * (1 - 1e-9)}


def in_series(steps, routes: dict, over, links: dict) -> set:
    """Of the oversubscribed links `over`, those whose flows meet a second one at least as loaded:
    in some step a flow crosses link l and another link of `over` whose load in that step (its
    bytes / its capacity) is at least l's. `steps`: per step, (src endpoint, dst endpoint, bytes)
    messages (`core.schedule`); `routes`: (src, dst) -> directed links (`Platform.routes`);
    `links`: directed link -> capacity (`Platform.links`).

    Why (docs/PROJECTION.md, "With CUBIC in the hosts"): PS lost a share of its sync on every
    Fat-Tree whose used core links were equally loaded, each flow crossing two of them in a row
    (up to a core switch and down), and nothing on those where the busiest core links' flows went
    down less loaded links. The links charged are those where a flow queues at two
    saturated drop-tail queues in a row; the tighter of two unequal ones is not."""
    from collections import Counter

    out: set = set()
    if not over:
        return out
    for step in steps:
        load: Counter = Counter()
        paths = []
        for src, dst, size in step:
            r = [x for x in routes[(src, dst)] if x in over]
            for x in r:
                load[x] += size / links[x]
            if len(r) > 1:
                paths.append(r)
        for r in paths:
            out.update(x for x in r if x not in out and any(load[o] >= load[x] * (1 - 1e-9) for o in r if o != x))
    return out


def egress_links(routes) -> set:
    """Every directed link out of a switch port: each route's links but the first (a host's own
    egress, where its stack paces its flows and nothing converges), links into NICs included.
    The variant `scripts/fan_in.py egress` tries: the same e wherever flows from several sources
    meet in one switch queue (hash-ECMP collisions, an oversubscribed core), not only at NICs."""
    routes = [r for r in routes if r]
    return {link for r in routes for link in r[1:]} - {r[0] for r in routes}


def fan_in(steps_links) -> int:
    """Most flows that cross one link at once in any step; `steps_links`: per step, the last
    link of each flow's route. 1 where every NIC receives one flow at a time."""
    from collections import Counter

    return max((max(Counter(s).values()) for s in steps_links if s), default=0)


def arrivals(topo, hosts):
    """Where each flow of a plan enters NICs, on `topo` with ranks on `hosts`: a function
    (src rank, dst rank, nic) -> the names of the NICs its route enters (`Topology.host_hops`:
    the destination's, on the link its route ends on, and each relaying server's), cached per
    triple; None where every host has one NIC, so a flow enters only the NIC it is addressed to.
    A BCube server receives on the NIC its route ends at, not the one whose address it was sent
    to (PS addresses every shard to NIC 0; its routes end on every level), and relays what it
    forwards on another: the flows that converge into one NIC's switch port, what an incast
    start-up is charged for, are counted there (`converging`). Pure given `topo`."""
    from emulation.simulator.platform import indexed

    if all(len(topo.host_nics(h)) == 1 for h in topo.hosts()):
        return None
    fast, cache = indexed(topo), {}  # its next hops parsed once: BCube servers hold a route per server

    def enter(src: int, dst: int, nic: int) -> tuple:
        key = (src, dst, nic)
        if key not in cache:
            ip = fast.host_nics(hosts[dst])[nic].ip
            cache[key] = tuple(rx for _, rx in fast.host_hops(hosts[src], ip))
        return cache[key]

    return enter


def _into(step, arrival=None) -> dict:
    """{NIC: [flows, bytes]} of a step's `Flow`s or `FlowBlock`s (each dst of a block receives
    from its srcs but itself), flows of 0 bytes left out; a NIC is (destination rank, nic), the
    NIC each flow is addressed to, or with `arrival` (`arrivals`) each NIC its route enters."""
    from collections import defaultdict

    into: dict = defaultdict(lambda: [0, 0.0])

    def add(key, n: int, b: float) -> None:
        into[key][0] += n
        into[key][1] += n * b

    for f in step:
        if f.bytes <= 0:
            continue
        block = hasattr(f, "srcs")
        if arrival:
            pairs = [(s, d) for d in f.dsts for s in f.srcs if s != d] if block else [(f.src, f.dst)]
            for s, d in pairs:
                for key in arrival(s, d, f.nic):
                    add(key, 1, f.bytes)
        elif block:  # by address: each dst receives from its srcs but itself
            srcs = set(f.srcs)
            for d in f.dsts:
                add((d, f.nic), len(f.srcs) - (d in srcs), f.bytes)
        else:
            add((f.dst, f.nic), 1, f.bytes)
    return into


def converging(step, arrival=None) -> int:
    """Most flows into one NIC in one step: `Flow`s or `FlowBlock`s (each dst of a block receives
    from its srcs but itself), counted by destination rank and NIC, or with `arrival`
    (`arrivals`) by each NIC their routes enter, flows of 0 bytes left out. 1 where every NIC
    receives one flow at a time (a ring's round), P - 1 in a sharded PS phase on one NIC per
    host; 0 for an empty step."""
    return max((n for n, _ in _into(step, arrival).values()), default=0)


def converging_bytes(step, arrival=None) -> float:
    """Mean bytes of one flow into the busiest NICs of a step (those `converging` counts most
    flows into; `Flow`s or `FlowBlock`s, flows of 0 bytes left out): what a capped incast
    start-up compares with (`capped_startup`). G / P in a sharded PS phase of a gradient of G
    bytes on P ranks; 0.0 for an empty step."""
    into = _into(step, arrival).values()
    most = max((n for n, _ in into), default=0)
    busiest = [(n, b) for n, b in into if n == most and n > 0]
    return sum(b for _, b in busiest) / sum(n for n, _ in busiest) if busiest else 0.0


def capped_startup(per_flow: float, flow_bytes: float, link_mbps: float, share: float) -> float:
    """Seconds one converging flow beyond the first costs when the incast start-up is capped by
    the flow's own size: the start-up `per_flow` (seconds, `incast_startup`'s), but no more than
    `share` of the flow's `flow_bytes` at the hosts' link rate `link_mbps`; `share` 0: no cap.
    A flow of a few packets cannot stall for longer than a share of its own bytes take: PS under
    2 MiB lost per converging flow what grows with its flows' bytes, then stays
    (docs/PROJECTION.md, "PS under 2 MiB"). Pure."""
    if not share:
        return per_flow
    if not (share > 0 and link_mbps > 0):
        raise ValueError(f"a capped incast start-up needs a share > 0 and a link rate, got {share!r} and "
                         f"{link_mbps!r} Mbit/s")
    return min(per_flow, share * 8 * flow_bytes / (link_mbps * 1e6))


def past_slack(total: float, slack: float) -> float:
    """Seconds of incast start-ups (`total`, a sync's extra flows x their start-up) charged only
    past `slack`, the seconds its busiest link needs beyond its NICs' (a NIC's stalls behind a
    busier link cost nothing until they outlast it): form C's charge, which `core.past_slack`,
    the docs' validation and the e_o fit all take from here. Pure."""
    return max(0.0, total - max(0.0, slack))


def one_switch_input(topo, hosts) -> bool:
    """Whether every NIC of `hosts` on `topo` (a `topologies.description.Topology`) hangs off a
    switch of two ports, its own and one other: whatever that NIC receives then enters the
    switch through one input at no more than its own link's rate, so no queue forms at the
    NIC's port and flows that converge on it did so earlier, at a switch or server upstream
    (BCube(2,k), Fat-Tree k=2; not BCube with n >= 3 or Fat-Trees of k >= 4, whose edge
    switches have more ports). Read from the topology's graph, not its name: the rule of
    form C's incast start-up (`core.incast_of`), fitted where it holds on BCube(2,3) and (2,4)
    (docs/PROJECTION.md, "The PS scan"). Pure."""
    g = topo.graph()
    switches = {topo.peer(nic.name).node for h in hosts for nic in topo.host_nics(h)}
    return bool(switches) and all(g.degree(sw) == 2 for sw in switches)


def incast_startup(inc: dict | None, link_mbps: float) -> float:
    """Seconds one flow into a step's busiest NIC beyond the first costs under a fitted incast
    start-up `inc` ({"seconds": t, "bytes": b}; None or {} for none): t plus b bytes at the
    hosts' link rate `link_mbps` (the slowest of their NIC links: `core.incast_of`), what
    `core.simulated_form`'s `incast` takes: a time per flow and a part that follows the link
    rate, PS at 5 Mbit/s having lost more per converging flow than at 10 (docs/PROJECTION.md,
    "The PS scan"). A record without "bytes" is a time alone. Pure."""
    if not inc:
        return 0.0
    b = inc.get("bytes", 0.0)
    if b and not link_mbps > 0:
        raise ValueError(f"an incast start-up of {b:.0f} bytes needs the hosts' link rate, got {link_mbps!r} Mbit/s")
    return inc["seconds"] + (8 * b / (link_mbps * 1e6) if b else 0.0)


def extra_flows(steps, arrival=None) -> list[int]:
    """Per step, the flows into its busiest NIC beyond the first (`converging` - 1, at least 0,
    with `arrival` where the routes decide which NICs they enter): what an incast start-up is
    charged for (`core.simulated_form`'s `incast`)."""
    from workloads.algorithms import base

    return base.per_step(lambda s: max(0, converging(s, arrival) - 1), steps)


def fit(evaluate, lo: float = 0.05, hi: float = 1.0, tol: float = 1e-3) -> tuple[float, float]:
    """(e, cost) minimizing cost(e) = sum over the fit runs of (simulated(e) / measured - 1)^2,
    `evaluate(e)` returning that list of ratios (each a simulation at e). Bounded scalar
    minimization (scipy's), the cost being unimodal in e where every simulated time falls as e
    grows. Pure given `evaluate`; ValueError if it returns no ratio."""
    from scipy.optimize import minimize_scalar

    def cost(e: float) -> float:
        ratios = list(evaluate(float(e)))
        if not ratios:
            raise ValueError("fitting the fan-in efficiency needs at least one run with fan-in")
        return float(sum((x - 1.0) ** 2 for x in ratios))

    res = minimize_scalar(cost, bounds=(lo, hi), method="bounded", options={"xatol": tol})
    return float(res.x), float(res.fun)
