#!/usr/bin/env python3
"""What one userspace ovs-vswitchd forwards per CPU second, and which switch levers change it
(issue #21; docs/FIDELITY.md #20 shows the table `syncbed docs` builds from the output).

One flow from namespace A to namespace B through a chain of N userspace OVS bridges joined by
veth pairs (the layout Mininet builds, offloads off as emulation/network.py sets them), unshaped:
  tcp   one iperf3 TCP flow (bulk bytes: what the switch costs per byte);
  udp   iperf3 UDP datagrams of --udp-bytes payload at full speed (what it costs per packet:
        the small messages of layer-wise all-reduces).
Each case is one MTU and one set of Open vSwitch other_config keys (userspace TSO, EMC insertion,
SMC, handler/revalidator threads); each is measured --reps times and the median kept. Per case:
Gbit/s delivered, ovs-vswitchd cores (from /proc) and the two figures that matter: Gbit/s x
bridges crossed per ovs-vswitchd core, and packets it forwarded (its ports' tx counters, ACKs
included) per CPU second.

As root, with no emulation running (it takes the project's lock /run/syncbed/lock):
    .venv/bin/python scripts/ovs_forwarding_bench.py --out docs/results/ovs-forwarding
Leaves nothing behind (bridges sbfb*, namespaces sbfb-a/b, veths sbfbv*/sbfbw*) and puts every
other_config key it touched back as it was, restarting ovs-vswitchd where a key needs it.
"""
from __future__ import annotations

import argparse
import datetime
import fcntl
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

OFFLOADS_OFF = "tx off tso off gso off gro off"  # emulation/network.py's OFFLOADS
OFFLOADS_TSO = "tx on tso on gso on gro off"      # what userspace TSO needs on the veths
OVS_CTL = "/usr/share/openvswitch/scripts/ovs-ctl"
RESTART_KEYS = {"userspace-tso-enable"}          # read only when ovs-vswitchd starts
PORT = 5299

# (label, kind, mtu, {other_config key: value}[, port type]); "" value = key removed (OVS's
# default); a port type other than system ("afxdp-nonpmd": AF_XDP sockets polled by the main
# thread, which XDP allows only up to about a page per frame) is set on every bridge port
CASES = [
    ("offloads off", "tcp", 1500, {}),
    ("offloads off", "tcp", 9000, {}),
    ("offloads off", "tcp", 16000, {}),
    ("offloads off", "tcp", 32000, {}),
    ("offloads off", "tcp", 64000, {}),
    ("userspace TSO", "tcp", 1500, {"userspace-tso-enable": "true"}),
    ("userspace TSO", "tcp", 9000, {"userspace-tso-enable": "true"}),
    ("userspace TSO", "tcp", 64000, {"userspace-tso-enable": "true"}),
    ("default", "udp", 9000, {}),
    ("EMC insert always", "udp", 9000, {"emc-insert-inv-prob": "1"}),
    ("EMC + SMC", "udp", 9000, {"emc-insert-inv-prob": "1", "smc-enable": "true"}),
    ("1 handler, 1 revalidator", "udp", 9000, {"n-handler-threads": "1", "n-revalidator-threads": "1"}),
    ("EMC insert always", "tcp", 9000, {"emc-insert-inv-prob": "1"}),
    ("1 handler, 1 revalidator", "tcp", 9000, {"n-handler-threads": "1", "n-revalidator-threads": "1"}),
    ("default", "udp", 1500, {}),
    ("AF_XDP ports (afxdp-nonpmd)", "udp", 1500, {}, "afxdp-nonpmd"),
    ("AF_XDP ports (afxdp-nonpmd)", "tcp", 1500, {}, "afxdp-nonpmd"),
]


def sh(cmd: str, check: bool = True) -> str:
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if check and r.returncode:
        raise RuntimeError(f"{cmd!r} failed: {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


def get_key(key: str) -> str:
    return sh(f"ovs-vsctl --if-exists get Open_vSwitch . other_config:{key}", check=False).strip().strip('"')


def set_keys(want: dict, keys) -> None:
    """other_config as `want` says for every key in `keys` (absent in want = removed)."""
    restart = False
    for key in keys:
        value = want.get(key, "")
        if get_key(key) == value:
            continue
        restart |= key in RESTART_KEYS
        sh(f"ovs-vsctl set Open_vSwitch . other_config:{key}={value}" if value
           else f"ovs-vsctl remove Open_vSwitch . other_config {key}")
    if restart:
        sh(f"{OVS_CTL} restart --system-id=random")
        time.sleep(1)


def ovs_ticks() -> int:
    pid = Path("/var/run/openvswitch/ovs-vswitchd.pid").read_text().strip()
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])  # utime + stime, fields 14 and 15


def teardown(n: int) -> None:
    for i in range(1, n + 1):
        sh(f"ovs-vsctl --if-exists del-br sbfb{i}", check=False)
    for ns in ("sbfb-a", "sbfb-b"):
        sh(f"ip netns del {ns}", check=False)
    for i in range(n + 1):
        sh(f"ip link del sbfbv{i}", check=False)


def build(n: int, mtu: int, offloads: str, port_type: str = "system") -> None:
    """A - sbfb1 - ... - sbfbN - B: veth i joins bridge i (or A) to bridge i+1 (or B)."""
    teardown(n)
    sh("ip netns add sbfb-a; ip netns add sbfb-b")
    for i in range(1, n + 1):
        sh(f"ovs-vsctl -- add-br sbfb{i} -- set bridge sbfb{i} datapath_type=netdev fail_mode=standalone")
    for i in range(n + 1):
        sh(f"ip link add sbfbv{i} type veth peer name sbfbw{i}")
        sh(f"ip link set sbfbv{i} netns sbfb-a" if i == 0 else f"ovs-vsctl add-port sbfb{i} sbfbv{i}")
        sh(f"ip link set sbfbw{i} netns sbfb-b" if i == n else f"ovs-vsctl add-port sbfb{i + 1} sbfbw{i}")
    for i in range(n + 1):
        for end in (f"sbfbv{i}", f"sbfbw{i}"):
            ns = "ip netns exec sbfb-a " if (i == 0 and end.startswith("sbfbv")) else \
                 "ip netns exec sbfb-b " if (i == n and end.startswith("sbfbw")) else ""
            sh(f"{ns}ethtool -K {end} {offloads}", check=False)
            sh(f"{ns}ip link set {end} mtu {mtu} up")
    for i in range(1, n + 1):
        sh(f"ovs-vsctl set interface sbfb{i} mtu_request={mtu}; ip link set sbfb{i} up")
    if port_type != "system":
        for i in range(n + 1):
            for p in ([f"sbfbv{i}"] if i else []) + ([f"sbfbw{i}"] if i < n else []):
                sh(f"ovs-vsctl set interface {p} type={port_type}")
        bad = sh("ovs-vsctl --columns=name,error find interface 'error!=[]'", check=False).strip()
        if bad:
            raise RuntimeError(f"port type {port_type}: {bad.splitlines()[-1]}")
    sh("ip netns exec sbfb-a ip addr add 10.250.0.1/24 dev sbfbv0; ip netns exec sbfb-a ip link set lo up")
    sh(f"ip netns exec sbfb-b ip addr add 10.250.0.2/24 dev sbfbw{n}; ip netns exec sbfb-b ip link set lo up")
    for _ in range(50):
        if subprocess.run("ip netns exec sbfb-a ping -c1 -W1 10.250.0.2", shell=True,
                          capture_output=True).returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError(f"the chain of {n} bridges at MTU {mtu} did not pass a ping")


def measure(kind: str, n: int, secs: float, udp_bytes: int) -> dict:
    server = subprocess.Popen(f"ip netns exec sbfb-b iperf3 -s -1 -p {PORT}".split(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    # what Open vSwitch sent: the tx counters of the veth ends that are its ports (both ways,
    # so TCP's ACKs count: they are packets it forwards too)
    ports = [f"sbfbv{i}" for i in range(1, n + 1)] + [f"sbfbw{i}" for i in range(n)]

    def sent() -> int:
        return sum(int(Path(f"/sys/class/net/{p}/statistics/tx_packets").read_text()) for p in ports)
    opts = f"-u -b 0 -l {udp_bytes}" if kind == "udp" else ""
    hz = os.sysconf("SC_CLK_TCK")
    p0, c0, t0 = sent(), ovs_ticks(), time.monotonic()
    out = sh(f"ip netns exec sbfb-a iperf3 -c 10.250.0.2 -p {PORT} -t {secs} -J {opts}", check=False)
    p1, c1, t1 = sent(), ovs_ticks(), time.monotonic()
    server.wait(timeout=10)
    end = json.loads(out)["end"]
    # TCP: what B received; UDP: what B received (sum, with the receiver's loss already out)
    got = end["sum_received"] if kind == "tcp" else end["sum"]
    if kind == "udp":  # sum's bytes are the sender's; take out what was lost on the way
        lost = got.get("lost_packets", 0)
        bps = (got["packets"] - lost) * udp_bytes * 8 / got["seconds"]
    else:
        bps = got["bits_per_second"]
    wall = t1 - t0
    cores = (c1 - c0) / hz / wall
    pps = (p1 - p0) / wall
    return {"gbit_s": bps / 1e9, "ovs_cores": cores, "packets_forwarded_s": pps,
            "gbit_per_ovs_core_x_bridges": bps / 1e9 * n / max(cores, 1e-9),
            "kpackets_per_ovs_core": pps / 1e3 / max(cores, 1e-9)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="folder for forwarding.json (default: print only)")
    ap.add_argument("--switches", type=int, default=5, help="bridges in the chain (Fat-Tree's longest path: 5)")
    ap.add_argument("--seconds", type=float, default=6.0, help="seconds per measurement")
    ap.add_argument("--reps", type=int, default=3, help="measurements per case (median kept)")
    ap.add_argument("--udp-bytes", type=int, default=200, help="UDP payload per datagram")
    ap.add_argument("--only", help="run only the cases whose label contains one of these ('|' between them)")
    a = ap.parse_args()
    for name, v, lo in (("switches", a.switches, 1), ("reps", a.reps, 1), ("udp-bytes", a.udp_bytes, 16)):
        if v < lo:
            sys.exit(f"--{name} {v} is invalid: an integer >= {lo}")
    if a.seconds < 1:
        sys.exit(f"--seconds {a.seconds} is invalid: at least 1")
    if os.geteuid() != 0:
        sys.exit("run as root: it builds bridges and namespaces")
    Path("/run/syncbed").mkdir(parents=True, exist_ok=True)
    lock = open("/run/syncbed/lock", "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit("an emulation holds /run/syncbed/lock: run this when none does")
    cases = [c for c in CASES if not a.only or any(w and w in c[0] for w in a.only.split("|"))]
    if not cases:
        sys.exit(f"--only {a.only!r} matches no case; cases: {', '.join(sorted({c[0] for c in CASES}))}")
    keys = sorted({k for c in cases for k in c[3]})
    before = {k: get_key(k) for k in keys}
    rows = []
    try:
        for i, (label, kind, mtu, cfg, *ptype) in enumerate(cases, 1):
            set_keys(cfg, keys)
            try:
                build(a.switches, mtu, OFFLOADS_TSO if cfg.get("userspace-tso-enable") else OFFLOADS_OFF,
                      *ptype)
            except RuntimeError as e:  # a lever these ports do not take: say so, keep going
                print(f"[{i}/{len(cases)}] {label} {kind} MTU {mtu}: not measured: {e}", flush=True)
                rows.append({"case": label, "kind": kind, "mtu": mtu, "other_config": cfg,
                             "port_type": ptype[0] if ptype else "system", "error": str(e)})
                continue
            reps = [measure(kind, a.switches, a.seconds, a.udp_bytes) for _ in range(a.reps)]
            med = {k: statistics.median(r[k] for r in reps) for k in reps[0]}
            rows.append({"case": label, "kind": kind, "mtu": mtu, "other_config": cfg,
                         "port_type": ptype[0] if ptype else "system", **med,
                         "reps": reps})
            print(f"[{i}/{len(cases)}] {label:>24} {kind} MTU {mtu:>5}: {med['gbit_s']:6.2f} Gbit/s, "
                  f"ovs {med['ovs_cores']:.2f} cores, {med['gbit_per_ovs_core_x_bridges']:6.2f} "
                  f"Gbit/s per ovs core x bridge, {med['kpackets_per_ovs_core']:6.1f} kpackets forwarded "
                  f"per ovs core second", flush=True)
    finally:
        teardown(a.switches)
        set_keys({k: v for k, v in before.items() if v}, keys)
    out = {"command": "python scripts/ovs_forwarding_bench.py " + " ".join(sys.argv[1:]),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host": {"kernel": platform.release(), "cpus": os.cpu_count(),
                    "ovs": sh("ovs-vsctl --version").splitlines()[0]},
           "switches": a.switches, "seconds": a.seconds, "reps": a.reps, "udp_bytes": a.udp_bytes,
           "cases": rows}
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        old = a.out / "forwarding.json"
        if a.only and old.is_file():  # a partial rerun replaces its cases and keeps the others
            prev = json.loads(old.read_text())
            mine = {(r["case"], r["kind"], r["mtu"]) for r in rows}
            out["cases"] = [r for r in prev["cases"] if (r["case"], r["kind"], r["mtu"]) not in mine] + rows
            out["command"] = prev["command"] + f"; then {out['command']}"
            out["partial_reruns"] = prev.get("partial_reruns", []) + [out["date"]]
            out["date"] = prev["date"]
        (a.out / "forwarding.json").write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {a.out / 'forwarding.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
