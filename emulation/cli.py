"""`syncbed`: every user action, one subcommand each (the README's table lists them).

    syncbed run [EXPERIMENT.yaml] [--topo SPEC] [--algo A[,B]]... [--workers N] [--model M]
                [--bw MBPS] [--iters N] [--out DIR] ...      an experiment in the emulator (root)
    syncbed topo SPEC         servers, switches, links, NICs per server
    syncbed algos             the registered sync algorithms
    syncbed analyze DIR       recompute summary.json and report.md from a results folder
    syncbed keep DIR DEST     a copy without pcaps that analyze still redoes
    syncbed docs [--check]    regenerate the measured tables of docs/ from docs/results
    syncbed project [EXPERIMENT.yaml] [--topo SPEC ...] [--algo A[,B]]... [--measured DIR] ...
                              the same plans in SimGrid, at any size (emulation/simulator/)
    syncbed train EXPERIMENT.yaml [--resume DIR]
                              real training on localhost, Gloo on lo (emulation/trainer.py)
    syncbed report DIR        rewrite report.md and plots/ from a results folder's files
    syncbed scaling DIR... --out DIR    one table across worker counts (emulation/report/scaling.py)
    syncbed predict EXPERIMENT.yaml... [MODEL ...]    MG-WFBP's alpha-beta predictions
    syncbed profile NAME... [--batch B]    networks' backward pass on this CPU -> workloads/profiles/
    syncbed pcap FILE         packets and payload per interface and direction of a capture
    syncbed bench pcap        the capture reader's speed
    syncbed clean             undo whatever a crashed run left (processes, bridges, links)

`build_parser` holds every option; each `cmd_*` checks its input (one line and exit 2 when
bad, before anything starts) and calls the module that does the work.

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
import tempfile
from pathlib import Path

from emulation.cliargs import OneLineParser


def _root_problem() -> str | None:
    if os.geteuid() != 0:
        return "syncbed run must run as root (Mininet creates namespaces and links); try sudo"
    return None


def _out_problem(out: str) -> str | None:
    """Why the results folder `out` cannot be made or written, or None. Creates nothing:
    it probes the nearest folder that exists with a temporary folder of its own."""
    path = Path(out).absolute()
    base = path
    try:
        while not base.exists() and base != base.parent:
            base = base.parent
        if not base.is_dir():
            return f"--out {out}: {base} is not a folder; give a folder syncbed can create or write to"
        os.rmdir(tempfile.mkdtemp(prefix=".syncbed-probe-", dir=base))
    except OSError as e:
        return (f"--out {out}: cannot be created or written: making a folder in {base} fails "
                f"({e.strerror or e}); give a folder syncbed can create or write to")
    return None


def _environment_problem() -> str | None:
    if _root_problem():
        return _root_problem()
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


def _tcp_cc_problem(name: str) -> str | None:
    """The emulated hosts cannot use congestion control `name` on this machine (network.tcp_cc_problem)."""
    from emulation.network import machine_tcp_cc, tcp_cc_problem

    cc = machine_tcp_cc()
    if "available" not in cc:  # not Linux's /proc: nothing to check against
        return None
    return tcp_cc_problem(name, cc["available"], cc.get("allowed", ""))


def _tcp_rto_min_problem(ms: int | None) -> str | None:
    """This kernel cannot set the hosts' minimum RTO (network.tcp_rto_min_problem; imported only
    when asked, since emulation.network imports Mininet, which the earlier refusals do not need)."""
    from emulation.network import tcp_rto_min_problem

    return tcp_rto_min_problem(ms)


def cmd_run(args) -> int:
    from emulation import config
    from topologies.spec import emulation_problem

    try:
        cfg = config.load(args.experiment, name=args.name, topologies=args.topo, algorithms=args.algo,
                          workers=args.workers, servers=args.servers, model=args.model, bw=args.bw,
                          iters=args.iters, warmup=args.warmup, out=args.out, timeout=args.timeout,
                          seed=args.seed, placement=args.placement, ecmp=args.ecmp,
                          calibrate=False if args.no_calibrate else None,
                          capture=False if args.no_capture else None,
                          crash=_crash(args.inject_crash), link_down=_link_down(args.link_down),
                          link_bw=_link_bw(args.link_bw), background=args.background, mtu=args.mtu,
                          switch_priority=args.switch_priority, tcp_cc=args.tcp_cc,
                          tcp_rto_min_ms=args.tcp_rto_min)
        if args.dilation_x is not None:
            if not cfg.real_setting:
                raise ValueError("--dilation-x needs an experiment with a real_setting (it dilates that "
                                 "setting's start-up); this one has none")
            cfg.real_setting = {**cfg.real_setting, "dilation_x": args.dilation_x}
        if args.cluster or args.ssh_config:
            cfg.cluster = _cluster(cfg.cluster, args.cluster, args.ssh_config)
        specs = cfg.topologies if isinstance(cfg.topologies, (list, tuple, dict)) else [cfg.topologies]
        for spec in dict.fromkeys(specs):  # before anything is built: sizes first
            problem = emulation_problem(spec)
            if problem:
                raise ValueError(problem)
        runs = config.validate(cfg)
    except ValueError as e:
        print(f"syncbed: {e}", file=sys.stderr)
        return 2
    # root first (nobody else can write results/), then the results folder, then the rest
    problem = (_root_problem() or _out_problem(cfg.out) or _environment_problem() or _tcp_cc_problem(cfg.tcp_cc)
               or _tcp_rto_min_problem(cfg.tcp_rto_min_ms))
    if problem:
        print(f"syncbed: {problem}", file=sys.stderr)
        return 2
    from emulation.runner import OutputError, run_experiment
    from emulation.state import LockedError

    servers = None
    if cfg.cluster:  # every server answers, the same everywhere, before anything starts
        from emulation.cluster import ClusterError, parse, preflight
        try:
            servers = preflight(parse(cfg.cluster), cfg.out, log=lambda m: print(f"syncbed: {m}", flush=True))
        except ClusterError as e:
            print(f"syncbed: {e}", file=sys.stderr)
            return 2
    print(f"syncbed: {len(runs)} runs: " + "; ".join(r.label for r in runs), flush=True)
    try:
        out = run_experiment(cfg, runs, log=lambda m: print(m, flush=True), servers=servers)
    except (LockedError, OutputError) as e:
        print(f"syncbed: {e}", file=sys.stderr)
        return 2
    summary = json.loads((out / "summary.json").read_text())
    print(f"results: {out}")
    if summary["status"] != "ok":
        print(f"syncbed: experiment FAILED: {summary['error']}", file=sys.stderr)
        return 130 if "interrupted" in (summary["error"] or "") else 1
    return 0


def _cluster(block, servers: str | None, ssh_config: str | None):
    """`--cluster a,b` and `--ssh-config F` over the file's `cluster:` block."""
    block = dict(block) if isinstance(block, dict) else ({"servers": block} if block else {})
    if servers:
        block["servers"] = [s for s in servers.split(",") if s.strip()]
    if ssh_config:
        block["ssh_config"] = ssh_config
    return block


def _link_bw(items):
    """`--link-bw KEY=MBPS` (repeatable): a link class, a host (its links) or an interface."""
    if not items:
        return None
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--link-bw takes KEY=MBPS (a link class, host or interface), e.g. "
                             f"agg-core=10 or h0_0_2=5, got {item!r}")
        out[key.strip()] = value.strip()
    return out


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
    from topologies.spec import build, emulation_problem

    try:
        # only what `syncbed run` can start here (the SimGrid projection builds more)
        problem = emulation_problem(args.spec)
        if problem:
            raise ValueError(problem)
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
        if a.options:
            print(f"{'':10} options: {a.option_help()}")
        print(f"{'':10} accepts: {a.accepts_help()}")
    return 0


# not in the run's files: what the runner knew (the configuration, the real setting a run stands for)
RUNNER_KEYS = ("model_source", "time_dilation", "size_scale", "real_link_mbps", "real_backward_s", "real_compress_s",
               "charged_seconds", "link_model",
               "real_setting", "stand_in")


def _analyze_problem(folder: Path) -> str | None:
    """Why `folder` is not a results folder of `syncbed run`, or None."""
    hint = "give a results folder made by syncbed run (it holds summary.json and one folder per run)"
    if not folder.is_dir():
        return f"{folder} is not a folder; {hint}"
    if (folder / "job.json").exists() and (folder.parent / "summary.json").exists():
        return f"{folder} is one run of an experiment; analyse the experiment's folder {folder.parent}"
    try:
        summary = json.loads((folder / "summary.json").read_text())
    except FileNotFoundError:
        return f"{folder} has no summary.json; {hint}"
    except (OSError, ValueError) as e:
        return f"{folder}/summary.json is unreadable ({type(e).__name__}: {str(e).splitlines()[0]}); {hint}"
    if not isinstance(summary, dict) or not isinstance(summary.get("runs", []), list):
        return f"{folder}/summary.json is not the summary of a syncbed run; {hint}"
    missing = [r.get("dir") for r in summary.get("runs", [])
               if isinstance(r, dict) and r.get("dir") and not (folder / str(r["dir"]) / "job.json").exists()]
    if missing:
        return (f"{folder} lacks the raw files of its runs ({', '.join(map(str, missing[:2]))}"
                f"{', ...' if len(missing) > 2 else ''} have no job.json): a copy of the summary and report "
                "cannot be re-analysed; give the folder syncbed run wrote")
    return None


def run_folders(folder: Path, summary: dict) -> list[Path]:
    """The run folders of an experiment: those summary.json lists and any other with a
    job.json (a run interrupted before it was listed), in run order (their names)."""
    dirs = {r.get("dir") for r in summary.get("runs", []) if isinstance(r, dict) and r.get("dir")}
    dirs |= {d.name for d in folder.iterdir() if d.is_dir() and (d / "job.json").exists()}
    return [folder / d for d in sorted(dirs)]


def cmd_analyze(args) -> int:
    folder = Path(args.dir)
    problem = _analyze_problem(folder)
    if problem:
        print(f"syncbed: {problem}", file=sys.stderr)
        return 2
    from emulation import analysis, checks
    from emulation.report import write_report

    summ_path = folder / "summary.json"
    summary = json.loads(summ_path.read_text())
    before = {r.get("dir"): r for r in summary.get("runs", []) if isinstance(r, dict)}
    runs = []
    for d in run_folders(folder, summary):
        print(f"analysing {d.name}", flush=True)
        try:
            rec = analysis.analyze_run(d)
        except Exception as e:  # one line, whatever is wrong with the files
            # nothing is written: the folder stays as it was
            why = str(e) if isinstance(e, analysis.NotARunFolder) else f"{d}: {type(e).__name__}: {e}"
            print(f"syncbed: cannot analyse {why.splitlines()[0] if why else d}", file=sys.stderr)
            return 2
        rec.update({k: before[d.name][k] for k in RUNNER_KEYS if k in before.get(d.name, {})})
        runs.append(rec)
        if rec.get("sync_seconds") is not None:
            print(checks.result_line(rec), flush=True)
    summary["runs"] = runs
    if summary.get("status") in (None, "running"):  # the experiment's process was killed
        summary.update(status="failed", error=summary.get("error") or "the experiment did not finish")
    failed = [r for r in runs if r.get("status") != "ok"]
    if failed and summary["status"] == "ok":
        summary.update(status="failed", error=f"{failed[0]['topology']} {failed[0]['algorithm']}: "
                                               f"{failed[0].get('error')}")
    summ_path.write_text(json.dumps(summary, indent=1, default=str))
    print(f"report: {write_report(folder, redraw=not args.no_plots)}")
    return 0


def cmd_keep(args) -> int:
    from emulation import analysis

    dest = Path(args.dest)
    if dest.exists() and any(dest.iterdir()):
        print(f"syncbed: {dest} exists and is not empty; keep copies into a new folder", file=sys.stderr)
        return 2
    try:
        analysis.keep_copy(Path(args.dir), dest)
    except analysis.NotARunFolder as e:
        print(f"syncbed: {e}", file=sys.stderr)
        return 2
    print(f"kept {args.dir} -> {dest} (no pcaps; `syncbed analyze {dest}` redoes every verdict)")
    return 0


def cmd_docs(args) -> int:
    from emulation.report import docs

    folder = Path(args.docs) if args.docs else docs.DOCS
    return docs.run(folder, Path(args.results) if args.results else folder / "results", check=args.check)


def cmd_train(args) -> int:
    """Localhost training (emulation/trainer.py): no root, no emulator; Gloo on `lo`."""
    import signal
    import traceback

    def stop(signum, frame):  # a background job ignores SIGINT; SIGTERM must still stop the ranks
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, stop)
    if hasattr(sys.stdout, "reconfigure"):  # progress lines as they happen, also into a log file
        sys.stdout.reconfigure(line_buffering=True)
    try:
        import torch

        from emulation import config, trainer

        torch.set_num_threads(1)  # before validate_local builds a network: see trainer.experiment
        try:
            cfg = config.load(args.experiment, defaults=config.TRAIN_DEFAULTS, out=args.out, iters=args.iters)
            runs = config.validate_local(cfg)
            if args.resume is not None:
                trainer.open_results(cfg, runs, args.resume)  # refuses another experiment's folder
        except ValueError as e:
            print(f"syncbed: {e}", file=sys.stderr)
            return 2
        counts = ", ".join(str(p) for p in dict.fromkeys(r.workers for r in runs))
        print(f"{cfg.name}: {len(runs)} runs ({cfg.model}, P = {counts}; "
              f"{', '.join(dict.fromkeys(r.spec for r in runs))}), {cfg.iters} iterations each")
        out = trainer.experiment(cfg, runs, resume=args.resume)
    except KeyboardInterrupt:
        print("syncbed: interrupted; a results folder keeps the runs that finished", file=sys.stderr)
        return 130
    except Exception as e:  # one line for the operator, the traceback for debugging
        print(f"syncbed: error: {type(e).__name__}: {e}", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return 1
    summary = json.loads((out / "summary.json").read_text())
    print(f"done in {summary['wall_seconds'] / 60:.1f} min: {out / 'report.md'}")
    return 0 if summary["status"] == "ok" else 1


def cmd_report(args) -> int:
    """report.md and plots/ of a results folder, from its files only (no re-analysis)."""
    folder = Path(args.dir)
    if not folder.is_dir():
        print(f"syncbed: {folder} is not a folder; give a results folder (it holds summary.json)", file=sys.stderr)
        return 2
    from emulation.report import write_report

    print(write_report(folder))
    return 0


def cmd_scaling(args) -> int:
    from emulation.report import scaling

    try:
        print(scaling.write(args.folders, args.out))
    except ValueError as e:
        print(f"scaling: {e}", file=sys.stderr)
        return 2
    return 0


def cmd_predict(args) -> int:
    """MG-WFBP's alpha-beta predictions for experiment files' real settings (emulation/papers/mgwfbp_predict.py)."""
    files = [a for a in args.files if a.endswith((".yaml", ".yml"))]
    names = [a for a in args.files if not a.endswith((".yaml", ".yml"))]
    if not files or args.files[:len(files)] != files:
        print("syncbed: predict takes EXPERIMENT.yaml... [MODEL ...] (the files first), e.g. "
              "experiments/mgwfbp_fattree16.yaml vgg16", file=sys.stderr)
        return 2
    from emulation.papers.mgwfbp_predict import predict, table

    try:
        results = [(path, *predict(path, names)) for path in files]
    except (OSError, ValueError) as e:
        print(f"syncbed: {e}", file=sys.stderr)
        return 2
    for i, (path, setting, rows) in enumerate(results):
        print(("\n" if i else "") + "\n".join(table(path, setting, rows)))
    return 0


def cmd_profile(args) -> int:
    """Profile networks' backward pass on this CPU into workloads/profiles/ (workloads/models/profiles.py)."""
    import torch

    from workloads.models import profiles

    torch.set_num_threads(1)  # the workers compute with one thread; so is each layer timed
    if args.clock is not None and args.clock not in profiles.CLOCKS:
        print(f"syncbed: --clock {args.clock!r} is unknown; valid: {', '.join(sorted(profiles.CLOCKS))}",
              file=sys.stderr)
        return 2
    given = {"runs": args.runs, "warmup": args.warmup, "folder": args.dir, "clock": args.clock}
    return profiles.write_profiles(args.names, args.batch, log=print,
                                   **{k: v for k, v in given.items() if v is not None})  # else its defaults


def cmd_pcap(args) -> int:
    """Packets, payload and retransmitted bytes per (interface, direction) of a capture."""
    import time

    from emulation.pcap import read_counts

    t0 = time.perf_counter()
    try:
        c = read_counts(args.file)
    except (OSError, ValueError) as e:
        print(f"syncbed: {args.file}: {e}", file=sys.stderr)
        return 2
    dt = time.perf_counter() - t0
    for (ifi, d), v in sorted(c.per_if.items(), key=lambda kv: str(kv[0])):
        print(f"{ifi}\t{d}\t{v['packets']}\t{v['payload_bytes']}\t{v.get('retrans_bytes', 0)}")
    print(f"# {c.packets_total} packets in {dt:.3f} s ({c.packets_total / max(dt, 1e-9) / 1e6:.2f} M packets/s)",
          file=sys.stderr)
    return 0


def cmd_bench(args) -> int:
    """The benchmarks of the closing notes that are not an experiment: the pcap reader's speed."""
    from emulation import bench_pcap

    given = {k: getattr(args, k) for k in ("packets", "path", "repeat", "scapy_packets")}
    bench_pcap.bench(keep=args.keep, **{k: v for k, v in given.items() if v is not None})  # else its defaults
    return 0


def cmd_project(args) -> int:
    """The same plans in SimGrid, at any size (emulation/simulator/): needs no root, no emulator."""
    import signal
    import time

    from emulation.simulator import core, sweep

    given = {k: v for k, v in vars(args).items() if k not in ("cmd", "fn") and v is not None}
    s = sweep.Sweep(**given, overrides={k: given[k] for k in sweep.OVERRIDES if k in given})
    if hasattr(sys.stdout, "reconfigure"):  # progress lines as they happen, also into a log file
        sys.stdout.reconfigure(line_buffering=True)
    why = core.simgrid_available()
    if why:
        print(f"project: {why}", file=sys.stderr)
        return 2
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    try:  # every refusal before the first simulation
        measured = sweep.resolve_measured(s)
        preps = sweep.prepare_all(s, measured)
    except ValueError as e:
        print(f"project: {e}", file=sys.stderr)
        return 2

    signalled = []

    def stop(signum, frame):  # a timeout's SIGTERM ends the projection like Ctrl-C: results marked failed
        signalled.append(signum)  # kept even where Python swallows the raise (sweep.run asks)
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    out, summary = sweep.run(s, preps, measured, started, stopped=lambda: bool(signalled))
    print(f"wrote {out / 'summary.json'}, {out / 'report.md'}")
    if summary["status"] != "ok":
        print(f"project: {summary['error']}", file=sys.stderr)
        return 130 if summary["error"] == "interrupted" else 1
    return 0 if all(r["payload_equal"] for r in summary["runs"]) else 1


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


def _typed(convert, valid: str):
    """An argparse type whose error names the value and what is valid."""
    def parse(text):
        try:
            return convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not valid; give {valid}") from None
    parse.__name__ = valid  # argparse names the type by it in other messages
    return parse


MBPS = _typed(float, "a number of Mbit/s, 0.001 to 1000")
COUNT = _typed(int, "a whole number >= 1")
NONNEG = _typed(int, "a whole number >= 0")
INTEGER = _typed(int, "a whole number")
SECONDS = _typed(float, "a number of seconds > 0")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="syncbed", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run an experiment (YAML file and/or options)")
    r.add_argument("experiment", nargs="?", help="experiment YAML (experiments/*.yaml)")
    r.add_argument("--name")
    r.add_argument("--topo", action="append", help="bcube,n=4,k=2 | fattree,k=4 (repeatable)")
    r.add_argument("--algo", action="append",
                   help="algorithm specs, name[,key=value...]; ring,ps is two (repeatable; see syncbed algos)")
    r.add_argument("--workers", type=COUNT)
    r.add_argument("--servers", type=NONNEG, help="dedicated parameter servers (ps)")
    r.add_argument("--model", help="one model spec, replacing the file's list: synthetic,mb=4 | lenet5 | resnet20 | "
                   "resnet50 | googlenet | vgg16_cifar | torchvision:NAME | ... (the full list: a bad one prints it)")
    r.add_argument("--bw", type=MBPS, help="link bandwidth in Mbit/s (0.001 <= bw <= 1000)")
    r.add_argument("--iters", type=COUNT)
    r.add_argument("--warmup", type=NONNEG)
    r.add_argument("--seed", type=INTEGER)
    r.add_argument("--timeout", type=SECONDS, help="seconds per run")
    r.add_argument("--placement", help="ordered | spread")
    r.add_argument("--link-bw", action="append", metavar="KEY=MBPS",
                   help="bandwidth of a link class, a host's links or one interface's link (repeatable)")
    r.add_argument("--background", action="append", metavar="SRC:DST[:MBPS]",
                   help="a background flow (iperf3) between two hosts that run no worker, at MBPS or "
                        "unlimited (repeatable); its bytes are kept apart from gradient bytes")
    r.add_argument("--ecmp", help="hash (per-pair, collisions like real ECMP) | two-level (Al-Fares, balanced)")
    r.add_argument("--mtu", type=INTEGER, help="MTU of every emulated interface, 576..64000 (default 9000; "
                   "docs/FIDELITY.md #20)")
    r.add_argument("--switch-priority", choices=("normal", "realtime"),
                   help="realtime: ovs-vswitchd's threads under SCHED_RR during the iterations, ahead of the "
                        "workers on the CPU (default normal; docs/FIDELITY.md #21)")
    r.add_argument("--tcp-cc", metavar="NAME",
                   help="TCP congestion control of every emulated host (default cubic, Linux's; bbr, reno, ... "
                        "as this kernel has them; docs/FIDELITY.md #22)")
    r.add_argument("--tcp-rto-min", type=INTEGER, metavar="MS",
                   help="every emulated host's minimum TCP retransmission timeout in ms, 1..120000 (default: "
                        "the kernel's 200; Linux 6.11+; a diagnosis of spurious timeouts, docs/FIDELITY.md #23)")
    r.add_argument("--dilation-x", type=float, metavar="X",
                   help="with a real_setting: stand for a start-up X times the measured one, waited before "
                        "each collective (1..64; X times fewer messages per second, docs/FIDELITY.md)")
    r.add_argument("--out", help="results folder (default results/)")
    r.add_argument("--no-calibrate", action="store_true")
    r.add_argument("--no-capture", action="store_true")
    r.add_argument("--cluster", metavar="SERVER,SERVER[,...]",
                   help="emulate over several servers (ssh targets as root; the first is this machine); "
                        "docs/CLUSTER.md")
    r.add_argument("--ssh-config", metavar="FILE", help="with --cluster: the ssh config for every ssh to the servers")
    r.add_argument("--inject-crash", metavar="RANK:ITER", help="fault injection: that rank exits at that iteration")
    r.add_argument("--link-down", metavar="NIC@SECONDS",
                   help="fault injection: take the link of that host NIC down that many seconds into each run")
    r.set_defaults(fn=cmd_run)
    t = sub.add_parser("topo", help="describe a topology")
    t.add_argument("spec")
    t.add_argument("--bw", type=MBPS, default=20.0)
    t.add_argument("-v", "--verbose", action="store_true", help="list every NIC and switch port")
    t.set_defaults(fn=cmd_topo)
    a = sub.add_parser("algos", help="list sync algorithms")
    a.set_defaults(fn=cmd_algos)
    z = sub.add_parser("analyze", help="re-analyse a results folder")
    z.add_argument("dir")
    z.add_argument("--no-plots", action="store_true",
                   help="keep the figures already drawn (plots/ and the report's Plots section); "
                        "redo every verdict and table, several times faster")
    z.set_defaults(fn=cmd_analyze)
    k = sub.add_parser("keep", help="copy a results folder without its pcaps, still analysable (docs/results)")
    k.add_argument("dir")
    k.add_argument("dest")
    k.set_defaults(fn=cmd_keep)
    d = sub.add_parser("docs", help="regenerate every table of measured numbers in docs/ from docs/results")
    d.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each table that differs")
    d.add_argument("--docs", help="the docs folder (default: the repository's docs/)")
    d.add_argument("--results", help="the results folder (default: DOCS/results)")
    d.set_defaults(fn=cmd_docs)
    add_project(sub)
    tr = sub.add_parser("train", help="train a real model with each algorithm on localhost (Gloo on lo, no root): "
                        "convergence")
    tr.add_argument("experiment", help="experiment YAML (e.g. experiments/convergence_gtopk.yaml)")
    tr.add_argument("--out", help="results folder (default: the file's `out`, else results/)")
    tr.add_argument("--iters", type=COUNT, help="override the file's iters")
    tr.add_argument("--resume", metavar="DIR", help="a results folder of an earlier, stopped session of the same "
                    "experiment: keep its finished runs, run the others")
    tr.set_defaults(fn=cmd_train)
    rp = sub.add_parser("report", help="rewrite report.md and plots/ of a results folder from its files")
    rp.add_argument("dir", help="results folder holding summary.json")
    rp.set_defaults(fn=cmd_report)
    sc = sub.add_parser("scaling", help="one table and plot across worker counts from several results folders")
    sc.add_argument("folders", nargs="+", help="results folders of syncbed run")
    sc.add_argument("--out", required=True, help="folder for scaling.json, scaling.md, scaling.png")
    sc.set_defaults(fn=cmd_scaling)
    pr = sub.add_parser("predict", help="MG-WFBP: the alpha-beta model's iteration times for an experiment "
                        "file's real setting (no emulation)")
    pr.add_argument("files", nargs="+", metavar="EXPERIMENT.yaml... [MODEL]",
                    help="mgwfbp_*.yaml files stating a real_setting, then models (default: each file's list)")
    pr.set_defaults(fn=cmd_predict)
    pf = sub.add_parser("profile", help="profile networks' backward pass on this CPU into workloads/profiles/ "
                        "(what model specs load)")
    pf.add_argument("names", nargs="+", metavar="NAME", help="a registered network (resnet20, resnet50, ...) "
                    "or torchvision:NAME; one after the other")
    pf.add_argument("--batch", type=COUNT, help="default: each network's default batch")
    pf.add_argument("--runs", type=COUNT, help="timed backward passes, each layer's median kept (default 5)")
    pf.add_argument("--warmup", type=NONNEG, help="untimed passes first (default 1)")
    pf.add_argument("--dir", help="where the profiles go (default: workloads/profiles/)")
    pf.add_argument("--clock", help="thread (CPU time, the default: robust to other processes) | wall")
    pf.set_defaults(fn=cmd_profile)
    pc = sub.add_parser("pcap", help="packets and TCP payload per interface and direction of a capture")
    pc.add_argument("file", help="a pcap file (a run's capture.pcap)")
    pc.set_defaults(fn=cmd_pcap)
    b = sub.add_parser("bench", help="benchmarks that are not experiments (bench pcap: the capture reader)")
    bsub = b.add_subparsers(dest="bench", required=True, metavar="{pcap}")
    bp = bsub.add_parser("pcap", help="packets/s of emulation/pcap.py's reader against scapy's, on a synthetic "
                         "capture")
    bp.add_argument("--packets", type=COUNT, help="packets in the synthetic capture (default 2,000,000)")
    bp.add_argument("--path", help="where it is written (default /tmp/syncbed_bench.pcap)")
    bp.add_argument("--repeat", type=COUNT, help="timings of each reader variant, the best kept (default 3)")
    bp.add_argument("--scapy-packets", type=NONNEG,
                    help="records read by RawPcapReader (it is slow; default 300,000); 0 to skip")
    bp.add_argument("--keep", action="store_true", help="keep the pcap file")
    bp.set_defaults(fn=cmd_bench)
    c = sub.add_parser("clean", help="remove what a crashed run left behind")
    c.set_defaults(fn=cmd_clean)
    sub.metavar = "{" + ",".join(sub.choices) + "}"  # every subcommand, in this order
    return p


def add_project(sub) -> None:
    """`syncbed project`: its options are the fields of `sweep.Sweep` (their defaults too)."""
    from emulation.simulator.core import MODES
    from emulation.simulator.sweep import Sweep
    from topologies.placement import PLACEMENTS
    from topologies.spec import ECMP_METHODS

    ap = sub.add_parser("project", help="simulate the same plans in SimGrid, at any size (no root)",
                        description="Project an algorithm's sync schedule to thousands of workers in SimGrid "
                                    "(issue #11).")
    ap.add_argument("experiment", nargs="?", help="an experiment file (experiments/*.yaml): its runs, planned as "
                    "syncbed run plans them, with --topo, --algo, --workers, --servers, --model, --bw, --ecmp "
                    "and --placement replacing the file's as in syncbed run")
    ap.add_argument("--topo", action="append", help="bcube,n=N,k=K | fattree,k=K; repeat for a sweep over sizes")
    ap.add_argument("--algo", action="append",
                    help="algorithm specs, e.g. ring,ps or gtopk,density=0.001 (repeatable, as syncbed run's)")
    ap.add_argument("--workers", type=int, help="worker ranks (default: every host minus --servers)")
    ap.add_argument("--servers", type=int, help="dedicated parameter servers (ps; default 0)")
    ap.add_argument("--mb", type=float, help=f"gradient MiB (one layer) when no --model (default {Sweep.mb:g}; with an experiment "
                    "file, give --model synthetic,mb=X)")
    ap.add_argument("--model", help="a model of the registry (per-layer sizes and backward times), e.g. resnet50")
    ap.add_argument("--alpha", type=float, help="all-reduce start-up a, seconds (layer-wise planners; with --beta)")
    ap.add_argument("--beta", type=float, help="all-reduce seconds per byte b (layer-wise planners; with --alpha)")
    ap.add_argument("--round-latency", action="append", metavar="[ALGO=]S",
                    help="seconds per message round (a ring's 2(N-1) rounds, PS's 1 per phase); default 0: "
                         "bandwidth only. S: every algorithm's; ALGO=S (repeatable): that algorithm's own "
                         "(docs/PROJECTION.md fits one for BML's stages). The MG-WFBP authors' 16-worker 10GbE "
                         "a = 0.908 ms is 30 us per round")
    ap.add_argument("--incast", action="append", metavar="[ALGO=]S",
                    help="seconds per flow into a step's busiest NIC beyond the first, charged with the "
                         "step's start-up (TCP stalls of converging flows as a time per flow); default 0. "
                         "S: every algorithm's; ALGO=S (repeatable): that algorithm's own "
                         "(docs/PROJECTION.md fits one for PS with CUBIC in the hosts, a time plus bytes at "
                         "the hosts' link rate, which --calibration cubic charges whole; this option gives "
                         "the time alone)")
    ap.add_argument("--incast-past-slack", action="store_true",
                    help="charge --incast only past each sync's slack, the seconds its busiest link needs beyond "
                         "its NICs' (form C of docs/PROJECTION.md, what --calibration cubic charges); default: "
                         "on every step")
    ap.add_argument("--fan-in", action="append", metavar="[ALGO=]E",
                    help="fan-in efficiency: a link into a NIC crossed by n flows delivers E + (1 - E)/n of its "
                         "capacity (SimGrid's NONLINEAR sharing, emulation/simulator/fanin.py); default 1: plain "
                         "max-min. E: every algorithm's; ALGO=E (repeatable): that algorithm's own. "
                         "docs/PROJECTION.md gives them fitted on half of the measured folders")
    ap.add_argument("--oversubscribed", type=float, default=Sweep.oversubscribed, metavar="E",
                    help="the same efficiency E on every oversubscribed link (switch to switch, slower than the "
                         "hosts' links: emulation/simulator/fanin.py), every algorithm's; default 1: none. "
                         "docs/PROJECTION.md fits one with CUBIC in the hosts")
    ap.add_argument("--calibration", metavar="CC",
                    help="the fitted L, e, BML's own L, PS's incast start-up and e_o of a validation of "
                         "docs/PROJECTION.md, each charged where it was fitted (emulation/simulator/"
                         "calibration.py): cubic (hosts running CUBIC, as syncbed run does) or bbr; instead "
                         "of --round-latency, --incast, --fan-in and --oversubscribed")
    ap.add_argument("--compute", action="append", metavar="KEY=C0:C1",
                    help="a cost model of the sync's compute (repeatable): KEY a Compute an algorithm declares "
                         "(its key in summary.json), seconds = C0 + C1 x gradient elements, "
                         "charged before the first step (at start) or after the last (at end). With --measured, "
                         "a run's own logged figures (the slowest rank's per sync) stand for the keys not given")
    ap.add_argument("--bw", type=float, help=f"Mbit/s on every link (default {Sweep.bw:g})")
    ap.add_argument("--ecmp", choices=ECMP_METHODS, help=f"default {Sweep.ecmp}")
    ap.add_argument("--placement", choices=PLACEMENTS, help=f"default {Sweep.placement}")
    ap.add_argument("--mode", default=Sweep.mode, choices=MODES,
                    help="driver: one actor starts every message of a step (fast); ranks: one actor per rank")
    ap.add_argument("--reduce", default=Sweep.reduce, choices=("auto", "on", "off"),
                    help="simulate one communication per class of interchangeable flows (exact). auto: by orbits "
                         "of the routed Fat-Tree's or BCube's automorphisms where plan and routes are symmetric "
                         "(Fat-Tree: two-level routing; BCube: every server a rank; equal blocks: no flow listed, "
                         "emulation/simulator/orbits.py), else "
                         "by colour refinement of every flow (emulation/simulator/symmetry.py) where every flow "
                         "would take over 30 CPU s and the routing keeps the symmetry (not hash ECMP on a "
                         "Fat-Tree); on: colour refinement always; off: every flow")
    ap.add_argument("--max-memory-gb", type=float, help="refuse above this estimate (default: MemAvailable)")
    ap.add_argument("--max-minutes", type=float, default=Sweep.max_minutes,
                    help="refuse above this CPU-time estimate")
    ap.add_argument("--skip-too-large", action="store_true",
                    help="in a sweep, skip (and name in the report) what the memory or time estimate refuses")
    ap.add_argument("--measured", help="a results folder of the same experiment: simulated against measured, per run")
    ap.add_argument("--out", help="folder for summary.json, report.md, plots (default results/project-<time>)")
    ap.set_defaults(fn=cmd_project)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        print("syncbed: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
