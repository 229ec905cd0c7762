"""Build, configure, check and stop the emulated network of one topology description.

Split of duties: the description decides (names, ports, addresses, routes, ARP,
bandwidth); Mininet creates hosts, veth links and HTB shaping (TCLink); this module
makes the measured environment work (docs/ENVIRONMENT.md): Open vSwitch with the
userspace datapath under a remote Ryu controller, TSO/GSO/GRO off and jumbo frames on
every interface, IP forwarding and host routes for BCube's server relaying, static ARP.
Everything it creates is recorded in the run's `State` first, so teardown and
`syncbed clean` can undo a run that died half way.

Over several servers (`cluster`: the preflighted `emulation.cluster.Server`s and a
`topologies.placement.Placement`), Mininet's cluster edition builds it instead
(`emulation/remote.py`: VXLAN between servers), and every root-namespace command here runs
on the server that owns the switch (`_on`).
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from functools import partial
from pathlib import Path

from mininet.log import lg, setLogLevel
from mininet.link import TCLink
from mininet.net import Mininet
from mininet.node import OVSSwitch, RemoteController

from emulation.config import TCP_CC_DEFAULT
from topologies.mn import DescribedTopo

OFFLOADS = "tx off tso off gso off gro off"
# ovs-vswitchd sends on every port through one packet socket, whose send buffer holds every packet
# waiting in any switch egress queue of this server; past it OVS drops without counting. 16 MiB
# lost packets with PS at 24 and 32 workers on Fat-Tree k=6 (more than 16 MiB held at once at 32, sampled with ss;
# docs/FIDELITY.md #1, #23); scripts/setup.sh sets 64 MiB.
MIN_OVS_SNDBUF = 64 << 20
TCP_RTO_MIN_PROC = "/proc/sys/net/ipv4/tcp_rto_min_us"  # per network namespace since Linux 6.11
TCP_CC_PROC = "/proc/sys/net/ipv4/tcp_{}congestion_control"  # {}: available_ or allowed_


class _QuietHtb:
    """HTB warns 'quantum of class ... is big' for every link at these rates with MTU 9000;
    it is harmless with one class per interface, and it buries real errors."""

    @staticmethod
    def filter(record):
        return "quantum of class" not in record.getMessage()


lg.addFilter(_QuietHtb)


def ovs_send_buffer() -> int | None:
    """Send buffer of ovs-vswitchd's packet socket (bytes), or None if not found."""
    try:
        out = subprocess.run(["ss", "-0", "-m", "-p", "-n"], capture_output=True, text=True, timeout=10).stdout
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        if "ovs-vswitchd" in line and "tb" in line:
            return int(line.split("tb", 1)[1].split(",", 1)[0])
    return None


class ListeningController(RemoteController):
    """A remote controller already known to listen (controllers.launcher checked).

    Mininet's own check pipes telnet into the port; Ryu answers with a binary OpenFlow
    HELLO that Mininet's UTF-8 reader sometimes cannot decode, failing the run."""

    def checkListening(self):
        pass


class Network:
    def __init__(self, topo, controller_port: int, state, run_tag: str, mtu: int = 9000, log=print,
                 cluster=None, scratch=None, tcp_cc: str = TCP_CC_DEFAULT, tcp_rto_min_ms: int | None = None):
        self.topo = topo
        self.tcp_cc = tcp_cc
        self.tcp_rto_min_ms = tcp_rto_min_ms
        self.cluster = cluster  # (servers, placement) or None
        self.scratch = scratch  # where the hosts' command files go (a folder every server sees)
        self.port = controller_port
        self.state = state
        self.tag = run_tag
        self.mtu = mtu
        self.log = log
        self.net: Mininet | None = None
        self.start_seconds = None

    # ---- lifecycle -----------------------------------------------------------------
    def start(self) -> "Network":
        setLogLevel("error")
        t0 = time.time()
        topo = self.topo
        if self.cluster:
            self.net = self._cluster_mininet()
        else:
            switch = partial(OVSSwitch, datapath="user", protocols="OpenFlow13", failMode="secure")
            self.net = Mininet(topo=DescribedTopo(description=topo), switch=switch, link=TCLink,
                               controller=None, build=False, autoSetMacs=False, waitConnected=False)
        self.net.addController(ListeningController("c0", ip="127.0.0.1", port=self.port))
        # record names before they exist: a crash inside build() must still be undone
        self.state.add("bridges", *self._mine(topo.switches()))
        self.state.add("intfs", *self._mine(self._switch_intfs()))
        self.net.build()
        self.state.add("pids", *[h.pid for h in self.net.hosts if not getattr(h, "isRemote", False)])
        self.net.start()
        self._configure_switches()
        self._configure_hosts()
        self.start_seconds = time.time() - t0
        return self

    def stop(self):
        if self.net is not None:
            try:
                self.net.stop()
            finally:
                self.net = None

    def host(self, name: str):
        return self.net.get(name)

    # ---- several servers -----------------------------------------------------------
    def _cluster_mininet(self):
        from emulation import remote
        servers, placement = self.cluster
        first = servers[0]
        mn_name = {s.name: ("localhost" if s.local else s.name) for s in servers}
        underlay = {mn_name[s.name]: s.ip for s in servers}
        cfg = first.ssh_config
        run_on = {mn_name[s.name]: (lambda script, _s=s: self._on(_s, script)) for s in servers}
        host, switch, link = remote.classes(cfg, self.tag, self.mtu, underlay, run_on)
        for s in servers[1:]:  # recorded before anything exists there
            self.state.add("remote", {"server": s.name, "ssh": s.ssh(), "tag": self.tag,
                                      "intfs": [i for i in self._switch_intfs() if self.server_of(i) is s]})
        return remote.SyncbedCluster(
            topo=DescribedTopo(description=self.topo), host=host, link=link, controller=None, build=False,
            switch=partial(switch, datapath="user", protocols="OpenFlow13", failMode="secure"),
            autoSetMacs=False, waitConnected=False, servers=[mn_name[s.name] for s in servers],
            serverIP=underlay, user="root", precheck=False,
            placement=remote.placer(placement.server_of, first.name))

    def server_of(self, node_or_intf: str):
        """The `Server` that owns a node (or an interface, by its node); None without a cluster."""
        if not self.cluster:
            return None
        servers, placement = self.cluster
        node = node_or_intf if node_or_intf in self.topo.nodes else self.topo.intfs[node_or_intf].node
        name = placement.server_of[node]
        return next(s for s in servers if s.name == name)

    def _mine(self, names):
        """The nodes or interfaces among `names` that live on this machine."""
        return [n for n in names if self.server_of(n) is None or self.server_of(n).local]

    def _switch_intfs(self) -> list[str]:
        return [i.name for i in self.topo.intfs.values() if self.topo.nodes[i.node].kind == "switch"]

    def _by_server(self, names):
        """[(server or None for this machine without a cluster, names on it)], this machine first."""
        if not self.cluster:
            return [(None, list(names))]
        out = []
        for s in self.cluster[0]:
            mine = [n for n in names if self.server_of(n) is s]
            if mine:
                out.append((s, mine))
        return out

    def stop_marked(self, hosts, mark: str, sig: str = "TERM") -> None:
        """Stop this run's processes marked `mark` on the other servers that hold `hosts` (the
        local ones are stopped through their Popen objects) with signal `sig`."""
        from emulation.state import marked_kill_script
        for server, _names in self._by_server(hosts):
            if server is not None and not server.local:
                self._on(server, marked_kill_script(self.tag, mark, sig))

    def _on(self, server, script: str) -> str:
        """Run shell `script` in the root namespace of `server` (None: this machine)."""
        if server is None or server.local:
            return _run(["sh", "-s"], stdin=script)
        p = server.run("sh -s", stdin=script, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"on {server.name}: {(p.stderr or p.stdout).strip()[:300]}")
        return p.stdout

    # ---- configuration -------------------------------------------------------------
    def _configure_switches(self):
        for server, switches in self._by_server(self.topo.switches()):
            sw_intfs = [i.name for s in switches for i in self.topo.node_intfs(s)]
            vs = ["ovs-vsctl", "--timeout=30"]
            for s in switches:
                vs += ["--", "set", "bridge", s, f"external_ids:syncbed={self.tag}",
                       "--", "set", "interface", s, f"mtu_request={self.mtu}"]
            for i in sw_intfs:
                vs += ["--", "set", "interface", i, f"mtu_request={self.mtu}"]
            # on stdin: one argument holds at most 128 KiB
            self._on(server, shlex.join(vs) + "\n" + "\n".join(
                f"ethtool -K {i} {OFFLOADS} >/dev/null 2>&1; ip link set {i} mtu {self.mtu}" for i in sw_intfs))

    def _configure_hosts(self):
        # Each host runs a short `sh FILE` instead of its configuration as one command line:
        # Mininet talks to a host's shell through a pty, whose line discipline cuts a line at
        # 4095 characters, and Fat-Tree k=6 (53 ARP entries per host) or BCube(4,3) (180
        # routes) need more ("Device and destination are required arguments." from the
        # cut `ip neigh`). `ip -batch` also runs all address, ARP and route changes in one
        # process instead of one `ip` per entry.
        relay = any(self.topo.routes.values())
        tmp = Path(tempfile.mkdtemp(prefix="syncbed-hosts-", dir=self.scratch))
        try:
            for name in self.topo.hosts():
                shell, batch = host_commands(self.topo, name, self.mtu, relay, self.tcp_cc, self.tcp_rto_min_ms)
                (tmp / f"{name}.ip").write_text("\n".join(batch) + "\n")
                shell.append(f"ip -batch {tmp / (name + '.ip')} || echo syncbed-failed: ip -batch exited $?")
                (tmp / f"{name}.sh").write_text("\n".join(shell) + "\n")
                out = self.host(name).cmd(f"sh {tmp / (name + '.sh')}; echo syncbed-configured")
                if "syncbed-configured" not in out or "rror" in out or "syncbed-failed" in out:
                    raise RuntimeError(f"configuring {name} failed: {' '.join(out.split())[:300]}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    # ---- checks --------------------------------------------------------------------
    def reachability(self, retries: int = 2) -> list[str]:
        """Ping every address of every other host from every host; return the failures."""
        topo = self.topo
        hosts = topo.hosts()
        ips = {h: [n.ip for n in topo.host_nics(h)] for h in hosts}
        failures: list[str] = []
        # targets in a file, not on the command line: 889 addresses (BCube(2,7)) are over the
        # pty's 4095 characters, and a `for` cut short leaves the shell waiting for `done`
        tmp = Path(tempfile.mkdtemp(prefix="syncbed-ping-", dir=self.scratch))
        try:
            for name in hosts:
                (tmp / name).write_text("".join(f"{ip}\n" for o in hosts if o != name for ip in ips[o]))
            for attempt in range(retries + 1):
                failures = []
                for name in hosts:  # all hosts ping in parallel, each through its targets in turn
                    self.host(name).sendCmd(f"while read ip; do ping -n -c1 -W2 -q $ip >/dev/null 2>&1 "
                                            f"|| echo FAIL $ip; done < {tmp / name}")
                for name in hosts:
                    out = self.host(name).waitOutput()
                    failures += [f"{name}->{line.split()[1]}" for line in out.splitlines()
                                 if line.startswith("FAIL")]
                if not failures:
                    break
                time.sleep(1)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return failures


def tcp_cc_problem(name: str, available: str, allowed: str) -> str | None:
    """One line when the emulated hosts cannot use congestion control `name`, given this
    machine's available and allowed lists (/proc/sys/net/ipv4/tcp_*_congestion_control, space
    separated); None when they can. A namespace may only pick an allowed one."""
    if name not in available.split():
        return f"tcp_cc={name} is not available in this kernel; available: {', '.join(available.split())}"
    if name not in allowed.split():
        return (f"tcp_cc={name} is available but not allowed in the emulated hosts' namespaces (allowed: "
                f"{', '.join(allowed.split())}); allow it with: make setup")
    return None


def tcp_rto_min_problem(ms: int | None, proc: str = TCP_RTO_MIN_PROC) -> str | None:
    """Why the hosts cannot be given a minimum RTO of `ms` here (None: they can, or none asked)."""
    if ms is not None and not Path(proc).exists():
        return (f"tcp_rto_min_ms={ms} needs {proc} (Linux 6.11 or later; this kernel is "
                f"{os.uname().release}): omit it for the kernel's 200 ms")
    return None


def machine_tcp_cc() -> dict:
    """This machine's available and allowed congestion controls ({} where unreadable)."""
    out = {}
    for key, prefix in (("available", "available_"), ("allowed", "allowed_")):
        try:
            out[key] = Path(TCP_CC_PROC.format(prefix)).read_text().strip()
        except OSError:
            pass
    return out


def host_commands(topo, name: str, mtu: int, relay: bool,
                  tcp_cc: str = TCP_CC_DEFAULT, tcp_rto_min_ms: int | None = None) -> tuple[list[str], list[str]]:
    """The configuration of one host: (shell commands, `ip -batch` lines). Pure, like
    Mininet's `TCIntf.bwCmds`: returns the commands, runs nothing. `tcp_cc`: the TCP congestion
    control of the host's namespace (its workers' sockets are made after it is set); a refusal
    (not allowed in a namespace) fails the configuration instead of leaving the machine's.
    `tcp_rto_min_ms`: the namespace's minimum retransmission timeout (None: the kernel's)."""
    shell = [f"sysctl -qw net.ipv4.ip_forward={int(bool(relay))}",
             "sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0",
             "sysctl -qw net.ipv4.conf.all.send_redirects=0",
             f"sysctl -qw net.ipv4.tcp_congestion_control={tcp_cc} 2>/dev/null "
             f"|| echo syncbed-failed: tcp_congestion_control={tcp_cc} refused"]
    if tcp_rto_min_ms is not None:
        shell.append(f"sysctl -qw net.ipv4.tcp_rto_min_us={int(tcp_rto_min_ms) * 1000} 2>/dev/null "
                     f"|| echo syncbed-failed: tcp_rto_min_us refused")
    batch = []
    for nic in topo.host_nics(name):
        shell += [f"ethtool -K {nic.name} {OFFLOADS} >/dev/null 2>&1",
                  f"sysctl -qw net.ipv4.conf.{nic.name.replace('.', '/')}.rp_filter=0"]
        batch += [f"link set {nic.name} mtu {mtu}",
                  f"addr replace {nic.ip}/{nic.prefixlen} dev {nic.name}"]
    batch += [f"neigh replace {ip} lladdr {mac} dev {dev} nud permanent" for ip, mac, dev in topo.arp.get(name, [])]
    batch += [f"route replace {r.dst} via {r.via} dev {r.dev} onlink" + (f" src {r.src}" if r.src else "")
              for r in topo.routes.get(name, [])]
    return shell, batch


def qdisc_drops(tc_json: str, names) -> dict:
    """intf -> packets dropped by its root qdisc, from `tc -s -j qdisc show` output."""
    out = {}
    try:
        rows = json.loads(tc_json or "[]")
    except ValueError:
        return out
    for q in rows:
        if q.get("root") and q.get("dev") in names:
            out[q["dev"]] = out.get(q["dev"], 0) + int(q.get("drops", 0))
    return out


def drop_counters(net, topo) -> dict:
    """Drops at every queue a packet crosses: HTB on both ends of each link, and OVS's
    own per-port drops (its packet sockets overflowing when ovs-vswitchd falls behind)."""
    drops = {"qdisc": {}, "ovs": {}}
    for server, names in net._by_server(net._switch_intfs()):  # each server's root namespace
        sw = set(names)
        drops["qdisc"].update(qdisc_drops(net._on(server, "tc -s -j qdisc show"), sw))
        out = net._on(server, "ovs-vsctl --timeout=20 --format=json --columns=name,statistics list interface")
        for name, stats in json.loads(out)["data"]:
            if name in sw:
                st = dict(stats[1])
                drops["ovs"][name] = int(st.get("rx_dropped", 0)) + int(st.get("tx_dropped", 0))
    for name in topo.hosts():
        nics = {n.name for n in topo.host_nics(name)}
        drops["qdisc"].update(qdisc_drops(net.host(name).cmd("tc -s -j qdisc show"), nics))
    drops["tcp"] = tcp_counters(net, topo.hosts())
    return drops


TCP_KEYS = ("RetransSegs", "TCPTimeouts", "TCPSpuriousRTOs", "TCPLossProbes", "TCPFastRetrans",
            "TCPDSACKRecv", "TCPDSACKOldSent", "TCPOFOQueue", "TCPRcvQDrop", "OutSegs")


def parse_snmp(text: str) -> dict:
    """Counters from /proc/net/snmp + /proc/net/netstat (header line, value line pairs)."""
    out, lines = {}, text.splitlines()
    for head, vals in zip(lines, lines[1:]):
        h, v = head.split(), vals.split()
        if h and v and h[0] == v[0] and h[0] in ("Tcp:", "TcpExt:") and len(h) == len(v):
            for k, x in zip(h[1:], v[1:]):
                if k in TCP_KEYS:
                    out[k] = out.get(k, 0) + int(x)
    return out


def tcp_counters(net, hosts) -> dict:
    """host -> TCP counters of its namespace (retransmissions, timeouts, ...)."""
    return {h: parse_snmp(net.host(h).cmd("cat /proc/net/snmp /proc/net/netstat")) for h in hosts}


def drop_delta(before: dict, after: dict) -> dict:
    d = {}
    for kind in ("qdisc", "ovs"):
        d[kind] = {k: v - before.get(kind, {}).get(k, 0) for k, v in after.get(kind, {}).items()
                   if v - before.get(kind, {}).get(k, 0) > 0}
    d["total"] = sum(sum(v.values()) for v in d.values() if isinstance(v, dict))
    tcp = {}
    for h, c in after.get("tcp", {}).items():
        for k, v in c.items():
            tcp[k] = tcp.get(k, 0) + v - before.get("tcp", {}).get(h, {}).get(k, 0)
    d["tcp"] = tcp
    return d


def _run(cmd: list[str], stdin: str | None = None):
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd[:3])} ... failed: {(p.stderr or p.stdout).strip()[:300]}")
    return p.stdout
