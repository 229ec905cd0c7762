"""Unit tests of emulation/pcap.py (fast pcap reader) against pcaps built with scapy."""
from __future__ import annotations

import random
import struct
from collections import Counter, defaultdict

import numpy as np
import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, CookedLinux, CookedLinuxV2, Dot1Q, Ether
from scapy.packet import Raw
from scapy.utils import RawPcapWriter

from emulation.pcap import read_counts

pytestmark = pytest.mark.unit

T0 = 1_700_000_000


# ----------------------------------------------------------------------------- helpers
def write_pcap(path, records, linktype=276, snaplen=128, endian="<", nano=False):
    """records: iterable of (packet bytes or scapy packet, timestamp seconds (float or
    (sec, frac) in file units)). Each record is snapped to ``snaplen``; its original
    length is the full packet length."""
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = [struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    unit = 1_000_000_000 if nano else 1_000_000
    for pkt, ts in records:
        raw = bytes(pkt)
        if isinstance(ts, tuple):
            sec, frac = ts
        else:
            sec = int(ts)
            frac = int(round((ts - sec) * unit))
        cap = raw[:snaplen]
        out.append(struct.pack(endian + "IIII", sec, frac, len(cap), len(raw)) + cap)
    data = b"".join(out)
    with open(path, "wb") as fh:
        fh.write(data)
    return data


def sll2(ifindex, pkttype, payload=0, src="10.0.0.1", dst="10.0.0.2", sport=40000,
         dport=5000, ip_options=None, tcp_options=None, seq=0, flags="A"):
    ip = IP(src=src, dst=dst, flags="DF")
    if ip_options is not None:
        ip.options = ip_options
    tcp = TCP(sport=sport, dport=dport, flags=flags, seq=seq % (1 << 32))
    if tcp_options is not None:
        tcp.options = tcp_options
    return (CookedLinuxV2(ifindex=ifindex, pkttype=pkttype, lladdrtype=1, lladdrlen=6,
                          src=b"\x02\x00\x00\x00\x00\x01") / ip / tcp / Raw(b"\xab" * payload))


def arp2(ifindex, pkttype):
    return CookedLinuxV2(proto=0x0806, ifindex=ifindex, pkttype=pkttype, lladdrtype=1,
                         lladdrlen=6, src=b"\x02" * 6) / ARP(psrc="10.0.0.1", pdst="10.0.0.2")


def stats(res, key):
    return res.per_if[key]


# ----------------------------------------------------------------------------- tests
def test_sll2_counts_per_interface_and_direction(tmp_path):
    recs = []
    t = T0 + 0.5
    expect_payload = Counter()
    expect_pkts = Counter()
    expect_wire = Counter()
    plan = [(5, 4, 1448), (5, 4, 1448), (5, 0, 0), (5, 0, 0), (7, 4, 100), (7, 0, 1),
            (7, 0, 1448), (5, 4, 9000), (300000, 3, 77)]
    for i, (ifx, ptype, n) in enumerate(plan):
        p = sll2(ifx, ptype, n)
        recs.append((p, t + i * 0.001))
        key = (ifx, "tx" if ptype == 4 else "rx")
        expect_payload[key] += n
        expect_pkts[key] += 1
        expect_wire[key] += len(bytes(p)) - 20 + 14     # Ethernet frame length
    recs.append((arp2(5, 4), t + 0.1))
    recs.append((arp2(7, 1), t + 0.2))
    path = tmp_path / "c.pcap"
    write_pcap(path, recs)
    res = read_counts(path)
    assert res.linktype == 276 and res.snaplen == 128 and not res.nanosecond
    assert res.packets_total == len(recs)
    assert res.truncated_records == 0 and res.short_headers == 0
    assert set(res.per_if) == {(5, "tx"), (5, "rx"), (7, "tx"), (7, "rx"), (300000, "rx")}
    for key in expect_payload:
        st = stats(res, key)
        assert st["payload_bytes"] == expect_payload[key], key
        assert st["tcp_packets"] == expect_pkts[key]
        assert st["tcp_wire_bytes"] == expect_wire[key]
    arp_wire = len(bytes(arp2(5, 4))) - 20 + 14
    assert stats(res, (5, "tx"))["other_packets"] == 1
    assert stats(res, (5, "tx"))["packets"] == expect_pkts[(5, "tx")] + 1
    assert stats(res, (5, "tx"))["wire_bytes"] == expect_wire[(5, "tx")] + arp_wire
    assert stats(res, (7, "rx"))["other_packets"] == 1
    assert stats(res, (5, "rx"))["other_packets"] == 0
    assert all(st["excluded_packets"] == 0 for st in res.per_if.values())
    assert res.t_first == pytest.approx(t, abs=1e-6)
    assert res.t_last == pytest.approx(t + 0.2, abs=1e-6)
    assert res.series is None and res.flows is None


def test_arp_and_non_tcp_never_payload(tmp_path):
    recs = [(arp2(3, 0), T0), (arp2(3, 4), T0 + 1),
            (CookedLinuxV2(ifindex=3, pkttype=4, lladdrtype=1) / IP(src="10.0.0.1", dst="10.0.0.2")
             / UDP(sport=1, dport=2) / Raw(b"u" * 500), T0 + 2),
            (CookedLinuxV2(ifindex=3, pkttype=4, lladdrtype=1) / IPv6() / TCP() / Raw(b"6" * 300),
             T0 + 3)]
    path = tmp_path / "arp.pcap"
    write_pcap(path, recs)
    res = read_counts(path)
    assert stats(res, (3, "rx")) == {"packets": 1, "wire_bytes": 42, "tcp_packets": 0,
                                     "tcp_wire_bytes": 0, "payload_bytes": 0,
                                     "unique_payload_bytes": 0, "retrans_bytes": 0,
                                     "excluded_packets": 0, "excluded_payload_bytes": 0,
                                     "other_packets": 1}
    tx = stats(res, (3, "tx"))
    assert tx["packets"] == 3 and tx["other_packets"] == 3 and tx["payload_bytes"] == 0


def test_excluded_ports(tmp_path):
    recs = [(sll2(1, 4, 1000, sport=40000, dport=5000), T0),
            (sll2(1, 4, 2000, sport=6653, dport=40001), T0),     # sport excluded
            (sll2(1, 4, 4000, sport=40002, dport=29500), T0),    # dport excluded
            (sll2(1, 4, 8000, sport=40003, dport=5001), T0)]
    path = tmp_path / "p.pcap"
    write_pcap(path, recs)
    res = read_counts(path, exclude_ports={6653, 29500})
    st = stats(res, (1, "tx"))
    assert st["payload_bytes"] == 9000
    assert st["tcp_packets"] == 2 and st["excluded_packets"] == 2 and st["packets"] == 4
    assert st["excluded_payload_bytes"] == 6000  # kept apart, not lost (background flows)
    assert read_counts(path).per_if[(1, "tx")]["payload_bytes"] == 15000


def test_networks_restriction(tmp_path):
    recs = [(sll2(1, 0, 100, src="10.0.0.1", dst="10.0.1.2"), T0),
            (sll2(1, 0, 200, src="10.0.0.1", dst="192.168.0.2"), T0),   # dst outside
            (sll2(1, 0, 400, src="172.16.0.1", dst="10.0.0.2"), T0),    # src outside
            (sll2(1, 0, 800, src="10.0.0.9", dst="10.9.0.9"), T0)]
    path = tmp_path / "n.pcap"
    write_pcap(path, recs)
    st = stats(read_counts(path, networks=["10.0.0.0/16"]), (1, "rx"))
    assert st["payload_bytes"] == 100 and st["excluded_packets"] == 3
    st = stats(read_counts(path, networks=["10.0.0.0/8"]), (1, "rx"))
    assert st["payload_bytes"] == 900
    import ipaddress
    st = stats(read_counts(path, networks=[ipaddress.ip_network("10.0.0.0/24"),
                                           "172.16.0.0/12"]), (1, "rx"))
    assert st["payload_bytes"] == 400
    with pytest.raises(ValueError):
        read_counts(path, networks=["fd00::/8"])


def test_payload_from_ip_length_not_caplen(tmp_path):
    """Snaplen cuts payloads; IP and TCP options move the TCP header and payload."""
    ts_opt = [("NOP", None), ("NOP", None), ("Timestamp", (1, 2))]            # 12 bytes
    big_opt = [("MSS", 1460), ("NOP", None), ("WScale", 7), ("SAckOK", b""),
               ("Timestamp", (1, 2)), ("NOP", None), ("NOP", None),
               ("SAck", (1, 2, 3, 4))]                                          # 40 bytes
    recs = [(sll2(2, 4, 1448, tcp_options=ts_opt), T0),
            (sll2(2, 4, 3000, ip_options=b"\x01" * 8), T0),
            (sll2(2, 4, 500, tcp_options=big_opt), T0),
            (sll2(2, 4, 0, tcp_options=big_opt), T0)]
    hdrs = [bytes(p)[20:] for p, _ in recs]
    assert IP(hdrs[1]).ihl == 7 and TCP(bytes(IP(hdrs[2]).payload)).dataofs == 15
    path = tmp_path / "opt.pcap"
    write_pcap(path, recs, snaplen=128)
    st = stats(read_counts(path), (2, "tx"))
    assert st["payload_bytes"] == 1448 + 3000 + 500
    assert st["tcp_packets"] == 4
    # TCP header not captured at all -> counted as other + short, never as payload
    write_pcap(path, recs, snaplen=50)
    res = read_counts(path)
    st = stats(res, (2, "tx"))
    assert st["payload_bytes"] == 0 and st["other_packets"] == 4 and res.short_headers == 4
    # Exactly enough for the data offset byte of a plain header: 20 + 20 + 13
    write_pcap(path, [(sll2(2, 4, 999), T0)], snaplen=53)
    assert stats(read_counts(path), (2, "tx"))["payload_bytes"] == 999
    write_pcap(path, [(sll2(2, 4, 999), T0)], snaplen=52)
    assert stats(read_counts(path), (2, "tx"))["payload_bytes"] == 0


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("nano", [False, True])
def test_byte_orders_and_nanosecond_magic(tmp_path, endian, nano):
    unit = 10 ** 9 if nano else 10 ** 6
    frac_last = unit - 1
    recs = [(sll2(9, 4, 1000), (T0, 123)), (sll2(9, 0, 24), (T0 + 2, frac_last)),
            (arp2(9, 4), (T0 + 1, 0))]
    path = tmp_path / "e.pcap"
    write_pcap(path, recs, endian=endian, nano=nano)
    res = read_counts(path, series_bin=1.0)
    assert res.nanosecond is nano
    assert res.per_if[(9, "tx")]["payload_bytes"] == 1000
    assert res.per_if[(9, "rx")]["payload_bytes"] == 24
    assert res.per_if[(9, "tx")]["other_packets"] == 1
    assert res.t_first == pytest.approx(T0 + 123 / unit, abs=3e-7)   # float64 ulp at 1.7e9
    assert res.t_last == pytest.approx(T0 + 2 + frac_last / unit, abs=3e-7)
    assert res.series_t0 == T0
    assert res.series[(9, "tx")].tolist() == [1000, 0, 0]
    assert res.series[(9, "rx")].tolist() == [0, 0, 24]


def test_scapy_writer_compatible(tmp_path):
    """A file written by scapy's own pcap writer (nanosecond, big endian)."""
    path = str(tmp_path / "s.pcap")
    w = RawPcapWriter(path, linktype=276, endianness=">", nano=True, snaplen=128, sync=True)
    w.write_header(None)
    for i, n in enumerate([10, 2000, 30]):
        raw = bytes(sll2(4, 4 if i % 2 else 0, n))
        w.write_packet(raw[:128], sec=T0 + i, usec=5, caplen=min(128, len(raw)), wirelen=len(raw))
    w.close()
    res = read_counts(path)
    assert res.nanosecond and res.packets_total == 3
    assert res.per_if[(4, "rx")]["payload_bytes"] == 40
    assert res.per_if[(4, "tx")]["payload_bytes"] == 2000


def test_ethernet_per_interface_capture(tmp_path):
    recs = [(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP() / Raw(b"a" * 1448), T0),
            (Ether() / IP(src="10.0.0.2", dst="10.0.0.1") / TCP(), T0 + 0.1),    # pure ACK
            (Ether() / Dot1Q(vlan=3) / IP() / TCP() / Raw(b"v" * 700), T0 + 0.2),
            (Ether() / ARP(), T0 + 0.3)]
    path = tmp_path / "eth.pcap"
    write_pcap(path, recs, linktype=1, snaplen=96)
    res = read_counts(path, iface="s1-eth2", flows=True)
    assert res.linktype == 1
    assert list(res.per_if) == [("s1-eth2", "any")]
    st = res.per_if[("s1-eth2", "any")]
    assert st["payload_bytes"] == 1448 + 700
    assert st["packets"] == 4 and st["other_packets"] == 1 and st["tcp_packets"] == 3
    assert st["wire_bytes"] == sum(len(bytes(p)) for p, _ in recs)
    flows = res.flows[("s1-eth2", "any")]
    assert flows[("10.0.0.1", 20, "10.0.0.2", 80)] == 1448
    assert flows[("10.0.0.2", 20, "10.0.0.1", 80)] == 0
    # without iface the key is (None, "any")
    assert list(read_counts(path).per_if) == [(None, "any")]


def test_linux_sll_v1(tmp_path):
    def sll(ptype, n):
        return (CookedLinux(pkttype=ptype, lladdrtype=1, lladdrlen=6, src=b"\x02" * 6)
                / IP() / TCP() / Raw(b"x" * n))
    recs = [(sll(4, 300), T0), (sll(0, 200), T0), (sll(0, 100), T0)]
    path = tmp_path / "sll.pcap"
    write_pcap(path, recs, linktype=113)
    res = read_counts(path, iface="any")
    assert res.per_if[("any", "tx")]["payload_bytes"] == 300
    assert res.per_if[("any", "rx")]["payload_bytes"] == 300
    assert res.per_if[("any", "rx")]["wire_bytes"] == sum(len(bytes(p)) - 16 + 14 for p, _ in recs[1:])


def test_fragments_and_big_tcp(tmp_path):
    first = sll2(1, 4, 0)
    first[IP].flags = "MF"
    later = sll2(1, 4, 1000)
    later[IP].frag = 100
    big = sll2(1, 4, 1000)
    big[IP].len = 0                  # >64 KiB GSO packet: IP total length 0
    recs = [(first, T0), (later, T0), (big, T0)]
    path = tmp_path / "f.pcap"
    write_pcap(path, recs)
    st = read_counts(path).per_if[(1, "tx")]
    assert st["other_packets"] == 1           # non-first fragment
    assert st["tcp_packets"] == 2
    assert st["payload_bytes"] == 1000        # from the original length of the GSO packet


def test_empty_and_header_only(tmp_path):
    path = tmp_path / "empty.pcap"
    path.write_bytes(b"")
    res = read_counts(path, series_bin=0.5, flows=True)
    assert res.linktype is None and res.packets_total == 0 and res.per_if == {}
    assert res.t_first is None and res.t_last is None and res.truncated_records == 0
    assert res.series == {} and res.flows == {}
    write_pcap(path, [])
    res = read_counts(path, series_bin=0.5)
    assert res.linktype == 276 and res.packets_total == 0 and res.per_if == {}
    assert res.t_first is None and res.series == {} and res.truncated_records == 0


@pytest.mark.parametrize("cut", [1, 8, 15, 16, 17, 60])
def test_truncated_last_record(tmp_path, cut):
    recs = [(sll2(1, 4, 100), T0), (sll2(1, 4, 200), T0 + 1), (sll2(1, 0, 400), T0 + 2)]
    path = tmp_path / "t.pcap"
    data = write_pcap(path, recs)
    last_len = 16 + min(128, len(bytes(recs[-1][0])))
    path.write_bytes(data[:len(data) - last_len + cut])   # tcpdump killed mid-write
    res = read_counts(path)
    assert res.truncated_records == 1
    assert res.packets_total == 2
    assert res.per_if == {(1, "tx"): res.per_if[(1, "tx")]}
    assert res.per_if[(1, "tx")]["payload_bytes"] == 300
    assert res.t_last == pytest.approx(T0 + 1)
    path.write_bytes(data[:24 + 5])                        # inside the first record header
    res = read_counts(path)
    assert res.truncated_records == 1 and res.packets_total == 0 and res.per_if == {}


def test_bad_files(tmp_path):
    path = tmp_path / "bad.pcap"
    path.write_bytes(struct.pack("<I", 0x0A0D0D0A) + bytes(40))
    with pytest.raises(ValueError, match="pcapng"):
        read_counts(path)
    path.write_bytes(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    with pytest.raises(ValueError, match="not a pcap"):
        read_counts(path)
    write_pcap(path, [], linktype=228)     # raw IPv4
    with pytest.raises(ValueError, match="link type"):
        read_counts(path)


def test_series_and_flows(tmp_path):
    recs = [(sll2(1, 4, 100, sport=1, dport=2), T0 + 0.05),
            (sll2(1, 4, 200, sport=1, dport=2), T0 + 0.15),
            (sll2(1, 4, 400, sport=3, dport=2), T0 + 0.17),
            (sll2(2, 0, 800, sport=1, dport=2), T0 + 0.55),
            (sll2(2, 0, 1600, src="10.0.0.3", sport=1, dport=2), T0 + 0.95)]
    path = tmp_path / "s.pcap"
    write_pcap(path, recs)
    res = read_counts(path, series_bin=0.1, flows=True, exclude_ports={3})
    assert res.series_bin == 0.1
    assert res.series_t0 == pytest.approx(T0)
    assert set(res.series) == set(res.per_if)
    assert res.series[(1, "tx")].tolist() == [100, 200] + [0] * 8
    assert res.series[(2, "rx")].tolist() == [0] * 5 + [800, 0, 0, 0, 1600]
    assert res.flows == {
        (1, "tx"): {("10.0.0.1", 1, "10.0.0.2", 2): 300},
        (2, "rx"): {("10.0.0.1", 1, "10.0.0.2", 2): 800, ("10.0.0.3", 1, "10.0.0.2", 2): 1600},
    }


def union_size(ranges):
    """Size of the union of [start, end) ranges (plain Python)."""
    total, hi = 0, None
    for lo, end in sorted(ranges):
        if hi is None or lo > hi:
            total += end - lo
            hi = end
        elif end > hi:
            total += end - hi
            hi = end
    return total


def _reference(path):
    """Independent (slow) reference with scapy's dissectors (no sequence wraparound)."""
    from scapy.utils import RawPcapReader
    out = defaultdict(Counter)
    ranges = defaultdict(list)
    with RawPcapReader(str(path)) as reader:
        for raw, _meta in reader:
            p = CookedLinuxV2(raw)
            key = (p.ifindex, "tx" if p.pkttype == 4 else "rx")
            out[key]["packets"] += 1
            if IP in p and TCP in p and p[IP].frag == 0:
                n = p[IP].len - 4 * p[IP].ihl - 4 * p[TCP].dataofs
                out[key]["payload_bytes"] += n
                if n > 0:
                    flow = (p[IP].src, p[TCP].sport, p[IP].dst, p[TCP].dport)
                    ranges[key, flow].append((p[TCP].seq, p[TCP].seq + n))
            else:
                out[key]["other_packets"] += 1
    for (key, _flow), r in ranges.items():
        out[key]["unique_payload_bytes"] += union_size(r)
    return out


@pytest.mark.parametrize("chunk_bytes", [None, 4096, 5000])
def test_random_mix_matches_reference_and_chunking(tmp_path, chunk_bytes):
    rng = random.Random(7)
    recs = []
    for i in range(1500):
        r = rng.random()
        ifx, ptype = rng.choice([11, 12, 13, 1000]), rng.choice([0, 1, 3, 4, 4])
        if r < 0.05:
            p = arp2(ifx, ptype)
        elif r < 0.1:
            p = (CookedLinuxV2(ifindex=ifx, pkttype=ptype, lladdrtype=1) / IP() / UDP()
                 / Raw(b"u" * rng.randrange(2000)))
        else:
            p = sll2(ifx, ptype, rng.choice([0, 0, 1, 1448, rng.randrange(9000)]),
                     ip_options=b"\x01" * 4 * rng.randrange(3),
                     tcp_options=[("NOP", None)] * 4 * rng.randrange(4),
                     sport=rng.choice([40000, 40001]), seq=1000 + rng.randrange(60_000))
        recs.append((p, T0 + i * 1e-4))
    path = tmp_path / "mix.pcap"
    write_pcap(path, recs, snaplen=rng.choice([128, 96]) if chunk_bytes else 65535)
    kw = {} if chunk_bytes is None else {"chunk_bytes": chunk_bytes}
    res = read_counts(path, **kw)
    ref = _reference(path)
    assert res.packets_total == 1500 and res.truncated_records == 0
    assert set(res.per_if) == set(ref)
    for key, st in res.per_if.items():
        assert st["packets"] == ref[key]["packets"], key
        assert st["payload_bytes"] == ref[key]["payload_bytes"], key
        assert st["other_packets"] == ref[key]["other_packets"], key
        assert st["unique_payload_bytes"] == ref[key]["unique_payload_bytes"], key
        assert st["retrans_bytes"] == st["payload_bytes"] - st["unique_payload_bytes"] >= 0
    assert res.retrans_total == sum(st["retrans_bytes"] for st in res.per_if.values())


def test_record_larger_than_chunk(tmp_path):
    recs = [(sll2(1, 4, 9000), T0), (sll2(1, 4, 20000), T0), (sll2(1, 4, 5), T0)]
    path = tmp_path / "big.pcap"
    write_pcap(path, recs, snaplen=65535)
    res = read_counts(path, chunk_bytes=4096)
    assert res.per_if[(1, "tx")]["payload_bytes"] == 29005 and res.packets_total == 3


def test_bench_generator_consistent(tmp_path):
    from emulation.bench_pcap import write_synthetic
    path = tmp_path / "bench.pcap"
    expected = write_synthetic(str(path), 20_000, block=7_000)
    res = read_counts(path, series_bin=0.001, flows=True)
    assert res.packets_total == 20_000
    total = sum(st["payload_bytes"] for st in res.per_if.values())
    assert total == expected
    assert sum(int(np.sum(s)) for s in res.series.values()) == expected
    assert sum(sum(f.values()) for f in res.flows.values()) == expected
    # All data segments of the generator carry seq 1: one 1448-byte range per flow.
    for key, st in res.per_if.items():
        nflows = sum(1 for v in res.flows[key].values() if v)
        assert st["unique_payload_bytes"] == 1448 * nflows, key
        assert st["retrans_bytes"] == st["payload_bytes"] - 1448 * nflows
    assert res.retrans_total == expected - 1448 * sum(
        1 for f in res.flows.values() for v in f.values() if v)


def test_series_idle_gap_and_many_chunks(tmp_path):
    # Two bursts 100 s apart with 1 ms bins: sparse grouping inside one chunk.
    recs = [(sll2(1, 4, 10), T0 + 0.0005), (sll2(2, 0, 20), T0 + 0.0015),
            (sll2(1, 4, 30), T0 + 100.0005)]
    path = tmp_path / "gap.pcap"
    write_pcap(path, recs)
    res = read_counts(path, series_bin=0.001)
    s1, s2 = res.series[(1, "tx")], res.series[(2, "rx")]
    assert s1.size == s2.size == 100_001
    assert s1[0] == 10 and s1[100_000] == 30 and s1.sum() == 40
    assert s2[1] == 20 and s2.sum() == 20
    # Many small chunks (periodic merging of the partial series / flow tables).
    raws = [bytes(sll2(i % 3, 4 * (i % 2), 100 + i, sport=40000 + i % 5)) for i in range(12)]
    recs = [(raws[i % 12], T0 + i * 1e-4) for i in range(20_000)]
    write_pcap(path, recs)
    small = read_counts(path, series_bin=0.01, flows=True, chunk_bytes=4096)
    full = read_counts(path, series_bin=0.01, flows=True)
    assert small.per_if == full.per_if
    assert small.flows == full.flows
    assert {k: v.tolist() for k, v in small.series.items()} == \
        {k: v.tolist() for k, v in full.series.items()}
    total = sum(st["payload_bytes"] for st in full.per_if.values())
    assert total == sum(100 + (i % 12) for i in range(20_000))
    assert sum(sum(f.values()) for f in full.flows.values()) == total


# ------------------------------------------------------------- retransmissions / unique
def data(ifx, ptype, seq, n, **kw):
    """A data segment of n bytes at sequence number seq on (ifx, ptype)."""
    return sll2(ifx, ptype, n, seq=seq, **kw)


def counts_of(tmp_path, pkts, name="r.pcap", **kw):
    path = tmp_path / name
    write_pcap(path, [(p, T0 + i * 1e-4) for i, p in enumerate(pkts)])
    return read_counts(path, **kw)


def unique_retrans(res, key):
    st = res.per_if[key]
    assert st["retrans_bytes"] == st["payload_bytes"] - st["unique_payload_bytes"] >= 0
    return st["payload_bytes"], st["unique_payload_bytes"], st["retrans_bytes"]


def test_retransmitted_segment_counted_once(tmp_path):
    pkts = [data(1, 4, 1000, 1000), data(1, 4, 2000, 1000), data(1, 0, 1, 0),   # + an ACK
            data(1, 4, 3000, 1000),
            data(1, 4, 2000, 1000),                     # retransmission: same seq, same len
            data(1, 4, 4000, 500),
            data(2, 0, 1000, 1000), data(2, 0, 2000, 1000)]
    res = counts_of(tmp_path, pkts)
    assert unique_retrans(res, (1, "tx")) == (4500, 3500, 1000)
    assert unique_retrans(res, (2, "rx")) == (2000, 2000, 0)
    assert unique_retrans(res, (1, "rx")) == (0, 0, 0)
    assert res.retrans_total == 1000


def test_partial_overlapping_retransmission(tmp_path):
    pkts = [data(3, 4, 0, 1000), data(3, 4, 1000, 1000),
            data(3, 4, 500, 1000),      # entirely inside what was sent: 1000 retransmitted
            data(3, 4, 1500, 1000),     # 500 old + 500 new bytes (2000..2500)
            data(3, 4, 2400, 200),      # 100 old + 100 new
            data(3, 4, 0, 2600)]        # a coalesced resend of everything (GSO)
    res = counts_of(tmp_path, pkts)
    assert unique_retrans(res, (3, "tx")) == (6800, 2600, 4200)
    assert res.retrans_total == 4200


def test_out_of_order_and_holes_are_not_retransmissions(tmp_path):
    pkts = [data(4, 0, 5000, 1000), data(4, 0, 7000, 1000), data(4, 0, 6000, 1000),
            data(4, 0, 4000, 1000),     # before the first segment of the flow
            data(4, 0, 8000, 1000),
            data(4, 0, 20000, 1448)]    # hole 9000..20000 (not captured / lost earlier)
    res = counts_of(tmp_path, pkts)
    assert unique_retrans(res, (4, "rx")) == (6448, 6448, 0)
    assert res.retrans_total == 0


def test_sequence_wraparound(tmp_path):
    top = 1 << 32
    pkts = [data(5, 4, top - 1500, 1000),
            data(5, 4, top - 500, 1000),     # crosses 2^32: covers top-500 .. top+500
            data(5, 4, 500, 1000),
            data(5, 4, 2500, 1000),
            data(5, 4, top - 500, 1000),     # retransmission across the wrap
            data(5, 4, 1500, 1000),          # out of order after the wrap
            data(5, 4, top - 2000, 500)]     # out of order, before the first segment
    res = counts_of(tmp_path, pkts)
    assert unique_retrans(res, (5, "tx")) == (6500, 5500, 1000)
    # Same flow starting right after the wrap, retransmission of a pre-wrap segment.
    pkts = [data(5, 0, top - 100, 100), data(5, 0, 0, 1000), data(5, 0, top - 100, 100)]
    res = counts_of(tmp_path, pkts, name="w2.pcap")
    assert unique_retrans(res, (5, "rx")) == (1200, 1100, 100)


def test_long_flow_many_wraps(tmp_path):
    """Unwrapping is incremental: a flow may move by far more than 2^31 in total."""
    step = 1 << 30
    pkts = [data(6, 4, k * step, 1000) for k in range(12)]          # three wraps
    pkts.append(data(6, 4, 11 * step, 1000))                         # retransmission
    pkts.append(data(6, 4, 11 * step - 500, 1000))                   # half old
    res = counts_of(tmp_path, pkts)
    assert unique_retrans(res, (6, "tx")) == (14000, 12500, 1500)


def test_two_flows_on_one_interface(tmp_path):
    a = dict(sport=40000, dport=5000)
    b = dict(sport=40001, dport=5000)
    c = dict(src="10.0.0.3", sport=40000, dport=5000)    # differs only by the address
    pkts = [data(7, 4, 0, 1000, **a), data(7, 4, 0, 1000, **b), data(7, 4, 0, 1000, **c),
            data(7, 4, 1000, 1000, **a), data(7, 4, 1000, 1000, **b),
            data(7, 4, 1000, 1000, **b),                  # retransmission in flow b only
            data(7, 0, 0, 1000, **a)]                     # same flow seen on rx: other key
    res = counts_of(tmp_path, pkts, flows=True)
    assert unique_retrans(res, (7, "tx")) == (6000, 5000, 1000)
    assert unique_retrans(res, (7, "rx")) == (1000, 1000, 0)
    assert res.flows[(7, "tx")][("10.0.0.1", 40001, "10.0.0.2", 5000)] == 3000
    assert res.retrans_total == 1000


def test_zero_length_segments_add_nothing(tmp_path):
    pkts = [data(8, 4, 999, 0, flags="S"),               # SYN at the ISN
            data(8, 4, 1000, 1000), data(8, 4, 2000, 1000),
            data(8, 4, 2999, 0),                         # keep-alive: snd.nxt - 1, no data
            data(8, 4, 2999, 0), data(8, 4, 3000, 0),    # more keep-alives / pure ACKs
            data(8, 4, 2999, 1),                         # 1-byte keep-alive: a resent byte
            data(8, 4, 3000, 0, flags="F"),
            data(8, 4, 123456789, 0, flags="R")]         # bogus seq, no data: ignored
    res = counts_of(tmp_path, pkts)
    assert unique_retrans(res, (8, "tx")) == (2001, 2000, 1)
    assert res.per_if[(8, "tx")]["tcp_packets"] == len(pkts)


def test_both_directions_of_a_connection_on_one_interface(tmp_path):
    """Data both ways with overlapping sequence numbers: two flows, no retransmission."""
    fwd = dict(src="10.0.0.1", dst="10.0.0.2", sport=40000, dport=5000)
    rev = dict(src="10.0.0.2", dst="10.0.0.1", sport=5000, dport=40000)
    pkts = []
    for k in range(4):
        pkts.append(data(9, 4, 1000 + k * 1448, 1448, **fwd))
        pkts.append(data(9, 4, 1000 + k * 1000, 1000, **rev))
        pkts.append(data(9, 4, 1000, 0, **rev))           # ACKs
    pkts.append(data(9, 4, 1000 + 3 * 1000, 1000, **rev))  # one retransmission backwards
    res = counts_of(tmp_path, pkts, flows=True)
    assert unique_retrans(res, (9, "tx")) == (4 * 1448 + 5000, 4 * 1448 + 4000, 1000)
    assert res.flows[(9, "tx")] == {("10.0.0.1", 40000, "10.0.0.2", 5000): 4 * 1448,
                                    ("10.0.0.2", 5000, "10.0.0.1", 40000): 5000}


def test_excluded_segments_not_in_unique(tmp_path):
    pkts = [data(1, 4, 0, 1000), data(1, 4, 0, 1000),
            data(1, 4, 0, 700, sport=6653), data(1, 4, 0, 700, sport=6653),
            data(1, 4, 0, 300, dst="192.168.0.1")]
    res = counts_of(tmp_path, pkts, exclude_ports={6653}, networks=["10.0.0.0/8"])
    assert unique_retrans(res, (1, "tx")) == (2000, 1000, 1000)
    res = counts_of(tmp_path, pkts, name="all.pcap")
    assert unique_retrans(res, (1, "tx")) == (3700, 2000, 1700)


def test_unique_ethernet_and_big_endian(tmp_path):
    def eth(seq, n):
        return (Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(seq=seq, flags="A")
                / Raw(b"e" * n))
    recs = [(eth(10, 100), T0), (eth(110, 100), T0 + 1), (eth(10, 100), T0 + 2),
            (Ether() / Dot1Q(vlan=2) / IP() / TCP(seq=10) / Raw(b"v" * 50), T0 + 3)]
    path = tmp_path / "eth.pcap"
    write_pcap(path, recs, linktype=1, endian=">")
    res = read_counts(path, iface="s1-eth1")
    assert unique_retrans(res, ("s1-eth1", "any")) == (350, 250, 100)
    assert res.retrans_total == 100


def test_unique_empty_and_no_tcp(tmp_path):
    path = tmp_path / "e.pcap"
    path.write_bytes(b"")
    assert read_counts(path).retrans_total == 0
    res = counts_of(tmp_path, [arp2(1, 4)])
    assert res.retrans_total == 0 and unique_retrans(res, (1, "tx")) == (0, 0, 0)


def _random_flows_capture(rng, n_flows=40, top=1 << 32):
    """Segments of many flows on several keys with resends, reordering and wraparound.
    Returns (packets, {key: expected unique bytes}, {key: payload})."""
    segs = []          # (time, packet)
    unique = Counter()
    payload = Counter()
    for f in range(n_flows):
        key = (rng.choice([1, 2, 3, 70000]), rng.choice([0, 4]))
        kw = dict(sport=30000 + f % 7, dport=5000 + f % 3,
                  src=f"10.0.{f % 5}.1", dst=f"10.0.{f % 4}.2")
        isn = rng.choice([0, top - 3000, top - 1, rng.randrange(top)])
        t = rng.random()
        ranges = []
        pos = 0
        for _ in range(rng.randrange(1, 40)):
            r = rng.random()
            if r < 0.15 and ranges:                  # resend (possibly partial/coalesced)
                lo, hi = rng.choice(ranges)
                lo = rng.randrange(lo, hi)
                hi = min(pos, lo + rng.randrange(1, 3000))
            elif r < 0.2:                            # keep-alive / pure ACK
                lo = hi = max(pos - 1, 0)
            elif r < 0.25:                           # capture hole
                pos += rng.randrange(1, 5000)
                continue
            else:
                lo, hi = pos, pos + rng.choice([1, 100, 1448, rng.randrange(1, 9000)])
                pos = hi
            jitter = rng.random() * 0.002 if rng.random() < 0.2 else 0.0   # reordering
            t += 0.001
            p = data(key[0], key[1], isn + lo, hi - lo, **kw)
            segs.append((t + jitter, p))
            if hi > lo:
                ranges.append((lo, hi))
                payload[key[0], "tx" if key[1] == 4 else "rx"] += hi - lo
        unique[key[0], "tx" if key[1] == 4 else "rx"] += union_size(ranges)
    segs.sort(key=lambda x: x[0])
    return [p for _, p in segs], unique, payload


@pytest.mark.parametrize("chunk_bytes", [None, 4096])
@pytest.mark.parametrize("seed", [1, 2])
def test_unique_random_flows_and_chunking(tmp_path, monkeypatch, chunk_bytes, seed):
    rng = random.Random(seed)
    pkts, unique, payload = _random_flows_capture(rng)
    kw = {} if chunk_bytes is None else {"chunk_bytes": chunk_bytes}
    res = counts_of(tmp_path, pkts, **kw)
    for key, st in res.per_if.items():
        assert st["payload_bytes"] == payload[key], key
        assert st["unique_payload_bytes"] == unique[key], key
        assert st["retrans_bytes"] == payload[key] - unique[key]
    assert res.retrans_total == sum(payload.values()) - sum(unique.values()) > 0
    # Interval lists merged after every chunk: same answer.
    import emulation.pcap as pcap_mod
    monkeypatch.setattr(pcap_mod, "_IV_MERGE_ROWS", 1)
    assert counts_of(tmp_path, pkts, name="m.pcap", **kw).per_if == res.per_if


def test_flow_table_collisions_and_growth(tmp_path, monkeypatch):
    """Every flow hashed to the same slot (probe chains), and >1000 flows (table growth)."""
    import emulation.pcap as pcap_mod
    pkts = []
    for f in range(1200):
        kw = dict(sport=1024 + f, dport=5000)
        pkts += [data(1, 4, 7 * f, 100, **kw), data(1, 4, 7 * f, 100, **kw)]
    pkts += [data(1, 4, 100, 100, sport=1024), data(1, 4, 200, 50, sport=1025)]
    expect = (1200 * 200 + 150, 1200 * 100 + 150, 1200 * 100)
    res = counts_of(tmp_path, pkts, chunk_bytes=8192)
    assert unique_retrans(res, (1, "tx")) == expect
    monkeypatch.setattr(pcap_mod, "_flow_hash",
                        lambda a, b, bits: np.zeros(a.size, dtype=np.int64))
    res = counts_of(tmp_path, pkts, name="c.pcap", chunk_bytes=8192)
    assert unique_retrans(res, (1, "tx")) == expect


def test_union_groups_pathological_spans():
    """Intervals spread over more than 2^62 in one call use the per-group fallback."""
    from emulation.pcap import _union_groups
    big = 1 << 61
    gs = np.array([0, 3, 5])
    start = np.array([0, 50, 10, big, big + 5, -big, 3 * big], dtype=np.int64)
    end = start + np.array([10, 10, 45, 10, 10, 1, 1], dtype=np.int64)
    grp, s, e = _union_groups(gs, start, end)
    assert grp.tolist() == [0, 1, 2, 2]
    assert s.tolist() == [0, big, -big, 3 * big]
    assert e.tolist() == [60, big + 15, -big + 1, 3 * big + 1]
    lim = (1 << 63) - 1
    grp, s, e = _union_groups(np.array([0]), np.array([-lim, lim - 5]), np.array([3 - lim, lim]))
    assert grp.tolist() == [0, 0] and s.tolist() == [-lim, lim - 5] and e.tolist() == [3 - lim, lim]


def test_syncbed_bench_pcap_and_syncbed_pcap(tmp_path, capsys):
    from emulation import cli

    path = tmp_path / "bench.pcap"
    assert cli.main(["bench", "pcap", "--packets", "3000", "--repeat", "1", "--scapy-packets", "0",
                     "--path", str(path), "--keep"]) == 0
    assert capsys.readouterr().out.count("M packets/s") == 3 and path.exists()
    assert cli.main(["pcap", str(path)]) == 0
    out, err = capsys.readouterr()
    res = read_counts(path)
    assert len(out.splitlines()) == len(res.per_if) and err.startswith("# 3000 packets in ")
    assert sum(int(line.split("\t")[3]) for line in out.splitlines()) == sum(
        v["payload_bytes"] for v in res.per_if.values())
    assert cli.main(["pcap", str(tmp_path / "none.pcap")]) == 2
