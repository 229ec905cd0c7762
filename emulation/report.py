"""Turn a results folder into `report.md` and PNG plots: the last step of the pipeline.

Reads only files (summary.json, and per run topology.json, workers/rank<R>.jsonl,
calibration.json, fidelity.json; docs/ARCHITECTURE.md), never a live network, so a
report can be regenerated anywhere. It must tolerate partial and failed results: every
field is optional, a missing file becomes a line under "Problems", and a failed
experiment says so in the report's first line, with the reason, before what exists.

Split of duties: `load_*` read files into `RunData`; the small metric helpers derive
numbers (median sync time, bytes per link, used switches); one `plot_*` function per
figure writes one PNG; the `md_*` functions write one section of report.md each;
`write_report` ties them together. Usage: `python -m emulation.report FOLDER`.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display in Mininet hosts, CI or Vagrant; set before any drawing

from matplotlib.cm import ScalarMappable  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from topologies.description import Topology  # noqa: E402

MB = 2**20  # gradient and payload sizes are reported in MiB ("MB", as the model specs)
PLOTS_DIR = "plots"
DPI = 110
NA = "–"


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


def read_jsonl(path: Path, problems: list) -> list[dict]:
    """Events of one worker log; a worker killed mid-write leaves a torn last line."""
    events, bad = [], 0
    for line in path.read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(ev, dict):
            events.append(ev)
    if bad:
        problems.append(f"`{path.name}`: {bad} unparsable line(s) skipped")
    return events


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
    logs = {}
    for p in sorted(workers.glob("rank*.jsonl")):
        m = re.fullmatch(r"rank(\d+)\.jsonl", p.name)
        if m:
            logs[int(m.group(1))] = read_jsonl(p, problems)
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


def sync_from_logs(logs: dict) -> list[float]:
    """Per measured iteration: max over ranks of t_done - max over ranks of t_ready."""
    ready: dict = {}
    done: dict = {}
    for events in logs.values():
        for ev in events:
            if ev.get("event") == "iter" and not ev.get("warmup") and ev.get("iter") is not None:
                r, d = num(ev.get("t_ready")), num(ev.get("t_done"))
                if r is not None and d is not None:
                    ready[ev["iter"]] = max(ready.get(ev["iter"], r), r)
                    done[ev["iter"]] = max(done.get(ev["iter"], d), d)
    return [done[i] - ready[i] for i in sorted(ready)]


def sync_seconds(rd: RunData) -> tuple[list[float], str]:
    """(seconds per iteration, source); falls back to the worker logs when analysis failed."""
    vals = [v for v in (num(x) for x in rd.run.get("sync_seconds") or []) if v is not None]
    if vals:
        return vals, "summary"
    vals = sync_from_logs(rd.logs)
    return vals, ("worker logs" if vals else "")


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
        return f"{host}-eth{nic if nic is not None else 0}"
    return f"rank{rank} nic{nic if nic is not None else 0}"


def worker_errors(rd: RunData) -> list[str]:
    return [f"rank {rank}: {ev.get('message', 'error')}" for rank, events in sorted(rd.logs.items())
            for ev in events if ev.get("event") == "error"]


# ---- layout --------------------------------------------------------------------------
def spread(names: list[str], y: float, width: float) -> dict:
    """Place names evenly across [0, width - 1] at height y."""
    if len(names) == 1:
        return {names[0]: ((width - 1) / 2, y)}
    step = (width - 1) / (len(names) - 1) if width > 1 else 1.0
    return {n: (i * step, y) for i, n in enumerate(names)}


def by_role(topo: Topology, role: str) -> list[str]:
    return sorted((n for n, v in topo.nodes.items() if v.role == role),
                  key=lambda n: (tuple(topo.nodes[n].coords), n))


def bcube_layout(topo: Topology) -> dict:
    """Servers in a row ordered by id (coords are the id's digits); level l in row l + 1."""
    servers = by_role(topo, "server")
    pos = spread(servers, 0, len(servers))
    levels = sorted({v.role for v in topo.nodes.values() if v.role.startswith("level")},
                    key=lambda r: int(r[5:]) if r[5:].isdigit() else 0)
    for row, role in enumerate(levels, start=1):
        pos.update(spread(by_role(topo, role), row, len(servers)))
    return pos


def fattree_layout(topo: Topology) -> dict:
    """Hosts, edge, aggregation, core rows bottom-up, each ordered by (pod, switch, id)."""
    hosts = by_role(topo, "server")
    pos = spread(hosts, 0, len(hosts))
    for row, role in enumerate(("edge", "agg", "core"), start=1):
        pos.update(spread(by_role(topo, role), row, len(hosts)))
    return pos


def generic_layout(topo: Topology) -> dict:
    import networkx as nx

    return {n: tuple(p) for n, p in nx.spring_layout(topo.graph(), seed=0).items()}


LAYOUTS = {"bcube": bcube_layout, "fattree": fattree_layout}


def row_names(topo: Topology) -> list[str]:
    """Names of the layout rows bottom-up, for the y axis (empty for the generic layout)."""
    if topo.kind == "fattree":
        return ["hosts", "edge", "agg", "core"]
    if topo.kind == "bcube":
        return ["servers"] + [f"level {lv}" for lv in range(int(topo.params.get("k", 0)))]
    return []


def natural_key(name: str) -> list:
    """'h2-eth0' < 'h10-eth0': compare digit runs as numbers."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def layout(topo: Topology) -> dict:
    pos = LAYOUTS.get(topo.kind, generic_layout)(topo)
    return pos if set(pos) == set(topo.nodes) else generic_layout(topo)


# ---- plots (one function per figure; each returns the PNG path or None) ---------------
def new_figure(w: float = 8.0, h: float = 4.5):
    fig = Figure(figsize=(w, h), dpi=DPI)
    return fig, fig.add_subplot(111)


def save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path)
    return path


def plot_sync_times(runs: list[RunData], out: Path) -> Path | None:
    """1. Sync time per iteration, one line per run, dashed line at its bound."""
    series = [(rd, sync_seconds(rd)[0]) for rd in runs]
    series = [(rd, v) for rd, v in series if v]
    if not series:
        return None
    fig, ax = new_figure()
    for i, (rd, vals) in enumerate(series):
        colour = f"C{i % 10}"
        ax.plot(range(1, len(vals) + 1), vals, marker="o", color=colour, label=rd.label)
        bound = num(rd.run.get("bound_seconds"))
        if bound:
            ax.axhline(bound, color=colour, linestyle="--", linewidth=1, label=f"{rd.label} bound")
    ax.set_title("Sync time per iteration (dashed: bandwidth bound)")
    ax.set_xlabel("measured iteration")
    ax.set_ylabel("sync time (s)")
    ax.set_ylim(bottom=0)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return save(fig, out / "sync_time.png")


def plot_training(runs: list[RunData], out: Path) -> Path | None:
    """Held-out loss and accuracy per iteration of the runs that trained (LeNet-5 on digits)."""
    series = [(rd, rd.run.get("training")) for rd in runs if rd.run.get("training")]
    if not series:
        return None
    fig = Figure(figsize=(10, 4), dpi=DPI)
    ax1, ax2 = fig.subplots(1, 2)
    for i, (rd, t) in enumerate(series):
        ax1.plot(t["iter"], t["loss"], color=f"C{i % 10}", label=rd.label)
        ax2.plot(t["iter"], t["accuracy"], color=f"C{i % 10}", label=rd.label)
    ax1.set(title="Held-out loss", xlabel="iteration", ylabel="cross-entropy")
    ax2.set(title="Held-out accuracy", xlabel="iteration", ylabel="accuracy", ylim=(0, 1))
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    ax2.legend(fontsize=7, loc="lower right")
    fig.suptitle("LeNet-5 on scikit-learn digits, synchronized data-parallel SGD")
    return save(fig, out / "training.png")


def plot_bound_ratio(runs: list[RunData], out: Path) -> Path | None:
    """2. Median sync time / bound per run: how well the bandwidth model predicts."""
    rows = [(rd.label, bound_ratio(rd)) for rd in runs]
    rows = [(label, r) for label, r in rows if r is not None]
    if not rows:
        return None
    fig, ax = new_figure(max(5.0, 1.2 * len(rows) + 2), 4.5)
    bars = ax.bar(range(len(rows)), [r for _, r in rows], color="C0")
    ax.bar_label(bars, fmt="%.2f", fontsize=9, label_type="center", color="white")  # clear of the line
    ax.set_ylim(0, max(1.0, max(r for _, r in rows)) * 1.25)
    ax.axhline(1.0, color="k", linestyle="--", linewidth=1, label="bound (ratio 1)")
    ax.set_xticks(range(len(rows)), [label for label, _ in rows], rotation=20, ha="right", fontsize=8)
    ax.set_title("Median sync time / bandwidth bound per run")
    ax.set_ylabel("median sync / bound")
    ax.set_xlabel("run")
    ax.legend(fontsize=8, loc="upper left")
    return save(fig, out / "bound_ratio.png")


def draw_links(ax, topo: Topology, pos: dict, loads: list[float]):
    """Idle links thin grey; loaded links coloured and widened by payload bytes."""
    peak = max(loads) if loads and max(loads) > 0 else 1.0
    widest = 5.0 if len(topo.hosts()) <= 32 else 2.0  # thick lines merge on big topologies
    norm = Normalize(0, peak / MB)
    idle = [(pos[topo.intfs[l.a].node], pos[topo.intfs[l.b].node]) for l, b in zip(topo.links, loads) if b <= 0]
    busy = [(l, b) for l, b in zip(topo.links, loads) if b > 0]
    ax.add_collection(LineCollection(idle, colors="0.85", linewidths=0.6, zorder=1))
    if not busy:
        return ScalarMappable(norm=norm, cmap="plasma_r")
    segs = [(pos[topo.intfs[l.a].node], pos[topo.intfs[l.b].node]) for l, _ in busy]
    lc = LineCollection(segs, cmap="plasma_r", norm=norm, linewidths=[0.8 + widest * b / peak for _, b in busy],
                        zorder=2)
    lc.set_array([b / MB for _, b in busy])
    ax.add_collection(lc)
    return ScalarMappable(norm=norm, cmap="plasma_r")


def draw_nodes(ax, topo: Topology, pos: dict, busy: set[str]):
    groups = {
        "host": ([n for n in topo.hosts()], "s", "C0"),
        "switch with traffic": ([s for s in topo.switches() if s in busy], "o", "C3"),
        "idle switch": ([s for s in topo.switches() if s not in busy], "o", "0.75"),
    }
    size = 60 if len(topo.nodes) <= 64 else 20
    for label, (names, marker, colour) in groups.items():
        if names:
            ax.scatter([pos[n][0] for n in names], [pos[n][1] for n in names], s=size, marker=marker,
                       c=colour, edgecolors="k", linewidths=0.5, zorder=3, label=f"{label} ({len(names)})")
    if len(topo.nodes) <= 64:
        for n, (x, y) in pos.items():
            dy = -0.18 if topo.nodes[n].kind == "host" else 0.15
            ax.annotate(n, (x, y + dy), ha="center", va="center", fontsize=7, zorder=4,
                        rotation=90 if topo.nodes[n].kind == "host" else 0,
                        bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=0.3))


def plot_link_bytes(rd: RunData, out: Path) -> Path | None:
    """3. Payload bytes per link drawn on the topology; used switches highlighted."""
    if rd.topo is None or not rd.run.get("link_bytes"):
        return None
    topo, pos = rd.topo, layout(rd.topo)
    loads = link_loads(topo, rd.run["link_bytes"])
    fig, ax = new_figure(max(10.0, 0.11 * len(topo.hosts())), 6)
    mappable = draw_links(ax, topo, pos, loads)
    draw_nodes(ax, topo, pos, busy_switches(topo, rd.run, loads))
    fig.colorbar(mappable, ax=ax, label="payload bytes on link, both directions (MB)", shrink=0.8)
    ax.autoscale()
    ax.margins(0.06, 0.12)
    rows = row_names(topo) if topo.kind in LAYOUTS else []
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xticks([])
    ax.set_xlabel("hosts ordered by id (BCube digits / Fat-Tree pod, edge, host)")
    ax.set_ylabel("tier")
    ax.set_title(f"{rd.label}: payload bytes per link")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.08), ncol=3, frameon=False)
    return save(fig, out / f"links_{rd.slug}.png")


def plot_switches(runs: list[RunData], out: Path) -> Path | None:
    """4. Switches in the topology versus switches that carried traffic, per run."""
    rows = [(rd.label, num(rd.run.get("switches_total")), num(rd.run.get("switches_with_traffic")))
            for rd in runs]
    rows = [r for r in rows if r[1] is not None or r[2] is not None]
    if not rows:
        return None
    fig, ax = new_figure(max(5.0, 1.4 * len(rows) + 2), 4.5)
    x, w = range(len(rows)), 0.38
    for off, col, label, colour in ((-w / 2, 1, "switches total", "0.7"), (w / 2, 2, "with traffic", "C3")):
        bars = ax.bar([i + off for i in x], [r[col] or 0 for r in rows], w, label=label, color=colour)
        ax.bar_label(bars, fmt="%g", fontsize=8)
    ax.set_xticks(list(x), [r[0] for r in rows], rotation=20, ha="right", fontsize=8)
    ax.set_title("Switches used per run")
    ax.set_ylabel("switches")
    ax.set_ylim(0, max(max(r[1] or 0, r[2] or 0) for r in rows) * 1.2 or 1)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("run")
    ax.legend(fontsize=8, loc="upper left")
    return save(fig, out / "switches.png")


def payload_points(rd: RunData) -> list[tuple[str, str, float, float]]:
    """(nic, direction, expected MB, measured MB) over the union of NICs (missing = 0)."""
    meas = rd.run.get("payload_bytes_measured") or {}
    exp = rd.run.get("payload_bytes_expected") or {}
    pts = []
    for nic in sorted(set(meas) | set(exp)):
        for d in ("tx", "rx"):
            e = num((exp.get(nic) or {}).get(d)) or 0.0
            m = num((meas.get(nic) or {}).get(d)) or 0.0
            pts.append((nic, d, e / MB, m / MB))
    return pts


def plot_payload(rd: RunData, out: Path) -> Path | None:
    """5. Measured versus expected payload bytes per host NIC; y = x is a perfect match."""
    pts = payload_points(rd)
    if not pts:
        return None
    fig, ax = new_figure(6, 5.5)
    for d, marker, colour in (("tx", "o", "C0"), ("rx", "^", "C1")):
        sel = [p for p in pts if p[1] == d]
        ax.scatter([p[2] for p in sel], [p[3] for p in sel], marker=marker, c=colour, alpha=0.7, label=d)
    top = max(max(p[2], p[3]) for p in pts) * 1.08 or 1.0
    ax.plot([0, top], [0, top], "k--", linewidth=1, label="y = x")
    for nic, d, e, m in pts:
        if abs(m - e) > 0.1 * max(e, 1e-9):  # name the NICs that disagree by more than 10%
            ax.annotate(f"{nic} {d}", (e, m), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_title(f"{rd.label}: payload per host NIC ({len(pts) // 2} NICs)")
    ax.set_xlabel("expected payload (MB, closed form on routes)")
    ax.set_ylabel("measured payload (MB, capture)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, out / f"payload_{rd.slug}.png")


def plot_timeline(rd: RunData, out: Path) -> Path | None:
    """6. Gantt chart of the last iteration's stages: one row per host NIC, colour = tree."""
    events = stage_events(rd)
    if not events:
        return None
    last = max((ev.get("iter") for ev in events if isinstance(ev.get("iter"), (int, float))), default=None)
    events = [ev for ev in events if ev.get("iter") == last]
    hosts = rank_hosts(rd)
    t_start = min(num(ev["t0"]) for ev in events)
    rows = sorted({nic_label(hosts.get(ev["rank"]), ev["rank"], ev.get("nic")) for ev in events},
                  key=natural_key)
    trees = sorted({str(ev.get("tree")) for ev in events})
    phases = sorted({str(ev.get("phase")) for ev in events})
    hatch = {p: h for p, h in zip(phases, ("", "//", "..", "xx", "\\\\"))}
    fig, ax = new_figure(10, max(3.0, 0.28 * len(rows) + 1.5))
    for ev in events:
        y = rows.index(nic_label(hosts.get(ev["rank"]), ev["rank"], ev.get("nic")))
        t0, t1 = num(ev["t0"]) - t_start, num(ev["t1"]) - t_start
        ax.barh(y, max(t1 - t0, 1e-6), left=t0, height=0.7, edgecolor="k", linewidth=0.3,
                color=f"C{trees.index(str(ev.get('tree'))) % 10}", hatch=hatch[str(ev.get("phase"))])
    ax.set_yticks(range(len(rows)), rows, fontsize=7 if len(rows) <= 40 else 5)
    ax.invert_yaxis()
    handles = [Patch(color=f"C{i % 10}", label=f"tree {t}") for i, t in enumerate(trees)]
    if len(phases) > 1:
        handles += [Patch(facecolor="white", edgecolor="k", hatch=hatch[p], label=p) for p in phases]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title(f"{rd.label}: stage timeline, iteration {last}")
    ax.set_xlabel("time since the iteration's first stage (s)")
    ax.set_ylabel("host NIC")
    ax.grid(axis="x", alpha=0.3)
    return save(fig, out / f"timeline_{rd.slug}.png")


def make_plots(runs: list[RunData], out: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """All figures as (caption, path); a figure that cannot be drawn becomes a problem line
    instead of losing the whole report."""
    jobs = [("Sync time per iteration", plot_sync_times, runs),
            ("Median sync time / bound", plot_bound_ratio, runs),
            ("Switches used", plot_switches, runs),
            ("Training convergence", plot_training, runs)]
    for rd in runs:
        jobs += [(f"{rd.label}: bytes per link", plot_link_bytes, rd),
                 (f"{rd.label}: payload per NIC", plot_payload, rd),
                 (f"{rd.label}: stage timeline", plot_timeline, rd)]
    made, problems = [], []
    for caption, fn, arg in jobs:
        try:
            path = fn(arg, out)
        except Exception as e:  # noqa: BLE001 - a report with one figure missing beats none
            problems.append(f"plot '{caption}' could not be drawn: {type(e).__name__}: {e}")
            continue
        if path is not None:
            made.append((caption, path))
    return made, problems


# ---- markdown ------------------------------------------------------------------------
def fmt(x, spec: str = ".3g") -> str:
    v = num(x)
    return NA if v is None else format(v, spec)


def yes_no(x) -> str:
    return NA if x is None else ("yes" if x else "**NO**")


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    clean = [[str(c).replace("|", "\\|").replace("\n", " ") for c in r] for r in rows]
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |"
                                                                          for r in clean]


def experiment_failed(summary: dict) -> bool:
    return summary.get("status") != "ok"  # a missing status cannot vouch for the results


def md_header(summary: dict, runs: list[RunData]) -> list[str]:
    name = summary.get("experiment") or "experiment"
    if experiment_failed(summary):
        reason = summary.get("error") or (f"status is {summary.get('status')!r}" if summary.get("status")
                                          else "summary.json has no status")
        return [f"# FAILED: syncbed experiment `{name}`", "",
                f"**The experiment FAILED: {reason}**", "",
                "What follows is whatever the experiment left behind; numbers may be partial.", ""]
    lines = [f"# syncbed experiment `{name}`", "", "**Status: ok**"]
    bad = [rd.label for rd in runs if rd.run.get("status") not in (None, "ok")]
    if bad:
        lines[-1] += f" (but run(s) {', '.join(bad)} failed)"
    return lines + [""]


def md_configuration(summary: dict, runs: list[RunData]) -> list[str]:
    lines = ["## Configuration", ""]
    for key in ("experiment", "started", "finished"):
        if summary.get(key):
            lines.append(f"- {key}: {summary[key]}")
    lines.append(f"- runs: {len(runs)}")
    rows = []
    for rd in runs:
        r, s = rd.run, (rd.topo.summary() if rd.topo else {})
        classes = ", ".join(f"{c} {v:g}" for c, v in s.get("link_classes", {}).items()) or NA
        rows.append([str(rd.index), r.get("topology", NA), r.get("algorithm", NA), fmt(r.get("workers"), "g"),
                     fmt(r.get("servers"), "g"), fmt(r.get("iters"), "g"),
                     f"{s.get('servers', NA)} / {s.get('switches', NA)} / {s.get('links', NA)}",
                     classes, f"`{r.get('dir', NA)}`"])
    if rows:
        lines += [""] + table(["#", "topology", "algorithm", "workers", "servers", "iters",
                               "hosts / switches / links", "link classes (Mbit/s)", "folder"], rows)
    return lines + [""]


def payload_range(run: dict) -> str:
    pr = run.get("payload_ratio") or {}
    return f"{fmt(pr.get('min'), '.3f')}..{fmt(pr.get('max'), '.3f')}" if pr else NA


def results_row(rd: RunData) -> list[str]:
    r = rd.run
    grad = num(r.get("gradient_bytes"))
    vals, src = sync_seconds(rd)
    med = median_sync(rd)
    med_s = NA if med is None else f"{med:.3f}" + (" (from logs)" if src == "worker logs" else "")
    used = f"{fmt(r.get('switches_with_traffic'), 'g')}/{fmt(r.get('switches_total'), 'g')}"
    faithful = r.get("faithful", rd.fidelity.get("faithful"))
    return [str(rd.index), r.get("topology", NA), r.get("algorithm", NA), fmt(r.get("workers"), "g"),
            NA if grad is None else f"{grad / MB:.3g}", fmt(r.get("link_mbps"), "g"), med_s,
            fmt(r.get("bound_seconds"), ".3f"), fmt(r.get("fluid_seconds"), ".3f"),
            fmt(bound_ratio(rd), ".2f"), payload_range(r), used,
            yes_no(r.get("correct")), yes_no(faithful), r.get("status", NA)]


def md_results(runs: list[RunData]) -> list[str]:
    header = ["#", "topology", "algorithm", "workers", "gradient MB", "link Mbit/s", "median sync s",
              "bound s", "fluid s", "ratio", "payload measured/expected min..max", "switches used/total",
              "correct", "faithful", "status"]
    if not runs:
        return ["## Results", "", "No runs were recorded.", ""]
    return ["## Results", ""] + table(header, [results_row(rd) for rd in runs]) + [""]


def md_calibration(runs: list[RunData]) -> list[str]:
    rows = [[str(rd.index), cls, fmt(c.get("configured_mbps"), "g"), fmt(c.get("measured_mbps"), ".3g"),
             fmt(c.get("ratio"), ".2f")]
            for rd in runs for cls, c in sorted(rd.calibration.items()) if isinstance(c, dict)]
    if not rows:
        return ["No link calibration was recorded.", ""]
    return ["### Link calibration (iperf3 per link class, before the run)", ""] + table(
        ["run", "link class", "configured Mbit/s", "measured Mbit/s", "ratio"], rows) + [""]


def describe(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {fmt(v, '.3g') if num(v) is not None else v}" for k, v in value.items()) or NA
    return NA if value is None else str(value)


def md_run_fidelity(rd: RunData) -> list[str]:
    f = rd.fidelity
    faithful = f.get("faithful", rd.run.get("faithful"))
    verdict = NA if faithful is None else ("faithful" if faithful else "**NOT faithful**")
    lines = [f"**{rd.label}**: {verdict}", "",
             f"- CPU: ovs-vswitchd {fmt(f.get('ovs_cpu_percent'), '.0f')}%, "
             f"workers {fmt(f.get('workers_cpu_percent'), '.0f')}%",
             f"- busiest link: {describe(f.get('busiest_link'))}",
             f"- capture drops: {describe(f.get('capture_drops'))}"]
    lines += [f"- reason: {r}" for r in f.get("reasons") or []]
    return lines + [""]


def md_fidelity(runs: list[RunData]) -> list[str]:
    lines = ["## Fidelity", ""] + md_calibration(runs)
    if runs:
        lines += ["### Verdict per run", ""]
    for rd in runs:
        lines += md_run_fidelity(rd)
    return lines


def md_problems(runs: list[RunData], plot_problems: list[str]) -> list[str]:
    lines = []
    for rd in runs:
        if rd.run.get("error"):
            lines.append(f"- {rd.label}: {rd.run['error']}")
        lines += [f"- {rd.label}: {p}" for p in rd.problems]
        lines += [f"- {rd.label}: worker {e}" for e in worker_errors(rd)]
        if not sync_seconds(rd)[0]:
            lines.append(f"- {rd.label}: no sync times (neither in summary.json nor in worker logs)")
    lines += [f"- {p}" for p in plot_problems]
    return (["## Problems", ""] + lines + [""]) if lines else []


def md_plots(plots: list[tuple[str, Path]], report_dir: Path) -> list[str]:
    if not plots:
        return ["## Plots", "", "No plot could be drawn from these results.", ""]
    lines = ["## Plots", ""]
    for caption, path in plots:
        lines += [f"### {caption}", "", f"![{caption}]({path.relative_to(report_dir).as_posix()})", ""]
    return lines


def md_howto() -> list[str]:
    return ["## How to read this", "",
            "- **sync time** of an iteration = last rank holding the synchronized gradient minus last "
            "rank whose gradient was ready (worker clocks, `time.time()`); warmup iterations excluded.",
            "- **bound** = the sync time the bandwidth model predicts for this algorithm on the "
            "configured links (emulation/analysis.py); **ratio** = median sync / bound. Near 1: the run is bandwidth-bound as the model says; "
            "well above 1: latency, CPU or protocol overhead dominate.",
            "- **fluid** = the same traffic, step by step (PS: push then pull; BML: its 2k stages), "
            "sharing every link max-min fairly on the installed routes (emulation/fluid.py). Equal "
            "to the bound: ideal flow-level sharing reaches it, so a ratio well above 1 comes from "
            "packets (TCP windows, queues, CPU), not from the flow pattern.",
            "- **payload measured/expected** compares TCP payload in the captures with the algorithm's "
            "closed form laid onto the routes, per host NIC and direction; 1.00..1.00 is exact. "
            "Header and ACK overhead is reported separately (wire_overhead).",
            "- **switches used/total**: switches whose ports carried payload. In the link plot, edge "
            "width and colour are payload bytes on that link (both directions); grey switches were idle.",
            "- **faithful** is the emulation's own verdict: calibration within tolerance, no CPU "
            "starvation of ovs-vswitchd or the workers, busiest link near its configured rate, no "
            "capture drops. Do not compare numbers from runs that are not faithful.",
            "- MB = 2^20 bytes; Mbit/s = 10^6 bit/s.", ""]


def md_claims(summary: dict) -> list[str]:
    """BML's claims next to the measurement, when the experiment has BML and PS-on-Fat-Tree runs."""
    from emulation.claims import bml_claims

    rows = bml_claims([r for r in summary.get("runs", []) if r.get("status") == "ok"])
    if not rows:
        return []
    lines = ["## BML against PS on Fat-Tree (Wang et al., NeurIPS 2018)", "",
             "Same number of servers; PS sharded and co-located on the workers. "
             "Paper: sync time 1/k of PS, k/5 of the switches, job completion time up to 56.4% lower.", ""]
    lines += table(["model", "BCube", "servers", "sync BML/PS (measured)", "1/k", "bound ratio",
                    "switches BCube/Fat-Tree", "k/5", "switches used", "JCT BML / PS s", "JCT reduction",
                    "paper", "BML NIC share max/min", "faithful"],
                   [[str(r["model"]), r["bcube"], str(r["servers"]), fmt(r["sync_ratio"]), fmt(r["sync_ratio_claim"]),
                     fmt(r["bound_ratio"]),
                     f"{r['switches_bcube']}/{r['switches_fattree']} = {fmt(r['switch_ratio'])}",
                     fmt(r["switch_ratio_claim"]),
                     f"{r['switches_used_bcube']}/{r['switches_used_fattree']} = {fmt(r['switch_used_ratio'])}",
                     f"{fmt(r['jct_bml_s'])} / {fmt(r['jct_ps_s'])}",
                     "–" if r["jct_reduction"] is None else f"{100 * r['jct_reduction']:.1f}%",
                     "56.4%", fmt(r["nic_share_spread"]), yes_no(r["faithful"])] for r in rows])
    lines += ["", "### Where the measurement agrees with the paper, and where not", ""]
    for r in rows:
        lines.append(f"- **{r['model']} on {r['bcube']}**: " + " ".join(_claim_sentences(r)))
    return lines + [""]


def _claim_sentences(r: dict) -> list[str]:
    out = []
    if r["sync_ratio"] is not None:
        off = r["sync_ratio"] / r["sync_ratio_claim"]
        verdict = "agrees with" if 0.8 <= off <= 1.25 else "departs from"
        out.append(f"BML synchronized in {fmt(r['sync_ratio'])} of PS's time, which {verdict} 1/k = "
                   f"{fmt(r['sync_ratio_claim'])} (the non-blocking bandwidth bounds of the two runs give "
                   f"{fmt(r['bound_ratio'])}).")
        if r.get("bml_over_bound") and r.get("ps_over_bound"):
            out.append(f"BML ran at {fmt(r['bml_over_bound'])}x its bound and PS at {fmt(r['ps_over_bound'])}x the "
                       f"non-blocking bound, so the measured ratio is {fmt(r['bound_ratio'])} x "
                       f"{fmt(r['bml_over_bound'])} / {fmt(r['ps_over_bound'])}: PS's all-to-all (N-1 flows into "
                       "every link) finishes with its slowest TCP flow, while BML talks to n-1 neighbours per stage.")
        cf = r.get("ps_collision_factor")
        if cf and cf > 1.05:
            out.append(f"PS on the Fat-Tree was slowed by ECMP: the per-pair hash put several flows on the same "
                       f"links, so its busiest link carried {fmt(cf)}x what a perfectly balanced Fat-Tree would "
                       "(the paper's analysis assumes a non-blocking network), which is why BML gains more than 1/k.")
        elif off < 0.8 or off > 1.25:
            out.append("The difference from 1/k comes from per-stage start-up costs and CPU on the emulated "
                       "network (see each run's sync time / bound).")
    if r["switch_ratio"] is not None:
        out.append(f"The switch count ratio is {fmt(r['switch_ratio'])} against k/5 = {fmt(r['switch_ratio_claim'])}"
                   + (" (the Fat-Tree is k=4 with all its hosts, so a 9-server BCube uses fewer of its switches than "
                      "a Fat-Tree sized exactly for 9 servers would)" if r["servers"] != 16 else "") + ".")
    if r["jct_reduction"] is not None:
        out.append(f"Job completion time fell by {100 * r['jct_reduction']:.1f}% (paper: up to 56.4%); the reduction "
                   "shrinks as compute dominates an iteration, since BML only speeds up communication.")
    if not r["faithful"]:
        out.append("One of the two runs was not faithful (see Fidelity): read its times with care.")
    return out


def write_report(folder: Path) -> Path:
    """Write `folder/report.md` and `folder/plots/*.png`; return the report path."""
    folder = Path(folder)
    summary = load_summary(folder)
    runs = [load_run(folder, i, r) for i, r in enumerate(summary["runs"], start=1)]
    plots, plot_problems = make_plots(runs, folder / PLOTS_DIR)
    lines = (md_header(summary, runs) + md_configuration(summary, runs) + md_results(runs) + md_claims(summary)
             + md_problems(runs, plot_problems) + md_fidelity(runs) + md_plots(plots, folder) + md_howto())
    path = folder / "report.md"
    path.write_text("\n".join(lines))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emulation.report",
                                 description="Write report.md and plots/ for a syncbed results folder.")
    ap.add_argument("folder", type=Path, help="results folder holding summary.json")
    args = ap.parse_args(argv)
    if not args.folder.is_dir():
        print(f"error: {args.folder} is not a folder", file=sys.stderr)
        return 2
    print(write_report(args.folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
