"""Background traffic standing for concurrent jobs: iperf3 flows between hosts that are not workers.

An experiment lists flows (YAML `background:` or `--background`, repeatable), each
`SRC:DST` (unlimited: TCP takes what the shaped links leave) or `SRC:DST:MBPS` (iperf3's
own pacing at that rate), or the mapping `{src, dst, mbps}`. Flow i uses TCP port
PORT_BASE + i: the capture keeps it apart from gradient bytes by that port (the analysis
passes the ports to `pcap.read_counts(exclude_ports=...)` and reports the excluded payload
per link as background bytes).

Per run, the flows start before the workers (servers first, then clients, each checked to
be running) and stop after them; their processes are registered in the run's State, so a
killed run's `syncbed clean` stops them too. On another server of a cluster, a flow's iperf3
runs under ssh without a pty, so stopping ssh does not stop it: it carries SYNCBED_BACKGROUND in
its environment and `stop` kills the run's processes so marked there. iperf3's interval reports go to
`background/flow<i>.log` in the run folder.

`parse` and `check` are pure (unit-tested); `Background` runs the processes.
"""
from __future__ import annotations

import math
import os
import time
from pathlib import Path

from emulation.state import stop_procs

MARK = "SYNCBED_BACKGROUND"  # in a background iperf3's environment (its stop across servers)
PORT_BASE = 5301  # flow i: TCP port PORT_BASE + i (Gloo's ports are ephemeral, > 32768)
MAX_FLOWS = 64
MAX_MBPS = 1000.0
PROBE_SECONDS = 3.0  # a background probe: about 4 one-second intervals once the flow started


_UNITS = {"bits/sec": 1e-6, "Kbits/sec": 1e-3, "Mbits/sec": 1.0, "Gbits/sec": 1e3}


def interval_rates(text: str) -> list[tuple[float, float]]:
    """[(interval end s, Mbit/s)] of an iperf3 client's interval lines (`-i 1`), in order; the
    summary lines (sender/receiver totals) are left out."""
    out = []
    for line in text.splitlines():
        parts = line.replace("[", " ").replace("]", " ").split()
        if "sec" not in parts or "sender" in parts or "receiver" in parts:
            continue
        try:
            span = parts[parts.index("sec") - 1]
            unit = next(u for u in parts if u in _UNITS)
            value = float(parts[parts.index(unit) - 1])
            end = float(span.split("-")[1])
        except (StopIteration, ValueError, IndexError):
            continue
        out.append((end, value * _UNITS[unit]))
    return out


def probe_rate(text: str, skip_s: float = 1.0) -> float | None:
    """A flow's rate from its interval lines: the mean after the first `skip_s` seconds (TCP's
    slow start), else of every interval; None without any."""
    rates = interval_rates(text)
    settled = [r for end, r in rates if end > skip_s + 1e-9] or [r for _, r in rates]
    return sum(settled) / len(settled) if settled else None


def _rate(value, item) -> float | None:
    if value in (None, "", "max", "unlimited"):
        return None
    try:
        mbps = float(value)
    except (TypeError, ValueError):
        mbps = float("nan")
    if isinstance(value, bool) or not math.isfinite(mbps) or not 0 < mbps <= MAX_MBPS:
        raise ValueError(f"background flow {item!r}: rate {value!r} must be Mbit/s in (0, {MAX_MBPS:g}] "
                         "or omitted for unlimited")
    return mbps


def parse(items) -> list[dict]:
    """Flows from YAML/CLI form -> [{"src", "dst", "mbps" (None: unlimited), "port"}]."""
    if items in (None, [], ""):
        return []
    if isinstance(items, (str, dict)):
        items = [items]
    if not isinstance(items, (list, tuple)):
        raise ValueError(f"background must be a list of flows SRC:DST[:MBPS] or {{src, dst, mbps}}, got {items!r}")
    if len(items) > MAX_FLOWS:
        raise ValueError(f"background: {len(items)} flows; at most {MAX_FLOWS}")
    flows = []
    for i, item in enumerate(items):
        if isinstance(item, dict):
            extra = set(item) - {"src", "dst", "mbps"}
            if extra or not {"src", "dst"} <= set(item):
                raise ValueError(f"background flow {item!r}: keys are src, dst and optionally mbps")
            src, dst, mbps = str(item["src"]), str(item["dst"]), item.get("mbps")
        elif isinstance(item, str) and 2 <= len(item.split(":")) <= 3:
            src, dst, *rest = (p.strip() for p in item.split(":"))
            mbps = rest[0] if rest else None
        else:
            raise ValueError(f"background flow {item!r} is not SRC:DST or SRC:DST:MBPS (e.g. h0_1_2:h2_1_3:5)")
        if not src or not dst or src == dst:
            raise ValueError(f"background flow {item!r}: needs two different hosts")
        flows.append({"src": src, "dst": dst, "mbps": _rate(mbps, item), "port": PORT_BASE + i})
    return flows


def check(flows: list[dict], topo, busy: list[str]) -> None:
    """Hosts exist in `topo` and none is a rank's host (`busy`): one line listing the valid ones."""
    hosts = topo.hosts()
    free = [h for h in hosts if h not in set(busy)]
    for f in flows:
        for end in ("src", "dst"):
            h = f[end]
            if h not in hosts:
                raise ValueError(f"background flow {f['src']}:{f['dst']}: {h} is not a host of {topo.name}; "
                                 f"hosts free of workers: {', '.join(free) or 'none'}")
            if h in busy:
                raise ValueError(f"background flow {f['src']}:{f['dst']}: {h} runs a worker or server of this run; "
                                 f"hosts free of workers: {', '.join(free) or 'none (use fewer workers)'}")


def label(f: dict) -> str:
    return f"{f['src']}->{f['dst']} " + (f"{f['mbps']:g} Mbit/s" if f.get("mbps") else "unlimited")


class Background:
    """The iperf3 servers and clients of one run's flows (nothing to do without flows)."""

    def __init__(self, net, topo, flows: list[dict], run_dir: Path, state, log=print):
        self.net, self.topo, self.flows, self.state, self.log = net, topo, flows, state, log
        self.dir = Path(run_dir) / "background"
        self.procs: list = []

    def _ip(self, host: str) -> str:
        return self.topo.host_nics(host)[0].ip

    def _popen(self, host: str, cmd: list, out: Path):
        with open(out, "w") as fh:  # marked: on another server, stop() finds it by the mark
            p = self.net.host(host).popen(cmd, stdout=fh, stderr=fh, env=dict(os.environ, **{MARK: "1"}))
        self.procs.append(p)
        self.state.add("pgids", p.pid)
        return p

    def start(self) -> "Background":
        if not self.flows:
            return self
        self.dir.mkdir(parents=True, exist_ok=True)
        for i, f in enumerate(self.flows):
            self._popen(f["dst"], ["iperf3", "-s", "-p", str(f["port"]), "-1", "-i", "1"],
                        self.dir / f"server{i}.log")
        time.sleep(0.5)  # the servers listen before the clients connect
        clients = []
        for i, f in enumerate(self.flows):
            rate = f"{f['mbps']}M" if f.get("mbps") else "0"  # 0: unlimited
            clients.append(self._popen(f["src"], ["iperf3", "-c", self._ip(f["dst"]), "-p", str(f["port"]),
                                                  "-t", "86400", "-b", rate, "-i", "1", "--forceflush"],
                                       self.dir / f"flow{i}.log"))
        time.sleep(1.0)
        for i, (f, p) in enumerate(zip(self.flows, clients)):
            if p.poll() is not None:
                tail = (self.dir / f"flow{i}.log").read_text(errors="replace").strip().splitlines()[-1:]
                self.stop()
                raise RuntimeError(f"background flow {label(f)} did not start: {tail[0] if tail else 'no output'}")
        self.log(f"  background: {len(self.flows)} flow(s) running: {'; '.join(label(f) for f in self.flows)}")
        return self

    def measure(self, seconds: float = PROBE_SECONDS) -> list[dict]:
        """Probe before the workers start: let the flows run `seconds` more, then each flow's
        rate from its interval reports (`probe_rate`). Returns the flows with `measured_mbps`
        (None when iperf3 reported nothing)."""
        time.sleep(seconds)
        out = []
        for i, f in enumerate(self.flows):
            log = self.dir / f"flow{i}.log"
            rate = probe_rate(log.read_text(errors="replace")) if log.exists() else None
            out.append(dict(f, measured_mbps=None if rate is None else round(rate, 3)))
        self.log("  background probe: " + "; ".join(
            f"{label(f)} {f['measured_mbps'] if f['measured_mbps'] is not None else '?'} Mbit/s" for f in out))
        return out

    def stop(self) -> None:
        stop_procs(self.procs, grace=1.0)
        if self.flows:  # on other servers of a cluster (a no-op on one machine)
            try:
                self.net.stop_marked(sorted({h for f in self.flows for h in (f["src"], f["dst"])}), MARK)
            except RuntimeError as e:  # the run's record still lets `syncbed clean` kill them
                self.log(f"  background: {e}")
