"""`single`: one all-reduce of the whole gradient after backprop (SyncEASGD in the MG-WFBP paper).

The MG-WFBP paper's (Shi, Chu, Li, INFOCOM 2019) no-overlap baseline: one start-up only, but
nothing is sent until the last tensor (layer 0) exists. Unlike `ring`, it runs through the
layer-wise executor (workloads/algorithms/_layerwise.py), so its plan, traffic and timeline
have the same form as `wfbp`, `fusion` and `mgwfbp` and the four compare like for like.
Grouping: merge.single.
"""
from __future__ import annotations

from workloads.algorithms import _layerwise
from workloads.algorithms.base import Algorithm


def plan(ctx) -> dict:
    return _layerwise.make_plan(ctx, "single", "single", _layerwise.measured_link(ctx))


ALGORITHM = Algorithm(
    name="single",
    summary="SyncEASGD: one ring all-reduce of the whole gradient once backprop has finished",
    plan=plan, **_layerwise.CONTRACT,
)
