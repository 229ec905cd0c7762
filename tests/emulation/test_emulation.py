"""Emulation tier: real Open vSwitch (userspace), Ryu, Mininet, tc, Gloo workers, tcpdump.

Every test drives the `syncbed` command as a user would and then checks the results
folder and that nothing is left behind (bridges, interfaces, processes). Needs root
and the emulator to itself; run one suite at a time per machine.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(os.geteuid() != 0, reason="emulation tests need root")]


def syncbed(*args, timeout=900, **kw):
    return subprocess.run([sys.executable, "-m", "emulation.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, **kw)


def results(out: Path) -> tuple[Path, dict]:
    folders = sorted(p for p in out.iterdir() if p.is_dir())
    assert folders, f"no results folder in {out}"
    return folders[-1], json.loads((folders[-1] / "summary.json").read_text())


def leftovers() -> list[str]:
    left = []
    br = subprocess.run(["ovs-vsctl", "list-br"], capture_output=True, text=True).stdout.split()
    if br:
        left.append(f"bridges {br}")
    intfs = re.findall(r"\d+: ([\w]+-eth\d+)", subprocess.run(["ip", "-o", "link"], capture_output=True,
                                                               text=True).stdout)
    if intfs:
        left.append(f"interfaces {intfs[:5]}")
    procs = subprocess.run(["pgrep", "-fa", "workloads.worker --(job|pool)|controllers.ryu_main|tcpdump -i any|"
                            "iperf3 -[sc] |emulation.analysis|workloads.zygote"],
                           capture_output=True, text=True).stdout.strip().splitlines()
    procs = [x for x in procs if not re.search(r"--nics lo( |$)", x)]  # Gloo on localhost: not an emulation's
    if procs:
        left.append(f"processes {procs[:3]}")
    return left


def check_run(run: dict, algorithms_exact=True):
    assert run["status"] == "ok", run.get("error")
    assert run["correct"], f"{run['algorithm']}: result differs from the all-reduce sum"
    assert len(run["sync_seconds"]) == run["iters"]
    assert all(s > 0 for s in run["sync_seconds"])
    assert run["bound_seconds"] > 0
    pr = run["payload_ratio"]
    assert pr["unexpected"] == [], f"traffic where the algorithm sends none: {pr['unexpected'][:4]}"
    assert 0.97 <= pr["min"] and pr["max"] <= 1.03, f"{run['algorithm']}: payload ratio {pr}"
    assert run["switches_with_traffic"] >= 1


@pytest.fixture(autouse=True)
def clean_machine():
    assert not leftovers(), f"the machine is not clean before the test: {leftovers()}"
    yield
    left = leftovers()
    subprocess.run([sys.executable, "-m", "emulation.cli", "clean"], cwd=ROOT, capture_output=True)
    assert not left, f"left behind: {left}"


def test_fattree_end_to_end(tmp_path):
    p = syncbed("run", "--topo", "fattree,k=4", "--algo", "gloo,ring,ps", "--workers", "16",
                "--model", "synthetic,mb=1", "--iters", "2", "--warmup", "1", "--bw", "20", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr[-2000:]
    folder, summary = results(tmp_path)
    assert summary["status"] == "ok"
    assert [r["algorithm"] for r in summary["runs"]] == ["gloo", "ring", "ps"]
    for run in summary["runs"]:
        check_run(run)
        assert run["switches_total"] == 20
        assert run["workers"] == 16
    # every worker talks to every other in PS: all 20 switches carry gradient bytes
    assert summary["runs"][2]["switches_with_traffic"] == 20
    assert (folder / "report.md").read_text().startswith("#")
    assert list((folder / "plots").glob("*.png"))
    run_dir = folder / summary["runs"][1]["dir"]
    assert (run_dir / "capture.pcap").stat().st_size > 0
    calib = summary["networks"][0]["calibration"]["classes"]
    assert set(calib) == {"host", "edge-agg", "agg-core"}
    for c in calib.values():
        assert 0.8 <= c["ratio"] <= 1.05, c


def test_bcube_end_to_end_with_relays_and_bml(tmp_path):
    p = syncbed("run", "--topo", "bcube,n=3,k=2", "--algo", "bml,ring,ps", "--model", "synthetic,mb=1",
                "--iters", "2", "--bw", "20", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr[-2000:]
    folder, summary = results(tmp_path)
    bml, ring, ps = summary["runs"]
    for run in summary["runs"]:
        check_run(run)
        assert run["switches_total"] == 6
    # BML: every NIC of every server carries the same share, 2(N-1)M/(kN) per sync
    n_syncs = bml["iters"] + bml["warmup"]
    share = 2 * 8 * bml["gradient_bytes"] / (2 * 9) * n_syncs
    for nic, e in bml["payload_bytes_expected"].items():
        assert abs(e["tx"] - share) / share < 0.01, (nic, e)
    # ring in rank order on BCube needs relays: some level-1 NICs carry forwarded bytes
    relayed = [n for n, e in ring["payload_bytes_expected"].items() if n.endswith("-eth1") and e["tx"] > 0]
    assert relayed
    events = [json.loads(x) for x in (folder / bml["dir"] / "workers" / "rank0.jsonl").read_text().splitlines()]
    assert sum(e["event"] == "stage" for e in events) >= 4 * (bml["iters"] + bml["warmup"])


def test_bcube_many_tensors_every_port_carries_exactly_the_closed_form(tmp_path):
    """Issue #19 section 1: with many tensors per sync (WFBP's per-layer all-reduces, MG-WFBP's
    groups, ring and Gloo's segments), Gloo's receiver notifications (48 B per message) travel
    the reverse route, which on BCube relays through another server than the data. Laid
    beside the data, they showed as payload on NICs the closed form gave none (h00-eth1,
    h10-eth1, ...) and as less than expected on the relays of the data. Every NIC is now
    checked to the byte: nothing where nothing is expected, and within 0.01% elsewhere."""
    p = syncbed("run", "--topo", "bcube,n=3,k=2", "--algo", "ring,wfbp,mgwfbp,gloo",
                "--model", "synthetic,mb=1,layers=48", "--iters", "2", "--warmup", "1", "--bw", "20",
                "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr[-2000:]
    _, summary = results(tmp_path)
    assert [r["algorithm"] for r in summary["runs"]] == ["ring", "wfbp", "mgwfbp", "gloo"]
    for run in summary["runs"]:
        check_run(run)
        assert run["link_ratio"]["unexpected"] == [], run["link_ratio"]["unexpected"][:4]
        expected, measured = run["payload_bytes_expected"], run["payload_bytes_measured"]
        for nic, e in expected.items():
            for d in ("tx", "rx"):
                m = measured.get(nic, {}).get(d, 0)
                if e[d] == 0:
                    assert m == 0, f"{run['algorithm']}: {m} B on {nic}:{d}, where the closed form has none"
                else:
                    assert abs(m - e[d]) <= 1e-4 * e[d], f"{run['algorithm']}: {nic}:{d} {m} B, expected {e[d]} B"


def test_worker_crash_fails_cleanly_and_keeps_partial_results(tmp_path):
    p = syncbed("run", "--topo", "bcube,n=2,k=2", "--algo", "ring", "--model", "synthetic,mb=1",
                "--iters", "3", "--no-calibrate", "--inject-crash", "2:1", "--timeout", "60", "--out", str(tmp_path))
    assert p.returncode == 1, p.stdout[-1000:] + p.stderr[-1000:]
    assert "rank 2" in p.stderr
    folder, summary = results(tmp_path)
    assert summary["status"] == "failed"
    run = summary["runs"][0]
    assert run["status"] == "failed" and "rank 2" in run["error"]
    assert (folder / "report.md").read_text().lstrip().startswith("# FAILED")
    # the machine is usable again right away
    p2 = syncbed("run", "--topo", "bcube,n=2,k=2", "--algo", "gloo", "--model", "synthetic,mb=1", "--iters", "1",
                 "--no-calibrate", "--out", str(tmp_path / "again"))
    assert p2.returncode == 0, p2.stderr[-1000:]


def interrupt(tmp_path, sig, after="iter 4/", ignore_sigint=False):
    """Start a long ring run, send `sig` once rank 0 printed `after`; (exit code, output).
    ignore_sigint: start it as a shell script in the background does, with SIGINT ignored."""
    proc = subprocess.Popen([sys.executable, "-m", "emulation.cli", "run", "--topo", "bcube,n=2,k=2", "--algo", "ring",
                             "--model", "synthetic,mb=2", "--iters", "30", "--no-calibrate", "--out", str(tmp_path)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None)
    seen = []
    try:
        deadline = time.time() + 240
        for line in proc.stdout:
            seen.append(line)
            if after in line or time.time() > deadline:
                break
        assert any(after in x for x in seen), "".join(seen)
        proc.send_signal(sig)
        rest = proc.communicate(timeout=120)[0]
    finally:
        if proc.poll() is None:  # did not stop: kill our own child, the fixture cleans up after it
            proc.kill()
            proc.wait()
    return proc.returncode, "".join(seen) + rest


def check_interrupted(tmp_path, signame):
    """The stopped run is listed, failed, with the iterations that finished and their byte
    verdict (expected bytes x completed syncs against the capture up to the last of them)."""
    folder, summary = results(tmp_path)
    assert summary["status"] == "failed" and summary["error"] == f"interrupted ({signame})"
    [run] = summary["runs"]
    assert run["status"] == "failed" and run["error"].startswith(f"interrupted ({signame}); ")
    done = run["iters_completed"]
    assert 2 <= done < run["iters"], run["error"]
    assert f"{done} of 30 iterations completed" in run["error"]
    assert run["syncs_counted"] == done + run["warmup"]
    assert run["correct"] and len(run["sync_seconds"]) >= done
    pr = run["payload_ratio"]
    assert pr["unexpected"] == [] and 0.97 <= pr["min"] and pr["max"] <= 1.03, pr
    assert run["payload_ok"] and run["links_ok"]
    assert (folder / "report.md").exists()
    return folder, run


def test_sigterm_keeps_the_finished_iterations(tmp_path):
    """Issue #6 §5: a run stopped by SIGTERM kept its raw files, but summary.json listed no run
    and `syncbed analyze` recovered nothing."""
    code, out = interrupt(tmp_path, signal.SIGTERM)
    assert code == 130, out
    folder, run = check_interrupted(tmp_path, "SIGTERM")
    # the same verdict again from the files alone
    p = syncbed("analyze", str(folder))
    assert p.returncode == 0, p.stderr
    [again] = json.loads((folder / "summary.json").read_text())["runs"]
    for key in ("status", "error", "iters_completed", "syncs_counted", "payload_ok", "links_ok",
                "payload_bytes_expected", "payload_bytes_measured"):
        assert again[key] == run[key], key


def test_sigint_stops_a_run_started_with_sigint_ignored(tmp_path):
    """A script that starts syncbed in the background leaves SIGINT ignored; syncbed installs
    its own handler, so SIGINT stops the run as Ctrl-C does, keeping what finished."""
    code, out = interrupt(tmp_path, signal.SIGINT, ignore_sigint=True)
    assert code == 130, out
    check_interrupted(tmp_path, "SIGINT")


def test_second_run_is_refused_while_one_holds_the_lock(tmp_path):
    from emulation.state import Lock

    with Lock("test holder"):
        p = syncbed("run", "--topo", "bcube,n=2,k=2", "--algo", "gloo", "--model", "synthetic,mb=1",
                    "--out", str(tmp_path))
    assert p.returncode == 2
    assert "another syncbed run is active" in p.stderr and "test holder" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_bml_link_down_ends_within_timeout_naming_the_link(tmp_path):
    t0 = time.time()
    p = syncbed("run", "--topo", "bcube,n=2,k=2", "--algo", "bml", "--model", "synthetic,mb=8", "--iters", "30",
                "--no-calibrate", "--timeout", "40", "--link-down", "h00-eth1@10", "--out", str(tmp_path))
    elapsed = time.time() - t0
    assert p.returncode == 1, p.stdout[-1500:] + p.stderr[-1500:]
    assert "h00-eth1" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    # network start + workers' start-up + the 40 s timeout + analysis and teardown
    assert elapsed < 150, f"took {elapsed:.0f} s"
    folder, summary = results(tmp_path)
    assert summary["status"] == "failed"
    run = summary["runs"][0]
    assert run["status"] == "failed" and "h00-eth1" in run["error"]
    assert json.loads((folder / "faults.json").read_text())["link_down"] == "h00-eth1"
    # partial results stay: the iterations before the fault were measured and correct
    assert run["sync_seconds"], "the iterations before the fault are kept"


def test_ps_on_dedicated_servers_matches_its_closed_form(tmp_path):
    """PS on S dedicated hosts: each worker pushes and pulls M, each server moves NM/S each way."""
    p = syncbed("run", "--topo", "fattree,k=4", "--algo", "ps", "--workers", "8", "--servers", "2",
                "--model", "synthetic,mb=1", "--iters", "1", "--no-calibrate", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr[-2000:]
    _, summary = results(tmp_path)
    run = summary["runs"][0]
    check_run(run)
    assert run["workers"] == 8 and run["servers"] == 2
    syncs = run["iters"] + run["warmup"]
    m = run["gradient_bytes"]
    expected = run["payload_bytes_expected"]
    servers = [f"{h}-eth0" for h in run["hosts"][8:]]
    for nic in servers:  # data only: framing is a few hundred bytes per MiB
        assert abs(expected[nic]["rx"] / syncs - 8 * m / 2) / (8 * m / 2) < 0.01
    for nic in (f"{h}-eth0" for h in run["hosts"][:8]):
        assert abs(expected[nic]["tx"] / syncs - m) / m < 0.01


def test_fattree_k6_starts_and_runs_a_ring_across_pods(tmp_path):
    """Issue #6 §5: Fat-Tree k=6 failed at network start ("configuring h0_0_2 failed: Device and
    destination are required arguments."). Each host's 53 static ARP entries went to its shell
    as one command line, which Mininet's pty cuts at 4095 characters; hosts now run a short
    script and `ip -batch`. The bug was the network's, so 8 workers spread over the pods
    suffice: 32 workers took 74-94 s, 8 take 45 s on a quiet machine (network ready in 20 s,
    all pairs reachable in 3 s) and up to 77 s while other jobs load it."""
    t0 = time.time()
    p = syncbed("run", "--topo", "fattree,k=6", "--algo", "ring", "--workers", "8", "--placement", "spread",
                "--model", "synthetic,mb=1", "--bw", "10", "--iters", "1", "--warmup", "0", "--no-calibrate",
                "--out", str(tmp_path))
    assert p.returncode == 0, p.stdout[-1500:] + p.stderr[-1500:]
    _, summary = results(tmp_path)
    [run] = summary["runs"]
    check_run(run)
    assert (run["workers"], run["switches_total"]) == (8, 45)
    assert len({h.split("_")[0] for h in run["hosts"]}) == 3  # spread: one per edge switch, pods 0-2
    # the ring crosses pods: core switches carry it
    assert any(s.startswith("c") for s in run["switches_used"]), run["switches_used"]
    assert run["link_ratio"]["within_tolerance"], run["link_ratio"]
    # not calibrated: never called faithful
    assert run["faithful"] is not True and "links" in run["fidelity"]["unverified"]
    print(f"fattree k=6, 8 workers: {time.time() - t0:.0f} s")


def test_layerwise_sparse_and_block_sparse_algorithms_end_to_end(tmp_path):
    """One network for the second floor's families: mgwfbp (the link probe measures a and b
    first, the plan is re-made with them), gtopk (its own reference oracle every iteration)
    and dfs (data-dependent bytes: the capture against what the ranks logged)."""
    p = syncbed("run", "--topo", "fattree,k=4", "--algo", "mgwfbp,gtopk,density=0.01,dfs,density=0.05",
                "--workers", "4", "--placement", "spread", "--model", "synthetic,mb=1,layers=8,compute_ms=200",
                "--iters", "2", "--warmup", "1", "--bw", "20", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr[-2000:]
    folder, summary = results(tmp_path)
    assert [r["algo_spec"] for r in summary["runs"]] == ["mgwfbp", "gtopk,density=0.01", "dfs,density=0.05"]
    for run in summary["runs"]:
        check_run(run)
    mg, gt, dfs = summary["runs"]
    probe = summary["networks"][0]["link_probes"][0]
    assert probe["model"]["beta"] > 0 and mg["alpha_seconds"] == probe["model"]["alpha"]
    assert mg["link_provisional"] is False and mg["predicted_iteration_seconds"] > 0
    assert gt["k"] == 2622 and gt["data_dependent"] is False
    assert dfs["data_dependent"] is True
    # sparse: far fewer bytes than the dense gradient's ring (2(N-1)/N x 1 MiB per worker)
    assert gt["data_bytes_per_sync"] < 0.1 * 4 * 2 * 0.75 * 2**20
    assert len(probe["points"]) >= 3 and probe["model"]["r2"] > 0.9


def test_background_flows_are_kept_apart_and_workers_are_reused(tmp_path):
    """Two concurrent-job flows across pods while ring, gloo and forest run on pod 0 (issue #6
    §2, §6; issue #10 scenario 4 in small): the gradient bytes still match the closed form, the
    background bytes are reported apart, the forest was planned again on the flows' rates as
    probed before its workers started, and all runs were carried out by the same worker
    processes (one pool)."""
    p = syncbed("run", "--topo", "fattree,k=4", "--algo", "ring,gloo,forest", "--workers", "4", "--model", "synthetic,mb=1",
                "--iters", "2", "--bw", "20", "--no-calibrate", "--background", "h1_0_2:h2_0_2",
                "--background", "h1_1_2:h3_1_2:5", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr[-2000:]
    assert "background: 2 flow(s) running" in p.stdout
    folder, summary = results(tmp_path)
    pids = []
    for run in summary["runs"]:
        check_run(run)  # background bytes are not held against the algorithm's closed form
        bg = run["background"]
        by_src = {f["src"]: f for f in bg["flows"]}
        assert set(by_src) == {"h1_0_2", "h1_1_2"}
        assert by_src["h1_0_2"]["bytes"] > 100_000, bg  # unlimited: it takes what the links leave
        assert 0 < by_src["h1_1_2"]["mbps_mean"] <= 5.5, bg  # paced by iperf3 at 5 Mbit/s
        assert not {"h1_0_2", "h2_0_2", "h1_1_2", "h3_1_2"} & set(run["hosts"])
        events = [json.loads(x) for x in (folder / run["dir"] / "workers" / "rank0.jsonl").read_text().splitlines()]
        pids.append(next(e["pid"] for e in events if e["event"] == "start"))
    assert pids[0] == pids[1] == pids[2], "later runs should reuse the first run's worker processes"
    forest = summary["runs"][2]
    assert forest["algorithm"] == "forest" and forest["background_source"] == "measured before the run"
    measured = {f["src"]: f["measured_mbps"] for f in forest["background_flows"]}
    assert measured["h1_0_2"] > 1 and 0 < measured["h1_1_2"] <= 5.5, measured
    assert "background probe:" in p.stdout
    assert "background MB sent" in (folder / "report.md").read_text()
