"""ovs-vswitchd ahead of the workers on the CPU (issue #21, docs/FIDELITY.md #21).

On 2 cores the emulated switch and the emulated hosts share the CPU. A real switch forwards
on its own hardware whatever the hosts compute, so where they compete the switch should win:
`switch_priority: realtime` puts every thread of ovs-vswitchd under SCHED_RR for the
iterations of each run (a wake-up of the forwarder preempts a worker at once, instead of
queueing behind it under the fair scheduler), and puts back what it found afterwards.
Linux's real-time throttling (sched_rt_runtime_us) still leaves the workers a share of every
core. `normal` (the default) leaves the scheduler alone.
"""
from __future__ import annotations

import os
from pathlib import Path

POLICIES = ("normal", "realtime")
RT_PRIORITY = 10  # SCHED_RR 1..99: above every normal task, below the kernel's own threads


def check(value) -> str:
    """The policy, or ValueError with what is valid."""
    if value not in POLICIES:
        raise ValueError(f"switch_priority={value!r} is invalid: must be one of {', '.join(POLICIES)}")
    return value


def _threads(pid: int) -> list[int]:
    try:
        return [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
    except (FileNotFoundError, ProcessLookupError):
        return []


def raise_to_realtime(pid: int) -> dict[int, tuple[int, int]]:
    """SCHED_RR for every thread of `pid`; -> {thread: (policy, priority)} found before.
    Threads the process starts later inherit the policy of the thread that starts them."""
    saved = {}
    for tid in _threads(pid):
        try:
            saved[tid] = (os.sched_getscheduler(tid), os.sched_getparam(tid).sched_priority)
            os.sched_setscheduler(tid, os.SCHED_RR, os.sched_param(RT_PRIORITY))
        except (ProcessLookupError, FileNotFoundError):
            continue  # a thread that ended in between
        except PermissionError as e:
            restore(saved)
            raise RuntimeError(f"switch_priority realtime: cannot put ovs-vswitchd (pid {pid}) under SCHED_RR "
                               f"({e.strerror}): it needs root with CAP_SYS_NICE and real-time time in its "
                               "cgroup; use switch_priority normal") from None
    return saved


def restore(saved: dict[int, tuple[int, int]]) -> None:
    for tid, (policy, prio) in saved.items():
        try:
            os.sched_setscheduler(tid, policy, os.sched_param(prio))
        except (ProcessLookupError, FileNotFoundError):
            continue


def reset(pid: int) -> int:
    """Every real-time thread of `pid` back to SCHED_OTHER (what `syncbed clean` does after a
    run that could not restore it); -> how many were reset."""
    n = 0
    for tid in _threads(pid):
        try:
            if os.sched_getscheduler(tid) in (os.SCHED_RR, os.SCHED_FIFO):
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
                n += 1
        except (ProcessLookupError, FileNotFoundError):
            continue
    return n


def apply(policy: str, pid: int | None) -> dict[int, tuple[int, int]]:
    """For one run's iterations: realtime raises `pid` (ovs-vswitchd), normal leaves it alone;
    -> what `restore` puts back afterwards."""
    return raise_to_realtime(pid) if policy == "realtime" and pid else {}
