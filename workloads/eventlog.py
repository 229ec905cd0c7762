"""The workers' event log, `log_dir/rank<R>.jsonl`: the one owner of its format.

Writing: each rank has one `EventLog` (`EventLog.for_rank(log_dir, rank)`), one method per
event kind, one flushed JSON line per event (a killed run keeps what it did); executors'
`stage` events reach it through `Comm`'s sink, `EventLog.write`. Reading: `read_logs(log_dir)`,
what the analysis, the report, the timeline and the localhost trainer all read. Timing: the
ONE definition of an iteration's sync time (`IterationTimes.sync`), and the per-iteration
series built on it (`iteration_times`, `sync_series`).

The events, in the order a rank writes them (every `t` is wall clock, `time.time()`):
- `start` {rank, host, pid, t}; `connected` {t}: its Gloo groups exist (it then waits for
  the job's go file);
- `iter` {iter, warmup, t_start, t_ready, t_done, sent, observed?, + the check's verdict:
  correct, max_abs_err | checked: false | server: true, digest?}: `t_start` backward
  begins, `t_ready` this rank's whole gradient exists, `t_done` it holds the synchronized
  result; `sent` [[dst, nic, bytes, messages], ...] what it handed to `Comm.send` in this
  iteration; `observed` the executor's `state.observed`;
- `stage` {iter, phase, t0, t1, and as the executor has them tree, stage, nic, bytes, layer,
  group, ...}: executors' timeline events (`Comm.record`), optional;
- `train` {iter, loss, accuracy, t} (rank 0, training); `trained` {iters, params_sha1, t}
  (every worker rank of a training job, last);
  `probe` {points, t} (rank 0 of a link probe job);
- `done` {t} or `error` {message, t}.
"""
from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path


# ---- writing ---------------------------------------------------------------------------
class EventLog:
    """One rank's JSONL log: one flushed line per event."""

    def __init__(self, path):
        path = str(path)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self._file = open(path, "a", buffering=1)

    @classmethod
    def for_rank(cls, log_dir, rank: int) -> "EventLog":
        return cls(log_path(log_dir, rank))

    def write(self, event: dict) -> None:
        """Any event as it is (the sink `Comm` hands executors' `stage` events to)."""
        self._file.write(json.dumps(event) + "\n")
        self._file.flush()

    def start(self, rank: int, host: str, pid: int) -> None:
        self.write({"event": "start", "rank": rank, "host": host, "pid": pid, "t": time.time()})

    def connected(self) -> None:
        self.write({"event": "connected", "t": time.time()})

    def iteration(self, it: int, warmup: bool, t_start: float, t_ready: float, t_done: float, sent: list,
                  observed: dict | None = None, **verdict) -> dict:
        """One `iter` event: the times, `sent` (`sent_since`), `observed` when not empty, then
        the check's verdict fields (`correct`, `max_abs_err`, `checked`, `server`, `digest`)."""
        event = {"event": "iter", "iter": it, "warmup": warmup, "t_start": t_start, "t_ready": t_ready,
                 "t_done": t_done, "sent": sent}
        if observed:
            event["observed"] = observed
        event.update(verdict)
        self.write(event)
        return event

    def train(self, it: int, loss: float, accuracy: float) -> None:
        self.write({"event": "train", "iter": it, "loss": loss, "accuracy": accuracy, "t": time.time()})

    def trained(self, iters: int, params_sha1: str) -> None:
        self.write({"event": "trained", "iters": iters, "params_sha1": params_sha1, "t": time.time()})

    def probe(self, points: list) -> None:
        self.write({"event": "probe", "points": points, "t": time.time()})

    def error(self, message: str) -> None:
        self.write({"event": "error", "message": message, "t": time.time()})

    def done(self) -> None:
        self.write({"event": "done", "t": time.time()})


def log_path(log_dir, rank: int) -> str:
    return os.path.join(str(log_dir), f"rank{rank}.jsonl")


def sent_since(sent: dict, messages: dict, sent_before: dict, msgs_before: dict) -> list:
    """An `iter` event's `sent`: [[dst, nic, bytes, messages]] handed to `Comm.send` since the
    snapshot (`Comm.sent`, `Comm.messages`, both keyed (dst, nic)), peers with new bytes only."""
    return [[dst, nic, b - sent_before.get((dst, nic), 0), messages[(dst, nic)] - msgs_before.get((dst, nic), 0)]
            for (dst, nic), b in sorted(sent.items()) if b != sent_before.get((dst, nic), 0)]


# ---- reading ---------------------------------------------------------------------------
def read_events(path) -> tuple[list, int]:
    """One rank's log: ([event, ...], torn lines). A worker killed mid-write leaves a torn
    last line; it is skipped and counted. A missing file has no events."""
    events, torn = [], 0
    try:
        text = Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return events, torn
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            torn += 1
            continue
        if isinstance(event, dict):
            events.append(event)
    return events, torn


def read_logs(log_dir) -> tuple[dict, dict]:
    """The one reader of what `EventLog` wrote: ({rank: [event, ...]}, {rank: unparsable lines})."""
    logs, bad = {}, {}
    for path in Path(log_dir).glob("rank*.jsonl"):
        suffix = path.stem[4:]
        if not suffix.isdigit():
            continue
        rank = int(suffix)
        logs[rank], torn = read_events(path)
        if torn:
            bad[rank] = torn
    return dict(sorted(logs.items())), bad


# ---- timing ----------------------------------------------------------------------------
def _num(x) -> float | None:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


@dataclass(frozen=True)
class IterationTimes:
    """One iteration over every rank that logged it (servers included): the latest `t_start`
    (`start`; `first_start` the earliest), the latest `t_ready` and the latest `t_done`."""

    iter: int
    first_start: float | None
    start: float | None
    ready: float
    done: float

    @property
    def sync(self) -> float:
        """THE sync time of an iteration: max over ranks of t_done - max over ranks of t_ready
        (from the moment the last rank's gradient exists until the last rank holds the result)."""
        return self.done - self.ready

    @property
    def iteration(self) -> float | None:
        """max t_done - max t_start: the iteration once every rank began its backward."""
        return None if self.start is None else self.done - self.start

    @property
    def backward(self) -> float | None:
        """max t_ready - max t_start."""
        return None if self.start is None else self.ready - self.start


def iteration_times(logs: dict, warmup: bool = False) -> list[IterationTimes]:
    """Per iteration (measured ones only unless `warmup`), in iteration order, from the `iter`
    events of `logs` ({rank: [event, ...]}, `read_logs`) that carry numeric t_ready and t_done."""
    acc: dict = {}
    for events in logs.values():
        for ev in events:
            if ev.get("event") != "iter" or ev.get("iter") is None or (ev.get("warmup") and not warmup):
                continue
            ready, done = _num(ev.get("t_ready")), _num(ev.get("t_done"))
            if ready is None or done is None:
                continue
            start = _num(ev.get("t_start"))
            a = acc.setdefault(ev["iter"], [None, None, ready, done])
            if start is not None:
                a[0] = start if a[0] is None else min(a[0], start)
                a[1] = start if a[1] is None else max(a[1], start)
            a[2], a[3] = max(a[2], ready), max(a[3], done)
    return [IterationTimes(i, *acc[i]) for i in sorted(acc)]


def sync_series(logs: dict) -> list[float]:
    """The sync time of every measured iteration, in order (`IterationTimes.sync`)."""
    return [t.sync for t in iteration_times(logs)]


def training_curve(logs: dict) -> list[tuple]:
    """The `train` events (rank 0 evaluates) as (iter, loss, accuracy, t), in iteration order:
    the one reader of the training curve for the emulation's analysis and the trainer."""
    return sorted((ev["iter"], ev["loss"], ev["accuracy"], ev.get("t"))
                  for events in logs.values() for ev in events if ev.get("event") == "train")
