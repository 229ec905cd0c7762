"""Fork one process per rank, collect what each reports, fail loudly: the parallel tier's harness.

A child is `target(*make_args(rank), out)` and must put ("ok", rank, result) or
("error", rank, traceback) on `out`. Every algorithm's localhost test uses this, so a
new algorithm's test only writes its child.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def spawn_ranks(world: int, target, make_args, timeout_s: float) -> dict:
    """Run `world` forked ranks; returns {rank: result}; asserts every rank succeeded."""
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=target, args=(*make_args(r), out)) for r in range(world)]
    for p in procs:
        p.start()
    results, errors = {}, []
    try:
        deadline = time.time() + timeout_s
        while len(results) + len(errors) < world:
            status, rank, payload = out.get(timeout=max(1, deadline - time.time()))
            (results.__setitem__(rank, payload) if status == "ok" else errors.append(f"rank {rank}:\n{payload}"))
    except queue.Empty:
        errors.append(f"timed out after {timeout_s} s; finished ranks: {sorted(results)}")
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()
    assert not errors, "\n".join(errors)
    assert [p.exitcode for p in procs] == [0] * world
    return results


def written_bytes() -> int | None:
    """Bytes this process has written to files and sockets (`wchar` of /proc/self/io)."""
    try:
        with open("/proc/self/io") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("wchar"))
    except (OSError, StopIteration):
        return None


def run_worker_processes(job_path, world: int, nics: str = "lo", timeout: float = 60) -> tuple[list, list]:
    """`python -m workloads.worker --job JOB --rank R --nics NICS` for every rank, as the runner
    starts them (on localhost); -> (return codes, [(stdout, stderr)]). Killed past `timeout`."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [subprocess.Popen([sys.executable, "-m", "workloads.worker", "--job", str(job_path), "--rank", str(r),
                               "--nics", nics], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for r in range(world)]
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=timeout))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [p.returncode for p in procs], outputs


def jobs_child(rank, jobs, out):
    """A rank that runs `jobs` (job.json dicts) one after another through the real worker loop
    on `lo`, each logging to its own log_dir: the child of every worker-loop test."""
    import traceback

    from workloads import worker
    from workloads.eventlog import EventLog

    try:
        for job in jobs:
            log = EventLog.for_rank(job["log_dir"], rank)
            worker.run(job, rank, ["lo"], log)
        out.put(("ok", rank, None))
    except BaseException:
        out.put(("error", rank, traceback.format_exc()))
