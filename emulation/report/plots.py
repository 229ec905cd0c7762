"""The report's figures: topology layouts and one function per PNG.

Every `plot_*` takes loaded runs (`RunData`, emulation/results/load.py) and a folder, writes
one PNG and returns its path, or None when the runs hold nothing to draw. `make_plots`
draws them all and turns a figure that fails into a problem line, so one bad figure never
loses the report. Layouts place a topology's nodes from the structure in their names
(BCube digits, Fat-Tree pod/switch/host), so the same node sits in the same place in every
figure; any other topology falls back to a spring layout.
"""
from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display in Mininet hosts, CI or Vagrant; set before any drawing

from matplotlib.cm import ScalarMappable  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from emulation import timeline  # noqa: E402
from emulation.results.load import (MB, RunData, bound_ratio, busy_switches, link_loads, nic_label,  # noqa: E402
                                   num, rank_hosts, sync_seconds)
from topologies.description import Topology  # noqa: E402

PLOTS_DIR = "plots"
DPI = 110


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
    """Held-out loss and accuracy of the runs that trained (real training on the digits): per
    iteration, and accuracy against wall seconds since the run's first iteration, where the
    time to an accuracy can be read off; one row per model."""
    series = [(rd, rd.run.get("training")) for rd in runs if rd.run.get("training")]
    if not series:
        return None
    model_names = list(dict.fromkeys(str(rd.run.get("model")) for rd, _ in series))
    fig = Figure(figsize=(14, 4 * len(model_names)), dpi=DPI)
    axes = fig.subplots(len(model_names), 3, squeeze=False)
    for row, model in zip(axes, model_names):
        ax1, ax2, ax3 = row
        for i, (rd, t) in enumerate(series):
            if str(rd.run.get("model")) != model:
                continue
            label = f"#{rd.index} {rd.run.get('algo_spec') or rd.run.get('algorithm')}"
            ax1.plot(t["iter"], t["loss"], color=f"C{i % 10}", label=label)
            ax2.plot(t["iter"], t["accuracy"], color=f"C{i % 10}", label=label)
            if t.get("seconds") and None not in t["seconds"]:
                ax3.plot(t["seconds"], t["accuracy"], color=f"C{i % 10}", label=label)
        ax1.set(title=f"{model}: held-out loss", xlabel="iteration", ylabel="cross-entropy")
        ax2.set(title=f"{model}: held-out accuracy", xlabel="iteration", ylabel="accuracy", ylim=(0, 1))
        ax3.set(title=f"{model}: accuracy against time", xlabel="seconds since the first iteration (emulated)",
                ylabel="accuracy", ylim=(0, 1))
        for ax in row:
            ax.grid(alpha=0.3)
        ax2.legend(fontsize=7, loc="lower right")
    fig.suptitle("Real training on scikit-learn's digits, synchronized data-parallel SGD")
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


def stage_slices(rd: RunData) -> list[dict]:
    """The executors' stage events as timeline.json holds them (emulation/timeline.py `slices`,
    each with its event's fields and its rank): the figures below and the trace draw the same spans."""
    return [s for s in timeline.slices(rd.logs) if s["kind"] == "stage"]


def plot_overlap(rd: RunData, out: Path) -> Path | None:
    """7. Layer-wise runs (MG-WFBP and its baselines): rank 0's last iteration, one row for
    backprop (each layer's backward, alternating shades) and one for communication (each
    group's all-reduce), so the overlap and the gaps are visible."""
    events = [ev for ev in stage_slices(rd) if ev.get("rank") == 0]
    if not any(ev.get("phase") == "backward" for ev in events):
        return None
    last = max(ev.get("iter") for ev in events if ev.get("phase") == "backward")
    events = [ev for ev in events if ev.get("iter") == last and ev.get("phase") in ("backward", "allreduce")]
    t_start = min(num(ev["t0"]) for ev in events)
    fig, ax = new_figure(10, 2.6)
    for ev in events:
        row = 0 if ev["phase"] == "backward" else 1
        t0, t1 = num(ev["t0"]) - t_start, num(ev["t1"]) - t_start
        idx = ev.get("layer", ev.get("group", 0)) or 0
        color = ("C0" if idx % 2 else "#7fb3d5") if row == 0 else ("C1" if idx % 2 else "#f5b041")
        ax.barh(row, max(t1 - t0, 1e-6), left=t0, height=0.6, color=color, edgecolor="k", linewidth=0.2)
    groups = sum(ev["phase"] == "allreduce" for ev in events)
    layers = sum(ev["phase"] == "backward" for ev in events)
    ax.set_yticks([0, 1], [f"backward ({layers} layers)", f"all-reduce ({groups} groups)"], fontsize=8)
    ax.invert_yaxis()
    ax.set_title(f"{rd.label}: rank 0, iteration {last}: backprop and communication")
    ax.set_xlabel("time since backprop began (s)")
    ax.grid(axis="x", alpha=0.3)
    return save(fig, out / f"overlap_{rd.slug}.png")


def plot_timeline(rd: RunData, out: Path) -> Path | None:
    """6. Gantt chart of the last iteration's stages: one row per host NIC, colour = tree."""
    events = [ev for ev in stage_slices(rd) if ev.get("phase") != "backward"]  # backprop: plot_overlap
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


PLOT_PROBLEM = "plot "  # how a figure's problem line starts (markdown.drawn_before finds them by it)


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
                 (f"{rd.label}: stage timeline", plot_timeline, rd),
                 (f"{rd.label}: backprop and communication overlap", plot_overlap, rd)]
    made, problems = [], []
    for caption, fn, arg in jobs:
        try:
            path = fn(arg, out)
        except Exception as e:  # noqa: BLE001 - a report with one figure missing beats none
            problems.append(f"{PLOT_PROBLEM}'{caption}' could not be drawn: {type(e).__name__}: {e}")
            continue
        if path is not None:
            made.append((caption, path))
    return made, problems
