"""`syncbed`: run experiments, describe topologies, re-analyse results, clean up.

    syncbed run [EXPERIMENT.yaml] [--topo SPEC] [--algo A[,B]] [--workers N] [--model M]
                [--bw MBPS] [--iters N] [--out DIR] ...
    syncbed topo SPEC         servers, switches, links, NICs per server
    syncbed algos             the registered sync algorithms
    syncbed analyze DIR       recompute summary.json and report.md from a results folder
    syncbed clean             undo whatever a crashed run left (processes, bridges, links)

Exit codes: 0 ok, 1 the experiment failed, 2 bad input or environment (nothing was
started), 130 interrupted.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


def _environment_problem() -> str | None:
    if os.geteuid() != 0:
        return "syncbed run must run as root (Mininet creates namespaces and links); try sudo"
    if not shutil.which("ovs-vsctl") or not shutil.which("mn"):
        return "Open vSwitch or Mininet is missing; install them with: make setup"
    try:
        ok = subprocess.run(["ovs-vsctl", "--timeout=5", "show"], capture_output=True).returncode == 0
    except subprocess.TimeoutExpired:
        ok = False
    if not ok:
        return "Open vSwitch is not running; start it with: make setup"
    if not shutil.which("tcpdump") or not shutil.which("iperf3"):
        return "tcpdump or iperf3 is missing; install them with: make setup"
    from emulation.network import MIN_OVS_SNDBUF, ovs_send_buffer

    buf = ovs_send_buffer()
    if buf is not None and buf < MIN_OVS_SNDBUF:
        return (f"ovs-vswitchd's send buffer is {buf >> 10} KiB (needs {MIN_OVS_SNDBUF >> 20} MiB or it drops "
                "packets under incast); fix it with: make setup")
    return None


def cmd_run(args) -> int:
    from emulation import config

    try:
        cfg = config.load(args.experiment, name=args.name, topologies=args.topo, algorithms=args.algo,
                          workers=args.workers, servers=args.servers, model=args.model, bw=args.bw,
                          iters=args.iters, warmup=args.warmup, out=args.out, timeout=args.timeout,
                          seed=args.seed, placement=args.placement, ecmp=args.ecmp,
                          calibrate=False if args.no_calibrate else None,
                          capture=False if args.no_capture else None,
                          crash=_crash(args.inject_crash), link_down=_link_down(args.link_down))
        runs = config.validate(cfg)
    except ValueError as e:
        print(f"syncbed: {e}", file=sys.stderr)
        return 2
    problem = _environment_problem()
    if problem:
        print(f"syncbed: {problem}", file=sys.stderr)
        return 2
    from emulation.runner import run_experiment
    from emulation.state import LockedError

    print(f"syncbed: {len(runs)} runs: " + "; ".join(r.label for r in runs), flush=True)
    try:
        out = run_experiment(cfg, runs, log=lambda m: print(m, flush=True))
    except LockedError as e:
        print(f"syncbed: {e}", file=sys.stderr)
        return 2
    summary = json.loads((out / "summary.json").read_text())
    print(f"results: {out}")
    if summary["status"] != "ok":
        print(f"syncbed: experiment FAILED: {summary['error']}", file=sys.stderr)
        return 130 if "interrupted" in (summary["error"] or "") else 1
    return 0


def _crash(spec):
    if not spec:
        return None
    try:
        r, i = (int(x) for x in spec.split(":"))
    except ValueError:
        # ValueError, not SystemExit: cmd_run reports it as bad input (exit 2, one line)
        raise ValueError(f"--inject-crash takes RANK:ITER, e.g. 3:1, got {spec!r}") from None
    return {"rank": r, "iter": i}


def _link_down(spec):
    if not spec:
        return None
    intf, _, after = spec.partition("@")
    try:
        return {"link": intf, "after_s": float(after or 0)}
    except ValueError:
        raise ValueError(f"--link-down takes HOST_NIC@SECONDS, e.g. h00-eth1@2, got {spec!r}") from None


def cmd_topo(args) -> int:
    from topologies.spec import build

    try:
        t = build(args.spec, bw=args.bw)
    except ValueError as e:
        print(f"syncbed: {e}", file=sys.stderr)
        return 2
    s = t.summary()
    print(f"{s['topology']}: {s['servers']} servers, {s['switches']} switches, {s['links']} links, "
          f"{s['nics_per_server']} NICs per server")
    if t.notes:
        print(f"  {t.notes}")
    print("  link classes: " + ", ".join(f"{c} {bw:g} Mbit/s" for c, bw in s["link_classes"].items()))
    if args.verbose:
        for h in t.hosts():
            print(f"  {h}: " + ", ".join(f"{n.name} {n.ip}" for n in t.host_nics(h)))
        for sw in t.switches():
            print(f"  {sw} dpid {t.nodes[sw].dpid:#x}: ports "
                  + ", ".join(f"{i.port}->{t.peer(i.name).node}" for i in t.node_intfs(sw)))
    return 0


def cmd_algos(args) -> int:
    from workloads.algorithms.base import registry

    for name, a in sorted(registry().items()):
        on = f" (on {', '.join(a.topologies)})" if a.topologies else ""
        print(f"{name:10} {a.summary}{on}")
    return 0


def cmd_analyze(args) -> int:
    from emulation import analysis
    from emulation.report import write_report

    folder = Path(args.dir)
    summ_path = folder / "summary.json"
    if not summ_path.exists():
        print(f"syncbed: {folder} has no summary.json; give a results folder made by syncbed run",
              file=sys.stderr)
        return 2
    summary = json.loads(summ_path.read_text())
    runs = []
    for r in summary.get("runs", []):
        print(f"analysing {r['dir']}", flush=True)
        runs.append(analysis.analyze_run(folder / r["dir"]))
    summary["runs"] = runs
    summ_path.write_text(json.dumps(summary, indent=1, default=str))
    print(f"report: {write_report(folder)}")
    return 0


def cmd_clean(args) -> int:
    from emulation.state import Lock, LockedError, cleanup

    try:
        with Lock("syncbed clean"):
            done = cleanup(verbose=True)
    except LockedError as e:
        print(f"syncbed: {e}", file=sys.stderr)
        return 2
    if not done:
        print("syncbed clean: nothing to clean")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="syncbed", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run an experiment (YAML file and/or options)")
    r.add_argument("experiment", nargs="?", help="experiment YAML (experiments/*.yaml)")
    r.add_argument("--name")
    r.add_argument("--topo", action="append", help="bcube,n=4,k=2 | fattree,k=4 (repeatable)")
    r.add_argument("--algo", help="comma-separated algorithm names (see syncbed algos)")
    r.add_argument("--workers", type=int)
    r.add_argument("--servers", type=int, help="dedicated parameter servers (ps)")
    r.add_argument("--model", help="synthetic,mb=4 | lenet5 | vgg19 | resnet18")
    r.add_argument("--bw", type=float, help="link bandwidth in Mbit/s (0 < bw <= 1000)")
    r.add_argument("--iters", type=int)
    r.add_argument("--warmup", type=int)
    r.add_argument("--seed", type=int)
    r.add_argument("--timeout", type=float, help="seconds per run")
    r.add_argument("--placement", help="ordered | spread")
    r.add_argument("--ecmp", help="hash (per-pair, collisions like real ECMP) | two-level (Al-Fares, balanced)")
    r.add_argument("--out", help="results folder (default results/)")
    r.add_argument("--no-calibrate", action="store_true")
    r.add_argument("--no-capture", action="store_true")
    r.add_argument("--inject-crash", metavar="RANK:ITER", help="fault injection: that rank exits at that iteration")
    r.add_argument("--link-down", metavar="NIC@SECONDS",
                   help="fault injection: take the link of that host NIC down that many seconds into each run")
    r.set_defaults(fn=cmd_run)
    t = sub.add_parser("topo", help="describe a topology")
    t.add_argument("spec")
    t.add_argument("--bw", type=float, default=20.0)
    t.add_argument("-v", "--verbose", action="store_true", help="list every NIC and switch port")
    t.set_defaults(fn=cmd_topo)
    a = sub.add_parser("algos", help="list sync algorithms")
    a.set_defaults(fn=cmd_algos)
    z = sub.add_parser("analyze", help="re-analyse a results folder")
    z.add_argument("dir")
    z.set_defaults(fn=cmd_analyze)
    c = sub.add_parser("clean", help="remove what a crashed run left behind")
    c.set_defaults(fn=cmd_clean)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        print("syncbed: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
