"""The machine-wide lock and the record of what a run created, so anything can be undone.

One emulation at a time per machine: interface names and Open vSwitch are global.
`Lock` is an flock on /run/syncbed/lock (released by the kernel if the holder dies)
whose file names the active run. `State` lists, as soon as each thing exists, the
processes, OVS bridges and interfaces a run created (/run/syncbed/state.json);
`cleanup()` removes exactly those, plus any bridge tagged external_ids:syncbed, so a
crashed or killed run is undone by the next run or by `syncbed clean` - never by
killall. Over several servers it also reaches each other server by the ssh command recorded
for it (`remote_cleanup`): the processes a run marked SYNCBED_RUN there, its tagged bridges and
its interfaces.
"""
from __future__ import annotations

import fcntl
import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

from emulation import switch_priority
from emulation.monitor import ovs_pid


def state_dir() -> Path:
    """Where the lock and the state live; SYNCBED_STATE_DIR moves them (tests), read per call."""
    return Path(os.environ.get("SYNCBED_STATE_DIR", "/run/syncbed"))


class LockedError(RuntimeError):
    pass


class Lock:
    def __init__(self, what: str):
        self.what = what
        self.path = state_dir() / "lock"
        self.fd = None

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 4096).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise LockedError(f"another syncbed run is active ({holder}); one emulation per machine: "
                              "wait for it or stop it") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}, {self.what}, since {time.strftime('%H:%M:%S')}".encode())
        self.fd = fd
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _empty() -> dict:
    # remote: what a cluster run made on another server, {server, ssh_config, tag, intfs}
    # (remote_cleanup below)
    return {"pids": [], "pgids": [], "bridges": [], "intfs": [], "remote": []}


class State:
    """Append-only record of what this run created; persisted after every change."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path or state_dir() / "state.json")
        self.data = _empty()

    def add(self, key: str, *values):
        for v in values:
            if v is not None and v not in self.data[key]:
                self.data[key].append(v)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        os.replace(tmp, self.path)

    @classmethod
    def load(cls, path: Path | None = None) -> "State":
        s = cls(path)
        try:
            s.data.update(json.loads(s.path.read_text()))
        except (FileNotFoundError, json.JSONDecodeError):
            pass
        return s

    def clear(self):
        self.data = _empty()
        self.path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def kill_all(pgids=(), pids=(), grace: float = 3.0) -> None:
    """SIGTERM our process groups and pids, then SIGKILL what is left after `grace` s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for g in pgids:
            try:
                os.killpg(g, sig)
            except (ProcessLookupError, PermissionError):
                pass
        for p in pids:
            try:
                os.kill(p, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.time() + grace
        while time.time() < deadline and any(_alive(p) for p in list(pids) + list(pgids)):
            time.sleep(0.1)


def stop_procs(procs, grace: float = 2.0) -> None:
    """Stop the session leaders `procs` (Popen objects started with mnexec -d or
    start_new_session): their process groups get SIGTERM, SIGKILL after `grace` s; reaped."""
    procs = list(procs)
    alive = [p.pid for p in procs if p.poll() is None]
    if alive:
        kill_all(pgids=alive, grace=grace)
    for p in procs:
        try:
            p.wait(2)
        except Exception:
            pass


def ovs_bridges(tag_only: bool = True) -> list[str] | None:
    """The bridges Open vSwitch has (only those tagged external_ids:syncbed with
    `tag_only`); None when Open vSwitch does not answer."""
    try:
        proc = subprocess.run(["ovs-vsctl", "--timeout=5", "--format=csv", "--no-headings",
                               "--columns=name,external_ids", "list", "bridge"],
                              capture_output=True, text=True, timeout=10)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    names = []
    for line in proc.stdout.splitlines():
        name, _, ext = line.partition(",")
        if not tag_only or "syncbed" in ext:
            names.append(name.strip('"'))
    return names


def cleanup(state: State | None = None, verbose=False) -> list[str]:
    """Undo a run: processes, bridges, interfaces. Returns what it removed.

    What cannot be removed now stays recorded: bridges while Open vSwitch does not
    answer (a machine whose ovs-vswitchd died with the run), so that `syncbed clean`
    after starting it (scripts/setup.sh) still finds them."""
    state = state or State.load()
    done = []
    pids = [p for p in state.data["pids"] if _alive(p)]
    pgids = [g for g in state.data["pgids"] if _alive(g)]
    if pids or pgids:
        kill_all(pgids, pids)
        done.append(f"stopped {len(pids) + len(pgids)} processes")
    listed = ovs_bridges(tag_only=False)
    existing = None if listed is None else set(listed)
    kept_bridges = []
    if existing is None:
        kept_bridges = list(state.data["bridges"])
        if kept_bridges:
            done.append(f"kept {len(kept_bridges)} OVS bridges recorded: Open vSwitch does not "
                        "answer; start it (bash scripts/setup.sh) and run syncbed clean again")
    else:
        bridges = sorted(set(state.data["bridges"]) | set(ovs_bridges(tag_only=True) or []))
        gone = [b for b in bridges if b in existing]
        for i in range(0, len(gone), 50):
            cmd = ["ovs-vsctl", "--timeout=20"]
            for b in gone[i:i + 50]:
                cmd += ["--", "--if-exists", "del-br", b]
            subprocess.run(cmd, capture_output=True, timeout=60)
        if gone:
            done.append(f"deleted {len(gone)} OVS bridges")
    left = [i for i in state.data["intfs"] if Path(f"/sys/class/net/{i}").exists()]
    for i in left:
        subprocess.run(["ip", "link", "del", i], capture_output=True)
    if left:
        done.append(f"deleted {len(left)} interfaces")
    raised = ovs_pid()  # a run that could not restore it (killed) leaves the switch real-time
    if raised and (n := switch_priority.reset(raised)):
        done.append(f"put {n} ovs-vswitchd threads back under the normal scheduler")
    kept_remote = []
    if state.data.get("remote"):
        said, kept_remote = remote_cleanup(state.data["remote"])
        done += said
    state.clear()
    if kept_remote:
        state.add("remote", *kept_remote)
    if kept_bridges:
        state.add("bridges", *kept_bridges)
    if verbose:
        for d in done:
            print(f"syncbed clean: {d}")
    return done


# ---- what a run left on another server of a cluster (docs/CLUSTER.md) -------------------------
def marked_kill_script(tag: str, mark: str, sig: str = "TERM") -> str:
    """The shell script that sends `sig`, on one server, to the processes of run `tag`
    (SYNCBED_RUN) that also carry the environment variable `mark` (e.g. a run's background
    iperf3, which outlives its ssh: without a pty, sshd sends no hangup; a worker pool's fork
    server there and the ranks it forked). Pure."""
    if sig not in ("TERM", "KILL", "INT"):
        raise ValueError(f"signal {sig!r}: TERM, KILL or INT")
    return (f"for e in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $e 2>/dev/null | grep -q -x "
            f"{shlex.quote('SYNCBED_RUN=' + tag)} && tr '\\0' '\\n' < $e 2>/dev/null | grep -q "
            f"{shlex.quote('^' + mark + '=')} && p=${{e#/proc/}} && kill -{sig} ${{p%/environ}} 2>/dev/null; done; true\n")


def cleanup_script(tag: str | None, intfs=()) -> str:
    """The shell script that undoes a run (or, with tag None, every syncbed run) on one server:
    processes marked SYNCBED_RUN, bridges tagged external_ids:syncbed, the listed interfaces.
    Pure."""
    want = f"SYNCBED_RUN={tag}" if tag else "SYNCBED_RUN="
    lines = [
        f"for e in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $e 2>/dev/null | grep -q '^{want}' "
        "&& p=${e#/proc/} && kill -9 ${p%/environ} 2>/dev/null; done",
        # csv quotes a value with '-' (syncbed=""2026...-experiment""): match the key, then the tag
        "for b in $(ovs-vsctl --timeout=10 --format=csv --no-headings --columns=name,external_ids list bridge "
        f"2>/dev/null | grep 'syncbed=' | grep -F -e {shlex.quote(tag or 'syncbed=')} | cut -d, -f1 | tr -d '\"'); "
        "do ovs-vsctl --timeout=10 --if-exists del-br $b; done",
    ]
    lines += [f"ip link del {shlex.quote(i)} 2>/dev/null" for i in intfs]
    # exit 3 while a bridge of the run is still there: the caller keeps it on record
    lines.append("ovs-vsctl --timeout=10 --format=csv --no-headings --columns=name,external_ids list bridge "
                 f"2>/dev/null | grep 'syncbed=' | grep -q -F -e {shlex.quote(tag or 'syncbed=')} && exit 3")
    return "\n".join(lines + ["true"]) + "\n"


def remote_cleanup(entries: list[dict]) -> tuple[list[str], list[dict]]:
    """Undo what runs recorded on other servers of a cluster (State's "remote": {server, ssh (the
    argv that reaches it), tag, intfs}). -> (what it did or could not do, the entries to keep on
    record: their server did not answer or still has a bridge of the run)."""
    done, kept = [], []
    for e in entries:
        try:
            p = subprocess.run(list(e["ssh"]) + ["sh -s"], input=cleanup_script(e.get("tag"), e.get("intfs", [])),
                               capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            p = None
        if p is not None and p.returncode == 0:
            done.append(f"cleaned run {e.get('tag')} on {e['server']}")
        else:
            why = "ssh timed out" if p is None else ("a bridge of the run is still there" if p.returncode == 3
                                                      else " ".join((p.stderr or "").split())[:120])
            done.append(f"could not clean {e['server']} ({why}); kept on record for syncbed clean")
            kept.append(e)
    return done, kept
