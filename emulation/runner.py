"""Run an experiment: for each topology, controller + network + checks, then each algorithm.

Order per topology: Ryu (127.0.0.1) -> Mininet network (OVS userspace, tc) -> wait
until every switch has its routes -> all-pairs reachability -> link calibration;
then per algorithm: background flows -> workers -> capture on -> iterations -> workers done
-> background off -> capture off -> analysis. Throughput (issue #6 §6): the runs of a
topology that use the same hosts share one pool of worker processes (Python and torch
start once, `workers.Pool`), and a run that ended well is analysed by a child process at
nice 19 while the next run measures (`_analyse_later`; collected before the next analysis,
at the end of the experiment, or in the teardown).
Whatever happens (success, a worker crash, a timeout, SIGINT/Ctrl-C or SIGTERM), `finally`
stops the workers, the capture, the network and the controller, and undoes anything
recorded in the run's State. Partial results stay, marked "failed": a run stopped part
way is analysed and listed with the iterations that finished.
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

import yaml

from controllers.launcher import Controller
from emulation import analysis, checks, cpuprobe, linkprobe, replan, switch_priority
from emulation.background import Background
from emulation.config import backward_for, charged_compute
from emulation.calibrate import calibrate
from emulation.capture import Capture
from emulation.monitor import CpuMonitor, ovs_pid
from emulation.network import Network, drop_counters, drop_delta, ovs_send_buffer
from emulation.state import Lock, State, cleanup
from emulation.workers import Pool, WorkerFailure, Workers, write_job
from workloads.algorithms import base
from workloads.linkmodel import LinkModel

ROOT = Path(__file__).resolve().parent.parent


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived; the message is the signal's name."""


class OutputError(OSError):
    """The results folder cannot be written: nothing was started."""


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in s).strip("-").replace("--", "-")


def _write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=str))
    tmp.replace(path)


class Experiment:
    def __init__(self, cfg, runs, log=print, servers=None):
        self.cfg, self.runs, self.log = cfg, runs, log
        self.servers = servers  # emulation.cluster.Server list (preflighted), or None: this machine only
        self.t0 = time.time()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.out = Path(cfg.out).resolve() / f"{stamp}-{_slug(cfg.name)}"
        self.summary = {"status": "running", "error": None, "experiment": cfg.name,
                        "description": cfg.description, "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
                        "finished": None, "networks": [], "runs": []}
        self.state = State()
        self.active: list = []  # things to stop, last started first
        self.fault: dict | None = None  # the injected fault, once it fired
        self.interrupted: str | None = None  # the signal that stopped the experiment
        self.pool = None  # the worker processes kept across runs on the same hosts (workers.Pool)
        self.pools = 0
        self.pending = None  # the previous run's analysis, running while this one measures
        self.offsets: dict = {}  # server name -> clock.Offset against this machine (several servers)

    # ---- top level ---------------------------------------------------------------------
    def run(self) -> Path:
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / "config.yaml").write_text(yaml.safe_dump(dataclasses.asdict(self.cfg), sort_keys=False))
            self._save()
        except OSError as e:
            raise OutputError(f"cannot write the results folder {self.out}: {e.strerror or e}") from None
        with Lock(f"experiment {self.out}"):
            leftovers = cleanup(State.load())
            if leftovers:
                self.log(f"cleaned up after an earlier run: {'; '.join(leftovers)}")
            # SIGINT explicitly too: a shell starting us in the background leaves SIGINT
            # ignored, and Python then installs no KeyboardInterrupt for it
            old = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                self._run_all()
                failed = [r for r in self.summary["runs"] if r.get("status") != "ok"]
                self.summary["status"] = "failed" if failed else "ok"
                if failed:
                    self.summary["error"] = f"{failed[0]['topology']} {failed[0]['algorithm']}: {failed[0].get('error')}"
            except (KeyboardInterrupt, Interrupted) as e:
                self.summary.update(status="failed", error=f"interrupted ({e or 'SIGINT'})")
                self.log("interrupted: stopping everything")
            except Exception as e:  # one line for the user, the traceback for the debug log
                self.summary.update(status="failed", error=f"{type(e).__name__}: {e}".splitlines()[0])
                (self.out / "debug.log").write_text(traceback.format_exc())
            finally:
                self.interrupted = self.interrupted or "teardown"  # a later signal must not cut it short
                self._teardown()
                for sig, handler in old.items():
                    signal.signal(sig, handler)
                self.summary["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
                self.summary["throughput"] = throughput(self.summary, time.time() - self.t0)
                self._save()
                self._report()
                tp = self.summary["throughput"]
                if tp.get("overhead_fraction") is not None:
                    self.log(f"wall {tp['wall_seconds']:.0f} s, iterations {tp['measured_seconds']:.0f} s (warmup "
                             f"included; {tp['timed_seconds']:.0f} s without): {100 * tp['overhead_fraction']:.0f}% of "
                             f"the wall time was not measurement ({100 * tp['overhead_fraction_without_warmup']:.0f}% "
                             "counting warmup as overhead)")
        return self.out

    def _on_signal(self, signum, _frame):
        if self.interrupted:  # already stopping (or tearing down): let that finish
            return
        self.interrupted = signal.Signals(signum).name
        raise Interrupted(self.interrupted)

    def _save(self):
        # in their folders' names' order, as `syncbed analyze` lists them (cli.run_folders): a file
        # whose runs change topology back and forth is measured one topology at a time, so the
        # order they end in is not the file's (kept folders are re-analysed in tests/unit/test_results.py)
        self.summary["runs"].sort(key=lambda r: str(r.get("dir") or ""))
        _write_json(self.out / "summary.json", self.summary)

    def _report(self):
        try:
            from emulation.report import write_report
            path = write_report(self.out)
            self.log(f"report: {path}")
        except Exception as e:  # the results stay usable without the report
            self.log(f"report failed: {type(e).__name__}: {e}")

    def _teardown(self):
        try:
            self._collect()  # a run's analysis still running: its record belongs in the summary
        except Exception as e:
            self.log(f"teardown: the last analysis failed: {type(e).__name__}: {e}")
        for thing in reversed(self.active):
            try:
                thing.stop()
            except Exception as e:
                self.log(f"teardown: {type(thing).__name__}.stop failed: {type(e).__name__}: {e}")
        self.active.clear()
        cleanup(self.state)

    # ---- per topology ------------------------------------------------------------------
    def _run_all(self):
        by_topo: dict = {}
        for r in self.runs:
            by_topo.setdefault(r.topology.name, []).append(r)
        for name, runs in by_topo.items():
            topo = runs[0].topology
            tdir = self.out / _slug(name)
            tdir.mkdir(exist_ok=True)
            tjson = tdir / "topology.json"
            _write_json(tjson, topo.to_dict())
            s = topo.summary()
            self.log(f"== {name}: {s['servers']} servers, {s['switches']} switches, {s['links']} links")
            t0 = time.time()
            ctrl = Controller(tjson, tdir).start()
            self.state.add("pgids", ctrl.pid)
            self.active.append(ctrl)
            cluster, mtu = self._cluster_for(topo, ctrl.port, tdir)
            net = Network(topo, ctrl.port, self.state, run_tag=self.out.name, mtu=mtu, cluster=cluster,
                          tcp_cc=self.cfg.tcp_cc, tcp_rto_min_ms=self.cfg.tcp_rto_min_ms,
                          scratch=tdir if cluster else None)
            self.active.append(net)
            net.start()
            ctrl.wait_ready(60)
            ready = time.time() - t0
            fails = net.reachability()
            reach = time.time() - t0 - ready
            if fails:
                raise RuntimeError(f"{len(fails)} host pairs cannot reach each other, e.g. {', '.join(fails[:3])}")
            self.log(f"  network + controller ready in {ready:.1f} s; all pairs reachable ({reach:.1f} s)")
            calib = calibrate(net, topo, log=self.log, crossing=cluster[1].crossing if cluster else ()) \
                if self.cfg.calibrate else None
            if calib:
                _write_json(tdir / "calibration.json", calib)
            self.summary["networks"].append({"topology": name, "ready_seconds": round(ready, 2),
                                             "mininet_start_seconds": round(net.start_seconds, 2),
                                             "reachability_seconds": round(reach, 2), "calibration": calib})
            self._save()
            self._measure_link(net, topo, tdir, runs)
            for run in runs:
                status, error = self._run_one(run, net, calib)
                if status != "ok":
                    raise RuntimeError(f"{run.label}: {error}")
            self._drop_pool()
            for thing in (net, ctrl):
                thing.stop()
                self.active.remove(thing)
        self._collect()

    def _cluster_for(self, topo, port, tdir):
        """Over several servers: the placement (said before anything is built there), the
        controller's port forwarded to every other server, each server's clock offset, and the
        MTU the underlay leaves. -> ((servers, placement) or None, MTU)."""
        if not self.servers:
            return None, self.cfg.mtu
        from emulation import clock
        from emulation.cluster import ControllerTunnel, emulated_mtu, parse
        from topologies.placement import place_on_servers

        spec = parse(self.cfg.cluster)
        placement = place_on_servers(topo, [s.name for s in self.servers], spec.capacities(),
                                     spec.placement if isinstance(spec.placement, dict) else None)
        self.log(f"  cluster: {placement.summary()}")
        tunnel = ControllerTunnel(self.servers, port, self.state).__enter__()
        self.active.append(_Stoppable(tunnel.__exit__))
        self.offsets = {s.name: clock.probe(s.ssh(), server=s.name) for s in self.servers if not s.local}
        offsets = {n: dataclasses.asdict(o) for n, o in self.offsets.items()}
        mtu = emulated_mtu(self.servers, self.cfg.mtu)
        info = {"servers": [{"name": s.name, "ip": s.ip, "shared_fs": s.shared_fs, **s.facts} for s in self.servers],
                "placement": {s: placement.hosts_on(s) + placement.switches_on(s) for s in placement.servers},
                "crossing_links": [[link.a, link.b, link.cls] for link in placement.crossing],
                "clock_offsets": offsets, "mtu": mtu}
        _write_json(tdir / "cluster.json", info)
        self.cluster_info = info
        self.summary.setdefault("cluster", []).append({"topology": topo.name, **info})
        self._save()
        for name, o in offsets.items():
            self.log(f"  clock of {name}: {1e3 * o['offset']:+.3f} ms +- {1e3 * o['error']:.3f} ms")
        return (self.servers, placement), mtu

    def _capture(self, net, rdir, sw_intfs):
        """This machine's capture of its switch ports, with one per other server merged into it."""
        if not self.servers:
            return Capture(rdir, sw_intfs, self.state, enabled=self.cfg.capture)
        from emulation.capture import RemoteCapture
        groups = net._by_server(sw_intfs)
        local = [i for srv, names in groups if srv.local for i in names]
        remotes = [RemoteCapture(srv, rdir, names, self.out.name, self.servers.index(srv), self.state)
                   for srv, names in groups if not srv.local]
        underlay = sorted({_route_dev(s.ip) for s in self.servers if not s.local} - {None})
        return Capture(rdir, local, self.state, enabled=self.cfg.capture, remotes=remotes,
                       offsets={n: o.offset for n, o in self.offsets.items()}, underlay=underlay)

    def _remote_monitors(self, rdir) -> list:
        """The CPU monitor of each other server (cpu-server<k>.json in the run's folder)."""
        from emulation.cluster import RemoteMonitor
        return [RemoteMonitor(s, self.out.name, rdir / f"cpu-server{k}.json", self.state).start()
                for k, s in enumerate(self.servers or []) if not s.local]

    def _correct_clocks(self, net, run, rdir) -> dict:
        """Put the event logs of ranks on other servers on this machine's clock (their offset
        measured before the network started). -> {rank: offset s}"""
        from emulation import clock
        from workloads.eventlog import read_events

        done = {}
        for rank, host in enumerate(run.hosts):
            srv = net.server_of(host)
            log = rdir / "workers" / f"rank{rank}.jsonl"
            if srv.local or srv.name not in self.offsets or not log.exists():
                continue
            fixed = clock.correct_events(read_events(log)[0], self.offsets[srv.name])
            log.write_text("".join(json.dumps(e) + "\n" for e in fixed))
            done[rank] = self.offsets[srv.name].offset
        return done

    def _measure_link(self, net, topo, tdir, runs):
        """Measure a, b where a planner needs them (or the experiment scales to a real
        setting), once per set of worker hosts, and plan those runs again with it."""
        probes: dict = {}
        for run in replan.needs_link(runs, self.cfg):
            key = tuple(run.hosts)
            if key not in probes:
                same = [r for r in runs if tuple(r.hosts) == key]
                max_bytes = min(max(r.model.bytes for r in same), linkprobe.MAX_PROBE_BYTES)
                probes[key] = linkprobe.measure(net, topo, list(key), tdir / f"link-probe-{len(probes) + 1}",
                                                self.state, max_bytes, self.cfg.timeout, log=self.log,
                                                pool=self._pool_for(run, net))
                self.summary["networks"][-1].setdefault("link_probes", []).append(probes[key])
                self._save()
            probe = probes[key]
            run.probe = probe  # copied into the run folder: the analysis judges the fit from it
            run.stand_in = replan.apply_link(run, LinkModel.from_dict(probe["model"]), self.cfg.real_setting)
            run.stand_in.update(probe_ok=probe["ok"], probe_points=probe["points"])
            if self.cfg.real_setting:
                self.log(f"  {run.label}: stands for {self.cfg.real_setting.get('name', 'the real setting')} with "
                         f"sizes / {run.stand_in['size_scale']:.3g} and times x {run.stand_in['time_factor']:.3g}"
                         f" ({run.model.bytes / 2**20:.2f} MiB, backward {run.model.backward_s:.2f} s per iteration)"
                         + (f", {run.startup_charge_s * 1e3:.2f} ms start-up waited per all-reduce"
                            if run.startup_charge_s else ""))

    # ---- worker pools and analyses in the background ----------------------------------
    def _pool_for(self, run, net):
        """The pool for this run's hosts: the current one, or a new one (the old stopped). Over
        several servers the pool has one fork server on each server that holds ranks (`Pool`)."""
        if not self.cfg.reuse_workers:
            return None
        if self.pool is not None and self.pool.fits(run.hosts):
            return self.pool
        self._drop_pool()
        self.pools += 1
        self.pool = Pool(net, run.topology, run.hosts, self.out / "pools" / f"pool{self.pools}", self.state)
        self.active.append(self.pool)
        return self.pool

    def _drop_pool(self):
        if self.pool is not None:
            self.pool.stop()
            self.active.remove(self.pool)
            self.pool = None

    def _analyse_later(self, run, rdir):
        """Analyse the run in a child process at the lowest CPU priority, so that it overlaps
        the next run's measurement without taking CPU from its workers or OVS (the next
        run's fidelity check says whether it did); `_collect` takes the record."""
        out = rdir / "analysis.json"
        proc = subprocess.Popen([sys.executable, "-m", "emulation.analysis", str(rdir), "--out", str(out)],
                                cwd=str(ROOT), start_new_session=True,  # Ctrl-C in the terminal: not its business
                                preexec_fn=lambda: os.nice(19), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.state.add("pgids", proc.pid)
        self.pending = (run, rdir, proc, out)

    def _collect(self):
        """Wait for the pending analysis (if any) and record its run."""
        if self.pending is None:
            return
        run, rdir, proc, out = self.pending
        proc.wait()  # a signal here leaves it pending: the teardown collects it
        self.pending = None
        got = json.loads(out.read_text()) if out.exists() else {"ok": False, "error": "the analysis left no result"}
        out.unlink(missing_ok=True)
        if got.get("ok"):
            rec = got["rec"]
        else:
            (rdir / "debug.log").write_text(got.get("traceback", got.get("error", "")))
            rec = {"topology": run.topology.name, "algorithm": run.algorithm, "status": "failed",
                   "error": f"not analysed: {got.get('error')}"}
        self._record(run, rdir, rec)

    def _record(self, run, rdir, rec):
        cfg = self.cfg
        rec["dir"] = rdir.name
        rec["model_source"] = run.model.source
        rec["time_dilation"] = cfg.time_dilation()
        rec["size_scale"] = cfg.size_scale
        rec["real_link_mbps"] = cfg.real_link_mbps
        if cfg.real_backward_s:  # compute scaled to the real setting's, then dilated by time_dilation
            rec["real_backward_s"] = backward_for(cfg.real_backward_s, run.model.spec)
        charged = charged_compute(cfg, run.algorithm, run.model.spec)
        if charged:  # the compressor's stated real cost, charged time-dilated (SyncState.computing)
            rec["real_compress_s"] = backward_for(cfg.real_compress_s, run.model.spec)
            rec["charged_seconds"] = charged
        stand_in = getattr(run, "stand_in", None)
        if stand_in:
            rec["link_model"] = stand_in["link"]
            if "size_scale" in stand_in:  # scaled to the stated real setting
                rec.update(size_scale=stand_in["size_scale"],
                           time_dilation=stand_in["time_factor"] * stand_in["compute_factor"],
                           real_setting=stand_in["real_setting"], stand_in=stand_in)
        self.summary["runs"].append(rec)
        self._save()
        if rec.get("sync_seconds") is not None:
            self.log(checks.result_line(rec))

    # ---- per run -----------------------------------------------------------------------
    def _run_one(self, run, net, calib) -> tuple:
        """Measure one run; analyse it (in the background when it ended well). -> (status, error)"""
        cfg = self.cfg
        rdir = self.out / f"{run.index:02d}-{_slug(run.topology.name)}-{_slug(run.spec or run.algorithm)}-{_slug(run.model.spec.split(',')[0])}"
        rdir.mkdir()
        _write_json(rdir / "topology.json", run.topology.to_dict())
        if self.servers:  # the analysis judges the clocks' error bound against the sync times
            _write_json(rdir / "cluster.json", self.cluster_info)
        if calib:
            _write_json(rdir / "calibration.json", calib)
        if getattr(run, "probe", None):  # the fit this run was planned with: its verdict is the analysis's
            _write_json(rdir / analysis.LINK_PROBE_FILE, run.probe)
        meta = {"status": "running", "error": None, "started": time.time()}
        _write_json(rdir / "run.json", meta)
        groups = base.get(run.algorithm).groups(run.plan)
        job = write_job(run, cfg, rdir, groups)
        self.log(f"-- {run.label}: {run.workers} workers"
                 + (f" + {run.servers} servers" if run.servers else "")
                 + f", {run.model.bytes / 2**20:.2f} MiB gradients, {cfg.warmup}+{cfg.iters} iterations")
        topo = run.topology
        sw_intfs = [i.name for i in topo.intfs.values() if topo.nodes[i.node].kind == "switch"]
        drops_before = drop_counters(net, topo)
        bg = Background(net, topo, getattr(run, "background", None) or [], rdir, self.state, log=self.log)
        self.active.append(bg)
        workers = Workers(net, run, job, rdir, self.state, log=self.log, pool=self._pool_for(run, net))
        self.active.append(workers)
        capture = self._capture(net, rdir, sw_intfs)
        mon = None
        raised = {}
        remote_mons = []
        interrupted = None
        try:
            bg.start()  # concurrent jobs run before, during and after the workers
            if replan.needs_background(run):  # its planner packs what the flows leave: probe them, plan again
                replan.apply_background(run, bg.measure())
                write_job(run, cfg, rdir, base.get(run.algorithm).groups(run.plan))  # before any worker reads it
            meta["cpu_probe"] = cpuprobe.measure()  # this machine's speed now, before its workers compute
            meta["machine"] = cpuprobe.machine()  # and what it is: CPU, kernel, package versions
            # ovs-vswitchd's send buffer: what every switch egress queue of this server holds at most
            # together before OVS drops without counting (docs/FIDELITY.md #1, #23)
            meta["machine"]["ovs_send_buffer_bytes"] = ovs_send_buffer()
            workers.start()
            connect_s = workers.wait_connected(cfg.timeout)
            # capture and CPU monitor cover the iterations only: start-up (torch imports,
            # Gloo's connection set-up) stays out of both
            self.active.append(capture.start())
            raised = switch_priority.apply(cfg.switch_priority, ovs_pid())
            meta["switch_priority"] = {"policy": cfg.switch_priority, "threads_raised": len(raised)}
            mon = CpuMonitor(workers.pids).start()
            remote_mons = self._remote_monitors(rdir)
            (rdir / "go").touch()
            meta["connect_seconds"] = round(connect_s, 2)
            workers.wait(cfg.timeout, run.label, on_tick=self._fault_hook(net, run))
            meta.update(status="ok")
        except WorkerFailure as e:
            msg = str(e)
            if self.fault:
                msg += (f"; link {self.fault['link_down']} <-> {self.fault['peer']} was taken down "
                        f"{self.fault['at_s']:.1f} s into the run (fault injection)")
            meta.update(status="failed", error=msg)
            self.log(f"  FAILED: {msg}")
        except (KeyboardInterrupt, Interrupted) as e:
            # keep the run: its finished iterations are measured like any other's
            interrupted = e
            meta.update(status="failed", error=f"interrupted ({e or 'SIGINT'})")
            self.log(f"  interrupted ({e or 'SIGINT'}): stopping the workers and the capture, keeping what finished")
        finally:
            if mon:
                _write_json(rdir / "cpu.json", mon.stop())
            switch_priority.restore(raised)
            for m in remote_mons:
                try:
                    m.stop()
                except Exception as e:  # the verdict says the CPU there was not measured
                    self.log(f"  the CPU monitor on {m.server.name} did not stop: {e}")
            workers.stop()
            self.active.remove(workers)
            bg.stop()
            self.active.remove(bg)
            cap = capture.stop()
            if capture in self.active:
                self.active.remove(capture)
            try:
                cap["queue_drops"] = drop_delta(drops_before, drop_counters(net, topo))
            except Exception as e:  # counters are evidence, not a reason to lose the run
                cap["queue_drops"] = {"error": str(e)}
            _write_json(rdir / "capture.json", cap)
            if self.servers:
                meta["clock_corrected_ranks"] = self._correct_clocks(net, run, rdir)
            meta["finished"] = time.time()
            _write_json(rdir / "run.json", meta)
        self._collect()  # the previous run's analysis, which ran while this one measured
        if meta["status"] == "ok" and interrupted is None and self.cfg.analyse_in_background:
            self.log(f"  analysing {rdir.name} (in the background, during the next run)")
            self._analyse_later(run, rdir)
            return "ok", None
        self.log(f"  analysing {rdir.name}")
        try:
            try:
                rec = analysis.analyze_run(rdir)
            except Interrupted as e:  # the signal came while analysing: later ones are ignored, redo it
                interrupted = interrupted or e
                rec = analysis.analyze_run(rdir)
        except Exception as e:
            if interrupted is None:
                raise
            # interrupted before the run had its files: list it anyway
            rec = {"topology": run.topology.name, "algorithm": run.algorithm, "status": "failed",
                   "error": f"{meta['error']}; not analysed: {type(e).__name__}: {e}".splitlines()[0]}
        self._record(run, rdir, rec)
        if interrupted is not None:
            raise interrupted
        return rec["status"], rec.get("error")

    def _fault_hook(self, net, run):
        fault = self.cfg.link_down
        if not fault:
            return None
        intf = fault["link"]
        peer = run.topology.peer(intf).name
        node_a, node_b = run.topology.intfs[intf].node, run.topology.intfs[peer].node
        fired = []

        def tick(elapsed):
            if not fired and elapsed >= float(fault.get("after_s", 0)):
                net.net.configLinkStatus(node_a, node_b, "down")
                fired.append(elapsed)
                self.fault = {"link_down": intf, "peer": peer, "at_s": elapsed, "run": run.label}
                self.log(f"  fault: link {intf} <-> {peer} taken down at {elapsed:.1f} s")
                _write_json(self.out / "faults.json", self.fault)
        return tick


def throughput(summary: dict, wall_seconds: float) -> dict:
    """How much of the experiment's wall time its runs spent in iterations: `measured_seconds`
    from the first backward to the last result of every run, warmup included (its bytes are
    captured and verified like the others'; issue #6 §6 counted them so), and
    `timed_seconds` without warmup (the iterations whose times are reported). The rest is
    start-up, network, calibration, probes, analysis and teardown (target: at most 25% in the
    default experiment)."""
    runs = summary.get("runs", [])
    measured = sum(r.get("iterations_span_seconds") or r.get("jct_seconds") or 0.0 for r in runs)
    timed = sum(r.get("jct_seconds") or 0.0 for r in runs)
    return {"wall_seconds": round(wall_seconds, 2), "measured_seconds": round(measured, 2),
            "timed_seconds": round(timed, 2),
            "overhead_fraction": round(1 - measured / wall_seconds, 4) if wall_seconds > 0 else None,
            "overhead_fraction_without_warmup": round(1 - timed / wall_seconds, 4) if wall_seconds > 0 else None}


def _route_dev(ip: str) -> str | None:
    """This machine's interface toward `ip` (the underlay a cluster's tunnels take)."""
    out = subprocess.run(["ip", "-o", "route", "get", ip], capture_output=True, text=True).stdout.split()
    return out[out.index("dev") + 1] if "dev" in out else None


class _Stoppable:
    """Something the teardown stops by calling `stop`."""

    def __init__(self, stop):
        self.stop = stop


def run_experiment(cfg, runs, log=print, servers=None) -> Path:
    return Experiment(cfg, runs, log, servers=servers).run()
