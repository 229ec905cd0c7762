"""Emulation tier, several servers (issue #22): two "servers" on this machine
(scripts/two_servers.sh: server 2 is a network and mount namespace with its own Open vSwitch
and sshd, joined by a veth underlay), one experiment split over them by Mininet's cluster
edition with VXLAN between them. Real OVS, Ryu, tc, Gloo workers and tcpdump on both.
"""
from __future__ import annotations

import json
import subprocess

import pytest

from emulation.calibrate import TOLERANCE

from tests.emulation.test_emulation import ROOT, check_run, clean_machine, leftovers, results, syncbed  # noqa: F401

pytestmark = pytest.mark.emulation
SSH_CONFIG = "/run/syncbed/two-servers/ssh_config"
SERVERS = "10.99.0.1,10.99.0.2"


def on_server2(cmd: str) -> str:
    return subprocess.run(["ssh", "-F", SSH_CONFIG, "10.99.0.2", cmd], capture_output=True, text=True,
                          timeout=60).stdout


def server2_leftovers() -> list[str]:
    left = []
    if on_server2("ovs-vsctl list-br").split():
        left.append("bridges on server 2")
    if "-eth" in on_server2("ip -o link"):
        left.append("interfaces on server 2")
    if on_server2("grep -l '^SYNCBED_RUN=' /proc/[0-9]*/environ 2>/dev/null | grep -v self").strip():
        left.append("processes marked SYNCBED_RUN")
    return left


@pytest.fixture(scope="module")
def two_servers():
    up = subprocess.run(["bash", "scripts/two_servers.sh", "up"], cwd=ROOT, capture_output=True, text=True,
                        timeout=120)
    assert up.returncode == 0, up.stderr[-1000:]
    yield ["--cluster", SERVERS, "--ssh-config", SSH_CONFIG]
    subprocess.run(["bash", "scripts/two_servers.sh", "down"], cwd=ROOT, capture_output=True, timeout=120)


def check_cluster(folder, summary, topo_crossing_class):
    info = summary["cluster"][0]
    assert [s["name"] for s in info["servers"]] == SERVERS.split(",")
    assert info["crossing_links"] and {c[2] for c in info["crossing_links"]} == {topo_crossing_class}
    off = info["clock_offsets"]["10.99.0.2"]
    assert abs(off["offset"]) <= off["error"] + 1e-3, off  # one kernel clock: zero within the bound
    calib = summary["networks"][0]["calibration"]["classes"]
    # the tunnel is shaped like any link: within the project's calibration band (Mininet's own
    # tests accept 20%), not a tighter timing target (0.937 was measured on a busy CI machine)
    lo, hi = TOLERANCE
    assert "crossing" in calib and lo <= calib["crossing"]["ratio"] <= hi and calib["crossing"]["ok"], calib["crossing"]
    assert not server2_leftovers(), server2_leftovers()


def check_pool(folder, summary):
    """One worker pool served every run, with one fork server on each server (its own folder
    under pools/pool1/): each rank's process (the pid its log's start event names) is the one its
    server's fork server forked, the same in every run, and server 2's CPU monitor counted its
    ranks there as workers."""
    runs = summary["runs"]
    hosts = runs[0]["hosts"]
    placement = summary["cluster"][0]["placement"]
    pools = folder / "pools"
    assert sorted(p.name for p in pools.iterdir()) == ["pool1"], "one pool for every run on the same hosts"
    forked, on = {}, {}
    for k, server in enumerate(SERVERS.split(",")):
        ranks = [r for r, h in enumerate(hosts) if h in placement[server]]
        assert ranks, f"no rank on {server}: the test must split the workers over both servers"
        fork = pools / "pool1" / f"server{k}"
        assert [s["rank"] for s in json.loads((fork / "ranks.json").read_text())] == ranks
        forked.update({int(r): pid for r, pid in json.loads((fork / "pids.json").read_text()).items()})
        on[k] = ranks
    assert sorted(forked) == list(range(len(hosts)))
    for run in runs:
        assert run["hosts"] == hosts
        for r in range(len(hosts)):
            events = [json.loads(x) for x in (folder / run["dir"] / "workers" / f"rank{r}.jsonl").read_text().splitlines()]
            assert next(e["pid"] for e in events if e["event"] == "start") == forked[r], (run["algorithm"], r)
        cpu2 = json.loads((folder / run["dir"] / "cpu-server1.json").read_text())
        assert cpu2["workers"] == len(on[1]), cpu2["workers"]


def test_bcube_over_two_servers(tmp_path, two_servers):
    p = syncbed("run", "--topo", "bcube,n=3,k=2", "--algo", "bml,ring", "--model", "synthetic,mb=1",
                "--iters", "2", "--bw", "20", "--out", str(tmp_path), *two_servers)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    folder, summary = results(tmp_path)
    assert summary["status"] == "ok", summary["error"]
    for run in summary["runs"]:
        check_run(run)  # the oracle and every port's bytes, the crossing ones included
    check_cluster(folder, summary, "level1")
    check_pool(folder, summary)  # both runs by the same processes, forked on their own server


def test_fattree_over_two_servers(tmp_path, two_servers):
    p = syncbed("run", "--topo", "fattree,k=4", "--algo", "gloo,ps,gtopk", "--workers", "16",
                "--model", "synthetic,mb=1", "--iters", "2", "--bw", "20", "--ecmp", "two-level",
                "--out", str(tmp_path), *two_servers)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    folder, summary = results(tmp_path)
    assert summary["status"] == "ok", summary["error"]
    for run in summary["runs"]:
        check_run(run)
    check_cluster(folder, summary, "agg-core")
    check_pool(folder, summary)


def test_a_real_setting_and_background_flows_across_two_servers(tmp_path, two_servers):
    """MG-WFBP standing for the authors' 8-node cluster: the link probe's all-reduce crosses
    the servers, the stand-in scales the model from it, and the plan's groups run there, beside
    background iperf3 flows, one crossing the servers and one on server 2 only."""
    exp = tmp_path / "real.yaml"
    exp.write_text("topologies: [\"fattree,k=4\"]\nalgorithms: [mgwfbp]\nworkers: 8\nplacement: spread\n"
                   "model: resnet20\nreal_setting: {name: 8 nodes, alpha: 0.523e-3, beta: 8.57e-10}\n"
                   "bw: 20\necmp: two-level\niters: 2\nwarmup: 1\n"
                   "background: [\"h1_0_3:h2_0_3:5\", \"h3_0_3:h3_1_3:5\"]\n")
    p = syncbed("run", str(exp), "--out", str(tmp_path / "out"), *two_servers)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    folder, summary = results(tmp_path / "out")
    assert summary["status"] == "ok", summary["error"]
    probe = summary["networks"][0]["link_probes"][0]
    assert probe["ok"] and probe["workers"] == 8, probe
    (run,) = summary["runs"]
    assert run["real_setting"]["name"] == "8 nodes" and run["time_dilation"] > 1, run
    check_run(run)
    flows = run["background"]["flows"]
    assert len(flows) == 2 and all(f["bytes"] > 0 for f in flows), flows
    check_cluster(folder, summary, "agg-core")  # no iperf3 or other marked process left there


def test_a_server_that_does_not_answer_is_refused_before_anything_starts(tmp_path, two_servers):
    p = syncbed("run", "--topo", "bcube,n=3,k=2", "--algo", "ring", "--model", "synthetic,mb=1",
                "--out", str(tmp_path), "--cluster", "10.99.0.1,10.99.0.3", "--ssh-config", SSH_CONFIG, timeout=120)
    assert p.returncode == 2
    assert "10.99.0.3" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not leftovers() and not server2_leftovers()


def test_a_killed_run_leaves_nothing_on_either_server_after_clean(tmp_path, two_servers):
    import signal
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-m", "emulation.cli", "run", "--topo", "bcube,n=3,k=2", "--algo", "ring",
                             "--model", "synthetic,mb=1", "--iters", "50", "--bw", "20", "--no-calibrate",
                             "--out", str(tmp_path), *two_servers], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 240
    for line in proc.stdout:  # killed mid-run: workers on both servers, tunnels up
        if "synced in" in line or time.time() > deadline:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert on_server2("ovs-vsctl list-br").split(), "nothing was running on server 2 when the run was killed"
    # the worker pool's fork server there and the ranks it forked carry the run's mark
    folder, _ = results(tmp_path)
    ranks2 = json.loads((folder / "pools" / "pool1" / "server1" / "ranks.json").read_text())
    marked = on_server2("for e in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $e 2>/dev/null | grep -q '^SYNCBED_POOL=' "
                        "&& tr '\\0' '\\n' < $e 2>/dev/null | grep '^SYNCBED_RUN='; done").split()
    assert marked == [f"SYNCBED_RUN={folder.name}"] * (1 + len(ranks2)), marked
    p = syncbed("clean", timeout=300)
    assert p.returncode == 0, p.stderr
    assert not leftovers(), leftovers()
    assert not server2_leftovers(), server2_leftovers()
