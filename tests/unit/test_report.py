"""emulation/report/ on fake results folders built from real topology descriptions.

No network: summary.json, worker logs, calibration and fidelity files are made up with
the shapes docs/ARCHITECTURE.md gives, around BCube(4,2) (BML) and Fat-Tree(4) (PS).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from emulation import report
from emulation.results import columns
from topologies.spec import build

MB = 2**20
GRAD = 4 * MB
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ---- fake results --------------------------------------------------------------------
def nic_bytes(topo, per_nic: float, skew: dict | None = None) -> dict:
    skew = skew or {}
    return {nic.name: {"tx": int(per_nic * skew.get(nic.name, 1.0)), "rx": int(per_nic)}
            for h in topo.hosts() for nic in topo.host_nics(h)}


def switch_link_bytes(topo, per_link: dict, idle: set[str]) -> dict:
    """Counters on every switch interface (bytes per direction by link class); links
    touching an `idle` switch carry nothing."""
    out = {}
    for link in topo.links:
        ends = [topo.intfs[link.a], topo.intfs[link.b]]
        b = 0 if any(e.node in idle for e in ends) else int(per_link[link.cls])
        for e in ends:
            if topo.nodes[e.node].kind == "switch":
                out[e.name] = {"tx": b, "rx": b}
    return out


def worker_log(rank: int, host: str, syncs: list[float], stages: list[dict]) -> list[dict]:
    events = [{"event": "start", "rank": rank, "host": host, "pid": 100 + rank, "t": 1000.0}]
    t = 1000.0
    for i, s in enumerate([0.5] + syncs):  # iteration 0 is the warmup
        ready = t + 0.1 + 0.001 * rank
        events.append({"event": "iter", "iter": i, "warmup": i == 0, "t_start": t, "t_ready": ready,
                       "t_done": t + 0.1 + 0.015 + s - 0.0001 * rank, "correct": True, "max_abs_err": 0.0})
        t += 10.0
    return events + [dict(ev, event="stage") for ev in stages] + [{"event": "done", "t": t}]


def bml_stages(topo, host: str, iters: int) -> list[dict]:
    """BML on BCube(n,2): 2K = 4 stages, tree p on NIC (p + s) mod K, then reversed."""
    out = []
    for it in (1, iters):
        base = 1000.0 + 10.0 * it + 0.2
        for s in range(4):
            for tree in (0, 1):
                lvl = (tree + s) % 2 if s < 2 else (tree + 3 - s) % 2
                out.append({"iter": it, "tree": tree, "stage": s, "nic": lvl,
                            "phase": "aggregate" if s < 2 else "broadcast",
                            "t0": base + 0.3 * s, "t1": base + 0.3 * s + 0.25, "bytes": 1000})
    return out


def write_run(folder: Path, rel: str, topo, run: dict, syncs: list[float], with_stages: bool):
    rdir = folder / rel
    (rdir / "workers").mkdir(parents=True)
    (rdir / "topology.json").write_text(json.dumps(topo.to_dict()))
    for rank, host in enumerate(topo.hosts()):
        stages = bml_stages(topo, host, len(syncs)) if with_stages else []
        lines = [json.dumps(e) for e in worker_log(rank, host, syncs, stages)]
        (rdir / "workers" / f"rank{rank}.jsonl").write_text("\n".join(lines) + "\n")
    with (rdir / "workers" / "rank0.jsonl").open("a") as f:
        f.write('{"event": "iter", "it')  # a torn last line, as a killed worker leaves
    classes = {c: {"configured_mbps": bw, "measured_mbps": bw * 0.97, "ratio": 0.97}
               for c, bw in topo.link_classes().items()}
    (rdir / "calibration.json").write_text(json.dumps({"classes": classes}))
    (rdir / "fidelity.json").write_text(json.dumps({
        "faithful": run["faithful"], "reasons": run.pop("_reasons"), "ovs_cpu_percent": 85.0,
        "workers_cpu_percent": 40.0, "capture_drops": 0,
        "busiest_link": {"link": "s0_0-eth1", "configured_mbps": 20.0, "achieved_mbps": 19.2}}))


def bml_run() -> tuple:
    topo = build("bcube,n=4,k=2", bw=20)
    per_nic = 2 * 15 * GRAD / (2 * 16)
    run = {"topology": topo.name, "algorithm": "bml", "workers": 16, "servers": 0,
           "gradient_bytes": GRAD, "link_mbps": 20.0, "iters": 3, "sync_seconds": [1.62, 1.58, 1.60],
           "bound_seconds": 1.57, "simulated_seconds": 1.571, "iteration_seconds": [2.0, 2.0, 2.0],
           "payload_bytes_measured": nic_bytes(topo, per_nic, {"h00-eth0": 0.8}),
           "payload_bytes_expected": nic_bytes(topo, per_nic),
           "payload_ratio": {"min": 0.8, "max": 1.0, "tolerance": 0.03, "unexpected": [], "within_tolerance": False},
           "wire_overhead": 0.03,
           "switches_total": 8, "switches_with_traffic": 8, "switches_used": topo.switches(),
           "link_bytes": switch_link_bytes(topo, {"level0": per_nic, "level1": per_nic}, set()), "correct": True, "faithful": True,
           "status": "ok", "dir": "runs/01-bcube-bml", "_reasons": []}
    return topo, run


def ps_run() -> tuple:
    topo = build("fattree,k=4", bw=20)
    idle = {"c2_1", "c2_2"}
    per_nic = 15 * GRAD / 16
    run = {"topology": topo.name, "algorithm": "ps", "workers": 16, "servers": 0,
           "gradient_bytes": GRAD, "link_mbps": 20.0, "iters": 3, "sync_seconds": [3.4, 3.3, 3.5],
           "bound_seconds": 3.15, "payload_bytes_measured": nic_bytes(topo, per_nic),
           "payload_bytes_expected": nic_bytes(topo, per_nic),
           "payload_ratio": {"min": 1.0, "max": 1.0, "tolerance": 0.03, "unexpected": [], "within_tolerance": True},
           "wire_overhead": 0.04,
           "switches_total": 20, "switches_with_traffic": 18,
           "switches_used": [s for s in topo.switches() if s not in idle],
           "link_bytes": switch_link_bytes(topo, {"host": per_nic, "edge-agg": per_nic / 2,
                                                  "agg-core": per_nic / 4}, idle), "correct": True, "faithful": False,
           "status": "ok", "dir": "runs/02-fattree-ps",
           "_reasons": ["ovs-vswitchd at 97% CPU (limit 90%)"]}
    return topo, run


def make_folder(root: Path, status: str = "ok", error: str | None = None) -> Path:
    folder = root / "exp"
    runs = []
    for (topo, run), syncs, stages in ((bml_run(), [1.62, 1.58, 1.60], True),
                                        (ps_run(), [3.4, 3.3, 3.5], False)):
        write_run(folder, run["dir"], topo, run, syncs, stages)
        runs.append(run)
    summary = {"status": status, "error": error, "experiment": "bml-vs-ps",
               "started": "2024-05-01T10:00:00", "finished": "2024-05-01T10:05:00", "runs": runs}
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def assert_pngs(folder: Path, text: str) -> list[Path]:
    pngs = sorted((folder / "plots").glob("*.png"))
    for p in pngs:
        assert p.stat().st_size > 0
        assert p.read_bytes()[:8] == PNG_MAGIC
        with Image.open(p) as im:
            im.verify()
        assert f"(plots/{p.name})" in text, f"{p.name} is not embedded in report.md"
    return pngs


# ---- tests -----------------------------------------------------------------------------
@pytest.mark.unit
def test_report_has_table_rows_and_every_plot(tmp_path):
    folder = make_folder(tmp_path)
    path = report.write_report(folder)
    text = path.read_text()
    assert path == folder / "report.md"
    assert text.startswith("# syncbed experiment `bml-vs-ps`")
    # every failed check beside the result: the payload out of tolerance, the fidelity reason
    assert ("| 1 | bcube(4,2) | bml | 16 | 4 | 20 | 1.600 | 1.570 | – | 1.02 | 1.571 | 0.98 | 0.800..1.000 | 8/8 | yes "
            "| yes | payload measured/expected 0.800..1.000 outside 1 ± 0.03 | ok |" in text)
    assert ("| 2 | fattree(4) | ps | 16 | 4 | 20 | 3.400 | 3.150 | – | 1.08 | – | – | 1.000..1.000 | 18/20 | yes | **NO** "
            "| ovs-vswitchd at 97% CPU (limit 90%) | ok |" in text)
    assert "ovs-vswitchd at 97% CPU (limit 90%)" in text
    assert "| 1 | level0 | 20 | 19.4 | 0.97 |" in text and "| 2 | agg-core | 20 | 19.4 | 0.97 |" in text
    assert "## How to read this" in text
    assert "could not be drawn" not in text
    names = {p.name for p in assert_pngs(folder, text)}
    assert names == {"sync_time.png", "bound_ratio.png", "switches.png",
                     "links_01_bcube_4_2_bml.png", "payload_01_bcube_4_2_bml.png",
                     "timeline_01_bcube_4_2_bml.png",  # only the BML logs have stage events
                     "links_02_fattree_4_ps.png", "payload_02_fattree_4_ps.png"}
    assert "unparsable line" in text  # the torn log line is reported, not fatal


@pytest.mark.unit
def test_failed_summary_starts_with_failure(tmp_path):
    folder = make_folder(tmp_path, status="failed", error="rank 3 crashed at iteration 2")
    summary = json.loads((folder / "summary.json").read_text())
    summary["runs"][1] = {"topology": "fattree(4)", "algorithm": "ps", "sync_seconds": [],
                          "status": "failed", "dir": "runs/02-fattree-ps", "error": "analysis skipped"}
    summary["runs"].append({"status": "failed"})  # a run that never got a folder
    (folder / "summary.json").write_text(json.dumps(summary))
    text = report.write_report(folder).read_text()
    first = text.splitlines()[:3]
    assert first[0].startswith("# FAILED")
    assert "FAILED: rank 3 crashed at iteration 2" in first[2]
    assert "| 2 | fattree(4) | ps |" in text and "(from logs)" in text  # sync times from the logs
    assert "| 3 | – | – |" in text
    assert "analysis skipped" in text and "run folder `None` does not exist" in text
    assert "could not be drawn" not in text
    assert_pngs(folder, text)


@pytest.mark.unit
def test_missing_optional_files_do_not_crash(tmp_path):
    folder = make_folder(tmp_path)
    run1 = folder / "runs/01-bcube-bml"
    for name in ("calibration.json", "fidelity.json", "topology.json"):
        (run1 / name).unlink()
    for p in (run1 / "workers").iterdir():
        p.unlink()
    summary = json.loads((folder / "summary.json").read_text())
    for key in ("link_bytes", "payload_bytes_measured", "bound_seconds", "simulated_seconds", "switches_total", "faithful"):
        summary["runs"][0].pop(key)
    (folder / "summary.json").write_text(json.dumps(summary))
    text = report.write_report(folder).read_text()
    assert text.startswith("# syncbed experiment")
    assert "`topology.json` is missing" in text
    assert "| 1 | bcube(4,2) | bml | 16 | 4 | 20 | 1.600 | – | – | – |" in text
    names = {p.name for p in assert_pngs(folder, text)}
    assert "links_01_bcube_4_2_bml.png" not in names and "timeline_01_bcube_4_2_bml.png" not in names
    assert "payload_01_bcube_4_2_bml.png" in names  # expected bytes alone still plot


@pytest.mark.unit
def test_no_summary_is_a_failure_that_lists_run_folders(tmp_path):
    folder = make_folder(tmp_path)
    (folder / "summary.json").unlink()
    text = report.write_report(folder).read_text()
    assert text.startswith("# FAILED")
    assert "`summary.json` is missing" in text
    assert "`runs/01-bcube-bml`" in text and "(from logs)" in text


@pytest.mark.unit
def test_cli_prints_the_report_path(tmp_path, capsys):
    from emulation import cli

    folder = make_folder(tmp_path)
    assert cli.main(["report", str(folder)]) == 0
    assert capsys.readouterr().out.strip() == str(folder / "report.md")
    assert cli.main(["report", str(tmp_path / "nope")]) == 2
    assert "nope is not a folder" in capsys.readouterr().err


@pytest.mark.unit
def test_sync_from_logs_is_max_done_minus_max_ready():
    logs = {0: [{"event": "iter", "iter": 1, "warmup": False, "t_ready": 10.0, "t_done": 12.0},
                {"event": "iter", "iter": 0, "warmup": True, "t_ready": 1.0, "t_done": 9.0}],
            1: [{"event": "iter", "iter": 1, "warmup": False, "t_ready": 10.5, "t_done": 11.0}]}
    assert report.sync_from_logs(logs) == [1.5]


@pytest.mark.unit
def test_link_loads_count_a_switch_to_switch_link_once():
    topo = build("fattree,k=4", bw=20)
    up = next(i for i, link in enumerate(topo.links) if link.cls == "agg-core")
    link = topo.links[up]
    loads = report.link_loads(topo, {link.a: {"tx": 5, "rx": 7}, link.b: {"tx": 7, "rx": 5},
                                     "not-an-intf": {"tx": 1, "rx": 1}})
    assert loads[up] == 12 and sum(loads) == 12
    assert report.busy_switches(topo, {}, loads) == {topo.intfs[link.a].node, topo.intfs[link.b].node}


@pytest.mark.unit
def test_layouts_follow_the_structure():
    bc = build("bcube,n=4,k=2", bw=20)
    pos = report.layout(bc)
    assert [pos[f"h{a}{b}"] for a in range(4) for b in range(4)][:3] == [(0, 0), (1, 0), (2, 0)]
    assert {pos[s][1] for s in bc.switches() if s.startswith("s0_")} == {1}
    assert {pos[s][1] for s in bc.switches() if s.startswith("s1_")} == {2}
    ft = build("fattree,k=4", bw=20)
    pos = report.layout(ft)
    rows = {role: {pos[n][1] for n, v in ft.nodes.items() if v.role == role}
            for role in ("server", "edge", "agg", "core")}
    assert rows == {"server": {0}, "edge": {1}, "agg": {2}, "core": {3}}
    assert pos["h0_0_2"][0] < pos["h1_0_2"][0] and pos["e0_0"][0] < pos["e3_1"][0]


@pytest.mark.unit
def test_syncbed_report_writes_the_report(tmp_path):
    folder = make_folder(tmp_path)
    out = subprocess.run([sys.executable, "-m", "emulation.cli", "report", str(folder)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(folder / "report.md") and (folder / "report.md").is_file()


def rundata(index: int, **run) -> report.RunData:
    return report.RunData(index, {"topology": "fattree(4)", "workers": 8, "status": "ok", **run}, None)


@pytest.mark.unit
def test_results_columns_come_from_the_sets_that_apply():
    plain = [rundata(1, algorithm="ring", sync_seconds=[1.0])]
    header, rows, problems = report.results_table(plain)
    assert header[:3] == ["#", "topology", "algorithm"]
    assert header[-4:] == ["correct", "faithful", "failed checks", "status"]
    assert "predicted iteration s" not in header and problems == []
    runs = [rundata(1, algorithm="topk", algo_spec="topk,density=0.01", sync_seconds=[1.0]),
            rundata(2, algorithm="mgwfbp", iteration_seconds=[2.0, 2.2, 2.4], predicted_iteration_seconds=2.0)]
    header, rows, problems = report.results_table(runs)
    assert problems == []
    assert header.count("algorithm") == 1 and header.index("algorithm") == 2  # the spec took its place
    assert [r[2] for r in rows] == ["topk,density=0.01", "mgwfbp"]
    at = header.index("median iteration s")
    assert header[at:at + 4] == ["median iteration s", "predicted iteration s", "iteration measured/predicted",
                                 "simulated iteration s"]
    assert header[at - 1] == "simulated/measured" and rows[1][at:at + 4] == ["2.200", "2.000", "1.10", "–"]
    assert rows[0][at:at + 4] == ["–", "–", "–", "–"]


@pytest.mark.unit
def test_a_broken_column_set_is_left_out_with_a_problem():
    def cells(rd):
        return ["only one"]
    bad = report.ColumnSet("bad", columns.always, ("a", "b"), cells)
    header, rows, problems = report.results_table([rundata(1, algorithm="ring")], report.COLUMN_SETS + [bad])
    assert "a" not in header and len(rows[0]) == len(header)
    assert problems == ["results column set 'bad' left out: its cells do not match its 2 column(s)"]
    with pytest.raises(ValueError, match="needs a name and at least one column title"):
        report.ColumnSet("empty", columns.always, (), cells)


@pytest.mark.unit
def test_a_report_without_redrawing_keeps_the_figures_and_redoes_the_tables(tmp_path):
    folder = make_folder(tmp_path)
    drawn = report.write_report(folder).read_text()
    pngs = sorted((folder / "plots").glob("*.png"))
    stamps = {p: p.stat().st_mtime_ns for p in pngs}
    summary = json.loads((folder / "summary.json").read_text())
    summary["runs"][0]["sync_seconds"] = [9.0, 9.0, 9.0]  # a verdict changes; the figures are not redrawn
    (folder / "summary.json").write_text(json.dumps(summary))
    text = report.write_report(folder, redraw=False).read_text()
    assert "| 9.000 |" in text and "| 9.000 |" not in drawn
    plots = lambda t: t[t.index("## Plots"):t.index("## How to read")]  # noqa: E731
    assert plots(text) == plots(drawn)
    assert {p: p.stat().st_mtime_ns for p in pngs} == stamps
    # a figure the report links is gone: every figure is drawn again
    pngs[0].unlink()
    assert report.write_report(folder, redraw=False).read_text().count("](plots/") == drawn.count("](plots/")
    assert pngs[0].exists()
    # no report yet: drawn as without the option
    (folder / "report.md").unlink()
    assert plots(report.write_report(folder, redraw=False).read_text()) == plots(drawn)
