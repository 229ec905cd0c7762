"""The SimGrid projection (emulation/simulator/core.py, platform.py, sweep.py; `syncbed project` in
emulation/cli.py) on small cases.

- the platform holds every host, switch and directed link of the description, and SimGrid's
  own routes (read back with `Host.route_to`) equal `Topology.route`, ECMP and relays included;
- the actors move exactly the plan's flows (bytes + framing per message), step by step, and
  the bytes per NIC laid on SimGrid's routes equal the closed form;
- end to end: ring on Fat-Tree k=4 within 5% of 2(N-1)M/(NB) (+ framing); every dense plan
  meets its busiest-link bound up to the header factor (max-min reaches it where the steps
  cost nothing); serial steps add up; both actor modes agree;
- layer-wise plans: each group waits for backprop and pays its start-up, as the planner's
  timeline says (simulated iteration = predicted when b is the simulated network's);
- the experiment-file form plans as `syncbed run` does and sets simulated against measured;
  a sweep over sizes draws time against P;
- bad input: one line (unsimulable plan, memory or time estimate too large), exit 2.
Every simulation runs in a forked child (SimGrid allows one engine per process).
"""
from __future__ import annotations

import json

import pytest

from emulation import analysis
from emulation.simulator import core as project
from emulation.simulator import platform as simgrid_platform
from emulation.expected import links_of
from topologies.spec import build
from workloads.algorithms import base

pytestmark = [pytest.mark.unit,
              pytest.mark.skipif(project.simgrid_available() is not None,
                                 reason=f"SimGrid is not importable: {project.simgrid_available()}")]

MB4 = 4 * 2**20


def main(argv) -> int:
    """`syncbed project ARGV` in this process (emulation/cli.py's subcommand), its exit code."""
    from emulation import cli

    return cli.main(["project", *argv])


def _inspect(topo, pairs):
    platform = simgrid_platform.platform_for(simgrid_platform.indexed(topo), pairs)
    return platform, project.simulate(platform, [[]], inspect=True)["inspect"]


def _all_pairs(topo):
    hosts = topo.hosts()
    nics = len(topo.host_nics(hosts[0]))
    return [(a, b, n) for a in hosts for b in hosts if a != b for n in range(nics)]


@pytest.mark.parametrize("spec,hosts,switches,links", [("fattree,k=4", 16, 20, 48), ("bcube,n=3,k=2", 9, 6, 18)])
def test_platform_holds_the_description_and_its_routes(spec, hosts, switches, links):
    topo = build(spec, bw=20)
    pairs = _all_pairs(topo)
    platform, sg = _inspect(topo, pairs)
    aliases = [h for h in platform.hosts if "#nic" in h]
    # every (src, dst) pair of BCube(3,2) is used on both NICs: NIC 1 needs an alias endpoint
    assert len(aliases) == (hosts if topo.kind == "bcube" else 0)
    assert len(topo.hosts()) == hosts and len(topo.switches()) == switches and len(topo.links) == links
    assert sg["hosts"] == sorted(topo.hosts() + aliases)
    assert sg["routers"] == sorted(topo.switches())
    assert sg["netpoints"] == hosts + len(aliases) + switches + 1  # and the zone itself
    # one SimGrid link per direction of every topology link, named by its transmitting interface
    # (and SimGrid's own loopback)
    assert sg["links"].pop("__loopback__", None) is not None
    assert len(sg["links"]) == 2 * links
    assert sg["links"] == {i: pytest.approx(topo.link_of(i).bw * 1e6 / 8) for l in topo.links for i in (l.a, l.b)}
    # SimGrid's routes are the description's, per pair and per destination NIC (the plain
    # Topology, not the indexed copy the projection uses)
    assert len(sg["routes"]) == len(pairs)
    for src, dst, nic in pairs:
        want = tuple(tx for tx, _ in topo.route(src, topo.host_nics(dst)[nic].ip))
        assert sg["routes"][platform.endpoints[(src, dst, nic)]] == want, (src, dst, nic)


def test_bcube_routes_relay_through_servers():
    topo = build("bcube,n=3,k=2", bw=20)
    h = topo.hosts()
    src, dst = h[0], h[-1]  # differ in both digits: one relaying server
    platform, sg = _inspect(topo, [(src, dst, 0)])
    route = sg["routes"][(src, dst)]
    relays = [l for l in route if topo.nodes[topo.intfs[l].node].kind == "host"]
    assert len(route) == 4 and len(relays) == 2 and relays[0].startswith(src)


@pytest.mark.parametrize("spec", ["fattree,k=4", "bcube,n=4,k=2", "bcube,n=2,k=3"])
def test_indexed_copy_routes_like_the_description_and_leaves_it_alone(spec):
    topo = build(spec, bw=20, ecmp="hash")
    fast = simgrid_platform.indexed(topo)
    assert simgrid_platform.indexed(fast) is fast
    for src, dst, nic in _all_pairs(topo):
        ip = topo.host_nics(dst)[nic].ip
        assert fast.route(src, ip) == topo.route(src, ip)
    assert not {"node_intfs", "route", "_next_hop"} & set(vars(topo))


def test_endpoints_alias_only_pairs_used_on_several_nics():
    eps = simgrid_platform.endpoints_for([("a", "b", 1), ("a", "c", 0), ("a", "c", 1), ("b", "a", 0)])
    assert eps == {("a", "b", 1): ("a", "b"), ("a", "c", 0): ("a", "c"), ("a", "c", 1): ("a", "c#nic1"),
                   ("b", "a", 0): ("b", "a")}
    with pytest.raises(ValueError, match="to itself"):
        simgrid_platform.platform_for(build("fattree,k=4", bw=20), [("h0_0_2", "h0_0_2", 0)])


CASES = [("fattree,k=4", "ring", 7), ("fattree,k=4", "gloo", 16), ("fattree,k=4", "ps", 16),
         ("bcube,n=4,k=2", "ps", 16), ("bcube,n=3,k=2", "bml", 9), ("bcube,n=3,k=2", "gtopk,density=0.01", 9),
         ("bcube,n=3,k=2", "forest,fallback=none", 9)]


@pytest.mark.parametrize("spec,algo,workers", CASES)
def test_actors_move_exactly_the_plan(spec, algo, workers):
    # every flow listed (PS on a whole BCube would go by orbits, tests/unit/test_simulator_orbits.py)
    rec = project.project(project.Request(spec, algo, workers, mb=1, bw=20, reduce="off"), inspect=True)
    sim, platform, steps = rec["_sim"], rec["_platform"], rec["_steps"]
    hosts = rec["hosts"]
    # per endpoint pair, the bytes the actors completed = the plan's payload (data + framing),
    # each direction of a connection its own share (the receiver's notifications go back)
    want: dict = {}
    for step in steps:
        for f in step:
            if f.bytes and f.src != f.dst:
                fwd = platform.endpoints[(hosts[f.src], hosts[f.dst], f.nic)]
                back = platform.endpoints[(hosts[f.dst], hosts[f.src], f.nic)]
                want[fwd] = want.get(fwd, 0) + f.bytes + f.messages * base.GLOO_SEND_FRAMING_BYTES
                want[back] = want.get(back, 0) + f.messages * base.GLOO_NOTIFY_BYTES
    assert sim["sent"] == {k: v for k, v in want.items() if v}
    assert sum(sim["sent"].values()) == sum(f.payload for s in steps for f in s if f.bytes and f.src != f.dst)
    # step by step: one message per direction of each connection
    assert [sorted(s) for s in rec["_sched"]] == [
        sorted((*platform.endpoints[(hosts[f.src], hosts[f.dst], f.nic)], f.payload) for f in base.wire_flows(step))
        for step in steps]
    assert len(sim["step_seconds"]) == len(steps)
    # bytes per NIC along SimGrid's routes = the closed form laid on the description's routes
    assert rec["payload_equal"], rec["payload_mismatched"]
    assert rec["payload_bytes_simulated"] == rec["payload_bytes_expected"]
    assert sum(v["tx"] for v in rec["payload_bytes_simulated"].values()) >= \
        sum(f.payload for s in steps for f in s)  # relays send again


def test_ring_on_fattree_meets_the_closed_form():
    n, bw = 16, 20.0
    rec = project.project(project.Request("fattree,k=4", "ring", n, mb=4, bw=bw))
    flows = rec["framing_bytes_per_sync"] // base.GLOO_FRAMING_BYTES // n  # messages per rank
    closed = (2 * (n - 1) * MB4 / n + flows * base.GLOO_FRAMING_BYTES) / (bw * 1e6 / 8)
    t = rec["median_sync_seconds"]
    assert closed <= t <= 1.05 * closed
    # the only correction is TCP/IP headers at MTU 9000
    assert t == pytest.approx(closed / project.NetworkModel().factor, rel=1e-3)
    assert rec["bound_seconds"] == pytest.approx(closed, rel=1e-3)


def test_ps_on_bcube_meets_its_bound_and_both_modes_agree():
    req = project.Request("bcube,n=4,k=2", "ps", 16, mb=4, bw=20)
    rec = project.project(req)
    assert rec["median_sync_seconds"] * project.NetworkModel().factor == pytest.approx(rec["bound_seconds"], rel=1e-3)
    assert len(rec["step_seconds"]) == 2  # push, then pull
    ranks = project.project(project.Request("bcube,n=4,k=2", "ps", 16, mb=4, bw=20, mode="ranks"))
    assert ranks["median_sync_seconds"] == pytest.approx(rec["median_sync_seconds"], rel=1e-9)
    assert ranks["step_seconds"] == pytest.approx(rec["step_seconds"], rel=1e-9)


def test_links_of_follows_relays_and_switch_egress():
    t = build("bcube,n=2,k=2", bw=20)
    hosts = t.hosts()  # h00 h01 h10 h11; h00 -> h11 differs in both digits: one relay
    links = links_of(t, hosts, base.Flow(0, 3, 0, 1000))
    host_tx = [l for l in links if t.nodes[t.intfs[l].node].kind == "host"]
    assert len(host_tx) == 2 and host_tx[0].startswith("h00-")
    assert len(links) == 4  # two hops, each NIC tx + one switch egress


def _plan(spec: str, algo: str, workers: int, mb: float = 1.0, ecmp: str = "hash"):
    topo = build(spec, bw=20, ecmp=ecmp)
    hosts = topo.hosts()[:workers]
    ctx = base.PlanContext(workers=workers, layer_sizes=(int(mb * 2**20) // 4,),
                           nics=len(topo.host_nics(hosts[0])), topology=topo, hosts=tuple(hosts))
    a, plan = base.plan_for(algo, ctx)
    return topo, hosts, a, plan


BOUND_CASES = [("bcube,n=4,k=2", "ps", 16, "hash"), ("bcube,n=3,k=2", "bml", 9, "hash"),
               ("bcube,n=2,k=3", "bml", 8, "hash"), ("bcube,n=3,k=2", "ring", 9, "hash"),
               ("fattree,k=4", "ps", 16, "hash"), ("fattree,k=4", "ps", 16, "two-level"),
               ("fattree,k=4", "gloo", 16, "hash"), ("fattree,k=4", "ring", 7, "hash")]


@pytest.mark.parametrize("spec,algo,workers,ecmp", BOUND_CASES)
def test_simulation_meets_the_busiest_link_bound(spec, algo, workers, ecmp):
    # what emulation/fluid.py (our own max-min model, replaced by SimGrid) asserted: ideal
    # sharing of these step structures reaches the bound; SimGrid adds only the header factor
    topo, hosts, a, plan = _plan(spec, algo, workers, ecmp=ecmp)
    bound = analysis.bound_seconds(topo, analysis.expected_port_bytes(topo, hosts, a.traffic(plan)))
    got = project.simulate_plan(topo, hosts, a, plan)["simulated_seconds"] * project.NetworkModel().factor
    assert got >= bound * (1 - 1e-9)
    # BML's stages are not exactly balanced when sizes do not divide: ~1e-5 above
    assert got == pytest.approx(bound, rel=1e-3)


def test_steps_partition_the_traffic():
    for spec, algo, workers, _ in BOUND_CASES:
        _, _, a, plan = _plan(spec, algo, workers)
        whole = {(f.src, f.dst, f.nic): f for f in a.traffic(plan)}
        parts = base.merge_flows(f for step in a.steps(plan) for f in step)
        assert {(f.src, f.dst, f.nic): (f.bytes, f.messages) for f in parts} == \
            {k: (f.bytes, f.messages) for k, f in whole.items()}


def test_serial_steps_add_up():
    # PS with 2 dedicated servers: the push step loads the servers' rx, the pull their tx;
    # each step is bound by its own busiest link, so the total is push + pull
    topo = build("fattree,k=4", bw=20, ecmp="two-level")
    hosts = topo.hosts()[:6]
    ctx = base.PlanContext(workers=4, servers=2, layer_sizes=(2**18,), topology=topo, hosts=tuple(hosts))
    a, plan = base.plan_for("ps", ctx)
    steps = a.steps(plan)
    platform = simgrid_platform.platform_for(simgrid_platform.indexed(topo), project.pairs_of(steps, hosts))
    sched = project.schedule(steps, hosts, platform.endpoints)
    one = [project.simulate(platform, [s])["sync_seconds"] for s in sched]
    both = project.simulate(platform, sched)
    assert both["sync_seconds"] == pytest.approx(sum(one))
    assert both["step_seconds"] == pytest.approx(one)
    assert one[0] == pytest.approx(one[1])


def test_fattree_simulation_is_the_bound_over_the_header_factor():
    topo = build("fattree,k=4", bw=20)
    prep = project.prepare(project.Request("fattree,k=4", "gloo", 16, mb=1, bw=20), topo)
    rec = project.project(prep)
    bound = analysis.bound_seconds(topo, analysis.expected_port_bytes(topo, prep.hosts, prep.flows))
    assert rec["bound_seconds"] == pytest.approx(bound)
    assert rec["median_sync_seconds"] * project.NetworkModel().factor == pytest.approx(bound, rel=1e-6)


# -- layer-wise plans: backprop and start-ups ----------------------------------------------
LAYERS = (("l0.w", 600_000, 0.02), ("l0.b", 1_000, 0.001), ("l1.w", 300_000, 0.01), ("l1.b", 500, 0.001),
          ("l2.w", 100_000, 0.005), ("l2.b", 100, 0.001))


def _layerwise(algo: str, n: int = 8, bw: float = 20.0, alpha: float = 0.01):
    """A layer-wise plan whose b is the simulated network's own ring cost per byte."""
    topo = build("fattree,k=4", bw=bw, ecmp="two-level")
    hosts = topo.hosts()[:n]
    beta = 2 * (n - 1) / n / (bw * 1e6 / 8 * project.NetworkModel().factor)
    ctx = base.PlanContext(workers=n, layer_sizes=tuple(m for _, m, _ in LAYERS), layers=LAYERS,
                           nics=1, topology=topo, hosts=tuple(hosts), link={"alpha": alpha, "beta": beta})
    a, plan = base.plan_for(algo, ctx)
    return topo, hosts, a, plan


@pytest.mark.parametrize("algo", ["wfbp", "single", "mgwfbp", "fusion,bucket_mb=1"])
def test_layerwise_groups_wait_for_backprop_and_pay_their_startup(algo):
    name, raw = base.parse_algos(algo)[0]
    topo, hosts, a, plan = _layerwise(algo)
    form = project.simulated_form(a, plan)
    assert form.overlapped and len(form.steps) == len(plan["groups"])  # the algorithm's timeline
    assert form.release == [plan["predicted"]["ready"][g[-1]] for g in plan["groups"]]
    assert form.startup == [0.01] * len(plan["groups"])
    t = project.simulate_plan(topo, hosts, a, plan)
    backward = plan["predicted"]["backward_seconds"]
    assert t["simulated_iteration_seconds"] >= backward
    assert t["simulated_seconds"] == pytest.approx(t["simulated_iteration_seconds"] - backward)
    # the planner's timeline (a + b m per group, in order, after its layers) is the simulation's,
    # up to the ring's framing bytes, which the plan's b does not count
    assert t["simulated_iteration_seconds"] == pytest.approx(plan["predicted_iteration_seconds"], rel=0.01)


def test_single_is_backprop_plus_one_allreduce():
    topo, hosts, a, plan = _layerwise("single", alpha=0.05)
    t = project.simulate_plan(topo, hosts, a, plan)
    backward = plan["predicted"]["backward_seconds"]
    ring = project.simulate_plan(topo, hosts, *_layerwise("single", alpha=0.0)[2:])["simulated_seconds"]
    assert t["simulated_iteration_seconds"] == pytest.approx(backward + 0.05 + ring, rel=1e-9)


def test_network_model_options():
    m = project.NetworkModel()
    assert m.factor == pytest.approx(8948 / 9014)
    assert project.NetworkModel(mtu=1500).factor == pytest.approx(1448 / 1514)
    assert project.NetworkModel(bandwidth_factor=0.97).factor == 0.97
    cfg = " ".join(m.cfg())
    for opt in ("network/model:CM02", "network/weight-S:0", "network/crosstraffic:0", "network/latency-factor:1"):
        assert opt in cfg


@pytest.mark.parametrize("spec", ["fattree,k=4", "fattree,k=6", "bcube,n=3,k=2", "bcube,n=4,k=2", "bcube,n=2,k=3",
                                  "bcube,n=5,k=3"])
def test_closed_form_sizes_match_the_built_description(spec):
    assert project.description_sizes(spec) == project.topology_sizes(build(spec, bw=20))


def test_unsimulable_and_too_large_are_refused_in_one_line():
    with pytest.raises(project.TooLarge, match=r"needs about \d+\.\d GiB just to describe, 0\.0 GiB available"):
        project.prepare(project.Request("fattree,k=4", "ring", 16, max_memory=1e6))
    # the description fits, the routes and flows of 128 PS ranks do not (refused from the growth
    # of 16 and 32 workers, before planning 128)
    need = project.MEM_BASE + project.description_bytes(project.description_sizes("fattree,k=8"))
    with pytest.raises(project.TooLarge, match=r"ps on 128 (hosts|workers) .* needs about \d+\.\d GiB, 0\.\d GiB available"):
        project.prepare(project.Request("fattree,k=8", "ps", 128, max_memory=need * 1.01))
    # PS on 128 hosts: 16256 concurrent flows per step, about 16 CPU seconds
    with pytest.raises(project.TooLarge, match="CPU hours"):
        project.prepare(project.Request("fattree,k=8", "ps", 128, max_seconds=5))
    # the estimate grows with the concurrent flows: 16 PS workers are quick
    assert project.prepare(project.Request("fattree,k=4", "ps", 16)).cpu_seconds < 1


@pytest.mark.parametrize("argv,what", [
    (["--topo", "fattree,k=4", "--algo", "gtopk", "--compute", "sparsify_seconds=-1"], "must be a finite number"),
    (["--topo", "fattree,k=4", "--algo", "gtopk", "--compute", "backprop=1:2"], "no algorithm declares"),
    (["--topo", "fattree,k=4", "--algo", "mgwfbp", "--alpha", "0.001"], "--alpha and --beta go together"),
    (["--topo", "fattree,k=4", "--algo", "ring", "--measured", "docs/results/default"], "drop --topo and --algo"),
    (["--measured", "docs"], "no config.yaml there"),
    (["--algo", "ring"], "give an experiment file, --measured with a results folder, or --topo and --algo"),
    (["--topo", "fattree,k=4", "--algo", "ring", "--round-latency", "-1"], "--round-latency '-1': the value must be a number of seconds >= 0"),
    (["experiments/nope.yaml"], "does not exist"),
    (["experiments/ps_incast_fattree.yaml", "--mb", "1"], "with an experiment file give --model synthetic,mb=1"),
    (["--measured", "docs/results/default", "--bw", "5"], "simulates the measured run as it ran: drop --bw"),
    (["--topo", "fattree,k=4", "--algo", "ring", "--max-memory-gb", "0.001"], "GiB available"),
    (["--topo", "fattree,k=4", "--algo", "bml"], "bml runs on bcube only"),
    (["--topo", "bcube,n=3,k=2", "--algo", "hd"], "hd does not run with 9 workers; valid: a power of two"),
    (["--topo", "fattree,k=4", "--algo", "ring", "--workers", "17"], "do not fit"),
    (["--topo", "torus,k=4", "--algo", "ring"], "unknown topology"),
    # refused from the closed form, before building (the description alone is ~19 GiB)
    (["--topo", "bcube,n=16,k=3", "--algo", "ring", "--max-memory-gb", "16"], "GiB just to describe"),
])
def test_cli_bad_input_is_one_line_and_exit_2(argv, what, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("project: ") and what in err and "\n" not in err
    assert not (tmp_path / "out").exists()  # refused before any simulation


def test_cli_writes_the_emulations_summary_fields(capsys, tmp_path):
    assert main(["--topo", "fattree,k=4", "--algo", "ring,ps", "--workers", "8", "--mb", "1", "--bw", "20",
                         "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "simulated" in out and "= closed form" in out
    assert out.count("planning ") == 2 and out.count("planned and checked in ") == 2  # progress while planning
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["simulated"] is True and [r["algorithm"] for r in summary["runs"]] == ["ring", "ps"]
    for r in summary["runs"]:
        for key in ("sync_seconds", "median_sync_seconds", "bound_seconds", "payload_bytes_expected", "workers",
                    "topology", "algorithm", "gradient_bytes", "link_mbps", "simulated_seconds"):
            assert key in r, key
        assert r["simulated"] is True and r["workers"] == 8 and r["gradient_bytes"] == 2**20
        assert r["link_mbps"] == 20.0 and r["topology"] == "fattree(4)"
        assert r["sync_seconds"] == [r["median_sync_seconds"]] and r["payload_equal"]
        assert r["simulator"]["network_model"]["name"] == "CM02"


def test_cli_sweep_draws_time_against_p_and_syncbed_hands_over(capsys, tmp_path):
    from emulation import cli

    assert cli.main(["project", "--topo", "fattree,k=4", "--topo", "bcube,n=2,k=2", "--algo", "ring",
                     "--mb", "1", "--bw", "20", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "ok" and [r["workers"] for r in summary["runs"]] == [16, 4]
    report = (tmp_path / "report.md").read_text()
    assert "Simulated in SimGrid" in report and "| fattree(4) | 16 | ring |" in report
    # one series per topology kind: no kind has two sizes here, so no plot
    assert not (tmp_path / "plots" / "projection.png").exists()
    assert main(["--topo", "fattree,k=4", "--topo", "fattree,k=2", "--algo", "gloo", "--mb", "1",
                         "--out", str(tmp_path / "sweep")]) == 0
    assert (tmp_path / "sweep" / "plots" / "projection.png").stat().st_size > 1000
    assert "![projection](plots/projection.png)" in (tmp_path / "sweep" / "report.md").read_text()


def test_experiment_file_plans_as_syncbed_run_and_validates_against_measured(capsys, tmp_path):
    exp = tmp_path / "small.yaml"
    exp.write_text("name: small\ntopologies: ['fattree,k=4']\nalgorithms: [ring, ps, mgwfbp]\nworkers: 4\n"
                   "model: synthetic,mb=1\nbw: 20\necmp: two-level\n")
    measured = tmp_path / "measured"
    measured.mkdir()
    (measured / "summary.json").write_text(json.dumps({"runs": [
        {"topology": "fattree(4)", "algo_spec": "ring", "model": "synthetic,mb=1", "median_sync_seconds": 0.65,
         "faithful": True, "status": "ok"},
        {"topology": "fattree(4)", "algo_spec": "mgwfbp", "model": "synthetic,mb=1", "median_sync_seconds": 0.7,
         "iteration_seconds": [0.7, 0.8, 0.7], "alpha_seconds": 0.002, "beta_seconds_per_byte": 6e-7,
         "faithful": False, "status": "ok"}]}))
    assert main([str(exp), "--measured", str(measured), "--out", str(tmp_path / "out")]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [r["algo_spec"] for r in summary["runs"]] == ["ring", "ps", "mgwfbp"]
    ring, _, mg = summary["runs"]
    assert ring["ecmp"] == "two-level" and ring["link_mbps"] == 20.0 and ring["workers"] == 4
    # mgwfbp planned with the measured run's a, b (not the provisional model)
    assert mg["alpha_seconds"] == 0.002 and mg["link_provisional"] is False
    rows = {v["algo_spec"]: v for v in summary["validation"]}
    assert set(rows) == {"ring", "mgwfbp"}  # ps was not measured
    assert rows["ring"]["sim_over_measured"] == pytest.approx(ring["median_sync_seconds"] / 0.65)
    assert rows["mgwfbp"]["measured_iteration_seconds"] == 0.7
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Simulated against measured" in report and "runs within 10% of the measurement" in report


def test_the_command_lines_options_replace_the_experiment_files_as_in_syncbed_run(tmp_path):
    """Until 2026-12-04 --workers, --model, --bw ... were ignored, silently, with an experiment file."""
    exp = tmp_path / "small.yaml"
    exp.write_text("name: small\ntopologies: ['fattree,k=4']\nalgorithms: [ring, ps]\nworkers: 4\n"
                   "model: synthetic,mb=1\nbw: 20\necmp: two-level\n")
    assert main([str(exp), "--out", str(tmp_path / "file")]) == 0
    assert main([str(exp), "--workers", "9", "--model", "synthetic,mb=0.5", "--bw", "5", "--algo", "ps",
                 "--ecmp", "hash", "--out", str(tmp_path / "given")]) == 0
    file = json.loads((tmp_path / "file" / "summary.json").read_text())["runs"]
    given = json.loads((tmp_path / "given" / "summary.json").read_text())["runs"]
    assert [(r["algo_spec"], r["workers"], r["link_mbps"], r["ecmp"], r["gradient_bytes"]) for r in file] == [
        ("ring", 4, 20.0, "two-level", 2**20), ("ps", 4, 20.0, "two-level", 2**20)]
    assert [(r["algo_spec"], r["workers"], r["link_mbps"], r["ecmp"], r["gradient_bytes"]) for r in given] == [
        ("ps", 9, 5.0, "hash", 2**19)]


def test_a_measured_run_with_dilation_x_is_replanned_from_the_link_it_measured(capsys, tmp_path):
    # the run's alpha_seconds is the charged x a_e; its stand_in.link the a_e it measured:
    # the replay must dilate that once, as the runner did (not x^2 a_e, a backprop x times too long)
    exp = tmp_path / "dilated.yaml"
    exp.write_text("name: dilated\ntopologies: ['fattree,k=4']\nalgorithms: [wfbp]\nworkers: 4\n"
                   "model: synthetic,mb=1,layers=4,compute_ms=40\nbw: 20\necmp: two-level\n"
                   "real_setting: {name: test, alpha: 0.000908, beta: 7.4e-10, dilation_x: 2}\n")
    measured = tmp_path / "measured"
    measured.mkdir()
    (measured / "summary.json").write_text(json.dumps({"runs": [
        {"topology": "fattree(4)", "algo_spec": "wfbp", "model": "synthetic,mb=1,layers=4,compute_ms=40",
         "median_sync_seconds": 0.1, "iteration_seconds": [1.0], "alpha_seconds": 0.004,
         "beta_seconds_per_byte": 6e-7, "stand_in": {"link": {"alpha": 0.002, "beta": 6e-7}},
         "faithful": True, "status": "ok"}]}))
    assert main([str(exp), "--measured", str(measured), "--out", str(tmp_path / "out")]) == 0
    run = json.loads((tmp_path / "out" / "summary.json").read_text())["runs"][0]
    assert run["alpha_seconds"] == pytest.approx(0.004) and run["beta_seconds_per_byte"] == pytest.approx(6e-7)


def test_a_sweep_may_skip_what_is_too_large_and_names_it(capsys, tmp_path):
    argv = ["--topo", "fattree,k=4", "--algo", "ring,ps", "--mb", "1", "--max-minutes", "0.0005"]
    assert main(argv + ["--out", str(tmp_path / "refused")]) == 2
    assert "CPU hours" in capsys.readouterr().err
    assert main(argv + ["--skip-too-large", "--out", str(tmp_path / "out")]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    # the ring's estimate (16 routes, 16 messages) is 8 ms, under 30; PS's 240 flows per step, 110 ms
    assert [r["algo_spec"] for r in summary["runs"]] == ["ring"]
    assert [k["algo_spec"] for k in summary["skipped"]] == ["ps"]
    assert "## Not simulated" in (tmp_path / "out" / "report.md").read_text()


def test_a_sweep_skips_the_sizes_an_algorithm_does_not_take_and_names_them(capsys, tmp_path):
    assert main(["--topo", "fattree,k=2", "--topo", "bcube,n=3,k=2", "--algo", "hd,ring", "--mb", "1",
                         "--bw", "20", "--out", str(tmp_path)]) == 0
    assert "skipping bcube,n=3,k=2 hd: hd does not run with 9 workers" in capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [(r["topology"], r["algo_spec"]) for r in summary["runs"]] == [
        ("fattree(2)", "hd"), ("fattree(2)", "ring"), ("bcube(3,2)", "ring")]
    assert [(k["topology"], k["algo_spec"]) for k in summary["skipped"]] == [("bcube,n=3,k=2", "hd")]
    assert "valid: a power of two" in summary["skipped"][0]["why"]


def test_growth_is_checked_before_planning_thousands():
    # PS on 1024 workers: 16 and 32 give 240 and 992 flows per sync (P^2.05): about 1M
    # flows, refused from the small plans alone (the full plan would be gigabytes)
    with pytest.raises(project.TooLarge, match=r"ps on 1024 workers of fattree\(16\) \(about [\d,]+ flows, "
                                               r"growing as P\^2\.0\) needs about"):
        project.prepare(project.Request("fattree,k=16", "ps", 1024, max_memory=3 * 2**30))
    with pytest.raises(project.TooLarge, match=r"growing as P\^2\.0\) would take about .* CPU hours"):
        project.prepare(project.Request("fattree,k=16", "ps", 1024, max_seconds=60))
    # the ring grows as P: planned and estimated as usual
    assert project.prepare(project.Request("fattree,k=16", "ring", 1024)).cpu_seconds < 60


def test_round_latency_adds_each_steps_rounds():
    base_ring = project.project(project.Request("fattree,k=4", "ring", 8, mb=1, bw=20))
    ring = project.project(project.Request("fattree,k=4", "ring", 8, mb=1, bw=20, round_latency=0.002))
    assert ring["rounds_per_sync"] == 14  # 2(N-1)
    assert ring["median_sync_seconds"] == pytest.approx(base_ring["median_sync_seconds"] + 14 * 0.002, rel=1e-9)
    base_ps = project.project(project.Request("fattree,k=4", "ps", 8, mb=1, bw=20))
    ps = project.project(project.Request("fattree,k=4", "ps", 8, mb=1, bw=20, round_latency=0.002))
    assert ps["rounds_per_sync"] == 2  # push, pull
    assert ps["median_sync_seconds"] == pytest.approx(base_ps["median_sync_seconds"] + 2 * 0.002, rel=1e-9)
    with pytest.raises(ValueError, match="round latency -1 must be"):
        project.simulated_form(base.get("ring"), {}, -1)


@pytest.mark.parametrize("name", sorted(base.registry()))
def test_every_algorithm_has_one_round_count_per_step(name):
    algo = base.get(name)
    spec = "bcube,n=3,k=2" if algo.topologies == ("bcube",) else "fattree,k=4"
    topo = build(spec, bw=20)
    workers = max(p for p in range(1, 10) if algo.refusal(p) is None)  # 9, or the most below it it accepts
    hosts = topo.hosts()[:workers]
    raw = {"density": 0.01} if "density" in algo.options else {}
    ctx = base.PlanContext(workers=workers, layer_sizes=(3000, 5000), layers=(("a", 3000, 0.01), ("b", 5000, 0.01)),
                           nics=len(topo.host_nics(hosts[0])), topology=topo, hosts=tuple(hosts), options=raw)
    a, plan = base.plan_for(name, ctx)
    rounds = a.step_rounds(plan)
    # one count per step the simulation runs; a ring's rounds >= 1, a pipeline step's 1
    assert len(rounds) == len(a.simulated_steps(plan)) and all(isinstance(r, int) and r >= 1 for r in rounds)
    if not a.data_dependent:  # the simulated steps carry the plan's traffic, message for message
        assert {(f.src, f.dst, f.nic): (f.bytes, f.messages)
                for f in base.merge_flows(f for s in a.simulated_steps(plan) for f in s)} == \
            {(f.src, f.dst, f.nic): (f.bytes, f.messages) for f in a.traffic(plan)}


def test_a_stop_whose_interrupt_was_swallowed_still_ends_the_sweep_marked_failed(tmp_path):
    # Python ignores a KeyboardInterrupt raised in a fork handler: CI once saw SIGTERM land while
    # the SimGrid child was forked, and the sweep finish "ok". sweep.run asks `stopped()` after
    # each projection and drops the one the stop came during.
    from emulation.simulator import sweep

    s = sweep.Sweep(topo=["fattree,k=4"], algo=["ring", "ps"], mb=0.25, ecmp="two-level", out=str(tmp_path / "out"))
    preps = sweep.prepare_all(s, {}, log=lambda *a: None)
    answers = iter([False, True])
    _, summary = sweep.run(s, preps, {}, "now", log=lambda *a: None, stopped=lambda: next(answers))
    assert summary["status"] == "failed" and summary["error"] == "interrupted"
    assert [r["algo_spec"] for r in summary["runs"]] == ["ring"]
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["error"] == "interrupted"


def test_a_terminated_projection_keeps_its_results_marked_failed(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "emulation.cli", "project", "--topo", "fattree,k=4",
                             "--topo", "fattree,k=8",
                             "--algo", "ring,ps", "--ecmp", "two-level", "--mb", "1", "--out", str(out),
                             "--reduce", "off"],  # by orbits PS would end before the signal
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:  # PS on 128 hosts takes seconds: stop it there
        line = proc.stdout.readline()
        if "[4/4]" in line:
            break
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["error"] == "interrupted"
    assert [r["algo_spec"] for r in summary["runs"]] == ["ring", "ps", "ring"]  # the finished ones
    assert (out / "report.md").exists()
    # neither the command nor its SimGrid child is left ([.]: the pattern does not match pgrep's shell)
    assert not os.popen("pgrep -f 'emulation[.]cli project --topo fattree,k=4 --topo fattree,k=8'").read().split()


def test_a_measured_runs_projection_simulates_the_plan_it_executed(tmp_path):
    """`--measured` simulates the plan in each run's job.json (what its workers ran), not one
    made again today (the forest's LP can pack other trees on another scipy); a folder without
    job.json plans again, and says so. No SimGrid: the requests only."""
    import shutil
    from pathlib import Path

    from emulation.simulator import sweep

    src = Path(__file__).resolve().parents[2] / "docs/results/tcp-cc/forest-s5-dilated-cubic"

    def reqs(folder):
        s = sweep.Sweep(measured=str(folder))
        measured = sweep.resolve_measured(s)
        return measured, sweep.requests(s, measured)

    measured, pairs = reqs(src)
    assert len(pairs) == 2
    for req, run in pairs:
        m = measured[(run.topology.name, run.spec or run.algorithm, run.model.spec)]
        job = json.loads((src / m["dir"] / "job.json").read_text())["plan"]
        assert run.plan == job and req.plan_source == "the measured run's (job.json)"
        assert "link" not in req.replanned_differs and "planner_seconds" not in req.replanned_differs
    copy = tmp_path / "forest"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("plots", "workers", "*.pcap"))
    for job in copy.glob("*/job.json"):
        job.unlink()
    _, pairs = reqs(copy)
    assert {req.plan_source for req, _ in pairs} == {"planned again (no job.json)"}
    assert all(req.replanned_differs == () for req, _ in pairs)


@pytest.mark.parametrize("algo,kw", [
    ("topk,density=0.001", {}),  # its all-gather: P - 1 equal ring steps
    ("wfbp", {"model": "resnet50"}),  # one step per tensor, released with backprop: equal tensors repeat
    ("topk,density=0.001", {"fan_in": 0.7}),  # the fan-in callbacks: a function of the flows on a link now
    ("ps", {"round_latency": 1e-3, "incast": 2e-3})])  # by orbits: each step its own endpoints, none repeats
def test_a_repeated_step_takes_the_time_it_took_when_simulated(algo, kw):
    req = project.Request("fattree,k=4", algo, 16, bw=100, ecmp="two-level", max_seconds=None, **kw)
    p = project.prepare(req)
    rec = project.project(p, inspect=True)
    model = project.NetworkModel(fan_in=req.fan_in)
    every = project.simulate(rec["_platform"], rec["_sched"], model, "driver", False, p.form.timing(), repeat=False)
    again = project.repeated_steps(rec["_sched"])
    assert rec["simulator"]["repeated_steps"] == sum(again)
    assert (sum(again) > 0) == (algo != "ps")
    sim = rec["_sim"]
    assert sim["step_seconds"] == pytest.approx(every["step_seconds"], rel=1e-9)
    assert sim["sync_seconds"] == pytest.approx(every["sync_seconds"], rel=1e-9)
    assert sim["sent"] == every["sent"] and sim["link_bytes"] == every["link_bytes"]
    assert rec["payload_equal"]
    # ranks mode simulates every step: the same times
    ranks = project.simulate(rec["_platform"], rec["_sched"], model, "ranks", False, p.form.timing())
    assert not any(ranks["repeated_steps"])
    assert ranks["step_seconds"] == pytest.approx(every["step_seconds"], rel=1e-9)


def test_a_step_sharing_the_flows_of_the_one_before_takes_its_answer():
    f, g = base.Flow(0, 1, 0, 8), base.Flow(1, 0, 0, 8)
    one = [f, g]
    steps = [one, list(one), [f, base.Flow(1, 0, 0, 8)], [g, f], list(one)]
    calls = []

    def fn(step):
        calls.append(step)
        return base.wire_legs(step)

    got = base.per_step(fn, steps)
    assert got == [base.wire_legs(s) for s in steps]  # what the plain list gives
    # asked again only where the flows are not the very objects of the step before, in order
    assert [s for s in calls] == [steps[0], steps[2], steps[3], steps[4]]
    assert got[1] is got[0] and got[2] is not got[1]
    assert base.same_step(steps[0], steps[1]) and not base.same_step(steps[1], steps[2])
    assert not base.same_step(steps[2], steps[3])  # equal flows, other objects
    # first_steps answers a shared step from the step before, as sorting would
    sched = [[("x", "y", 5)], [("y", "z", 5)]]
    sched.append(sched[-1])
    assert project.first_steps(sched) == project.first_steps([list(s) for s in sched]) == [0, 1, 1]


def test_topk_steps_share_one_step_and_schedule_as_copies_would():
    req = project.Request("fattree,k=4", "topk,density=0.001", 16, bw=100, ecmp="two-level", max_seconds=None)
    p = project.prepare(req)
    steps = p.form.steps
    assert len(steps) == 15 and all(base.same_step(s, steps[0]) for s in steps)
    copies = [[base.Flow(x.src, x.dst, x.nic, x.bytes, x.messages) for x in s] for s in steps]
    assert project.wire_legs(steps) == project.wire_legs(copies)
    rec = project.project(p, inspect=True)
    assert all(s is rec["_sched"][0] for s in rec["_sched"])  # one list of messages, pickled once
    assert rec["simulator"]["repeated_steps"] == 14


def test_repeated_steps_are_the_steps_an_earlier_one_carried_in_any_order():
    a, b = [("x", "y", 5), ("y", "z", 5)], [("y", "z", 5), ("x", "y", 5)]
    assert project.repeated_steps([a, b, [("x", "y", 6)], a, []]) == [False, True, False, True, False]
    # as many messages of as many bytes, other messages: a first step of its own, and repeated after
    c = [("x", "z", 5), ("y", "z", 5)]
    assert project.first_steps([a, c, c, b, [], []]) == [0, 1, 1, 0, 4, 4]
