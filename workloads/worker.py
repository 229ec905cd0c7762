"""One rank of a sync job: `python -m workloads.worker --job job.json --rank R --nics a,b`,
or of every job the runner queues for it: `--pool DIR` (docs/ARCHITECTURE.md, "Pool mode").

Started by the runner inside a Mininet host (or on localhost by the parallel tests, NICs
`lo`), it only carries out what job.json says (docs/ARCHITECTURE.md, "Worker job file"):
builds the rank's process groups (`workloads.comm.Comm`), then for each of warmup + iters
iterations: barrier (through the shared store, not the network), backward (`GradientStream` over the synthetic gradient),
`algorithm.execute(plan, comm, stream, state)` with one `SyncState` for the whole run, and a
check of the result against the algorithm's oracle: the dense sum computed locally
(`workloads.gradients`), or the algorithm's own `reference` over every worker's gradient,
which every rank rebuilds from the seed. Everything it observes goes to
`log_dir/rank<R>.jsonl`: `start`, one `iter` per iteration (with the bytes and messages it
handed to `Comm.send` in that iteration, per peer and NIC, and what the executor put in
`state.observed`), executors' `stage` events, then `done` or one `error`. Rank 0 prints
`iter I/N rank 0 synced in S.SSS s` per iteration.

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
import hashlib
import json
import os
import socket
import sys
import time
import traceback

CRASH_EXIT = 3
REQUIRED = ("algorithm", "plan", "workers", "world", "model", "iters", "store", "log_dir")


class EventLog:
    """The rank's JSONL log: one flushed line per event, so a killed run keeps what it did."""

    def __init__(self, path: str):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self._file = open(path, "a", buffering=1)

    def write(self, event: dict) -> None:
        self._file.write(json.dumps(event) + "\n")
        self._file.flush()


def read_logs(log_dir) -> tuple[dict, dict]:
    """The one reader of what `EventLog` wrote: ({rank: [event, ...]}, {rank: unparsable lines}).

    A worker killed mid-write leaves a torn last line; it is skipped and counted. Used by the
    analysis, the report and localtrain alike, so they read the same events."""
    from pathlib import Path  # noqa: PLC0415

    logs, bad = {}, {}
    for path in Path(log_dir).glob("rank*.jsonl"):
        suffix = path.stem[4:]
        if not suffix.isdigit():
            continue
        rank, events, torn = int(suffix), [], 0
        for line in path.read_text(errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                torn += 1
                continue
            if isinstance(event, dict):
                events.append(event)
        logs[rank] = events
        if torn:
            bad[rank] = torn
    return dict(sorted(logs.items())), bad


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


def read_job(path: str) -> dict:
    with open(path) as f:
        job = json.load(f)
    missing = [k for k in REQUIRED if k not in job]
    if missing:
        raise ValueError(f"{path} misses key(s) {', '.join(missing)}; a job needs {', '.join(REQUIRED)}")
    return job


def job_layers(job: dict) -> list:
    """[(name, numel, backward_s)] in forward order: the job's own list, which the runner
    always fills; the model registry is only imported when the job trains a real model."""
    if job.get("train"):
        from workloads import models  # noqa: PLC0415 (only real training needs the model zoo)

        return [(l.name, l.numel, l.backward_s) for l in models.load(job["model"]["spec"]).layers]
    layers = job["model"].get("layers")
    if not layers:
        raise ValueError("job model has no layers list ([[name, numel, backward_s], ...])")
    return [tuple(layer) for layer in layers]


def host_name(nic0: str) -> str:
    # a Mininet interface names its host; on localhost (lo) fall back to the machine name
    from topologies.description import intf_node  # noqa: PLC0415

    return intf_node(nic0) or socket.gethostname()


def run(job: dict, rank: int, nics: list, log: EventLog) -> None:
    if job.get("ddp"):  # a DistributedDataParallel model with the algorithm as its hook
        from workloads.ddp_worker import run_ddp  # noqa: PLC0415

        return run_ddp(job, rank, nics, log)
    import torch  # after GLOO_SOCKET_IFNAME is set (main), before any Gloo device exists

    from workloads.algorithms import base
    from workloads.comm import Comm
    from workloads.gradients import GradientStream, SyntheticGradients

    torch.set_num_threads(1)  # 2 cores host every worker and OVS: one compute thread each
    workers, world = int(job["workers"]), int(job["world"])
    if not 0 <= rank < world:
        raise ValueError(f"rank {rank} is outside the job's world 0..{world - 1}")
    algo = base.get(job["algorithm"]) if not job.get("probe") else None
    plan = job["plan"]
    groups = [base.GroupSpec(g["id"], tuple(g["ranks"]), int(g.get("nic", 0))) for g in job.get("groups", [])]
    layers = job_layers(job)
    size = sum(int(layer[1]) for layer in layers)
    if algo is not None:
        base.check_plan(plan, world, size)
    seed, dilation = int(job.get("seed", 0)), float(job.get("dilation", 1.0))
    warmup, iters = int(job.get("warmup", 0)), int(job["iters"])
    crash = job.get("crash") or {}
    is_worker = rank < workers
    trainer = None
    check_iters, eval_every = train_options(job) if job.get("train") else (None, 1)
    if job.get("train") and is_worker:
        from workloads.training import DataParallelDigits

        model = str(job.get("train_model", "lenet5"))
        trainer = DataParallelDigits(rank, workers, seed, int(job.get("batch", 32)), float(job.get("lr", 0.1)),
                                     model, [int(m) for m in job.get("lr_milestones") or ()],
                                     float(job.get("lr_gamma", 0.1)))
        if [int(layer[1]) for layer in layers] not in (trainer.layer_sizes(False), trainer.layer_sizes(True)):
            raise ValueError(f"train: the job's layers (model {job['model'].get('spec')!r}) are not those of "
                             f"train_model {model!r}; training needs model {model} unscaled")

    synthetic = SyntheticGradients(workers, size, seed, job.get("sparsity"))
    state = base.SyncState(rank=rank, workers=workers, world=world)
    reference = algo.reference if algo is not None else None
    # An oracle over every worker's gradient costs O(workers x elements) memory on each rank
    # that checks it; the runner may name the ranks that check (`oracle_ranks`), and every
    # other worker logs a digest of its result, which the analysis compares with theirs.
    oracle_ranks = job.get("oracle_ranks")
    checks_oracle = oracle_ranks is None or rank in oracle_ranks
    ref_memory: dict = {}  # the oracle's own state across iterations (e.g. every rank's residual)
    timeout = float(job.get("timeout_s", 120))
    comm = Comm(rank, world, job["store"], nics, groups, timeout_s=timeout, sink=log.write)
    log.write({"event": "connected", "t": time.time()})
    wait_for_go(job.get("go_file"), timeout)
    if job.get("probe"):  # measure the all-reduce cost model instead of iterating (runner: link model)
        from workloads.probe import measure_allreduce  # noqa: PLC0415

        probe = job["probe"]
        points = measure_allreduce(comm, [int(b) for b in probe["sizes_bytes"]], int(probe.get("reps", 3)))
        if rank == 0:
            log.write({"event": "probe", "points": points, "t": time.time()})
        comm.store_barrier("end")
        return
    total = warmup + iters
    for it in range(total):
        if crash and int(crash.get("rank", -1)) == rank and int(crash.get("iter", -1)) == it:
            log.write({"event": "error", "message": f"injected crash of rank {rank} at iter {it}", "t": time.time()})
            _exit(CRASH_EXIT)  # like a killed process: no clean Gloo shutdown
        comm.iteration = it
        state.begin(it)
        if is_worker:
            if trainer is not None:  # past check_iters: this rank's own gradient only, nothing checked
                checked = check_iters is None or it < check_iters
                inputs = trainer.all_gradients(it) if checked else None
            elif reference is not None or synthetic.sparse:
                inputs = synthetic.all_workers(it) if checks_oracle else None
            else:
                inputs = None  # the dense closed form needs nobody else's gradient
            if inputs is not None:
                values = inputs[rank].clone()
                expected = (reference or base.dense_reference)(plan, inputs, ref_memory)
            elif trainer is not None:
                values, expected = trainer.own_gradient(it), None
            elif reference is not None or synthetic.sparse:  # not an oracle rank
                values, expected = synthetic.mine(rank, it), None
            else:
                values, expected = synthetic.mine_and_sum(rank, it)
            stream = GradientStream(layers, values, dilation)
        else:
            expected, stream = None, GradientStream(layers, None, 0.0)
        sent_before, msgs_before = dict(comm.sent), dict(comm.messages)
        comm.store_barrier(f"iter{it}")
        stream.start()
        result = algo.execute(plan, comm, stream, state)
        t_done = time.time()
        stream.wait_all()  # t_ready exists even if an executor never waited for the last layer
        event = {"event": "iter", "iter": it, "warmup": it < warmup, "t_start": stream.t_start,
                 "t_ready": stream.t_ready, "t_done": t_done,
                 "sent": [[dst, nic, b - sent_before.get((dst, nic), 0),
                           comm.messages[(dst, nic)] - msgs_before.get((dst, nic), 0)]
                          for (dst, nic), b in sorted(comm.sent.items())
                          if b != sent_before.get((dst, nic), 0)]}
        if state.observed:
            event["observed"] = state.observed
        if trainer is not None and expected is None:
            event.update(checked=False)  # no `correct`: nothing was compared
        elif trainer is not None:
            ok, err = trainer.matches(result, expected)
            event.update(checked=True, correct=ok, max_abs_err=err)
        elif is_worker and expected is None:
            event.update(checked=False)
        elif is_worker:
            err = float((result - expected).abs().max()) if size else 0.0
            event.update(correct=err == 0.0, max_abs_err=err)
        else:
            event.update(correct=True, max_abs_err=0.0, server=True)
        if is_worker and oracle_ranks is not None:
            event["digest"] = hashlib.blake2b(result.contiguous().numpy().tobytes(), digest_size=8).hexdigest()
        log.write(event)
        if trainer is not None:
            trainer.apply(result, it)  # every replica, checked or not: all ranks stay identical
            if rank == 0 and (it == 0 or (it + 1) % eval_every == 0 or it == total - 1):
                loss, acc = trainer.evaluate()
                log.write({"event": "train", "iter": it, "loss": loss, "accuracy": acc, "t": time.time()})
        if rank == 0:
            # progress only: the run's sync time is over all ranks (emulation/analysis.py)
            print(f"iter {it + 1}/{total} rank 0 synced in {t_done - stream.t_ready:.3f} s", flush=True)
    if trainer is not None:  # equal on every rank when the replicas stayed identical
        log.write({"event": "trained", "iters": total, "params_sha1": trainer.digest(), "t": time.time()})
    comm.store_barrier("end")  # nobody closes its connections while a peer still receives from it


def train_options(job: dict) -> tuple:
    """(check_iters, eval_every) of a training job, checked: check_iters None means every
    iteration is checked against the oracle; eval_every 1, rank 0 evaluates after each."""
    check_iters, eval_every = job.get("check_iters"), job.get("eval_every", 1)
    if check_iters is not None and (isinstance(check_iters, bool) or not isinstance(check_iters, int)
                                    or check_iters < 0):
        raise ValueError(f"train: check_iters must be an int >= 0 (iterations checked against the "
                         f"oracle) or null (all), got {check_iters!r}")
    if isinstance(eval_every, bool) or not isinstance(eval_every, int) or eval_every < 1:
        raise ValueError(f"train: eval_every must be an int >= 1, got {eval_every!r}")
    return check_iters, eval_every


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


def run_job(job_path: str, rank: int, nics: list) -> None:
    """One job: its log, `start`, the run, `done`; on any error an `error` event and exit 1."""
    log = None
    try:
        job = read_job(job_path)
        log = EventLog(os.path.join(job["log_dir"], f"rank{rank}.jsonl"))
        log.write({"event": "start", "rank": rank, "host": host_name(nics[0]), "pid": os.getpid(),
                   "t": time.time()})
        run(job, rank, nics, log)
        log.write({"event": "done", "t": time.time()})
    except BaseException as exc:  # one line for the operator, the traceback for the debug log
        message = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        if log is not None:
            log.write({"event": "error", "message": message, "t": time.time()})
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
        log_dir = read_job(job_path)["log_dir"]
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
