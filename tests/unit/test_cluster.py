"""Cluster mode's pure parts (issue #22): the `cluster:` block, the commands that make a VXLAN
end and start a remote process, the cleanup script of another server, and the merge of
several servers' captures into one pcap the analysis reads."""
import struct

import pytest

from emulation import capture, cluster, remote, state
from emulation.pcap import read_counts


def test_parse_accepts_a_list_a_string_and_a_block(tmp_path):
    assert cluster.parse(None) is None
    assert cluster.parse("a,b").servers == ("a", "b")
    assert cluster.parse(["a", "b", "c"]).servers == ("a", "b", "c")
    cfg = tmp_path / "ssh_config"
    cfg.write_text("")
    spec = cluster.parse({"servers": ["a", "b"], "capacity": {"a": 4, "b": 12}, "ssh_config": str(cfg),
                          "placement": {"h0_0_2": "b"}})
    assert spec.capacities() == {"a": 4, "b": 12}
    assert spec.ssh_config == str(cfg)
    assert cluster.parse({"servers": ["a", "b"], "capacity": 8}).capacities() == {"a": 8, "b": 8}


@pytest.mark.parametrize("block, says", [
    ("a", "at least two"),
    (["a", "a"], "twice"),
    ({"servers": ["a", "b"], "nodes": 3}, "unknown key 'nodes'"),
    ({"servers": ["a", "b"], "placement": "random"}, "placement='random' is invalid"),
    ({"servers": ["a", "b"], "placement": {"h0_0_2": "c"}}, "server 'c'"),
    ({"servers": ["a", "b"], "capacity": -1}, "capacity=-1 is invalid"),
    ({"servers": ["a", "b"], "capacity": {"z": 3}}, "capacity names 'z'"),
    ({"servers": ["a", "b"], "ssh_config": "/nonexistent/ssh_config"}, "does not exist"),
    (42, "is invalid"),
])
def test_a_bad_block_is_one_line_saying_what_is_valid(block, says):
    with pytest.raises(cluster.ClusterError) as e:
        cluster.parse(block)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_facts_and_mtu():
    f = cluster.parse_facts("uid=0\nmininet=2.3.0\novs=3.1.0\nnoise\nmtu=9100\n")
    assert f == {"uid": "0", "mininet": "2.3.0", "ovs": "3.1.0", "mtu": "9100"}
    servers = [cluster.Server("a", "10.0.0.1", True, facts={"mtu": "9100"}),
               cluster.Server("b", "10.0.0.2", False, facts={"mtu": "1500"})]
    assert cluster.emulated_mtu(servers, 9000) == 1450  # VXLAN's 50 bytes inside the smallest underlay
    servers[1].facts["mtu"] = "9100"
    assert cluster.emulated_mtu(servers, 9000) == 9000


def test_server_argv_is_local_for_the_first_and_ssh_for_the_others():
    assert cluster.Server("a", "1.2.3.4", True).argv("echo hi") == ["sh", "-c", "echo hi"]
    argv = cluster.Server("b", "1.2.3.5", False, "/x/ssh_config").argv("echo hi")
    assert argv[:3] == ["ssh", "-F", "/x/ssh_config"] and argv[-2:] == ["b", "echo hi"]
    assert "BatchMode=yes" in argv  # never a password prompt


def test_vxlan_end_commands():
    cmds = remote.vxlan_commands("c1_1-eth2", 7, "10.99.0.2", "10.99.0.1", 9000, "00:00:00:00:00:01", 4242)
    assert cmds[0] == ("ip link add name c1_1-eth2 type vxlan id 7 local 10.99.0.2 remote 10.99.0.1 "
                       "dstport 4789 nolearning")
    assert "ip link set c1_1-eth2 mtu 9000" in cmds
    assert "ip link set c1_1-eth2 address 00:00:00:00:00:01" in cmds
    assert cmds[-1] == "ip link set c1_1-eth2 netns 4242"
    assert all(not set(c) & set(";&|<>$") for c in cmds)  # Mininet splits them on blanks locally
    assert not any("address" in c for c in remote.vxlan_commands("x", 1, "a", "b", 1450, None, 1))


def test_remote_command_keeps_what_a_worker_needs_and_marks_the_run():
    line = remote.remote_command(99, ["/r/.venv/bin/python", "-m", "workloads.worker", "job dir"], "run-1",
                                 "/r", {"PATH": "/x", "HOME": "/root", "PYTHONPATH": "/r", "OMP_NUM_THREADS": "1"})
    assert line.startswith("cd /r && exec env ")
    assert "SYNCBED_RUN=run-1" in line and "PYTHONPATH=/r" in line and "OMP_NUM_THREADS=1" in line
    assert "PATH=/x" not in line.replace("PYTHONPATH", "") and "HOME" not in line
    assert line.endswith("mnexec -a 99 /r/.venv/bin/python -m workloads.worker 'job dir'")  # exit status kept


def test_cleanup_script_targets_one_run_or_every_syncbed_run():
    one = state.cleanup_script("run-1", ["a0_2-eth3"])
    assert "^SYNCBED_RUN=run-1" in one and "grep -F -e run-1" in one and "ip link del a0_2-eth3" in one
    every = state.cleanup_script(None)
    assert "^SYNCBED_RUN=" in every and "grep 'syncbed='" in every


def test_cleanup_script_finds_the_bridges_ovs_lists(tmp_path):
    """Open vSwitch's csv quotes a tag with '-' twice over: the script must still pick its bridges."""
    import subprocess
    fake = tmp_path / "ovs-vsctl"
    fake.write_text('#!/bin/sh\ncase "$*" in *list\\ bridge*) printf \'%s\\n\' '
                    '\'s1,"{syncbed=""20261124-233424-experiment""}"\' \'s2,"{syncbed=""other-run""}"\' '
                    '\'s3,{}\';; *del-br*) echo "deleted $4" >> ' + str(tmp_path / "log") + ';; esac\n')
    fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    tag = "20261124-233424-experiment"
    script = "\n".join(line for line in state.cleanup_script(tag).splitlines() if "/proc" not in line)
    # the fake still lists s1 after deleting it: the script says a bridge of the run is left (3)
    assert subprocess.run(["sh", "-c", script], env=env).returncode == 3
    assert (tmp_path / "log").read_text().split() == ["deleted", "s1"]
    (tmp_path / "log").unlink()
    subprocess.run(["sh", "-c", state.cleanup_script(None).splitlines()[1]], env=env, check=True)
    assert (tmp_path / "log").read_text().split() == ["deleted", "s1", "deleted", "s2"]


def _pcap(path, packets):
    """A LINUX_SLL2 pcap: packets [(t, ifindex, payload bytes)] of IPv4/TCP 10.0.0.1 -> 10.0.0.2."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 276))
        for t, ifindex, n in packets:
            ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + n, 0, 0, 64, 6, 0, bytes([10, 0, 0, 1]),
                             bytes([10, 0, 0, 2]))
            tcp = struct.pack(">HHIIBBHHH", 1000, 2000, 1, 0, 0x50, 0x18, 1000, 0, 0)
            sll = struct.pack(">HHIHBB8s", 0x0800, 0, ifindex, 1, 4, 6, b"\0" * 8)
            body = sll + ip + tcp
            sec = int(t)
            f.write(struct.pack("<IIII", sec, int(round((t - sec) * 1e6)), len(body), len(body) + n))
            f.write(body)


def test_merge_keeps_servers_interfaces_apart_and_puts_times_on_the_first_clock(tmp_path):
    a, b, out = tmp_path / "a.pcap", tmp_path / "b.pcap", tmp_path / "out.pcap"
    _pcap(a, [(100.0, 5, 1000), (100.2, 5, 1000)])
    _pcap(b, [(110.1, 5, 500), (110.3, 7, 500)])  # server 1's clock runs 10 s ahead
    assert capture.merge_captures(out, [(a, 0, 0.0), (b, 1, 10.0)]) == 4
    c = read_counts(out)
    stride = capture.IFINDEX_STRIDE
    assert c.per_if[(5, "tx")]["payload_bytes"] == 2000
    assert c.per_if[(stride + 5, "tx")]["payload_bytes"] == 500
    assert c.per_if[(stride + 7, "tx")]["payload_bytes"] == 500
    assert c.t_first == pytest.approx(100.0) and c.t_last == pytest.approx(100.3)  # in time order


def test_merge_refuses_another_link_type(tmp_path):
    p = tmp_path / "eth.pcap"
    p.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
    with pytest.raises(ValueError, match="LINUX_SLL2"):
        capture.merge_captures(tmp_path / "out.pcap", [(p, 1, 0.0)])


def test_calibration_adds_the_closest_pair_through_a_crossing_link():
    from emulation.calibrate import calibration_pairs, path_links
    from topologies import spec
    from topologies.placement import place_on_servers

    topo = spec.build("fattree,k=4", bw=20, ecmp="two-level")
    crossing = place_on_servers(topo, ["a", "b"]).crossing
    pairs = calibration_pairs(topo, crossing)
    assert set(pairs) == {"host", "edge-agg", "agg-core", "crossing"}
    src, dst, _, _ = pairs["crossing"]
    tunnels = {(link.a, link.b) for link in crossing}
    assert any((link.a, link.b) in tunnels for link in path_links(topo, src, dst))
    assert "crossing" not in calibration_pairs(topo)


def test_a_clock_bound_over_five_percent_of_the_sync_is_not_faithful():
    from emulation.analysis import fidelity

    calib = {"classes": {"host": {"ok": True, "ratio": 1.0, "measured_mbps": 20, "configured_mbps": 20}}}
    clocks = {"b": {"offset": 0.0, "error": 0.004, "rtt": 0.008, "n": 20, "server": "b"}}
    fine = fidelity(calib, None, None, None, clocks=clocks, median_sync=0.2)
    assert not any("clock" in r for r in fine["reasons"]) and "cluster_cpu" in fine["unverified"]  # no cpu-server*.json
    bad = fidelity(calib, None, None, None, clocks=clocks, median_sync=0.05)
    assert bad["faithful"] is False and any("b" in r and "5%" in r for r in bad["reasons"])


def test_marked_kill_script_stops_only_the_runs_processes_with_the_mark():
    """A background iperf3 on another server outlives its ssh; the script that stops it must
    kill exactly the run's processes carrying the mark (real processes, this machine)."""
    import os
    import subprocess
    import time

    from emulation.state import marked_kill_script

    def sleeper(**env):
        return subprocess.Popen(["sleep", "60"], env=dict(os.environ, **env))

    target = sleeper(SYNCBED_RUN="run-a", SYNCBED_BACKGROUND="1")
    same_run = sleeper(SYNCBED_RUN="run-a")
    other_run = sleeper(SYNCBED_RUN="run-ab", SYNCBED_BACKGROUND="1")
    try:
        subprocess.run(["sh", "-s"], input=marked_kill_script("run-a", "SYNCBED_BACKGROUND"), text=True,
                       check=True, timeout=30)
        time.sleep(0.2)
        assert target.wait(5) == -15
        assert same_run.poll() is None and other_run.poll() is None
    finally:
        for p in (target, same_run, other_run):
            p.kill()
            p.wait()
