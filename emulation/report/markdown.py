"""report.md: one function per section, and `write_report`, which ties the pipeline's last step together.

`write_report(folder)` loads the folder (emulation/results/load.py), draws the figures
(plots.py), then writes the sections in order: header (a failed experiment says so in the
first line, with the reason), configuration, results (columns from columns.py), one
section per paper whose algorithms ran (emulation/papers/), problems, fidelity, plots,
each run's timeline.json (a Chrome trace, emulation/timeline.py), how to read it. Every
`md_*` returns a list of lines; none reads a file.
Usage: `syncbed report FOLDER` (emulation/cli.py).
"""
from __future__ import annotations

from pathlib import Path

from emulation import papers
from emulation.results.columns import NA, fmt, results_table, table
from emulation.results.load import RunData, load_run, load_summary, num, sync_seconds, worker_errors
from emulation.report.plots import PLOT_PROBLEM, PLOTS_DIR, make_plots
from emulation.timeline import FILE as TIMELINE_FILE


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


def md_results(runs: list[RunData]) -> tuple[list[str], list[str]]:
    """The results table, one row per run, its columns from emulation/results/columns.py;
    also the problems of column sets that had to be left out."""
    if not runs:
        return ["## Results", "", "No runs were recorded.", ""], []
    header, rows, problems = results_table(runs)
    return ["## Results", ""] + table(header, rows) + [""], problems


def md_papers(summary: dict) -> tuple[list[str], list[str]]:
    """One section per paper (emulation/papers/) whose algorithms ran, and its problems.

    Papers see the run records of summary.json that finished ok, as `syncbed analyze` would."""
    runs = [r for r in summary.get("runs") or [] if isinstance(r, dict) and r.get("status") == "ok"]
    lines, problems = [], []
    try:
        relevant = papers.relevant(runs)
    except Exception as e:  # noqa: BLE001 - a broken paper module must not lose the report
        return [], [f"paper sections could not be written: {type(e).__name__}: {e}"]
    for paper in relevant:
        try:
            lines += paper.section(runs)
        except Exception as e:  # noqa: BLE001
            problems.append(f"paper '{paper.name}' section could not be written: {type(e).__name__}: {e}")
    return lines, problems


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
    unverified = f.get("unverified") or []
    verdict = (("**NOT faithful**" if faithful is False else "faithful") if faithful is not None
               else f"unverified ({', '.join(unverified)})" if unverified else NA)
    lines = [f"**{rd.label}**: {verdict}", "",
             f"- CPU: ovs-vswitchd {fmt(f.get('ovs_cpu_percent'), '.0f')}%, "
             f"workers {fmt(f.get('workers_cpu_percent'), '.0f')}%",
             f"- busiest link: {describe(f.get('busiest_link'))}",
             f"- capture drops: {describe(f.get('capture_drops'))}"]
    if num(rd.run.get("cpu_probe_seconds")) is not None:  # runs from before 2026-11-29 have none
        lines.append(f"- CPU probe at the start (emulation/cpuprobe.py): {rd.run['cpu_probe_seconds']:.4f} s")
    if rd.run.get("tcp_congestion_control"):  # folders from before it was pinned have none
        lines.append(f"- TCP congestion control of the hosts: {rd.run['tcp_congestion_control']}")
    if rd.run.get("tcp_rto_min_ms"):
        lines.append(f"- Minimum TCP retransmission timeout of the hosts: {rd.run['tcp_rto_min_ms']} ms "
                     "(not the kernel's 200 ms; docs/FIDELITY.md #23)")
    if rd.run.get("machine"):  # older runs have none
        lines.append(f"- machine: {describe_machine(rd.run['machine'])}")
    lines += [f"- reason: {r}" for r in f.get("reasons") or []]
    lines += [f"- note: {n}" for n in f.get("notes") or []]
    return lines + [""]


def describe_machine(m: dict) -> str:
    """One line for a run's `machine` record (cpuprobe.machine)."""
    cpu, versions = m.get("cpu") or {}, m.get("versions") or {}
    model = " ".join(x for x in (cpu.get("model_name"), cpu.get("family") and
                                 f"(family {cpu['family']}, model {cpu.get('model')}, stepping {cpu.get('stepping')})")
                     if x)
    return (f"{model or 'CPU unknown'}, {m.get('cores')} cores, kernel {m.get('kernel')}; "
            f"torch {versions.get('torch')} dispatching {m.get('torch_cpu_capability')}, numpy {versions.get('numpy')}, "
            + "".join(f"{name} {versions[name]}, " for name in ("scipy", "networkx") if versions.get(name))
            + f"Python {versions.get('python')}")


def md_fidelity(runs: list[RunData]) -> list[str]:
    lines = ["## Fidelity", ""] + md_calibration(runs)
    if runs:
        lines += ["### Verdict per run", ""]
    for rd in runs:
        lines += md_run_fidelity(rd)
    return lines


def md_problems(runs: list[RunData], other_problems: list[str]) -> list[str]:
    lines = []
    for rd in runs:
        if rd.run.get("error"):
            lines.append(f"- {rd.label}: {rd.run['error']}")
        lines += [f"- {rd.label}: {p}" for p in rd.problems]
        lines += [f"- {rd.label}: worker {e}" for e in worker_errors(rd)]
        if not sync_seconds(rd)[0]:
            lines.append(f"- {rd.label}: no sync times (neither in summary.json nor in worker logs)")
    lines += [f"- {p}" for p in other_problems]
    return (["## Problems", ""] + lines + [""]) if lines else []


def md_plots(plots: list[tuple[str, Path]], report_dir: Path) -> list[str]:
    if not plots:
        return ["## Plots", "", "No plot could be drawn from these results.", ""]
    lines = ["## Plots", ""]
    for caption, path in plots:
        lines += [f"### {caption}", "", f"![{caption}]({path.relative_to(report_dir).as_posix()})", ""]
    return lines


def md_timelines(timelines: list[tuple[str, str]]) -> list[str]:
    """Each run's Chrome trace (`timeline.json`, emulation/timeline.py), linked, and how to open it."""
    if not timelines:
        return []
    lines = ["## Timelines", "",
             "Each run's `timeline.json` is a Chrome trace: open https://ui.perfetto.dev and choose "
             "\"Open trace file\" (or load it in chrome://tracing). One process per rank: backward, sync and "
             "the time between iterations on the thread \"iteration\", each step an executor logged (ring "
             "steps, PS push/pull, gTop-k rounds, BML stages per tree, layer-wise groups and per-layer "
             "backward) nested in its sync or on a thread of its own where it overlaps, sparsification and "
             "merging where the executor logged their durations; the busiest links' captured rate as "
             "counter tracks.", ""]
    lines += [f"- {label}: [timeline.json]({path})" for label, path in timelines]
    return lines + [""]


def md_howto() -> list[str]:
    return ["## How to read this", "",
            "- **sync time** of an iteration = last rank holding the synchronized gradient minus last "
            "rank whose gradient was ready (worker clocks, `time.time()`); warmup iterations excluded.",
            "- **bound** = the sync time the bandwidth model predicts for this algorithm on the "
            "configured links (emulation/analysis.py); **ratio** = median sync / bound. Near 1: the run is bandwidth-bound as the model says; "
            "well above 1: latency, CPU or protocol overhead dominate. **step bound** = the sum over the "
            "algorithm's steps (PS push then pull, BML's stages, one group after another) of each step's "
            "busiest link: the fair bound for an algorithm whose steps run one after another, equal to "
            "the bound for one-step algorithms (ring, gloo); layer-wise schedules overlap backprop, so "
            "their sync can beat both. **shared links** (shown when any): links where flows of one step "
            "that the plan assumed apart meet (hash ECMP, relays) and that set that step's time above "
            "its endpoints' (emulation/expected.py `step_bound`).",
            "- **simulated** = the same plan on the same routes in SimGrid's flow model "
            "(emulation/simulator/core.py): each step's flows share every link max-min fairly; layer-wise "
            "algorithms also wait for backprop and pay their all-reduce start-up a per group. "
            "**simulated/measured** near 1: the flow model explains the run (the projection to "
            "thousands of workers rests on it); well below 1: packets (TCP windows, incast, queues, "
            "CPU) cost what no flow model has (docs/PROJECTION.md).",
            "- **payload measured/expected** compares TCP payload in the captures with the algorithm's "
            "closed form laid onto the routes, per host NIC and direction; 1.00..1.00 is exact. "
            "Header and ACK overhead is reported separately (wire_overhead).",
            "- **failed checks** lists every check of the run that failed (emulation/checks.py): the "
            "result against the oracle, payload per host NIC outside its tolerance or on a NIC the closed "
            "form leaves empty (with their bytes), the same per switch port (links), and each reason the "
            "run was not faithful (calibration, CPU, capture drops, the link probe's fit). A run passes "
            "the byte check only when both ratios are within tolerance and no port is unexpected.",
            "- **switches used/total**: switches whose ports carried payload. In the link plot, edge "
            "width and colour are payload bytes on that link (both directions); grey switches were idle.",
            "- **faithful** is the emulation's own verdict: calibration within tolerance, no CPU "
            "starvation of ovs-vswitchd or the workers, busiest link near its configured rate, no "
            "capture drops, a link probe fit with R^2 >= 0.9 where one was planned with. **unverified** "
            "names what was not measured (links: no calibration; cpu: no CPU samples; capture). Do not "
            "compare numbers from runs that are not faithful.",
            "- MB = 2^20 bytes; Mbit/s = 10^6 bit/s.", ""]


def drawn_before(report: Path) -> tuple[list[str], list[str]] | None:
    """The Plots section of an earlier `report.md` and its lines on figures that could not be
    drawn, or None when there is none to reuse (no report, no Plots section, or a figure it links
    is gone from the folder)."""
    if not report.exists():
        return None
    lines = report.read_text().split("\n")
    if "## Plots" not in lines:
        return None
    start = lines.index("## Plots")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    section = lines[start:end]
    linked = [ln[ln.index("](") + 2:-1] for ln in section if ln.startswith("![")]
    if not all((report.parent / f).exists() for f in linked):
        return None
    return section, [ln[2:] for ln in lines[:start] if ln.startswith(f"- {PLOT_PROBLEM}'")]  # md_problems' "- "


def write_report(folder: Path, redraw: bool = True) -> Path:
    """Write `folder/report.md` and `folder/plots/*.png`; return the report path. With
    `redraw=False` (syncbed analyze --no-plots) the figures already in the folder and the earlier
    report's Plots section are kept as they are, and drawn only if there are none: the report's
    tables and verdicts are new, its figures are those of the last drawing."""
    folder = Path(folder)
    summary = load_summary(folder)
    runs = [load_run(folder, i, r) for i, r in enumerate(summary["runs"], start=1)]
    kept = None if redraw else drawn_before(folder / "report.md")
    if kept:
        plot_lines, plot_problems = kept
    else:
        plots, plot_problems = make_plots(runs, folder / PLOTS_DIR)
        plot_lines = md_plots(plots, folder)
    timelines = [(rd.label, f"{rd.run['dir']}/{TIMELINE_FILE}") for rd in runs
                 if rd.run.get("dir") and (folder / str(rd.run["dir"]) / TIMELINE_FILE).exists()]
    results, column_problems = md_results(runs)
    paper_sections, paper_problems = md_papers(summary)
    lines = (md_header(summary, runs) + md_configuration(summary, runs) + results + paper_sections
             + md_problems(runs, column_problems + paper_problems + plot_problems) + md_fidelity(runs)
             + plot_lines + md_timelines(timelines) + md_howto())
    path = folder / "report.md"
    path.write_text("\n".join(lines))
    return path

