"""How far another server's clock is from the first server's, and the events put on one clock.

When one experiment spans several servers (issue #22), workers on each server stamp their
events with that server's `time.time()`; the sync time of an iteration takes a maximum over
ranks on different servers, so their clocks must be put on the first server's (the one
running syncbed) first, and a run whose clock offsets are known less well than the times it
measures cannot be trusted. The NTP way (RFC 5905, section 8; Cristian 1989): ask the other
clock for its time between two local readings; the remote reading lies somewhere in
between, so its offset is remote - (t0 + t1) / 2 give or take half the round trip, and the
round trip with the least delay bounds it tightest.

Pure (no processes): `Sample`, `estimate` (samples -> `Offset`), `correct` and
`correct_events` (a remote time or a rank's events -> the first server's clock), `faithful`
(is every offset known well enough for the run's sync times). One process: `probe` starts
one persistent reader of the remote clock (through ssh, or locally) and samples it.
"""
from __future__ import annotations

import math
import os
import selectors
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass

# The keys of workloads/eventlog.py's events that hold a wall-clock time (`time.time()`):
# `t` (start, connected, train, trained, probe, done, error), `t_start`, `t_ready`, `t_done`
# (iter), `t0`, `t1` (stage events of executors and of the DDP hooks). Durations (`observed`)
# and counts (`sent`) are not times of day and stay as they are.
TIMESTAMP_KEYS = ("t", "t_start", "t_ready", "t_done", "t0", "t1")

# Answers every line it reads with its clock, as repr() so no digit is lost, until EOF.
SERVER_SNIPPET = ("import sys, time\n"
                  "while sys.stdin.readline():\n"
                  "    sys.stdout.write(repr(time.time()) + '\\n')\n"
                  "    sys.stdout.flush()\n")


@dataclass(frozen=True)
class Sample:
    """One round trip: local clock before asking, the remote clock's answer, local after."""

    t0: float
    remote: float
    t1: float

    @property
    def rtt(self) -> float:
        return self.t1 - self.t0


@dataclass(frozen=True)
class Offset:
    """remote clock - local clock = `offset` +- `error` s (the truth lies within the bound if
    the remote read happened inside the round trip), from the best of `n` samples."""

    offset: float
    error: float
    rtt: float
    n: int
    server: str = ""  # whose clock, for the verdict's sentence


def estimate(samples: list[Sample], server: str = "") -> Offset:
    """The offset of the sample with the shortest round trip: remote - (t0 + t1) / 2, within
    half that round trip. A sample that ends before it starts is refused."""
    samples = list(samples)
    if not samples:
        raise ValueError("clock: no samples to estimate an offset from; give at least one Sample(t0, remote, t1)")
    for i, s in enumerate(samples):
        if not all(math.isfinite(v) for v in (s.t0, s.remote, s.t1)) or s.t1 < s.t0:
            raise ValueError(f"clock: sample {i} {s} is not a round trip; valid: finite times with t0 <= t1")
    best = min(samples, key=lambda s: s.rtt)  # the first of equal round trips
    return Offset(best.remote - (best.t0 + best.t1) / 2, best.rtt / 2, best.rtt, len(samples), server)


def correct(t_remote: float, offset: Offset | float) -> float:
    """A remote clock's reading on the local clock."""
    return t_remote - _seconds(offset)


def correct_events(events: list[dict], offset: Offset | float, keys: tuple = TIMESTAMP_KEYS) -> list[dict]:
    """Copies of a rank's events with every time of day in `keys` on the local clock; values
    that are not numbers (absent, None) are left alone, and the input is not changed."""
    shift = _seconds(offset)
    out = []
    for event in events:
        copy = dict(event)
        for key in keys:
            v = copy.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                copy[key] = v - shift
        out.append(copy)
    return out


def faithful(offsets: list[Offset], median_sync_s: float, limit: float = 0.05) -> tuple[bool, str]:
    """(whether every clock offset is known to within `limit` of the median sync time, one
    line why). The sync time compares ranks' clocks: an error beyond that share of it would
    show up as sync time that is only clock uncertainty."""
    if not (isinstance(median_sync_s, (int, float)) and math.isfinite(median_sync_s) and median_sync_s > 0):
        raise ValueError(f"clock: median sync time must be a positive number of seconds, got {median_sync_s!r}")
    if not (isinstance(limit, (int, float)) and 0 < limit < 1):
        raise ValueError(f"clock: limit must be a fraction between 0 and 1 of the sync time, got {limit!r}")
    if not offsets:
        return True, "one server: every event is on one clock"
    i, worst = max(enumerate(offsets), key=lambda x: x[1].error)
    name = worst.server or f"server #{i + 2}"
    bound = limit * median_sync_s
    numbers = (f"offset {worst.offset * 1e3:+.3f} ms +- {worst.error * 1e3:.3f} ms; {limit:.0%} of the median "
               f"sync {median_sync_s * 1e3:.3f} ms is {bound * 1e3:.3f} ms")
    if worst.error > bound:
        return False, f"the clock of {name} is known only to +- {worst.error * 1e3:.3f} ms ({numbers})"
    return True, f"every clock offset is known well enough; the loosest, {name}'s: {numbers}"


def probe(argv_prefix: list[str], n: int = 20, server: str | None = None, shell: bool | None = None,
          timeout: float = 30.0) -> Offset:
    """The offset of the clock that `argv_prefix` reaches (["ssh", "-F", cfg, "10.99.0.2"];
    [] for this machine's own), from `n` round trips to ONE persistent reader of it.

    ssh hands its command to the remote shell as one line, so the snippet is quoted for a
    shell when the prefix starts with ssh (`shell=None`) or `shell` says so. One unmeasured
    round trip first waits for the remote python to start (`timeout` s for each answer)."""
    if isinstance(argv_prefix, str) or not isinstance(n, int) or n < 1:
        raise ValueError(f"clock: probe needs an argv list and n >= 1 round trips, got {argv_prefix!r}, n={n!r}")
    prefix = list(argv_prefix)
    if shell is None:
        shell = bool(prefix) and os.path.basename(prefix[0]) == "ssh"
    snippet = shlex.quote(SERVER_SNIPPET) if shell else SERVER_SNIPPET
    label = server if server is not None else (prefix[-1] if prefix else "localhost")
    errors = tempfile.TemporaryFile()  # a file, not a pipe: nobody has to drain it
    proc = subprocess.Popen(prefix + ["python3", "-u", "-c", snippet], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=errors)
    reader = _Lines(proc, label, timeout, errors)
    samples = []
    try:
        reader.ask()  # the remote interpreter is up: later round trips measure only the path
        for _ in range(n):
            t0 = time.time()
            remote = reader.ask()
            t1 = time.time()
            samples.append(Sample(t0, remote, t1))
    finally:
        reader.close()
    return estimate(samples, label)


class _Lines:
    """One line out, one line back, from a child process, each answer within `timeout` s."""

    def __init__(self, proc: subprocess.Popen, label: str, timeout: float, errors):
        self.proc, self.label, self.timeout, self.errors = proc, label, timeout, errors
        self.buf = b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(proc.stdout, selectors.EVENT_READ)

    def ask(self) -> float:
        try:
            self.proc.stdin.write(b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self._fail("its clock reader exited")
        deadline = time.monotonic() + self.timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sel.select(left):
                self._fail(f"no answer within {self.timeout:g} s")
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                self._fail("its clock reader exited")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        try:
            return float(line)
        except ValueError:
            self._fail(f"it answered {line[:60]!r}, not a time")

    def close(self) -> None:
        """EOF ends the reader; one that does not end within 5 s is killed."""
        self.sel.close()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.errors.close()

    def _fail(self, what: str):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.kill()
        self.proc.wait()
        self.errors.seek(0)
        err = self.errors.read().decode(errors="replace").strip().splitlines()
        raise RuntimeError(f"clock: cannot read the clock of {self.label}: {what}"
                           + (f" ({err[-1]})" if err else ""))


def _seconds(offset: Offset | float) -> float:
    value = offset.offset if isinstance(offset, Offset) else offset
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"clock: an offset is an Offset or a finite number of seconds, got {offset!r}")
    return float(value)
