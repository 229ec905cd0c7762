"""PS's executor posts every receive of a step before any send (workloads/algorithms/ps.py, `_post`).

A Gloo send moves no data before its receiver has posted the matching receive and told the
sender so; a rank that posted its sends first held back the word that its receives were ready
behind its own payload. Measured on four hosts of one switch (docs/results/ps-fan-in-bw/, 40 MiB,
20 Mbit/s): rank 0's pushes waited until the others' pushes to it had arrived, the sync about 1.6x
its bound; with the receives first, about 1.3x (docs/PROJECTION.md, "Fan-in"). Here, without
processes: tests/threaded_comm.py records the order each rank posts in, and the result is still the sum.
"""
from __future__ import annotations

import pytest
import torch

from tests.threaded_comm import run_ranks, threaded_comms
from workloads.algorithms import base

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("workers,elements", [(2, 10), (4, 1001), (5, 3)])
def test_every_receive_of_a_step_is_posted_before_any_send_and_the_result_is_the_sum(workers, elements):
    _, plan = base.plan_for("ps", base.PlanContext(workers, (elements,)))
    comms, box = threaded_comms(workers)
    grads = [torch.randn(elements) for _ in range(workers)]
    out = run_ranks(base.get("ps").execute, plan, comms, grads)
    assert not box, f"messages nobody received: {sorted(box)}"
    total = sum(grads)
    both = 0
    for r in range(workers):
        assert torch.allclose(out[r].flatten(), total, atol=1e-5)
        for tag in {t for _, t in comms[r].posted}:  # one tag per step (push, pull)
            kinds = [k for k, t in comms[r].posted if t == tag]
            assert kinds == sorted(kinds), f"rank {r} posted a send before a receive in step {tag}: {kinds}"
            both += "recv" in kinds and "send" in kinds
    assert both >= workers  # every owner of a non-empty shard both receives and sends in a step
