"""Fast classic-pcap reader: TCP payload bytes per interface and direction.

The runner captures every switch port with one process in the root namespace::

    tcpdump -i any -y LINUX_SLL2 -s 128 -B 65536 -w capture.pcap 'tcp or arp'

and this module turns that file into per-(interface, direction) byte counts at
well over a million packets per second (see ``emulation/bench_pcap.py``), in
bounded memory (the file is streamed in small chunks, files of several GB are fine).

API
---
``read_counts(path, exclude_ports=(), networks=None, series_bin=None, flows=False,
iface=None) -> PcapCounts``

* ``exclude_ports``: TCP ports; a segment whose source or destination port is in the
  set is not counted as payload (it is counted in ``excluded_packets``).
* ``networks``: IPv4 networks (``"10.0.0.0/8"`` strings or ``ipaddress`` objects);
  when given, only TCP segments whose source AND destination address both lie in one
  of them count as payload (the others go to ``excluded_packets``).
* ``series_bin``: bin width in seconds; when given, ``series`` holds the payload
  bytes per bin for every key (all arrays share the origin ``series_t0`` and length).
* ``flows``: when true, ``flows`` holds payload bytes per TCP flow for every key.
* ``iface``: key used in place of the interface index for captures that do not
  carry one (Ethernet DLT 1 and LINUX_SLL DLT 113), e.g. the interface name of a
  per-interface capture.

``PcapCounts`` fields:

* ``linktype`` (1 EN10MB, 113 LINUX_SLL, 276 LINUX_SLL2; None for a file shorter
  than the 24-byte pcap header, e.g. tcpdump killed before its first flush),
  ``snaplen``, ``nanosecond`` (timestamp resolution of the file).
* ``packets_total``: complete records read.
* ``per_if``: ``{(ifindex, dir): {...}}`` where ``dir`` is ``"rx"`` (SLL packet type
  0..3: received on that interface), ``"tx"`` (type 4, PACKET_OUTGOING: sent out of
  that interface) or ``"any"`` (Ethernet captures carry no direction; SLL types >= 5).
  For DLT 1/113 ``ifindex`` is the ``iface`` argument. Values (ints):

  - ``packets``: all records; ``wire_bytes``: their link-layer frame bytes (original
    length; for cooked SLL/SLL2 records of an Ethernet device (ARPHRD 1) the cooked
    header is replaced by the 14-byte Ethernet header it stands for, so this is the
    Ethernet frame length without FCS/preamble).
  - ``tcp_packets``, ``tcp_wire_bytes``, ``payload_bytes``: the counted TCP segments
    (IPv4, first fragment, not excluded). The payload is
    ``IP total length - IP header length - TCP data offset``, never derived from the
    captured length, so a 128-byte snaplen is enough. (If the IP total length is 0,
    as for >64 KiB GSO "BIG TCP" packets, the original length is used instead.)
  - ``unique_payload_bytes``: the payload bytes without TCP retransmissions: per TCP
    flow ``(src ip, sport, dst ip, dport)`` seen on that key, the size of the union of
    the sequence ranges ``[seq, seq + payload)`` of its counted segments (32-bit
    sequence wraparound handled; see below). ``retrans_bytes`` is
    ``payload_bytes - unique_payload_bytes`` (>= 0): bytes seen more than once, e.g.
    the segments a switch queue dropped further on, re-sent through this port.
  - ``excluded_packets``: TCP segments dropped by ``exclude_ports`` / ``networks``;
    ``excluded_payload_bytes``: their payload (retransmissions included), e.g. the
    background flows the runner keeps apart from gradient bytes by port.
  - ``other_packets``: everything else (ARP, non-TCP, IPv6, non-first IPv4
    fragments, TCP whose headers were not captured); never counted as payload.

* ``retrans_total``: sum of ``retrans_bytes`` over all keys (0 for an empty file). Like
  the payload, a retransmission crossing several ports is counted on each of them.
* ``short_headers``: TCP/IPv4 records whose TCP header did not fit in the snaplen.
* ``t_first``, ``t_last``: smallest / largest record timestamp (float seconds), None
  when there is no record.
* ``series``: ``{(ifindex, dir): np.ndarray[int64]}`` payload bytes per bin, bin ``i``
  covering ``[series_t0 + i*series_bin, series_t0 + (i+1)*series_bin)`` (``series_t0``
  is a multiple of ``series_bin``); None unless ``series_bin`` was given.
* ``flows``: ``{(ifindex, dir): {(src_ip, sport, dst_ip, dport): payload_bytes}}``
  (addresses dotted strings; every flow with a counted segment, so pure-ACK flows
  appear with 0 bytes); None unless ``flows=True``. Note that on an all-ports
  capture a segment is seen on every port it crosses (rx and tx), so sum over one
  key or one direction, not over everything.
* ``truncated_records``: 1 when the file ends inside a record (tcpdump killed in the
  middle of a write), else 0; the complete records before it are counted.

Formats: classic pcap in both byte orders, microsecond (0xa1b2c3d4) and nanosecond
(0xa1b23c4d) magic. pcapng is rejected with a ValueError (use ``tcpdump -w``).

Retransmissions: the sequence numbers of a flow are unwrapped incrementally, each
segment relative to the previous segment of the same flow in capture order (the 32-bit
difference taken within +-2^31), so flows of any length and wraparound across 2^32 are
handled, and reordering or retransmission within 2 GiB of the latest segment is placed
correctly. Zero-length segments (pure ACKs, keep-alives, SYN/FIN without data) add
nothing. A 4-tuple reused by a new connection (new initial sequence number) lands at an
unrelated offset and is, with overwhelming probability, counted as new data. Per chunk,
the ranges of every flow are merged into disjoint intervals (one per flow for in-order
data); the interval lists are merged again periodically and at the end, so memory stays
proportional to the number of flows (plus capture holes), not of packets.

Implementation: records are framed by a tight Python loop that only reads the
captured length of each 16-byte record header; every header field of every packet
of a chunk is then gathered with numpy from overlapping, byte-strided (unaligned)
views of the chunk buffer, and aggregated with ``np.bincount``. Chunks are small
(2 MiB) so that the gathers hit the CPU cache.
"""
from __future__ import annotations

import dataclasses
import ipaddress
import math
import os
import struct
from typing import Any, Iterable

import numpy as np

__all__ = ["PcapCounts", "read_counts", "LINKTYPE_ETHERNET", "LINKTYPE_LINUX_SLL",
           "LINKTYPE_LINUX_SLL2"]

LINKTYPE_ETHERNET = 1
LINKTYPE_LINUX_SLL = 113
LINKTYPE_LINUX_SLL2 = 276

_MAGIC_US = 0xA1B2C3D4
_MAGIC_NS = 0xA1B23C4D
_PCAPNG = 0x0A0D0D0A

DIRS = ("rx", "tx", "any")
_RX, _TX, _ANY = 0, 1, 2
# Categories of a record (mutually exclusive).
_CAT_PAYLOAD, _CAT_EXCLUDED, _CAT_OTHER = 0, 1, 2

_CHUNK = 2 << 20          # bytes of file per numpy pass (cache-sized)
_PAD = 256                # slack after the data so header gathers never go out of bounds
_MAX_RECORD = 1 << 28     # a captured length above this means a corrupt file
_IV_MERGE_ROWS = 1 << 20  # pending per-chunk flow intervals merged beyond this many rows
_H31 = 1 << 31
_M32 = (1 << 32) - 1


@dataclasses.dataclass
class PcapCounts:
    linktype: int | None
    packets_total: int
    per_if: dict
    t_first: float | None
    t_last: float | None
    series: dict | None
    flows: dict | None
    truncated_records: int
    snaplen: int | None = None
    nanosecond: bool = False
    short_headers: int = 0
    series_t0: float | None = None
    series_bin: float | None = None
    retrans_total: int = 0


def _empty_stats() -> dict:
    return {"packets": 0, "wire_bytes": 0, "tcp_packets": 0, "tcp_wire_bytes": 0,
            "payload_bytes": 0, "unique_payload_bytes": 0, "retrans_bytes": 0,
            "excluded_packets": 0, "excluded_payload_bytes": 0, "other_packets": 0}


def _parse_networks(networks) -> list[tuple[int, int]]:
    out = []
    for n in networks:
        net = n if isinstance(n, ipaddress.IPv4Network) else ipaddress.ip_network(str(n), strict=False)
        if net.version != 4:
            raise ValueError(f"only IPv4 networks are supported: {n}")
        out.append((int(net.network_address), int(net.netmask)))
    return out


def _frame(buf: bytearray, have: int, unpack_from) -> tuple[list[int], int]:
    """Offsets of the complete records in buf[:have] and the offset after the last one."""
    offs: list[int] = []
    app = offs.append
    off = 0
    lim = have - 16
    while off <= lim:
        app(off)
        off += 16 + unpack_from(buf, off + 8)[0]
    if off > have:      # only the last record can be incomplete
        off = offs.pop()
    return offs, off


def _views(buf: bytearray, endian: str) -> tuple[np.ndarray, ...]:
    """(u8, f32, b32, b16): the chunk buffer as bytes and as overlapping byte-strided
    (unaligned) views, so that ``view[offset]`` reads the field at any byte offset: f32 a
    32-bit word in the file's byte order (record headers), b32 and b16 big-endian words
    (network headers)."""
    size = len(buf)
    return (np.frombuffer(buf, dtype=np.uint8),
            np.ndarray(shape=(size - 3,), dtype=endian + "u4", buffer=buf, strides=(1,)),
            np.ndarray(shape=(size - 3,), dtype=">u4", buffer=buf, strides=(1,)),
            np.ndarray(shape=(size - 1,), dtype=">u2", buffer=buf, strides=(1,)))


def _key_index(keycode: np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys, kidx): the distinct keycodes of a chunk's ``n`` records, ascending, and each
    record's index into them; the single key ``_ANY`` when the capture carries no key
    (``keycode`` None). A dense bincount when the codes span < 4096, else ``np.unique``."""
    if keycode is None:
        return np.array([_ANY], dtype=np.int64), np.zeros(n, dtype=np.int64)
    kmin = int(keycode.min())
    kmax = int(keycode.max())
    if kmax - kmin >= 4096:
        keys, kidx = np.unique(keycode, return_inverse=True)
        return keys, kidx.reshape(-1)
    rel = keycode - kmin
    present = np.flatnonzero(np.bincount(rel, minlength=kmax - kmin + 1))
    if present.size == kmax - kmin + 1:
        return present + kmin, rel
    remap = np.zeros(kmax - kmin + 1, dtype=np.int64)
    remap[present] = np.arange(present.size)
    return present + kmin, remap[rel]


class _Reader:
    """Accumulates the counts of one file, chunk by chunk."""

    def __init__(self, linktype, endian, nanosecond, exclude_ports, networks,
                 series_bin, flows, iface):
        self.linktype = linktype
        self.endian = endian
        self.nanosecond = nanosecond
        if exclude_ports:
            lut = np.zeros(65536, dtype=bool)
            lut[np.asarray(sorted(int(p) for p in exclude_ports), dtype=np.int64)] = True
            self.port_lut = lut
        else:
            self.port_lut = None
        self.nets = _parse_networks(networks) if networks is not None else None
        self.series_bin = float(series_bin) if series_bin else None
        self.want_flows = bool(flows)
        self.iface = iface
        self.packets = 0
        self.short = 0
        self.ts_min = None   # integer timestamps in file units (us or ns)
        self.ts_max = None
        # keycode -> [packets per category (3)], [wire per category (3)], payload
        self.acc: dict[int, list[int]] = {}
        self.series_ref = None
        self.series_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.flow_parts: list[tuple[np.ndarray, ...]] = []
        # Unique payload (retransmissions). Flows get dense ids ("gid", see _flow_ids).
        self.kid: dict[int, int] = {}           # keycode -> dense key id
        self.nflows = 0
        self.h_bits = 10
        self.h_tab = np.full(1 << self.h_bits, -1, dtype=np.int64)   # slot -> flow id
        self.f_a = np.zeros(256, dtype=np.int64)    # flow id -> src << 32 | dst
        self.f_b = np.zeros(256, dtype=np.int64)    # flow id -> key id << 32 | ports
        self.f_raw = np.zeros(256, dtype=np.int64)  # flow id -> seq of its latest segment
        self.f_unw = np.zeros(256, dtype=np.int64)  # ... and that seq unwrapped
        self.iv_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # gid, start, end
        self.iv_rows = 0
        self.iv_merged_rows = 0

    # -- one chunk -----------------------------------------------------------------
    def chunk(self, buf: bytearray, starts: np.ndarray) -> None:
        """Count the complete records of one chunk. ``starts``: their offsets in ``buf``
        plus the end offset. Each step below works on every record of the chunk at once
        (numpy gathers from the byte-strided views of ``_views``)."""
        o = starts[:-1]
        n = o.size
        if n == 0:
            return
        caplen = np.diff(starts) - 16
        u8, f32, b32, b16 = _views(buf, self.endian)
        sec, frac = self._timestamps(f32, o)
        origlen = f32[o + 12].astype(np.int64)
        d = o + 16  # first byte of each frame
        proto, hl, keycode, wire = self._link_header(u8, b32, b16, d, origlen)
        l3, t, tcp, payload = self._tcp_segments(u8, b16, d, hl, proto, caplen, origlen)
        sel, ports, addrs = self._select(b32, l3, t, tcp, n)
        keys, kidx = _key_index(keycode, n)
        payload_sel = np.where(sel, payload, 0)
        self._accumulate(keys, kidx, tcp, sel, wire, payload, payload_sel)
        self.packets += n
        seg = np.flatnonzero(sel & (payload > 0))
        if seg.size:
            self._segments(seg, keys, kidx, l3, t, payload, b32,
                           None if addrs is None else (addrs[0][seg], addrs[1][seg]))
        if self.series_bin is not None:
            self._add_series(sec, frac, keys, kidx, payload_sel)
        if self.want_flows:
            self._add_flow_bytes(sel, keys, kidx, ports, addrs, payload)

    def _timestamps(self, f32: np.ndarray, o: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(seconds, fraction) of each record (int64; the fraction in file units, us or ns);
        widens the running first/last timestamps."""
        sec = f32[o].astype(np.int64)
        frac = f32[o + 4].astype(np.int64)
        ts = sec * (1_000_000_000 if self.nanosecond else 1_000_000) + frac
        tmin, tmax = int(ts.min()), int(ts.max())
        self.ts_min = tmin if self.ts_min is None else min(self.ts_min, tmin)
        self.ts_max = tmax if self.ts_max is None else max(self.ts_max, tmax)
        return sec, frac

    def _link_header(self, u8, b32, b16, d, origlen) -> tuple:
        """(proto, hl, keycode, wire) of each record from its link-layer header: the
        EtherType, the header length (an int; an array when some Ethernet frames carry an
        802.1Q tag), the keycode ``ifindex * 4 + direction`` (None for a capture with one
        key: Ethernet) and the wire length (a cooked header of an Ethernet device stands
        for the 14-byte Ethernet header)."""
        if self.linktype == LINKTYPE_LINUX_SLL2:
            hl = 20
            proto = b16[d]
            ifindex = b32[d + 4].astype(np.int64)
            pkttype = u8[d + 10]
            arphrd = b16[d + 8]
        elif self.linktype == LINKTYPE_LINUX_SLL:
            hl = 16
            proto = b16[d + 14]
            ifindex = None
            pkttype = b16[d]
            arphrd = b16[d + 2]
        else:  # Ethernet: no direction, no interface; one 802.1Q tag
            proto = b16[d + 12]
            vlan = proto == 0x8100
            if vlan.any():
                return np.where(vlan, b16[d + 16], proto), np.where(vlan, 18, 14), None, origlen
            return proto, 14, None, origlen
        direction = np.where(pkttype == 4, _TX, np.where(pkttype <= 3, _RX, _ANY))
        keycode = ifindex * 4 + direction if ifindex is not None else direction.astype(np.int64)
        wire = origlen + np.where(arphrd == 1, 14 - hl, -hl)
        return proto, hl, keycode, wire

    def _tcp_segments(self, u8, b16, d, hl, proto, caplen, origlen) -> tuple:
        """(l3, t, tcp, payload): each record's IP and TCP header offsets, whether it is a
        TCP segment whose headers were captured (IPv4, first fragment), and its TCP payload
        length (``IP total length - IP header - TCP data offset``, never the captured
        length; the original length when the total length is 0, as for BIG TCP). Counts
        the TCP segments whose TCP header did not fit in the snaplen (``short``)."""
        l3 = d + hl
        vhl = u8[l3]
        ihl = (vhl & 15).astype(np.int64) * 4
        is_tcp = ((proto == 0x0800) & (caplen >= hl + 20) & ((vhl >> 4) == 4) & (ihl >= 20)
                  & (u8[l3 + 9] == 6) & ((b16[l3 + 6] & 0x1FFF) == 0))
        t = l3 + ihl
        tcp_ok = caplen >= (t - d) + 13
        self.short += int(np.count_nonzero(is_tcp & ~tcp_ok))
        tcp = is_tcp & tcp_ok
        doff = (u8[t + 12] >> 4).astype(np.int64) * 4
        totlen = b16[l3 + 2].astype(np.int64)
        if not totlen.all():
            totlen = np.where(totlen == 0, origlen - (l3 - d), totlen)
        payload = totlen - ihl - doff
        np.maximum(payload, 0, out=payload)
        return l3, t, tcp, payload

    def _select(self, b32, l3, t, tcp, n: int) -> tuple:
        """(sel, ports, addrs): the TCP segments counted as payload (``exclude_ports`` and
        ``networks`` applied), and the (sport, dport) and (src, dst) columns when a filter
        or the flows needed them (else None)."""
        sel = tcp
        ports = addrs = None
        if self.port_lut is not None or self.want_flows:
            both = b32[t]
            ports = (both >> 16, both & 0xFFFF)
            if self.port_lut is not None:
                sel = sel & ~(self.port_lut[ports[0]] | self.port_lut[ports[1]])
        if self.nets is not None or self.want_flows:
            addrs = src, dst = (b32[l3 + 12], b32[l3 + 16])
            if self.nets is not None:
                src_in = np.zeros(n, dtype=bool)
                dst_in = np.zeros(n, dtype=bool)
                for net, mask in self.nets:
                    src_in |= (src & mask) == net
                    dst_in |= (dst & mask) == net
                sel = sel & src_in & dst_in
        return sel, ports, addrs

    def _accumulate(self, keys, kidx, tcp, sel, wire, payload, payload_sel) -> None:
        """Add the chunk to the running totals per key (``acc``): packets and wire bytes
        per category (payload, excluded, other), payload bytes, excluded payload bytes."""
        cat = np.full(kidx.size, _CAT_OTHER, dtype=np.int64)
        cat[tcp] = _CAT_EXCLUDED
        cat[sel] = _CAT_PAYLOAD
        nk = keys.size
        code = kidx * 3 + cat
        cnt = np.bincount(code, minlength=nk * 3)
        wsum = np.bincount(code, weights=wire, minlength=nk * 3)
        psum = np.bincount(kidx, weights=payload_sel, minlength=nk)
        excl = tcp & ~sel
        xsum = (np.bincount(kidx, weights=np.where(excl, payload, 0), minlength=nk) if excl.any()
                else np.zeros(nk))
        xsum = np.rint(xsum).astype(np.int64).tolist()
        cnt = cnt.tolist()
        wsum = np.rint(wsum).astype(np.int64).tolist()
        psum = np.rint(psum).astype(np.int64).tolist()
        acc = self.acc
        for i, k in enumerate(keys.tolist()):
            a = acc.get(k)
            if a is None:
                a = acc[k] = [0] * 8
            j = 3 * i
            a[0] += cnt[j]; a[1] += cnt[j + 1]; a[2] += cnt[j + 2]
            a[3] += wsum[j]; a[4] += wsum[j + 1]; a[5] += wsum[j + 2]
            a[6] += psum[i]
            a[7] += xsum[i]

    def _add_series(self, sec, frac, keys, kidx, payload_sel) -> None:
        """Add the chunk's payload per key and time bin to ``series_parts`` (merged every
        512 chunks). Bins lie on the absolute grid k*series_bin, computed relative to a
        reference second so that float64 keeps sub-nanosecond precision."""
        if self.series_ref is None:
            ref_sec = int(sec[0])
            ref_idx = math.floor(ref_sec / self.series_bin)
            self.series_ref = (ref_sec, ref_idx, ref_sec - ref_idx * self.series_bin)
        ref_sec, ref_idx, ref_off = self.series_ref
        tsf = (sec - ref_sec) + frac * (1e-9 if self.nanosecond else 1e-6) + ref_off
        b = np.floor(tsf / self.series_bin).astype(np.int64) + ref_idx
        bmin = int(b.min())
        nb = int(b.max()) - bmin + 1
        nk = keys.size
        if nk * nb <= 4 * kidx.size + 65536:
            scode = kidx * nb + (b - bmin)
            s = np.bincount(scode, weights=payload_sel, minlength=nk * nb)
            nz = np.flatnonzero(s)
            if nz.size:
                self.series_parts.append((keys[nz // nb], nz % nb + bmin,
                                          np.rint(s[nz]).astype(np.int64)))
        else:   # long idle gaps inside the chunk: sparse grouping
            m = payload_sel > 0
            (kk, bb), v = _group_sum((keys[kidx[m]], b[m]), payload_sel[m])
            self.series_parts.append((kk, bb, v))
        if len(self.series_parts) >= 512:
            cols, v = _group_sum(tuple(np.concatenate([p[i] for p in self.series_parts])
                                       for i in range(2)),
                                 np.concatenate([p[2] for p in self.series_parts]))
            self.series_parts = [(cols[0], cols[1], v)]

    def _add_flow_bytes(self, sel, keys, kidx, ports, addrs, payload) -> None:
        """Add the chunk's payload per (key, src, sport, dst, dport) of the counted
        segments to ``flow_parts`` (merged every 512 chunks)."""
        if not sel.any():
            return
        (src, dst), (sport, dport) = addrs, ports
        self.flow_parts.append(_group_sum(
            (keys[kidx[sel]].astype(np.int64), src[sel].astype(np.int64), sport[sel].astype(np.int64),
             dst[sel].astype(np.int64), dport[sel].astype(np.int64)), payload[sel]))
        if len(self.flow_parts) >= 512:
            self.flow_parts = [self._merged_flows()]

    def _segments(self, seg, keys, kidx, l3, t, payload, b32, addr=None) -> None:
        """Unwrap the sequence numbers of the data segments ``seg`` (record indexes of
        the chunk) per flow and store the union of their ranges per flow. ``addr``:
        (src, dst) of the segments when already gathered."""
        kid = self.kid
        kid_of = np.array([kid.setdefault(k, len(kid)) for k in keys.tolist()], dtype=np.int64)
        ti = t[seg]
        if addr is None:
            li = l3[seg]
            addr = (b32[li + 12], b32[li + 16])
        # Flow identity as two int64 columns (the shift may wrap; it stays one-to-one).
        a = (addr[0].astype(np.int64) << 32) | addr[1]
        b = (kid_of[kidx[seg]] << 32) | b32[ti]
        gid = self._flow_ids(a, b)
        # Group by flow, capture order within a flow (stable sort; radix sort for <= 16 bits).
        order = np.argsort(gid.astype(np.uint16) if self.nflows <= 65536 else gid, kind="stable")
        gid = gid[order]
        sq = b32[ti + 4].astype(np.int64)[order]
        ln = payload[seg][order]
        m = sq.size
        chg = np.empty(m, dtype=bool)
        chg[0] = True
        np.not_equal(gid[1:], gid[:-1], out=chg[1:])
        gs = np.flatnonzero(chg)
        gids = gid[gs]
        fresh = self.f_raw[gids] < 0            # new flow: starts at its first segment
        if fresh.any():
            fg = gids[fresh]
            self.f_raw[fg] = self.f_unw[fg] = sq[gs[fresh]]

        # Incremental unwrapping: each segment relative to the previous one of its flow
        # (the flow's first segment of the chunk relative to the flow's state).
        w = np.empty(m, dtype=np.int64)
        w[0] = 0
        np.subtract(sq[1:], sq[:-1], out=w[1:])
        w[gs] = sq[gs] - self.f_raw[gids]
        w += _H31
        w &= _M32
        w -= _H31
        cs = np.cumsum(w)
        sizes = np.diff(np.append(gs, m))
        start = cs + np.repeat(self.f_unw[gids] - (cs[gs] - w[gs]), sizes)
        ge = gs + sizes - 1
        self.f_raw[gids] = sq[ge]
        self.f_unw[gids] = start[ge]

        grp, s, e = _union_groups(gs, start, start + ln)
        self.iv_parts.append((gids[grp], s, e))
        self.iv_rows += s.size
        if self.iv_rows - self.iv_merged_rows > max(_IV_MERGE_ROWS, self.iv_merged_rows):
            self._merge_intervals()

    def _flow_ids(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Dense flow id of every segment, a flow being a distinct (a, b) pair.

        Open-addressing hash table (linear probing, load <= 1/4) of flow ids, probed
        for all segments at once; lookups compare the stored (a, b), so the hash only
        affects speed. A new flow gets the next id and f_raw = -1 (see _segments).
        """
        slot = _flow_hash(a, b, self.h_bits)
        g = self.h_tab[slot]
        if ((g >= 0) & (self.f_a[g] == a) & (self.f_b[g] == b)).all():
            return g                            # every flow known, found at its home slot
        gid = np.empty(a.size, dtype=np.int64)
        pend = np.arange(a.size)
        pa, pb = a, b
        while pend.size:
            g = self.h_tab[slot]
            known = g >= 0
            ok = known & (self.f_a[g] == pa) & (self.f_b[g] == pb)
            gid[pend[ok]] = g[ok]
            rest = ~ok
            empty = ~known
            pend = pend[rest]
            pa = pa[rest]
            pb = pb[rest]
            if empty.any():
                # New flows: insert them, then probe again from the home slots (the
                # table may have grown).
                ne = pend[empty[rest]]
                fa, fb = (zip(*sorted(set(zip(a[ne].tolist(), b[ne].tolist())))))
                self._add_flows(list(fa), list(fb))
                slot = _flow_hash(pa, pb, self.h_bits)
            else:                               # slot taken by another flow: probe on
                slot = (slot[rest] + 1) & (self.h_tab.size - 1)
        return gid

    def _add_flows(self, fa: list[int], fb: list[int]) -> None:
        """Give the new flows (fa[i], fb[i]) the next ids and insert them in the table."""
        g0 = self.nflows
        n = g0 + len(fa)
        if n > self.f_a.size:
            cap = max(n, 2 * self.f_a.size)
            for name in ("f_a", "f_b", "f_raw", "f_unw"):
                old = getattr(self, name)
                arr = np.zeros(cap, dtype=np.int64)
                arr[:old.size] = old
                setattr(self, name, arr)
        self.f_a[g0:n] = fa
        self.f_b[g0:n] = fb
        self.f_raw[g0:n] = -1     # "no segment yet": _segments starts the flow there
        self.nflows = n
        if 4 * n > self.h_tab.size:
            bits = self.h_bits
            while 4 * n > (1 << bits):
                bits += 1
            self.h_bits = bits
            self.h_tab = np.full(1 << bits, -1, dtype=np.int64)
            self._insert(np.arange(n, dtype=np.int64))
        else:
            self._insert(np.arange(g0, n, dtype=np.int64))

    def _insert(self, g: np.ndarray) -> None:
        """Insert the flows g (ids) into the table by linear probing, vectorised."""
        tab = self.h_tab
        mask = tab.size - 1
        slot = _flow_hash(self.f_a[g], self.f_b[g], self.h_bits)
        while g.size:
            free = np.flatnonzero(tab[slot] < 0)
            won, first = np.unique(slot[free], return_index=True)   # one flow per free slot
            tab[won] = g[free[first]]
            left = np.ones(g.size, dtype=bool)
            left[free[first]] = False
            g = g[left]
            slot = (slot[left] + 1) & mask

    def _merge_intervals(self):
        """Merge the pending per-chunk intervals into one disjoint list per flow."""
        if len(self.iv_parts) > 1:
            g = np.concatenate([p[0] for p in self.iv_parts])
            s = np.concatenate([p[1] for p in self.iv_parts])
            e = np.concatenate([p[2] for p in self.iv_parts])
            order = np.argsort(g, kind="stable")
            g = g[order]
            chg = np.empty(g.size, dtype=bool)
            chg[0] = True
            np.not_equal(g[1:], g[:-1], out=chg[1:])
            gs = np.flatnonzero(chg)
            grp, s, e = _union_groups(gs, s[order], e[order])
            self.iv_parts = [(g[gs][grp], s, e)]
        self.iv_rows = self.iv_merged_rows = sum(p[1].size for p in self.iv_parts)

    def _unique_per_key(self) -> dict[int, int]:
        """keycode -> unique payload bytes."""
        if not self.iv_parts:
            return {}
        self._merge_intervals()
        g, s, e = self.iv_parts[0]
        per_kid = np.zeros(len(self.kid), dtype=np.int64)
        np.add.at(per_kid, self.f_b[g] >> 32, e - s)
        codes = sorted(self.kid, key=self.kid.get)
        return dict(zip(codes, per_kid.tolist()))

    def _merged_flows(self):
        cols = tuple(np.concatenate([p[0][i] for p in self.flow_parts]) for i in range(5))
        return _group_sum(cols, np.concatenate([p[1] for p in self.flow_parts]))

    # -- result --------------------------------------------------------------------
    def _key(self, keycode: int) -> tuple:
        direction = DIRS[keycode & 3]
        if self.linktype == LINKTYPE_LINUX_SLL2:
            return (keycode >> 2, direction)
        return (self.iface, direction)

    def result(self, snaplen, truncated) -> PcapCounts:
        """The counts of the whole file (after its last chunk)."""
        per_if, retrans_total = self._per_if()
        units = 1_000_000_000 if self.nanosecond else 1_000_000

        def seconds(v):
            return None if v is None else v // units + (v % units) / units

        t_first = seconds(self.ts_min)
        t_last = seconds(self.ts_max)
        series, series_t0 = self._series(t_first) if self.series_bin is not None else (None, None)
        return PcapCounts(
            linktype=self.linktype, packets_total=self.packets, per_if=per_if,
            t_first=t_first, t_last=t_last, series=series,
            flows=self._flows() if self.want_flows else None,
            truncated_records=truncated, snaplen=snaplen, nanosecond=self.nanosecond,
            short_headers=self.short, series_t0=series_t0, series_bin=self.series_bin,
            retrans_total=retrans_total)

    def _per_if(self) -> tuple[dict, int]:
        """(per_if, retrans_total): the stats of every key from the running totals and the
        unique payload of its flows."""
        per_if = {}
        unique = self._unique_per_key()
        retrans_total = 0
        for k in sorted(self.acc):
            a = self.acc[k]
            st = _empty_stats()
            st["packets"] = a[0] + a[1] + a[2]
            st["wire_bytes"] = a[3] + a[4] + a[5]
            st["tcp_packets"] = a[0]
            st["tcp_wire_bytes"] = a[3]
            st["payload_bytes"] = a[6]
            st["unique_payload_bytes"] = unique.get(k, 0)
            st["retrans_bytes"] = a[6] - st["unique_payload_bytes"]
            retrans_total += st["retrans_bytes"]
            st["excluded_packets"] = a[1]
            st["excluded_payload_bytes"] = a[7]
            st["other_packets"] = a[2]
            per_if[self._key(k)] = st
        return per_if, retrans_total

    def _series(self, t_first: float | None) -> tuple[dict, float | None]:
        """(series, series_t0): every key's payload per bin, all on one grid starting at
        the first bin with payload (at the first record's bin when no bin has any)."""
        series = {}
        series_t0 = None
        if self.series_parts:
            kc = np.concatenate([p[0] for p in self.series_parts])
            bb = np.concatenate([p[1] for p in self.series_parts])
            vv = np.concatenate([p[2] for p in self.series_parts])
            b0 = int(bb.min())
            nb = int(bb.max()) - b0 + 1
            series_t0 = b0 * self.series_bin
        else:
            nb = 0
            b0 = None
            if self.ts_min is not None:
                b0 = int(np.floor(t_first / self.series_bin))
                series_t0 = b0 * self.series_bin
        for k in sorted(self.acc):
            arr = np.zeros(nb, dtype=np.int64)
            if nb:
                m = kc == k
                np.add.at(arr, bb[m] - b0, vv[m])
            series[self._key(k)] = arr
        return series, series_t0

    def _flows(self) -> dict:
        """``{key: {(src, sport, dst, dport): payload bytes}}`` over every key."""
        flows = {self._key(k): {} for k in sorted(self.acc)}
        if self.flow_parts:
            ucols, sums = self._merged_flows()
            ntoa = ipaddress.IPv4Address
            for k, s, sp, dd, dp, v in zip(*(c.tolist() for c in ucols), sums.tolist()):
                flows[self._key(k)][(str(ntoa(s)), sp, str(ntoa(dd)), dp)] = int(v)
        return flows


_HK1 = np.uint64(0x9E3779B97F4A7C15)
_HK2 = np.uint64(0xBF58476D1CE4E5B9)


def _flow_hash(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    """Slot (0 .. 2**bits - 1) of the flows (a, b) in the flow table (multiplicative hash)."""
    x = a.view(np.uint64) * _HK1
    x ^= b.view(np.uint64)
    x *= _HK2
    return (x >> np.uint64(64 - bits)).astype(np.int64)


def _union_groups(gs: np.ndarray, start: np.ndarray, end: np.ndarray):
    """Disjoint union of the intervals [start, end) (start < end) of each group.

    Rows are grouped contiguously, group i being rows gs[i]:gs[i+1] (gs[0] == 0).
    Returns (group index, start, end) of the merged intervals (overlapping and touching
    intervals merged), sorted by group then start.
    """
    n = start.size
    sizes = np.diff(np.append(gs, n))
    lo = np.minimum.reduceat(start, gs)
    hi = np.maximum.reduceat(end, gs)
    if (int(lo.min()) < -(1 << 62) or int(hi.max()) > (1 << 62)
            or int((hi - lo).max() + 1) * gs.size >= (1 << 62)):
        # Pathological sequence numbers: one group at a time (never on real captures).
        out = [_union_one(start[a:a + k], end[a:a + k])
               for a, k in zip(gs.tolist(), sizes.tolist())]
        grp = np.repeat(np.arange(gs.size, dtype=np.int64), [o[0].size for o in out])
        return grp, np.concatenate([o[0] for o in out]), np.concatenate([o[1] for o in out])
    # Move every group into its own range [base, base + span) so that one sort and one
    # running maximum over all rows act per group.
    span = hi - lo + 1
    base = np.zeros(gs.size, dtype=np.int64)
    np.cumsum(span[:-1], out=base[1:])
    shift = np.repeat(base - lo, sizes)
    ks = start + shift
    ke = end + shift
    if n > 1 and not (ks[1:] >= ks[:-1]).all():
        o = np.argsort(ks, kind="stable")      # group blocks keep their positions
        ks = ks[o]
        ke = ke[o]
    cm = np.maximum.accumulate(ke)
    begin = np.empty(n, dtype=bool)
    begin[0] = True
    np.greater(ks[1:], cm[:-1], out=begin[1:])   # always true at a group's first row
    bi = np.flatnonzero(begin)
    last = np.empty_like(bi)
    last[:-1] = bi[1:] - 1
    last[-1] = n - 1
    grp = np.searchsorted(gs, bi, side="right") - 1
    sh = shift[bi]
    return grp, ks[bi] - sh, cm[last] - sh


def _union_one(start: np.ndarray, end: np.ndarray):
    """Disjoint union (start, end arrays) of the intervals of a single group."""
    o = np.argsort(start, kind="stable")
    s = start[o]
    cm = np.maximum.accumulate(end[o])
    begin = np.empty(s.size, dtype=bool)
    begin[0] = True
    np.greater(s[1:], cm[:-1], out=begin[1:])
    bi = np.flatnonzero(begin)
    last = np.append(bi[1:] - 1, s.size - 1)
    return s[bi], cm[last]


def _group_sum(cols: tuple[np.ndarray, ...], weights: np.ndarray):
    """Unique rows of the int64 columns and the sum of weights per row."""
    order = np.lexsort(cols[::-1])
    sc = [c[order] for c in cols]
    w = np.asarray(weights, dtype=np.int64)[order]
    if w.size == 0:
        return tuple(sc), w
    change = np.zeros(w.size, dtype=bool)
    change[0] = True
    for c in sc:
        change[1:] |= c[1:] != c[:-1]
    idx = np.flatnonzero(change)
    return tuple(c[idx] for c in sc), np.add.reduceat(w, idx)


def _parse_header(hdr: bytes):
    magic_le = struct.unpack("<I", hdr[:4])[0]
    if magic_le in (_MAGIC_US, _MAGIC_NS):
        endian = "<"
    elif struct.unpack(">I", hdr[:4])[0] in (_MAGIC_US, _MAGIC_NS):
        endian = ">"
    elif magic_le == _PCAPNG:
        raise ValueError("pcapng is not supported; write classic pcap (tcpdump -w)")
    else:
        raise ValueError(f"not a pcap file (magic 0x{magic_le:08x})")
    magic, _vmaj, _vmin, _tz, _sig, snaplen, linktype = struct.unpack(endian + "IHHiIII", hdr)
    linktype &= 0xFFFF  # upper bits may carry FCS information
    if linktype not in (LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2):
        raise ValueError(f"unsupported pcap link type {linktype} "
                         "(supported: 1 EN10MB, 113 LINUX_SLL, 276 LINUX_SLL2)")
    return endian, magic == _MAGIC_NS, snaplen, linktype


def read_counts(path: str | os.PathLike, exclude_ports: Iterable[int] = (),
                networks: Iterable[Any] | None = None, series_bin: float | None = None,
                flows: bool = False, iface: Any = None,
                chunk_bytes: int = _CHUNK) -> PcapCounts:
    """Count packets, wire bytes and TCP payload bytes per (interface, direction).

    See the module docstring for the meaning of the arguments and of the result.
    ``chunk_bytes`` only tunes speed/memory.
    """
    with open(path, "rb", buffering=0) as fh:
        hdr = fh.read(24)
        if len(hdr) < 24:
            if len(hdr) >= 4:
                _parse_header(hdr + bytes(24 - len(hdr)))  # reject non-pcap garbage
            return PcapCounts(linktype=None, packets_total=0, per_if={}, t_first=None,
                              t_last=None, series={} if series_bin else None,
                              flows={} if flows else None, truncated_records=0,
                              series_bin=float(series_bin) if series_bin else None)
        endian, nanosecond, snaplen, linktype = _parse_header(hdr)
        rd = _Reader(linktype, endian, nanosecond, exclude_ports, networks, series_bin,
                     flows, iface)
        unpack_from = struct.Struct(endian + "I").unpack_from
        chunk = max(int(chunk_bytes), 4096)
        buf = bytearray(chunk + _PAD)
        have = 0
        eof = False
        truncated = 0
        while True:
            if not eof and have < chunk:
                mv = memoryview(buf)
                try:
                    while have < chunk:
                        k = fh.readinto(mv[have:chunk])
                        if not k:
                            eof = True
                            break
                        have += k
                finally:
                    mv.release()
            offs, end = _frame(buf, have, unpack_from)
            if offs:
                offs.append(end)
                rd.chunk(buf, np.array(offs, dtype=np.intp))
            left = have - end
            if eof:
                truncated = 1 if left else 0
                break
            if end == 0:
                # The next record does not fit in the buffer: grow it (or give up).
                need = 16 + unpack_from(buf, 8)[0]
                if need > _MAX_RECORD:
                    raise ValueError(f"{path}: corrupt record header "
                                     f"(captured length {need - 16})")
                chunk = max(chunk * 2, need)
                nbuf = bytearray(chunk + _PAD)
                nbuf[:have] = buf[:have]
                buf = nbuf
                continue
            buf[:left] = buf[end:have]
            have = left
        return rd.result(snaplen, truncated)

