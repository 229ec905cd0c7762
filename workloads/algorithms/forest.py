"""`forest`: topology-adaptive all-reduce over a packing of aggregation/broadcast trees.

Zhang, Wu, Li, "Near-Optimal Topology-adaptive Parameter Synchronization in Distributed DNN
Training", IEEE INFOCOM 2021 (only the abstract is public: trees rooted at different
workers, each aggregating and broadcasting one partition, near-optimal forest packing,
aggregation overlapped with broadcast). The packing follows Blink (MLSys 2020) and the
bound ForestColl (arXiv 2402.06787); docs/forest.md says what is whose.

Plan (pure; the planner is `workloads/planners/forest.py`):
1. The network: routes and link capacities of the topology (`Topology.route` to the peer's
   NIC l address, bandwidth per directed link), or without a topology (localhost) a
   complete graph of equal links.
2. Trees and rates: `forest.pack` (column generation for the optimum over all trees, then at
   most `max_trees` congestion-aware trees of bounded height; options `max_trees`,
   `iterations`, `max_height`).
3. Tree k aggregates the contiguous partition `range` of the flat gradient, in proportion
   to its rate (`forest.proportional`), cut into chunks of `chunk` elements (`base.split`
   into ceil(size / chunk) near-equal pieces, so both ends of a message agree).
Execution, per tree, two threads on every rank (aggregation overlaps broadcast):
4. Up: for chunk j in order, wait for chunk j from every child, add them (children in rank
   order) into the own slice, send the partial sum to the parent on `nic_up`. At the root
   the slice is then the total, and goes down at once to every child on their `nic_down`.
5. Down (every rank but the root): wait for chunk j from the parent, received in place into
   the slice, forward it to every child.
Receives from children are posted `window` chunks ahead into per-child buffers (option, default
WINDOW; 0: every chunk's at the start, a partition's worth of buffer per child), those from the
parent in place. A child's send of chunk j goes out on the parent's notification that its
receive is posted, which travels on the connection that also carries the parent's down payloads
to that child; posting every receive at the start sends every notification before any payload
(the A/B in docs/forest.md). A down chunk overwrites the slice a rank sent up, which is safe: the
parent can only hold the total after it has received all of that send. Every message has its
own tag: ((tree * 2 + phase) * tag_stride + chunk).
Traffic (exact): per tree, per edge, the partition's bytes up on `nic_up` and down on
`nic_down`, in as many messages as chunks. One step (`phases` absent): all trees at once.
Simulated (`simulated`, the projection's form): the chunk pipeline in lockstep
(`pipeline_steps`), so the simulated time holds the fill that one step of all flows misses.

The ring among the candidates (option `fallback`, ours, docs/forest.md): the planner also
costs the ring all-reduce on the same capacities (its busiest link, `ring_seconds`). When the
packing is not faster by more than FALLBACK_MARGIN, as on a homogeneous network where both
reach the same bound, the plan is the ring's (`fallback: "ring"`, the ring plan under
`ring`) and the forest executes it: a ring is the synchronization topology that network
needs, with 2(N-1) large messages per rank instead of a pipeline of chunks per tree.
`fallback=none` always runs the trees.
"""
from __future__ import annotations

import math
import threading
import time

import networkx as nx
import torch

from workloads.planners import forest as packing
from workloads.planners.background import background_load
from workloads.algorithms import base
from workloads.algorithms.base import DTYPE_BYTES, Algorithm, Flow, Option, merge_flows, number, split
from workloads.gradients import as_flat

UP, DOWN = 0, 1
WINDOW = 8  # chunks whose receives from children are posted ahead (bounds the buffer memory)
MAX_TAG = 2**31 - 1  # Gloo takes a C++ int tag
CAPACITIES = ("available", "configured")  # what the planner packs: see `plan`
FALLBACKS = ("ring", "none")
# the trees must beat the ring's planned time by more than this to be run: their pipelined
# chunks cost more than the ring's large messages (measured on scenario 1, docs/forest.md)
FALLBACK_MARGIN = 0.05

OPTIONS = {
    "max_trees": Option(packing.MAX_TREES, number(1, integer=True), "an integer >= 1 (trees in the packing)"),
    "iterations": Option(packing.ITERATIONS, number(1, integer=True),
                         "an integer >= 1 (column-generation rounds of the planner)"),
    "max_height": Option(None, number(1, integer=True),
                         "an integer >= 1 (tree height; default: the planner picks 2, log2 N or 2 log2 N)"),
    "chunk_elements": Option(0, number(0, integer=True),
                             "an integer >= 0 (elements per pipelined chunk; 0: about 32 chunks per tree)"),
    "capacity": Option("available", lambda v: _choice(v, CAPACITIES),
                       "available (configured minus the paced background flows) or configured"),
    "fallback": Option("ring", lambda v: _choice(v, FALLBACKS),
                       "ring (run the ring when the trees are not faster) or none"),
    "window": Option(WINDOW, number(0, integer=True),
                     "an integer >= 0 (chunks whose receives from children are posted ahead; 0: all at the start)"),
}


def _choice(value, valid) -> str:
    if str(value) not in valid:
        raise ValueError(f"must be {' or '.join(valid)}")
    return str(value)


# --- plan ---------------------------------------------------------------------------------
def overlay(ctx) -> packing.Overlay:
    """Step 1: the network the planner packs, from ctx.topology and ctx.hosts if given."""
    if ctx.topology is None:
        return packing.complete_overlay(ctx.workers)
    return packing.overlay_from_topology(ctx.topology, list(ctx.hosts[:ctx.workers]), ctx.nics)


def validate(ctx) -> None:
    if ctx.topology is not None:
        hosts = list(ctx.hosts)
        if len(hosts) < ctx.workers:
            raise ValueError(f"forest: {ctx.workers} workers but only {len(hosts)} hosts given")
        if len(set(hosts[:ctx.workers])) != ctx.workers:
            raise ValueError("forest: every worker needs a host of its own (the trees are laid on host-to-host "
                             f"routes), got {hosts[:ctx.workers]}")


def plan(ctx) -> dict:
    n, elements = ctx.workers, ctx.elements
    opts = ctx.options
    chunk = int(opts.get("chunk_elements", 0) or 0)
    started = time.perf_counter()
    ov = overlay(ctx)
    load, load_notes = ({}, [])
    if ctx.topology is not None and ctx.background:
        load, load_notes = background_load(ctx.topology, ctx.background)
    use_load = bool(load) and opts.get("capacity", "available") == "available"

    def packed(overlay_):
        return packing.pack(overlay_, int(opts.get("max_trees", packing.MAX_TREES)),
                            int(opts.get("iterations", packing.ITERATIONS)), opts.get("max_height"), elements, chunk)

    available = packing.less_load(ov, load) if load else ov
    used = available if use_load else ov
    measured = ov.source == "topology"
    nbytes = elements * DTYPE_BYTES

    def cut_bounds() -> tuple:  # over the configured capacities, and over what the background leaves
        hosts = list(ctx.hosts[:n])
        cut = packing.cut_bound(packing.physical_graph(ctx.topology), hosts, nbytes)
        return cut, packing.cut_bound(packing.physical_graph(ctx.topology, load), hosts, nbytes) if load else None

    cuts = None
    if measured and n > 1:
        # independent of the packing and pure Python (networkx): computed meanwhile, on another
        # CPU, while the packing's column generation keeps one busy (k = 12: about 10 s of 88)
        cuts = packing.forked(cut_bounds) if packing.default_processes(n) > 1 else cut_bounds
    try:
        found = packed(used)
        ranges = packing.proportional(elements, found.rates) if n > 1 else [(0, elements)]
        trees = []
        for tree, rate, (a, b) in zip(found.trees, found.rates, ranges):
            if b <= a:
                continue  # fewer elements than trees: this one has nothing to carry
            trees.append({"root": tree.root, "parent": list(tree.parent), "nic_up": list(tree.nic_up),
                          "nic_down": list(tree.nic_down), "range": [a, b],
                          "chunk": min(packing.chunk_elements(b - a, chunk), b - a),
                          "rate": rate if math.isfinite(rate) else None, "height": tree.height})
        stride = max([_chunks(t) for t in trees] + [1])
        if (2 * len(trees)) * stride - 1 > MAX_TAG:
            raise ValueError(f"forest: {len(trees)} trees of up to {stride} chunks need more Gloo tags than "
                             f"0..{MAX_TAG}; raise chunk_elements")
        out = {
            "algorithm": "forest", "workers": n, "world": ctx.world, "elements": elements,
            "trees": trees, "tag_stride": stride, "window": int(opts.get("window", WINDOW)),
            "bandwidth": "topology" if measured else "uniform (no topology: a complete graph of equal links)",
            "rate": _finite(found.rate), "rate_optimum": _finite(found.optimum), "rate_upper": _finite(found.upper),
            "gap": found.gap, "method": found.method, "max_height": found.max_height,
            "iterations": found.iterations, "converged": found.converged, "pool": found.pool,
            "planned_seconds": found.seconds(nbytes) if measured else None,
            "pipeline_seconds": packing.pipeline_seconds(found.trees, found.rates, elements, chunk) if measured else None,
            "notes": list(found.notes) + load_notes,
            # which capacities the packing used; with background load, both are shown
            "capacity": "available" if use_load else "configured",
        }
        if ctx.background:
            out["background_source"] = ("measured before the run" if any(f.get("measured_mbps") is not None
                                                                         for f in ctx.background) else "declared")
            out["background_flows"] = [{"src": f["src"], "dst": f["dst"], "declared_mbps": f.get("mbps"),
                                        "measured_mbps": f.get("measured_mbps")} for f in ctx.background]
        if load and measured:  # the other choice too: what the background changes in the plan and the bound
            other = packed(ov if use_load else available)
            out[f"planned_seconds_{'configured' if use_load else 'available'}"] = other.seconds(nbytes)
            out["background_links"] = {e: {"configured_mbps": round(ov.capacity[e] * 8 / 1e6, 3),
                                           "available_mbps": round(available.capacity[e] * 8 / 1e6, 3)}
                                       for e in sorted(load) if e in ov.capacity}
    except BaseException:  # the plan fails or is interrupted: no child left computing the cut bound
        if hasattr(cuts, "cancel"):
            cuts.cancel()
        raise
    if cuts is not None:
        cut, cut_available = cuts()
        out.update(bound_cut_seconds=cut.seconds, bound_cut_which=cut.which, bound_rsag_seconds=cut.rsag_seconds)
        if cut_available is not None:  # the same bound over what the background flows leave
            out["bound_cut_available_seconds"] = cut_available.seconds
        _ring_candidate(ctx, used, out)
    out["planner_seconds"] = time.perf_counter() - started
    return out


def _ring_candidate(ctx, ov: packing.Overlay, out: dict) -> None:
    """Cost the ring all-reduce on the capacities the packing used; fall back to it (option
    `fallback`) when the trees are not faster by more than FALLBACK_MARGIN."""
    ring_algo, ring_plan = base.plan_for("ring", base.PlanContext(
        ctx.workers, tuple(ctx.layer_sizes), nics=ctx.nics, topology=ctx.topology, hosts=tuple(ctx.hosts)))
    load: dict = {}
    for f in ring_algo.traffic(ring_plan):
        for e in ov.routes[(f.src, f.dst, f.nic)]:
            load[e] = load.get(e, 0.0) + f.bytes
    out["ring_seconds"] = max(b / ov.capacity[e] for e, b in load.items())
    if ctx.options.get("fallback", "ring") == "ring" and \
            out["ring_seconds"] <= out["planned_seconds"] * (1 + FALLBACK_MARGIN):
        out.update(fallback="ring", ring=ring_plan)


def _finite(x: float):
    return float(x) if math.isfinite(x) else None


def _chunks(tree: dict) -> int:
    a, b = tree["range"]
    return -(-(b - a) // tree["chunk"])


def chunks(tree: dict) -> list[tuple[int, int]]:
    """[start, end) in the flat gradient of every chunk of a tree's partition (both ends agree)."""
    a, b = tree["range"]
    return [(a + s, a + e) for s, e in split(b - a, _chunks(tree))]


def children(tree: dict, rank: int) -> list[int]:
    return [c for c, p in enumerate(tree["parent"]) if p == rank]


def _tag(plan: dict, k: int, phase: int, j: int) -> int:
    return (k * 2 + phase) * plan["tag_stride"] + j


def traffic(plan: dict) -> list[Flow]:
    """Per tree edge: the partition up (child -> parent) and down, one message per chunk (the
    ring's traffic when the plan fell back to it)."""
    if plan.get("fallback") == "ring":
        return base.get("ring").traffic(plan["ring"])
    flows = []
    for tree in plan["trees"]:
        a, b = tree["range"]
        nbytes, msgs = DTYPE_BYTES * (b - a), _chunks(tree)
        for i, p in enumerate(tree["parent"]):
            if p >= 0:
                flows.append(Flow(i, p, tree["nic_up"][i], nbytes, msgs))
                flows.append(Flow(p, i, tree["nic_down"][i], nbytes, msgs))
    return merge_flows(flows)


def messages(plan: dict, coalesce: bool = False) -> int:
    """Messages one sync sends: a chunk per tree edge and direction (`traffic`'s count). With
    `coalesce`, chunk j of every tree crossing the same (sender, receiver, NIC) travels as one
    message, the fewest an executor that merged the trees' chunks could send (a bound: merged
    chunks wait for each other, and trees of other heights reach an edge at other times)."""
    per: dict = {}
    for tree in plan["trees"]:
        n = _chunks(tree)
        for i, p in enumerate(tree["parent"]):
            if p >= 0:
                per.setdefault((i, p, tree["nic_up"][i]), []).append(n)
                per.setdefault((p, i, tree["nic_down"][i]), []).append(n)
    return sum(max(v) if coalesce else sum(v) for v in per.values())


def _heights(tree: dict) -> tuple[dict, dict]:
    """({rank: depth}, {rank: height of the subtree below it}) in a tree."""
    g = nx.DiGraph([(p, i) for i, p in enumerate(tree["parent"]) if p >= 0])
    g.add_node(tree["root"])
    below: dict = {}
    for i in reversed(list(nx.topological_sort(g))):  # children before parents
        below[i] = max((below[c] + 1 for c in g.successors(i)), default=0)
    return nx.single_source_shortest_path_length(g, tree["root"]), below


def pipeline_steps(plan: dict) -> list:
    """The simulated form (`Algorithm.simulated`): the chunk pipeline in lockstep. A chunk
    crosses an edge at a stage: up from i at s = height of i's subtree (its children's chunks
    have arrived), down to i at s = h + depth(i) - 1 (the root's total came down to i's
    parent); 2 h stages in a tree of height h. Step t carries, on every edge of every tree,
    the chunk t - stage (if there is one): one chunk per edge, so the trees share each link as
    they do chunk by chunk, and the fill (the first chunk climbing and coming down, the last
    one draining) is in the time, (n + 2h - 1) chunk times for n chunks, which one step of all
    flows (the plan's `steps`) misses (docs/forest.md). Per edge: the partition's bytes in as
    many messages as chunks, as `traffic(plan)` (tested). Lockstep is the approximation: a
    step waits for its slowest chunk, where the executor lets each tree run at its own pace."""
    if plan.get("fallback") == "ring":
        return base.get("ring").steps(plan["ring"])
    steps: dict = {}
    for tree in plan["trees"]:
        sizes = [DTYPE_BYTES * (b - a) for a, b in chunks(tree)]
        depth, below = _heights(tree)
        h = tree["height"]
        for i, p in enumerate(tree["parent"]):
            if p < 0:
                continue
            for src, dst, nic, stage in ((i, p, tree["nic_up"][i], below[i]),
                                         (p, i, tree["nic_down"][i], h + depth[i] - 1)):
                for j, size in enumerate(sizes):
                    steps.setdefault(stage + j, []).append(Flow(src, dst, nic, size, 1))
    return [merge_flows(steps[t]) for t in sorted(steps)]


def _rounds(plan: dict) -> list[int]:
    """Per simulated step: a ring's 2(N-1) rounds; one per pipeline step (a chunk's message).
    A tree of height h and n chunks fills steps 0 .. n + 2h - 2 (`pipeline_steps`), so the
    steps are counted without listing their flows."""
    if plan.get("fallback") == "ring":
        return [2 * (plan["workers"] - 1)]
    return [1] * max((_chunks(t) + 2 * t["height"] - 1 for t in plan["trees"]), default=0)


# --- execute ------------------------------------------------------------------------------
def _up(plan: dict, k: int, comm, flat: torch.Tensor, sends: list) -> tuple[float, float, int]:
    """Step 4 on this rank for tree k; returns (t0, t1, bytes sent)."""
    tree, me = plan["trees"][k], comm.rank
    parent, kids, pieces = tree["parent"][me], children(tree, me), chunks(tree)
    window = min(plan.get("window", WINDOW) or len(pieces), len(pieces))
    bufs = {c: [torch.empty(tree["chunk"], dtype=flat.dtype) for _ in range(window)] for c in kids}
    posted = {}

    def post(j):
        if j < len(pieces):
            a, b = pieces[j]
            for c in kids:
                posted[c, j] = comm.recv(bufs[c][j % window][:b - a], c, tree["nic_up"][c], _tag(plan, k, UP, j))

    for j in range(window):
        post(j)
    t0, sent = time.time(), 0
    for j, (a, b) in enumerate(pieces):
        for c in kids:  # in rank order: every rank sums the same way
            posted.pop((c, j)).wait()
            flat[a:b] += bufs[c][j % window][:b - a]
        post(j + window)
        if parent >= 0:
            sends.append(comm.send(flat[a:b], parent, tree["nic_up"][me], _tag(plan, k, UP, j)))
            sent += DTYPE_BYTES * (b - a)
        else:  # the root holds the total of chunk j: down at once
            for c in kids:
                sends.append(comm.send(flat[a:b], c, tree["nic_down"][c], _tag(plan, k, DOWN, j)))
                sent += DTYPE_BYTES * (b - a)
    return t0, time.time(), sent


def _down(plan: dict, k: int, comm, flat: torch.Tensor, sends: list) -> tuple[float, float, int]:
    """Step 5 on this rank (not the root) for tree k; returns (t0, t1, bytes sent)."""
    tree, me = plan["trees"][k], comm.rank
    parent, kids, pieces = tree["parent"][me], children(tree, me), chunks(tree)
    recvs = [comm.recv(flat[a:b], parent, tree["nic_down"][me], _tag(plan, k, DOWN, j))
             for j, (a, b) in enumerate(pieces)]
    t0, sent = time.time(), 0
    for j, (a, b) in enumerate(pieces):
        recvs[j].wait()
        for c in kids:
            sends.append(comm.send(flat[a:b], c, tree["nic_down"][c], _tag(plan, k, DOWN, j)))
            sent += DTYPE_BYTES * (b - a)
    return t0, time.time(), sent


def execute(plan: dict, comm, grads, state=None):
    """Every tree's up and down threads at once; the calling thread waits and re-raises."""
    if plan.get("fallback") == "ring":
        return base.get("ring").execute(plan["ring"], comm, grads, state)
    flat = as_flat(grads)
    if plan["workers"] == 1:
        return flat
    me, errors, marks = comm.rank, [], {}
    jobs = []
    for k, tree in enumerate(plan["trees"]):
        jobs.append((k, "reduce", _up))
        if tree["parent"][me] >= 0:
            jobs.append((k, "broadcast", _down))

    def run(k, phase, fn):
        sends: list = []
        try:
            t0, t1, sent = fn(plan, k, comm, flat, sends)
            for work in sends:
                work.wait()
            marks[k, phase] = (t0, time.time(), sent)
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=job, name=f"forest-tree{job[0]}-{job[1]}", daemon=True)
               for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"forest tree failed on rank {me}: {type(errors[0]).__name__}: {errors[0]}") from errors[0]
    for (k, phase), (t0, t1, sent) in sorted(marks.items()):
        tree = plan["trees"][k]
        nic = tree["nic_up"][me] if tree["parent"][me] >= 0 else next(
            (tree["nic_down"][c] for c in children(tree, me)), 0)
        comm.record(tree=k, stage=0 if phase == "reduce" else 1, nic=max(nic, 0), phase=phase, t0=t0, t1=t1,
                    bytes=sent)
    return flat


ALGORITHM = Algorithm(
    name="forest",
    summary="topology-adaptive forest: packed aggregation/broadcast trees, pipelined and overlapped (INFOCOM 2021)",
    plan=plan, traffic=traffic, execute=execute, validate=validate, options=OPTIONS, needs=("background",),
    simulated=pipeline_steps, rounds=_rounds,
    describe=lambda plan: {k: plan[k] for k in ("planned_seconds", "bound_cut_seconds", "bound_rsag_seconds",
                                                 "gap", "planner_seconds", "capacity", "planned_seconds_configured",
                                                 "planned_seconds_available", "bound_cut_available_seconds",
                                                 "background_source", "background_flows", "ring_seconds",
                                                 "fallback")
                           if k in plan} | {"trees": 0 if plan.get("fallback") else len(plan["trees"])},
)
