"""CPU sampling during a run: did anything starve? (Mininet-HiFi's invariant.)

Samples every `interval` s: the machine's busy fraction (/proc/stat), ovs-vswitchd's
and the workers' CPU (in cores), and - the invariant itself - how long they sat
runnable but waiting for a CPU (run-queue wait from /proc/<pid>/task/*/schedstat, as a
fraction of wall time; for the workers, the mean per worker). A busy machine is not
a problem; a forwarding or computing process that waits for a CPU is.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _proc_cpu(pid: int) -> float | None:
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / TICK
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return None


def _sched_wait(pid: int) -> float | None:
    """Seconds the process's threads spent runnable but waiting for a CPU."""
    st = _schedstat(pid)
    return None if st is None else st[1]


def _schedstat(pid: int) -> tuple[float, float] | None:
    """(seconds on a CPU, seconds runnable but waiting) summed over the process's threads."""
    run, total, found = 0, 0, False
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except (FileNotFoundError, ProcessLookupError):
        return None
    for t in tasks:
        try:
            f = (t / "schedstat").read_text().split()
            run += int(f[0])
            total += int(f[1])
            found = True
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
    return (run / 1e9, total / 1e9) if found else None


def _machine() -> tuple[float, float]:
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = f[3] + f[4]
    return (sum(f) - idle) / TICK, sum(f) / TICK


def ovs_pid() -> int | None:
    for p in ("/var/run/openvswitch/ovs-vswitchd.pid", "/run/openvswitch/ovs-vswitchd.pid"):
        try:
            return int(Path(p).read_text().strip())
        except (FileNotFoundError, ValueError):
            continue
    return None


class CpuMonitor:
    def __init__(self, worker_pids=(), interval: float = 0.5):
        self.worker_pids = list(worker_pids)
        self.interval = interval
        self.ovs = ovs_pid()
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join(5)
        return self.result()

    def _loop(self):
        prev = self._read()
        while not self._stop.wait(self.interval):
            cur = self._read()
            dt = cur["t"] - prev["t"]
            if dt <= 0:
                continue
            s = {"t": cur["t"],
                 "machine_busy": (cur["busy"] - prev["busy"]) / max(cur["total"] - prev["total"], 1e-9),
                 "ovs_cores": _rate(cur["ovs"], prev["ovs"], dt),
                 "ovs_wait": _rate(cur["ovs_wait"], prev["ovs_wait"], dt),
                 "workers_cores": _delta(cur["workers"], prev["workers"]) / dt,
                 "workers_wait": _delta(cur["workers_wait"], prev["workers_wait"]) / dt
                 / max(len(self.worker_pids), 1),
                 # of the CPU time the workers asked for, the share they had to wait for
                 "workers_starved": _share(_delta(cur["workers_wait"], prev["workers_wait"]),
                                           _delta(cur["workers_run"], prev["workers_run"]))}
            self.samples.append(s)
            prev = cur

    def _read(self) -> dict:
        busy, total = _machine()
        cpu = {p: c for p in self.worker_pids if (c := _proc_cpu(p)) is not None}
        st = {p: x for p in self.worker_pids if (x := _schedstat(p)) is not None}
        # per pid: a worker that exits between two samples drops out of both, not out of one
        return {"t": time.time(), "busy": busy, "total": total, "workers": cpu,
                "workers_wait": {p: x[1] for p, x in st.items()}, "workers_run": {p: x[0] for p, x in st.items()},
                "ovs": _proc_cpu(self.ovs) if self.ovs else None,
                "ovs_wait": _sched_wait(self.ovs) if self.ovs else None}

    def result(self) -> dict:
        def stats(key):
            vals = sorted(s[key] for s in self.samples if s[key] is not None)
            if not vals:
                return None
            return {"mean": sum(vals) / len(vals), "p90": vals[int(0.9 * (len(vals) - 1))], "max": vals[-1]}
        return {"samples": len(self.samples), "cores": os.cpu_count(),
                "machine_busy": stats("machine_busy"), "ovs_cores": stats("ovs_cores"),
                "ovs_wait": stats("ovs_wait"), "workers_cores": stats("workers_cores"),
                "workers_wait": stats("workers_wait"), "workers_starved": self._overall_starved(),
                # each sample's end time and ovs-vswitchd's wait over it, so the analysis can
                # judge forwarding over the intervals that carried traffic (`forwarding_wait`)
                "interval": self.interval,
                "series": {"t": [round(s["t"], 3) for s in self.samples],
                           "ovs_wait": [None if s["ovs_wait"] is None else round(s["ovs_wait"], 4)
                                        for s in self.samples]}}

    def _overall_starved(self) -> dict | None:
        """Waited / (ran + waited) over the whole run, and its worst interval."""
        vals = [s["workers_starved"] for s in self.samples if s.get("workers_starved") is not None]
        return {"mean": sum(vals) / len(vals), "max": max(vals)} if vals else None


def _delta(cur: dict, prev: dict) -> float:
    """Sum over the pids sampled both times of cur - prev."""
    return sum(v - prev[p] for p, v in cur.items() if p in prev)


def _share(wait, run):
    return wait / (wait + run) if wait + run > 1e-3 else None


def _rate(cur, prev, dt):
    return (cur - prev) / dt if cur is not None and prev is not None else None


# ---- on another server of a cluster (docs/CLUSTER.md) -------------------------------------
def marked_workers(tag: str) -> list[int]:
    """This server's worker processes of run `tag` (started with SYNCBED_RUN=<tag>)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes()
            cmd = (d / "cmdline").read_bytes()
            parent = Path(f"/proc/{_ppid(d)}/cmdline").read_bytes() if b"workloads.zygote" in cmd else b""
        except (OSError, ValueError, IndexError):
            continue
        if is_worker(env, cmd, parent, tag):
            pids.append(int(d.name))
    return pids


def _ppid(proc: Path) -> int:
    return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])


def is_worker(environ: bytes, cmdline: bytes, parent_cmdline: bytes, tag: str) -> bool:
    """Whether a process (its /proc environ, cmdline and its parent's cmdline) is a worker of
    run `tag`: a worker process of its own (`workloads.worker`), or a worker forked by a pool's
    fork server (`python -m workloads.zygote`: the child keeps the command line of its parent,
    which is one; the fork server itself only waits for its children, and a shell whose command
    names it is not one). Pure."""
    if f"SYNCBED_RUN={tag}".encode() not in environ.split(b"\0"):
        return False

    def zygote(cmd: bytes) -> bool:
        return b"workloads.zygote" in cmd.split(b"\0")

    return b"workloads.worker" in cmdline or (zygote(cmdline) and zygote(parent_cmdline))


def main(argv=None) -> int:
    """`python -m emulation.monitor --tag RUN --out FILE`: sample this server's ovs-vswitchd and
    the workers of run RUN until SIGINT or SIGTERM, then write the result to FILE."""
    import argparse
    import json
    import signal

    ap = argparse.ArgumentParser(prog="python -m emulation.monitor")
    ap.add_argument("--tag", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--interval", type=float, default=0.5)
    args = ap.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    mon = CpuMonitor(marked_workers(args.tag), args.interval).start()
    print("monitoring", flush=True)
    stop.wait()
    result = mon.stop()
    result["workers"] = len(mon.worker_pids)
    Path(args.out).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
