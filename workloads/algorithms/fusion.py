"""`fusion`: fixed-size tensor fusion, buckets filled in backward order (Horovod, PyTorch DDP).

The MG-WFBP paper's (Shi, Chu, Li, INFOCOM 2019) fixed-threshold baseline: tensors join the
open bucket in the order backprop produces them, and the bucket is all-reduced once it
holds at least `bucket_mb` MiB; a tensor at least that large goes alone (merge.fusion has
the rule, step by step). PyTorch DDP's default is 25 MiB, Horovod's 64 MiB.

`bucket_mb` is in MiB of the REAL model: under time dilation the runner divides the
gradients by `ctx.size_scale`, and the bucket is divided by the same factor (25 MiB of a
model scaled to 1/10 holds 2.5 MiB of the run's gradients), so a bucket holds the same
layers as DDP's or Horovod's would. Plan, traffic and executor: workloads/algorithms/_layerwise.py.
"""
from __future__ import annotations

from workloads.algorithms import _layerwise
from workloads.algorithms.base import Algorithm, Option, number

MIB = 2**20
OPTIONS = {
    "bucket_mb": Option(25.0, number(0, lo_open=True),
                        "MiB > 0 of the real model's gradients (PyTorch DDP 25, Horovod 64)"),
}


def plan(ctx) -> dict:
    bucket_mb = ctx.options["bucket_mb"]
    return _layerwise.make_plan(ctx, "fusion", "fusion", _layerwise.measured_link(ctx),
                                bucket_bytes=bucket_mb * MIB / ctx.size_scale, bucket_mb=bucket_mb)


ALGORITHM = Algorithm(
    name="fusion",
    summary="fixed-size fusion: ring all-reduce of bucket_mb buckets filled in backward order (DDP 25, Horovod 64)",
    plan=plan, **_layerwise.CONTRACT, options=OPTIONS,
)
