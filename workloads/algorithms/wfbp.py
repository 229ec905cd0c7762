"""`wfbp`: wait-free backpropagation, one all-reduce per parameter tensor as soon as it is ready.

The MG-WFBP paper's first baseline (Shi, Chu, Li, INFOCOM 2019; WFBP itself is Poseidon's,
Zhang et al., ATC 2017): each layer of the model as the run gives it (`PlanContext.layers`,
one parameter tensor each) is its own group, launched in backward order, so communication
overlaps backprop fully but every tensor pays the all-reduce's start-up (alpha), which
dominates when a model has many small tensors. Grouping: merge.wfbp; plan, traffic and the
overlapping executor: workloads/algorithms/_layerwise.py. The grouping needs no
cost model, the predicted timeline does: `ctx.link` when the runner has measured it
(`needs=("link",)`, as the other three, so all four are predicted with the same model), else a
provisional one (the plan says so).
"""
from __future__ import annotations

from workloads.algorithms import _layerwise
from workloads.algorithms.base import Algorithm


def plan(ctx) -> dict:
    return _layerwise.make_plan(ctx, "wfbp", "wfbp", _layerwise.measured_link(ctx))


ALGORITHM = Algorithm(
    name="wfbp",
    summary="wait-free backprop: one ring all-reduce per parameter tensor, launched as soon as it is ready",
    plan=plan, **_layerwise.CONTRACT,
)
