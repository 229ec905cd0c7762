"""A run's timeline in Chrome trace format (`timeline.json`): Perfetto and chrome://tracing open it.

Pure: the run folder's files in (the worker logs, and what the analysis read from the
capture, `capture_counts.json`), one trace dict out. `write(run_dir)` is the only function
that touches files; `emulation/analysis.py` calls it at the end of `analyze_run`, so
`syncbed run` and `syncbed analyze` both write it. Open it at https://ui.perfetto.dev
("Open trace file") or in chrome://tracing ("Load").

What it holds (the JSON object form, `{"traceEvents": [...], "displayTimeUnit": "ms"}`):
- one process per rank (`pid` = rank, a `process_name` metadata event "rank R (host)"),
  and, when the capture's per-link rates exist, one more process "links (capture)";
- complete events (`"ph": "X"`, `ts`/`dur` in microseconds since the run's first event,
  `otherData.t0_epoch` being that event's wall clock) made by `slices`, one per span the
  logs hold, in these kinds:
  * `backward` (`t_start`..`t_ready` of an `iter` event), `sync` (`t_ready`..`t_done`), and
    `between` (the previous `t_done`..this `t_start`: the oracle check, the log line and
    the store barrier before the next iteration), all on the thread "iteration";
  * `stage`: every `stage` event an executor recorded (`comm.record`: ring steps, PS push and
    pull, gTop-k rounds, BML's stages per tree, a layer-wise group's all-reduce, each
    layer's backward), named by its phase (and layer or group), with every field of the
    event in `args`;
  * `compute`: what executors only logged as a duration in the `iter` event's `observed`,
    as the run's algorithm declares it (`Algorithm.compute`: the observed key, the slice's
    name, and whether it was done at the sync's start or end), placed at the start or the
    end of the sync it belongs to, with `"placed": "inferred ..."` in `args` to say so;
  Slices are laid on threads ("lanes") so that every thread holds properly nested slices,
  as trace viewers need: the stages of one tree (or the per-layer backward) nest inside
  the iteration thread's `sync` slice when all of them fit there; otherwise (BML's second
  tree overlapping its first, a layer-wise all-reduce starting during backward) they get a
  thread of their own, "tree T" or "backward (per layer)".
- counter events (`"ph": "C"`) for the busiest links' rate in Mbit/s, one track per
  (switch port, direction), from the capture's payload bytes per `bin` seconds
  (`capture_counts.json` `measured.rates`, written by the analysis since issue 24; a run
  analysed before has no counters).
The existing timeline figures of the report (emulation/report/plots.py `plot_timeline`,
`plot_overlap`) draw the same `stage` slices.
"""
from __future__ import annotations

import json
from pathlib import Path

FILE = "timeline.json"
COUNTERS = 8  # busiest link directions shown as counter tracks
NET_PID = 1_000_000  # the capture's process: after every rank
ITERATION_TID = 0
_US = 1e6


def _num(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if v == v and v not in (float("inf"), float("-inf")) else None


def _stage_name(ev: dict) -> str:
    phase = str(ev.get("phase") or "stage")
    if phase == "backward" and ev.get("name") is not None:
        return f"backward {ev['name']}"
    if ev.get("group") is not None:
        return f"{phase} group {ev['group']}"
    if ev.get("stage") is not None:
        return f"{phase} {ev['stage']}"
    return phase


def _lane_key(ev: dict) -> str:
    if ev.get("phase") == "backward":
        return "backward (per layer)"
    return f"tree {ev.get('tree', 0)}"


def slices(logs: dict, compute=()) -> list[dict]:
    """Every timed span in the worker logs ({rank: [event, ...]}, as `workloads.eventlog.read_logs`
    returns them), one dict each (`compute`: the algorithm's `Compute` declarations, which
    observed durations become compute slices): `rank`, `iter`, `kind` (backward | sync | between | stage |
    compute), `name`, `t0`, `t1` (wall clock, seconds), `lane` (the thread it belongs on
    unless it nests in "iteration"), `args`. A `stage` slice also carries every field of its
    event (phase, tree, nic, stage, group, layer, bytes, ...), so figures can read them as
    they read the events. Spans without two finite times, or ending before they start, are left out."""
    out = []
    for rank, events in sorted(logs.items()):
        prev_done = None
        for ev in events:
            kind = ev.get("event")
            if kind == "iter":
                it = ev.get("iter")
                t_start, t_ready, t_done = (_num(ev.get(k)) for k in ("t_start", "t_ready", "t_done"))
                sent = ev.get("sent") or []
                common = {"iter": it, "warmup": bool(ev.get("warmup"))}
                if prev_done is not None and t_start is not None and t_start >= prev_done:
                    out.append({"rank": rank, "iter": it, "kind": "between", "name": "between iterations",
                                "t0": prev_done, "t1": t_start, "lane": "iteration",
                                "args": {**common, "what": "oracle check, log, store barrier"}})
                if t_start is not None and t_ready is not None and t_ready >= t_start:
                    out.append({"rank": rank, "iter": it, "kind": "backward", "name": "backward",
                                "t0": t_start, "t1": t_ready, "lane": "iteration", "args": dict(common)})
                if t_ready is not None and t_done is not None and t_done >= t_ready:
                    args = {**common, "sent_bytes": sum(int(s[2]) for s in sent),
                            "sent_messages": sum(int(s[3]) for s in sent), "sent": sent}
                    for key in ("correct", "max_abs_err", "checked", "server"):
                        if key in ev:
                            args[key] = ev[key]
                    obs = ev.get("observed") or {}
                    if obs:
                        args["observed"] = obs
                    out.append({"rank": rank, "iter": it, "kind": "sync", "name": "sync", "t0": t_ready,
                                "t1": t_done, "lane": "iteration", "args": args})
                    out += _compute(rank, it, obs, t_ready, t_done, compute)
                if t_done is not None:
                    prev_done = t_done
            elif kind == "stage":
                t0, t1 = _num(ev.get("t0")), _num(ev.get("t1"))
                if t0 is None or t1 is None or t1 < t0:
                    continue
                fields = {k: v for k, v in ev.items() if k not in ("event", "t0", "t1")}
                out.append({**fields, "rank": rank, "iter": ev.get("iter"), "kind": "stage",
                            "name": _stage_name(ev), "t0": t0, "t1": t1, "lane": _lane_key(ev),
                            "args": fields})
    return out


def _compute(rank, it, obs: dict, t_ready: float, t_done: float, compute=()) -> list[dict]:
    """CPU work the executors log as durations only (`observed`), as `compute` (the algorithm's
    `Compute` declarations) names and places it: at the sync's start or end, clamped to the sync."""
    out = []
    span = t_done - t_ready
    for c in compute:
        key, name, at_start = c.key, c.name, c.at == "start"
        secs = _num(obs.get(key))
        if secs is None or secs <= 0:
            continue
        secs = min(secs, span)
        t0, t1 = (t_ready, t_ready + secs) if at_start else (t_done - secs, t_done)
        out.append({"rank": rank, "iter": it, "kind": "compute", "name": name, "t0": t0, "t1": t1,
                    "lane": "iteration",
                    "args": {"iter": it, "seconds": _num(obs.get(key)),
                             "placed": f"inferred: observed.{key} is a duration; placed at the sync's "
                                       f"{'start' if at_start else 'end'}"}})
    return out


# --- lanes: every thread holds properly nested slices --------------------------------------

class _Lane:
    def __init__(self, tid: int, name: str):
        self.tid, self.name, self.stack = tid, name, []  # stack: end times of open slices

    def fits(self, ts: float, end: float) -> bool:
        stack = [e for e in self.stack if e > ts]  # slices that ended before `ts` are closed
        return not stack or end <= stack[-1]

    def put(self, ts: float, end: float) -> None:
        while self.stack and self.stack[-1] <= ts:
            self.stack.pop()
        self.stack.append(end)


def _order(s: dict):
    # parents first: earlier start, then longer, then the iteration-level kinds
    return (s["ts"], -(s["end"] - s["ts"]), 0 if s["lane"] == "iteration" else 1)


def _assign(rank_slices: list[dict]) -> dict:
    """{lane name: tid} and each slice's `tid`. The iteration thread takes backward, sync,
    between and compute; each other lane key (a tree's stages, the per-layer backward) joins
    it when all of that key's slices nest there, else gets threads of its own (as few as
    keep each properly nested)."""
    main = _Lane(ITERATION_TID, "iteration")
    lanes = [main]
    base = sorted((s for s in rank_slices if s["lane"] == "iteration"), key=_order)
    keys = sorted({s["lane"] for s in rank_slices if s["lane"] != "iteration"})

    def nests(group: list[dict]) -> bool:
        trial = _Lane(0, "trial")
        for s in sorted(base + group, key=_order):
            if not trial.fits(s["ts"], s["end"]):
                return False
            trial.put(s["ts"], s["end"])
        return True

    for key in keys:
        group = [s for s in rank_slices if s["lane"] == key]
        if nests(group):
            base += group
            continue
        own: list[_Lane] = []
        for s in sorted(group, key=_order):
            lane = next((l for l in own if l.fits(s["ts"], s["end"])), None)
            if lane is None:
                lane = _Lane(len(lanes), key if not own else f"{key} ({len(own) + 1})")
                own.append(lane)
                lanes.append(lane)
            lane.put(s["ts"], s["end"])
            s["tid"] = lane.tid
    for s in sorted(base, key=_order):
        main.put(s["ts"], s["end"])
        s["tid"] = ITERATION_TID
    return {lane.name: lane.tid for lane in lanes}


# --- the trace ---------------------------------------------------------------------------

def _us(t: float, origin: float) -> float:
    return round((t - origin) * _US, 3)


def counters(rates: dict | None, top: int = COUNTERS) -> list[tuple[str, float, list]]:
    """[(track name, t0 epoch, [Mbit/s per bin])] of the `top` busiest link directions in
    `rates` ({"t0", "bin", "links": {"port:dir": [payload bytes per bin]}}), or []."""
    if not isinstance(rates, dict) or not rates.get("links") or not _num(rates.get("bin")):
        return []
    t0, width = _num(rates.get("t0")), float(rates["bin"])
    if t0 is None:
        return []
    busiest = sorted(rates["links"].items(), key=lambda kv: (-sum(kv[1]), kv[0]))[:top]
    return [(f"{name} Mbit/s", t0, [b * 8 / width / 1e6 for b in series]) for name, series in busiest]


def build(logs: dict, hosts: dict | None = None, rates: dict | None = None, title: str | None = None,
          compute=()) -> dict:
    """The Chrome trace of a run: `logs` as `read_logs` returns them, `hosts` {rank: host}
    (default: the `start` events' hosts), `rates` the capture's per-link series (see
    `counters`), `compute` the algorithm's `Compute` declarations (`slices`). Times are microseconds since the run's first event (a slice's start, or
    the first counter bin); `otherData.t0_epoch` is that event's wall clock."""
    spans = slices(logs, compute)
    tracks = counters(rates)
    starts = [s["t0"] for s in spans] + [t0 for _, t0, _ in tracks]
    origin = min(starts) if starts else 0.0
    hosts = dict(hosts or {})
    for rank, events in logs.items():
        for ev in events:
            if ev.get("event") == "start" and ev.get("host"):
                hosts.setdefault(rank, ev["host"])
    events: list[dict] = []
    by_rank: dict = {}
    for s in spans:
        s["ts"], s["end"] = _us(s["t0"], origin), _us(s["t1"], origin)
        by_rank.setdefault(s["rank"], []).append(s)
    for rank in sorted(set(logs) | set(by_rank)):
        label = f"rank {rank}" + (f" ({hosts[rank]})" if hosts.get(rank) else "")
        events += [{"ph": "M", "name": "process_name", "pid": rank, "tid": 0, "args": {"name": label}},
                   {"ph": "M", "name": "process_sort_index", "pid": rank, "tid": 0, "args": {"sort_index": rank}}]
        lanes = _assign(by_rank.get(rank, []))
        for name, tid in lanes.items():
            events += [{"ph": "M", "name": "thread_name", "pid": rank, "tid": tid, "args": {"name": name}},
                       {"ph": "M", "name": "thread_sort_index", "pid": rank, "tid": tid, "args": {"sort_index": tid}}]
        for s in sorted(by_rank.get(rank, []), key=_order):
            events.append({"ph": "X", "name": s["name"], "cat": s["kind"], "pid": rank, "tid": s["tid"],
                           "ts": s["ts"], "dur": round(s["end"] - s["ts"], 3), "args": s["args"]})
    if tracks:
        events += [{"ph": "M", "name": "process_name", "pid": NET_PID, "tid": 0,
                    "args": {"name": "links (capture, payload Mbit/s)"}},
                   {"ph": "M", "name": "process_sort_index", "pid": NET_PID, "tid": 0,
                    "args": {"sort_index": NET_PID}}]
        width = float(rates["bin"])
        for name, t0, mbps in tracks:
            for i, v in enumerate(mbps + [0.0]):  # a last zero closes the track
                events.append({"ph": "C", "name": name, "pid": NET_PID, "tid": 0,
                               "ts": _us(t0 + i * width, origin), "args": {"Mbit/s": round(v, 3)}})
    other = {"t0_epoch": origin, "time_unit": "us since t0_epoch",
             "open_with": "https://ui.perfetto.dev (Open trace file) or chrome://tracing (Load)"}
    if title:
        other["run"] = title
    if tracks:
        other["counters"] = (f"payload Mbit/s of the {len(tracks)} busiest switch-port directions per "
                             f"{float(rates['bin']):g} s bin (rx: into the switch from the linked node)")
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}


def _load(path: Path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def _declared_compute(name) -> tuple:
    """The `Compute` declarations of algorithm `name` (job.json's), () when it has none or is unknown."""
    from workloads.algorithms import base  # noqa: PLC0415 - the registry imports torch

    try:
        return base.get(str(name)).compute
    except ValueError:
        return ()


def write(run_dir) -> Path:
    """Build the run folder's trace from its files and write `run_dir/timeline.json`."""
    from workloads.eventlog import read_logs  # noqa: PLC0415 - the one reader of the workers' logs

    run_dir = Path(run_dir)
    logs = read_logs(run_dir / "workers")[0]
    job = _load(run_dir / "job.json") or {}
    hosts = {r: h for r, h in enumerate(job.get("hosts") or [])}
    counts = _load(run_dir / "capture_counts.json") or {}
    rates = (counts.get("measured") or {}).get("rates") if isinstance(counts, dict) else None
    title = f"{run_dir.name}: {job.get('algo_spec', job.get('algorithm', '?'))}" if job else run_dir.name
    trace = build(logs, hosts, rates, title, _declared_compute(job.get("algorithm")))
    path = run_dir / FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(trace, separators=(",", ":")))
    tmp.replace(path)
    return path
