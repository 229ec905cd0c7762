"""emulation/config.py: YAML + overrides -> RunConfig -> validated, planned runs.

Every bad input must fail here, before a process starts, with a one-line ValueError that
says what is valid. The model is "synthetic,mb=1" so planning stays fast.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from emulation import background, config
from topologies import placement
from topologies.spec import build

pytestmark = pytest.mark.unit

MODEL = "synthetic,mb=1"


def write(tmp_path, text, name="exp.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def cfg(**kw):
    kw.setdefault("model", MODEL)
    return config.load(None, **kw)


def one_line_error(fn, *args, match=None, **kw):
    with pytest.raises(ValueError, match=match) as e:
        fn(*args, **kw)
    msg = str(e.value)
    assert msg and "\n" not in msg, f"not one line: {msg!r}"
    return msg


# ---- load ------------------------------------------------------------------------------
def _names(matrix):
    return [(t, [name for name, _ in algos]) for t, algos in matrix]


def test_defaults_without_file():
    c = config.load()
    assert c.name == "experiment" and c.algorithms == ["gloo", "ring", "ps"]
    assert _names(c.matrix()) == [("fattree,k=4", ["gloo", "ring", "ps"]), ("bcube,n=4,k=2", ["gloo", "ring", "ps"])]


def test_the_hosts_congestion_control_is_pinned_to_cubic_unless_given():
    assert config.load().tcp_cc == "cubic" == config.TCP_CC_DEFAULT
    assert config.load(tcp_cc="bbr").tcp_cc == "bbr"


def test_the_hosts_minimum_rto_is_the_kernels_unless_given():
    assert config.load().tcp_rto_min_ms is None
    c = config.load(tcp_rto_min_ms=2000)
    assert c.tcp_rto_min_ms == 2000 and config.validate(c)


def test_load_yaml_and_overrides(tmp_path):
    p = write(tmp_path, """
        topologies: "bcube,n=3,k=2"
        algorithms: "ring, ps"
        bw: 10
        link_bw: {level1: 5}
        iters: 3
        model: synthetic,mb=1
        options: {ring: {order: [1, 0, 2, 3, 4, 5, 6, 7, 8]}}
    """, name="small.yaml")
    c = config.load(p)
    assert c.name == "small"  # the file's stem
    assert c.topologies == ["bcube,n=3,k=2"] and c.algorithms == ["ring", "ps"]
    assert (c.bw, c.link_bw, c.iters, c.warmup) == (10, {"level1": 5}, 3, 1)
    # overrides win; None means "not given"
    c = config.load(p, iters=7, bw=None, name="renamed", algorithms="gloo")
    assert (c.iters, c.bw, c.name, c.algorithms) == (7, 10, "renamed", ["gloo"])
    c = config.load(p, topologies=["fattree,k=4", "bcube,n=2,k=2"])
    assert c.topologies == ["fattree,k=4", "bcube,n=2,k=2"]


def test_empty_yaml_is_all_defaults(tmp_path):
    c = config.load(write(tmp_path, "", name="empty.yaml"))
    assert c.name == "empty" and c.iters == config.RunConfig().iters


def test_unknown_option_lists_valid_ones(tmp_path):
    p = write(tmp_path, """
        topologies: ["fattree,k=4"]
        wrokers: 4
    """)
    msg = one_line_error(config.load, p, match=r"unknown option\(s\) wrokers; valid: .*workers")
    for name in ("algorithms", "bw", "iters", "link_bw", "model", "placement", "topologies"):
        assert name in msg
    # a misspelled override is the same one-line error, not a TypeError
    one_line_error(config.load, None, wrokers=4, match=r"unknown option\(s\) wrokers; valid: .*workers")


@pytest.mark.parametrize("text", [
    "topologies: [fattree,k=4\nalgorithms: ring\n",
    "a: b: c\n",
    "key: 'unterminated\n",
    "\tbw: 5\n",
])
def test_invalid_yaml_is_a_one_line_error(tmp_path, text):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    one_line_error(config.load, p, match=r"bad.yaml is not valid YAML: ")


def test_yaml_must_be_a_mapping(tmp_path):
    one_line_error(config.load, write(tmp_path, "- ring\n- ps\n"), match="must be a mapping of options")


def test_missing_file(tmp_path):
    one_line_error(config.load, tmp_path / "nope.yaml", match="does not exist")


# ---- validate ------------------------------------------------------------------------------
def test_validate_plans_every_run():
    runs = config.validate(cfg(topologies={"bcube,n=3,k=2": ["bml", "ring"], "fattree,k=4": ["ps"]}))
    assert [(r.index, r.topology.name, r.algorithm) for r in runs] == [
        (1, "bcube(3,2)", "bml"), (2, "bcube(3,2)", "ring"), (3, "fattree(4)", "ps")]
    for r in runs:
        assert r.workers == len(r.topology.hosts()) and r.servers == 0
        assert r.hosts == r.topology.hosts()
        assert r.plan["algorithm"] == r.algorithm
        assert r.label.startswith(f"{r.topology.name} {r.algorithm}")
        assert r.model.layer_sizes and sum(r.model.layer_sizes) * 4 == 2**20


def test_validate_dedicated_servers_only_for_ps():
    runs = config.validate(cfg(topologies=["fattree,k=4"], algorithms=["ps", "ring"], workers=8, servers=2))
    ps, ring = runs
    assert (ps.workers, ps.servers, len(ps.hosts)) == (8, 2, 10)
    assert (ring.workers, ring.servers, len(ring.hosts)) == (8, 0, 8)


@pytest.mark.parametrize("kw,pattern", [
    (dict(algorithms=["nope"]), r"unknown algorithm 'nope'; valid: bml, .*gloo, .*ps, ring"),
    (dict(topologies=["fattree,k=4"], algorithms=["bml"]), r"bml runs on bcube only, not fattree\(4\)"),
    (dict(topologies=["bcube,n=2,k=2"], algorithms=["ring"], workers=5),
     r"5 workers \+ 0 servers do not fit on bcube\(2,2\), which has 4 hosts"),
    (dict(topologies=["fattree,k=2"], algorithms=["ps"], workers=2, servers=1),
     r"2 workers \+ 1 servers do not fit on fattree\(2\), which has 2 hosts"),
    (dict(bw=0), r"bw=0 Mbit/s is out of range"),
    (dict(bw=1000.5), r"bw=1000.5 Mbit/s is out of range"),
    (dict(bw=-3), r"bw=-3 Mbit/s is out of range"),
    (dict(link_bw={"host": 2000}), r"link_bw\[host\]=2000 Mbit/s is out of range"),
    (dict(topologies=["fattree,k=4"], link_bw={"level0": 5}), r"link_bw key 'level0' is not a link class, host or interface"),
    (dict(iters=0), r"iters=0 is invalid: must be an integer >= 1"),
    (dict(mtu=500), r"mtu=500 is invalid: must be an integer >= 576"),
    (dict(mtu=65000), r"mtu=65000 is invalid: must be an integer 576..64000 \(the largest measured"),
    (dict(switch_priority="high"), r"switch_priority='high' is invalid: must be one of normal, realtime"),
    (dict(tcp_cc="Cubic; rm"), r"tcp_cc='Cubic; rm' is invalid: must be a congestion control's name"),
    (dict(tcp_cc=3), r"tcp_cc=3 is invalid"),
    (dict(tcp_rto_min_ms=0), r"tcp_rto_min_ms=0 is invalid: must be an integer number of milliseconds, 1..120000"),
    (dict(tcp_rto_min_ms=2.5), r"tcp_rto_min_ms=2.5 is invalid"),
    (dict(tcp_rto_min_ms=True), r"tcp_rto_min_ms=True is invalid"),
    (dict(switch_priority="realtime", cluster=["root@b"]), r"switch_priority=realtime is for one server"),
    (dict(iters=-1), r"iters=-1 is invalid"),
    (dict(iters="3"), r"iters='3' is invalid"),
    (dict(warmup=-1), r"warmup=-1 is invalid"),
    (dict(workers=0), r"workers=0 is invalid"),
    (dict(timeout=0), r"timeout=0 is invalid: must be a number > 0"),
    (dict(placement="random"), r"placement 'random' is unknown; valid: ordered, spread"),
    (dict(topologies=["bcube,n=1,k=2"]), r"BCube n=1 is out of range"),
    (dict(topologies=["fattree,k=3"]), r"Fat-Tree k=3 is invalid"),
    (dict(topologies=["ring,n=4"]), r"unknown topology 'ring'; valid: bcube"),
    (dict(topologies={"fattree,k=4": []}), r"no algorithm given for topology fattree,k=4"),
    (dict(options={"nope": {}}), r"unknown algorithm 'nope'"),
    (dict(topologies=["fattree,k=4"], algorithms=["ring"], options={"ring": {"order": [0, 0]}}),
     r"ring: option order must be a permutation"),
    (dict(model="synthetic"), r"synthetic"),
    (dict(topologies=["bcube,n=2,k=2"], algorithms=["ring"], crash={"rank": 4, "iter": 1}),
     r"crash rank 4 is not a rank of every run"),
    # background flows: only between hosts that run no rank (issue #6 §2, #10 bad input)
    (dict(topologies=["fattree,k=4"], algorithms=["ring"], workers=4, background=["h0_0_2:h3_1_3"]),
     r"background flow h0_0_2:h3_1_3: h0_0_2 runs a worker or server of this run; hosts free of workers: h1_0_2"),
    (dict(topologies=["fattree,k=4"], algorithms=["ring"], workers=4, background=["h9_9_9:h3_1_3"]),
     r"h9_9_9 is not a host of fattree\(4\); hosts free of workers:"),
    (dict(topologies=["fattree,k=4"], algorithms=["ring"], workers=4, background=["h3_1_3"]),
     r"background flow 'h3_1_3' is not SRC:DST or SRC:DST:MBPS"),
    (dict(topologies=["fattree,k=4"], algorithms=["ring"], workers=4, background=["h3_1_3:h3_1_3"]),
     r"needs two different hosts"),
    (dict(topologies=["fattree,k=4"], algorithms=["ring"], workers=4, background=["h2_0_2:h3_1_3:0"]),
     r"rate '0' must be Mbit/s in \(0, 1000\] or omitted for unlimited"),
    (dict(topologies=["fattree,k=4"], algorithms=["ring"], workers=4, background=[{"src": "h2_0_2"}]),
     r"keys are src, dst and optionally mbps"),
    # real training (issue #9): a network the digits trainer knows, unscaled, sane options
    (dict(train=True, model="vgg19"), r"train: real training needs model\(s\) among lenet5, resnet18, resnet20 "
                                      r"and size_scale 1, got model vgg19, size_scale 1$"),
    (dict(train=True, model="resnet18", size_scale=2), r"got model resnet18, size_scale 2$"),
    (dict(train=True, model="lenet5", check_iters=-1), r"check_iters=-1 is invalid: must be an integer >= 0"),
    (dict(train=True, model="lenet5", eval_every=0), r"eval_every=0 is invalid: must be an integer >= 1"),
    (dict(train=True, model="lenet5", target_accuracy=90), r"target_accuracy=90 is invalid: must be a fraction "
                                                           r"in \(0, 1\]"),
])
def test_validate_rejects_bad_input_in_one_line(kw, pattern):
    one_line_error(config.validate, cfg(**kw), match=pattern)


def test_unknown_algorithm_in_yaml_lists_valid(tmp_path):
    p = write(tmp_path, """
        topologies: ["bcube,n=2,k=2"]
        algorithms: [ring, allreduce]
        model: synthetic,mb=1
    """)
    msg = one_line_error(config.validate, config.load(p), match="unknown algorithm 'allreduce'")
    for name in ("bml", "gloo", "ps", "ring"):
        assert name in msg


# ---- placement and matrix ------------------------------------------------------------------
def test_place_ordered():
    t = build("fattree,k=4")
    assert placement.place(t, 5, "ordered") == t.hosts()[:5]
    assert placement.place(t, 16, "spread") == t.hosts()  # all hosts: order unchanged
    assert placement.place(t, 20, "ordered") == t.hosts()


def test_place_spread_uses_distinct_edge_switches_first():
    t = build("fattree,k=4")
    hosts = placement.place(t, 9, "spread")
    assert len(hosts) == len(set(hosts)) == 9
    edges = [t.peer(t.host_nics(h)[0].name).node for h in hosts]
    assert len(set(edges[:8])) == 8  # one host on each of the 8 edge switches...
    assert edges[:8] == [f"e{p}_{e}" for p in range(4) for e in range(2)]  # ...in pod order
    assert hosts[:8] == [f"h{p}_{e}_2" for p in range(4) for e in range(2)]
    assert hosts[8] == "h0_0_3"  # then around again


def test_place_spread_on_bcube_uses_level0_switches():
    t = build("bcube,n=3,k=2")
    hosts = placement.place(t, 4, "spread")
    assert hosts == ["h00", "h10", "h20", "h01"]
    sw = [t.peer(t.host_nics(h)[0].name).node for h in hosts]
    assert len(set(sw[:3])) == 3


def test_spread_placement_reaches_the_plan():
    (run,) = config.validate(cfg(topologies=["fattree,k=4"], algorithms=["ring"], workers=4, placement="spread"))
    assert run.hosts == ["h0_0_2", "h0_1_2", "h1_0_2", "h1_1_2"]


def test_matrix_forms():
    c = cfg(topologies={"bcube,n=3,k=2": ["bml", "ps"], "fattree,k=4": ("ps",)}, algorithms=["ring"])
    assert _names(c.matrix()) == [("bcube,n=3,k=2", ["bml", "ps"]), ("fattree,k=4", ["ps"])]
    c = cfg(topologies=["bcube,n=3,k=2", "fattree,k=4"], algorithms="gloo,ring")
    assert _names(c.matrix()) == [("bcube,n=3,k=2", ["gloo", "ring"]), ("fattree,k=4", ["gloo", "ring"])]
    c = cfg(topologies="fattree,k=2", algorithms=["ps"])
    assert _names(c.matrix()) == [("fattree,k=2", ["ps"])]


def test_algorithm_specs_carry_options_and_may_repeat():
    c = config.load(topologies=["fattree,k=4"], algorithms=["ring,segment_elements=1024", "ring", "gloo,ps"])
    assert c.matrix() == [("fattree,k=4", [("ring", {"segment_elements": "1024"}), ("ring", {}), ("gloo", {}),
                                           ("ps", {})])]
    runs = config.validate(config.load(topologies=["fattree,k=4"], workers=4, model="synthetic,mb=1",
                                       algorithms=["ring,segment_elements=1024", "ring"]))
    assert [r.spec for r in runs] == ["ring,segment_elements=1024", "ring"]
    assert [r.plan["segment_elements"] for r in runs] == [1024, 16384]
    assert "ring,segment_elements=1024" in runs[0].label


@pytest.mark.parametrize("algos,pattern", [
    (["ring,segments=3"], r"ring: unknown option\(s\) segments; valid: order, segment_elements"),
    (["ring,segment_elements=0"], r"ring: option segment_elements=.0. is invalid \(must be >= 1\)"),
    (["ring,segment_elements"], r"unknown algorithm 'segment_elements'"),
    (["ring,=3"], r"option '=3' is not key=value"),
])
def test_bad_algorithm_specs_are_one_line(algos, pattern):
    with pytest.raises(ValueError, match=pattern) as err:
        config.validate(config.load(topologies=["fattree,k=4"], workers=4, model="synthetic,mb=1", algorithms=algos))
    assert "\n" not in str(err.value)


def test_background_flows_reach_every_run_with_their_ports():
    runs = config.validate(cfg(topologies=["fattree,k=4"], algorithms=["ring", "ps"], workers=4,
                               background=["h2_0_2:h3_1_3:5", {"src": "h2_1_2", "dst": "h3_0_2"}]))
    for run in runs:
        assert run.background == [
            {"src": "h2_0_2", "dst": "h3_1_3", "mbps": 5.0, "port": background.PORT_BASE},
            {"src": "h2_1_2", "dst": "h3_0_2", "mbps": None, "port": background.PORT_BASE + 1}]
        assert not set(run.hosts) & {"h2_0_2", "h3_1_3", "h2_1_2", "h3_0_2"}
    assert config.validate(cfg(topologies=["fattree,k=4"], algorithms=["ring"], workers=4))[0].background == []


def test_background_parse_forms():
    assert background.parse(None) == []
    assert background.parse("a:b") == [{"src": "a", "dst": "b", "mbps": None, "port": background.PORT_BASE}]
    assert background.parse(["a:b:max"])[0]["mbps"] is None
    assert background.parse([{"src": "a", "dst": "b", "mbps": 2.5}])[0]["mbps"] == 2.5
    with pytest.raises(ValueError, match="at most 64"):
        background.parse(["a:b"] * 65)


IPERF3_LOG = """Connecting to host 10.2.0.3, port 5301
[  7] local 10.0.0.3 port 55018 connected to 10.2.0.3 port 5301
[ ID] Interval           Transfer     Bitrate         Retr  Cwnd
[  7]   0.00-1.00   sec  3.24 MBytes  27.2 Mbits/sec    0    122 KBytes
[  7]   1.00-2.00   sec  1.79 MBytes  15.0 Mbits/sec    0    140 KBytes
[  7]   2.00-3.00   sec  1.08 MBytes  9000 Kbits/sec    0    122 KBytes
- - - - - - - - - - - - - - - - - - - - - - - - -
[  7]   0.00-3.00   sec  6.11 MBytes  17.1 Mbits/sec    0             sender
"""


def test_background_probe_reads_iperf3_intervals_after_slow_start():
    assert background.interval_rates(IPERF3_LOG) == [(1.0, 27.2), (2.0, 15.0), (3.0, 9.0)]
    assert background.probe_rate(IPERF3_LOG) == pytest.approx(12.0)  # (15 + 9) / 2: the first second left out
    assert background.probe_rate(IPERF3_LOG.split("[  7]   1.00")[0]) == pytest.approx(27.2)  # only one interval
    assert background.probe_rate("iperf3: error - unable to connect") is None


def test_forest_is_planned_again_with_the_measured_background():
    """A forest run's planner reads the background flows (`needs`); once they run, the runner
    measures them and plans again: the plan says which rates it used and shows both."""
    from emulation import replan

    runs = config.validate(cfg(topologies=["fattree,k=4"], algorithms=["forest", "ring"], workers=4,
                               background=["h2_0_2:h3_1_3"]))
    forest, ring = runs
    assert replan.needs_background(forest) and not replan.needs_background(ring)
    assert forest.plan["background_source"] == "declared" and forest.plan["capacity"] == "configured"
    assert any("unlimited and was not measured" in n for n in forest.plan["notes"])
    replan.apply_background(forest, [dict(f, measured_mbps=12.5) for f in forest.background])
    assert forest.plan["background_source"] == "measured before the run" and forest.plan["capacity"] == "available"
    assert forest.plan["background_flows"] == [{"src": "h2_0_2", "dst": "h3_1_3", "declared_mbps": None,
                                                "measured_mbps": 12.5}]
    assert "planned_seconds_configured" in forest.plan


@pytest.mark.parametrize("path", sorted(str(p) for pattern in ("gtopk_scaling_*.yaml", "mgwfbp_*.yaml", "bml_stages_*.yaml")
                                        for p in (Path(__file__).resolve().parents[2] / "experiments").glob(pattern)))
def test_paper_experiment_files_plan_as_they_are(path):
    """The papers' experiment files load and plan (the forest and BML ones take seconds each to
    plan and run in their own tests): a file that drifted from the config fails here, not at 2 am."""
    runs = config.validate(config.load(path))
    assert runs and all(r.plan for r in runs)


# ---- across servers (issue #22) -------------------------------------------------------------
CLUSTER = {"servers": ["10.99.0.1", "10.99.0.2"]}


@pytest.mark.parametrize("kw", [
    dict(model="synthetic,mb=1", algorithms=["ring"], workers=4, background=["h2_0_2:h3_1_3"]),
    dict(model="resnet20", algorithms=["wfbp"], workers=8,
         real_setting={"name": "8 nodes", "alpha": 0.523e-3, "beta": 8.57e-10}),
    dict(model="lenet5", algorithms=["ps"], workers=8, train=True),
    dict(model="resnet20", algorithms=["ring"], workers=8, train=True, ddp=True),
])
def test_a_cluster_takes_background_real_settings_and_training(kw):
    runs = config.validate(cfg(topologies=["fattree,k=4"], cluster=CLUSTER, **kw))
    assert [len(r.hosts) for r in runs] == [kw["workers"]] * len(runs)
