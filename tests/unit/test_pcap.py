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
         dport=5000, ip_options=None, tcp_options=None):
    ip = IP(src=src, dst=dst, flags="DF")
    if ip_options is not None:
        ip.options = ip_options
    tcp = TCP(sport=sport, dport=dport, flags="A")
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
                                     "excluded_packets": 0, "other_packets": 1}
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


def _reference(path):
    """Independent (slow) reference with scapy's dissectors."""
    from scapy.utils import RawPcapReader
    out = defaultdict(Counter)
    with RawPcapReader(str(path)) as reader:
        for raw, _meta in reader:
            p = CookedLinuxV2(raw)
            key = (p.ifindex, "tx" if p.pkttype == 4 else "rx")
            out[key]["packets"] += 1
            if IP in p and TCP in p and p[IP].frag == 0:
                out[key]["payload_bytes"] += p[IP].len - 4 * p[IP].ihl - 4 * p[TCP].dataofs
            else:
                out[key]["other_packets"] += 1
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
                     tcp_options=[("NOP", None)] * 4 * rng.randrange(4))
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
