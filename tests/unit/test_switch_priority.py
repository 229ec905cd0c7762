"""ovs-vswitchd under SCHED_RR for a run's iterations and back (emulation/switch_priority.py,
issue #21), on a real process with several threads; needs root (CAP_SYS_NICE) as every run."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from emulation import switch_priority as sp

pytestmark = pytest.mark.unit
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_RR needs root")

THREADS = "import threading, time\n[threading.Thread(target=time.sleep, args=(60,), daemon=True).start() for _ in range(3)]\ntime.sleep(60)\n"


@pytest.fixture
def process():
    p = subprocess.Popen([sys.executable, "-c", THREADS])
    for _ in range(100):
        if len(sp._threads(p.pid)) >= 4:
            break
        time.sleep(0.02)
    yield p.pid
    p.kill()
    p.wait()


def policies(pid):
    return {os.sched_getscheduler(t) for t in sp._threads(pid)}


@needs_root
def test_realtime_for_every_thread_then_back(process):
    assert policies(process) == {os.SCHED_OTHER}
    saved = sp.apply("realtime", process)
    assert len(saved) == 4
    assert policies(process) == {os.SCHED_RR}
    assert {os.sched_getparam(t).sched_priority for t in sp._threads(process)} == {sp.RT_PRIORITY}
    sp.restore(saved)
    assert policies(process) == {os.SCHED_OTHER}


@needs_root
def test_normal_leaves_the_scheduler_alone(process):
    assert sp.apply("normal", process) == {}
    assert policies(process) == {os.SCHED_OTHER}


@needs_root
def test_reset_after_a_run_that_could_not_restore(process):
    sp.raise_to_realtime(process)
    assert sp.reset(process) == 4
    assert policies(process) == {os.SCHED_OTHER}
    assert sp.reset(process) == 0


def test_a_process_that_is_gone():
    assert sp.raise_to_realtime(2 ** 22 + 7) == {}
    assert sp.reset(2 ** 22 + 7) == 0
