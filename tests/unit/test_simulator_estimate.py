"""The run-time estimate a projection is refused from (`core.estimate_seconds`, `step_seconds`)
and the reduction declined where it does not pay (`core._run_form`; issue #23).

Pure where it can be: how a step's flows end, the F^2 coefficient's fit against the shipped
measurement (docs/results/simgrid-step-cost/); one small projection per reduction case."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulation.simulator import core

pytestmark = pytest.mark.unit
RESULT = Path(__file__).resolve().parents[2] / "docs" / "results" / "simgrid-step-cost" / "result.json"
needs_simgrid = pytest.mark.skipif(core.simgrid_available() is not None,
                                   reason=f"SimGrid is not importable: {core.simgrid_available()}")


def topo(spec="fattree,k=4", ecmp="two-level"):
    from topologies.spec import build

    return build(spec, bw=1000, ecmp=ecmp)


def test_a_step_whose_flows_mostly_carry_sizes_of_their_own_ends_apart_whatever_the_routing():
    two, hashed = topo(), topo(ecmp="hash")
    # a few sizes among many flows (BML's remainders, a forest's trees on equal links): together
    assert core.step_ends(two, [1, 2, 4, 27, 600], [100, 100, 576, 752, 1000]) == [
        "together", "together", "together", "together", "apart"]
    assert core.step_ends(hashed, [1, 4, 60], [100, 576, 100]) == ["hash", "hash", "apart"]


def test_a_few_sizes_end_apart_on_links_of_unequal_rates():
    from topologies.spec import build

    mixed = build("fattree,k=4", bw=1000, link_bw={"agg-core": 250}, ecmp="two-level")
    assert core.step_ends(mixed, [1, 2, 3], [100, 100, 100]) == ["together", "together", "apart"]


def test_step_seconds_orders_the_three_ways_of_ending():
    f = 4000
    together, hashed, apart = (core.step_seconds(f, e) for e in ("together", "hash", "apart"))
    assert together < hashed < apart
    assert apart == pytest.approx(core.CPU_PER_FLOW * f + core.CPU_PER_FLOW_PAIR_APART * f * f)
    with pytest.raises(KeyError):
        core.step_seconds(f, "sometimes")


def test_estimate_seconds_charges_each_step_as_it_ends():
    t = topo()
    base = core.estimate_seconds(t, 10, [])
    assert core.estimate_seconds(t, 10, [1000, 2000]) == pytest.approx(
        base + core.step_seconds(1000) + core.step_seconds(2000))
    assert core.estimate_seconds(t, 10, [1000, 2000], ["together", "apart"]) == pytest.approx(
        base + core.step_seconds(1000) + core.step_seconds(2000, "apart"))


def test_the_apart_coefficient_is_the_fit_of_the_shipped_measurement():
    """CPU_PER_FLOW_PAIR_APART is the relative least-squares fit of scripts/simgrid_step_cost.py's
    "unequal" points (rounded to two digits), and the fit recovers a known coefficient."""
    points = [p for p in json.loads(RESULT.read_text())["points"] if p["regime"] == "unequal"]
    b = core.fit_pair_cost([p["flows"] for p in points], [p["cpu_seconds"] for p in points])
    assert float(f"{b:.2g}") == core.CPU_PER_FLOW_PAIR_APART
    flows = [500, 1000, 4000]
    assert core.fit_pair_cost(flows, [1e-4 * f + 3e-7 * f * f for f in flows]) == pytest.approx(3e-7)


def test_reduced_memory_counts_the_full_zone_of_two_endpoints_per_class():
    small = core.reduced_memory([3, 3])
    assert core.reduced_memory([5904, 5904]) - core.MEM_BASE > 4e9  # PS on k=12 peaked at 5.1 GB
    assert core.reduced_memory([100_000]) > 3e11 > small


@needs_simgrid
def test_a_reduction_that_does_not_pay_is_declined_or_refused_when_insisted_on():
    """PS on Fat-Tree k=4 with hash ECMP: 240 classes of 240 flows per step, dearer than every
    flow; declined (every flow simulated, the same answer), refused with --reduce on and no memory."""
    p = core.prepare(core.Request("fattree,k=4", "ps", ecmp="hash", bw=1000, mb=1, max_seconds=None, reduce="off"))
    args = (p.topo, p.hosts, p.form, p.pairs, p.background, core.NetworkModel())
    plain = core._run_form(*args)[2]
    declined = core._run_form(*args, reduce=True)[2]
    assert "reduction" not in declined and declined["step_seconds"] == pytest.approx(plain["step_seconds"])
    assert declined["messages_per_step"] == plain["messages_per_step"] == [240, 240]
    with pytest.raises(core.TooLarge, match=r"classes of \d+ flows need about .* GiB to simulate"):
        core._run_form(*args, reduce=True, max_memory=1.0, insist=True)
    # declined for memory, every flow is checked against the memory too: refused in one line
    with pytest.raises(core.TooLarge, match=r"480 flows need about .* GiB to simulate and their 480 classes"):
        core._run_form(*args, reduce=True, max_memory=1.0)
    # insisted on with room: it runs reduced
    assert core._run_form(*args, reduce=True, insist=True)[2]["reduction"]["classes_per_step"] == [240, 240]


@needs_simgrid
def test_the_record_keeps_what_the_estimate_charged_for_the_steps_simgrid_ran():
    rec = core.project(core.Request("fattree,k=4", "ps", ecmp="hash", bw=1000, mb=1, max_seconds=None))
    s = rec["simulator"]
    assert s["simulated_messages_per_step"] == [240, 240] and len(s["simulated_sizes_per_step"]) == 2
    # with equal shards PS's pull carries the messages of its push (each pair, the same bytes):
    # not simulated again (core.repeated_steps), so the estimate charges one step
    assert s["repeated_steps"] == 1
    assert s["step_estimate_seconds"] == pytest.approx(core.step_seconds(240, "hash"), abs=1e-3)
