"""The tables of docs/PROJECTION.md "The papers' scales" (emulation/report/doctables/papers_scale.py),
rendered from tiny synthetic result folders: every column is checked against the numbers put in."""
from __future__ import annotations

import pytest

from emulation.papers import gtopk as gtopk_paper
from emulation.report import doctables
from emulation.report.doctables import papers_scale


def _cells(lines: list[str]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the first Markdown table in `lines`."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines if line.startswith("|")]
    return rows[0], [r for r in rows[2:]]


def _column(header, rows, name) -> list[str]:
    return [r[header.index(name)] for r in rows]


def _layerwise(spec: str, p: int, iteration: float, groups: int = 3) -> dict:
    algo = spec.split(",")[0]
    return {"status": "ok", "topology": "fattree(4)", "workers": p, "algorithm": algo, "algo_spec": spec,
            "model": "m", "alpha_seconds": 0.002, "simulated_iteration_seconds": iteration,
            "authors_efficiency": 0.5, "groups": groups, "predicted_iteration_seconds": 1.5, "layers": 10, "planner_cpu_seconds": 0.01,
            "simulator": {"wall_seconds": 1.0}}


def test_mgwfbp_scale_columns():
    times = {"wfbp": 4.0, "single": 3.0, "fusion,bucket_mb=2.5": 2.5, "fusion,bucket_mb=6.4": 2.2, "mgwfbp": 2.0}
    runs = [_layerwise(s, 16, t) for s, t in times.items()]
    data = {rel: {"runs": runs, "skipped": []} for rel in papers_scale.MGWFBP_SCALE}
    lines = papers_scale.projection_mgwfbp_scale(data)
    header, rows = _cells(lines)
    assert len(rows) == len(papers_scale.MGWFBP_MODELS)
    assert _column(header, rows, "model") == list(papers_scale.MGWFBP_MODELS)
    assert _column(header, rows, "P") == ["16", "16"]
    assert _column(header, rows, "a(P) ms") == ["2.00", "2.00"]
    assert _column(header, rows, "WFBP iteration s (efficiency)") == ["4.000 (50%)"] * 2
    assert _column(header, rows, "SyncEASGD iteration s (efficiency)") == ["3.000 (50%)"] * 2
    assert _column(header, rows, "fusion 64 MiB iteration s (efficiency)") == ["2.200 (50%)"] * 2
    assert _column(header, rows, "MG-WFBP iteration s (efficiency)") == ["2.000 (50%)"] * 2
    assert _column(header, rows, "WFBP / MG-WFBP") == ["2.00", "2.00"]
    assert _column(header, rows, "SyncEASGD / MG-WFBP") == ["1.50", "1.50"]
    assert _column(header, rows, "MG-WFBP groups of layers") == ["3 of 10"] * 2
    assert _column(header, rows, "MG-WFBP planned iteration s (its a, b)") == ["1.500"] * 2
    assert any("Largest P reached: googlenet 16, resnet50 16" in line for line in lines)


def test_mgwfbp_scale_refuses_two_runs_for_one_cell():
    runs = [_layerwise("mgwfbp", 16, 2.0), _layerwise("mgwfbp", 16, 2.1)]
    data = {rel: {"runs": runs} for rel in papers_scale.MGWFBP_SCALE}
    with pytest.raises(ValueError, match="2 runs match"):
        papers_scale.projection_mgwfbp_scale(data)


def _sparse(algo: str, p: int, sim: float, tx: int) -> dict:
    spec = f"{algo},density=0.001" if algo != "ring" else "ring"
    return {"status": "ok", "topology": "fattree(4)", "workers": p, "algorithm": algo, "algo_spec": spec,
            "model": "resnet50", "gradient_bytes": 4_000_000, "simulated_seconds": sim, "round_latency_seconds": 0.001,
            "payload_bytes_expected": {"h0-eth0": {"tx": tx, "rx": 0}, "h1-eth0": {"tx": tx // 2, "rx": 0}}}


def test_gtopk_scale_columns():
    runs = [_sparse("gtopk", 8, 0.01, 2**20), _sparse("topk", 8, 0.05, 7 * 2**20), _sparse("ring", 8, 1.0, 2**23)]
    lines = papers_scale.projection_gtopk_scale({papers_scale.GTOPK_SCALE[0]: {"runs": runs, "skipped": []}})
    header, rows = _cells(lines)
    assert len(rows) == 1
    row = dict(zip(header, rows[0]))
    assert row["P"] == "8" and row["Fat-Tree"] == "fattree(4)"
    assert row["gTop-k s"] == "0.0100" and row["Top-k s"] == "0.0500" and row["ring s"] == "1.000"
    assert row["Top-k / gTop-k"] == "**5.0**"
    model = {a: gtopk_paper.model_seconds(a, 8, 1_000_000, 0.001) for a in ("gtopk", "topk", "ring")}
    assert row["model gTop-k s"] == f"{model['gtopk']:.4f}" and row["model Top-k s"] == f"{model['topk']:.4f}"
    assert row["model ring s"] == f"{model['ring']:.3f}"
    assert row["model Top-k / gTop-k"] == f"**{model['topk'] / model['gtopk']:.1f}**"
    assert row["gTop-k MiB sent (busiest NIC)"] == "1.00" and row["Top-k MiB sent (busiest NIC)"] == "7.0"
    assert any("1 ms per message round" in line for line in lines)


def test_gtopk_cost_model_is_the_authors_formulas():
    a, b = gtopk_paper.ALPHA_S, 4 * gtopk_paper.BETA_S_PER_BYTE
    assert gtopk_paper.model_seconds("ring", 4, 1000) == pytest.approx(6 * a + 1.5 * 1000 * b)
    assert gtopk_paper.model_seconds("topk", 4, 1000, 0.01) == pytest.approx(2 * a + 6 * 10 * b)
    assert gtopk_paper.model_seconds("gtopk", 4, 1000, 0.01) == pytest.approx(4 * a + 4 * 10 * 2 * b)
    with pytest.raises(ValueError, match="valid: ring, topk, gtopk"):
        gtopk_paper.model_seconds("ps", 4, 1000)


def test_forest_scale_columns():
    def run(algo, topo, p, sim, over=1.0):
        return {"status": "ok", "topology": topo, "workers": p, "algorithm": algo, "algo_spec": algo,
                "simulated_seconds": sim, "sync_over_bound": over}
    runs = [run("forest", "fattree(8)", 128, 0.1, 1.2), run("ring", "fattree(8)", 128, 0.3),
            run("ps", "fattree(8)", 128, 0.25), run("forest", "fattree(16)", 1024, 0.2, 1.1),
            run("ring", "fattree(16)", 1024, 0.8)]
    data = {papers_scale.FOREST_SCALE[0]: {"runs": runs, "skipped": [
        {"topology": "fattree,k=16", "algo_spec": "ps", "model": "synthetic,mb=4", "why": "too long"}]}}
    lines = papers_scale.projection_forest_scale(data)
    header, rows = _cells(lines)
    assert _column(header, rows, "Fat-Tree") == ["fattree(8)", "fattree(16)"]
    assert _column(header, rows, "P") == ["128", "1024"]
    assert _column(header, rows, "forest s") == ["0.1000", "0.2000"]
    assert _column(header, rows, "ring s") == ["0.3000", "0.8000"]
    assert _column(header, rows, "PS s") == ["0.2500", "refused"]
    assert _column(header, rows, "ring / forest") == ["**3.00**", "**4.00**"]
    assert _column(header, rows, "PS / forest") == ["**2.50**", "–"]
    assert _column(header, rows, "forest x bound") == ["1.200", "1.100"]
    assert _column(header, rows, "paper (abstract)") == ["up to 18.3x", "up to 18.3x"]
    assert any("ps on fattree,k=16" in line for line in lines)


def test_the_tables_are_registered():
    for name, sources in (("projection-mgwfbp-scale", papers_scale.MGWFBP_SCALE),
                          ("projection-gtopk-scale", papers_scale.GTOPK_SCALE),
                          ("projection-forest-scale", papers_scale.FOREST_SCALE)):
        assert doctables.TABLES[name].sources == sources
