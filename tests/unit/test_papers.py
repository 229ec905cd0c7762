"""emulation/papers/: the registry, each paper's pairing of run records, and the report
sections they make, on made-up summary.json run records (and BML's on the recorded results
in docs/results, whose report.md was written before the papers became modules).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulation import papers
from emulation.papers import Paper, bml, common, gtopk, mgwfbp
from emulation.report import md_papers, write_report

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
MB = 2**20


def run(algorithm: str, **fields) -> dict:
    """A run record as summary.json holds it, for googlenet on fattree(4) with 8 workers."""
    return {"topology": "fattree(4)", "model": "googlenet", "workers": 8, "algorithm": algorithm,
            "status": "ok", "faithful": True, "correct": True, **fields}


def bml_pair_runs() -> list[dict]:
    bcube = run("bml", topology="bcube(4,2)", workers=16, model="vgg19", gradient_bytes=4 * MB,
                median_sync_seconds=1.6, bound_seconds=1.5, switches_total=8, switches_with_traffic=8,
                jct_seconds=10.0, payload_bytes_measured={"h00-eth0": {"tx": 80, "rx": 100},
                                                          "h00-eth1": {"tx": 100, "rx": 100}})
    ps = run("ps", workers=16, model="vgg19", gradient_bytes=4 * MB, median_sync_seconds=3.2,
             bound_seconds=3.6, bound_nonblocking_seconds=3.0, switches_total=20, switches_with_traffic=18,
             jct_seconds=16.0, faithful=False)
    return [bcube, ps]


# ---- registry --------------------------------------------------------------------------
def test_registry_lists_the_five_papers():
    reg = papers.registry()
    assert sorted(reg) == ["bml", "dfs", "forest", "gtopk", "mgwfbp"]
    for name, paper in reg.items():
        assert paper.name == name and paper.citation and paper.claims and paper.algorithms
        for claim in paper.claims:
            assert set(papers.CLAIM_KEYS) <= set(claim), (name, claim)
    assert papers.get("mgwfbp").algorithms == ("wfbp", "single", "fusion", "mgwfbp")


def test_unknown_paper_lists_the_valid_names():
    with pytest.raises(ValueError, match=r"unknown paper 'nope'; valid: bml, dfs, forest, gtopk, mgwfbp$"):
        papers.get("nope")


def test_paper_refuses_a_claim_without_its_source():
    with pytest.raises(ValueError, match=r"claim 0 lacks \['source'\]"):
        Paper("x", "X et al.", [{"what": "fast", "value": 2, "unit": "x"}], ("ring",), list, list)
    with pytest.raises(ValueError, match="algorithms must be a non-empty list"):
        Paper("x", "X et al.", [], "ring", list, list)


def test_relevant_papers_follow_the_algorithms_that_ran():
    assert papers.relevant([run("ring"), run("ps")]) == []
    assert [p.name for p in papers.relevant([run("ring"), run("wfbp"), run("gtopk")])] == ["gtopk", "mgwfbp"]


# ---- BML (moved from emulation/claims.py unchanged) --------------------------------------
def test_bml_pairs_each_bml_run_with_ps_on_fattree_of_the_same_model_and_size():
    rows = bml.pair(bml_pair_runs())
    assert len(rows) == 1
    r = rows[0]
    assert (r["model"], r["bcube"], r["fattree"], r["servers"], r["k"]) == ("vgg19", "bcube(4,2)", "fattree(4)", 16, 2)
    assert r["sync_ratio"] == pytest.approx(0.5) and r["sync_ratio_claim"] == 0.5
    assert r["bound_ratio"] == pytest.approx(0.5) and r["ps_collision_factor"] == pytest.approx(1.2)
    assert r["bml_over_bound"] == pytest.approx(1.6 / 1.5) and r["ps_over_bound"] == pytest.approx(3.2 / 3.0)
    assert r["switch_ratio"] == pytest.approx(0.4) and r["switch_ratio_claim"] == pytest.approx(0.4)
    assert r["switch_used_ratio"] == pytest.approx(8 / 18)
    assert r["jct_reduction"] == pytest.approx(1 - 10 / 16) and r["jct_reduction_claim"] == 0.564
    assert r["nic_share_spread"] == pytest.approx(100 / 80)
    assert r["faithful"] is False and r["correct"] is True
    other_model = [bml_pair_runs()[0], dict(bml_pair_runs()[1], model="lenet5")]
    assert bml.pair(other_model) == []
    on_bcube = [bml_pair_runs()[0], dict(bml_pair_runs()[1], topology="bcube(4,2)")]
    assert bml.pair(on_bcube) == []


def test_bml_section_says_where_it_agrees_with_the_paper():
    text = "\n".join(papers.get("bml").section(bml_pair_runs()))
    assert text.startswith("## BML against PS on Fat-Tree (Wang et al., NeurIPS 2018)\n")
    assert ("| vgg19 | bcube(4,2) | 16 | 0.5 | 0.5 | 0.5 | 8/20 = 0.4 | 0.4 | 8/18 = 0.444 | 10 / 16 | 37.5% | 56.4% "
            "| 1.25 | **NO**: PS on fattree(4) | PS on fattree(4): not faithful (no reason recorded) |") in text
    assert ("BML synchronized in 0.5 of PS's time, 1.00x the paper's 1/k = 0.5: within ±10%, so it agrees with the "
            "paper") in text
    assert "PS on the Fat-Tree was slowed by ECMP" in text and "its busiest link carried 1.2x" in text
    assert "Job completion time fell by 37.5% (paper: up to 56.4%)" in text
    assert "Of these runs, PS on fattree(4) was not faithful (no reason recorded): read its times with care" in text


def test_bml_says_differs_outside_its_stated_tolerance_and_which_run_is_unverified():
    """Issue #19: 0.431 of PS's time was printed as "agrees with 1/k" (anything within 0.8-1.25x
    did), and "One of the two runs was not faithful" for a pair where neither run was flagged:
    faithful None (unverified) was read as False."""
    unverified = {"faithful": None, "fidelity": {"unverified": ["cpu"], "reasons": [
        "not verified: CPU starvation of ovs-vswitchd and the workers was not measured"]}}
    bcube, ps = bml_pair_runs()
    runs = [dict(bcube, median_sync_seconds=0.431 * 3.2, **unverified), dict(ps, **unverified)]
    row = bml.pair(runs)[0]
    assert row["faithful"] is None and row["unfaithful"] == [] and row["failed"] == []
    text = "\n".join(bml.render([row]))
    assert "0.431 of PS's time, 0.86x the paper's 1/k = 0.5: outside ±10%, so it differs from the paper" in text
    assert "agrees" not in text.split("- **")[1]
    assert "not faithful" not in text
    assert ("Of these runs, BML on bcube(4,2) is unverified (cpu not checked); PS on fattree(4) is unverified (cpu "
            "not checked): read their times with care") in text
    assert "| unverified: BML on bcube(4,2) (cpu), PS on fattree(4) (cpu) | none |" in text
    just_within = [dict(bcube, median_sync_seconds=0.46 * 3.2), ps]
    assert "0.92x the paper's 1/k = 0.5: within ±10%, so it agrees" in "\n".join(bml.render(bml.pair(just_within)))


@pytest.mark.parametrize("name", ["bml-bcube42-vs-ps-fattree", "bml-bcube32-vs-ps-fattree"])
def test_bml_section_of_recorded_results_names_every_doubt(name):
    """The shipped results: each pair's row names the runs that were not faithful or are
    unverified, and only those; "agrees" only within the stated tolerance."""
    summary = json.loads((ROOT / "docs" / "results" / name / "summary.json").read_text())
    lines, problems = md_papers(summary)
    assert problems == [] and lines[0] == "## BML against PS on Fat-Tree (Wang et al., NeurIPS 2018)"
    rows = bml.pair([r for r in summary["runs"] if r.get("status") == "ok"])
    sentences = [line for line in lines if line.startswith("- **")]
    assert len(rows) == len(sentences) == 3
    for row, sentence in zip(rows, sentences):
        off = row["sync_ratio"] / row["sync_ratio_claim"]
        assert ("agrees with the paper" in sentence) == (abs(off - 1) <= bml.AGREEMENT)
        assert ("differs from the paper" in sentence) == (abs(off - 1) > bml.AGREEMENT)
        assert "One of the two runs" not in sentence
        for name_, _ in row["unfaithful"]:
            assert f"{name_} was not faithful" in sentence
        for name_, _ in row["unverified"]:
            assert f"{name_} is unverified" in sentence
        assert ("read its times" in sentence or "read their times" in sentence) == (row["faithful"] is not True)


# ---- MG-WFBP ---------------------------------------------------------------------------
def mgwfbp_runs(single_iteration: float = 1.4) -> list[dict]:
    return [run("mgwfbp", iteration_seconds=[1.0, 0.9, 1.1], predicted_iteration_seconds=0.8, median_sync_seconds=0.3),
            run("wfbp", iteration_seconds=[1.25, 1.3, 1.2], predicted_iteration_seconds=1.0, median_sync_seconds=0.5),
            run("single", iteration_seconds=[single_iteration] * 3, median_sync_seconds=0.6),
            run("fusion", algo_spec="fusion,mb=25", median_sync_seconds=0.45),  # no iteration times: sync
            run("ring", iteration_seconds=[3.0] * 3),  # not a baseline of the paper
            run("wfbp", model="resnet50", iteration_seconds=[2.0] * 3)]  # another model: not paired


def test_mgwfbp_pairs_against_each_baseline_of_the_same_group():
    rows = {r["baseline"]: r for r in mgwfbp.pair(mgwfbp_runs())}
    assert sorted(rows) == ["fusion,mb=25", "single", "wfbp"]
    w, s, f = rows["wfbp"], rows["single"], rows["fusion,mb=25"]
    assert (w["metric"], w["subject_s"], w["baseline_s"]) == ("iteration", 1.0, 1.25)
    assert w["speedup"] == pytest.approx(1.25) and w["predicted_speedup"] == pytest.approx(1.25)
    assert s["speedup"] == pytest.approx(1.4) and s["predicted_speedup"] is None
    assert (f["metric"], f["subject_s"], f["baseline_s"]) == ("sync", 0.3, 0.45)
    assert f["speedup"] == pytest.approx(1.5)
    assert (w["claim"], s["claim"], f["claim"]) == ("1.2x", "1.36x", None)  # GoogleNet: the authors' plots
    assert all(r["never_slower"] is True for r in rows.values())
    resnet = mgwfbp.pair([dict(r, model="resnet50") for r in mgwfbp_runs()[:2]])
    assert resnet[0]["claim"] == "0.99-1.71x"  # no per-model number: the TPDS range


def test_mgwfbp_slower_than_synceasgd_breaks_the_claim():
    rows = mgwfbp.pair(mgwfbp_runs(single_iteration=0.95))
    assert {r["never_slower"] for r in rows} == {False}
    text = "\n".join(mgwfbp.render(rows))
    assert "It was slower than SyncEASGD (0.95x), against the paper's claim that MG-WFBP never is." in text


def test_report_gets_an_mgwfbp_section_with_the_speedups(tmp_path):
    folder = tmp_path / "exp"
    folder.mkdir()
    summary = {"status": "ok", "experiment": "mgwfbp-vs-wfbp", "runs": mgwfbp_runs()}
    (folder / "summary.json").write_text(json.dumps(summary))
    text = write_report(folder).read_text()
    assert "## MG-WFBP against WFBP, SyncEASGD and fixed fusion (Shi, Chu, Li, INFOCOM 2019; TPDS 2021)" in text
    row = "| fattree(4) | googlenet | 8 | mgwfbp | {} |"
    assert row.format("WFBP | iteration | 1.000 | 1.250 | 1.25x | 1.25x | 1.2x | yes | none") in text
    assert row.format("SyncEASGD | iteration | 1.000 | 1.400 | 1.40x | – | 1.36x | yes | none") in text
    assert row.format("fusion,mb=25 | sync | 0.300 | 0.450 | 1.50x | – | – | yes | none") in text
    assert "It was not slower than WFBP or SyncEASGD, as the paper claims MG-WFBP never is." in text
    assert "| the merge is optimal | optimal |" in text and "tests/unit/test_merge.py" in text
    assert "## BML against" not in text and "## gTop-k" not in text
    # the results table gains the predicted-iteration columns and shows the full spec
    assert "| median iteration s | predicted iteration s | iteration measured/predicted | simulated iteration s |" in text
    assert "| 1 | fattree(4) | mgwfbp | 8 | – | – | – | – | – | – | – | – | 1.000 | 0.800 | 1.25 | – |" in text
    assert "| 4 | fattree(4) | fusion,mb=25 | 8 |" in text


def test_mgwfbp_names_the_baselines_compared_and_each_failed_check():
    """"never slower than WFBP or SyncEASGD" was printed when SyncEASGD had not run; a run's
    failed byte check was not shown in the section."""
    bad = {"payload_ratio": {"min": 0.9, "max": 1.0, "tolerance": 0.03, "unexpected": [], "within_tolerance": False}}
    runs = [mgwfbp_runs()[0], dict(mgwfbp_runs()[1], faithful=None, fidelity={"unverified": ["cpu"]}, **bad)]
    rows = mgwfbp.pair(runs)
    text = "\n".join(mgwfbp.render(rows))
    assert "It was not slower than WFBP, as the paper claims MG-WFBP never is." in text
    assert "| 1.2x | unverified: wfbp (cpu) | wfbp: payload measured/expected 0.900..1.000 outside 1 ± 0.03 |" in text
    assert "Of these runs, wfbp is unverified (cpu not checked): read its times with care (see Fidelity)." in text


# ---- the others ------------------------------------------------------------------------
def test_gtopk_compares_sparse_and_dense_per_density():
    runs = [run("gtopk", algo_spec="gtopk,density=0.01", model="resnet20", median_sync_seconds=0.2,
                sparsify_seconds=0.03, merge_seconds=0.02),
            run("topk", algo_spec="topk,density=0.01", model="resnet20", median_sync_seconds=0.3),
            run("topk", density=0.001, model="resnet20", median_sync_seconds=0.25),
            run("ring", model="resnet20", median_sync_seconds=1.2, scaling_efficiency=0.25),
            run("gloo", model="resnet20", sync_seconds=[1.0, 1.1, 0.9])]
    rows = gtopk.pair(runs)
    assert [r["density"] for r in rows] == [0.001, 0.01]
    low, high = rows
    assert (low["gtopk"], low["topk"], low["dense"]) == (None, "topk", "gloo")
    assert low["dense_over_topk"] == pytest.approx(4.0)
    assert high["dense_over_gtopk"] == pytest.approx(5.0) and high["topk_over_gtopk"] == pytest.approx(1.5)
    assert high["paper_efficiency"] == [31.3, 75.6, 85.7]
    assert gtopk.pair([runs[0], run("ring", median_sync_seconds=1.0)]) == []  # another model
    text = "\n".join(gtopk.render(rows))
    assert "| fattree(4) | resnet20 | 8 | 0.01 | 0.200 | 0.300 | 1.000 (gloo) | 5.00 | 1.50 | 3.33 | – |" in text
    with_eff = gtopk.pair([dict(runs[0], scaling_efficiency=0.9), runs[3]])
    assert with_eff[0]["efficiency"] == [pytest.approx(25.0), None, pytest.approx(90.0)]
    assert "| 25.0 / – / 90.0 | 31.3% / 75.6% / 85.7% |" in "\n".join(gtopk.render(with_eff))
    # compression CPU per sync, apart: selection + merges, and its share of the sync; – before it was logged
    assert high["gtopk_compress_s"] == pytest.approx(0.05) and high["topk_compress_s"] is None
    assert "| 0.050 (25%) | – |" in text


@pytest.mark.parametrize("name, subject, baseline", [("forest", "forest", "ring")])
def test_claims_only_papers_pair_when_their_runs_exist(name, subject, baseline):
    paper = papers.get(name)
    assert paper.pair([run("ring"), run("ps")]) == []
    assert paper.pair([run(subject, median_sync_seconds=1.0)]) == []  # nothing to compare with
    runs = [run(subject, iteration_seconds=[1.0], jct_seconds=10.0, data_bytes_per_sync=100),
            run(baseline, iteration_seconds=[2.0], jct_seconds=20.0, data_bytes_per_sync=400)]
    rows = paper.pair(runs)
    assert len(rows) == 1 and rows[0]["speedup"] == pytest.approx(2.0)
    text = "\n".join(paper.section(runs))
    assert "### What the paper claims" in text and paper.citation in text
    for claim in paper.claims:
        assert f"| {claim['what']} | {common.value_text(claim)} | {claim['source']} |" in text


def dfs_runs() -> list[dict]:
    """ResNet-18 on 4 workers: DFS, OmniReduce and Top-k PS at density 0.01, the dense PS."""
    def train(reached_at, final):
        return {"iter": [0, 9, 19], "accuracy": [0.1, 0.5 if reached_at != 9 else 0.9, final],
                "seconds": [1.0, 10.0, 20.0]}

    def r(algorithm, spec, push, pull, captured, jct, tta, **more):
        # the capture sees 5% more than the ranks logged (Gloo framing), and differs from the plan
        return run(algorithm, algo_spec=spec, model="resnet18", workers=4, iters=20, warmup=0,
                   phase_bytes_per_sync={"push": push, "pull": pull}, data_bytes_per_sync=push + pull,
                   payload_bytes_measured={"h0_0_2-eth0": {"tx": int(20 * captured), "rx": 0}},
                   iteration_seconds=[jct / 20], median_sync_seconds=jct / 40, jct_seconds=jct,
                   time_to_accuracy=tta, training=train(None, 0.95), **more)
    return [r("dfs", "dfs,density=0.01", 1e6, 3e6, 4.2e6, 30.0, {"target": 0.9, "iter": 9, "seconds": 10.0},
              zero_block_fraction=0.98, blocks_used={"256": 1, "1024": 19}, sparsify_seconds=0.25),
            r("omnireduce", "omnireduce,density=0.01", 10e6, 30e6, 42e6, 60.0,
              {"target": 0.9, "iter": 19, "seconds": 20.0}, zero_block_fraction=0.1),
            r("topk_ps", "topk_ps,density=0.01", 2e6, 6e6, 8.4e6, 40.0, {"target": 0.9, "iter": None, "seconds": None}),
            r("ps", "ps", 40e6, 40e6, 84e6, 120.0, {"target": 0.9, "iter": 19, "seconds": 40.0}, faithful=False)]


def test_dfs_headline_against_omnireduce_bytes_and_dense_ps_time():
    paper = papers.get("dfs")
    assert paper.pair([run("ring"), run("ps")]) == []
    assert paper.pair([run("dfs", median_sync_seconds=1.0)]) == []  # nothing to compare with
    rows = paper.pair(dfs_runs())
    assert len(rows) == 1
    row = rows[0]
    assert row["bytes_reduction_vs_omnireduce"] == pytest.approx(0.9)  # 1 - 4.2/42, captured
    assert row["bytes_reduction_vs_topk_ps"] == pytest.approx(0.5)
    assert row["bytes_vs_omnireduce"] == row["bytes_vs_topk_ps"] == "captured"
    assert row["time_metric"] == "time to 90% accuracy" and row["time_reduction_vs_ps"] == pytest.approx(0.75)
    assert [s["algorithm"] for s in row["runs"]] == ["dfs", "omnireduce", "topk_ps", "ps"]
    assert row["faithful"] is False and row["unfaithful"] == [("ps", "no reason recorded")]  # the dense PS run
    text = "\n".join(paper.section(dfs_runs()))
    assert "| resnet18 | 4 | dfs,density=0.01 | 90.0% less | 87.2% less | 50.0% less | 75.0% less |" in text
    assert "| 74.1% less | **NO**: ps | ps: not faithful (no reason recorded) |" in text
    assert "| dfs,density=0.01 | 1.000 | 3.000 | 4.200 | 98.0% | 256 x1, 1024 x19 | 0.250 | 0.750 | 1.500 |" in text
    assert "| not reached |" in text and "iter 9, 10.0 s" in text
    for claim in paper.claims:
        assert f"| {claim['what']} | {common.value_text(claim)} | {claim['source']} |" in text


def test_dfs_captured_column_holds_only_captured_bytes():
    """Issue #19: without a capture, "captured MB/sync" showed the plan's bytes. It says so now,
    and the headline compares the bytes the ranks logged, saying that it does."""
    runs = [{k: v for k, v in r.items() if k != "payload_bytes_measured"} for r in dfs_runs()]
    row = papers.get("dfs").pair(runs)[0]
    assert all(s["captured_bytes"] is None for s in row["runs"])
    assert row["bytes_vs_omnireduce"] == "logged" and row["bytes_reduction_vs_omnireduce"] == pytest.approx(0.9)
    text = "\n".join(papers.get("dfs").render([row]))
    assert "| dfs,density=0.01 | 1.000 | 3.000 | not captured | 98.0% |" in text
    assert "| 90.0% less (logged bytes: not captured) | 87.2% less | 50.0% less (logged bytes: not captured) |" in text
    assert common.bytes_per_sync({"iters": 5, "warmup": 1, "data_bytes_per_sync": 100}) is None


def test_dfs_unverified_runs_are_not_reported_unfaithful():
    """The shipped DFS runs had no calibration (every one unverified): the headline said **NO**."""
    unverified = {"faithful": None, "fidelity": {"unverified": ["links"], "reasons": ["not verified: link rates"]}}
    row = papers.get("dfs").pair([dict(r, **unverified) for r in dfs_runs()])[0]
    assert row["faithful"] is None and row["unfaithful"] == [] and row["failed"] == []
    text = "\n".join(papers.get("dfs").render([row]))
    assert "**NO**" not in text
    assert ("| unverified: dfs,density=0.01 (links), omnireduce,density=0.01 (links), topk_ps,density=0.01 (links), "
            "ps (links) | none |") in text


def test_dfs_time_falls_back_to_the_same_iterations_when_a_run_missed_the_target():
    runs = dfs_runs()
    runs[3]["time_to_accuracy"] = {"target": 0.9, "iter": None, "seconds": None}
    row = papers.get("dfs").pair(runs)[0]
    assert row["time_metric"] == "wall time of the same iterations"
    assert row["time_reduction_vs_ps"] == pytest.approx(0.75)  # 1 - 30/120


def test_only_ring_and_ps_runs_get_no_paper_section(tmp_path):
    summary = {"status": "ok", "experiment": "baselines", "runs": [run("ring", median_sync_seconds=1.0),
                                                                  run("ps", median_sync_seconds=2.0)]}
    assert md_papers(summary) == ([], [])
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(summary))
    text = write_report(folder).read_text()
    assert "What the paper claims" not in text and "## BML" not in text and "MG-WFBP" not in text


def test_a_failing_paper_becomes_a_problem_line(monkeypatch):
    def broken(runs):
        raise KeyError("topology")
    monkeypatch.setitem(papers.registry(), "mgwfbp",
                        Paper("mgwfbp", "x", [], ("mgwfbp",), broken, mgwfbp.render))
    lines, problems = md_papers({"runs": mgwfbp_runs()})
    assert lines == []
    assert problems == ["paper 'mgwfbp' section could not be written: KeyError: 'topology'"]


def test_forest_section_sets_each_run_against_its_plan_and_the_cut_bound():
    forest = run("forest", median_sync_seconds=1.7, iteration_seconds=[1.7], planned_seconds=1.468,
                 bound_cut_seconds=1.468, bound_cut_available_seconds=1.6, capacity="available",
                 background_source="measured before the run", planned_seconds_configured=1.468, trees=8)
    rows = papers.get("forest").pair([forest, run("ring", iteration_seconds=[2.55]),
                                      run("ps", iteration_seconds=[2.26])])
    assert [r["baseline"] for r in rows] == ["ring", "ps"] and rows[0]["speedup"] == pytest.approx(1.5)
    assert rows[0]["over_cut"] == pytest.approx(1.7 / 1.468)
    text = "\n".join(papers.get("forest").render(rows))
    assert text.count("| fattree(4) | 8 | forest | 8 | 1.700 | 1.468 | 1.468 | 1.16 | available (background "
                      "measured before the run) | 1.468 | 1.600 | 1.06 |") == 1  # one plan row for two baselines
