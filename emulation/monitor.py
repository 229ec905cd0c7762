"""CPU sampling during a run: is the emulation CPU-bound? (Mininet-HiFi's invariant.)

Samples every `interval` s: the machine's busy fraction (/proc/stat), ovs-vswitchd's
CPU (in cores; its forwarding runs mostly on one thread) and the workers' CPU.
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
                 "ovs_cores": (cur["ovs"] - prev["ovs"]) / dt if cur["ovs"] is not None and prev["ovs"] is not None else None,
                 "workers_cores": (cur["workers"] - prev["workers"]) / dt}
            self.samples.append(s)
            prev = cur

    def _read(self) -> dict:
        busy, total = _machine()
        w = sum(c for c in (_proc_cpu(p) for p in self.worker_pids) if c is not None)
        return {"t": time.time(), "busy": busy, "total": total,
                "ovs": _proc_cpu(self.ovs) if self.ovs else None, "workers": w}

    def result(self) -> dict:
        def stats(key):
            vals = sorted(s[key] for s in self.samples if s[key] is not None)
            if not vals:
                return None
            return {"mean": sum(vals) / len(vals), "p90": vals[int(0.9 * (len(vals) - 1))], "max": vals[-1]}
        return {"samples": len(self.samples), "cores": os.cpu_count(),
                "machine_busy": stats("machine_busy"), "ovs_cores": stats("ovs_cores"),
                "workers_cores": stats("workers_cores")}
