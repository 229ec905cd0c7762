"""One experiment over several servers (issue #22): what the user asks for, and what every
server must be and do for the run to be trusted.

- `Spec`, `parse`: the `cluster:` block of an experiment (or `--cluster a,b`): the servers as
  ssh targets (the first is the machine running syncbed), the node placement (topology-aware
  by default, `topologies.placement.place_on_servers`, or an explicit map), per-server capacity in hosts, an
  ssh config file. Pure; a bad block is one line.
- `Server`: one server and how to run a command on it (locally for the first, over ssh for
  the others, with BatchMode so that nothing ever asks for a password).
- `preflight`: before anything starts, every server must answer ssh as root without a
  password, have Mininet, Open vSwitch running and the same versions and syncbed commit as the
  first, and see the results folder as this machine does (a shared file system at the same
  path: workers on every server write their logs there and read their job and start signal
  from it); the underlay's MTU decides the emulated MTU (VXLAN takes 50 bytes). One line,
  exit 2.
- `ControllerTunnel`: Ryu listens on 127.0.0.1 of the first server only; each other server
  reaches it through `ssh -R 127.0.0.1:P:127.0.0.1:P`, so the controller's port is never bound
  to any other address on any server.
- `RemoteMonitor`: the CPU monitor of another server over the iterations.
What a run leaves on another server is undone by `emulation/state.py` (`remote_cleanup`), from
the ssh command recorded for it.
The Mininet side (VXLAN links, remote hosts and switches) is `emulation/remote.py`.
"""
from __future__ import annotations

import shlex
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from emulation.state import stop_procs

ROOT = Path(__file__).resolve().parent.parent


class ClusterError(ValueError):
    """A cluster that cannot run: one line, before anything starts."""


@dataclass(frozen=True)
class Spec:
    servers: tuple  # ssh targets (names or addresses); servers[0] is this machine
    placement: object = "topology"  # "topology" or {node | pod<p> | group<i>: server}
    capacity: object = None  # hosts per server: one int or {server: int}
    ssh_config: str | None = None  # an ssh config file for every ssh to the servers

    def capacities(self) -> dict | None:
        if self.capacity is None:
            return None
        if isinstance(self.capacity, dict):
            return {s: int(self.capacity.get(s, 0)) for s in self.servers}
        return {s: int(self.capacity) for s in self.servers}


def parse(value, ssh_config: str | None = None) -> Spec | None:
    """The `cluster:` block: a list of servers, "a,b" or {servers, placement, capacity,
    ssh_config}; None for none. Raises ClusterError (one line)."""
    if value in (None, "", [], {}):
        return None
    if isinstance(value, str):
        value = {"servers": [s for s in value.split(",") if s.strip()]}
    elif isinstance(value, (list, tuple)):
        value = {"servers": list(value)}
    if not isinstance(value, dict):
        raise ClusterError(f"cluster: {value!r} is invalid: give the servers as a list or 'a,b', or "
                           "{servers: [...], placement: topology | {node: server}, capacity: N}")
    unknown = sorted(set(value) - {"servers", "placement", "capacity", "ssh_config"})
    if unknown:
        raise ClusterError(f"cluster: unknown key {unknown[0]!r}; valid: servers, placement, capacity, ssh_config")
    servers = [str(s).strip() for s in value.get("servers") or []]
    if len(servers) < 2 or any(not s for s in servers):
        raise ClusterError(f"cluster: servers={servers} is invalid: at least two ssh targets, the first this machine")
    if len(set(servers)) != len(servers):
        raise ClusterError(f"cluster: servers={servers} names a server twice")
    placement = value.get("placement", "topology")
    if placement != "topology" and not isinstance(placement, dict):
        raise ClusterError(f"cluster: placement={placement!r} is invalid: 'topology' or a map {{node: server}}")
    if isinstance(placement, dict):
        bad = sorted({str(s) for s in placement.values()} - set(servers))
        if bad:
            raise ClusterError(f"cluster: placement names server {bad[0]!r}, which is not one of {servers}")
    cap = value.get("capacity")
    if cap is not None:
        vals = cap.values() if isinstance(cap, dict) else [cap]
        if not all(isinstance(v, int) and v >= 0 for v in vals):
            raise ClusterError(f"cluster: capacity={cap!r} is invalid: hosts per server, an int >= 0 or {{server: int}}")
        if isinstance(cap, dict) and set(cap) - set(servers):
            raise ClusterError(f"cluster: capacity names {sorted(set(cap) - set(servers))[0]!r}, not one of {servers}")
    cfg = value.get("ssh_config", ssh_config)
    if cfg is not None and not Path(cfg).is_file():
        raise ClusterError(f"cluster: ssh_config {cfg} does not exist")
    return Spec(tuple(servers), placement, cap, str(cfg) if cfg else None)


# ---- servers -------------------------------------------------------------------------------
@dataclass
class Server:
    name: str  # as the user wrote it (the ssh target)
    ip: str  # the address its tunnels use
    local: bool
    ssh_config: str | None = None
    shared_fs: bool = False  # sees this machine's results folder at the same path
    facts: dict = field(default_factory=dict)

    def ssh(self, *extra) -> list[str]:
        return (["ssh"] + (["-F", self.ssh_config] if self.ssh_config else [])
                + ["-o", "BatchMode=yes", "-o", "ConnectTimeout=5", *extra, self.name])

    def argv(self, command: str) -> list[str]:
        """The argv that runs shell line `command` on this server (as root)."""
        return ["sh", "-c", command] if self.local else self.ssh() + [command]

    def run(self, command: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(command), input=stdin, capture_output=True, text=True, timeout=timeout)


def resolve(name: str) -> str:
    try:
        return socket.getaddrinfo(name, None, socket.AF_INET)[0][4][0]
    except (socket.gaierror, IndexError):
        raise ClusterError(f"cluster: server {name!r} does not resolve to an IPv4 address") from None


FACTS = ("uid=$(id -u); echo uid=$uid; "
         "echo mininet=$(/usr/bin/python3 -W ignore -c 'import mininet.net, mininet.examples.cluster; "
         "print(mininet.net.VERSION)' 2>/dev/null); "
         "echo ovs=$(ovs-vsctl --version 2>/dev/null | head -1 | awk '{{print $NF}}'); "
         "ovs-vsctl --timeout=3 show >/dev/null 2>&1 && echo ovs_running=yes; "
         "echo commit=$(cd {root} 2>/dev/null && git rev-parse HEAD 2>/dev/null); "
         "test -f {marker} && echo shared_fs=yes; "
         "echo mtu=$(cat /sys/class/net/$(ip -o route get {peer} | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p')/mtu)")


def parse_facts(text: str) -> dict:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def preflight(spec: Spec, out: str | Path, log=print) -> list[Server]:
    """Check every server before anything starts; return them with their facts. Raises
    ClusterError naming the first server that cannot take part, and why. `out`: the results
    folder, which every server must see."""
    ips = [resolve(s) for s in spec.servers]
    servers = [Server(s, ip, i == 0, spec.ssh_config) for i, (s, ip) in enumerate(zip(spec.servers, ips))]
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    marker = out / f".syncbed-cluster-{uuid.uuid4().hex[:8]}"
    marker.write_text("")
    try:
        for i, srv in enumerate(servers):
            peer = ips[1] if i == 0 else ips[0]
            cmd = FACTS.format(root=shlex.quote(str(ROOT)), marker=shlex.quote(str(marker)), peer=peer)
            try:
                p = srv.run(cmd, timeout=20)
            except subprocess.TimeoutExpired:
                raise ClusterError(f"cluster: server {srv.name} does not answer ssh within 20 s") from None
            if p.returncode == 255:
                why = " ".join((p.stderr or "").split())[:160] or "no output"
                raise ClusterError(f"cluster: cannot ssh to {srv.name} as root without a password ({why}); "
                                   "set up keys as docs/CLUSTER.md says")
            srv.facts = parse_facts(p.stdout)
            srv.shared_fs = srv.local or srv.facts.get("shared_fs") == "yes"
    finally:
        marker.unlink(missing_ok=True)
    first = servers[0].facts
    for srv in servers:
        f = srv.facts
        if f.get("uid") != "0":
            raise ClusterError(f"cluster: on {srv.name} ssh logs in as uid {f.get('uid')}, not root")
        if not f.get("mininet"):
            raise ClusterError(f"cluster: Mininet (with its cluster edition) is missing on {srv.name}; "
                               "run bash scripts/setup.sh there")
        if not srv.shared_fs:
            raise ClusterError(f"cluster: {srv.name} does not see the results folder {out} as this machine does; "
                               "share it at the same path (e.g. NFS), docs/CLUSTER.md")
        if f.get("ovs_running") != "yes":
            raise ClusterError(f"cluster: Open vSwitch is not running on {srv.name}; run bash scripts/setup.sh there")
        for key in ("mininet", "ovs", "commit"):
            if f.get(key) != first.get(key):
                raise ClusterError(f"cluster: {key} on {srv.name} is {f.get(key) or 'missing'!r}, "
                                   f"on {servers[0].name} {first.get(key)!r}: install the same on every server")
    log(f"cluster: {len(servers)} servers answer (" + ", ".join(
        f"{s.name} underlay MTU {s.facts.get('mtu')}" for s in servers) + ")")
    return servers


def emulated_mtu(servers: list[Server], wanted: int) -> int:
    """The MTU every emulated interface gets: the wanted one, less where a server's underlay
    cannot carry it inside VXLAN (50 bytes of headers)."""
    from emulation.remote import VXLAN_OVERHEAD
    mtus = [int(s.facts.get("mtu") or 1500) for s in servers]
    return min([wanted] + [m - VXLAN_OVERHEAD for m in mtus])


# ---- the controller, reached from every server on its own 127.0.0.1 ----------------------------
class ControllerTunnel:
    """`ssh -N -R 127.0.0.1:P:127.0.0.1:P` to each other server, so that its switches reach Ryu
    at tcp:127.0.0.1:P as the first server's do; nothing listens on another address."""

    def __init__(self, servers: list[Server], port: int, state=None):
        self.servers = [s for s in servers if not s.local]
        self.port = port
        self.state = state
        self.procs = []

    def __enter__(self):
        fwd = f"127.0.0.1:{self.port}:127.0.0.1:{self.port}"
        for s in self.servers:
            p = subprocess.Popen(s.ssh("-N", "-o", "ExitOnForwardFailure=yes", "-o", "ControlMaster=no",
                                       "-R", fwd), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, start_new_session=True)
            self.procs.append(p)
            if self.state is not None:
                self.state.add("pgids", p.pid)
        for s, p in zip(self.servers, self.procs):
            deadline = time.time() + 15
            while True:
                if p.poll() is not None:
                    err = " ".join(p.stderr.read().decode(errors="replace").split())[:160]
                    self.__exit__()
                    raise ClusterError(f"cluster: forwarding the controller's port to {s.name} failed: {err}")
                if f"127.0.0.1:{self.port} " in s.run(f"ss -Hltn 'sport = :{self.port}'", timeout=10).stdout:
                    break
                if time.time() > deadline:
                    self.__exit__()
                    raise ClusterError(f"cluster: the controller's port {self.port} is not listening on {s.name}")
                time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        stop_procs(self.procs)
        self.procs = []


# ---- CPU of another server ---------------------------------------------------------------------
class RemoteMonitor:
    """`python -m emulation.monitor` on another server over the iterations (its ovs-vswitchd and
    the run's workers there), written to `out` in the shared run folder; the analysis judges
    every server's CPU like this machine's."""

    def __init__(self, server: Server, tag: str, out: Path, state=None):
        self.server, self.tag, self.out, self.state = server, tag, Path(out), state
        self.proc = None

    def start(self) -> "RemoteMonitor":
        import sys
        cmd = (f"cd {shlex.quote(str(ROOT))} && exec env SYNCBED_RUN={self.tag} {shlex.quote(sys.executable)} "
               f"-m emulation.monitor --tag {self.tag} --out {shlex.quote(str(self.out))}")
        self.proc = subprocess.Popen(self.server.ssh() + [cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True, text=True)
        if self.state is not None:
            self.state.add("pgids", self.proc.pid)
        line = self.proc.stdout.readline()  # "monitoring" once it samples
        if "monitoring" not in line:
            raise RuntimeError(f"the CPU monitor on {self.server.name} did not start: {line.strip()[:200]}")
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        self.server.run(f"pkill -INT -f 'emulation.monitor --tag {self.tag} --out {self.out}'", timeout=30)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            stop_procs([self.proc])
        self.proc = None
