"""docs/CLUSTER.md: the same experiment on one server and on two "servers" of this machine."""
from __future__ import annotations

from emulation.papers import common
from emulation.report.doctables.cells import reasons, runs_of, verdict
from emulation.results.columns import NA, fmt, table
from emulation.results.load import MB

CLUSTER_BENCH = ("cluster-two-servers/one-server", "cluster-two-servers/two-servers")
# every algorithm of `syncbed algos` split over the two "servers" (correctness and bytes; run
# beside other CPU work, so not timings): the bench's two-server runs, then these
CLUSTER_ALGOS = ("cluster-two-servers/two-servers", "cluster-two-servers/every-algorithm",
                 "cluster-two-servers/bcube", "cluster-two-servers/real-setting", "cluster-two-servers/ddp")


def _crossing_payload(run: dict, crossing: list) -> int:
    """Payload over the links between servers, both directions, each link counted at one end."""
    ports = run.get("link_bytes") or {}
    total = 0
    for a, b, _cls in crossing:
        end = ports.get(a) or ports.get(b) or {}
        total += end.get("tx", 0) + end.get("rx", 0)
    return total


def cluster_bench(data: dict) -> list[str]:
    """Per layout and algorithm: network ready time, sync, its ratio to the bound, the byte
    verdict, the crossing links' payload and what the underlay carried for it, the clocks."""
    rows = []
    for folder in CLUSTER_BENCH:
        summary = data[f"{folder}/summary.json"]
        net = summary["networks"][0]
        info = (summary.get("cluster") or [{}])[0]
        crossing = info.get("crossing_links") or []
        clocks = info.get("clock_offsets") or {}
        calib = (net.get("calibration") or {}).get("classes", {}).get("crossing")
        for r in runs_of(data, f"{folder}/summary.json"):
            sync = common.sync_s(r)
            pr = r.get("payload_ratio") or {}
            payload = _crossing_payload(r, crossing) if crossing else 0
            underlay = sum((r.get("underlay_bytes") or {}).values())
            cpu = (r.get("fidelity") or {}).get("servers_cpu") or []
            rows.append([
                f"`{folder.split('/')[-1]}`", str(len(info.get("servers") or [1])), f"{net['ready_seconds']:.1f}",
                common.label(r), fmt(sync, ".3f"), fmt(r.get("sync_over_bound"), ".2f"),
                f"{pr.get('min', 0):.3f}..{pr.get('max', 0):.3f}",
                f"{len(crossing)}" if crossing else "0",
                f"{payload / MB:.1f}" if crossing else NA,
                f"{underlay / MB:.1f} ({underlay / payload:.3f}x)" if crossing and payload else NA,
                fmt(calib.get("ratio"), ".3f") if calib else NA,
                " ".join(f"{1e3 * o['offset']:+.3f}+-{1e3 * o['error']:.3f} ms" for o in clocks.values()) or NA,
                " / ".join(fmt(100 * c["ovs_wait"], ".0f") + "%" for c in cpu if c.get("ovs_wait") is not None)
                or fmt((r.get("fidelity") or {}).get("ovs_cpu_wait_percent"), ".0f") + "%",
                verdict(r)])
    return table(["layout", "servers", "network ready s", "algorithm", "median sync s", "sync / bound",
                  "payload measured / expected (every port)", "links crossing", "their payload MB",
                  "underlay MB (x payload)", "crossing calibration", "clock of server 2",
                  "ovs-vswitchd waited (per server)", "faithful"], rows)


def cluster_algorithms(data: dict) -> list[str]:
    """Every algorithm run across the two "servers": its oracle, its bytes on every port and on
    the links between servers, and the fidelity verdict with its reasons."""
    rows, names = [], set()
    for folder in CLUSTER_ALGOS:
        summary = data[f"{folder}/summary.json"]
        info = (summary.get("cluster") or [{}])[0]
        crossing = info.get("crossing_links") or []
        for r in runs_of(data, f"{folder}/summary.json"):
            pr = r.get("payload_ratio") or {}
            names.add(r.get("algorithm"))
            rows.append([f"`{folder.split('/')[-1]}`", common.label(r), str(r.get("model")), str(r.get("workers")),
                         {True: "yes", False: "**NO**"}.get(r.get("correct"), NA),
                         f"{pr.get('min', 0):.3f}..{pr.get('max', 0):.3f}", str(len(pr.get("unexpected") or [])),
                         f"{_crossing_payload(r, crossing) / MB:.1f}" if crossing else NA,
                         verdict(r) + (f" ({reasons(r)})" if r.get("faithful") is not True else "")])
    return table(["folder", "algorithm", "model", "workers", "correct (oracle)",
                  "payload measured / expected (every port)", "unexpected ports", "payload over the links between "
                  "servers MB", "faithful"], rows) + ["", f"{len(names)} algorithms: {', '.join(sorted(names))}."]
