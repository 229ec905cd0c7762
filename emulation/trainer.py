"""`syncbed train EXPERIMENT.yaml`: convergence of sync algorithms, trained on localhost.

How well a sparsified algorithm trains does not depend on the network (issue 8, "Real
training and convergence"), so this runs without root or Mininet: Gloo on `lo`, one rank per
process running `workloads.worker.main`, the very worker code of the emulation, in
real-training mode (workloads/training.py). For each worker count P of the file and each
algorithm spec it trains `iters` iterations, reads rank 0's held-out accuracy and loss from
its log, and writes `results/<time>-<name>/`: `summary.json`, `convergence.png` and
`report.md` (emulation/report/convergence.py: final accuracy per algorithm and P, and each
sparse algorithm's gap to the dense one: the issue's target is gTop-k within 1 percentage
point), and `runs/` with every run's job.json and worker logs.

What it shares with `syncbed run`: the experiment file and its checks (emulation/config.py:
`load(path, defaults=TRAIN_DEFAULTS)`, `validate_local` plans every run before a process
starts, a bad spec is one line and exit 2), the job writer (emulation/workers.py `job_for`:
the same `Job`, on `lo`, with no compute time added and no go file), the worker, and its event
log (workloads/eventlog.py `read_logs`). Its own: `run_one` executes one run (job file,
processes forked from here, timeout, cleanup of its own processes by handle), `read_run` is
pure over one run's logs, `experiment` runs them all and keeps what finished (`resume`).

Checks: the first `check_iters` iterations of each run are checked against the algorithm's
reference over every worker's real gradient (`reference`, or the dense sum), computed by
every rank; afterwards each rank computes only its own gradient and nothing is checked (for
error-feedback algorithms the oracle's residuals stop at check_iters too). Every rank logs
its parameters' SHA-1 at the end: `identical_model` says they all agree.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import yaml

from emulation.config import LocalRun, RunConfig
from emulation.report import convergence

# what summary.json's "config" and the results folder's config.yaml keep: every key training
# reads (config.yaml is a training file again: `syncbed train results/<folder>/config.yaml`)
TRAIN_KEYS = ("name", "description", "model", "workers", "algorithms", "iters", "warmup", "batch", "lr",
              "lr_milestones", "lr_gamma", "check_iters", "eval_every", "seed", "timeout", "out")


def settings(cfg: RunConfig, runs: list[LocalRun]) -> dict:
    """The training keys of `cfg` (TRAIN_KEYS), `workers` as the list of counts the runs use."""
    out = {k: getattr(cfg, k) for k in TRAIN_KEYS}
    out.update(workers=list(dict.fromkeys(r.workers for r in runs)),
               algorithms=list(dict.fromkeys(r.spec for r in runs)), lr_milestones=list(cfg.lr_milestones),
               timeout=float(cfg.timeout))
    return out


# --------------------------------------------------------------------------- execution


def write_job(cfg: RunConfig, run: LocalRun, run_dir: Path) -> Path:
    """job.json as the emulation's runner writes it (workers.job_for), for `lo`: no profiled
    compute time is added to the real backward pass (dilation 0), and the ranks start as soon
    as they are connected (no go file: nothing to start around them)."""
    from emulation.workers import job_for
    from workloads.algorithms import base

    job = job_for(run, cfg, run_dir, base.get(run.algorithm).groups(run.plan))
    job.dilation, job.go_file = 0.0, None
    run_dir.mkdir(parents=True, exist_ok=True)
    return job.write(run_dir / "job.json")


def _rank(argv: list, out_path: str) -> None:
    """A forked rank: its stdout and stderr to its own file, then `workloads.worker.main`,
    exactly what `python -m workloads.worker` runs."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler (syncbed train's)
    fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    from workloads import worker  # noqa: PLC0415

    code = worker.main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # like the worker's own exits: no parent's atexit handlers in a forked rank


def run_one(cfg: RunConfig, run: LocalRun, run_dir: Path) -> dict:
    """Train one run: P worker processes on `lo`; returns its record (`read_run`) with
    `wall_seconds` (first process started to last one ended) and `status`.

    The ranks are forked from this process, which has torch, scikit-learn and the digits
    loaded already (`config.validate_local`): importing them costs about 3 s of CPU per
    process, a minute of a 2-core machine for P=16, spent again for every run. Each rank then
    runs `workloads.worker.main` with its own arguments, as the emulation's `python -m
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
    total = cfg.warmup + cfg.iters
    if not record["errors"] and record["iterations"] != total:
        record["errors"].append(f"rank 0 logged {record['iterations']} of {total} iterations")
    record["status"] = "failed" if record["errors"] else "ok"
    return record


# --------------------------------------------------------------------------- reading logs


def read_run(log_dir: Path, workers: int) -> dict:
    """One run's record from its worker logs (pure over files, `eventlog.read_logs`): rank 0's
    curve, whether every checked iteration of every rank was correct, and whether the
    ranks' final parameters agree."""
    from workloads.eventlog import read_logs, training_curve  # noqa: PLC0415

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
            elif kind == "trained":
                digests[rank] = ev["params_sha1"]
            elif kind == "error":
                errors.append(f"rank {rank}: {ev.get('message', '')[:200]}")
    for it, loss, accuracy, _ in training_curve({0: logs.get(0, [])}):  # accuracy is k/360: 4 decimals say it all
        curve["iter"].append(it)
        curve["accuracy"].append(round(accuracy, 4))
        curve["loss"].append(round(loss, 5))
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


# --------------------------------------------------------------------------- the experiment


def open_results(cfg: RunConfig, runs: list[LocalRun], resume=None) -> tuple[Path, dict]:
    """(folder, summary): a new `<out>/<time>-<name>/`, or the folder of an earlier session
    of the same experiment (`resume`), whose finished runs are kept. ValueError (one line)
    for a folder that is not one, or was made with other settings."""
    from workloads.training import TRAIN_MODELS, DigitsTrainer  # noqa: PLC0415

    mine = settings(cfg, runs)
    if resume is not None:
        out = Path(resume).resolve()
        try:
            summary = json.loads((out / "summary.json").read_text())
        except (OSError, ValueError) as err:
            raise ValueError(f"cannot resume {out}: {err}") from None
        theirs = dict(summary.get("config") or {})
        changed = sorted(k for k in set(mine) | set(theirs) if k != "out" and mine.get(k) != theirs.get(k))
        if changed:
            raise ValueError(f"cannot resume {out}: it was made with other settings ({', '.join(changed)})")
        return out, summary
    stamp = time.strftime("%Y%m%d-%H%M%S")
    slug = "".join(c if c.isalnum() else "-" for c in cfg.name).strip("-")
    out = Path(cfg.out).resolve() / f"{stamp}-{slug}"
    out.mkdir(parents=True, exist_ok=False)
    (out / "config.yaml").write_text(yaml.safe_dump(mine, sort_keys=False))
    summary = {"status": "running", "experiment": cfg.name, "description": cfg.description,
               "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "finished": None, "wall_seconds": 0.0,
               "sessions": [], "cores": os.cpu_count(), "config": mine,
               "model_summary": TRAIN_MODELS[cfg.model].summary,
               "held_out_images": int(DigitsTrainer(0, 1, cfg.seed, 1, cfg.model).y_test.numel()),
               "parameters": sum(layer.numel for layer in runs[0].model.layers) if runs else 0, "runs": []}
    return out, summary


def experiment(cfg: RunConfig, runs: list[LocalRun], log=print, resume=None) -> Path:
    """Run every run one after the other (two at once would share the cores and time
    each other) and write the results folder; returns it. With `resume` (a folder of an
    earlier, stopped session of the same experiment) the runs it finished are kept and
    only the others run; `wall_seconds` is the sum of the sessions' times."""
    import torch  # noqa: PLC0415

    # The ranks are forked from here: no intra-op thread pool may exist in this process
    # (a forked OpenMP pool can hang), and each worker computes with one thread anyway.
    torch.set_num_threads(1)
    out, summary = open_results(cfg, runs, resume)
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
                + (f", FAILED: {rec['errors'][0]}" if rec["errors"] else ""))
            session["wall_seconds"] = round(time.perf_counter() - start, 1)
            summary["wall_seconds"] = round(earlier + session["wall_seconds"], 1)
            convergence.write(out, summary)  # a stopped experiment keeps what it did
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
        convergence.write(out, summary)
    return out
