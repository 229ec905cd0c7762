"""A worker pool over several servers (issue #22): which ranks each server's fork server holds,
how a rank forked on another server is known to live or to have died (its exit file and its
fork server's ssh, never this machine's /proc), how the pool stops there, and which processes
another server's CPU monitor counts as workers. The pool's own test drives `workers.Pool` with a
stand-in network whose "remote" hosts run a small fork server here (no torch, no Mininet)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from emulation import workers
from emulation.monitor import is_worker
from emulation.state import marked_kill_script


def test_one_machine_has_one_fork_server_with_every_rank():
    assert workers.fork_servers([None] * 4) == [(None, [0, 1, 2, 3])]
    assert workers.fork_servers([]) == [(None, [])]


def test_one_fork_server_per_server_that_holds_ranks():
    assert workers.fork_servers([1, 0, 1, 1, 0]) == [(0, [1, 4]), (1, [0, 2, 3])]
    assert workers.fork_servers([2, 2]) == [(2, [0, 1])]  # a server without ranks has none
    with pytest.raises(ValueError):
        workers.fork_servers([0, None])


class _Ended:
    def __init__(self, code):
        self.code = code

    def poll(self):
        return self.code


def test_a_remote_rank_lives_while_its_fork_servers_ssh_runs_and_it_has_no_exit_file(tmp_path):
    exit_file = tmp_path / "exit3"
    running = workers._RemoteForked(os.getpid() + 10**7, exit_file, _Ended(None))
    assert running.poll() is None  # a pid absent here says nothing: it is another server's
    exit_file.write_text("-9")  # its zygote reaped it
    assert running.poll() == -9
    assert workers._RemoteForked(1, exit_file, _Ended(0)).poll() == -9  # the file, not the ssh's code
    exit_file.unlink()
    dead = workers._RemoteForked(os.getpid(), exit_file, _Ended(255))  # a pid alive here says nothing either
    assert dead.poll() == -1  # the zygote is gone and nobody reaped the rank
    with pytest.raises(TimeoutError):
        running.wait(0.1)


def test_the_ssh_is_read_before_the_exit_file():
    """The zygote writes a rank's exit file before it exits: an ssh seen ended after a missing
    file could be a rank that ended well, so the ssh is read first."""
    order = []

    class File:
        def exists(self):
            order.append("file")
            return False

    class Ssh:
        def poll(self):
            order.append("ssh")
            return None

    assert workers._RemoteForked(1, File(), Ssh()).poll() is None
    assert order == ["ssh", "file"]


def test_another_servers_monitor_counts_pool_workers_but_not_their_fork_server():
    env = b"PATH=/bin\0SYNCBED_RUN=run-a\0SYNCBED_POOL=pool1\0"
    zygote = b"/v/bin/python\0-m\0workloads.zygote\0/r/pools/pool1/server1\0"
    shell = b"sh\0-c\0cd /r && exec env SYNCBED_RUN=run-a mnexec -a 7 python -m workloads.zygote /r\0"
    assert is_worker(env, zygote, zygote, "run-a")  # forked by the fork server
    assert not is_worker(env, zygote, b"sshd: root@notty\0", "run-a")  # the fork server itself
    assert not is_worker(env, zygote, shell, "run-a")  # a shell that names it is not one
    assert not is_worker(env, zygote, zygote, "run-ab")  # another run's
    assert not is_worker(b"PATH=/bin\0SYNCBED_RUN=run-ab\0", zygote, zygote, "run-a")
    assert is_worker(env, b"/v/bin/python\0-m\0workloads.worker\0--job\0j\0", b"", "run-a")  # its own process


def test_the_kill_script_sends_the_signal_asked_for():
    assert "kill -KILL " in marked_kill_script("r", "SYNCBED_POOL", "KILL")
    assert "kill -TERM " in marked_kill_script("r", "SYNCBED_POOL")
    with pytest.raises(ValueError):
        marked_kill_script("r", "SYNCBED_POOL", "9; rm -rf /")


# ---- the pool with a stand-in network -------------------------------------------------------
# A fork server like workloads/zygote.py without torch: forks one child per rank, writes
# pids.json, reaps them and writes exit<rank>. A child serves until the `stop` file exists
# (like serve_pool), or forever with the argument "stuck" (a rank stuck in Gloo).
FAKE_ZYGOTE = r"""
import json, os, sys, time
d, stuck = sys.argv[1], sys.argv[2:] == ["stuck"]
ranks = json.load(open(os.path.join(d, "ranks.json")))
pids = {}
for spec in ranks:
    pid = os.fork()
    if pid == 0:
        while stuck or not os.path.exists(os.path.join(d, "stop")):
            time.sleep(0.02)
        os._exit(0)
    pids[spec["rank"]] = pid
def write(name, text):
    with open(os.path.join(d, name + ".tmp"), "w") as f:
        f.write(text)
    os.replace(os.path.join(d, name + ".tmp"), os.path.join(d, name))
write("pids.json", json.dumps(pids))
rank_of = {p: r for r, p in pids.items()}
while rank_of:
    pid, status = os.wait()
    write("exit%d" % rank_of.pop(pid), str(os.waitstatus_to_exitcode(status)))
"""


class _Net:
    """Two servers; every host on the second: the pool starts no fork server here."""

    def __init__(self, stuck=False):
        self.servers = [SimpleNamespace(name="a", local=True), SimpleNamespace(name="b", local=False)]
        self.cluster = (self.servers, None)
        self.started, self.signals, self.stuck = [], [], stuck

    def server_of(self, host):
        return self.servers[1]

    def host(self, name):
        net = self

        class Host:
            pid = 4242  # the host's shell on the other server
            isRemote = True

            @staticmethod
            def popen(cmd, stdout=None, stderr=None, cwd=None, env=None):
                net.started.append((name, cmd, env))
                p = subprocess.Popen([sys.executable, "-c", FAKE_ZYGOTE, cmd[-1]] + (["stuck"] if net.stuck else []),
                                     stdout=stdout, stderr=stderr, start_new_session=True)
                net.proc = p
                return p

        return Host

    def stop_marked(self, hosts, mark, sig="TERM"):
        self.signals.append((list(hosts), mark, sig))
        try:
            os.killpg(self.proc.pid, getattr(signal, "SIG" + sig))  # the fork server and its children
        except ProcessLookupError:
            pass


class _Topo:
    @staticmethod
    def host_nics(host):
        return [SimpleNamespace(name=f"{host}-eth0")]


class _State:
    def __init__(self):
        self.pgids = []

    def add(self, key, *values):
        assert key == "pgids"
        self.pgids += values


def _alive(pid):
    """Running (a zombie whose parent is gone waits for whoever reaps orphans here: not running)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_pool_on_another_server_runs_there_in_its_own_folder_and_stops(tmp_path):
    net, state = _Net(), _State()
    pool = workers.Pool(net, _Topo(), ["h1", "h2", "h3"], tmp_path / "pool1", state)
    try:
        assert [(h, cmd[-3:]) for h, cmd, _ in net.started] == [("h1", ["-m", "workloads.zygote",
                                                                        str(tmp_path / "pool1" / "server1")])]
        env = net.started[0][2]
        assert env[workers.POOL_MARK] == "pool1" and env["PYTHONPATH"]  # marked: its stop and the cleanup find it
        specs = json.loads((tmp_path / "pool1" / "server1" / "ranks.json").read_text())
        assert [(s["rank"], s["netns_pid"], s["nics"]) for s in specs] == [(0, 4242, ["h1-eth0"]), (1, 4242, ["h2-eth0"]),
                                                                         (2, 4242, ["h3-eth0"])]
        assert state.pgids == [net.proc.pid]  # the ssh; the ranks' pids are the other server's
        assert sorted(pool.procs) == [0, 1, 2] and pool.alive() and pool.fits(["h1", "h2", "h3"])
        pool.submit(tmp_path / "job.json")
        assert (tmp_path / "pool1" / "server1" / "job1").read_text() == str(tmp_path / "job.json")
        assert not (tmp_path / "pool1" / "job1").exists()
    finally:
        pool.stop()
    assert net.signals == []  # every rank ended on `stop` and was reaped: nothing to kill there
    assert net.proc.poll() == 0 and not pool.alive()
    assert [pool.procs[r].poll() for r in range(3)] == [0, 0, 0]


def test_a_rank_that_dies_there_ends_the_pool_and_the_stop_kills_what_is_left(tmp_path):
    net, state = _Net(stuck=True), _State()
    pool = workers.Pool(net, _Topo(), ["h1", "h2"], tmp_path / "pool2", state)
    pids = json.loads((tmp_path / "pool2" / "server1" / "pids.json").read_text())
    try:
        os.kill(pids["1"], signal.SIGKILL)
        deadline = time.time() + 10
        while pool.alive() and time.time() < deadline:
            time.sleep(0.05)
        assert pool.procs[1].poll() == -9 and pool.procs[0].poll() is None
        assert not pool.fits(["h1", "h2"])
    finally:
        t0 = time.time()
        pool.stop()  # rank 0 is stuck: `stop` alone does not end it
    assert [s for _, _, s in net.signals] == ["TERM", "KILL"] and net.signals[0][:2] == (["h1"], workers.POOL_MARK)
    assert time.time() - t0 < 10
    assert net.proc.poll() is not None and not _alive(pids["0"])


def test_a_fork_server_that_dies_there_takes_its_ranks_with_it(tmp_path):
    net, state = _Net(stuck=True), _State()
    pool = workers.Pool(net, _Topo(), ["h1", "h2"], tmp_path / "pool3", state)
    pids = json.loads((tmp_path / "pool3" / "server1" / "pids.json").read_text())
    try:
        os.kill(net.proc.pid, signal.SIGKILL)  # the zygote only: its ranks run on, unreaped
        net.proc.wait(5)
        assert [pool.procs[r].poll() for r in (0, 1)] == [-1, -1] and not pool.alive()
    finally:
        pool.stop()
    assert net.signals and net.signals[0][2] == "TERM"  # ranks without an exit file are killed there
    deadline = time.time() + 5
    while time.time() < deadline and any(_alive(int(p)) for p in pids.values()):
        time.sleep(0.05)
    assert not any(_alive(int(p)) for p in pids.values())
