"""The emulated network over several servers, on Mininet's own cluster support (issue #22).

Mininet ships its cluster edition as `mininet.examples.cluster` (Debian installs it with the
package): `MininetCluster` places nodes with a `Placer` and starts each one's shell over ssh,
`RemoteHost` / `RemoteOVSSwitch` run on their server, `RemoteLink` joins nodes of different
servers. This module only adapts it to what this machine and syncbed need:
- `VXLANLink`: Mininet's tunnels are ssh Ethernet tunnels (TCP inside TCP, not faithful under
  load) or gretap (absent from this kernel, docs/ENVIRONMENT.md). A link whose ends are on
  different servers is here one kernel VXLAN device on each server (VNI per link, UDP 4789,
  the underlay addresses of the two servers), attached to its switch or moved into its host
  like a veth end, with Mininet's HTB shaping (TCIntf) on both emulated ends exactly as on a
  local link. Links within one server stay veth pairs.
- `Cluster.classes`: host and switch classes whose ssh uses the cluster's ssh config, whose
  `popen` carries the working directory and environment to the remote side (Mininet's passes
  them to the local ssh only), and whose processes carry SYNCBED_RUN=<tag> so that cleanup on
  a server finds exactly them.
- `SyncbedCluster`: keeps the controller on 127.0.0.1 (Mininet's would move it to a global
  address; here every server reaches Ryu through an ssh-forwarded port instead, see
  `emulation/cluster.py`) and places nodes from `topologies.placement`.
"""
from __future__ import annotations

from itertools import count, groupby
from operator import attrgetter
import shlex
import subprocess
import zlib

from mininet.examples.cluster import MininetCluster, Placer, RemoteHost, RemoteLink, RemoteOVSSwitch
from mininet.link import Link, TCIntf
from mininet.net import Mininet
from mininet.node import Node, OVSSwitch

VXLAN_PORT = 4789
VXLAN_OVERHEAD = 50  # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8


class SyncbedCluster(MininetCluster):
    """MininetCluster with the controller left where syncbed put it (127.0.0.1)."""

    def addController(self, *args, **kwargs):  # noqa: N802 (Mininet's name)
        return Mininet.addController(self, *args, **kwargs)


def placer(server_of: dict, local: str):
    """A Mininet `Placer` class reading a computed placement (node -> server; `local` is the
    first server's name, which Mininet calls 'localhost')."""

    class _Placed(Placer):
        def place(self, node):
            s = server_of[node]
            return "localhost" if s == local else s

    return _Placed


def classes(ssh_config: str | None, run_tag: str, mtu: int, underlay_ip: dict, run_on: dict):
    """(host class, switch class, link class) for one run. `underlay_ip`: Mininet server name
    ('localhost' for the first) -> the address its VXLAN tunnels use; `run_on`: Mininet server
    name -> a function running a shell script in that server's root namespace (not through a
    node's pty)."""
    ssh = ["ssh", "-q"] + (["-F", ssh_config] if ssh_config else []) + ["-o", "BatchMode=yes", "-tt"]

    class Marked:
        """Every process started on another server carries SYNCBED_RUN=<tag> (its shell too)."""
        sshbase = ssh

        def _popen(self, cmd, sudo=True, tt=True, **params):
            cmd = cmd.split() if isinstance(cmd, str) else list(cmd)
            if not self.isRemote:
                # exactly as plain Mininet: RemoteMixin puts every local process in its own
                # process group first, and `mnexec -d` then forks (setsid fails for a group
                # leader), so the pid Popen returns exits at once and the worker runs on
                # unwatched (measured: the CPU monitor saw no local worker)
                return Node._popen(self, cmd, **params)
            return super()._popen(["env", f"SYNCBED_RUN={run_tag}"] + cmd, sudo=sudo, tt=tt, **params)

    class Host(Marked, RemoteHost):

        def popen(self, *args, **kwargs):
            if not self.isRemote:
                return super().popen(*args, **kwargs)
            cmd = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else \
                (args[0].split() if len(args) == 1 else list(args))
            for k, v in (("stdin", subprocess.DEVNULL), ("stdout", subprocess.PIPE), ("stderr", subprocess.PIPE)):
                kwargs.setdefault(k, v)  # Node.popen's defaults; ssh must not read our stdin
            return self._popen(["sh", "-c", shlex.quote(remote_command(self.pid, cmd, run_tag,
                                                                        kwargs.pop("cwd", None),
                                                                        kwargs.pop("env", None)))],
                               sudo=False, tt=False, **kwargs)

    class Switch(Marked, RemoteOVSSwitch):
        @classmethod
        def batchStartup(cls, switches, **_kwargs):  # noqa: N802 (Mininet's name)
            """Mininet's per-server batch, but each server's one ovs-vsctl line goes to a shell
            on stdin: RemoteOVSSwitch sends it through a switch's pty, which cuts lines at 4095
            characters (a server's ten Fat-Tree k=4 switches make ~9 KB, and none started)."""
            key = attrgetter("server")
            for server, group in groupby(sorted(switches, key=key), key):
                OVSSwitch.batchStartup(tuple(group), run=lambda cmds, _s=server, **_kw: run_on[_s](cmds))
            return switches

    # VNIs start at a per-run base: a killed run's host namespaces are destroyed by the kernel
    # asynchronously, and until then their VXLAN devices hold their VNIs ("A VXLAN device with
    # the specified VNI already exists" for the next run's first link, measured)
    vnis = count(1 + zlib.crc32(run_tag.encode()) % 1600 * 10_000)

    class VXLANLink(RemoteLink):
        """A TCLink (HTB on both ends) that is a VXLAN tunnel when its ends are on two servers."""

        def __init__(self, node1, node2, **params):
            params.setdefault("cls1", TCIntf)
            params.setdefault("cls2", TCIntf)
            self.vxlan = None
            RemoteLink.__init__(self, node1, node2, **params)

        def makeIntfPair(self, intfname1, intfname2, addr1=None, addr2=None,  # noqa: N802
                         node1=None, node2=None, deleteIntfs=True):
            node1 = self.node1 if node1 is None else node1
            node2 = self.node2 if node2 is None else node2
            s1, s2 = getattr(node1, "server", "localhost"), getattr(node2, "server", "localhost")
            if s1 == s2:
                return Link.makeIntfPair(intfname1, intfname2, addr1, addr2, node1, node2,
                                         deleteIntfs=deleteIntfs)
            vni = next(vnis)
            self.vxlan = vni
            for node, name, addr, here, there in ((node1, intfname1, addr1, s1, s2),
                                                  (node2, intfname2, addr2, s2, s1)):
                node.rcmd(f"ip link del {name}")  # a leftover of a killed run; says so if absent
                for c in vxlan_commands(name, vni, underlay_ip[here], underlay_ip[there], mtu, addr, node.pid):
                    out = node.rcmd(c)
                    if out.strip():
                        raise RuntimeError(f"VXLAN link {intfname1}-{intfname2} on {here}: {c}: "
                                           f"{' '.join(out.split())[:200]}")
            return None

        def stop(self):
            if self.vxlan is not None:
                self.intf1.delete()
                self.intf2.delete()
                self.vxlan = None
            else:
                Link.stop(self)

    return Host, Switch, VXLANLink


def vxlan_commands(name: str, vni: int, local_ip: str, remote_ip: str, mtu: int, mac: str | None,
                   pid: int) -> list[str]:
    """The commands that make one end of a crossing link on its server: a VXLAN device with the
    link's VNI between the two underlay addresses, the emulated MTU, the end's MAC, moved into
    its node's network namespace (a switch's is its server's root one). One command per line,
    no shell syntax (Mininet runs them split on blanks locally, through ssh remotely). Pure."""
    cmds = [f"ip link add name {name} type vxlan id {vni} local {local_ip} remote {remote_ip} "
            f"dstport {VXLAN_PORT} nolearning",
            f"ip link set {name} mtu {mtu}"]
    if mac:
        cmds.append(f"ip link set {name} address {mac}")
    cmds.append(f"ip link set {name} netns {pid}")
    return cmds


def remote_command(pid: int, cmd: list[str], run_tag: str, cwd: str | None, env: dict | None) -> str:
    """The shell line that runs `cmd` in the namespaces of process `pid` on a remote server, in
    `cwd`, with the variables of `env` that a worker needs (not the local PATH or HOME), marked
    SYNCBED_RUN=<tag> for cleanup. Pure."""
    keep = {k: v for k, v in (env or {}).items()
            if k.startswith(("SYNCBED", "OMP_", "MKL_", "PYTHON", "GLOO", "TORCH", "NCCL", "MASTER_"))}
    keep["SYNCBED_RUN"] = run_tag
    line = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in sorted(keep.items()))
    head = f"cd {shlex.quote(cwd)} && " if cwd else ""
    # not mnexec -d: under sshd the command is a session leader already, so -d would fork and
    # ssh would return the parent's 0 instead of the worker's exit status (a crash went unseen)
    return f"{head}exec env {line} mnexec -a {int(pid)} {shlex.join(cmd)}"
