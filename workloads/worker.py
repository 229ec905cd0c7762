"""One rank of a sync job: `python -m workloads.worker --job job.json --rank R --nics a,b`,
or of every job the runner queues for it: `--pool DIR` (docs/ARCHITECTURE.md, "Pool mode").

Started by the runner inside a Mininet host (or on localhost by the parallel tests, NICs
`lo`), it only carries out what job.json says (`workloads/job.py`, the `Job` it reads):
builds the rank's process groups (`workloads.comm.Comm`), then for each of warmup + iters
iterations: its gradient source's gradient (`workloads/sources.py`: synthetic, real
training or none for a server, each with its oracle), a barrier (through the shared store,
not the network), backward (`GradientStream`), `algorithm.execute(plan, comm, stream, state)`
with one `SyncState` for the whole run, the source's check of the result, and a second barrier
(no rank prepares the next iteration while another still syncs this one). Everything it
observes goes to `log_dir/rank<R>.jsonl` (`workloads/eventlog.py`, the format): `start`,
one `iter` per iteration (with the bytes and messages it handed to `Comm.send` in that
iteration, per peer and NIC, and what the executor put in `state.observed`), executors'
`stage` events, then `done` or one `error`. Rank 0 prints `iter I/N rank 0 synced in
S.SSS s` per iteration.

Exit codes: 0 when every iteration ran (a wrong sum is reported in the log, not here),
3 for the injected crash (`"crash": {"rank", "iter"}`, fault injection for tests), 1 on
any error. Dedicated servers (ranks >= workers) hold no gradient: they pass zeros of the
full size and their `iter` events carry `"server": true` (nothing to check on them).

Real training (`"train": true`, workloads/training.py): the gradient is the rank's real one
of `train_model` (`lenet5`, the default, or `resnet20`; the job's model spec must name the
same network, unscaled) on scikit-learn's digits, with `batch`, `lr` (and `lr_milestones`,
`lr_gamma`: torch's MultiStepLR). The oracle is every worker's real gradient, which each
rank computes itself: O(W) backward passes per rank and iteration. `check_iters` N (default
null: every iteration) limits that to the first N iterations; afterwards a rank computes
its own gradient only and its `iter` events say `"checked": false` and carry no `correct`.
With error feedback the oracle's memory (every rank's residual) is not updated past N
either, so the check stops at N for good. Every replica still applies the synchronized
result, so the model stays identical on every rank: each worker rank ends with a `trained`
event holding its parameters' SHA-1. Rank 0 evaluates the held-out split after iteration
0, every `eval_every`-th (default 1) and the last, in `train` events (`loss`, `accuracy`).

DDP (`"ddp": true`, workloads/ddp_worker.py): the rank trains `train_model` as a user's
DistributedDataParallel script would, with the algorithm registered as its communication
hook (workloads/ddp_hooks.py) over this rank's NIC 0 group; same events, same oracle.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
import traceback

from workloads.eventlog import EventLog, sent_since
from workloads.job import Job

CRASH_EXIT = 3


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m workloads.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--job", help="job.json written by the runner")
    parser.add_argument("--pool", help="pool folder: run the jobs the runner queues there, one after another, "
                                       "until it writes `stop` (one Python and torch start-up for many runs)")
    parser.add_argument("--rank", required=True, type=int, help="global rank of this process")
    parser.add_argument("--nics", required=True, help="this host's interfaces, NIC 0 first, comma separated")
    args = parser.parse_args(argv)
    if bool(args.job) == bool(args.pool):
        parser.error("give exactly one of --job and --pool")
    return args


def job_layers(job: Job) -> list:
    """[(name, numel, backward_s)] in forward order: the job's own list, which the runner
    always fills; the model registry is only imported when the job trains a real model."""
    if job.train:
        from workloads.models.specs import load  # noqa: PLC0415 (only real training needs the model zoo)

        return [(l.name, l.numel, l.backward_s) for l in load(job.model.spec).layers]
    return job.layers


def host_name(nic0: str) -> str:
    # a Mininet interface names its host; on localhost (lo) fall back to the machine name
    from topologies.description import intf_node  # noqa: PLC0415

    return intf_node(nic0) or socket.gethostname()


def run(job: Job | dict, rank: int, nics: list, log: EventLog) -> None:
    """One job on this rank (`job`: a Job, or a job.json object, checked here)."""
    job = Job.from_json(job)
    if job.ddp:  # a DistributedDataParallel model with the algorithm as its hook
        from workloads.ddp_worker import run_ddp  # noqa: PLC0415

        return run_ddp(job, rank, nics, log)
    import torch  # after GLOO_SOCKET_IFNAME is set (main), before any Gloo device exists

    from workloads.algorithms import base
    from workloads.comm import Comm
    from workloads.sources import source_for

    torch.set_num_threads(1)  # 2 cores host every worker and OVS: one compute thread each
    if not 0 <= rank < job.world:
        raise ValueError(f"rank {rank} is outside the job's world 0..{job.world - 1}")
    algo = base.get(job.algorithm) if job.probe is None else None
    layers = job_layers(job)
    if algo is not None:
        base.check_plan(job.plan, job.world, sum(int(layer[1]) for layer in layers))
    source = source_for(job, rank, layers, algo.reference if algo is not None else None, log)
    state = base.SyncState(rank=rank, workers=job.workers, world=job.world, charged=dict(job.charged))
    comm = Comm(rank, job.world, job.store, nics, job.groups, timeout_s=job.timeout_s, sink=log.write)
    log.connected()
    wait_for_go(job.go_file, job.timeout_s)
    if job.probe is not None:  # measure the all-reduce cost model instead of iterating (runner: link model)
        from workloads.probe import measure_allreduce  # noqa: PLC0415

        points = measure_allreduce(comm, list(job.probe.sizes_bytes), job.probe.reps)
        if rank == 0:
            log.probe(points)
        comm.store_barrier("end")
        return
    total = job.warmup + job.iters
    for it in range(total):
        crash_here(job, rank, it, log)
        comm.iteration = it
        state.begin(it)
        stream, expected = source.gradient(it)
        sent_before, msgs_before = dict(comm.sent), dict(comm.messages)
        comm.store_barrier(f"iter{it}")
        stream.start()
        result = algo.execute(job.plan, comm, stream, state)
        t_done = time.time()
        stream.wait_all()  # t_ready exists even if an executor never waited for the last layer
        log.iteration(it, it < job.warmup, stream.t_start, stream.t_ready, t_done,
                      sent_since(comm.sent, comm.messages, sent_before, msgs_before), state.observed,
                      **source.check(result, expected))
        source.after(it, result)
        # everyone's sync has ended before anyone prepares the next iteration: a rank that
        # finished early (gTop-k's root, a PS) would otherwise build the next gradients and the
        # oracle's reference (O(workers x elements) on a checking rank) while the others still
        # move this iteration's bytes, taking the CPU ovs-vswitchd forwards them with (#21)
        comm.store_barrier(f"synced{it}")
        if rank == 0:
            # progress only: the run's sync time is over all ranks (workloads/eventlog.py)
            print(f"iter {it + 1}/{total} rank 0 synced in {t_done - stream.t_ready:.3f} s", flush=True)
    source.finish()
    comm.store_barrier("end")  # nobody closes its connections while a peer still receives from it


def crash_here(job: Job, rank: int, it: int, log: EventLog) -> None:
    """The injected crash (`job.crash`): like a killed process, no clean Gloo shutdown."""
    if job.crash is not None and job.crash.rank == rank and job.crash.iter == it:
        log.error(f"injected crash of rank {rank} at iter {it}")
        _exit(CRASH_EXIT)


def wait_for_go(path, timeout: float) -> None:
    """Wait until the runner creates `path` (its capture is on), so connection set-up stays
    out of the measurement. No path (localhost tests): go at once."""
    if not path:
        return
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > deadline:
            raise TimeoutError(f"the runner did not start the run within {timeout:.0f} s ({path} missing)")
        time.sleep(0.02)


_EXIT_FILE = None  # pool mode: where this rank writes the exit code of the job it runs


def _exit(code: int) -> None:
    """Leave the process with `code`; a pool worker first records it as its job's exit code."""
    if _EXIT_FILE:
        _write_exit(_EXIT_FILE, code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # Gloo threads may hang a normal exit


def _write_exit(path: str, code: int) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(code))
    os.replace(tmp, path)


def job_log_dir(job_path: str) -> str:
    """The job file's `log_dir`, read before the job is checked: a job that fails its check
    (`Job.from_json`, in `run`) still gets its log, its `error` event and its exit file."""
    with open(job_path) as f:
        raw = json.load(f)
    log_dir = raw.get("log_dir") if isinstance(raw, dict) else None
    if not isinstance(log_dir, str) or not log_dir:
        raise ValueError(f"{job_path}: job: log_dir={log_dir!r} is invalid: must be a non-empty string")
    return log_dir


def run_job(job_path: str, rank: int, nics: list) -> None:
    """One job: its log, `start`, the run, `done`; on any error an `error` event and exit 1."""
    log = None
    try:
        log = EventLog.for_rank(job_log_dir(job_path), rank)
        log.start(rank, host_name(nics[0]), os.getpid())
        run(Job.read(job_path), rank, nics, log)
        log.done()
    except BaseException as exc:  # one line for the operator, the traceback for the debug log
        message = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        if log is not None:
            log.error(message)
        print(f"worker rank {rank}: error: {message}", file=sys.stderr, flush=True)
        traceback.print_exc(file=sys.stderr)
        _exit(130 if isinstance(exc, KeyboardInterrupt) else 1)
    sys.stdout.flush()


POOL_IDLE_S = 1800.0  # a pool worker nobody gives a job for this long exits (an orphaned pool)


def serve_pool(folder: str, rank: int, nics: list) -> None:
    """Pool mode: run `folder/job<n>` (a file holding a job.json path) for n = 1, 2, ... until
    `folder/stop` exists. Each job's stdout goes to `log_dir/rank<R>.out` and its exit code
    to `log_dir/rank<R>.exit` (the runner reads these as it would a process's exit)."""
    global _EXIT_FILE
    import torch  # noqa: F401 (imported once for every job: the point of the pool)

    from workloads.algorithms import base  # noqa: F401

    seq = 1
    idle_since = time.time()
    while True:
        ticket = os.path.join(folder, f"job{seq}")
        if not os.path.exists(ticket):  # the queued jobs first, then `stop`
            if os.path.exists(os.path.join(folder, "stop")) or time.time() - idle_since > POOL_IDLE_S:
                return
            time.sleep(0.05)
            continue
        with open(ticket) as f:
            job_path = f.read().strip()
        log_dir = job_log_dir(job_path)
        os.makedirs(log_dir, exist_ok=True)
        _EXIT_FILE = os.path.join(log_dir, f"rank{rank}.exit")
        out = open(os.path.join(log_dir, f"rank{rank}.out"), "a", buffering=1)
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = out
        try:
            run_job(job_path, rank, nics)
        finally:
            sys.stdout, sys.stderr = saved
            out.close()
        _write_exit(_EXIT_FILE, 0)
        _EXIT_FILE = None
        seq += 1
        idle_since = time.time()


def main(argv=None) -> int:
    args = parse_args(argv)
    nics = [n for n in args.nics.split(",") if n]
    if not nics:
        print(f"worker rank {args.rank}: error: --nics names no interface", file=sys.stderr)
        return 1
    # Gloo reads this when it resolves addresses; without it rendezvous hangs in a Mininet
    # host, whose hostname resolves outside its namespace (docs/ENVIRONMENT.md).
    os.environ["GLOO_SOCKET_IFNAME"] = nics[0]
    if args.pool:
        serve_pool(args.pool, args.rank, nics)
    else:
        run_job(args.job, args.rank, nics)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
