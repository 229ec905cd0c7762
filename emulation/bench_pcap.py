"""Benchmark of emulation/pcap.py against scapy's RawPcapReader.

Generates a synthetic LINUX_SLL2 capture like the runner's
(``tcpdump -i any -y LINUX_SLL2 -s 128``): full-MSS data segments snapped to 128 bytes,
pure ACKs with timestamps options, a few ARP, spread over many switch ports in both
directions. Then prints packets/s of ``read_counts`` and of ``RawPcapReader``.

    syncbed bench pcap [--packets 2000000] [--path /tmp/syncbed_bench.pcap]
"""
from __future__ import annotations

import os
import struct
import time

import numpy as np

from emulation.pcap import read_counts


def _sll2(proto: int, ifindex: int, pkttype: int) -> bytes:
    return struct.pack(">HHIHBB8s", proto, 0, ifindex, 1, pkttype, 6, b"\x02\x00\x00\x00\x00\x01")


def _ipv4_tcp(payload_len: int, tcp_hlen: int) -> bytes:
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + tcp_hlen + payload_len, 1, 0x4000, 64, 6, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    tcp = struct.pack(">HHIIBBHHH", 40000, 5000, 1, 1, (tcp_hlen // 4) << 4, 0x10, 65535, 0, 0)
    return ip + tcp + bytes(tcp_hlen - 20) + bytes(payload_len)


def write_synthetic(path: str, n: int, snaplen: int = 128, n_ifaces: int = 96, seed: int = 0,
                    block: int = 100_000):
    """Write an n-packet SLL2 pcap; returns the expected total payload bytes."""
    rng = np.random.default_rng(seed)
    templates = [  # kinds: 0 data (1448 B payload), 1 pure ACK, 2 ARP
        _sll2(0x0800, 0, 0) + _ipv4_tcp(1448, 32),
        _sll2(0x0800, 0, 0) + _ipv4_tcp(0, 32),
        _sll2(0x0806, 0, 0) + bytes.fromhex("0001080006040001") + bytes(20),
    ]
    orig = np.array([len(t) for t in templates], dtype=np.int64)
    cap = np.minimum(orig, snaplen)
    bodies = [np.frombuffer(t[: cap[k]], dtype=np.uint8) for k, t in enumerate(templates)]
    expected = 0
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, 276))
        for first in range(0, n, block):
            m = min(block, n - first)
            kind = rng.choice(3, size=m, p=[0.6, 0.399, 0.001])
            expected += int(np.count_nonzero(kind == 0)) * 1448
            rec = 16 + cap[kind]
            starts = np.zeros(m, dtype=np.int64)
            np.cumsum(rec[:-1], out=starts[1:])
            total = int(starts[-1] + rec[-1])
            out = np.zeros(total + 8, dtype=np.uint8)
            for k, body in enumerate(bodies):
                rows = starts[kind == k]
                out[rows[:, None] + 16 + np.arange(body.size)] = body
            # per-record fields through byte-strided (unaligned) views
            le32 = np.ndarray(shape=(out.size - 3,), dtype="<u4", buffer=out.data, strides=(1,))
            be32 = np.ndarray(shape=(out.size - 3,), dtype=">u4", buffer=out.data, strides=(1,))
            t_us = 1_700_000_000 * 1_000_000 + (first + np.arange(m, dtype=np.int64)) * 2
            le32[starts] = t_us // 1_000_000
            le32[starts + 4] = t_us % 1_000_000
            le32[starts + 8] = cap[kind]
            le32[starts + 12] = orig[kind]
            be32[starts + 16 + 4] = 10 + rng.integers(0, n_ifaces, size=m)  # ifindex
            out[starts + 16 + 10] = np.where(rng.random(m) < 0.5, 4, 0)    # pkttype
            tcp = kind != 2
            be32[starts[tcp] + 16 + 20 + 20] = (  # sport << 16 | dport
                (40000 + rng.integers(0, 16, size=int(tcp.sum()))) << 16 | 5000)
            fh.write(out[:total].tobytes())
    return expected


def bench(packets: int = 2_000_000, path: str = "/tmp/syncbed_bench.pcap", repeat: int = 3,
          scapy_packets: int = 300_000, keep: bool = False, log=print) -> None:
    """Write a synthetic capture of `packets` packets at `path`, time `read_counts` on it (best of
    `repeat`, three variants) and scapy's RawPcapReader on its first `scapy_packets` records (0:
    skip it), logging packets/s; the file is removed unless `keep`."""
    t0 = time.perf_counter()
    expected = write_synthetic(path, packets)
    size = os.path.getsize(path)
    log(f"wrote {packets} packets ({size / 1e6:.1f} MB) to {path} "
        f"in {time.perf_counter() - t0:.2f} s")

    try:
        for label, kw in [("read_counts", {}),
                          ("read_counts(exclude_ports, networks)",
                           {"exclude_ports": {40001}, "networks": ["10.0.0.0/8"]}),
                          ("read_counts(series_bin=0.1, flows=True)",
                           {"series_bin": 0.1, "flows": True})]:
            best = None
            for _ in range(repeat):
                t = time.perf_counter()
                res = read_counts(path, **kw)
                dt = time.perf_counter() - t
                best = dt if best is None else min(best, dt)
            assert res.packets_total == packets
            if not kw:
                got = sum(v["payload_bytes"] for v in res.per_if.values())
                assert got == expected, (got, expected)
            log(f"{label:42s} {packets / best / 1e6:6.2f} M packets/s "
                f"({best:.3f} s, {size / best / 1e6:.0f} MB/s)")

        if scapy_packets:
            from scapy.utils import RawPcapReader
            m = 0
            t = time.perf_counter()
            with RawPcapReader(path) as rd:
                for _pkt in rd:
                    m += 1
                    if m >= scapy_packets:
                        break
            dt = time.perf_counter() - t
            log(f"{'scapy RawPcapReader (iterate only)':42s} {m / dt / 1e6:6.2f} M packets/s "
                f"({m} packets in {dt:.3f} s)")
    finally:
        if not keep:
            os.unlink(path)

