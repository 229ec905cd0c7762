"""`python -m emulation.localtrain EXPERIMENT.yaml`: convergence of sync algorithms on localhost.

How well a sparsified algorithm trains does not depend on the network (issue 8, "Real
training and convergence"), so this runs without root or Mininet: Gloo on `lo`, one
`python -m workloads.worker` process per rank, the very worker code of the emulation runs,
in real-training mode (workloads/training.py). For each worker count P of the file and
each algorithm spec it trains `iters` iterations, reads rank 0's held-out accuracy and loss
from its log, and writes `results/<time>-<name>/`: `summary.json`, `convergence.png`
(accuracy and loss against iterations, one panel per P, one line per algorithm),
`report.md` (final accuracy per algorithm and P, and each sparse algorithm's gap to the
dense one: the issue's target is gTop-k within 1 percentage point), and `runs/` with every
run's job.json and worker logs.

Duties are split as in the rest of emulation/: `load_config` validates the file and plans
every run before a process starts (a bad spec is one line, exit 2); `run_one` executes one
run (job file, processes, timeout, cleanup of its own processes by handle); `read_run`,
`compare`, `plot_curves` and `report_markdown` are pure over files and records.

Checks: the first `check_iters` iterations of each run are checked against the algorithm's
reference over every worker's real gradient (`reference`, or the dense sum), computed by
every rank; afterwards each rank computes only its own gradient and nothing is checked (for
error-feedback algorithms the oracle's residuals stop at check_iters too). Every rank logs
its parameters' SHA-1 at the end: `identical_model` says they all agree.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

TARGET_PP = 1.0  # issue 8: gTop-k's final held-out accuracy within 1 percentage point of dense
PLOT = "convergence.png"


@dataclass
class TrainConfig:
    name: str = "convergence"
    description: str = ""
    model: str = "resnet20"  # a key of workloads.models.TRAIN_MODELS
    workers: list = field(default_factory=lambda: [4])
    algorithms: list = field(default_factory=lambda: ["ring"])
    iters: int = 100
    batch: int = 8  # per worker
    lr: float = 0.1
    lr_milestones: list = field(default_factory=list)  # MultiStepLR: lr x lr_gamma at each
    lr_gamma: float = 0.1
    check_iters: int | None = 3  # None: every iteration checked (O(P) backward passes per rank)
    eval_every: int = 10
    seed: int = 0
    timeout: float = 900.0  # seconds per run
    out: str = "results"


@dataclass
class Run:
    index: int
    workers: int
    algorithm: str  # registry name
    spec: str  # canonical spec (base.spec_of)
    dense: bool  # the algorithm's result is the dense sum (no reference of its own)
    plan: dict
    layers: list  # [[name, numel, backward_s]] of the model spec

    @property
    def slug(self) -> str:
        text = "".join(c if c.isalnum() else "-" for c in self.spec).strip("-")
        return f"{self.index:02d}-p{self.workers}-{text}"


# --------------------------------------------------------------------------- configuration


def _int(value, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be an int >= {minimum}, got {value!r}")
    return value


def _positive(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be a number > 0, got {value!r}")
    return float(value)


def load_config(path: str | os.PathLike, overrides: dict | None = None) -> tuple[TrainConfig, list]:
    """(config, runs) from an experiment file; ValueError (one line) on anything wrong.
    Every run is planned here, so a bad algorithm spec stops everything before it starts."""
    from workloads import models  # noqa: PLC0415 (torch only once the file parsed)
    from workloads.algorithms import base  # noqa: PLC0415

    try:
        raw = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"cannot read {path}: {err}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: an experiment file is a mapping of keys to values")
    raw.update({k: v for k, v in (overrides or {}).items() if v is not None})
    valid = [f.name for f in TrainConfig.__dataclass_fields__.values()]
    unknown = sorted(set(raw) - set(valid))
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(valid)}")
    cfg = TrainConfig(**raw)
    if cfg.model not in models.TRAIN_MODELS:
        raise ValueError(f"model {cfg.model!r} cannot be trained; valid: {', '.join(models.TRAIN_MODELS)}")
    workers = cfg.workers if isinstance(cfg.workers, list) else [cfg.workers]
    cfg.workers = [_int(p, "workers", 1) for p in workers]
    cfg.iters = _int(cfg.iters, "iters", 1)
    cfg.batch = _int(cfg.batch, "batch", 1)
    cfg.eval_every = _int(cfg.eval_every, "eval_every", 1)
    cfg.seed = _int(cfg.seed, "seed", 0)
    if cfg.check_iters is not None:
        cfg.check_iters = _int(cfg.check_iters, "check_iters", 0)
    cfg.lr, cfg.lr_gamma = _positive(cfg.lr, "lr"), _positive(cfg.lr_gamma, "lr_gamma")
    cfg.timeout = _positive(cfg.timeout, "timeout")
    milestones = cfg.lr_milestones if isinstance(cfg.lr_milestones, list) else [cfg.lr_milestones]
    milestones = [_int(m, "lr_milestones", 1) for m in milestones if m is not None]
    if milestones != sorted(set(milestones)) or any(m >= cfg.iters for m in milestones):
        raise ValueError(f"lr_milestones must be increasing iterations in 1..{cfg.iters - 1}, got {milestones}")
    cfg.lr_milestones = milestones
    model = models.load(cfg.model)  # the spec's layers: the job's, and the planners' sizes
    sizes = tuple(layer.numel for layer in model.layers)
    runs = []
    for p in cfg.workers:
        trainer = models.DigitsTrainer(0, p, cfg.seed, cfg.batch, cfg.model)  # refuses P x batch > the data
        if list(sizes) not in (trainer.layer_sizes(False), trainer.layer_sizes(True)):
            raise ValueError(f"model {cfg.model}: the spec's layers are not the trained network's")
        for name, opts in base.parse_algos(cfg.algorithms):
            ctx = base.PlanContext(p, sizes, options=dict(opts),
                                   layers=tuple((l.name, l.numel, l.backward_s) for l in model.layers))
            algo, plan = base.plan_for(name, ctx)
            runs.append(Run(len(runs) + 1, p, algo.name, base.spec_of(name, opts), algo.reference is None,
                            plan, model.to_list()))
    return cfg, runs


# --------------------------------------------------------------------------- execution


def write_job(cfg: TrainConfig, run: Run, run_dir: Path) -> Path:
    """job.json as the emulation's runner writes it (docs/ARCHITECTURE.md), training on."""
    from workloads.algorithms import base  # noqa: PLC0415

    groups = base.get(run.algorithm).groups(run.plan)
    job = {
        "algorithm": run.algorithm, "algo_spec": run.spec, "plan": run.plan,
        "groups": [{"id": g.id, "ranks": list(g.ranks), "nic": g.nic} for g in groups],
        "workers": run.workers, "servers": 0, "world": run.workers,
        "model": {"spec": cfg.model, "layers": run.layers},
        "iters": cfg.iters, "warmup": 0, "seed": cfg.seed, "dilation": 0.0,
        "store": str(run_dir / "store"), "log_dir": str(run_dir / "workers"),
        "timeout_s": cfg.timeout, "hosts": ["localhost"] * run.workers,
        "train": True, "train_model": cfg.model, "batch": cfg.batch, "lr": cfg.lr,
        "lr_milestones": cfg.lr_milestones, "lr_gamma": cfg.lr_gamma,
        "check_iters": cfg.check_iters, "eval_every": cfg.eval_every,
    }
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "job.json"
    path.write_text(json.dumps(job, indent=1))
    return path


def _rank(argv: list, out_path: str) -> None:
    """A forked rank: its stdout and stderr to its own file, then `workloads.worker.main`,
    exactly what `python -m workloads.worker` runs."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler (main)
    fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    from workloads import worker  # noqa: PLC0415

    code = worker.main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # like the worker's own exits: no parent's atexit handlers in a forked rank


def run_one(cfg: TrainConfig, run: Run, run_dir: Path) -> dict:
    """Train one run: P worker processes on `lo`; returns its record (`read_run`) with
    `wall_seconds` (first process started to last one ended) and `status`.

    The ranks are forked from this process, which has torch, scikit-learn and the digits
    loaded already (`load_config`): importing them costs about 3 s of CPU per process, a
    minute of a 2-core machine for P=16, spent again for every run. Each rank then runs
    `workloads.worker.main` with its own arguments, as the emulation's `python -m
    workloads.worker` does (the parallel tests fork their ranks the same way)."""
    import multiprocessing  # noqa: PLC0415

    if run_dir.exists():  # a stopped session's attempt: its FileStore keys would mislead the rendezvous
        shutil.rmtree(run_dir)
    job = write_job(cfg, run, run_dir)
    (run_dir / "workers").mkdir(exist_ok=True)
    fork = multiprocessing.get_context("fork")
    procs = []
    start = time.perf_counter()
    try:
        for rank in range(run.workers):
            argv = ["--job", str(job), "--rank", str(rank), "--nics", "lo"]
            procs.append(fork.Process(target=_rank, args=(argv, str(run_dir / "workers" / f"rank{rank}.out")),
                                      name=f"rank{rank}"))
            procs[-1].start()
        deadline = time.monotonic() + cfg.timeout
        for p in procs:
            p.join(timeout=max(0.1, deadline - time.monotonic()))
        codes = [p.exitcode for p in procs]
    finally:
        for p in procs:  # only our own processes, by handle
            if p.pid is not None and p.exitcode is None:
                p.kill()
                p.join()
    wall = time.perf_counter() - start
    record = {"algorithm": run.algorithm, "spec": run.spec, "dense": run.dense, "workers": run.workers,
              **read_run(run_dir / "workers", run.workers), "wall_seconds": round(wall, 2),
              "dir": f"runs/{run.slug}"}
    if None in codes:
        record["errors"].insert(0, f"timed out after {cfg.timeout:g} s")
    elif any(codes):
        record["errors"].insert(0, f"worker exit codes {codes}")
    if not record["errors"] and record["iterations"] != cfg.iters:
        record["errors"].append(f"rank 0 logged {record['iterations']} of {cfg.iters} iterations")
    record["status"] = "failed" if record["errors"] else "ok"
    return record


# --------------------------------------------------------------------------- reading logs


def read_run(log_dir: Path, workers: int) -> dict:
    """One run's record from its worker logs (pure over files, `worker.read_logs`): rank 0's
    curve, whether every checked iteration of every rank was correct, and whether the
    ranks' final parameters agree."""
    from workloads.worker import read_logs  # noqa: PLC0415

    logs, torn = read_logs(log_dir)
    curve = {"iter": [], "accuracy": [], "loss": []}
    checked, wrong, digests, errors, iterations, max_err = set(), [], {}, [], 0, 0.0
    t_first = t_last = None
    errors += [f"rank {rank}: no log" for rank in range(workers) if rank not in logs]
    errors += [f"rank {rank}: {n} torn log line(s)" for rank, n in torn.items()]
    for rank, events in logs.items():
        for ev in events:
            kind = ev.get("event")
            if kind == "iter":
                if rank == 0:
                    iterations += 1
                    t_first = ev["t_start"] if t_first is None else min(t_first, ev["t_start"])
                t_last = ev["t_done"] if t_last is None else max(t_last, ev["t_done"])
                if ev.get("checked", "correct" in ev):
                    checked.add(ev["iter"])
                    max_err = max(max_err, float(ev.get("max_abs_err", 0.0)))
                    if not ev.get("correct"):
                        wrong.append((rank, ev["iter"]))
            elif kind == "train" and rank == 0:  # accuracy is k/360: 4 decimals say it all
                curve["iter"].append(ev["iter"])
                curve["accuracy"].append(round(ev["accuracy"], 4))
                curve["loss"].append(round(ev["loss"], 5))
            elif kind == "trained":
                digests[rank] = ev["params_sha1"]
            elif kind == "error":
                errors.append(f"rank {rank}: {ev.get('message', '')[:200]}")
    return {
        "iterations": iterations,
        "final_accuracy": curve["accuracy"][-1] if curve["accuracy"] else None,
        "final_loss": curve["loss"][-1] if curve["loss"] else None,
        "curve": curve,
        "checked_iterations": len(checked),
        "correct": bool(checked) and not wrong,
        "wrong": [{"rank": r, "iter": i} for r, i in wrong[:20]],
        "max_abs_err": max_err,
        "identical_model": len(digests) == workers and len(set(digests.values())) == 1,
        "train_seconds": round(t_last - t_first, 2) if t_first is not None else None,
        "errors": errors,
    }


def compare(records: list, target_pp: float = TARGET_PP) -> list:
    """Each non-dense run's final accuracy against the dense run of the same P, in
    percentage points (positive: better than dense)."""
    out = []
    for rec in records:
        if rec["dense"] or rec["final_accuracy"] is None:
            continue
        dense = next((d for d in records if d["dense"] and d["workers"] == rec["workers"]
                      and d["final_accuracy"] is not None), None)
        if dense is None:
            continue
        gap = 100.0 * (rec["final_accuracy"] - dense["final_accuracy"])
        out.append({"workers": rec["workers"], "spec": rec["spec"], "dense": dense["spec"],
                    "gap_pp": round(gap, 2), "within_target": gap >= -target_pp})
    return out


# --------------------------------------------------------------------------- outputs


def _label(rec: dict) -> str:
    return f"{rec['spec']} (dense)" if rec["dense"] else rec["spec"]


def plot_curves(records: list, path: Path, title: str, milestones=()) -> Path | None:
    """Held-out accuracy (top) and loss (bottom) against iterations, one column per P,
    one line per algorithm spec (the same colour in every panel); dotted lines where the
    learning rate drops (`milestones`)."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    from matplotlib.figure import Figure  # noqa: PLC0415

    shown = [r for r in records if r["curve"]["iter"]]
    if not shown:
        return None
    ps = sorted({r["workers"] for r in shown})
    specs = list(dict.fromkeys(r["spec"] for r in records))
    fig = Figure(figsize=(4.2 * len(ps), 6.8), dpi=110)
    axes = fig.subplots(2, len(ps), squeeze=False, sharex="col")
    handles = {}
    for col, p in enumerate(ps):
        acc_ax, loss_ax = axes[0][col], axes[1][col]
        for rec in (r for r in shown if r["workers"] == p):
            color = f"C{specs.index(rec['spec']) % 10}"
            c = rec["curve"]
            handles[rec["spec"]], = acc_ax.plot(c["iter"], c["accuracy"], color=color, label=_label(rec))
            loss_ax.plot(c["iter"], c["loss"], color=color, label=_label(rec))
        acc_ax.set(title=f"P = {p}", ylim=(0, 1))
        loss_ax.set(xlabel="iteration", yscale="log")
        for ax in (acc_ax, loss_ax):
            ax.grid(alpha=0.3)
            for m in milestones:
                ax.axvline(m, color="0.5", linestyle=":", linewidth=1)
    axes[0][0].set_ylabel("held-out accuracy")
    axes[1][0].set_ylabel("held-out cross-entropy")
    order = [s for s in specs if s in handles]  # every algorithm once, whichever panel has it
    fig.legend([handles[s] for s in order], [h.get_label() for h in (handles[s] for s in order)],
               loc="lower center", ncol=len(order), fontsize=8, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path)
    return path


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def report_markdown(summary: dict) -> str:
    """report.md: settings, the final accuracy table, the gap to dense, checks, the plot."""
    cfg, runs = summary["config"], summary["runs"]
    ps = sorted({r["workers"] for r in runs})
    specs = list(dict.fromkeys(r["spec"] for r in runs))
    by = {(r["spec"], r["workers"]): r for r in runs}
    lines = [f"# Convergence `{summary['experiment']}`", "", f"**Status: {summary['status']}**", ""]
    if summary.get("description"):
        lines += [summary["description"], ""]
    lines += ["## Settings", "",
              f"- model: `{cfg['model']}`, {summary['model_summary']}, trained on scikit-learn's digits "
              f"(1,437 training, 360 held-out images)",
              f"- {cfg['iters']} iterations, batch {cfg['batch']} per worker, SGD lr {cfg['lr']:g}"
              + (f" x {cfg['lr_gamma']:g} at iteration{'s' if len(cfg['lr_milestones']) > 1 else ''} "
                 f"{', '.join(map(str, cfg['lr_milestones']))}"
                 if cfg["lr_milestones"] else "") + f", seed {cfg['seed']} (same initial model and data "
              f"order for every algorithm); held-out split evaluated by rank 0 every {cfg['eval_every']} "
              "iterations and after the last",
              "- localhost: Gloo on `lo`, one process per rank running `workloads.worker.main` (the "
              "emulation's worker code; forked once torch and the digits are loaded), "
              f"{summary['cores']} cores; started {summary['started']}; runs one after the other, "
              f"{summary['runs_wall_seconds'] / 60:.1f} min in all (each run: first rank started to last "
              "one ended)"
              + (f"; the sessions ran {summary['wall_seconds'] / 60:.1f} min, stopped runs included "
                 "(stopped while an emulation measured, resumed with --resume)"
                 if summary["wall_seconds"] > summary["runs_wall_seconds"] + 60 else ""), "",
              "## Final held-out accuracy", "",
              "| algorithm | " + " | ".join(f"P={p}" for p in ps) + " |",
              "|---|" + "---|" * len(ps)]
    for spec in specs:
        dense = any(r["dense"] for r in runs if r["spec"] == spec)
        lines.append(f"| {spec}{' (dense)' if dense else ''} | "
                     + " | ".join(_pct(by[(spec, p)]["final_accuracy"]) if (spec, p) in by else "-" for p in ps)
                     + " |")
    lines += ["", "Final held-out loss:", "",
              "| algorithm | " + " | ".join(f"P={p}" for p in ps) + " |", "|---|" + "---|" * len(ps)]
    for spec in specs:
        lines.append(f"| {spec} | " + " | ".join(
            f"{by[(spec, p)]['final_loss']:.3f}" if (spec, p) in by and by[(spec, p)]["final_loss"] is not None
            else "-" for p in ps) + " |")
    images = summary.get("held_out_images")
    lines += ["", f"## Against dense (target: within {TARGET_PP:g} percentage point)", "",
              *([f"One held-out image is {100 / images:.2f} pp of the {images}.", ""] if images else []),
              "| algorithm | P | final accuracy - dense's | within target |", "|---|---|---|---|"]
    for c in summary["comparison"]:
        lines.append(f"| {c['spec']} | {c['workers']} | {c['gap_pp']:+.1f} pp | "
                     f"{'yes' if c['within_target'] else 'no'} |")
    gtopk = [c for c in summary["comparison"] if c["spec"].split(",")[0] == "gtopk"]
    if gtopk:
        ok = [c for c in gtopk if c["within_target"]]
        lines += ["", f"gTop-k is within {TARGET_PP:g} pp of dense at {len(ok)} of {len(gtopk)} worker counts"
                  + (f" (not at P = {', '.join(str(c['workers']) for c in gtopk if not c['within_target'])})"
                     if len(ok) < len(gtopk) else "") + "."]
    lines += ["", "## Runs", "",
              "| # | P | algorithm | iterations | final accuracy | final loss | checked iterations "
              "| correct | identical model | wall s | status |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(runs, 1):
        loss = "-" if r["final_loss"] is None else f"{r['final_loss']:.3f}"
        lines.append(f"| {i} | {r['workers']} | {r['spec']} | {r['iterations']} | {_pct(r['final_accuracy'])} "
                     f"| {loss} | {r['checked_iterations']} | {'yes' if r['correct'] else 'no'} "
                     f"| {'yes' if r['identical_model'] else 'no'} | {r['wall_seconds']:.0f} | {r['status']} |")
    check = cfg["check_iters"]
    lines += ["", "Checks: " + (
        "every iteration" if check is None else f"the first {check} iterations of each run")
        + " against the algorithm's reference over every worker's real gradient (tolerance of "
        "`DataParallelDigits.matches`); "
        + ("after that each rank computes only its own gradient and nothing is compared (the reference's "
           "error-feedback residuals are not updated past that iteration, so the check cannot resume). "
           if check is not None else "")
        + "Identical model: every rank's final parameters have the same SHA-1."]
    problems = [f"- run {i} ({r['spec']}, P={r['workers']}): {e}" for i, r in enumerate(runs, 1) for e in r["errors"]]
    if problems:
        lines += ["", "## Problems", "", *problems]
    if summary.get("plot"):
        lines += ["", "## Curves", "", f"![held-out accuracy and loss]({summary['plot']})"]
    return "\n".join(lines) + "\n"


def write_outputs(out: Path, summary: dict) -> None:
    summary["comparison"] = compare(summary["runs"])
    # the runs' own time, without attempts stopped before a resume
    summary["runs_wall_seconds"] = round(sum(r["wall_seconds"] for r in summary["runs"]), 1)
    title = (f"{summary['config']['model']} on digits: held-out accuracy and loss"
             + (" (dotted: lr x {:g})".format(summary["config"]["lr_gamma"]) if summary["config"]["lr_milestones"]
                else ""))
    try:
        milestones = summary["config"]["lr_milestones"]
        summary["plot"] = PLOT if plot_curves(summary["runs"], out / PLOT, title, milestones) else None
    except Exception as err:  # a figure that fails never loses the numbers
        summary["plot"] = None
        summary.setdefault("problems", []).append(f"plot: {type(err).__name__}: {err}")
    tmp = out / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=1))
    tmp.replace(out / "summary.json")
    (out / "report.md").write_text(report_markdown(summary))


def _open_results(cfg: TrainConfig, runs: list, resume) -> tuple[Path, dict]:
    """(folder, summary): a new `<out>/<time>-<name>/`, or the folder of an earlier session
    of the same experiment (`resume`), whose finished runs are kept."""
    from workloads import models  # noqa: PLC0415

    if resume is not None:
        out = Path(resume).resolve()
        try:
            summary = json.loads((out / "summary.json").read_text())
        except (OSError, ValueError) as err:
            raise ValueError(f"cannot resume {out}: {err}") from None
        mine, theirs = asdict(cfg), dict(summary.get("config") or {})
        mine.pop("out"), theirs.pop("out", None)
        if mine != theirs:
            changed = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            raise ValueError(f"cannot resume {out}: it was made with other settings ({', '.join(changed)})")
        return out, summary
    stamp = time.strftime("%Y%m%d-%H%M%S")
    slug = "".join(c if c.isalnum() else "-" for c in cfg.name).strip("-")
    out = Path(cfg.out).resolve() / f"{stamp}-{slug}"
    out.mkdir(parents=True, exist_ok=False)
    (out / "config.yaml").write_text(yaml.safe_dump(asdict(cfg), sort_keys=False))
    summary = {"status": "running", "experiment": cfg.name, "description": cfg.description,
               "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "finished": None, "wall_seconds": 0.0,
               "sessions": [], "cores": os.cpu_count(), "config": asdict(cfg),
               "model_summary": models.TRAIN_MODELS[cfg.model].summary,
               "held_out_images": int(models.DigitsTrainer(0, 1, cfg.seed, 1, cfg.model).y_test.numel()),
               "parameters": sum(layer[1] for layer in runs[0].layers) if runs else 0, "runs": []}
    return out, summary


def experiment(cfg: TrainConfig, runs: list, log=print, resume=None) -> Path:
    """Run every run one after the other (two at once would share the cores and time
    each other) and write the results folder; returns it. With `resume` (a folder of an
    earlier, stopped session of the same experiment) the runs it finished are kept and
    only the others run; `wall_seconds` is the sum of the sessions' times."""
    import torch  # noqa: PLC0415

    # The ranks are forked from here: no intra-op thread pool may exist in this process
    # (a forked OpenMP pool can hang), and each worker computes with one thread anyway.
    torch.set_num_threads(1)
    out, summary = _open_results(cfg, runs, resume)
    kept = {(r["spec"], r["workers"]): r for r in summary["runs"] if r["status"] == "ok"}
    earlier = float(summary.get("wall_seconds") or 0.0)  # the earlier sessions' time
    session = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "finished": None, "wall_seconds": 0.0,
               "runs": 0}
    summary.update(status="running", runs=[], finished=None)
    summary.setdefault("sessions", []).append(session)
    start = time.perf_counter()
    log(f"results: {out}" + (f" (resumed: {len(kept)} runs kept)" if resume is not None else ""))
    try:
        for run in runs:
            rec = kept.get((run.spec, run.workers))
            if rec is None:
                rec = run_one(cfg, run, out / "runs" / run.slug)
                session["runs"] += 1
            summary["runs"].append(rec)
            acc = "-" if rec["final_accuracy"] is None else f"{rec['final_accuracy']:.3f}"
            loss = "-" if rec["final_loss"] is None else f"{rec['final_loss']:.3f}"
            verdict = "correct" if rec["correct"] else "WRONG" if rec["checked_iterations"] else "unchecked"
            log(f"[{run.index}/{len(runs)}] P={run.workers} {run.spec}: accuracy {acc}, loss {loss}, "
                f"{verdict} ({rec['checked_iterations']} checked), {rec['wall_seconds']:.0f} s"
                + (" (kept)" if rec is kept.get((run.spec, run.workers)) else "")
                + (f", FAILED: {rec['errors'][0]}" if rec["errors"] else ""), flush=True)
            session["wall_seconds"] = round(time.perf_counter() - start, 1)
            summary["wall_seconds"] = round(earlier + session["wall_seconds"], 1)
            write_outputs(out, summary)  # a stopped experiment keeps what it did
        failed = [r for r in summary["runs"] if r["status"] != "ok"]
        summary["status"] = "failed" if failed else "ok"
    except BaseException:
        # kept runs not reached again stay in the summary, for the next resume
        summary["runs"] += [r for r in kept.values() if r not in summary["runs"]]
        summary["status"] = "interrupted"
        raise
    finally:
        session["finished"] = summary["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        session["wall_seconds"] = round(time.perf_counter() - start, 1)
        summary["wall_seconds"] = round(earlier + session["wall_seconds"], 1)
        write_outputs(out, summary)
    return out


def _interrupted(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m emulation.localtrain",
                                     description=__doc__.splitlines()[0].split(": ", 1)[1])
    parser.add_argument("experiment", help="experiment YAML (e.g. experiments/convergence_gtopk.yaml)")
    parser.add_argument("--out", help="results folder (default: the file's `out`, else results/)")
    parser.add_argument("--iters", type=int, help="override the file's iters")
    parser.add_argument("--resume", metavar="DIR",
                        help="a results folder of an earlier, stopped session of the same experiment: "
                             "keep its finished runs, run the others")
    args = parser.parse_args(argv)
    # A background job ignores SIGINT; SIGTERM must still stop the ranks (run_one's cleanup).
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        import torch  # noqa: PLC0415

        torch.set_num_threads(1)  # before load_config builds a network: see experiment()
        try:
            cfg, runs = load_config(args.experiment, {"out": args.out, "iters": args.iters})
            if args.resume is not None:
                _open_results(cfg, runs, args.resume)  # refuses another experiment's folder
        except ValueError as err:
            print(f"localtrain: {err}", file=sys.stderr)
            return 2
        print(f"{cfg.name}: {len(runs)} runs ({cfg.model}, P = {', '.join(map(str, cfg.workers))}; "
              f"{', '.join(dict.fromkeys(r.spec for r in runs))}), {cfg.iters} iterations each", flush=True)
        out = experiment(cfg, runs, log=lambda *a, **k: print(*a, **{"flush": True, **k}), resume=args.resume)
    except KeyboardInterrupt:
        print("localtrain: interrupted; a results folder keeps the runs that finished", file=sys.stderr)
        return 130
    except Exception as err:  # one line for the operator, the traceback for debugging
        print(f"localtrain: error: {type(err).__name__}: {err}", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return 1
    summary = json.loads((out / "summary.json").read_text())
    print(f"done in {summary['wall_seconds'] / 60:.1f} min: {out / 'report.md'}")
    return 0 if summary["status"] == "ok" else 1

if __name__ == "__main__":
    sys.exit(main())
