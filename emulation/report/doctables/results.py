"""docs/FIDELITY.md and docs/results/README.md: the bounds the verdicts read, the index of every results folder."""
from __future__ import annotations

from emulation.analysis import host_tcp_counters, uncounted_loss
from emulation.papers import common
from emulation.report.doctables.bml import BML_CUBIC, BML_FOLDERS, BML_REPEATS
from emulation.report.doctables.cells import cores, outside_tolerance, pct, runs_of, span, verdict
from emulation.report.doctables.forest import FOREST, FOREST_VARIANTS
from emulation.report.doctables.gtopk import GTOPK_MODELS
from emulation.report.doctables.mgwfbp import MGWFBP_ALL, MGWFBP_MODELS, MGWFBP_WFBP_DILATED
from emulation.report.doctables.projection import BW5_SCAN, CUBIC_FOLDERS, dsacked, host_tcp
from emulation.results.columns import NA, fmt, table
from emulation.results.load import MB, num


FIDELITY_FOLDERS = ("default",) + BML_FOLDERS

# Issue #21: every family at P = 32 on Fat-Tree k=6, in one setting (resnet20 on 5 Mbit/s links
# standing for 1 GbE, the gTop-k paper's compute): the families gtopk-charged ran, then the others
P32_FOLDERS = ("gtopk-charged/resnet20-p32", "p32-fattree6")
# WFBP, the one family not faithful there, rerun at the dilations the runner proposed and beyond
P32_DILATED = ("p32-fattree6-wfbp-dilated/bw2.5", "p32-fattree6-wfbp-dilated/bw1.25")
# Issue #21's switch levers in the emulation: the bulk PS run that was not faithful at MTU 9000
# (bml-bcube42-vs-ps-fattree, Fat-Tree k=4, synthetic 40 MB / 20), rerun at three MTUs on one
# day; and the 32-worker ring at 10 Mbit/s whose link once peaked above its rate (HTB burst)
MTU_LEVER = ("mtu-lever/mtu9000", "mtu-lever/mtu32000", "mtu-lever/mtu64000")
HTB_RING = ("htb-ring32-bw10",)
# Issue #21's scheduling lever: ovs-vswitchd under SCHED_RR (switch_priority: realtime) against
# the default, same day, alternating: gTop-k and Top-k at P = 32 with this CPU's selection (the
# runs of gtopk-scaling-fattree/p32), twice; forest scenario 5 with its default and smaller chunks
SWITCH_PRIORITY = tuple(f"switch-priority/{f}" for f in (
    "gtopk-p32-normal", "gtopk-p32-realtime", "gtopk-p32-normal-r2", "gtopk-p32-realtime-r2",
    "forest-s5-normal", "forest-s5-realtime"))

# The hosts' TCP congestion control (docs/FIDELITY.md #22), (BBR folder, CUBIC folder) per file:
# the hd file (hd, ring, gloo and PS on Fat-Tree k=4 and BCube(4,2)) with each, one after the other
# on 2026-11-29; then the default and the two BML files with CUBIC, beside their last runs with BBR
# (ps-recv-first/, the same code, that afternoon). BBR: this machine's default, which every
# folder before these ran with (their summaries record none)
TCP_CC_PAIRS = (("tcp-cc/hd-kernel-bbr", "tcp-cc/hd-cubic"),
                ("ps-recv-first/default-r3", "tcp-cc/default-cubic"),
                ("ps-recv-first/bml-bcube32-vs-ps-fattree-r4", "tcp-cc/bml-bcube32-vs-ps-fattree-cubic"),
                ("ps-recv-first/bml-bcube42-vs-ps-fattree-r3", "tcp-cc/bml-bcube42-vs-ps-fattree-cubic"))
# PS past 16 workers (docs/FIDELITY.md #23): the PS scan's k=6 file at 16, 24 and 32 workers with
# ovs-vswitchd's send buffer at 16 MiB (tcp-cc/, the morning of 2026-12-02; rto-min/, that
# afternoon, with the hosts' minimum RTO raised and at the kernel's as the control) and at 64 MiB
# (ovs-sndbuf/, after those; P = 40, 48 and 54 on the evening of 2026-12-02); (folder, send buffer MiB where the run did not record it)
PS_PAST_16 = (("tcp-cc/ps-scan-k6-p16-cubic", 16), ("tcp-cc/ps-scan-p24-cubic", 16), ("tcp-cc/ps-scan-p24-cubic-r2", 16),
              ("tcp-cc/ps-scan-p32-cubic", 16), ("tcp-cc/ps-scan-p24-bw5-cubic", 16),
              *((f"rto-min/{f}", 16) for f in ("ps-p24-rto3000", "ps-p24-kernel", "ps-p32-rto3000",
                                               "ps-k6-p16-rto3000", "ps-p24-bw5-rto5000", "ps-p32-kernel")),
              *((f"ovs-sndbuf/{f}", 64) for f in ("ps-k6-p16-64m", "ps-p20-64m", "ps-p24-64m", "ps-p24-64m-r2",
                                                  "ps-p28-64m", "ps-p32-64m", "ps-p32-64m-r2", "ps-p32-64m-r4",
                                                  "ps-p40-64m", "ps-p48-bw10-64m", "ps-p54-bw10-64m",
                                                  "ps-p54-bw5-64m", *(f"ps-p{p}-bw5-64m" for p in sorted(BW5_SCAN)))))
PS_PAST_16_RUN = "01-fattree-6-ps-synthetic"  # the PS run of experiments/ps_incast_fattree6.yaml
# every tcp-cc/ folder: those of the pairs, the BML files' second CUBIC runs (docs/papers/bml.md)
# and the rest of the CUBIC validation (docs/PROJECTION.md)
TCP_CC = tuple(dict.fromkeys([f for pair in TCP_CC_PAIRS for f in pair if f.startswith("tcp-cc/")]
                             + list(BML_CUBIC) + [f for f in CUBIC_FOLDERS if f.startswith("tcp-cc/")]))


def _payload(run) -> str:
    """The capture against the closed form over the run's ports: min..max of measured/expected."""
    pr = run.get("payload_ratio") or {}
    return f"{fmt(pr.get('min'), '.4f')}..{fmt(pr.get('max'), '.4f')}"


def _busy(run) -> str:
    link = (run.get("fidelity") or {}).get("busiest_link") or {}
    busy, rate = num(link.get("busy_mean_mbps")), num(link.get("configured_mbps"))
    return NA if busy is None or not rate else f"{busy / rate:.0%}"


def fidelity_bounds(data: dict) -> list[str]:
    """Sync time against the busiest-link bound in the default and BML experiments (MB-size gradients),
    with what the fidelity verdict looked at: OVS's CPU and the busiest link's rate while busy."""
    rows, by_algo = [], {}
    for folder in FIDELITY_FOLDERS:
        for r in runs_of(data, f"{folder}/summary.json"):
            if (num(r.get("gradient_bytes")) or 0) < 2 * MB:
                continue
            over = common.ratio(common.sync_s(r), r.get("bound_seconds"))
            if r.get("faithful") is True and over is not None:
                by_algo.setdefault(r.get("algorithm"), []).append(over)
            rows.append([f"`{folder}`", r.get("topology", NA), common.label(r), str(r.get("model")),
                         fmt(common.sync_s(r), ".3f"), fmt(r.get("bound_seconds"), ".3f"), fmt(over, ".2f"),
                         _payload(r),
                         pct(r.get("retransmitted_fraction")), cores(r), _busy(r),
                         fmt((r.get("fidelity") or {}).get("workers_starved_percent"), ".0f") + "%", verdict(r)])
    lines = table(["results folder", "topology", "algorithm", "model", "median sync s", "busiest-link bound s",
                   "sync / bound", "payload measured/expected", "retransmitted", "ovs-vswitchd cores",
                   "busiest link while busy (of its rate)", "workers' CPU demand spent waiting", "faithful"], rows)
    return lines + ["", "Sync / bound over the faithful runs above: " + "; ".join(
        f"{a} {span(v, '.2f', 'x')}" for a, v in sorted(by_algo.items())) + "."]


RESULTS_INDEX = {  # top folder -> its summaries (the experiments `syncbed run` wrote)
    "default": ("default",), "bml-bcube32-vs-ps-fattree": ("bml-bcube32-vs-ps-fattree",),
    "bml-bcube42-vs-ps-fattree": ("bml-bcube42-vs-ps-fattree",), "bml-repeats": BML_REPEATS,
    "train-lenet5-digits": ("train-lenet5-digits",), "train-lenet5-digits-r2": ("train-lenet5-digits-r2",),
    "dfs-resnet18-digits": ("dfs-resnet18-digits",), "dfs-resnet18-digits-held-out": ("dfs-resnet18-digits-held-out",),
    "dfs-resnet18-digits-codec-logged": ("dfs-resnet18-digits-codec-logged",),
    "dfs-resnet18-digits-concurrent-recv": ("dfs-resnet18-digits-concurrent-recv",),
    "dfs-resnet18-digits-concurrent-recv-again": ("dfs-resnet18-digits-concurrent-recv-again",),
    "dfs-resnet18-digits-recv-fixed": ("dfs-resnet18-digits-recv-fixed",),
    "dfs-resnet18-digits-fit-half": ("dfs-resnet18-digits-fit-half",),
    "dfs-resnet18-digits-same-day": ("dfs-resnet18-digits-same-day",),
    "dfs-resnet18-digits-receives-first": ("dfs-resnet18-digits-receives-first",),
    "dfs-resnet18-digits-paper-table": ("dfs-resnet18-digits-paper-table",),
    "training-path": ("training-path/code-2026-11-29", "training-path/code-2026-11-28"),
    "blocksparse-order": ("blocksparse-order/sends-first", "blocksparse-order/receives-first"),
    "hd-default": ("hd-default",), "hd-default-two-level": ("hd-default-two-level",),
    "ddp-resnet20-digits": ("ddp-resnet20-digits",),
    "hash-ecmp": ("hash-ecmp/bml-bcube32-vs-ps-fattree", "hash-ecmp/bml-bcube42-vs-ps-fattree"),
    **{f: (f,) for f in MGWFBP_ALL if "/" not in f},
    "mgwfbp-fattree4": tuple(f"mgwfbp-fattree4/{m}" for m in MGWFBP_MODELS),
    "mgwfbp-wfbp-dilated": tuple(MGWFBP_WFBP_DILATED),
    "gtopk-scaling": tuple(f"gtopk-scaling/{m}/p{p}" for m in GTOPK_MODELS for p in (4, 8, 16)),
    "gtopk-scaling-fattree": tuple(f"gtopk-scaling-fattree/p{p}" for p in (4, 8, 16, 32)),
    "gtopk-scaling-fattree-r2": (*(f"gtopk-scaling-fattree-r2/p{p}" for p in (8, 16)), "gtopk-scaling-fattree-r2/same-hour-p8",
                                 "gtopk-scaling-fattree-r2/code-2026-11-24-p8"),
    "gtopk-charged": ("gtopk-charged/vgg16-p32-bw20", "gtopk-charged/vgg16-p32-bw5",
                      *(f"gtopk-charged/{m}-p32" for m in GTOPK_MODELS)),
    "cluster-two-servers": ("cluster-two-servers/one-server", "cluster-two-servers/two-servers",
                            "cluster-two-servers/every-algorithm", "cluster-two-servers/bcube",
                            "cluster-two-servers/real-setting", "cluster-two-servers/ddp"),
    "forest-scenarios": tuple(f"forest-scenarios/{f}" for f in (*FOREST, *FOREST_VARIANTS)),
    "p32-fattree6": ("p32-fattree6",),
    "p32-fattree6-wfbp-dilated": P32_DILATED,
    "mtu-lever": MTU_LEVER,
    "htb-ring32-bw10": HTB_RING,
    "ps-fan-in-bw": ("ps-fan-in-bw/p4-bw20", "ps-fan-in-bw/p4-bw100", "ps-fan-in-bw/one-switch-p4",
                     "ps-fan-in-bw/one-switch-bml-p4", "ps-fan-in-bw/one-switch-recv-first-p4"),
    "ps-recv-first": (*(f"ps-recv-first/{f}{r}" for f in ("default", "bml-bcube32-vs-ps-fattree",
                                                          "bml-bcube42-vs-ps-fattree") for r in ("", "-r2")),
                      "ps-recv-first/default-r3", "ps-recv-first/bml-bcube32-vs-ps-fattree-r4",
                      "ps-recv-first/bml-bcube42-vs-ps-fattree-r3"),
    "switch-priority": SWITCH_PRIORITY, "tcp-cc": TCP_CC,
    "rto-min": (*(f for f, _ in PS_PAST_16 if f.startswith("rto-min/")), "rto-min/forest-s3-half-speed-rto10000"),
    "ovs-sndbuf": (*(f for f, _ in PS_PAST_16 if f.startswith("ovs-sndbuf/")), "ovs-sndbuf/forest-s3-oversubscribed-64m",
                   "ovs-sndbuf/forest-s3-half-speed-64m", "ovs-sndbuf/forest-s3-quarter-speed-64m",
                   "ovs-sndbuf/forest-s3-half-speed-64m-r2", "ovs-sndbuf/forest-s3-half-speed-2to1-64m",
                   "ovs-sndbuf/forest-s3-half-speed-8to1-64m", "ovs-sndbuf/forest-s3-half-speed-64m-r4",
                   "ovs-sndbuf/ps-k6-p24-core4to1-64m", "ovs-sndbuf/forest-s3-half-speed-p8-64m",
                   "ovs-sndbuf/ps-k6-p27-core4to1-ordered-64m", "ovs-sndbuf/ps-k6-p27-core4to1-ordered-bw5-64m",
                   "ovs-sndbuf/forest-s3-half-speed-p9-64m", "ovs-sndbuf/forest-s3-half-speed-p10-64m"),
    "small-messages": ("small-messages/bcube32", "small-messages/bcube32-check", "small-messages/bcube32-check-r2",
                       *(f"small-messages/syncs50-{k}-r{i}" for k in ("16k", "64k") for i in (1, 2))),
}


def results_index(data: dict) -> list[str]:
    """One row per folder of emulated runs: when, how long, and every run's verdicts."""
    rows = []
    for top, folders in sorted(RESULTS_INDEX.items()):
        sums = [data[f"{f}/summary.json"] for f in folders]
        runs = [r for s in sums for r in s.get("runs", [])]
        started = sorted(s.get("started") or "" for s in sums)
        finished = sorted(s.get("finished") or "" for s in sums)
        walls = [num((s.get("throughput") or {}).get("wall_seconds")) for s in sums]
        overhead = [num((s.get("throughput") or {}).get("overhead_fraction")) for s in sums]
        when = started[0].replace("T", " ")[:16]
        if len(sums) > 1:
            when += " - " + finished[-1].replace("T", " ")[:16]
        rows.append([f"`{top}/`", str(len(sums)), when,
                     NA if None in walls else f"{sum(walls) / 60:.1f}",
                     NA if None in overhead or len(overhead) > 1 else pct(overhead[0], 0),
                     str(len(runs)), str(sum(1 for r in runs if r.get("faithful") is True)),
                     str(sum(1 for r in runs if r.get("faithful") is False)),
                     str(sum(1 for r in runs if r.get("faithful") not in (True, False))),
                     str(len(outside_tolerance(runs)))])
    return table(["folder", "experiments", "started (- last finished)", "wall min", "wall not in iterations", "runs",
                  "faithful", "not faithful", "unverified", "payload outside tolerance on some port"], rows)


OVS_FORWARDING = "ovs-forwarding/forwarding.json"


def ovs_forwarding(data: dict) -> list[str]:
    """What one userspace ovs-vswitchd forwards per CPU second, per switch lever
    (scripts/ovs_forwarding_bench.py), each against its baseline: the same traffic through OVS's
    defaults with the ports the emulation uses, at MTU 9000 (what the emulation ran with before
    issue #21); a row with other port types, against the defaults at its own MTU."""
    d = data[OVS_FORWARDING]
    cases = d["cases"]

    def plain(c):
        return not c["other_config"] and c.get("port_type", "system") == "system" and "error" not in c

    base = {(c["kind"], c["mtu"]): c for c in cases if plain(c)}

    def baseline(c):
        key = (c["kind"], c["mtu"] if c.get("port_type", "system") != "system" else 9000)
        if key not in base:
            raise ValueError(f"ovs-forwarding: no baseline for {c['case']} ({key[0]}, MTU {key[1]}, OVS's defaults)")
        return base[key]

    rows, ratios = [], {"tcp": [], "udp": []}
    for c in cases:
        keys = ", ".join(f"{k}={v}" for k, v in sorted(c["other_config"].items())) or "(defaults)"
        if c.get("port_type", "system") != "system":
            keys += f"; ports type={c['port_type']}"
        traffic = "bulk TCP" if c["kind"] == "tcp" else f"UDP, {d['udp_bytes']} B datagrams"
        if "error" in c:
            rows.append([c["case"], traffic, str(c["mtu"]), f"`{keys}`"] + [NA] * 5 + [f"not measured: {c['error']}"])
            continue
        b = baseline(c)
        by, pk = (c["gbit_per_ovs_core_x_bridges"] / b["gbit_per_ovs_core_x_bridges"],
                  c["kpackets_per_ovs_core"] / b["kpackets_per_ovs_core"])
        ratios[c["kind"]].append((by if c["kind"] == "tcp" else pk, c))
        rows.append([c["case"], traffic, str(c["mtu"]), f"`{keys}`", fmt(c["gbit_s"], ".2f"), fmt(c["ovs_cores"], ".2f"),
                     fmt(c["gbit_per_ovs_core_x_bridges"], ".2f"), fmt(by, ".2f") + "x",
                     fmt(c["kpackets_per_ovs_core"], ".0f"), fmt(pk, ".2f") + "x"])
    lines = table(["case", "traffic", "MTU", "settings", "Gbit/s delivered", "ovs-vswitchd cores",
                   "Gbit/s x bridges per ovs core", "vs baseline", "kpackets forwarded per ovs core-second",
                   "vs baseline"], rows)
    summary = []
    if ratios["tcp"]:
        r, c = max(ratios["tcp"], key=lambda rc: rc[0])
        summary.append(f"Bulk bytes per ovs-vswitchd core: at most {r:.2f}x the baseline ({c['case']}, MTU {c['mtu']}).")
    if ratios["udp"]:
        v = [r for r, _ in ratios["udp"]]
        summary.append(f"Small datagrams per core-second: {min(v):.2f}-{max(v):.2f}x the baseline over every "
                       "setting measured.")
    return lines + ["", " ".join(summary), "", f"One flow through a chain of {d['switches']} userspace bridges, "
                    f"unshaped; median of {d['reps']} measurements of {d['seconds']:g} s each; {d['host']['ovs']}, "
                    f"kernel {d['host']['kernel']}, {d['host']['cpus']} CPUs, {d['date'][:10]}. "
                    f"Command: `{d['command']}`."]


def p32_families(data: dict) -> list[str]:
    """One row per run at P = 32: its sync against its bound, its bytes, what the verdict measured
    (ovs-vswitchd's cores and wait, the workers' wait), the verdict and, where it failed for CPU,
    the runner's proposal."""
    rows, faithful, failed = [], [], []
    for folder in P32_FOLDERS + P32_DILATED:
        for r in runs_of(data, f"{folder}/summary.json"):
            f = r.get("fidelity") or {}
            if folder in P32_FOLDERS:
                (faithful if r.get("faithful") is True else failed).append(common.label(r))
            prop = (f.get("proposal") or {}).get("dilation_x")
            rows.append([f"`{folder}`", common.label(r), str(r.get("workers")), fmt(r.get("link_mbps"), "g"),
                         fmt(r.get("time_dilation"), "g"), fmt(common.sync_s(r), ".3f"),
                         fmt(r.get("sync_over_bound"), ".2f"),
                         _payload(r), cores(r),
                         fmt(f.get("ovs_cpu_wait_percent"), ".0f") + "%",
                         fmt(f.get("ovs_cpu_wait_forwarding_percent"), ".0f") + "%",
                         fmt(f.get("workers_cpu_wait_percent"), ".0f") + "%", _busy(r), verdict(r),
                         NA if prop is None else f"{prop:.1f}x"])
    lines = table(["results folder", "algorithm", "P", "link Mbit/s", "time dilation", "median sync s", "sync / bound",
                   "payload measured/expected",
                   "ovs-vswitchd cores", "ovs-vswitchd waited", "... while traffic flowed (not judged)",
                   "workers waited", "busiest link while busy",
                   "faithful", "proposed dilation"], rows)
    dilated = [r for f in P32_DILATED for r in runs_of(data, f"{f}/summary.json")]
    first = min((r for r in dilated if r.get("faithful") is True), key=lambda r: r.get("time_dilation") or 0,
                default=None)
    return lines + ["", f"Faithful at P = 32 in the common setting: {len(faithful)} of {len(faithful) + len(failed)} "
                    "runs" + (f"; not: {', '.join(failed)}." if failed else ".")
                    + ("" if not dilated else " WFBP, rerun slower: " + (
                        f"faithful from a time dilation of {first.get('time_dilation'):g} "
                        f"({first.get('link_mbps'):g} Mbit/s links)." if first else "not faithful at any dilation tried."))]


def _mtu(data: dict, folder: str) -> str:
    return str((data[f"{folder}/config.yaml"] or {}).get("mtu", 9000))


def mtu_lever(data: dict) -> list[str]:
    """One row per run: its MTU, sync, what the verdict measured of the switch, and the verdict."""
    rows = []
    for folder in MTU_LEVER + HTB_RING:
        for r in runs_of(data, f"{folder}/summary.json"):
            f = r.get("fidelity") or {}
            b = f.get("busiest_link") or {}
            rows.append([f"`{folder}`", common.label(r), r.get("topology", NA), str(r.get("workers")),
                         fmt(r.get("link_mbps"), "g"), _mtu(data, folder), fmt(common.sync_s(r), ".3f"),
                         fmt(r.get("sync_over_bound"), ".2f"), _payload(r),
                         cores(r), fmt(f.get("ovs_cpu_wait_percent"), ".0f") + "%", _busy(r),
                         fmt(b.get("peak_ratio"), ".3f") + "x", verdict(r)])
    return table(["results folder", "algorithm", "topology", "P", "link Mbit/s", "MTU", "median sync s", "sync / bound",
                  "payload measured/expected", "ovs-vswitchd cores", "ovs-vswitchd waited", "busiest link while busy",
                  "busiest link's peak (of its rate)", "faithful"], rows)


def _policy(data: dict, folder: str) -> str:
    return str((data[f"{folder}/config.yaml"] or {}).get("switch_priority", "normal"))


def switch_priority(data: dict) -> list[str]:
    """One row per run: the switch's scheduling, sync, what the verdict measured of the switch and
    the workers (their selection's seconds for the sparse runs), the verdict and its reasons."""
    rows, by = [], {}
    for folder in SWITCH_PRIORITY:
        policy = _policy(data, folder)
        for r in runs_of(data, f"{folder}/summary.json"):
            f = r.get("fidelity") or {}
            by.setdefault((r.get("algorithm"), policy), []).append(r.get("faithful") is True)
            why = "; ".join(f.get("reasons") or [])
            rows.append([f"`{folder}`", policy, common.label(r), r.get("topology", NA), str(r.get("workers")),
                         fmt(common.sync_s(r), ".3f"), fmt(r.get("sparsify_seconds"), ".2f"), cores(r),
                         fmt(f.get("ovs_cpu_wait_percent"), ".0f") + "%",
                         fmt(f.get("workers_cpu_wait_percent"), ".0f") + "%", _busy(r), verdict(r), why or NA])
    lines = table(["results folder", "ovs-vswitchd scheduling", "algorithm", "topology", "P", "median sync s",
                   "selection s (mean rank)", "ovs-vswitchd cores", "ovs-vswitchd waited", "workers waited",
                   "busiest link while busy", "faithful", "why not"], rows)
    said = [f"{algo} {policy}: {sum(v)} of {len(v)} runs" for (algo, policy), v in sorted(by.items())]
    return lines + ["", "Faithful, by algorithm and scheduling: " + "; ".join(said) + "."]


def _send_buffer_mib(run: dict, stated: int) -> str:
    """ovs-vswitchd's send buffer the run recorded (runs from 2026-12-02 15:20 on), else the one
    PS_PAST_16 states for it; a recorded one that disagrees with the statement is an error."""
    rec = num((run.get("machine") or {}).get("ovs_send_buffer_bytes"))
    if rec is not None and round(rec / MB) != stated:
        raise ValueError(f"a run recorded a send buffer of {rec / MB:g} MiB, PS_PAST_16 states {stated}")
    return str(stated)


def ps_past_16(data: dict) -> list[str]:
    """Per folder of PS_PAST_16: the send buffer and the hosts' minimum RTO, PS's syncs (median,
    fastest, slowest) against the flow model (the run's `simulated_seconds`, SimGrid with no round
    latency and no fan-in charge), the ring of the same run the same way, the hosts' TCP counters
    over the run (capture.json, warm-up included) and the verdict."""
    rows = []
    for folder, mib in PS_PAST_16:
        runs = runs_of(data, f"{folder}/summary.json")
        ps = next(r for r in runs if r.get("algorithm") == "ps")
        ring = next((r for r in runs if r.get("algorithm") == "ring"), {})
        capture = data[f"{folder}/{PS_PAST_16_RUN}/capture.json"]
        tcp = host_tcp_counters(capture)
        syncs = [x for x in (num(v) for v in ps.get("sync_seconds") or []) if x is not None]
        sim, med = num(ps.get("simulated_seconds")), common.sync_s(ps)
        lost = uncounted_loss(capture)  # what the verdict checks, also for runs analysed before it did
        rows.append([f"`{folder}`", str(ps.get("workers")), fmt(ps.get("link_mbps"), "g"), _send_buffer_mib(ps, mib),
                     str(ps.get("tcp_rto_min_ms") or "200 (the kernel's)"), fmt(med, ".2f"),
                     fmt(min(syncs) if syncs else None, ".2f"), fmt(max(syncs) if syncs else None, ".2f"),
                     fmt(sim, ".2f"), fmt(common.ratio(sim, med), ".2f"),
                     fmt(common.ratio(num(ring.get("simulated_seconds")), common.sync_s(ring)), ".2f"),
                     *(fmt(num(tcp.get(k)), ".0f") for k in ("TCPTimeouts", "TCPFastRetrans")), dsacked(tcp),
                     NA if lost is None else f"{lost:.2%}", verdict(ps)])
    return table(["results folder", "P", "link Mbit/s", "ovs-vswitchd's send buffer MiB", "hosts' minimum RTO ms",
                  "PS median sync s", "PS fastest sync s", "PS slowest sync s", "flow model s",
                  "flow model / median", "ring: flow model / median", "TCP timeouts in the run (all hosts)",
                  "fast retransmits in the run", "retransmissions D-SACKed (spurious)",
                  "fast retransmits per segment, no drop counted", "faithful"], rows) + [
        "", "Fat-Tree k=6 with two-level routing, PS sharded over every worker, 2 MiB, 5 syncs and a warm-up per "
            "run (`experiments/ps_incast_fattree6.yaml`); the flow model: each run's `simulated_seconds` (SimGrid, "
            "no round latency, no fan-in charge); the counters: every host's, over the whole run, warm-up included."]


def tcp_cc(data: dict) -> list[str]:
    """Per file, topology, algorithm and model (gradients of 2 MiB or more): the median sync with
    BBR and with CUBIC beside the flow model's time (which knows no TCP), retransmissions, verdicts."""
    rows = []
    for bbr_folder, cubic_folder in TCP_CC_PAIRS:
        by = {}
        for cc, folder in (("bbr", bbr_folder), ("cubic", cubic_folder)):
            for r in runs_of(data, f"{folder}/summary.json"):
                if host_tcp(r) != cc:
                    raise ValueError(f"{folder}: a run with {r.get('tcp_congestion_control')}, not {cc}")
                if (num(r.get("gradient_bytes")) or 0) >= 2 * MB:
                    by.setdefault((r.get("topology"), common.label(r), str(r.get("model"))), {})[cc] = r
        for (topo, algo, model), runs in by.items():
            sim = next((num(r.get("simulated_seconds")) for r in runs.values() if num(r.get("simulated_seconds"))),
                       None)
            syncs = {cc: common.sync_s(runs[cc]) if cc in runs else None for cc in ("bbr", "cubic")}
            rows.append([f"`{bbr_folder}` / `{cubic_folder}`", str(topo), algo, model, fmt(sim, ".3f")]
                        + [fmt(syncs[cc], ".3f") for cc in ("bbr", "cubic")]
                        + [fmt(common.ratio(sim, syncs[cc]), ".2f") for cc in ("bbr", "cubic")]
                        + [pct((runs.get(cc) or {}).get("retransmitted_fraction")) for cc in ("bbr", "cubic")]
                        + [verdict(runs[cc]) if cc in runs else NA for cc in ("bbr", "cubic")])
    return table(["folders (BBR / CUBIC)", "topology", "algorithm", "model", "flow model s (SimGrid, L = 0)",
                  "median sync s, BBR", "median sync s, CUBIC", "model/measured, BBR", "model/measured, CUBIC",
                  "retransmitted, BBR", "retransmitted, CUBIC", "faithful, BBR", "faithful, CUBIC"], rows) + [
        "", "Gradients of 2 MiB or more (the smaller ones' syncs are start-up, not bandwidth). BBR: each folder's "
            "hosts ran this machine's default, which summaries before the pinning do not record."]
