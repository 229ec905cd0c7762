"""Packet capture on every switch port, with one tcpdump, plus interface counters.

One `tcpdump -i any` in the root namespace sees every switch port (the hosts' ends of
the links live in their own namespaces, so nothing is counted twice). The LINUX_SLL2
link type keeps each packet's interface index and direction; `ifindex.json` maps the
indexes back to interface names. The snaplen is small (headers only): the analysis
takes payload lengths from the IP/TCP headers. The filter keeps TCP inside 10/8 and
ARP; OpenFlow on 127.0.0.1 and everything else stays out. Counters from
/sys/class/net are read before and after, to cross-check the capture.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

SNAPLEN = 128
FILTER = "(tcp and net 10.0.0.0/8) or arp"


def read_counters(intfs) -> dict:
    out = {}
    for i in intfs:
        base = Path("/sys/class/net") / i / "statistics"
        try:
            out[i] = {f"{d}_{u}": int((base / f"{d}_{u}").read_text())
                      for d in ("rx", "tx") for u in ("bytes", "packets")}
        except FileNotFoundError:
            out[i] = None
    return out


def counter_delta(before: dict, after: dict) -> dict:
    d = {}
    for i, a in after.items():
        b = before.get(i)
        if a and b:
            d[i] = {k: a[k] - b[k] for k in a}
    return d


class Capture:
    def __init__(self, run_dir: Path, intfs: list[str], state, enabled: bool = True):
        self.run_dir = Path(run_dir)
        self.intfs = intfs
        self.state = state
        self.enabled = enabled
        self.pcap = self.run_dir / "capture.pcap"
        self.err_path = self.run_dir / "tcpdump.log"
        self.proc = None
        self.before = self.after = None
        self.drops = None

    def start(self) -> "Capture":
        ifindex = {int(Path(f"/sys/class/net/{i}/ifindex").read_text()): i for i in self.intfs}
        (self.run_dir / "ifindex.json").write_text(json.dumps(ifindex, indent=0))
        self.before = read_counters(self.intfs)
        if not self.enabled:
            return self
        err = open(self.err_path, "w")
        self.proc = subprocess.Popen(
            ["tcpdump", "-i", "any", "-y", "LINUX_SLL2", "-s", str(SNAPLEN), "-B", "65536", "-n",
             "-w", str(self.pcap), FILTER], stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        err.close()
        self.state.add("pgids", self.proc.pid)
        deadline = time.time() + 10
        while time.time() < deadline:  # "listening on any" once the socket is open
            if "listening on" in self.err_path.read_text():
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"tcpdump failed: {self.err_path.read_text().strip()[-300:]}")
            time.sleep(0.05)
        raise RuntimeError("tcpdump did not start listening within 10 s")

    def stop(self) -> dict:
        if self.proc is not None and self.proc.poll() is None:
            # tcpdump (libpcap, TPACKET_V3, not immediate mode) gets the kernel's ring blocks when
            # full or after its 1000 ms timeout, and on SIGINT drops the block still filling:
            # wait out that timeout so the last packets are written (measured: a pool worker
            # that ends at once lost the last sync's 0.6 s of packets with 0.3 s here)
            time.sleep(1.1)
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.after = read_counters(self.intfs)
        text = self.err_path.read_text() if self.err_path.exists() else ""
        m = re.search(r"(\d+) packets dropped by kernel", text)
        self.drops = int(m.group(1)) if m else (None if self.enabled else 0)
        m = re.search(r"(\d+) packets captured", text)
        return {"captured": int(m.group(1)) if m else None, "dropped_by_kernel": self.drops,
                "counters": counter_delta(self.before or {}, self.after)}
