"""PS's executor posts every receive of a step before any send (workloads/algorithms/ps.py, `_post`).

A Gloo send moves no data before its receiver has posted the matching receive and told the
sender so; a rank that posted its sends first held back the word that its receives were ready
behind its own payload. Measured on four hosts of one switch (docs/results/ps-fan-in-bw/, 40 MiB,
20 Mbit/s): rank 0's pushes waited until the others' pushes to it had arrived, the sync about 1.6x
its bound; with the receives first, about 1.3x (docs/PROJECTION.md, "Fan-in"). Here, without
processes: a fake comm records the order each rank posts in, and the result is still the sum.
"""
from __future__ import annotations

import threading

import pytest
import torch

from workloads.algorithms import base

pytestmark = pytest.mark.unit


class _RecordingComm:
    """send/recv between threads, matched by (src, dst, tag) like Gloo; every post recorded in order."""

    def __init__(self, rank, box, cond):
        self.rank, self.box, self.cond, self.posted, self.events = rank, box, cond, [], []

    def send(self, tensor, dst, nic=0, tag=0):
        self.posted.append(("send", tag))
        with self.cond:
            self.box[(self.rank, dst, tag)] = tensor.clone()
            self.cond.notify_all()
        return _Work(lambda: None)

    def recv(self, tensor, src, nic=0, tag=0):
        self.posted.append(("recv", tag))

        def wait():
            with self.cond:
                assert self.cond.wait_for(lambda: (src, self.rank, tag) in self.box, 20), (src, self.rank, tag)
                tensor.copy_(self.box.pop((src, self.rank, tag)))
        return _Work(wait)

    def record(self, **event):
        self.events.append(event)


class _Work:
    def __init__(self, wait):
        self.wait = wait


@pytest.mark.parametrize("workers,elements", [(2, 10), (4, 1001), (5, 3)])
def test_every_receive_of_a_step_is_posted_before_any_send_and_the_result_is_the_sum(workers, elements):
    _, plan = base.plan_for("ps", base.PlanContext(workers, (elements,)))
    box, cond = {}, threading.Condition()
    comms = [_RecordingComm(r, box, cond) for r in range(workers)]
    grads = [torch.randn(elements) for _ in range(workers)]
    out, errors = [None] * workers, []

    def rank(r):
        try:
            out[r] = base.get("ps").execute(plan, comms[r], grads[r].clone())
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
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
