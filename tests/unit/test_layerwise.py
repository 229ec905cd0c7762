"""Planners of the layer-wise algorithms (wfbp, single, fusion, mgwfbp) as pure functions: plans
are JSON, groups tile the layers in launch order, the predicted timeline is the hand-computed one,
traffic is the ring's closed form per group, options fail in one line that says what is valid,
and a plan made without a measured link says it is provisional."""
import json

import pytest

from workloads.planners import merge
from workloads.algorithms import base, ring
from workloads.linkmodel import LinkModel

pytestmark = pytest.mark.unit

NAMES = ("wfbp", "single", "fusion", "mgwfbp")
MIB = 2**20
# Forward order; backprop produces the last first. Sizes in elements (4 bytes each).
LAYERS = (("conv1", 1, 1e-3), ("conv1.b", 7, 2e-4), ("conv2", 300_000, 4e-3), ("conv2.b", 1, 1e-4),
          ("fc1", 1_000_000, 6e-3), ("fc1.b", 1, 1e-4), ("fc2", 90_000, 2e-3), ("out", 10, 0.0))
LINK = LinkModel(alpha=5e-3, beta=2e-9, r2=0.99, source="least squares over 9 points", points=9)


def ctx(workers=4, layers=LAYERS, link=None, **options):
    return base.PlanContext(workers=workers, layer_sizes=tuple(n for _, n, _ in layers), layers=tuple(layers),
                            link=link, options=options)


def sizes_and_times(layers=LAYERS):
    return [4 * n for _, n, _ in layers], [t for _, _, t in layers]


def test_registry_has_the_four_and_all_need_the_link():
    reg = base.registry()
    assert set(NAMES) <= set(reg)
    assert "_layerwise" not in reg
    # mgwfbp groups by it; the baselines' predictions use it (compared with mgwfbp's).
    assert all(reg[n].needs == ("link", "startup") for n in NAMES)


@pytest.mark.parametrize("spec", ["wfbp", "single", "fusion", "fusion,bucket_mb=1", "mgwfbp",
                                  "mgwfbp,merge=optimal", "mgwfbp,a=0.001,b=1e-9"])
@pytest.mark.parametrize("workers", [1, 2, 3, 7])
def test_plan_is_json_groups_tile_the_layers_and_traffic_reads_only_the_plan(spec, workers):
    algo, plan = base.plan_for(spec, ctx(workers, link=LINK))
    again = json.loads(json.dumps(plan))
    assert again == plan
    assert algo.traffic(again) == algo.traffic(plan) and algo.steps(again) == algo.steps(plan)
    count = len(LAYERS)
    # Every layer once, in launch order (the last layer first), each group in production order.
    assert [i for g in plan["groups"] for i in g] == list(range(count - 1, -1, -1))
    assert plan["layer_count"] == count and plan["elements"] == sum(n for _, n, _ in LAYERS)
    offsets = [0]
    for _, n, _ in LAYERS:
        offsets.append(offsets[-1] + n)
    assert plan["ranges"] == [[offsets[g[-1]], offsets[g[0] + 1]] for g in plan["groups"]]
    # The ranges tile the flat gradient from its end backwards.
    assert plan["ranges"][0][1] == plan["elements"] and plan["ranges"][-1][0] == 0
    assert all(a[0] == b[1] for a, b in zip(plan["ranges"], plan["ranges"][1:]))
    # Each group's ring gets its own tags.
    uses = [ring.ring_tags(base.split(e - s, workers), plan["segment_elements"]) for s, e in plan["ranges"]]
    assert plan["tag_base"] == [sum(uses[:g]) for g in range(len(uses))]


# The predicted timelines of LAYERS under LINK (a = 5 ms, b = 2 ms/MB), worked out by hand.
# Backprop produces out, fc2, fc1.b, fc1, conv2.b, conv2, conv1.b, conv1, ready at
# 0, 2, 2.1, 8.1, 8.2, 12.2, 12.4, 13.4 ms; their bytes are 40, 360000, 4, 4e6, 4, 1.2e6, 28, 4.
# A group starts when its last tensor is ready and the previous group has ended, and takes
# 5 ms + 2e-6 ms per byte. Group ends in ms, launch order:
HAND_TIMELINES = {
    # every tensor alone; the link is always busy from 0 (each tensor is ready before the
    # previous all-reduce ends), so the end is 8 a + b * all bytes = 40 + 11.12016 ms
    "wfbp": ([[7], [6], [5], [4], [3], [2], [1], [0]],
             [5.00008, 10.72008, 15.720088, 28.720088, 33.720096, 41.120096, 46.120152, 51.12016]),
    # everything once backprop ends: 13.4 + 5 + 11.12016
    "single": ([[7, 6, 5, 4, 3, 2, 1, 0]], [29.52016]),
    # buckets of >= 0.5 MiB: {out, fc2, fc1.b} from 2.1 ms (360044 B), fc1 alone from 8.1 ms,
    # conv2.b and conv2 each after the previous one, {conv1.b, conv1} last (32 B)
    "fusion,bucket_mb=0.5": ([[7, 6, 5], [4], [3], [2], [1, 0]],
                             [7.820088, 21.1, 26.100008, 33.500008, 38.500072]),
    # {out, fc2, fc1.b} as above, then the rest once backprop ends: 13.4 + 5 + 10.400072
    "mgwfbp": ([[7, 6, 5], [4, 3, 2, 1, 0]], [7.820088, 28.800072]),
    # fc1 alone from 8.1 ms (ends 21.1), the last 1,200,036 B from there: 21.1 + 5 + 2.400072
    "mgwfbp,merge=optimal": ([[7, 6, 5], [4], [3, 2, 1, 0]], [7.820088, 21.1, 28.500072]),
}


@pytest.mark.parametrize("spec", list(HAND_TIMELINES))
def test_predicted_timeline_equals_the_hand_computed_one(spec):
    _, plan = base.plan_for(spec, ctx(link=LINK))
    groups, ends_ms = HAND_TIMELINES[spec]
    assert plan["groups"] == groups
    assert plan["predicted"]["group_end"] == pytest.approx([e * 1e-3 for e in ends_ms], rel=1e-12)
    assert plan["predicted_iteration_seconds"] == pytest.approx(ends_ms[-1] * 1e-3, rel=1e-12)
    assert plan["predicted"]["backward_seconds"] == pytest.approx(13.4e-3, rel=1e-12)
    assert (plan["alpha"], plan["beta"]) == (LINK.alpha, LINK.beta) and plan["link"] == LINK.to_dict()


def test_groupings_are_the_merge_planners():
    sizes, t_b = sizes_and_times()
    a, b = LINK.alpha, LINK.beta
    assert base.plan_for("wfbp", ctx(link=LINK))[1]["groups"] == merge.wfbp(sizes)
    assert base.plan_for("single", ctx(link=LINK))[1]["groups"] == merge.single(sizes)
    assert base.plan_for("fusion", ctx(link=LINK))[1]["groups"] == merge.fusion(sizes, 25 * MIB)
    assert base.plan_for("mgwfbp", ctx(link=LINK))[1]["groups"] == merge.mgwfbp_greedy(sizes, t_b, a, b)
    assert base.plan_for("mgwfbp,merge=optimal", ctx(link=LINK))[1]["groups"] == merge.optimal_dp(sizes, t_b, a, b)


def test_mgwfbp_greedy_versus_optimal_on_the_counter_example():
    # tests/unit/test_merge.py: 1, 1, 2 MB; t_b 3, 1, 0 ms; a = 2 ms, b = 1 ms/MB.
    layers = (("l0", 250_000, 3e-3), ("l1", 250_000, 1e-3), ("l2", 500_000, 0.0))
    greedy = base.plan_for("mgwfbp,a=0.002,b=1e-9", ctx(layers=layers))[1]
    optimal = base.plan_for("mgwfbp,merge=optimal,a=0.002,b=1e-9", ctx(layers=layers))[1]
    assert greedy["groups"] == [[2, 1], [0]] and optimal["groups"] == [[2], [1, 0]]
    assert greedy["predicted_iteration_seconds"] == pytest.approx(9e-3)
    assert optimal["predicted_iteration_seconds"] == pytest.approx(8e-3)
    assert (greedy["merge"], greedy["method"], optimal["merge"], optimal["method"]) == \
        ("greedy", "mgwfbp", "optimal", "optimal")


def test_fusion_bucket_boundaries():
    # Backward order: out 40 B, fc2 360000 B, fc1.b 4 B, fc1 4 MB, conv2.b 4 B, conv2 1.2 MB, ...
    _, plan = base.plan_for("fusion,bucket_mb=1", ctx(link=LINK))
    # 40 + 360000 < 1 MiB, + 4 still; fc1 (4 MB >= 1 MiB) closes that bucket and goes alone;
    # conv2.b opens one that conv2 (>= 1 MiB) closes early; conv2 alone; the rest closes at the end.
    assert plan["groups"] == [[7, 6, 5], [4], [3], [2], [1, 0]]
    assert plan["bucket_mb"] == 1.0 and plan["bucket_bytes"] == MIB
    # A bucket of exactly 40 + 360000 bytes: out and fc2 fill it (>= closes), fc2 alone does not.
    _, plan = base.plan_for(f"fusion,bucket_mb={360040 / MIB!r}", ctx(link=LINK))
    assert plan["bucket_bytes"] == 360040 and plan["groups"][:3] == [[7, 6], [5], [4]]
    # The default is PyTorch DDP's 25 MiB: this 5.6 MB model is one bucket.
    assert base.plan_for("fusion", ctx(link=LINK))[1]["groups"] == [list(range(7, -1, -1))]


@pytest.mark.parametrize("workers", [1, 2, 3, 5, 7])
def test_traffic_is_the_ring_closed_form_per_group(workers):
    algo, plan = base.plan_for("fusion,bucket_mb=1", ctx(workers, link=LINK))
    flows = algo.traffic(plan)
    steps = algo.steps(plan)
    assert len(steps) == len(plan["groups"])
    if workers == 1:
        assert flows == [] and all(step == [] for step in steps)
        return
    assert sorted((f.src, f.dst) for f in flows) == [(r, (r + 1) % workers) for r in range(workers)]
    assert sum(f.bytes for f in flows) == 2 * (workers - 1) * 4 * plan["elements"]
    for g, (start, end) in enumerate(plan["ranges"]):  # each step: one ring over the group's elements
        e = end - start
        assert sum(f.bytes for f in steps[g]) == 2 * (workers - 1) * 4 * e
        segs = [len(ring.segments(base.split(e, workers), c)) for c in range(workers)]
        assert sum(f.messages for f in steps[g]) == 2 * (workers - 1) * sum(segs)
        if e % workers == 0:
            assert all(f.bytes == 2 * (workers - 1) * 4 * e // workers for f in steps[g])
    assert flows == base.merge_flows(f for step in steps for f in step)


def test_wfbp_pays_one_message_per_tiny_layer():
    # 40 one-element layers over 5 ranks: each ring moves 1 element in 2 of its 8 steps, so each
    # sync carries 40 * 2 * 4 bytes in 80 messages, whose framing (144 B each) outweighs the data.
    layers = tuple((f"t{i}", 1, 0.0) for i in range(40))
    algo, plan = base.plan_for("wfbp", ctx(5, layers=layers))
    flows = algo.traffic(plan)
    assert sum(f.bytes for f in flows) == 40 * 2 * 4 * 4
    assert sum(f.messages for f in flows) == 40 * 2 * 4
    assert sum(f.payload - f.bytes for f in flows) > 10 * sum(f.bytes for f in flows)
    single = base.plan_for("single", ctx(5, layers=layers))
    assert sum(f.messages for f in single[0].traffic(single[1])) == 2 * 4 * 5


def test_provisional_without_a_measured_or_given_link():
    for name in NAMES:
        _, plan = base.plan_for(name, ctx())
        assert plan["provisional"] is True and plan["link"]["source"].startswith("provisional")
        _, plan = base.plan_for(name, ctx(link=LINK))
        assert plan["provisional"] is False and plan["link"] == LINK.to_dict()
        _, plan = base.plan_for(name, ctx(link=LINK.to_dict()))  # the JSON form, as a job carries it
        assert plan["provisional"] is False and plan["alpha"] == LINK.alpha
    # Options a and b are the model, over a measured link too.
    _, plan = base.plan_for("mgwfbp,a=0.01,b=0", ctx(link=LINK))
    assert plan["provisional"] is False and (plan["alpha"], plan["beta"]) == (0.01, 0.0)
    assert plan["link"]["source"] == "options a, b"


def test_provisional_model_follows_the_topology_bandwidth():
    class Topo:  # what the planner reads of topologies.description.Topology
        kind = "fattree"
        name = "fattree(4)"

        def link_classes(self):
            return {"edge": 20.0, "core": 40.0}

    plan = base.plan_for("wfbp", base.PlanContext(4, (1000,), topology=Topo()))[1]
    # A ring over the slowest class, 20 Mbit/s = 2.5 MB/s, carries 2(N-1)/N = 1.5 of the bytes.
    assert plan["beta"] == pytest.approx(1.5 / 2.5e6) and plan["alpha"] == pytest.approx(6 * 1e-4)
    assert base.plan_for("wfbp", base.PlanContext(1, (1000,)))[1]["alpha"] == 0.0


def test_without_layers_every_backward_time_is_zero():
    _, plan = base.plan_for("mgwfbp,a=0.001,b=1e-9", base.PlanContext(2, (10, 20, 30)))
    assert plan["predicted"]["backward_seconds"] == 0.0
    assert plan["groups"] == [[2, 1, 0]]  # all ready at once: one start-up is best


@pytest.mark.parametrize("spec, message", [
    ("fusion,bucket_mb=0", r"fusion: option bucket_mb='0' is invalid \(must be > 0\); valid: bucket_mb MiB > 0"),
    ("fusion,bucket_mb=-3", r"fusion: option bucket_mb='-3' is invalid \(must be > 0\)"),
    ("mgwfbp,a=-1,b=0", r"mgwfbp: option a='-1' is invalid \(must be >= 0\); valid: a alpha"),
    ("mgwfbp,a=0,b=-1e-9", r"mgwfbp: option b='-1e-9' is invalid \(must be >= 0\)"),
    ("mgwfbp,merge=bogus", r"mgwfbp: option merge='bogus' is invalid \(must be greedy or optimal\); valid: merge"),
    ("mgwfbp,a=0.001", r"mgwfbp: options a and b go together .*; got only a"),
    ("mgwfbp,bucket_mb=3", r"mgwfbp: unknown option\(s\) bucket_mb; valid: merge, a, b"),
    ("fusion,merge=optimal", r"fusion: unknown option\(s\) merge; valid: bucket_mb"),
    ("wfbp,bucket_mb=3", r"wfbp: unknown option\(s\) bucket_mb; valid: \(none\)"),
    ("single,a=1", r"single: unknown option\(s\) a; valid: \(none\)"),
])
def test_option_errors_are_one_line_and_say_what_is_valid(spec, message):
    with pytest.raises(ValueError, match=message) as err:
        base.plan_for(spec, ctx())
    assert "\n" not in str(err.value)


def test_no_dedicated_servers():
    with pytest.raises(ValueError, match="mgwfbp does not use dedicated servers"):
        base.plan_for("mgwfbp", base.PlanContext(2, (10,), servers=1))


def test_probe_rejects_bad_input_before_touching_the_network():
    from workloads import probe

    for sizes, reps, message in (([], 3, "sizes_bytes must be positive integers"),
                                 ([0], 3, "sizes_bytes must be positive integers"),
                                 ([4.5], 3, "sizes_bytes must be positive integers"),
                                 ([4], 0, "reps must be an integer >= 1")):
        with pytest.raises(ValueError, match=message):
            probe.measure_allreduce(None, sizes, reps)
