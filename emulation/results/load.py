"""Read a results folder into `RunData`, and re-derive what summary.json may lack.

Reads only files (summary.json, and per run topology.json, workers/rank<R>.jsonl,
calibration.json, fidelity.json), never a live network. Every file is optional: a
missing or unreadable one becomes a line in `RunData.problems`, and a folder without
summary.json still lists the run folders it holds (`discover_runs`).

Split of duties: `read_*`/`load_*` turn files into dicts and `RunData`; the metric
helpers below them re-derive numbers from what was loaded (sync times from the worker
logs when the analysis failed, bytes per link from the switch counters, the switches
that carried traffic, the stage events of the timeline). Nothing here draws or writes.
"""
from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from topologies.description import Topology, intf_name
from workloads.eventlog import read_logs, sync_series

MB = 2**20  # gradient and payload sizes are reported in MiB ("MB", as the model specs)


# ---- loading ------------------------------------------------------------------------
@dataclass
class RunData:
    """One run of the experiment: its summary entry plus whatever its folder holds."""

    index: int  # 1-based position in summary["runs"]
    run: dict
    dir: Path | None
    topo: Topology | None = None
    calibration: dict = field(default_factory=dict)  # link class -> {configured_mbps, ...}
    fidelity: dict = field(default_factory=dict)
    logs: dict = field(default_factory=dict)  # rank -> [event dicts]
    problems: list = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"#{self.index} {self.run.get('topology', '?')} {self.run.get('algorithm', '?')}"

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9]+", "_", f"{self.index:02d}_{self.run.get('topology', '')}_"
                      f"{self.run.get('algorithm', '')}").strip("_")


def read_json(path: Path, problems: list, required: bool = False):
    """Parsed JSON, or None with a line in `problems` (only if required or unreadable)."""
    if not path.is_file():
        if required:
            problems.append(f"`{path.name}` is missing")
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        problems.append(f"`{path.name}` is unreadable: {e}")
        return None


def load_summary(folder: Path) -> dict:
    problems: list = []
    summary = read_json(folder / "summary.json", problems, required=True)
    if not isinstance(summary, dict):
        reason = problems[0] if problems else "`summary.json` is not a JSON object"
        return {"status": "failed", "error": f"{reason}; the analysis did not finish",
                "experiment": folder.name, "runs": discover_runs(folder)}
    if not isinstance(summary.get("runs"), list):
        summary["runs"] = []
    return summary


def discover_runs(folder: Path) -> list[dict]:
    """Without summary.json, still show the run folders that exist (topology or logs)."""
    found = sorted({p.parent for pat in ("topology.json", "workers") for p in folder.glob(f"**/{pat}")
                    if len(p.relative_to(folder).parts) <= 3})
    return [{"dir": str(d.relative_to(folder)), "status": "failed"} for d in found]


def load_topology(path: Path, problems: list) -> Topology | None:
    d = read_json(path, problems, required=True)
    if d is None:
        return None
    try:
        return Topology.from_dict(d)
    except (KeyError, TypeError, ValueError) as e:
        problems.append(f"`topology.json` is not a topology description: {e!r}")
        return None


def load_worker_logs(workers: Path, problems: list) -> dict[int, list]:
    logs, bad = read_logs(workers)
    problems += [f"`rank{rank}.jsonl`: {n} unparsable line(s) skipped" for rank, n in bad.items()]
    return logs


def load_run(folder: Path, index: int, run) -> RunData:
    run = run if isinstance(run, dict) else {}
    rdir = folder / run["dir"] if run.get("dir") else None
    rd = RunData(index, run, rdir, fidelity=dict(run.get("fidelity") or {}))
    if rdir is None or not rdir.is_dir():
        rd.problems.append(f"run folder `{run.get('dir')}` does not exist")
        return rd
    rd.topo = load_topology(rdir / "topology.json", rd.problems)
    rd.logs = load_worker_logs(rdir / "workers", rd.problems)
    cal = read_json(rdir / "calibration.json", rd.problems)
    rd.calibration = (cal or {}).get("classes") or rd.fidelity.get("calibration", {}).get("classes") or {}
    rd.fidelity.update(read_json(rdir / "fidelity.json", rd.problems) or {})
    return rd


# ---- metrics -------------------------------------------------------------------------
def num(x) -> float | None:
    """A finite float, or None for missing/non-numeric values."""
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def compress_seconds(run: dict | None) -> float | None:
    """A run's compressor CPU per sync, measured inside the sync: the sum of the durations its
    algorithm declares (`Algorithm.compute`: a sparsifier's selection and merges) that
    summary.json holds; None when it holds none (or the algorithm is not registered)."""
    from workloads.algorithms import base  # noqa: PLC0415 - the registry imports torch

    try:
        declared = base.get(str(run.get("algorithm"))).compute if run else ()
    except ValueError:
        declared = ()
    parts = [num(run.get(c.key)) for c in declared]
    return sum(p for p in parts if p is not None) if any(p is not None for p in parts) else None


# Per measured iteration: max over ranks of t_done - max over ranks of t_ready, defined once
# in workloads/eventlog.py (`IterationTimes.sync`); the report's name for it.
sync_from_logs = sync_series


def sync_seconds(rd: RunData) -> tuple[list[float], str]:
    """(seconds per iteration, source); falls back to the worker logs when analysis failed."""
    vals = [v for v in (num(x) for x in rd.run.get("sync_seconds") or []) if v is not None]
    if vals:
        return vals, "summary"
    vals = sync_from_logs(rd.logs)
    return vals, ("worker logs" if vals else "")


def median_of(value) -> float | None:
    """Median of a list of numbers, or a single number itself; None when nothing is numeric.

    Summary fields are lists per iteration (`iteration_seconds`) or one value
    (`predicted_iteration_seconds` may be either)."""
    vals = [num(x) for x in value] if isinstance(value, (list, tuple)) else [num(value)]
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def median_sync(rd: RunData) -> float | None:
    vals, _ = sync_seconds(rd)
    return statistics.median(vals) if vals else None


def bound_ratio(rd: RunData) -> float | None:
    med, bound = median_sync(rd), num(rd.run.get("bound_seconds"))
    return med / bound if med is not None and bound else None


def byte_total(entry) -> float:
    if not isinstance(entry, dict):
        return num(entry) or 0.0
    return (num(entry.get("tx")) or 0.0) + (num(entry.get("rx")) or 0.0)


def link_loads(topo: Topology, link_bytes: dict) -> list[float]:
    """Payload bytes per link (both directions), by topo.links index.

    Counters are per switch interface; a switch-to-switch link is seen from both ends, so
    take the larger end rather than the sum (one end's tx is the other end's rx)."""
    loads = [0.0] * len(topo.links)
    index = {x: i for i, link in enumerate(topo.links) for x in (link.a, link.b)}
    for intf, entry in (link_bytes or {}).items():
        if intf in index:
            loads[index[intf]] = max(loads[index[intf]], byte_total(entry))
    return loads


def busy_switches(topo: Topology, run: dict, loads: list[float]) -> set[str]:
    busy = {s for s in run.get("switches_used") or [] if s in topo.nodes}
    for link, load in zip(topo.links, loads):
        if load > 0:
            busy |= {n for n in (topo.intfs[link.a].node, topo.intfs[link.b].node)
                     if topo.nodes[n].kind == "switch"}
    return busy


def stage_events(rd: RunData) -> list[dict]:
    return [dict(ev, rank=rank) for rank, events in rd.logs.items() for ev in events
            if ev.get("event") == "stage" and num(ev.get("t0")) is not None
            and num(ev.get("t1")) is not None]


def rank_hosts(rd: RunData) -> dict[int, str]:
    return {rank: ev["host"] for rank, events in rd.logs.items() for ev in events
            if ev.get("event") == "start" and ev.get("host")}


def nic_label(host: str | None, rank: int, nic) -> str:
    if isinstance(nic, str) and nic:
        return nic
    if host:
        return intf_name(host, nic if nic is not None else 0)
    return f"rank{rank} nic{nic if nic is not None else 0}"


def worker_errors(rd: RunData) -> list[str]:
    return [f"rank {rank}: {ev.get('message', 'error')}" for rank, events in sorted(rd.logs.items())
            for ev in events if ev.get("event") == "error"]
