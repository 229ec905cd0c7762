"""Link calibration before a run: iperf3 across each link class (mininet-tests style).

`calibration_pairs` (pure) picks, per link class, the closest host pair whose path
crosses that class; `calibrate` runs one short iperf3 per pair and records measured /
configured bottleneck bandwidth. Mininet's own tests accept shaping within 20%.
"""
from __future__ import annotations

import json
import time

TOLERANCE = (0.8, 1.05)


def path_links(topo, src: str, dst: str) -> list:
    """Links of the route the controller installed from src's first NIC to dst's first NIC
    (under ECMP, the path the measured traffic really takes)."""
    return [topo.link_of(tx) for tx, _ in topo.route(src, topo.host_nics(dst)[0].ip)]


def calibration_pairs(topo, crossing=()) -> dict:
    """link class -> (src host, dst host, configured bottleneck Mbit/s, classes crossed); with
    `crossing` (the links between servers of a cluster, issue #22) also "crossing": the
    closest pair whose path takes one of them."""
    hosts = topo.hosts()
    classes = topo.link_classes()
    found: dict = {}
    src = hosts[0]
    candidates = []
    for dst in hosts[1:]:
        links = path_links(topo, src, dst)
        candidates.append((len(links), dst, links))
    candidates.sort(key=lambda c: c[0])
    for cls in classes:
        for _, dst, links in candidates:
            if any(link.cls == cls for link in links):
                found[cls] = (src, dst, min(link.bw for link in links), sorted({link.cls for link in links}))
                break
    tunnels = {(link.a, link.b) for link in crossing}
    for _, dst, links in candidates:
        if any((link.a, link.b) in tunnels for link in links):
            found["crossing"] = (src, dst, min(link.bw for link in links), sorted({link.cls for link in links}))
            break
    return found


def calibrate(net, topo, seconds: float = 2.0, log=print, crossing=()) -> dict:
    result = {"tool": "iperf3", "seconds": seconds, "tolerance": TOLERANCE, "classes": {}}
    for cls, (src, dst, bottleneck, crossed) in calibration_pairs(topo, crossing).items():
        server, client = net.host(dst), net.host(src)
        ip = topo.host_nics(dst)[0].ip
        srv = server.popen(["iperf3", "-s", "-1", "-p", "5201"])
        time.sleep(0.3)
        out = client.cmd(f"iperf3 -c {ip} -p 5201 -t {seconds} -O 0.5 -J")
        try:
            srv.wait(5)
        except Exception:
            srv.kill()
        try:
            mbps = json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e6
        except (ValueError, KeyError):
            mbps = 0.0
        ratio = mbps / bottleneck
        result["classes"][cls] = {"src": src, "dst": dst, "crosses": crossed, "configured_mbps": bottleneck,
                                  "measured_mbps": round(mbps, 3), "ratio": round(ratio, 4),
                                  "ok": TOLERANCE[0] <= ratio <= TOLERANCE[1]}
        log(f"  calibration {cls:>9}: {mbps:7.2f} / {bottleneck:g} Mbit/s ({src} -> {dst})")
    return result
