"""Compute and data-dependent bytes in the simulated form (issue #23; emulation/simulator/costs.py,
core.simulated_form, workloads/algorithms/_blocksparse.py's logged_steps and modelled_steps).

- the cost model's fit recovers known parameters from synthetic points (numpy least squares),
  and bad parameters are refused in one line (the module and `syncbed project --compute`);
- a sparse plan with compute charges exactly the modelled seconds: the simulation with compute
  is the zero-compute simulation plus the compute (steps are serial);
- dfs, omnireduce and topk_ps project without refusal on Fat-Tree k=4, their simulated bytes
  per NIC equal to the modelled bytes; an algorithm with no model is refused in one line;
- a measured data-dependent run replays its logged bytes: logged_steps split each iteration's
  logged sends into push and pull exactly, and the projection's bytes equal what the analysis
  expects (`analysis.logged_flows`).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from emulation import analysis
from emulation.simulator import core as project
from emulation.simulator import costs
from topologies.spec import build
from workloads.algorithms import base

pytestmark = [pytest.mark.unit,
              pytest.mark.skipif(project.simgrid_available() is not None,
                                 reason=f"SimGrid is not importable: {project.simgrid_available()}")]

DFS = Path(__file__).resolve().parents[2] / "docs/results/dfs-resnet18-digits"


# -- the cost model -------------------------------------------------------------------------
def test_fit_recovers_known_parameters():
    truth = costs.CostModel(0.004, 2.5e-8)
    sizes = [2.7e5, 1.1e6, 3.2e6, 6.4e6, 1.1e7, 2.6e7]
    fitted = costs.fit([(x, truth.seconds(x)) for x in sizes])
    assert fitted.c0 == pytest.approx(truth.c0, rel=1e-9)
    assert fitted.c1 == pytest.approx(truth.c1, rel=1e-9)
    # symmetric noise around the line: still the line, within the noise's reach
    noisy = [(x, truth.seconds(x) * (1 + e)) for x in sizes for e in (-0.02, 0.02)]
    got = costs.fit(noisy)
    assert got.c1 == pytest.approx(truth.c1, rel=1e-6) and got.c0 == pytest.approx(truth.c0, rel=1e-6)


def test_fit_never_gives_a_negative_cost_and_needs_two_sizes():
    assert costs.fit([(1.0, 2.0), (2.0, 1.0)]) == costs.CostModel(1.5, 0.0)  # falling: the mean
    through0 = costs.fit([(1.0, 0.5), (3.0, 2.9)])  # c0 < 0: through the origin
    assert through0.c0 == 0 and through0.c1 == pytest.approx((0.5 + 3 * 2.9) / 10)
    with pytest.raises(ValueError, match="two sizes"):
        costs.fit([(1.0, 1.0), (1.0, 2.0)])


def test_work_is_the_elements_each_worker_scans_on_shared_cores():
    assert costs.work(1000, 1, 2) == 1000 and costs.work(1000, 8, 2) == 4000
    with pytest.raises(ValueError):
        costs.work(1000, 0, 2)


@pytest.mark.parametrize("text,what", [
    ("sparsify_seconds", "give KEY=C0:C1"), ("=1:2", "give KEY=C0:C1"), ("sparsify_seconds=a:1", "is not numbers"),
    ("sparsify_seconds=1:2:3", "give KEY=C0:C1"), ("sparsify_seconds=-1", "c0=-1.0 must be a finite number"),
    ("sparsify_seconds=0:nan", "c1=nan must be"), ("sparsify_seconds=0:inf", "c1=inf must be")])
def test_bad_cost_parameters_are_refused_in_one_line(text, what):
    with pytest.raises(ValueError, match=what) as e:
        costs.parse(text)
    assert "\n" not in str(e.value)


def test_parse_reads_both_forms():
    assert costs.parse("merge_seconds=0.01") == ("merge_seconds", costs.CostModel(0.01, 0.0))
    assert costs.parse("sparsify_seconds=0.002:3e-8") == ("sparsify_seconds", costs.CostModel(0.002, 3e-8))


# -- compute in the simulated form ----------------------------------------------------------
def _sparse(algo: str, workers: int = 16, mb: float = 4.0):
    topo = build("fattree,k=4", bw=100)
    hosts = topo.hosts()[:workers]
    ctx = base.PlanContext(workers=workers, layer_sizes=(int(mb * 2**20) // 4,), topology=topo, hosts=tuple(hosts))
    a, plan = base.plan_for(algo, ctx)
    return topo, hosts, a, plan


@pytest.mark.parametrize("algo", ["gtopk,density=0.001", "topk,density=0.001"])
def test_compute_adds_exactly_the_modelled_seconds(algo):
    topo, hosts, a, plan = _sparse(algo)
    model = {"sparsify_seconds": costs.CostModel(0.002, 3e-8), "merge_seconds": costs.CostModel(0.01)}
    d = plan["elements"]
    before, after = a.compute_charges(plan, model)
    assert before == pytest.approx(0.002 + 3e-8 * d) and after == pytest.approx(0.01)  # SPARSIFY at start, MERGE at end
    zero = project.simulated_form(a, plan)
    charged = project.simulated_form(a, plan, costs=model)
    assert charged.before[0] == before and sum(charged.before) == before
    assert charged.after[-1] == after and sum(charged.after) == after
    platform = project.simgrid_platform.platform_for(project.simgrid_platform.indexed(topo),
                                                     project.pairs_of(zero.steps, hosts))
    sched = project.schedule(zero.steps, hosts, platform.endpoints)
    t0 = project.simulate(platform, sched, timing=zero.timing())
    t1 = project.simulate(platform, sched, timing=charged.timing())
    assert t1["sync_seconds"] == pytest.approx(t0["sync_seconds"] + before + after, rel=1e-12)
    assert t1["link_bytes"] == t0["link_bytes"]
    # the first step pays the selection, the last the merge, the others nothing more
    assert t1["step_seconds"][0] == pytest.approx(t0["step_seconds"][0] + before)
    assert t1["step_seconds"][-1] == pytest.approx(t0["step_seconds"][-1] + after)
    assert t1["step_seconds"][1:-1] == pytest.approx(t0["step_seconds"][1:-1])


def test_a_projection_records_its_compute_and_dense_algorithms_pay_none():
    model = (("sparsify_seconds", costs.CostModel(0.05)),)
    rec = project.project(project.Request("fattree,k=4", "gtopk,density=0.001", 16, mb=1, bw=100, compute=model,
                                          compute_source="given"))
    bare = project.project(project.Request("fattree,k=4", "gtopk,density=0.001", 16, mb=1, bw=100))
    assert rec["compute_seconds_per_sync"] == 0.05 and rec["compute_source"] == "given"
    assert rec["median_sync_seconds"] == pytest.approx(bare["median_sync_seconds"] + 0.05, rel=1e-12)
    ring = project.project(project.Request("fattree,k=4", "ring", 16, mb=1, bw=100, compute=model))
    assert ring["compute_seconds_per_sync"] == 0  # ring declares no compute


# -- data-dependent algorithms ----------------------------------------------------------------
@pytest.mark.parametrize("algo", ["dfs,density=0.01", "omnireduce,density=0.01", "omnireduce", "topk_ps,density=0.01",
                                  "dfs,density=0.01,blocks=64"])
def test_data_dependent_algorithms_project_on_fattree_with_their_modelled_bytes(algo):
    topo = build("fattree,k=4", bw=100)
    prep = project.prepare(project.Request("fattree,k=4", algo, 16, mb=1, bw=100), topo)
    modelled = base.merge_flows(f for s in prep.algo.modelled_steps(prep.plan) for f in s)
    assert prep.form.bytes_source == "model" and prep.flows == modelled
    rec = project.project(prep, inspect=True)
    assert rec["payload_equal"] and rec["bytes_source"] == "model"
    assert rec["payload_bytes_simulated"] == analysis.expected_nic_bytes(prep.topo, prep.hosts, modelled, 1)
    # the model's flows, sent as the plan's two steps (push, pull), are what SimGrid completed
    sent = {}
    for step in rec["_sched"]:
        for s, d, b in step:
            sent[(s, d)] = sent.get((s, d), 0) + b
    assert sent == rec["_sim"]["sent"]
    assert sum(sent.values()) == sum(f.payload for f in modelled)
    # never more than the dense worst case the plan declares
    dense = {(f.src, f.dst): f.bytes for f in prep.algo.traffic(prep.plan)}
    assert all(f.bytes <= dense[(f.src, f.dst)] for f in modelled)


def test_modelled_bytes_follow_density_and_block():
    _, _, a, plan = _sparse("omnireduce")
    dense = base.merge_flows(f for s in a.steps(plan) for f in s)
    assert base.merge_flows(f for s in a.modelled_steps(plan) for f in s) == dense  # no density: every block
    _, _, t, tplan = _sparse("topk_ps,density=0.01")
    push = t.modelled_steps(tplan)[0]
    k, owners = tplan["k"], len(tplan["owners"])
    # b = 1: each worker pushes its k pairs, k / owners to each (8 bytes a pair, + the length header)
    assert all(abs(f.bytes - (8 + 8 * k / owners)) <= 8 for f in push)
    _, _, dfs, dplan = _sparse("dfs,density=0.01")
    b = dplan["first_block"]
    up = sum(f.bytes for f in dfs.modelled_steps(dplan)[0] if f.src == 0)
    kept = dplan["k"] // b  # whole blocks within the budget, 15 of 16 shards pushed
    assert up == pytest.approx((kept * (b + 1)) * 4 * 15 / 16, rel=0.05)


def test_an_algorithm_without_a_model_of_its_bytes_is_refused_in_one_line():
    bare = dataclasses.replace(base.get("dfs"), modelled_steps=None)
    why = project.simulable(bare)
    assert why and "no simulated form" in why and "\n" not in why
    _, _, _, plan = _sparse("dfs,density=0.01")
    with pytest.raises(ValueError, match="gives no model"):
        project.simulated_form(bare, plan)


def _run(name: str) -> dict:
    summary = json.loads((DFS / "summary.json").read_text())
    return next(r for r in summary["runs"] if r["dir"] == name)


@pytest.mark.skipif(not DFS.is_dir(), reason="docs/results/dfs-resnet18-digits is not in this tree")
def test_logged_steps_split_each_iteration_exactly():
    run = _run("05-fattree-4-dfs-density-0-01-resnet20")
    job = json.loads((DFS / run["dir"] / "job.json").read_text())
    a = base.get("dfs")
    its = project.logged_iterations(DFS / run["dir"] / "workers", 5)
    for it in its:
        push, pull = a.logged_steps(job["plan"], it)
        for rank, logged in it.items():
            mine = {(f.dst, f.nic): (f.bytes, f.messages) for f in base.merge_flows(push + pull) if f.src == rank}
            assert mine == {(d, n): (b, m) for d, n, b, m in logged["sent"]}  # every byte, no more
            assert sum(f.bytes for f in push if f.src == rank) == logged["phases"]["push"]
            assert sum(f.bytes for f in pull if f.src == rank) == logged["phases"]["pull"]
    # each replayed step pays two rounds of start-up, its headers' and its payloads' (`_blocksparse.rounds`)
    form = project.simulated_form(a, job["plan"], round_latency=0.001, logged=its)
    assert form.startup == pytest.approx([0.002] * 2 * len(its))
    with pytest.raises(ValueError, match="pull bytes"):
        bad = {r: {**v, "phases": {**v["phases"], "pull": v["phases"]["pull"] + 1}} for r, v in its[0].items()}
        a.logged_steps(job["plan"], bad)


@pytest.mark.skipif(not DFS.is_dir(), reason="docs/results/dfs-resnet18-digits is not in this tree")
def test_a_measured_data_dependent_run_replays_its_logged_bytes():
    run = _run("07-fattree-4-topk-ps-density-0-01-resnet20")
    logs = DFS / run["dir"] / "workers"
    syncs = int(run["syncs_counted"])
    req = project.Request("fattree,k=4", "topk_ps,density=0.01", 4, bw=100, model="resnet20", logs=str(logs),
                          syncs=syncs, compute=(("sparsify_seconds", costs.CostModel(run["sparsify_seconds"])),))
    prep = project.prepare(req)
    assert prep.hosts == run["hosts"] and prep.form.syncs == syncs
    assert prep.flows == analysis.logged_flows(logs, syncs)  # the analysis's own expected bytes
    rec = project.project(prep)
    assert rec["payload_equal"] and rec["bytes_source"] == "logged" and len(rec["sync_seconds"]) == syncs
    for nic, v in run["payload_bytes_expected"].items():  # per sync, as the analysis put it in summary.json
        assert rec["payload_bytes_expected"][nic]["tx"] == pytest.approx(v["tx"] / syncs)
    assert min(rec["sync_seconds"]) >= run["sparsify_seconds"]


GTOPK_P4 = Path(__file__).resolve().parents[2] / "docs/results/gtopk-scaling-fattree/p4"


@pytest.mark.skipif(not (GTOPK_P4.is_dir() and DFS.is_dir()), reason="the measured folders are not in this tree")
def test_measured_projections_replay_the_runs_own_compute_and_logs():
    from emulation.simulator import sweep

    s = sweep.Sweep(measured=str(GTOPK_P4))
    measured = sweep.resolve_measured(s)
    reqs = {req.algo: req for req, _ in sweep.requests(s, measured)}
    run = next(m for k, m in measured.items() if k[1] == "gtopk,density=0.001")
    gtopk = reqs["gtopk,density=0.001"]
    # the slowest rank's per sync: the sync waits for it
    assert dict(gtopk.compute) == {"sparsify_seconds": costs.CostModel(run["sparsify_seconds_slowest"]),
                                   "merge_seconds": costs.CostModel(run["merge_seconds_slowest"])}
    assert run["sparsify_seconds_slowest"] >= run["sparsify_seconds"]
    assert gtopk.compute_source == sweep.REPLAY and gtopk.logs is None  # its bytes are its plan's
    assert reqs["ring"].compute == () and reqs["ring"].logs is None
    # a given cost model wins for its key; the run's own figure stands for the other
    s = sweep.Sweep(measured=str(GTOPK_P4), compute=["sparsify_seconds=0.01:1e-9"])
    gtopk = {req.algo: req for req, _ in sweep.requests(s, sweep.resolve_measured(s))}["gtopk,density=0.001"]
    assert dict(gtopk.compute)["sparsify_seconds"] == costs.CostModel(0.01, 1e-9)
    assert dict(gtopk.compute)["merge_seconds"] == costs.CostModel(run["merge_seconds_slowest"])
    assert "given" in gtopk.compute_source
    # a data-dependent run: its logs and the syncs its analysis counted
    s = sweep.Sweep(measured=str(DFS))
    measured = sweep.resolve_measured(s)
    dfs = [req for req, _ in sweep.requests(s, measured) if req.algo.startswith("dfs")][0]
    assert dfs.logs.endswith("workers") and dfs.syncs == 150 and dict(dfs.compute)["sparsify_seconds"].c1 == 0


# -- the block owners' aggregation (decode, sum, encode): a declared compute ------------------
def test_the_owners_aggregation_is_charged_after_the_last_step_of_every_replayed_sync():
    _, _, a, plan = _sparse("dfs,density=0.01", workers=4, mb=1)
    model = {"sparsify_seconds": costs.CostModel(0.02), "aggregate_seconds": costs.CostModel(0.001, 2e-9)}
    before, after = a.compute_charges(plan, model)
    assert before == pytest.approx(0.02) and after == pytest.approx(0.001 + 2e-9 * plan["elements"])
    assert a.compute_charges(plan, {"sparsify_seconds": costs.CostModel(0.02)}) == (pytest.approx(0.02), 0.0)
    # three synthetic logged syncs of the plan's own push and pull flows
    push, pull = a.steps(plan)

    def sent(rank):
        out = {}
        for f in push + pull:
            if f.src == rank:
                out.setdefault((f.dst, f.nic), [0, 0])
                out[(f.dst, f.nic)][0] += f.bytes
                out[(f.dst, f.nic)][1] += f.messages
        return [[d, n, b, m] for (d, n), (b, m) in sorted(out.items())]
    it = {r: {"sent": sent(r), "phases": {"pull": sum(f.bytes for f in pull if f.src == r)}} for r in range(4)}
    form = project.simulated_form(a, plan, costs=model, logged=[it] * 3)
    assert form.per_sync == 2 and form.syncs == 3
    assert form.before == pytest.approx([before, 0.0] * 3) and form.after == pytest.approx([0.0, after] * 3)
    assert form.compute_per_sync == pytest.approx(before + after)


def test_a_measured_run_replays_its_owners_aggregation_when_it_logged_one_and_an_old_run_as_before():
    from emulation.simulator import sweep

    algo = base.get("omnireduce")
    old = {"sparsify_seconds": 0.3}  # docs/results/dfs-resnet18-digits: logged before owners were timed
    assert dict(sweep.replayed(algo, old, None, {})["compute"]) == {"sparsify_seconds": costs.CostModel(0.3)}
    new = {"sparsify_seconds": 0.3, "aggregate_seconds": 0.12}
    assert dict(sweep.replayed(algo, new, None, {})["compute"]) == {
        "sparsify_seconds": costs.CostModel(0.3), "aggregate_seconds": costs.CostModel(0.12)}
    # a given model of the owners' work wins over the run's own
    given = {"aggregate_seconds": costs.CostModel(0.0, 1e-8)}
    got = dict(sweep.replayed(algo, new, None, given)["compute"])
    assert got["aggregate_seconds"] == costs.CostModel(0.0, 1e-8) and got["sparsify_seconds"] == costs.CostModel(0.3)
    assert sweep.given_costs(["aggregate_seconds=0.001:2e-9"]) == {"aggregate_seconds": costs.CostModel(0.001, 2e-9)}


def test_summary_keeps_the_slowest_owners_aggregation_of_each_sync():
    # DFS on a real gradient: one owner's shard holds almost every block, and every worker waits for its pull
    observed = {0: [{"sparsify_seconds": 0.30, "aggregate_seconds": 0.080}, {"sparsify_seconds": 0.34,
                                                                             "aggregate_seconds": 0.060}],
                1: [{"sparsify_seconds": 0.32, "aggregate_seconds": 0.002}, {"sparsify_seconds": 0.30,
                                                                             "aggregate_seconds": 0.070}]}
    got = base.get("dfs").figures(observed)
    assert got["aggregate_seconds"] == pytest.approx((0.080 + 0.070) / 2)  # not the mean over owners, 0.053
    assert got["sparsify_seconds"] == pytest.approx(0.315)


def test_the_fitted_compute_column_models_the_computes_a_run_logged(monkeypatch):
    # docs/PROJECTION.md's compute table: a run logged before the owners were timed has no
    # aggregate_seconds, its replay charges none, so its fitted-compute column models sparsify
    # alone; a run that logged one has no fitted column until a model of it exists
    from emulation.report.doctables import projection as doc

    def row(name, elements, sparsify, fit, **more):
        run = {"algorithm": "dfs", "sparsify_seconds": sparsify, "faithful": True, **more}
        return {"experiment": name, "fit": fit, "topology": "fattree(4)", "algo_spec": "dfs,density=0.01",
                "model": "m", "workers": 4, "algorithm": "dfs", "gradient_bytes": 4 * elements, "run": run,
                "sim": {"bytes_source": "logged", "compute_seconds_per_sync": sparsify
                        + more.get("aggregate_seconds", 0.0)},
                "measured_seconds": 1.0, "simulated_seconds": 0.5, "sim_over_measured": 0.5}
    rows = [row("a", 10**6, 0.030, True), row("b", 2 * 10**6, 0.050, True), row("c", 10**6, 0.030, False),
            row("d", 10**6, 0.030, False, aggregate_seconds=0.01)]
    monkeypatch.setattr(doc, "_validation", lambda data: rows)
    fits = doc.fitted_costs({})
    assert set(fits) == {("dfs", "sparsify_seconds")}  # nobody in the fit half logged an aggregation
    model = fits[("dfs", "sparsify_seconds")][0]
    lines = [line for line in doc.projection_compute({}) if line.startswith("| ") and "dfs" in line]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    fitted = {c[0]: c[13] for c in cells}
    expected = 0.5 - 0.030 + model.seconds(costs.work(10**6, 4, doc.EMULATION_CORES))
    assert fitted["c"] == f"{expected:.3f}"
    assert fitted["d"] == doc.NA  # its aggregation has no model yet: not modelled as zero
