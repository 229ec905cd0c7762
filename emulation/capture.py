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
    """This machine's capture, and with `remotes` (RemoteCapture) those of the other servers,
    merged into one capture.pcap and ifindex.json when stopped (`offsets`: server name ->
    its clock's offset against this machine's, s), so that the analysis reads one file."""

    def __init__(self, run_dir: Path, intfs: list[str], state, enabled: bool = True, remotes=(), offsets=None,
                 underlay=()):
        self.remotes = list(remotes)
        self.underlay = list(underlay)  # this machine's devices toward the other servers: tunnel bytes
        self.underlay_before = None
        self.offsets = offsets or {}
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
        self.before = read_counters(self.intfs)
        self.underlay_before = read_counters(self.underlay)
        for r in self.remotes:  # other servers: their indexes k * IFINDEX_STRIDE + their own, as merged
            r.start(self.enabled)
            ifindex.update({r.index * IFINDEX_STRIDE + i: n for i, n in r.ifindex.items()})
        (self.run_dir / "ifindex.json").write_text(json.dumps(ifindex, indent=0))
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
        out = {"captured": int(m.group(1)) if m else None, "dropped_by_kernel": self.drops,
               "counters": counter_delta(self.before or {}, self.after)}
        if self.remotes:
            out = self._stop_remotes(out)
        return out

    def _stop_remotes(self, out: dict) -> dict:
        parts = {r.server.name: r.stop() for r in self.remotes}
        for got in parts.values():
            out["counters"].update(got["counters"])
            for k in ("captured", "dropped_by_kernel"):
                if out.get(k) is not None and got.get(k) is not None:
                    out[k] += got[k]
        out["servers"] = parts
        out["underlay"] = counter_delta(self.underlay_before or {}, read_counters(self.underlay))
        if self.enabled and self.pcap.exists():
            here = self.run_dir / "capture-server0.pcap"
            self.pcap.replace(here)
            out["merged_packets"] = merge_captures(self.pcap, [(here, 0, 0.0)] + [
                (r.pcap, r.index, self.offsets.get(r.server.name, 0.0)) for r in self.remotes])
            for f in [here] + [r.pcap for r in self.remotes]:
                f.unlink(missing_ok=True)
        return out


# ---- several servers ----------------------------------------------------------------------
IFINDEX_STRIDE = 1_000_000  # server k's interface indexes become k * stride + ifindex when merged


def merge_captures(out: Path, parts: list) -> int:
    """Merge LINUX_SLL2 pcaps of several servers into one, in time order: `parts` is
    [(path, server index k, clock offset s)]; a packet of server k gets interface index
    k * IFINDEX_STRIDE + its own (so that equal indexes of two servers stay apart) and its
    time minus the offset (the server's clock against the first's). Returns the packets
    written. Pure file work: heapq merge of the record streams (each is in time order)."""
    import heapq
    import struct

    def records(path, k, offset):
        with open(path, "rb") as fh:
            hdr = fh.read(24)
            if len(hdr) < 24:
                return
            magic = struct.unpack("<I", hdr[:4])[0]
            e = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
            unit = 1e9 if struct.unpack(e + "I", hdr[:4])[0] == 0xA1B23C4D else 1e6
            linktype = struct.unpack(e + "I", hdr[20:24])[0] & 0xFFFF
            if linktype != 276:
                raise ValueError(f"{path}: link type {linktype}, not LINUX_SLL2 (276): cannot merge")
            while True:
                rh = fh.read(16)
                if len(rh) < 16:
                    return
                sec, frac, incl, orig = struct.unpack(e + "IIII", rh)
                body = bytearray(fh.read(incl))
                if len(body) < incl:
                    return
                if k and len(body) >= 8:
                    ifindex = struct.unpack_from(">I", body, 4)[0]
                    struct.pack_into(">I", body, 4, k * IFINDEX_STRIDE + ifindex)
                t = sec + frac / unit - offset
                yield t, orig, bytes(body)

    n = 0
    with open(out, "wb") as fo:
        fo.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 276))
        for t, orig, body in heapq.merge(*(records(p, k, o) for p, k, o in parts), key=lambda r: r[0]):
            sec = int(t)
            fo.write(struct.pack("<IIII", sec, min(int(round((t - sec) * 1e6)), 999999), len(body), orig))
            fo.write(body)
            n += 1
    return n


class RemoteCapture:
    """The capture of another server: tcpdump in its root namespace (over ssh, marked
    SYNCBED_RUN for cleanup) into a file there, the same filter and snap length as here;
    interface indexes and counters read there. The file is in the run's folder, which every
    server sees (emulation/cluster.py preflight)."""

    def __init__(self, server, run_dir: Path, intfs: list[str], tag: str, index: int, state=None):
        self.server, self.intfs, self.tag, self.index = server, intfs, tag, index
        self.run_dir = Path(run_dir)
        self.name = f"server{index}"
        self.pcap = self.run_dir / f"capture-{self.name}.pcap"
        self.err_path = self.run_dir / f"tcpdump-{self.name}.log"
        self.state = state
        self.proc = None
        self.ifindex = {}
        self.before = self.after = None

    def _counters(self) -> dict:
        script = "".join(f"echo {i} $(cat /sys/class/net/{i}/ifindex /sys/class/net/{i}/statistics/"
                         "{rx_bytes,tx_bytes,rx_packets,tx_packets} 2>/dev/null)\n" for i in self.intfs)
        out = {}
        for line in self.server.run("bash -s", stdin=script, timeout=60).stdout.splitlines():
            f = line.split()
            if len(f) == 6:
                self.ifindex[int(f[1])] = f[0]
                out[f[0]] = dict(zip(("rx_bytes", "tx_bytes", "rx_packets", "tx_packets"), map(int, f[2:])))
        return out

    def start(self, enabled: bool = True) -> "RemoteCapture":
        self.before = self._counters()
        if not enabled:
            return self
        err = open(self.err_path, "w")
        cmd = (f"exec env SYNCBED_RUN={self.tag} tcpdump -i any -y LINUX_SLL2 -s {SNAPLEN} -B 65536 -n "
               f"-w {self.pcap} '{FILTER}'")
        self.proc = subprocess.Popen(self.server.ssh() + [cmd], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        err.close()
        if self.state is not None:
            self.state.add("pgids", self.proc.pid)
        deadline = time.time() + 15
        while "listening on" not in self.err_path.read_text():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"tcpdump on {self.server.name} did not start: "
                                   f"{self.err_path.read_text().strip()[-300:]}")
            time.sleep(0.05)
        return self

    def stop(self) -> dict:
        if self.proc is not None and self.proc.poll() is None:
            self.server.run(f"pkill -INT -f 'tcpdump .* -w {self.pcap}'", timeout=30)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.after = self._counters()
        text = self.err_path.read_text() if self.err_path.exists() else ""
        m = re.search(r"(\d+) packets dropped by kernel", text)
        c = re.search(r"(\d+) packets captured", text)
        return {"captured": int(c.group(1)) if c else None, "dropped_by_kernel": int(m.group(1)) if m else None,
                "counters": counter_delta(self.before or {}, self.after)}
