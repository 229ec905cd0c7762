"""What `syncbed project` projects: the sweep (every --topo with every --algo, or an experiment
file's runs planned as `syncbed run` plans them), the measured runs it is checked against, and
the loop that simulates each projection and writes the results folder.

    Sweep(topo=["fattree,k=8", "fattree,k=16"], algo=["ring,gloo"])      (time against P)
    Sweep(measured="docs/results/default")                               (simulated vs measured)

`Sweep` holds the command's options (the CLI, emulation/cli.py, fills it from argparse; a
script may build one); `prepare_all` checks every projection and refuses, in one line
(ValueError), what cannot be simulated before any is; `run` simulates the prepared ones one
after the other and writes summary.json (after each, so partial results stay) and the report
(emulation/report/projection.py). The simulation itself is `core` (emulation/simulator/core.py).
"""
from __future__ import annotations

import dataclasses
import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from emulation.simulator import calibration, core, fanin
from emulation.simulator import platform as simgrid_platform
from emulation.simulator.core import Prepared, Request, TooLarge, prepare, prepare_planned, project, simulable
from workloads.algorithms import base


@dataclass
class Sweep:
    """The options of one `syncbed project` command (the CLI's defaults are these)."""

    experiment: str | None = None  # an experiment file: its runs, planned as syncbed run plans them
    topo: list | None = None  # topology specs (a sweep over sizes when several)
    algo: list | None = None  # algorithm specs, `ring,ps` is two (as syncbed run's --algo)
    workers: int | None = None  # None: every host minus servers
    servers: int = 0
    mb: float = 4.0  # gradient MiB (one layer) when no model
    model: str | None = None  # a model of the registry (per-layer sizes and backward times)
    alpha: float | None = None  # all-reduce start-up a, seconds (layer-wise planners; with beta)
    beta: float | None = None  # all-reduce seconds per byte b
    # seconds per message round (core.simulated_form): a number for every algorithm, or a list of
    # `--round-latency` values, S and/or ALGO=S (an executor's own start-up per round, base.per_algorithm)
    round_latency: float | list = 0.0
    # seconds per flow into a step's busiest NIC beyond the first (core.simulated_form's incast):
    # a number for every algorithm, or a list of `--incast` values, S and/or ALGO=S
    incast: float | list = 0.0
    incast_past_slack: bool = False  # charge it only past each sync's slack (core.past_slack); False: every step
    # efficiency of n flows into one NIC (emulation/simulator/fanin.py; 1: off): a number for every
    # algorithm, or a list of `--fan-in` values, E and/or ALGO=E (an algorithm's own, fanin.parse)
    fan_in: float | list = 1.0
    # e_o: the same efficiency on an oversubscribed switch-to-switch link (fanin.oversubscribed_links;
    # 1: off), every algorithm's
    oversubscribed: float = 1.0
    # a validation's fitted L, e, own L, incast start-up and e_o, each charged where calibration.py
    # says ("cubic" or "bbr"); instead of round_latency, incast, fan_in and oversubscribed
    calibration: str | None = None
    # cost models of the sync's compute, `KEY=C0:C1` (costs.parse); with `measured`, a run's own
    # logged means stand for the keys not given here
    compute: list | None = None
    bw: float = 1000.0  # Mbit/s on every link
    ecmp: str = "hash"
    placement: str = "ordered"
    mode: str = "driver"  # core.MODES
    reduce: str = "auto"  # core.REDUCE_MODES: one communication per class of flows (symmetry.py)
    max_memory_gb: float | None = None  # refuse above this estimate (None: MemAvailable)
    max_minutes: float = 60.0  # refuse above this CPU-time estimate
    skip_too_large: bool = False  # in a sweep, skip (and name) what the estimates refuse
    measured: str | None = None  # a results folder of the same experiment: simulated against measured
    out: str | None = None  # results folder (None: results/project-<time>)
    skipped: list = field(default_factory=list)  # what was not simulated and why (summary.json "skipped")
    # the options given on the command line that an experiment file's runs take instead of the
    # file's (OVERRIDES: as syncbed run's); {} otherwise, and refused with a measured folder
    overrides: dict = field(default_factory=dict)


# Sweep option -> the experiment file's option it replaces (config.load), as syncbed run's do
OVERRIDES = {"topo": "topologies", "algo": "algorithms", "workers": "workers", "servers": "servers",
             "model": "model", "bw": "bw", "ecmp": "ecmp", "placement": "placement", "mb": None}


def _fmt(x, unit="s"):
    return "-" if x is None else f"{x:.4f} {unit}"


def requests(s: Sweep, measured: dict) -> list[tuple[Request, object]]:
    """The command's projections: every topology with every algorithm (run None), or the
    experiment file's runs (config.validate's PlannedRun, planned exactly as `syncbed run`
    plans them, and as its measured run was once measured: `as_measured`)."""
    from topologies import spec

    lat, lat_of = round_latencies(s.round_latency)
    inc, inc_of = incasts(s.incast)
    fan_in, fan_in_of = fanin.parse(s.fan_in, base.registry())
    oversub = s.oversubscribed
    if not 0 < oversub <= 1:
        raise ValueError(f"--oversubscribed {s.oversubscribed!r} is not an efficiency; give a number in (0, 1] "
                         "(1: no loss on oversubscribed links)")
    cal = calibrated(s)

    def charges(algorithm: str, topology: str, layer_sizes) -> dict:
        """round_latency, fan_in, incast and oversubscribed of one projection: the calibration's, else the options'."""
        if cal is not None:
            c = calibration.parameters(cal, algorithm, topology, sum(layer_sizes) * base.DTYPE_BYTES)
            return {"round_latency": c.round_latency, "fan_in": c.fan_in, "incast": c.incast,
                    "incast_bytes": c.incast_bytes, "incast_past_slack": c.incast_past_slack,
                    "incast_one_input_free": c.incast_one_input_free, "incast_flow_share": c.incast_flow_share,
                    "oversubscribed": c.oversubscribed}
        return {"fan_in": fan_in_of.get(algorithm, fan_in), "round_latency": lat_of.get(algorithm, lat),
                "incast": inc_of.get(algorithm, inc), "incast_past_slack": s.incast_past_slack,
                "oversubscribed": oversub}
    given = given_costs(s.compute)
    limits = dict(mode=s.mode, max_memory=s.max_memory_gb * 2**30 if s.max_memory_gb else None,
                  max_seconds=s.max_minutes * 60, reduce=s.reduce,  # L, fan_in, incast, oversubscribed: charges()
                  compute=tuple(sorted(given.items())), compute_source="given (--compute)" if given else "")
    if s.experiment:
        from emulation import config

        typed = dict(s.overrides)  # (not `given`: that is the typed cost models above)
        if typed and s.measured:
            raise ValueError(f"--measured simulates the measured run as it ran: drop "
                             f"{', '.join('--' + k for k in typed)}")
        if "mb" in typed:
            raise ValueError(f"--mb {typed['mb']:g} is for --topo/--algo; with an experiment file give "
                             f"--model synthetic,mb={typed['mb']:g}")
        cfg = config.load(s.experiment, **{OVERRIDES[k]: v for k, v in typed.items()})
        runs = config.validate(cfg)
        out = []
        for run in runs:
            m = measured.get((run.topology.name, run.spec or run.algorithm, run.model.spec))
            extra = dict(limits, **charges(run.algorithm, run.topology.name, run.model.layer_sizes))
            if m is not None:
                as_measured(run, m, cfg)
                executed(run, m, s.measured)
                extra.update(replayed(base.get(run.algorithm), m, s.measured, given),
                             plan_source=run.plan_source, replanned_differs=tuple(run.replanned_differs))
            req = Request(run.topology.name, run.spec or run.algorithm, run.workers, run.servers,
                          bw=cfg.bw, ecmp=cfg.ecmp, placement=cfg.placement, **extra)
            out.append((req, run))
        return out
    if not s.topo or not s.algo:
        raise ValueError("give an experiment file, --measured with a results folder, or --topo and --algo")
    link = None
    if (s.alpha is None) != (s.beta is None):
        raise ValueError("--alpha and --beta go together (an all-reduce of m bytes takes alpha + beta * m)")
    if s.alpha is not None:
        if s.alpha < 0 or s.beta < 0:
            raise ValueError(f"--alpha {s.alpha} and --beta {s.beta} must be >= 0")
        link = {"alpha": s.alpha, "beta": s.beta, "source": "given (--alpha, --beta)"}
    reqs = []
    for topo in s.topo:
        spec.parse(topo)
        for n, o in base.parse_algos(s.algo):
            req = Request(topo, base.spec_of(n, o), s.workers, s.servers, s.mb, s.bw, s.ecmp, s.placement,
                          model=s.model, link=link, **limits)
            reqs.append((dataclasses.replace(req, **charges(n, topo, core.layer_sizes(req))), None))
    return reqs


def calibrated(s: Sweep) -> dict | None:
    """The calibration `s` names (calibration.load), or None; one line (ValueError) for an unknown
    one or one given with what it sets."""
    if s.calibration is None:
        return None
    typed = [o for o, v, default in (("--round-latency", s.round_latency, 0.0), ("--incast", s.incast, 0.0),
                                     ("--incast-past-slack", s.incast_past_slack, False),
                                     ("--fan-in", s.fan_in, 1.0), ("--oversubscribed", s.oversubscribed, 1.0))
             if v not in (None, [], default)]
    if typed:
        raise ValueError(f"--calibration {s.calibration} sets {', '.join(typed)} itself; give either the calibration "
                         "or the values")
    return calibration.load(s.calibration)


def round_latencies(values) -> tuple[float, dict]:
    """(L for every algorithm, {algorithm: its own L}) from `--round-latency` values: S (seconds per
    message round, every algorithm's, default 0) and ALGO=S (an executor whose rounds start up
    slower than a ring's: BML's stages, docs/PROJECTION.md "Fan-in")."""
    return base.per_algorithm(values, base.registry(), "--round-latency", "a number of seconds >= 0",
                              lambda x: 0 <= x < float("inf"), 0.0)


def incasts(values) -> tuple[float, dict]:
    """(incast start-up for every algorithm, {algorithm: its own}) from `--incast` values: S
    (seconds per flow into a step's busiest NIC beyond the first, default 0) and ALGO=S (PS's,
    fitted with CUBIC in the hosts: docs/PROJECTION.md "Fan-in")."""
    return base.per_algorithm(values, base.registry(), "--incast", "a number of seconds >= 0",
                              lambda x: 0 <= x < float("inf"), 0.0)


def given_costs(texts) -> dict:
    """`--compute KEY=C0:C1` options -> {key: CostModel}; one line (ValueError) for a bad value or a
    key no registered algorithm declares (`Algorithm.compute`)."""
    from emulation.simulator import costs

    declared = sorted({c.key for a in base.registry().values() for c in a.compute})
    out = {}
    for text in texts or ():
        key, model = costs.parse(text)
        if key not in declared:
            raise ValueError(f"--compute {text!r}: no algorithm declares a compute {key!r}; valid: {', '.join(declared)}")
        if key in out:
            raise ValueError(f"--compute {key} is given twice")
        out[key] = model
    return out


# the report's and summary.json's words for a measured run's own compute means
REPLAY = "the measured run's logged figures, the slowest rank's per sync where logged (replay)"


def replayed(algo: base.Algorithm, m: dict, folder: str | None, given: dict) -> dict:
    """What a measured run adds to its projection's Request: the figures of its declared
    `Compute`s it logged (summary.json), as constant costs, for every serial one (`Compute.serial`:
    its executor does it between its messages, so its sync is its flows plus it and replaying it
    is honest) that `--compute` does not give: the slowest rank's per sync (`<key>_slowest`,
    `Algorithm.figures`), since the sync waits for it, where the run logged it, else the mean;
    and, for a data-dependent algorithm, its ranks' logs, so its projection replays every
    counted sync's logged bytes."""
    from emulation.simulator import costs

    def figure(key):
        for k in (f"{key}_slowest", key):
            if isinstance(m.get(k), (int, float)):
                return float(m[k])
        return None

    means = {c.key: costs.CostModel(figure(c.key)) for c in algo.compute
             if c.serial and c.key not in given and figure(c.key) is not None}
    out = {}
    if means:
        out.update(compute=tuple(sorted({**given, **means}.items())),
                   compute_source=REPLAY + (" and given (--compute)" if given else ""))
    if algo.data_dependent and folder and m.get("dir") and m.get("syncs_counted"):
        out.update(logs=str(Path(folder) / m["dir"] / "workers"), syncs=int(m["syncs_counted"]),
                   warmup=int(m.get("warmup") or 0))
    return out


def as_measured(run, m: dict, cfg) -> None:
    """Plan `run` (in place) as the measured run `m` was planned once its runner had measured:
    the all-reduce a, b it measured (layer-wise planners, and the real-setting scaling of sizes
    and compute, replan.apply_link) and its background flows' probed rates (forest)."""
    from emulation import replan
    from workloads.linkmodel import LinkModel

    # the link the runner measured (stand_in.link): with a real setting's dilation_x, the run's
    # alpha_seconds is the charged x a_e, which apply_link would dilate a second time
    measured_link = (m.get("stand_in") or {}).get("link") or {"alpha": m.get("alpha_seconds"),
                                                               "beta": m.get("beta_seconds_per_byte")}
    if measured_link.get("alpha") is not None and measured_link.get("beta") is not None \
            and (cfg.real_setting or "link" in base.get(run.algorithm).needs):
        link = LinkModel(float(measured_link["alpha"]), float(measured_link["beta"]),
                         source="the measured run's summary.json")
        replan.apply_link(run, link, cfg.real_setting)
    probed = {(f.get("src"), f.get("dst")): f.get("measured_mbps") for f in m.get("background_flows") or []}
    if replan.needs_background(run) and all(probed.get((f["src"], f["dst"])) is not None for f in run.background):
        replan.apply_background(run, [{**f, "measured_mbps": probed[(f["src"], f["dst"])]} for f in run.background])


PLAN_BOOKKEEPING = ("link", "startup_charge_s", "planner_seconds")  # a plan's notes that move no byte or time


def executed(run, m: dict, folder) -> None:
    """Simulate the plan the measured run executed (its job.json, what its workers ran), not a
    plan made again today: a planner's answer can move with the libraries under it (the forest's
    planner packed other trees for some runs on a CPU whose np.exp differed by an ulp, before
    `forest._exp`; docs/forest.md) and with its own fixes, and the projection of a measured run stands for that run. `run.plan_source` says
    which, and where today's plan differs beyond `PLAN_BOOKKEEPING`'s notes, the keys it differs in.
    A folder without job.json (none kept) keeps today's plan."""
    run.plan_source, run.replanned_differs = "planned again (no job.json)", []
    job = Path(folder) / str(m.get("dir") or "") / "job.json"
    if not m.get("dir") or not job.is_file():
        return
    plan = json.loads(job.read_text()).get("plan")
    if not isinstance(plan, dict) or plan.get("algorithm") != run.plan.get("algorithm"):
        return
    today = json.loads(json.dumps(run.plan, default=str))
    run.replanned_differs = sorted(k for k in set(plan) | set(today)
                                   if k not in PLAN_BOOKKEEPING and plan.get(k) != today.get(k))
    run.plan, run.plan_source = plan, "the measured run's (job.json)"


def measured_runs(folder) -> dict:
    """(topology, algo_spec, model) -> run record of a measured results folder's summary.json."""
    path = Path(folder) / "summary.json"
    if not path.is_file():
        raise ValueError(f"--measured {folder}: no summary.json there (give a results folder of syncbed run)")
    runs = json.loads(path.read_text()).get("runs", [])
    return {(r.get("topology"), r.get("algo_spec", r.get("algorithm")), r.get("model")): r for r in runs}


def resolve_measured(s: Sweep) -> dict:
    """With `measured` and no experiment file, the measured folder's own config.yaml (as
    syncbed run saved it) becomes the experiment; returns the measured runs ({} without)."""
    if s.measured and not s.experiment:
        if s.topo or s.algo:
            raise ValueError("--measured simulates the measured folder's own experiment: drop --topo and --algo")
        s.experiment = str(Path(s.measured) / "config.yaml")
        if not Path(s.experiment).is_file():
            raise ValueError(f"--measured {s.measured}: no config.yaml there (give a results folder of syncbed run)")
    return measured_runs(s.measured) if s.measured else {}


def prepare_all(s: Sweep, measured: dict, log=print) -> list[Prepared]:
    """Every projection of the command, checked (one line, ValueError) before any is simulated."""
    from topologies import spec

    preps, built = [], {}
    for req, run in requests(s, measured):
        if run is not None:
            why = simulable(base.get(run.algorithm))
            if why:  # an experiment file's run with no simulated form: named and skipped
                log(f"skipping {run.topology.name} {run.spec or run.algorithm}: {why}")
                s.skipped.append({"topology": run.topology.name, "algo_spec": run.spec or run.algorithm,
                                  "model": run.model.spec, "why": why})
                continue
            preps.append(prepare_planned(run, req))
            continue
        try:
            if req.topo not in built:
                core.check_buildable(req.topo, req.max_memory)
                log(f"building {req.topo} ...")
                built[req.topo] = simgrid_platform.indexed(spec.build(req.topo, bw=req.bw, ecmp=req.ecmp))
            log(f"planning {req.algo} on {req.topo} ...")  # a planner may take minutes (the forest's at 432 workers)
            started = time.perf_counter()
            preps.append(prepare(req, built[req.topo]))
            log(f"  planned and checked in {time.perf_counter() - started:.1f} s")
        except base.NotAccepted as e:  # a sweep skips (and names) the sizes an algorithm does not take
            if len(s.topo) < 2:
                raise
            log(f"skipping {req.topo} {req.algo}: {e}")
            s.skipped.append({"topology": req.topo, "algo_spec": req.algo, "model": req.model or f"synthetic,mb={req.mb:g}",
                              "why": str(e)})
        except TooLarge as e:
            if not s.skip_too_large:
                raise
            log(f"skipping {req.topo} {req.algo}: {e}")
            s.skipped.append({"topology": req.topo, "algo_spec": req.algo, "model": req.model or f"synthetic,mb={req.mb:g}",
                              "why": str(e)})
    return preps


def validation_rows(runs: list, measured: dict) -> list[dict]:
    """Simulated against measured, per run of a measured folder (matched by topology, spec, model)."""
    rows = []
    for r in runs:
        m = measured.get((r["topology"], r["algo_spec"], r["model"]))
        if m is None:
            continue
        meas = m.get("median_sync_seconds")
        sim = r["median_sync_seconds"]
        row = {"topology": r["topology"], "algo_spec": r["algo_spec"], "model": r["model"], "workers": r["workers"],
               "measured_seconds": meas, "simulated_seconds": sim,
               "sim_over_measured": sim / meas if sim is not None and meas else None,
               "bound_seconds": r["bound_seconds"],
               "measured_over_bound": meas / r["bound_seconds"] if meas and r["bound_seconds"] else None,
               "faithful": m.get("faithful"), "status": m.get("status")}
        if r.get("simulated_iteration_seconds") is not None and m.get("iteration_seconds"):
            mi = statistics.median(m["iteration_seconds"])
            row.update(measured_iteration_seconds=mi, simulated_iteration_seconds=r["simulated_iteration_seconds"],
                       iteration_sim_over_measured=r["simulated_iteration_seconds"] / mi if mi else None)
        rows.append(row)
    return rows


def run(s: Sweep, preps: list[Prepared], measured: dict, started: str, log=print,
        stopped=lambda: False) -> tuple[Path, dict]:
    """Simulate every prepared projection in order and write the results folder: summary.json
    (after each projection: a stopped sweep keeps what it did) and report.md with its plots.
    Returns (folder, summary); summary["status"] is "failed" with the error ("interrupted" on
    KeyboardInterrupt, which a SIGTERM handler may raise) when the loop stopped. `stopped()`,
    asked after each projection, says a stop was signalled whose KeyboardInterrupt may have been
    swallowed (Python ignores one raised in a fork handler, as when SIGTERM lands while the
    SimGrid child is forked): that projection is then dropped as interrupted."""
    out = Path(s.out) if s.out else Path("results") / f"project-{time.strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True, exist_ok=True)
    summary = {"status": "running", "error": None, "simulated": True,
               "experiment": s.experiment or f"project {' '.join(s.topo)} {' '.join(s.algo)}",
               "started": started, "finished": None, "runs": [], "networks": [], "skipped": s.skipped}
    if s.calibration:  # every run's own charges are in its record; this says where they come from
        summary["calibration"] = calibration.load(s.calibration)
    runs = summary["runs"]
    try:
        for i, p in enumerate(preps, 1):
            log(f"[{i}/{len(preps)}] {p.topo.name} {p.spec} {p.model}: {len(p.hosts)} hosts, "
                f"estimated {p.cpu_seconds:.1f} CPU s")
            rec = project(p, log=log)
            if stopped():
                raise KeyboardInterrupt
            sim = rec["simulator"]
            log(f"  simulated {_fmt(rec['median_sync_seconds'])}, busiest-link bound {_fmt(rec['bound_seconds'])} "
                f"(x{rec['sync_over_bound']:.3f}); bytes per NIC "
                f"{'= closed form' if rec['payload_equal'] else '!= closed form'} "
                f"({len(rec['payload_bytes_expected'])} NICs); simulator {sim['wall_seconds']:.1f} s wall "
                f"(routes {sim['route_seconds']:.1f}, platform {sim['platform_seconds']:.1f}, "
                f"run {sim['run_seconds']:.1f})")
            runs.append(rec)
            (out / "summary.json").write_text(json.dumps(summary, indent=1))  # partial results stay
        summary["status"] = "ok"
    except KeyboardInterrupt:
        summary.update(status="failed", error="interrupted")
    except (RuntimeError, OSError, TooLarge) as e:  # TooLarge: a reduction left too many classes
        summary.update(status="failed", error=str(e).splitlines()[0])
    summary["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    if measured:
        summary["validation"] = validation_rows(runs, measured)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    from emulation.report import projection as report

    report.write(out, summary)
    return out, summary
