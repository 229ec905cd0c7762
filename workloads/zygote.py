"""Fork server of a worker pool: `python -m workloads.zygote POOL_DIR`.

Importing torch costs about 1.4 s of CPU per process on these machines; 16 workers starting
at once on 2 cores spent 12 s of every run before it (issue #6 §6). The runner's pool
(`emulation/workers.Pool`) therefore starts this one process in the root namespace: it
imports torch and the worker code once, then forks one child per rank. Over several servers
there is one per server that holds ranks, each with its own POOL_DIR and that server's ranks;
on another server it is started like a worker there (over ssh, in the network namespace of one
of its hosts, marked SYNCBED_RUN and SYNCBED_POOL), and its children keep that environment. Each child becomes a
session leader (its pid is its process group, as with `mnexec -d`), joins its Mininet host's
network namespace (`setns` on `/proc/<host shell pid>/ns/net`; Mininet hosts have no other
namespace of their own), points stdout/stderr at its file and serves the pool
(`workloads.worker.serve_pool`), exactly as `python -m workloads.worker --pool` would.

POOL_DIR/ranks.json: [{"rank", "netns_pid", "nics": [...], "out"}]. The zygote writes
POOL_DIR/pids.json ({rank: pid}) once every child exists, reaps them, writes each one's exit
status to POOL_DIR/exit<rank> (the code, or -signal), and exits when all have exited.
Nothing here starts a thread before the fork.
"""
from __future__ import annotations

import ctypes
import json
import os
import sys

CLONE_NEWNET = 0x40000000


def setns_net(pid: int) -> None:
    """Join the network namespace of process `pid`."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into the network namespace of pid {pid}: {os.strerror(err)}")
    finally:
        os.close(fd)


def _write(path: str, text: str) -> None:
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def _child(folder: str, spec: dict) -> None:
    from workloads import worker

    code = 1
    try:
        os.setsid()
        fd = os.open(spec["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        setns_net(int(spec["netns_pid"]))
        nics = list(spec["nics"])
        os.environ["GLOO_SOCKET_IFNAME"] = nics[0]  # see workloads.worker.main
        worker.serve_pool(folder, int(spec["rank"]), nics)
        code = 0
    except BaseException as exc:  # noqa: BLE001 - reported in the rank's output, exit 1
        print(f"worker rank {spec.get('rank')}: error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main(argv=None) -> int:
    folder = (argv if argv is not None else sys.argv[1:])[0]
    with open(os.path.join(folder, "ranks.json")) as f:
        ranks = json.load(f)
    import torch  # noqa: F401 (once, for every child: the point of the fork server)

    import torch.distributed  # noqa: F401

    from workloads import comm, gradients, sources, worker  # noqa: F401 (worker: job, eventlog)
    from workloads.algorithms import base

    base.registry()  # every algorithm module (networkx, scipy for some): 0.5 s of CPU, once

    pids = {}
    for spec in ranks:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(folder, spec)
        pids[int(spec["rank"])] = pid
    _write(os.path.join(folder, "pids.json"), json.dumps(pids))
    rank_of = {pid: rank for rank, pid in pids.items()}
    while rank_of:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        rank = rank_of.pop(pid, None)
        if rank is not None:
            code = os.waitstatus_to_exitcode(status)
            _write(os.path.join(folder, f"exit{rank}"), str(code))
    return 0


if __name__ == "__main__":
    sys.exit(main())
