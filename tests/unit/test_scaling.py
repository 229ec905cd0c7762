"""emulation/report/scaling.py (syncbed scaling): one table across worker counts from several results folders."""
from __future__ import annotations

import json

import pytest

from emulation.report import scaling

pytestmark = pytest.mark.unit


def _folder(tmp_path, name, runs):
    d = tmp_path / name
    d.mkdir()
    (d / "summary.json").write_text(json.dumps({"runs": runs}))
    return d


def _run(algo, workers, sync, **extra):
    return {"status": "ok", "algorithm": algo.split(",")[0], "algo_spec": algo, "model": "resnet50",
            "topology": "fattree(4)", "workers": workers, "iters": 3, "warmup": 1, "syncs_counted": 3,
            "sync_seconds": [sync] * 3, "iteration_seconds": [sync + 3.0] * 3, "scaling_efficiency": 3.0 / (sync + 3.0),
            "payload_bytes_measured": {"h-eth0": {"tx": 3 * 2**20, "rx": 0}}, "faithful": True, **extra}


def test_rows_across_folders_with_compression_apart(tmp_path):
    a = _folder(tmp_path, "p4", [_run("gtopk,density=0.001", 4, 0.2, sparsify_seconds=0.1, merge_seconds=0.02),
                                 _run("ring", 4, 8.0), {"status": "failed", "iteration_seconds": []}])
    b = _folder(tmp_path, "p8", [_run("gtopk,density=0.001", 8, 0.4, sparsify_seconds=0.1)])
    rows = scaling.collect([a, b])
    assert [(r["algorithm"], r["workers"]) for r in rows] == [("gtopk,density=0.001", 4), ("gtopk,density=0.001", 8),
                                                              ("ring", 4)]
    assert rows[0]["compress_s"] == pytest.approx(0.12) and rows[1]["compress_s"] == pytest.approx(0.1)
    assert rows[2]["compress_s"] is None and rows[0]["bytes_per_worker"] == 2**20
    text = scaling.markdown(rows)
    assert "| gtopk,density=0.001 | 4 | 0.200 | 3.200 | 93.8% | 1.000 MiB | 0.120 (60%) | True |" in text
    assert "| ring | 4 | 8.000 | 11.000 | 27.3% | 1.000 MiB | – | True |" in text
    with pytest.raises(ValueError, match="has no summary.json"):
        scaling.collect([tmp_path / "nowhere"])


def test_beside_the_paper_at_the_largest_p_and_one_plot_row_per_model(tmp_path):
    runs = [_run("gtopk,density=0.001", 32, 0.2), _run("topk,density=0.001", 32, 0.6, faithful=False),
            _run("ring", 32, 9.0), _run("gloo", 32, 12.0), _run("ring", 16, 6.0),
            _run("gtopk,density=0.001", 4, 0.1, model="resnet20")]
    rows = scaling.collect([_folder(tmp_path, "p", runs)])
    text = scaling.markdown(rows)
    # resnet50 at P = 32: 3/3.2, 3/3.6, 3/12 (ring, the better dense); the paper's 20.3 / 57.8 / 74.0
    assert ("| resnet50 | 32 | 25.0% | 83.3% | 93.8% | 3.75x | 1.12x | 20.3% / 57.8% / 74% | 3.6x | 1.28x | "
            "dense yes, topk NO, gtopk yes |") in text
    assert "| resnet20 | 4 | – | – | 96.8% | – | – | 31.3% / 75.6% / 85.7% |" in text
    scaling.plot(rows, tmp_path / "scaling.png")
    assert (tmp_path / "scaling.png").stat().st_size > 10_000


def test_syncbed_scaling_writes_the_table_and_refuses_in_one_line(tmp_path, capsys):
    from emulation import cli

    folder = _folder(tmp_path, "p4", [_run("ring", 4, 8.0)])
    assert cli.main(["scaling", str(folder), "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "out" / "scaling.md")
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"scaling.json", "scaling.md", "scaling.png"}
    assert cli.main(["scaling", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scaling: ") and "has no summary.json" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x").exists()
