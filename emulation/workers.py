"""Start one Gloo worker per rank inside its Mininet host, follow them, stop them.

Workers are started with `host.popen` (Mininet's popenpoll pattern): each writes its
own output file and JSONL log in the run folder; rank 0's `iter` lines are streamed
as progress. A worker that exits non-zero, or a run that passes its timeout, fails the
run at once: the others are stopped (they would wait on Gloo until its timeout).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from emulation.config import charged_compute
from emulation.state import stop_procs

ROOT = Path(__file__).resolve().parent.parent


ORACLE_BUDGET = 4 << 30  # bytes all ranks together may spend on rebuilding every worker's gradient


class WorkerFailure(RuntimeError):
    pass


def write_job(run, cfg, run_dir: Path, groups: list) -> Path:
    """The run's `Job` (workloads/job.py), checked and written as `run_dir/job.json`."""
    return job_for(run, cfg, run_dir, groups).write(run_dir / "job.json")


def job_for(run, cfg, run_dir: Path, groups: list):
    """The `Job` of a planned run (config.PlannedRun, or config.LocalRun: `syncbed train`) under
    the experiment's RunConfig: the one mapping of both onto job.json's fields."""
    from workloads.algorithms import base
    from workloads.job import Job, JobModel

    job = Job(
        algorithm=run.algorithm, algo_spec=getattr(run, "spec", "") or run.algorithm, plan=run.plan,
        groups=list(groups), workers=run.workers, servers=run.servers, world=run.workers + run.servers,
        model=JobModel(run.model.spec, run.model.to_list()),
        iters=cfg.iters, warmup=cfg.warmup, seed=cfg.seed, dilation=1.0,
        store=str(run_dir / "store"), log_dir=str(run_dir / "workers"),
        timeout_s=max(30.0, float(cfg.timeout)), crash=cfg.crash,
        hosts=list(run.hosts), dtype_bytes=base.DTYPE_BYTES, go_file=str(run_dir / "go"),
        train=bool(cfg.train), lr=cfg.lr, batch=cfg.batch, sparsity=cfg.sparsity,
        background=list(getattr(run, "background", None) or []),  # flows the analysis keeps apart
    )
    job.charged = charged_compute(cfg, run.algorithm, run.model.spec)
    if cfg.train:
        job.train_model, job.check_iters, job.eval_every = run.model.spec, cfg.check_iters, cfg.eval_every
        job.target_accuracy = cfg.target_accuracy
        job.lr_milestones, job.lr_gamma = list(cfg.lr_milestones), cfg.lr_gamma
    if getattr(cfg, "ddp", False):
        job.ddp, job.bucket_mb = True, float(cfg.bucket_mb)
    algo = base.get(run.algorithm)
    if (algo.reference is not None or cfg.sparsity) and not cfg.train:
        # every checking rank rebuilds every worker's gradient (and the oracle's residuals):
        # about (3 workers + 4) x gradient bytes each; past ORACLE_BUDGET for all of them,
        # rank 0 alone checks and the others log a digest of their result
        per_rank = (3 * run.workers + 4) * run.model.bytes
        if per_rank * run.workers > ORACLE_BUDGET:
            job.oracle_ranks = [0]
    return job


def _worker_env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")


class _Forked:
    """A pool worker forked by the zygote (not our child): Popen's poll/wait from its exit
    file, which the zygote writes when it reaps it, or from /proc when the zygote is gone."""

    def __init__(self, pid: int, exit_file: Path):
        self.pid, self.exit_file = pid, exit_file

    def poll(self):
        if self.exit_file.exists():  # written whole (os.replace) by the zygote
            return int(self.exit_file.read_text())
        return None if os.path.exists(f"/proc/{self.pid}") else -1

    def wait(self, timeout: float | None = None):
        deadline = time.time() + (timeout if timeout is not None else 1e9)
        while (code := self.poll()) is None:
            if time.time() > deadline:
                raise TimeoutError(f"pid {self.pid} still running")
            time.sleep(0.05)
        return code


class _RemoteForked(_Forked):
    """A pool worker forked by the zygote of another server: its pid is that server's, so this
    machine's /proc says nothing about it. Its exit is the file its zygote writes when it reaps
    it (in the shared results folder); without that file it runs while its zygote's ssh runs
    (the zygote exits only after writing every rank's file, so an ended ssh and no file is a
    death nobody reaped: -1)."""

    def __init__(self, pid: int, exit_file: Path, fork_server):
        super().__init__(pid, exit_file)
        self.fork_server = fork_server  # the local ssh that runs the zygote there

    def poll(self):
        ended = self.fork_server.poll() is not None  # before the file: it is written before the zygote exits
        if self.exit_file.exists():
            return int(self.exit_file.read_text())
        return -1 if ended else None


def fork_servers(server_index: list) -> list[tuple]:
    """Which ranks each fork server of a pool holds, from the server of each rank's host (its
    index in the cluster's servers; None for every rank on one machine): [(server index or None,
    ranks)], one fork server per server that holds ranks, in server order, ranks in rank order.
    Pure."""
    if all(k is None for k in server_index):
        return [(None, list(range(len(server_index))))]
    if any(k is None for k in server_index):
        raise ValueError(f"ranks without a server among {server_index}")
    out: dict = {}
    for rank, k in enumerate(server_index):
        out.setdefault(k, []).append(rank)
    return sorted(out.items())


POOL_MARK = "SYNCBED_POOL"  # in a pool's environment on another server: `Pool.stop` kills it by the mark


class _ForkServer:
    """One zygote of a pool and the ranks it forks, in `folder` (ranks.json, pids.json,
    exit<rank>, zygote.out; the pool's job<n> and stop files). On this machine it is our child
    (`server` None); on another server it runs through the ssh of a host of its ranks there, as
    that server's workers do (`Host.popen`: the run's SYNCBED_RUN mark, cwd and environment, in
    that host's network namespace; its children then join their own hosts'), marked POOL_MARK."""

    def __init__(self, net, topo, hosts: list, ranks: list, folder: Path, state, server=None):
        self.dir, self.ranks, self.server, self.net = Path(folder), list(ranks), server, net
        self.dir.mkdir(parents=True, exist_ok=True)
        self.host = hosts[self.ranks[0]] if self.ranks else None
        specs = [{"rank": r, "netns_pid": net.host(hosts[r]).pid, "nics": [n.name for n in topo.host_nics(hosts[r])],
                  "out": str(self.dir / f"rank{r}.out")} for r in self.ranks]
        (self.dir / "ranks.json").write_text(json.dumps(specs, indent=1))
        cmd = [sys.executable, "-m", "workloads.zygote", str(self.dir)]
        with open(self.dir / "zygote.out", "w") as out:
            if server is None:
                self.proc = subprocess.Popen(cmd, cwd=str(ROOT), env=_worker_env(), stdout=out, stderr=out,
                                             start_new_session=True)
            else:  # the local ssh (its own process group); the zygote's pid is the other server's
                self.proc = net.host(self.host).popen(cmd, stdout=out, stderr=out, cwd=str(ROOT),
                                                      env=dict(_worker_env(), **{POOL_MARK: self.dir.parent.name}))
        state.add("pgids", self.proc.pid)
        self.procs: dict = {}

    def ready(self) -> bool:
        """Its children exist (pids.json); then `procs` holds them."""
        f = self.dir / "pids.json"
        if not f.exists():
            return False
        pids = json.loads(f.read_text()).items()
        if self.server is None:
            self.procs = {int(r): _Forked(pid, self.dir / f"exit{r}") for r, pid in pids}
        else:
            self.procs = {int(r): _RemoteForked(pid, self.dir / f"exit{r}", self.proc) for r, pid in pids}
        return True

    def tail(self) -> str:
        lines = (self.dir / "zygote.out").read_text(errors="replace").strip().splitlines()[-1:]
        return (lines[0] if lines else "no output") + (f" (on {self.server.name})" if self.server else "")

    def stop(self, grace: float = 1.0) -> None:
        if self.server is None:
            stop_procs(self.procs.values(), grace=grace)
            stop_procs([self.proc], grace=grace)
            return
        # there: its zygote and the ranks it forked, unless the zygote reaped every rank (each has
        # its exit file) and then ended by itself; SIGTERM, then SIGKILL for what is left
        reaped = bool(self.procs) and all(p.exit_file.exists() for p in self.procs.values())
        deadline = time.time() + 2.0
        while reaped and time.time() < deadline and self.proc.poll() is None:
            time.sleep(0.05)
        if self.proc.poll() is None or not reaped:
            try:
                self.net.stop_marked([self.host], POOL_MARK)
                deadline = time.time() + 2.0
                while time.time() < deadline and self.proc.poll() is None:
                    time.sleep(0.05)
                self.net.stop_marked([self.host], POOL_MARK, sig="KILL")
            except (RuntimeError, OSError, subprocess.TimeoutExpired):
                pass  # unreachable: the run's record lets the teardown or `syncbed clean` kill them there
        stop_procs([self.proc], grace=grace)


class Pool:
    """Worker processes kept across the runs of one topology that use the same hosts: Python
    and torch are imported once, by a fork server (`workloads/zygote.py`) that forks one
    worker per rank into its host's network namespace; each serves the pool
    (`workloads.worker.serve_pool`): a run's job is queued as `DIR/job<n>`, and a rank's exit
    code for that job is the file `<run>/workers/rank<R>.exit` instead of its process's exit.
    Over several servers, one fork server per server that holds ranks, each in its own folder
    `DIR/server<k>` (k: the server's place in the cluster) with its own job<n> and stop files.
    A run that fails stops the pool (its processes may be stuck in Gloo) on every server; the
    next run starts a new one."""

    START_TIMEOUT = 60.0

    def __init__(self, net, topo, hosts: list, folder: Path, state):
        self.hosts, self.dir = list(hosts), Path(folder)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.jobs = 0
        cluster = getattr(net, "cluster", None)
        servers = list(cluster[0]) if cluster else []
        index = [servers.index(net.server_of(h)) if servers else None for h in self.hosts]
        self.forks: list[_ForkServer] = []
        try:
            for k, ranks in fork_servers(index):
                server = servers[k] if k is not None and not servers[k].local else None
                self.forks.append(_ForkServer(net, topo, self.hosts, ranks, self.dir if k is None else
                                              self.dir / f"server{k}", state, server))
        except BaseException:
            for fs in self.forks:
                fs.stop()
            raise
        deadline = time.time() + self.START_TIMEOUT
        waiting = list(self.forks)
        while waiting:
            waiting = [fs for fs in waiting if not fs.ready()]
            bad = [fs for fs in waiting if fs.proc.poll() is not None]
            if bad or (waiting and time.time() > deadline):
                tail = (bad or waiting)[0].tail()
                for fs in self.forks:
                    fs.stop(grace=2.0)
                raise WorkerFailure(f"the worker pool's fork server did not start: {tail}")
            if waiting:
                time.sleep(0.05)
        self.procs = {r: p for fs in self.forks for r, p in fs.procs.items()}
        for fs in self.forks:
            if fs.server is None:  # another server's pids are not this machine's
                for p in fs.procs.values():
                    state.add("pgids", p.pid)

    def fits(self, hosts: list) -> bool:
        return list(hosts) == self.hosts and self.alive()

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs.values())

    def submit(self, job_path: Path) -> None:
        self.jobs += 1
        for fs in self.forks:
            tmp = fs.dir / f".job{self.jobs}"
            tmp.write_text(str(job_path))
            tmp.replace(fs.dir / f"job{self.jobs}")

    def stop(self) -> None:
        for fs in self.forks:
            (fs.dir / "stop").touch()
        deadline = time.time() + 2.0
        while time.time() < deadline and any(p.poll() is None for p in self.procs.values()):
            time.sleep(0.05)
        for fs in self.forks:
            fs.stop()


class Workers:
    """The ranks of one run: their own processes, or a `Pool`'s (then a rank's exit is the
    exit code it recorded for this job, or its process's death)."""

    def __init__(self, net, run, job_path: Path, run_dir: Path, state, log=print, pool: Pool | None = None):
        self.net, self.run, self.job = net, run, job_path
        self.dir = run_dir / "workers"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.state, self.log = state, log
        self.procs: dict[int, object] = {}
        self.pool = pool

    def start(self) -> "Workers":
        if self.pool is not None:
            self.procs = dict(self.pool.procs)
            self.pool.submit(self.job)
            return self
        topo = self.run.topology
        for rank, host in enumerate(self.run.hosts):
            nics = ",".join(n.name for n in topo.host_nics(host))
            out = open(self.dir / f"rank{rank}.out", "w")
            cmd = [sys.executable, "-m", "workloads.worker", "--job", str(self.job),
                   "--rank", str(rank), "--nics", nics]
            # mnexec -d makes each worker a session leader: its pid is its process group
            p = self.net.host(host).popen(cmd, stdout=out, stderr=out, cwd=str(ROOT), env=_worker_env())
            out.close()
            self.procs[rank] = p
            self.state.add("pgids", p.pid)
        return self

    def _code(self, rank: int):
        """The rank's exit code for this run, None while it runs."""
        f = self.dir / f"rank{rank}.exit"
        if self.pool is not None and f.exists():  # written whole (os.replace) by the worker
            return int(f.read_text())
        return self.procs[rank].poll()  # own process, or a pool process that died without a word

    def wait_connected(self, timeout: float) -> float:
        """Wait until every rank has built its Gloo groups (its log says "connected")."""
        from workloads.eventlog import log_path, read_events

        t0 = time.time()
        while True:
            ready = sum(any(ev.get("event") == "connected" for ev in read_events(log_path(self.dir, r))[0])
                        for r in self.procs)
            if ready == len(self.procs):
                return time.time() - t0
            bad = {r: c for r in self.procs if (c := self._code(r)) not in (None, 0)}
            if bad:
                r, c = sorted(bad.items())[0]
                self.stop()
                raise WorkerFailure(f"worker rank {r} on {self.run.hosts[r]} exited with code {c} while "
                                    f"connecting: {self.last_error(r)}")
            if time.time() - t0 > timeout:
                self.stop()
                raise WorkerFailure(f"{len(self.procs) - ready}/{len(self.procs)} workers did not connect "
                                    f"within {timeout:.0f} s")
            time.sleep(0.2)

    @property
    def pids(self) -> list[int]:
        """This machine's worker processes (a rank on another server is an ssh here: not its CPU)."""
        return [p.pid for r, p in self.procs.items()
                if not getattr(self.net.host(self.run.hosts[r]), "isRemote", False)]

    def wait(self, timeout: float, label: str, on_tick=None) -> float:
        """Follow the workers until all exit; raise WorkerFailure on a crash or timeout."""
        t0 = time.time()
        progress = self.dir / "rank0.out"
        seen = 0
        total = len(self.procs)
        while True:
            if progress.exists():
                lines = progress.read_text(errors="replace").splitlines()
                for line in lines[seen:]:
                    if line.startswith("iter "):
                        self.log(f"  [{label}] {line}")
                seen = len(lines)
            if on_tick:
                on_tick(time.time() - t0)
            codes = {r: self._code(r) for r in self.procs}
            bad = {r: c for r, c in codes.items() if c not in (None, 0)}
            if bad:
                r, c = sorted(bad.items())[0]
                time.sleep(0.5)  # let a Gloo error on the peers reach their logs
                self.stop()
                raise WorkerFailure(f"worker rank {r} on {self.run.hosts[r]} exited with code {c}: "
                                    f"{self.last_error(r)}")
            if all(c == 0 for c in codes.values()):
                return time.time() - t0
            if time.time() - t0 > timeout:
                running = sum(c is None for c in codes.values())
                self.stop()
                raise WorkerFailure(f"{running}/{total} workers still running after the {timeout:.0f} s timeout")
            time.sleep(0.25)

    def last_error(self, rank: int) -> str:
        from workloads.eventlog import log_path, read_events

        for ev in reversed(read_events(log_path(self.dir, rank))[0]):
            if ev.get("event") == "error":
                return ev.get("message", "")[:300]
        out = self.dir / f"rank{rank}.out"
        tail = out.read_text(errors="replace").strip().splitlines()[-1:] if out.exists() else []
        return tail[0][:300] if tail else "no output"

    def stop(self):
        if self.pool is not None:
            if any(self._code(r) is None for r in self.procs) or not self.pool.alive():
                self.pool.stop()  # a rank still in the job (failure, interruption): the pool cannot go on
            return
        stop_procs(self.procs.values(), grace=2.0)
