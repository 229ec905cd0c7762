"""Mininet `Topo` classes built from a `Topology` description.

`mn --custom topologies/mn.py --topo bcube,n=3,k=2 --switch ovs,datapath=user
 --controller remote,ip=127.0.0.1 --link tc` works, as RipL's `topos` dict does.
The description decides everything (names, ports, MACs, bandwidth); this file only
translates it into Mininet calls, so nothing else re-derives the topology from
Mininet objects.
"""
from __future__ import annotations

import os
import sys

from mininet.topo import Topo

try:
    from topologies.spec import build as _build
except ImportError:  # `mn --custom` execs this file with neither __file__ nor the repo on sys.path
    import inspect

    _here = os.path.abspath(inspect.currentframe().f_code.co_filename)
    sys.path.insert(0, os.path.dirname(os.path.dirname(_here)))
    from topologies.spec import build as _build


class DescribedTopo(Topo):
    """A Mininet topology that mirrors a `Topology` description exactly."""

    def build(self, description=None):
        d = description
        for name, node in d.nodes.items():
            if node.kind == "switch":
                self.addSwitch(name, dpid=f"{node.dpid:016x}", protocols="OpenFlow13")
            else:
                nics = d.host_nics(name)
                self.addHost(name, ip=f"{nics[0].ip}/{nics[0].prefixlen}", mac=nics[0].mac)
        for link in d.links:
            a, b = d.intfs[link.a], d.intfs[link.b]
            opts = {}
            for side, i in (("1", a), ("2", b)):
                if i.mac:  # host NICs: MAC and IP from the description
                    opts["addr" + side] = i.mac
                    opts["params" + side] = {"ip": f"{i.ip}/{i.prefixlen}"}
            self.addLink(a.node, b.node, port1=a.port, port2=b.port,
                         intfName1=a.name, intfName2=b.name, bw=link.bw, **opts)


class BCubeTopo(DescribedTopo):
    def build(self, n=4, k=2, bw=20.0):
        super().build(_build(f"bcube,n={n},k={k}", bw=bw))


class FatTreeTopo(DescribedTopo):
    def build(self, k=4, bw=20.0):
        super().build(_build(f"fattree,k={k}", bw=bw))


topos = {"bcube": BCubeTopo, "fattree": FatTreeTopo}
