"""`python -m emulation.cli` on bad input, `topo` and `algos`; the lock and the state record.

Nothing here starts Mininet, OVS or Ryu, and nothing touches the machine's OVS bridges,
interfaces or /run/syncbed (someone may be running an emulation right now):
- every CLI process gets SYNCBED_STATE_DIR in a tmp folder and a PATH holding only the
  venv's bin, so even an input wrongly accepted would stop at "Open vSwitch or Mininet
  is missing" (exit 2) instead of starting a run;
- `cleanup()` is given fake `ovs_bridges` and `subprocess.run`, so it can only say what it
  would do.
Speed (the unit tier must stay in seconds on 2 busy cores): every case that gets past the
cheap checks imports torch (~1.5 s of CPU). Cases that do not, and the uid-65534 run
(which passes every check, torch included), are fresh `python -m emulation.cli`
processes, started at once; the other torch-importing cases are forked from one process
that imported torch first, each child running the module exactly as `-m` does (runpy,
own argv, own exit status, stdout and stderr).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from emulation import state
from emulation.state import Lock, LockedError, State, cleanup

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
MODEL = ["--model", "synthetic,mb=1"]
IS_ROOT = os.geteuid() == 0

# name -> (argv after `python -m emulation.cli`, pattern stderr must match, how it runs)
FRESH, FORKED = "fresh", "forked"
BAD_INPUT = {
    "bcube_n1": (["run", "--topo", "bcube,n=1,k=2"], r"BCube n=1 is out of range", FORKED),
    "fattree_k3": (["run", "--topo", "fattree,k=3"], r"Fat-Tree k=3 is invalid: k must be an even number", FORKED),
    "algo_nope": (["run", "--algo", "nope"], r"unknown algorithm 'nope'; valid: bml, .*gloo, .*ps, ring", FORKED),
    "link_bw_key": (["run", "--link-bw", "nope=3", *MODEL], r"link_bw key 'nope' is not a link class, host or "
                    r"interface of fattree\(4\)", FORKED),
    "link_bw_form": (["run", "--link-bw", "agg-core"], r"--link-bw takes KEY=MBPS", FORKED),
    "algo_option": (["run", "--algo", "gtopk,density=0", *MODEL], r"gtopk: option density='0' is invalid", FORKED),
    "bw_0": (["run", "--bw", "0"], r"bw=0(\.0)? Mbit/s is out of range: must be >= 0\.001 and <= 1000", FRESH),
    "bw_5000": (["run", "--bw", "5000"], r"bw=5000(\.0)? Mbit/s is out of range", FRESH),
    "mtu_big": (["run", "--mtu", "65000", *MODEL], r"mtu=65000 is invalid: must be an integer 576\.\.64000", FORKED),
    "dilation_x_alone": (["run", "--algo", "wfbp", "--dilation-x", "2", *MODEL],
                         r"--dilation-x needs an experiment with a real_setting", FORKED),
    "dilation_x_ring": (["run", "experiments/mgwfbp_fattree8.yaml", "--algo", "ring", "--dilation-x", "2"],
                        r"dilation_x charges a start-up wait before each collective, which ring cannot take", FORKED),
    # below what tc's HTB shapes: 1e-6 Mbit/s left links unshaped and the run went on
    "bw_tiny": (["run", "--bw", "1e-6"], r"bw=1e-06 Mbit/s is out of range: must be >= 0\.001 and <= 1000 "
                r"\(tc's HTB cannot shape less", FRESH),
    "link_bw_tiny": (["topo", "fattree,k=4", "--bw", "0.0005"], r"bw=0\.0005 Mbit/s is out of range", FRESH),
    # typed options: one line naming the option, the value and what is valid (not argparse's usage)
    "bw_abc": (["run", "--bw", "abc"], r"^syncbed: argument --bw: 'abc' is not valid; give a number of Mbit/s, "
               r"0\.001 to 1000; see syncbed run --help$", FRESH),
    "topo_bw_abc": (["topo", "fattree,k=4", "--bw", "x"], r"argument --bw: 'x' is not valid; give a number of Mbit/s",
                    FRESH),
    "workers_x": (["run", "--workers", "x"], r"argument --workers: 'x' is not valid; give a whole number >= 1", FRESH),
    "iters_float": (["run", "--iters", "1.5"], r"argument --iters: '1\.5' is not valid; give a whole number >= 1",
                    FRESH),
    "warmup_x": (["run", "--warmup", "one"], r"argument --warmup: 'one' is not valid; give a whole number >= 0", FRESH),
    "timeout_s": (["run", "--timeout", "10s"], r"argument --timeout: '10s' is not valid; give a number of seconds",
                  FRESH),
    "unknown_option": (["run", "--bogus"], r"unrecognized arguments: --bogus; see syncbed --help", FRESH),
    "no_command": ([], r"the following arguments are required: \{run,topo,algos,analyze,keep,docs,project,train,report,"
                 r"scaling,predict,profile,pcap,bench,clean\}", FRESH),
    # analyze on folders that are not an experiment's results: one line, nothing written
    "analyze_nowhere": (["analyze", "{tmp}/nowhere"], r"nowhere is not a folder; give a results folder made by "
                        r"syncbed run", FRESH),
    "analyze_no_summary": (["analyze", "{tmp}/empty"], r"empty has no summary\.json; give a results folder", FRESH),
    "analyze_bad_json": (["analyze", "{tmp}/badjson"], r"badjson/summary\.json is unreadable \(JSONDecodeError: ",
                         FRESH),
    "analyze_not_summary": (["analyze", "{tmp}/list"], r"list/summary\.json is not the summary of a syncbed run",
                            FRESH),
    "analyze_copy": (["analyze", "{tmp}/copy"], r"copy lacks the raw files of its runs \(01-fattree-4-ring-synthetic "
                     r"have no job\.json\): a copy of the summary and report cannot be re-analysed", FRESH),
    "analyze_one_run": (["analyze", "{tmp}/exp/01-x"], r"01-x is one run of an experiment; analyse the experiment's "
                        r"folder .*/exp$", FRESH),
    "analyze_broken_run": (["analyze", "{tmp}/broken"], r"cannot analyse .*broken/01-x: KeyError: ", FORKED),
    "workers_9": (["run", "--topo", "bcube,n=2,k=2", "--workers", "9"],
                  r"9 workers \+ 0 servers do not fit on bcube\(2,2\), which has 4 hosts", FORKED),
    "bml_fattree": (["run", "--topo", "fattree,k=4", "--algo", "bml"], r"bml runs on bcube only, not fattree\(4\)",
                    FORKED),
    "bml_few_workers": (["run", "--topo", "bcube,n=3,k=2", "--algo", "bml", "--workers", "4"],
                        r"bml: BCube\(3,2\) has 9 servers but workers=4", FORKED),
    "link_down_bad": (["run", "--topo", "bcube,n=3,k=2", "--algo", "bml", "--link-down", "h99-eth0@3"],
                      r"link_down: 'h99-eth0' is not a host NIC of bcube\(3,2\)", FORKED),
    "no_file": (["run", "does/not/exist.yaml"], r"experiment file does/not/exist.yaml does not exist", FORKED),
    "crash_spec": (["run", "--topo", "bcube,n=2,k=2", "--inject-crash", "three"],
                   r"--inject-crash takes RANK:ITER, e\.g\. 3:1, got 'three'", FORKED),
    "crash_rank": (["run", "--topo", "bcube,n=2,k=2", "--algo", "ring", "--inject-crash", "4:1"],
                   r"crash rank 4 is not a rank of every run", FORKED),
    "placement": (["run", "--placement", "random"], r"placement 'random' is unknown; valid: ordered, spread", FORKED),
    "topo_mesh": (["topo", "mesh"], r"unknown topology 'mesh'; valid: bcube", FORKED),
    # only what can start here: BCube(16,3) alone took over 24 GiB to describe, BCube(2,7)'s
    # 448 bridges took 10 min, Fat-Tree k=16 is for the SimGrid projection
    "topo_too_big": (["topo", "bcube,n=16,k=3"], r"bcube\(16,3\) has 4096 hosts and 768 switches: syncbed emulates "
                     r"at most 128 hosts and 80 switches on one machine .*syncbed project", FRESH),
    "topo_many_switches": (["topo", "bcube,n=2,k=7"], r"bcube\(2,7\) has 128 hosts and 448 switches", FRESH),
    "run_too_big": (["run", "--topo", "fattree,k=16"], r"fattree\(16\) has 1024 hosts and 320 switches", FRESH),
}
# run as root only: a non-root run is refused for that first
ROOT_BAD_INPUT = {
    "out_proc": (["run", "--topo", "bcube,n=2,k=2", "--algo", "ring", "--out", "/proc/syncbed-test"],
                 r"^syncbed: --out /proc/syncbed-test: cannot be created or written: making a folder in /proc fails "
                 r"\(.+\); give a folder syncbed can create or write to$", FORKED),
    "out_under_file": (["run", "--topo", "bcube,n=2,k=2", "--algo", "ring", "--out", "{tmp}/afile/results"],
                       r"--out .*/afile/results: .*/afile is not a folder", FORKED),
}


def make_folders(tmp: Path) -> None:
    """The folders the analyze and --out cases point at ({tmp} in their argv)."""
    (tmp / "empty").mkdir()
    (tmp / "badjson").mkdir()
    (tmp / "badjson" / "summary.json").write_text('{"runs": [')
    (tmp / "list").mkdir()
    (tmp / "list" / "summary.json").write_text("[1, 2]")
    (tmp / "copy").mkdir()  # summary and report without the run folders, like docs/results/*
    (tmp / "copy" / "summary.json").write_text(json.dumps({"status": "ok", "runs": [
        {"dir": "01-fattree-4-ring-synthetic", "topology": "fattree(4)", "algorithm": "ring"}]}))
    (tmp / "exp" / "01-x").mkdir(parents=True)
    (tmp / "exp" / "summary.json").write_text(json.dumps({"status": "ok", "runs": [{"dir": "01-x"}]}))
    (tmp / "exp" / "01-x" / "job.json").write_text("{}")
    (tmp / "broken" / "01-x").mkdir(parents=True)
    (tmp / "broken" / "summary.json").write_text(json.dumps({"status": "ok", "runs": []}))
    (tmp / "broken" / "01-x" / "job.json").write_text("{}")
    (tmp / "broken" / "01-x" / "topology.json").write_text("{}")
    (tmp / "afile").write_text("not a folder")


OK_COMMANDS = {
    "topo_fattree8": (["topo", "fattree,k=8"], FRESH),  # the largest Fat-Tree started here
    "topo_bcube32": (["topo", "bcube,n=3,k=2"], FRESH),
    "topo_fattree4_v": (["topo", "fattree,k=4", "--bw", "10", "-v"], FRESH),
    "algos": (["algos"], FORKED),
}

HOLDER = """
import sys
from emulation.state import Lock
with Lock(sys.argv[1]):
    print("locked", flush=True)
    sys.stdin.read()  # hold the lock until the test closes our stdin
"""

# Imports torch once, then forks one child per case (all at once); each runs emulation.cli as
# `python -m` does and leaves <name>.out, <name>.err; the parent prints {name: exit code}.
FORKER = r"""
import json, os, runpy, sys, traceback
import torch  # noqa: F401  the slow import every case would repeat
from workloads.algorithms import base
base.registry()
cases, outdir = json.loads(sys.argv[1]), sys.argv[2]
pids = {}
for name, argv in cases.items():
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            for fd, ext in ((1, "out"), (2, "err")):
                f = os.open(os.path.join(outdir, f"{name}.{ext}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(f, fd)
                os.close(f)
            sys.argv = ["emulation.cli", *argv]
            try:
                runpy.run_module("emulation.cli", run_name="__main__", alter_sys=True)
                code = 0
            except SystemExit as e:
                if e.code is None or isinstance(e.code, int):
                    code = e.code or 0
                else:
                    print(e.code, file=sys.stderr)
                    code = 1
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush(); sys.stderr.flush()
            os._exit(code)
    pids[name] = pid
codes = {name: os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for name, pid in pids.items()}
print(json.dumps(codes))
"""


def safe_env(tmp: Path) -> dict:
    return {"PATH": str(Path(PY).parent), "HOME": str(tmp), "SYNCBED_STATE_DIR": str(tmp / "state"),
            "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}


def start_holder(env: dict, what: str) -> subprocess.Popen:
    p = subprocess.Popen([PY, "-c", HOLDER, what], cwd=ROOT, env=env, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stdout.readline()
    if line.strip() != "locked":
        p.kill()
        raise AssertionError(f"lock holder did not start: {line!r} {p.stderr.read()!r}")
    return p


def stop(p: subprocess.Popen) -> None:
    try:
        p.stdin.close()
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()  # our own child, by handle
        p.wait()


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    """Run every CLI case at once (while a lock holder runs, for `clean`);
    name -> (returncode, stdout, stderr)."""
    tmp = tmp_path_factory.mktemp("cli")
    env = safe_env(tmp)
    make_folders(tmp)
    bad = {**BAD_INPUT, **(ROOT_BAD_INPUT if IS_ROOT else {})}
    cases = {name: ([a.replace("{tmp}", str(tmp)) for a in argv] + (MODEL if argv[:1] == ["run"] else []), how)
             for name, (argv, _, how) in bad.items()}
    cases.update({name: (argv, how) for name, (argv, how) in OK_COMMANDS.items()})
    cases["clean_locked"] = (["clean"], FRESH)
    forked = {name: argv for name, (argv, how) in cases.items() if how == FORKED}
    holder = start_holder(env, "cli test holder")
    procs = {}
    try:
        outdir = tmp / "forked"
        outdir.mkdir()
        procs["_forker"] = subprocess.Popen([PY, "-c", FORKER, json.dumps(forked), str(outdir)], cwd=ROOT,
                                            env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for name, (argv, how) in cases.items():
            if how == FRESH:
                procs[name] = subprocess.Popen([PY, "-m", "emulation.cli", *argv], cwd=ROOT, env=env, text=True,
                                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if IS_ROOT:  # valid input, run as nobody: must refuse before anything starts
            procs["not_root"] = subprocess.Popen(
                [PY, "-m", "emulation.cli", "run", "--topo", "bcube,n=2,k=2", "--algo", "ring", *MODEL],
                cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, user=65534)
        out = {}
        for name, p in procs.items():
            so, se = p.communicate(timeout=120)
            out[name] = (p.returncode, so, se)
        code, so, se = out.pop("_forker")
        assert code == 0, f"forker failed: {se}"
        for name, rc in json.loads(so).items():
            out[name] = (rc, (outdir / f"{name}.out").read_text(), (outdir / f"{name}.err").read_text())
        assert set(out) >= set(cases)
        out["holder_pid"] = holder.pid
        out["tmp"] = tmp
        return out
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        stop(holder)


def one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, f"stderr is not one line: {stderr!r}"
    return lines[0]


@pytest.mark.parametrize("name", list(BAD_INPUT) + [pytest.param(
    n, marks=pytest.mark.skipif(not IS_ROOT, reason="as non-root, root is what is refused first"))
    for n in ROOT_BAD_INPUT])
def test_bad_input_exits_2_with_one_line(cli, name):
    code, out, err = cli[name]
    line = one_line(err)
    assert code == 2, (code, out, err)
    assert line.startswith("syncbed: ")
    assert re.search({**BAD_INPUT, **ROOT_BAD_INPUT}[name][1], line), line
    # refused as input, not by the environment ("pytest-of-root" may be in a path)
    assert "is missing" not in line and "must run as root" not in line
    assert all(x.startswith("analysing ") for x in out.splitlines())  # progress only, else nothing


def test_refused_analyze_and_out_write_nothing(cli):
    tmp = cli["tmp"]
    assert json.loads((tmp / "broken" / "summary.json").read_text()) == {"status": "ok", "runs": []}
    assert not (tmp / "broken" / "report.md").exists() and not (tmp / "copy" / "report.md").exists()
    assert not Path("/proc/syncbed-test").exists() and (tmp / "afile").read_text() == "not a folder"
    assert not list(tmp.glob("*/.syncbed-probe-*")) and not list(tmp.glob(".syncbed-probe-*"))


def test_topo_describes_bcube(cli):
    code, out, err = cli["topo_bcube32"]
    assert (code, err) == (0, "")
    first = out.splitlines()[0]
    assert first == "bcube(3,2): 9 servers, 6 switches, 18 links, 2 NICs per server"
    assert "link classes: level0 20 Mbit/s, level1 20 Mbit/s" in out


def test_topo_verbose_lists_nics_and_ports(cli):
    code, out, err = cli["topo_fattree4_v"]
    assert (code, err) == (0, "")
    assert out.startswith("fattree(4): 16 servers, 20 switches, 48 links, 1 NICs per server")
    assert "host 10 Mbit/s" in out
    assert "  h0_0_2: h0_0_2-eth0 10.0.0.2" in out
    assert "  e0_0 dpid 0x1: ports 1->h0_0_2, 2->h0_0_3, 3->a0_2, 4->a0_3" in out


def test_topo_accepts_the_largest_network_started_here(cli):
    code, out, err = cli["topo_fattree8"]
    assert (code, err) == (0, "")
    assert out.startswith("fattree(8): 128 servers, 80 switches, 384 links, 1 NICs per server")


def test_algos_lists_the_registry(cli):
    code, out, err = cli["algos"]
    assert (code, err) == (0, "")
    names = [line.split()[0] for line in out.splitlines() if line and not line.startswith(" ")]
    from workloads.algorithms import base

    assert names == sorted(base.registry())
    assert {"bml", "gloo", "ps", "ring", "topk", "gtopk"} <= set(names)
    assert "(on bcube)" in out.splitlines()[0]
    # what each accepts, from its declaration (base.Algorithm.accepts_help)
    assert f"{'':10} accepts: workers a power of two (1, 2, 4, 8, ...), no dedicated servers, any topology" in out


def test_clean_refuses_while_another_run_holds_the_lock(cli):
    code, out, err = cli["clean_locked"]
    line = one_line(err)
    assert code == 2
    assert f"another syncbed run is active (pid {cli['holder_pid']}, cli test holder, since" in line


@pytest.mark.skipif(not IS_ROOT, reason="dropping to uid 65534 needs root")
def test_run_as_non_root_is_refused(cli):
    code, out, err = cli["not_root"]
    line = one_line(err)
    assert code == 2
    assert "root" in line and line.startswith("syncbed: ")


# ---- Lock ----------------------------------------------------------------------------------------
@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    d = tmp_path / "state"
    monkeypatch.setenv("SYNCBED_STATE_DIR", str(d))
    return d


def test_second_lock_names_the_holder(state_dir):
    with Lock("first run") as lock:
        assert (state_dir / "lock").read_text().startswith(f"pid {os.getpid()}, first run, since ")
        with pytest.raises(LockedError) as e:
            with Lock("second run"):
                pass
        msg = str(e.value)
        assert f"another syncbed run is active (pid {os.getpid()}, first run, since " in msg
        assert "second run" not in msg and "\n" not in msg
        assert lock.fd is not None
    # released: the next run takes it, and the file names the new holder
    with Lock("third run"):
        assert "third run" in (state_dir / "lock").read_text()
    assert (state_dir / "lock").read_text() == ""


def test_lock_held_by_another_process(state_dir, tmp_path):
    holder = start_holder(safe_env(tmp_path), "holder process")
    try:
        with pytest.raises(LockedError, match=rf"pid {holder.pid}, holder process, since "):
            with Lock("me"):
                pass
    finally:
        stop(holder)
    with Lock("me"):  # the kernel released it with the holder
        pass


# ---- State ---------------------------------------------------------------------------------------
def test_state_add_persists(state_dir):
    s = State()
    assert s.path == state_dir / "state.json"
    s.add("pids", 11, 12, 11, None)
    s.add("bridges", "s0_0")
    s.add("intfs", "s0_0-eth1", "s0_0-eth2")
    on_disk = json.loads((state_dir / "state.json").read_text())
    assert on_disk == {"pids": [11, 12], "pgids": [], "bridges": ["s0_0"], "intfs": ["s0_0-eth1", "s0_0-eth2"], "remote": []}
    assert State.load().data == on_disk
    assert not list(state_dir.glob("*.tmp"))  # written atomically
    s.clear()
    assert not (state_dir / "state.json").exists()
    assert State.load().data == {"pids": [], "pgids": [], "bridges": [], "intfs": [], "remote": []}


def test_state_load_tolerates_a_torn_file(state_dir):
    state_dir.mkdir(parents=True)
    (state_dir / "state.json").write_text('{"pids": [1, 2')
    assert State.load().data == {"pids": [], "pgids": [], "bridges": [], "intfs": [], "remote": []}


class FakeSystem:
    """Stands in for OVS and `ip`: records the commands cleanup() would run."""

    def __init__(self, existing=(), tagged=()):
        self.existing, self.tagged, self.commands = list(existing), list(tagged), []

    def ovs_bridges(self, tag_only=True):
        return list(self.tagged if tag_only else self.existing)

    def run(self, cmd, *a, **kw):
        self.commands.append(list(cmd))
        return subprocess.CompletedProcess(cmd, 0, "", "")


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()  # reaped: the pid names no process
    return p.pid


def test_cleanup_of_dead_pid_and_missing_bridge_and_interface_does_nothing(state_dir, monkeypatch):
    fake = FakeSystem(existing=["br-someone-else"], tagged=[])
    monkeypatch.setattr(state, "ovs_bridges", fake.ovs_bridges)
    monkeypatch.setattr(state.subprocess, "run", fake.run)
    killed = []
    monkeypatch.setattr(state, "kill_all", lambda *a, **kw: killed.append(a))
    s = State()
    pid = dead_pid()
    s.add("pids", pid)
    s.add("pgids", pid)
    s.add("bridges", "sbtest-nobr0")
    s.add("intfs", "sbtest-noif0")
    assert not Path("/sys/class/net/sbtest-noif0").exists()
    assert cleanup(s) == []
    assert killed == [] and fake.commands == []
    assert not s.path.exists() and s.data == {"pids": [], "pgids": [], "bridges": [], "intfs": [], "remote": []}


def test_cleanup_removes_exactly_what_it_recorded(state_dir, monkeypatch):
    """Live own process stopped by pid; a recorded bridge that exists deleted, a tagged
    one that no longer exists skipped, someone else's untagged bridge left alone."""
    fake = FakeSystem(existing=["sbtest-br1", "br-someone-else"], tagged=["sbtest-gone"])
    monkeypatch.setattr(state, "ovs_bridges", fake.ovs_bridges)
    monkeypatch.setattr(state.subprocess, "run", fake.run)
    sleeper = subprocess.Popen(["sleep", "30"])
    # a crashed run's processes are not the cleaner's children; reap ours at once, or it
    # stays a zombie that kill_all still sees alive
    reaper = threading.Thread(target=sleeper.wait, daemon=True)
    reaper.start()
    try:
        s = State()
        s.add("pids", sleeper.pid)
        s.add("bridges", "sbtest-br1")
        t0 = time.time()
        done = cleanup(s)
        reaper.join(5)
        assert sleeper.returncode == -signal.SIGTERM  # SIGTERM was enough...
        assert time.time() - t0 < 2.5  # ...and kill_all did not wait out its grace period
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()
    assert done == ["stopped 1 processes", "deleted 1 OVS bridges"]
    assert fake.commands == [["ovs-vsctl", "--timeout=20", "--", "--if-exists", "del-br", "sbtest-br1"]]
    assert not s.path.exists()


def test_cleanup_keeps_bridges_recorded_while_open_vswitch_does_not_answer(state_dir, monkeypatch):
    """A session cut off mid-run left ovs-vswitchd dead and 21 bridges in its database;
    `syncbed clean` then could not see them, cleared the record anyway, and the next
    test session found them (CI, 2026-11-24). The record must survive until they go."""
    fake = FakeSystem()
    monkeypatch.setattr(state, "ovs_bridges", lambda tag_only=True: None)
    monkeypatch.setattr(state.subprocess, "run", fake.run)
    s = State()
    s.add("bridges", "sbtest-br1", "sbtest-br2")
    done = cleanup(s)
    assert fake.commands == []
    assert len(done) == 1 and done[0].startswith("kept 2 OVS bridges recorded: Open vSwitch does not answer")
    assert State.load().data["bridges"] == ["sbtest-br1", "sbtest-br2"]
    monkeypatch.setattr(state, "ovs_bridges", FakeSystem(existing=["sbtest-br1"]).ovs_bridges)
    assert cleanup(State.load()) == ["deleted 1 OVS bridges"]
    assert fake.commands == [["ovs-vsctl", "--timeout=20", "--", "--if-exists", "del-br", "sbtest-br1"]]
    assert not s.path.exists()


def test_algo_is_repeatable_for_run_and_project(monkeypatch):
    """Issue #19: `syncbed run --algo ring --algo ps` ran only ps (argparse kept the last
    --algo), though the README says it may be repeated; `syncbed project` the same."""
    from emulation import cli, config
    from emulation.simulator import core, sweep
    from emulation.cli import build_parser

    args = build_parser().parse_args(["run", "--topo", "fattree,k=4", "--algo", "ring",
                                      "--algo", "ps,gtopk,density=0.01", "--algo", "gtopk,density=0.001"])
    assert args.algo == ["ring", "ps,gtopk,density=0.01", "gtopk,density=0.001"]
    cfg = config.load(topologies=args.topo, algorithms=args.algo)
    assert cfg.matrix() == [("fattree,k=4", [("ring", {}), ("ps", {}), ("gtopk", {"density": "0.01"}),
                                             ("gtopk", {"density": "0.001"})])]
    assert build_parser().parse_args(["run", "--algo", "ring,ps"]).algo == ["ring,ps"]

    seen = {}

    def stop(s, measured):  # what the command line asked for, before anything is simulated
        seen["sweep"] = s
        raise ValueError("stopped by the test")
    monkeypatch.setattr(core, "simgrid_available", lambda: None)
    monkeypatch.setattr(sweep, "prepare_all", stop)
    assert cli.main(["project", "--topo", "fattree,k=4", "--algo", "ring", "--algo", "ps"]) == 2
    assert seen["sweep"].algo == ["ring", "ps"]
    assert [req.algo for req, _ in sweep.requests(seen["sweep"], {})] == ["ring", "ps"]


def test_keep_refuses_a_folder_that_is_not_results_and_a_dest_that_is_not_empty(tmp_path, capsys):
    from emulation import cli

    (tmp_path / "dest").mkdir()
    (tmp_path / "dest" / "x").write_text("")
    assert cli.main(["keep", str(tmp_path), str(tmp_path / "dest")]) == 2
    assert "not empty" in capsys.readouterr().err
    assert cli.main(["keep", str(tmp_path), str(tmp_path / "new")]) == 2
    assert "no summary.json" in capsys.readouterr().err


def test_the_readme_lists_every_subcommand():
    """Issue #20: every user action is a syncbed subcommand, and the README's table lists each."""
    import argparse

    from emulation.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    text = (ROOT / "README.md").read_text()
    listed = re.findall(r"^\| `([a-z]+)[ `]", text, re.M)
    assert listed == list(sub.choices)


def test_syncbed_profile_writes_a_profile_and_refuses_a_bad_name(tmp_path, capsys):
    """`syncbed profile` is workloads/models/profiles.py's write_profiles (tests/unit/test_models.py
    checks the profile it writes)."""
    from emulation import cli

    assert cli.main(["profile", "lenet5", "--batch", "2", "--runs", "1", "--warmup", "0",
                     "--dir", str(tmp_path)]) == 0
    assert str(tmp_path / "lenet5-b2.json") in capsys.readouterr().out
    assert json.loads((tmp_path / "lenet5-b2.json").read_text())["network"] == "lenet5"
    assert cli.main(["profile", "resnet51", "--dir", str(tmp_path)]) == 2
    assert "resnet51" in capsys.readouterr().err
    assert cli.main(["profile", "lenet5", "--clock", "sundial", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("syncbed: --clock 'sundial' is unknown; valid: thread, wall") and len(err.splitlines()) == 1
