"""`hd` (recursive halving-doubling): what is special about it. The generic contract suite
(tests/parallel/test_registry_contract.py) runs it through the real worker loop on Gloo.

The closed form is checked against a brute force: the executor itself, every rank in a
thread, over an in-process fake `Comm` that records each send (peer, tag = step, bytes).
"""
import json
from collections import defaultdict

import pytest
import torch

from tests.threaded_comm import run_ranks, threaded_comms
from workloads.algorithms import base, hd

pytestmark = pytest.mark.unit


def _run_every_rank(plan, grads):
    comms, box = threaded_comms(plan["workers"])
    out = run_ranks(hd.execute, plan, comms, grads)
    assert not box, f"messages nobody received: {sorted(box)}"
    return out, comms


@pytest.mark.parametrize("first", ["near", "far"])
@pytest.mark.parametrize("workers", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("elements", [1, 5, 16, 1001])  # < P (empty halves), uneven, even
def test_closed_form_equals_the_executors_sends_and_the_result_is_the_sum(workers, elements, first):
    algo, plan = base.plan_for(f"hd,first={first}", base.PlanContext(workers, (elements,)))
    assert json.loads(json.dumps(plan)) == plan
    grads = [torch.randint(-9, 10, (elements,), generator=torch.Generator().manual_seed(r)).float()
             for r in range(workers)]
    out, comms = _run_every_rank(plan, grads)
    want = torch.stack(grads).sum(0)
    assert all(torch.equal(o, want) for o in out)
    sent, by_step = defaultdict(lambda: [0, 0]), defaultdict(lambda: [0, 0])
    for c in comms:
        for dst, nic, tag, nbytes in c.sends:
            for key, total in (((c.rank, dst, nic), sent), ((tag, c.rank, dst, nic), by_step)):
                total[key][0] += nbytes
                total[key][1] += 1
    assert {(f.src, f.dst, f.nic): [f.bytes, f.messages] for f in algo.traffic(plan)} == dict(sent)
    assert {(s, f.src, f.dst, f.nic): [f.bytes, f.messages]
            for s, step in enumerate(algo.phases(plan)) for f in step} == dict(by_step)
    steps = 2 * (workers.bit_length() - 1)
    assert len(algo.steps(plan)) == len(algo.step_rounds(plan)) == steps
    assert all(len(c.events) == steps for c in comms)


@pytest.mark.parametrize("workers", [2, 4, 8, 16])
def test_each_half_sends_p_minus_1_over_p_in_log2_p_halving_messages(workers):
    m = 4 * 1024 * workers  # bytes, divisible by P
    _, plan = base.plan_for("hd", base.PlanContext(workers, (m // 4,)))
    log2 = workers.bit_length() - 1
    for rank in range(workers):
        sizes = [4 * (x["send"][1] - x["send"][0]) for x in hd.exchanges(plan, rank)]
        halving = [m >> (s + 1) for s in range(log2)]
        assert sizes == halving + halving[::-1]
        assert sum(sizes[:log2]) == sum(sizes[log2:]) == (workers - 1) * m // workers
    assert sum(f.bytes for f in hd.traffic(plan)) == 2 * (workers - 1) * m


def test_first_picks_the_nearest_or_the_farthest_partner_first():
    near = base.plan_for("hd", base.PlanContext(8, (64,)))[1]
    far = base.plan_for("hd,first=far", base.PlanContext(8, (64,)))[1]
    assert [x["peer"] for x in hd.exchanges(near, 0)] == [1, 2, 4, 4, 2, 1]
    assert [x["peer"] for x in hd.exchanges(far, 0)] == [4, 2, 1, 1, 2, 4]
    # far first: rank r ends the reduce-scatter owning block r; near first: block bit-reversed(r)
    assert hd.exchanges(far, 3)[2]["recv"] == tuple(far["blocks"][3])
    assert hd.exchanges(near, 3)[2]["recv"] == tuple(near["blocks"][6])


@pytest.mark.parametrize("spec,workers,pattern", [
    ("hd", 6, r"^hd does not run with 6 workers; valid: a power of two \(1, 2, 4, 8, \.\.\.\), e\.g\. 4 or 8$"),
    ("hd", 0, r"^hd: need at least 1 worker, got 0$"),
    ("hd,first=middle", 4, r"^hd: option first='middle' is invalid \(must be near or far\); valid: first near"),
    ("hd,segment=4", 4, r"^hd: unknown option\(s\) segment; valid: first$"),
])
def test_bad_input_is_refused_in_one_line(spec, workers, pattern):
    with pytest.raises(ValueError, match=pattern) as err:
        base.plan_for(spec, base.PlanContext(workers, (100,)))
    assert "\n" not in str(err.value)


def test_the_declaration_says_powers_of_two():
    algo = base.get("hd")
    assert [p for p in range(1, 20) if algo.refusal(p) is None] == [1, 2, 4, 8, 16]
    with pytest.raises(base.NotAccepted):
        base.plan_for("hd", base.PlanContext(12, (100,)))
