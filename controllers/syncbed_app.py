"""Ryu app: install every route proactively when a switch connects, then report readiness.

One concern: translate `controllers.routing` plans into OpenFlow 1.3. On connect a
switch gets one rule per destination MAC, its per-source ECMP choices above those, one
ARP rule per destination address, and a drop-all table-miss entry (nothing is flooded
or sent to the controller). A barrier follows; its reply marks the switch ready in the status file
(`--syncbed-status`), which the launcher polls. Options come from the command line
(`controllers/ryu_main.py` registers them), never from globals at import time.
"""
import json
import os

from ryu import cfg
from ryu.base import app_manager
from ryu.controller import ofp_event
from ryu.controller.handler import CONFIG_DISPATCHER, DEAD_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from ryu.ofproto import ofproto_v1_3

from controllers.routing import plan_all
from topologies.description import Topology

PRIORITY_ROUTE = 100
PRIORITY_ECMP = 110


class SyncbedRouting(app_manager.RyuApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        conf = cfg.CONF
        with open(conf.syncbed_topology) as f:
            topo = Topology.from_dict(json.load(f))
        self.plans = plan_all(topo)
        self.names = {dpid: p.name for dpid, p in self.plans.items()}
        self.status_path = conf.syncbed_status
        self.ready: dict[int, int] = {}  # dpid -> number of rules installed
        self.errors: list[str] = []
        self._write_status()
        self.logger.info("syncbed: routes for %d switches of %s", len(self.plans), topo.name)

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def _switch_features_handler(self, ev):
        dp = ev.msg.datapath
        plan = self.plans.get(dp.id)
        if plan is None:
            self.errors.append(f"unknown switch dpid {dp.id:#x} connected")
            self._write_status()
            return
        ofp, parser = dp.ofproto, dp.ofproto_parser
        # start from a clean table: a reconnecting switch keeps nothing stale
        dp.send_msg(parser.OFPFlowMod(dp, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                      out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY))
        for rule in plan.rules:
            actions = [parser.OFPActionOutput(rule.port)]
            if rule.src_mac:
                self._add_flow(dp, PRIORITY_ECMP, parser.OFPMatch(eth_src=rule.src_mac, eth_dst=rule.dst_mac),
                               actions)
                continue
            for match in (parser.OFPMatch(eth_dst=rule.dst_mac),
                          parser.OFPMatch(eth_type=0x0806, arp_tpa=rule.dst_ip)):
                self._add_flow(dp, PRIORITY_ROUTE, match, actions)
        self._add_flow(dp, 0, parser.OFPMatch(), [])  # table-miss: drop (no flooding, no packet-in)
        dp.send_msg(parser.OFPBarrierRequest(dp))
        self.ready.pop(dp.id, None)

    @set_ev_cls(ofp_event.EventOFPBarrierReply, MAIN_DISPATCHER)
    def _barrier_reply_handler(self, ev):
        dpid = ev.msg.datapath.id
        if dpid in self.plans:
            self.ready[dpid] = len(self.plans[dpid].rules)
            self._write_status()

    @set_ev_cls(ofp_event.EventOFPErrorMsg, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def _error_msg_handler(self, ev):
        msg = ev.msg
        self.errors.append(f"switch {self.names.get(msg.datapath.id, msg.datapath.id)}: "
                           f"OpenFlow error type={msg.type} code={msg.code}")
        self._write_status()

    @set_ev_cls(ofp_event.EventOFPStateChange, DEAD_DISPATCHER)
    def _state_change_handler(self, ev):
        dp = ev.datapath
        if dp.id is not None and self.ready.pop(dp.id, None) is not None:
            self._write_status()

    @staticmethod
    def _add_flow(dp, priority, match, actions):
        ofp, parser = dp.ofproto, dp.ofproto_parser
        inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)] if actions else []
        dp.send_msg(parser.OFPFlowMod(dp, priority=priority, match=match, instructions=inst))

    def _write_status(self):
        status = {
            "expected": sorted(self.names.values()),
            "ready": sorted(self.names[d] for d in self.ready),
            "rules": {self.names[d]: n for d, n in self.ready.items()},
            "errors": self.errors,
        }
        tmp = self.status_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(status, f, indent=1)
        os.replace(tmp, self.status_path)
