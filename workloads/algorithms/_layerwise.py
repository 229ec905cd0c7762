"""What the layer-wise algorithms share: the plan form, its traffic, and the overlapping executor.

The four algorithms of the MG-WFBP paper (S. Shi, X. Chu, B. Li, "MG-WFBP: Efficient Data
Communication for Distributed Synchronous SGD Algorithms", IEEE INFOCOM 2019) differ only
in how they group the model's parameter tensors ("layers", `PlanContext.layers`) into
all-reduces: `wfbp` one per layer, `single` one for all (SyncEASGD), `fusion` fixed-size
buckets, `mgwfbp` the merge rule's groups. The grouping itself is workloads/planners/merge.py (pure,
tested there); this module turns one into a plan and carries it out. It defines no
ALGORITHM, so the registry skips it; each algorithm is its own module.

Duties:
- `make_plan`: layers and a cost model in, the plan out (below), JSON-able;
- `traffic` / `phases`: the sum over groups of the ring all-reduce's closed form, with its
  messages (`ring.ring_flows` on each group's elements), and one step per group for the
  flow-level bound (a group's all-reduce starts after the previous one ended);
- `timeline`: when each group may start during backprop and its start-up (the contract's
  `Overlap`, which the SimGrid simulation follows), `describe`: what summary.json keeps;
- `execute`: the overlap of communication with backprop, step by step below.

Plan form (every value JSON):
    algorithm, workers, world, elements, nic (0), order (ring order: rank order),
    segment_elements (the ring's pipelining unit), method (merge.plan_groups' planner),
    layer_count, groups      [[layer index, ...], ...] launch order, each in production order,
    ranges                   [[start, end), ...] each group's elements of the flat gradient
                             (groups are contiguous, so one range each),
    tag_base                 first Gloo tag of each group's ring (ranges never overlap),
    alpha, beta, link        the cost model used (LinkModel.to_dict()), provisional: whether it
                             is the placeholder `provisional_link` (no measurement, no option),
    startup_charge_s         waited before each group's ring, inside the span and inside alpha
                             (a real setting's dilation_x, emulation/replan.py; 0 otherwise),
    predicted                merge.plan_groups' timeline: group_bytes, group_start, group_end,
                             ready, backward_seconds, iteration_seconds, exposed_comm_seconds,
    predicted_iteration_seconds, plus each algorithm's own options (bucket_mb and
                             bucket_bytes, merge).

Executor (Horovod's background thread in spirit, on the worker's GradientStream):
1. The stream's thread produces layers L-1..0 (backprop). A watcher thread stamps when each
   layer became ready (for the timeline only; it does no communication).
2. ONE communication thread walks the groups in launch order: it waits for each of the
   group's layers (`stream.wait_layer`), waits the plan's `startup_charge_s` if any (a
   dilated real setting's start-up), then all-reduces the group's range in place with
   the project's pipelined ring (`ring.ring_allreduce`, tags from the group's `tag_base`),
   then goes on to the next group. One all-reduce at a time, as merge.py's cost model
   assumes (one communicator); later layers keep being produced meanwhile.
3. The calling thread only waits for the communication thread, re-raises its error, records
   the timeline (one `backward` event per layer, one `allreduce` event per group) and returns
   the flat gradient, now summed.
"""
from __future__ import annotations

import threading
import time

import torch

from workloads.planners import merge
from workloads.algorithms.base import DTYPE_BYTES, Flow, Overlap, merge_flows, split
from workloads.algorithms.ring import MAX_TAG, SEGMENT_ELEMENTS, ring_allreduce, ring_flows, ring_tags
from workloads.linkmodel import LinkModel

# Placeholder model when nothing was measured or given yet (the runner re-plans with its
# measurement; the plan says "provisional"). A ring all-reduce of m bytes moves 2(N-1)m/N
# over each link in 2(N-1) steps of one message each.
# All four need the measured link: mgwfbp to group, the baselines for their predicted
# timeline, which the report sets against mgwfbp's (same model, or the ratio means nothing).
# "startup": a time-dilated real setting's start-up wait before each group (PlanContext.startup_charge_s).
NEEDS = ("link", "startup")
PROVISIONAL_MBPS = 1000.0  # without a topology (localhost)
PROVISIONAL_MESSAGE_SECONDS = 1e-4  # per ring step: Gloo over TCP, small messages


def layers_of(ctx) -> list[tuple[str, int, float]]:
    """(name, numel, backward_s) per layer, forward order; backward time 0 when none is given.

    The times are those the run's GradientStream produces (the runner passes them already
    scaled by its time dilation)."""
    if ctx.layers:
        return [(str(name), int(numel), float(t_b)) for name, numel, t_b in ctx.layers]
    return [(f"layer{i}", int(numel), 0.0) for i, numel in enumerate(ctx.layer_sizes)]


def provisional_link(ctx) -> LinkModel:
    """A plausible all-reduce model before any measurement: the slowest link class of the
    topology (or 1 Gbit/s) carrying 2(N-1)/N of the bytes, plus 2(N-1) message start-ups."""
    n = ctx.workers
    if n == 1:
        return LinkModel(0.0, 0.0, source="provisional: one worker, nothing to send")
    classes = ctx.topology.link_classes() if ctx.topology is not None else {}
    mbps = min(classes.values()) if classes else PROVISIONAL_MBPS
    return LinkModel(alpha=2 * (n - 1) * PROVISIONAL_MESSAGE_SECONDS,
                     beta=2 * (n - 1) / n / (mbps * 1e6 / 8),
                     source=f"provisional: ring at {mbps:g} Mbit/s, {PROVISIONAL_MESSAGE_SECONDS:g} s per step")


def measured_link(ctx) -> LinkModel | None:
    """`ctx.link` as a LinkModel (the runner may hand over the JSON form), or None."""
    if ctx.link is None or isinstance(ctx.link, LinkModel):
        return ctx.link
    return LinkModel.from_dict(dict(ctx.link))


def make_plan(ctx, name: str, method: str, link: LinkModel | None = None, bucket_bytes=None,
              **extra) -> dict:
    """The plan of `method` (merge.plan_groups) under `link`; the provisional model if None."""
    provisional = link is None
    if provisional:
        link = provisional_link(ctx)
    layers = layers_of(ctx)
    numel = [m for _, m, _ in layers]
    offsets = [0]
    for m in numel:
        offsets.append(offsets[-1] + m)
    predicted = merge.plan_groups(method, [DTYPE_BYTES * m for m in numel], [t for _, _, t in layers],
                                  link.alpha, link.beta, bucket_bytes)
    groups = predicted.pop("groups")
    for key in ("method", "alpha", "beta", "bucket_bytes"):
        predicted.pop(key)
    # A group holds layers hi..lo (production order), so its elements are [offset(lo), offset(hi+1)).
    ranges = [[offsets[g[-1]], offsets[g[0] + 1]] for g in groups]
    n = ctx.workers
    tag_base, tag = [], 0
    for start, end in ranges:
        tag_base.append(tag)
        tag += ring_tags(split(end - start, n), SEGMENT_ELEMENTS)
    if tag - 1 > MAX_TAG:
        raise ValueError(f"{name}: {len(groups)} all-reduces need {tag} Gloo tags, more than {MAX_TAG + 1}")
    if bucket_bytes is not None:
        extra["bucket_bytes"] = bucket_bytes
    return {"algorithm": name, "workers": n, "world": ctx.world, "elements": ctx.elements, "nic": 0,
            "order": list(range(n)), "segment_elements": SEGMENT_ELEMENTS, "method": method,
            "layer_count": len(layers), "groups": groups, "ranges": ranges, "tag_base": tag_base,
            "alpha": link.alpha, "beta": link.beta, "link": link.to_dict(), "provisional": provisional,
            "startup_charge_s": float(ctx.startup_charge_s),
            "predicted": predicted, "predicted_iteration_seconds": predicted["iteration_seconds"], **extra}


# -- traffic -----------------------------------------------------------------------------------

def _group_flows(plan: dict, g: int) -> list[Flow]:
    start, end = plan["ranges"][g]
    return ring_flows(plan["order"], split(end - start, plan["workers"]), plan["segment_elements"], plan["nic"])


def phases(plan: dict) -> list[list[Flow]]:
    """One step per group, in launch order: each group's ring all-reduce."""
    return [_group_flows(plan, g) for g in range(len(plan["groups"]))]


def rounds(plan: dict) -> list[int]:
    """Each group's ring: 2(N-1) rounds (the plan's a already prices them, see emulation/simulator/core.py)."""
    return [2 * (plan["workers"] - 1)] * len(plan["groups"])


def timeline(plan: dict) -> Overlap:
    """How the groups' all-reduces overlap backprop (`Algorithm.timeline`, for the simulation):
    group g released when its last layer is produced (the plan's own predicted timeline from
    the per-layer backward times), each paying the cost model's start-up a; the flow model
    supplies the bandwidth term that the plan's b * m predicts."""
    ready = plan["predicted"]["ready"]
    return Overlap(tuple(float(ready[g[-1]]) for g in plan["groups"]),
                   (float(plan["alpha"]),) * len(plan["groups"]), float(plan["predicted"]["backward_seconds"]))


def describe(plan: dict) -> dict:
    """What summary.json keeps of a layer-wise plan: the cost model, the prediction, the groups."""
    return {"alpha_seconds": plan["alpha"], "beta_seconds_per_byte": plan["beta"],
            "link_provisional": plan["provisional"], "link_source": plan["link"].get("source"),
            "link_r2": plan["link"].get("r2"),
            "predicted_iteration_seconds": plan["predicted_iteration_seconds"],
            "groups": len(plan["groups"]), "group_bytes": list(plan["predicted"]["group_bytes"]),
            "layers": plan["layer_count"]}


def traffic(plan: dict) -> list[Flow]:
    """Bytes and messages per (src, dst) of one sync: every group's ring, summed."""
    return merge_flows(f for step in phases(plan) for f in step)


# -- executor ----------------------------------------------------------------------------------

def _check_stream(plan: dict, stream) -> None:
    if len(stream.layers) != plan["layer_count"]:
        raise ValueError(f"{plan['algorithm']} plan has {plan['layer_count']} layers, the gradient "
                         f"stream {len(stream.layers)}")
    for g, (start, end) in zip(plan["groups"], plan["ranges"]):
        lo, hi = stream.layers[g[-1]], stream.layers[g[0]]
        if (lo[0], hi[0] + hi[1]) != (start, end):
            raise ValueError(f"{plan['algorithm']} plan's group {g} spans elements [{start}, {end}), the "
                             f"stream's layers [{lo[0]}, {hi[0] + hi[1]})")


def execute(plan: dict, comm, grads, state=None) -> torch.Tensor:
    """Steps 1-3 of the module doc; `grads` is a GradientStream (started) or a complete tensor."""
    stream = None if isinstance(grads, torch.Tensor) else grads
    flat = grads if stream is None else stream.flat
    if stream is not None:
        _check_stream(plan, stream)
    n, nic, order = plan["workers"], plan["nic"], plan["order"]
    me = order.index(comm.rank)
    charge = float(plan.get("startup_charge_s", 0.0))  # plans made before it have none
    ready: dict[int, float] = {}
    spans: list[tuple[float, float]] = []
    failure: list[BaseException] = []

    def watch() -> None:  # step 1: stamps only
        try:
            for i in stream.order:
                stream.wait_layer(i)
                ready[i] = time.time()
        except BaseException:  # the communication thread meets the same error and reports it
            pass

    def communicate() -> None:  # step 2
        try:
            for g, (group, (start, end)) in enumerate(zip(plan["groups"], plan["ranges"])):
                if stream is not None:
                    # The layer produced last first: one blocking wait per group, not one
                    # thread wake-up per layer (the others are then already there).
                    stream.wait_layer(group[-1])
                    for layer in group[:-1]:
                        stream.wait_layer(layer)
                t0 = time.time()
                if charge:  # start-up the emulated network lacks (a dilated real setting): inside a
                    time.sleep(charge)
                ring_allreduce(comm, flat[start:end], order, nic, plan["tag_base"][g],
                               plan["segment_elements"], split(end - start, n))
                spans.append((t0, time.time()))
        except BaseException as exc:
            failure.append(exc)

    watcher = None
    if stream is not None:
        watcher = threading.Thread(target=watch, name="backward-watch", daemon=True)
        watcher.start()
    comm_thread = threading.Thread(target=communicate, name="allreduce", daemon=True)
    comm_thread.start()
    comm_thread.join()  # step 3
    if failure:
        raise failure[0]
    if watcher is not None:
        watcher.join()
        previous = stream.t_start
        for i in stream.order:
            comm.record(phase="backward", layer=i, name=stream.names[i], t0=previous, t1=ready[i])
            previous = ready[i]
    for g, (group, (t0, t1)) in enumerate(zip(plan["groups"], spans)):
        sent = _group_flows(plan, g)
        comm.record(tree=0, stage=g, group=g, nic=nic, phase="allreduce", t0=t0, t1=t1,
                    bytes=sent[me].bytes if sent else 0, layers=list(group), ready=ready.get(group[-1], t0))
    return flat


# What the four pass to `Algorithm` besides their name, summary, plan and options: one list,
# so a hook added to the layer-wise family reaches all four.
CONTRACT = dict(traffic=traffic, phases=phases, rounds=rounds, execute=execute, describe=describe,
                timeline=timeline, needs=NEEDS)
