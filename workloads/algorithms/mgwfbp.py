"""`mgwfbp`: merged-gradient wait-free backprop, layers merged under an alpha-beta cost model.

MG-WFBP (S. Shi, X. Chu, B. Li, "MG-WFBP: Efficient Data Communication for Distributed
Synchronous SGD Algorithms", IEEE INFOCOM 2019). WFBP starts each tensor's all-reduce as
soon as its gradient exists; with many small tensors the start-ups (alpha) dominate.
MG-WFBP merges a tensor into the next one when its all-reduce could not finish before the
next tensor is ready anyway and waiting for it costs less than a start-up.
1. Cost model t(m) = a + b*m of one all-reduce of m bytes: options `a` and `b` when both are
   given; else `ctx.link`, which the runner fits on the emulated network
   (workloads/probe.py, workloads/linkmodel.py); else a provisional model, and the plan
   says `"provisional": true` (the runner re-plans once it has measured: `needs=("link",)`).
2. Backward time of each tensor: `ctx.layers` (name, numel, backward_s).
3. Grouping: option `merge`: "greedy" is the authors' rule (merge.mgwfbp_greedy), "optimal"
   the true optimum of the same model (merge.optimal_dp). The greedy is not optimal,
   although the paper says so (tests/unit/test_merge.py has a 3-tensor counter-example).
4. Execution: workloads/algorithms/_layerwise.py, one ring all-reduce per group in launch
   order on a communication thread that overlaps backprop.
"""
from __future__ import annotations

from workloads.algorithms import _layerwise
from workloads.algorithms.base import Algorithm, Option, number
from workloads.linkmodel import LinkModel

METHODS = {"greedy": "mgwfbp", "optimal": "optimal"}  # option merge -> merge.plan_groups method


def _merge(value):
    value = str(value)
    if value not in METHODS:
        raise ValueError(f"must be {' or '.join(METHODS)}")
    return value


OPTIONS = {
    "merge": Option("greedy", _merge, "greedy (the authors' rule) or optimal (dynamic program)"),
    "a": Option(None, number(0), "alpha, seconds >= 0 per all-reduce (with b; default: the measured link)"),
    "b": Option(None, number(0), "beta, seconds >= 0 per byte (with a; default: the measured link)"),
}


def validate(ctx) -> None:
    given = [k for k in ("a", "b") if k in ctx.options]
    if len(given) == 1:
        raise ValueError(f"mgwfbp: options a and b go together (alpha s, beta s/byte of one all-reduce); "
                         f"got only {given[0]}")


def plan(ctx) -> dict:
    if "a" in ctx.options and "b" in ctx.options:
        link = LinkModel(alpha=float(ctx.options["a"]), beta=float(ctx.options["b"]), source="options a, b")
    else:
        link = _layerwise.measured_link(ctx)
    merge = ctx.options["merge"]
    return _layerwise.make_plan(ctx, "mgwfbp", METHODS[merge], link, merge=merge)


ALGORITHM = Algorithm(
    name="mgwfbp",
    summary="MG-WFBP: ring all-reduce of merged layer groups overlapping backprop (merge=greedy|optimal, a, b)",
    plan=plan, **_layerwise.CONTRACT,
    validate=validate, options=OPTIONS,
)
