"""The report of a SimGrid projection (`syncbed project`, emulation/simulator/core.py): report.md and,
when the projection spans several sizes, plots/projection.png (sync time against P per
algorithm, each beside its busiest-link bound).

It reads the projection's summary.json only (its runs carry the emulation's field names plus
`"simulated": true`), and, when the projection was run with `--measured`, its `validation`
rows: simulated against measured sync time per run of the measured folder.
"""
from __future__ import annotations

from pathlib import Path

from emulation.results.columns import NA, fmt, table
from emulation.report.plots import PLOTS_DIR, new_figure, save

# The target for dense algorithms at the emulated scale: simulated within 10% of measured.
VALIDATION_TOLERANCE = 0.10


def _ratio(x) -> str:
    return NA if x is None else f"{x:.2f}"


def run_rows(runs: list[dict]) -> list[list[str]]:
    rows = []
    for r in runs:
        s = r.get("simulator", {})
        rows.append([r["topology"], str(r["workers"]), r["algo_spec"], r["model"],
                     fmt(r["median_sync_seconds"], ".4f"), fmt(r.get("simulated_iteration_seconds"), ".4f"),
                     fmt(r["bound_seconds"], ".4f"), _ratio(r.get("sync_over_bound")),
                     "yes" if r.get("payload_equal") else "NO",
                     fmt(s.get("wall_seconds"), ".1f"), fmt(s.get("simgrid_cpu_seconds"), ".2f")])
    return rows


def validation_lines(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    out = ["## Simulated against measured", "",
           "Same plans, hosts and routes as the measured runs; measured = their median sync seconds "
           "(layer-wise algorithms: the communication left after backprop, and the iteration).", ""]
    cells = []
    for v in rows:
        cells.append([v["topology"], v["algo_spec"], v["model"], str(v["workers"]),
                      fmt(v["measured_seconds"], ".3f"), fmt(v["simulated_seconds"], ".3f"),
                      _ratio(v["sim_over_measured"]), fmt(v["bound_seconds"], ".3f"), _ratio(v["measured_over_bound"]),
                      fmt(v.get("measured_iteration_seconds"), ".3f"), fmt(v.get("simulated_iteration_seconds"), ".3f"),
                      {True: "yes", False: "no"}.get(v.get("faithful"), NA)])
    out += table(["topology", "algorithm", "model", "N", "measured s", "simulated s", "sim/meas", "bound s",
                  "meas/bound", "meas iter s", "sim iter s", "faithful"], cells)
    within = [v for v in rows if v["sim_over_measured"] is not None
              and abs(v["sim_over_measured"] - 1) <= VALIDATION_TOLERANCE]
    outside = [v for v in rows if v["sim_over_measured"] is not None
               and abs(v["sim_over_measured"] - 1) > VALIDATION_TOLERANCE]
    out += ["", f"{len(within)} of {len(rows)} runs within {VALIDATION_TOLERANCE:.0%} of the measurement."]
    if outside:
        out.append("Outside: " + ", ".join(f"{v['topology']} {v['algo_spec']} ({_ratio(v['sim_over_measured'])})"
                                            for v in outside)
                   + ". The flow model gives each step its max-min share with no per-message cost; where the "
                     "emulation is far above its bound (meas/bound), the difference is packet-level (TCP incast "
                     "on PS, per-stage start-ups on BML: docs/PROJECTION.md).")
    return out + [""]


def plot_projection(runs: list[dict], out: Path) -> Path | None:
    """Simulated sync seconds against workers, one line per algorithm (and topology kind), with
    its busiest-link bound dashed; None when no algorithm was projected at two sizes."""
    series: dict[str, list] = {}
    for r in runs:
        kind = r["topology"].split("(")[0]
        series.setdefault(f"{kind} {r['algo_spec']}", []).append(r)
    series = {k: sorted(v, key=lambda r: r["workers"]) for k, v in series.items() if len({r["workers"] for r in v}) > 1}
    if not series:
        return None
    fig, ax = new_figure(8.0, 4.8)
    for i, (label, rs) in enumerate(sorted(series.items())):
        color = f"C{i % 10}"
        xs = [r["workers"] for r in rs]
        ax.plot(xs, [r["median_sync_seconds"] for r in rs], "o-", color=color, label=f"{label} (simulated)")
        ax.plot(xs, [r["bound_seconds"] for r in rs], "--", color=color, alpha=0.6, label=f"{label} bound")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("workers P")
    ax.set_ylabel("sync seconds")
    mb = sorted({r["gradient_bytes"] / 2**20 for r in runs})
    ax.set_title(f"SimGrid projection: sync time against P ({', '.join(f'{m:g}' for m in mb)} MiB)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return save(fig, out / PLOTS_DIR / "projection.png")


SOURCES = {"plan": "the plan's flows", "model": "a model of its bytes (density, block size; ours: "
            "_blocksparse.modelled_steps)", "logged": "every counted sync's bytes as its ranks logged them, "
            "replayed one after another (the median over them; checked against the logged bytes, as the "
            "emulation's analysis checks the capture)"}


def compute_lines(runs: list[dict]) -> list[str]:
    """Where a run's compute seconds and bytes come from, for the runs that charge compute or whose
    bytes are not the plan's (docs/PROJECTION.md, "Compute and data-dependent bytes")."""
    out = []
    for r in runs:
        src = r.get("bytes_source") or "plan"
        if not r.get("compute_costs") and src == "plan":
            continue
        costs = ", ".join(f"{k} = {c['c0_seconds']:.4g} s + {c['c1_seconds_per_element']:.3g} s x elements"
                          for k, c in sorted((r.get("compute_costs") or {}).items()))
        out.append(f"- {r['topology']} {r['algo_spec']} ({r['model']}): bytes from {SOURCES.get(src, src)}; "
                   + (f"compute {r.get('compute_seconds_per_sync', 0):.4g} s per sync from {r.get('compute_source')} "
                      f"({costs}), charged serially before the first step and after the last (the executor "
                      "does it between its messages, so the sync is its flows plus it)"
                      if costs else "no compute charged"))
    return ["## Compute and bytes", ""] + out + [""] if out else []


def padded_lines(runs: list[dict]) -> list[str]:
    """The runs simulated with unequal shards padded to the largest (emulation/simulator/orbits.py,
    `padded_exact`): what was padded and the two bounds that make it exact."""
    out = []
    for r in runs:
        pad = (r.get("simulator", {}).get("reduction") or {}).get("padded")
        if not pad:
            continue
        sizes = " and ".join("/".join(f"{b:,}" for b in step) for step in pad["block_bytes"])
        out.append(f"- {r['topology']} {r['algo_spec']} ({r['model']}): shards of {sizes} bytes per step simulated "
                   f"padded to the largest, the same pairs and routes; per step the unequal plan's busiest-NIC "
                   f"bound and the padded flows' max-min completion bound are "
                   + ", ".join(f"{lo:.6g} s and {up:.6g} s"
                               for lo, up in zip(pad["lower_seconds"], pad["upper_seconds"]))
                   + " at full link rate, so the padding changes no time. Bytes per NIC = closed form checks "
                     "what SimGrid carried (the padded flows).")
    return ["## Unequal shards, padded", ""] + out + [""] if out else []


def render(summary: dict, plots: list[Path]) -> str:
    runs = summary.get("runs", [])
    lines = [f"# Projection: {summary.get('experiment')}", "",
             f"Simulated in SimGrid (emulation/simulator/core.py, docs/PROJECTION.md), not measured. "
             f"Status: **{summary.get('status')}**" + (f" ({summary['error']})" if summary.get("error") else "")
             + f"; started {summary.get('started')}, finished {summary.get('finished')}.", ""]
    if runs:
        nm = runs[0].get("simulator", {}).get("network_model", {})
        lat = sorted({r.get("round_latency_seconds") or 0.0 for r in runs})
        latency = ("no latency" if lat == [0.0] else
                   "a start-up of " + ", ".join(f"{x * 1e6:g} us" for x in lat) + " per message round")
        inc = sorted({r.get("incast_seconds") or 0.0 for r in runs} - {0.0})
        if inc:  # --incast: only where given, so earlier reports render as they did
            latency += (", and " + ", ".join(f"{x * 1e6:g} us" for x in inc)
                        + " per flow into a step's busiest NIC beyond the first"
                        + (", charged only past the sync's slack (its busiest link's seconds beyond its NICs')"
                           if any(r.get("incast_charged") == "past the slack" for r in runs) else "")
                        + (" (--calibration)" if summary.get("calibration") else " (--incast)"))
        spared = sorted({r.get("topology") for r in runs if str(r.get("incast_charged", "")).startswith("none")})
        if spared:
            latency += (f"; no incast start-up on {', '.join(spared)}: its workers' NICs hang off switches of two "
                        "ports, so their flows converge upstream, not at the NIC's port (the calibration's form C)")
        lines += [f"Network model: {nm.get('name')}, bandwidth factor {nm.get('bandwidth_factor')} "
                  f"(TCP payload per frame at MTU {nm.get('mtu')}), {latency}; layer-wise algorithms pay "
                  "their plan's all-reduce start-up a per group and start each group when backprop has "
                  "produced it. Bytes per NIC are those of the plan's flows, checked against the closed form.", ""]
        if summary.get("calibration"):
            from emulation.simulator.calibration import describe

            cal = summary["calibration"]
            lines += [f"Charged by `--calibration`, each where it was fitted: {describe(cal)}. "
                      "Each run's own values are in summary.json (round_latency_seconds, incast_seconds, "
                      "incast_charged_seconds_per_sync, "
                      "network_model's fan_in_efficiency and oversubscribed_efficiency; oversubscribed_links: "
                      "how many links e_o applied to).", ""]
            beyond = [r for r in runs if r.get("incast_seconds") and r.get("workers", 0)
                      > cal["incast_by_algorithm"].get(r.get("algorithm"), {}).get("max_workers_fitted", float("inf"))]
            if beyond:
                which = ", ".join(sorted({f"{r['algorithm'].upper()} at P = {r['workers']}" for r in beyond}))
                lines += [f"**Beyond the fitted range:** {which} "
                          "converge more flows on a NIC than the incast start-up was fitted on; the emulation "
                          "measured PS losing more than its line there (docs/PROJECTION.md, \"The PS scan\"), "
                          "so these are readings from below.", ""]
            small = [r for r in runs if r.get("incast_flow_bytes") is not None and r["incast_flow_bytes"]
                     < cal["incast_by_algorithm"].get(r.get("algorithm"), {}).get("flow_share_min_flow_bytes", 0.0)]
            if small:
                least = min(cal["incast_by_algorithm"][r["algorithm"]]["flow_share_min_flow_bytes"] for r in small)
                which = ", ".join(sorted({f"{r['algorithm'].upper()} on {r['topology']} at P = {r['workers']} "
                                          f"({r['incast_flow_bytes'] / 1e3:.1f} kB)" for r in small}))
                lines += [f"**Below the fitted flow size:** {which} "
                          f"converge flows smaller than the {least / 1e3:.1f} kB the start-up's cap (a share of a "
                          "flow's bytes) was fitted down to; the emulation measured PS with flows under one frame "
                          "losing far more than the cap charges (docs/PROJECTION.md, \"PS under 2 MiB\"), so "
                          "these are readings from below.", ""]
        lines += ["## Runs", ""]
        lines += table(["topology", "P", "algorithm", "model", "sync s", "iteration s", "bound s", "x bound",
                        "bytes = closed form", "simulator wall s", "SimGrid CPU s"], run_rows(runs))
        lines.append("")
        lines += compute_lines(runs)
        lines += padded_lines(runs)
    lines += validation_lines(summary.get("validation", []))
    if summary.get("skipped"):
        lines += ["## Not simulated", ""] + [f"- {k['topology']} {k['algo_spec']} ({k['model']}): {k['why']}"
                                              for k in summary["skipped"]] + [""]
    for p in plots:
        lines += [f"![{p.stem}]({PLOTS_DIR}/{p.name})", ""]
    return "\n".join(lines)


def write(out: Path, summary: dict) -> Path:
    """report.md (and the plot, when there is one) in `out`."""
    out = Path(out)
    plots = []
    try:
        p = plot_projection(summary.get("runs", []), out)
        if p:
            plots.append(p)
    except Exception as e:  # noqa: BLE001 - a figure must not lose the report
        summary.setdefault("problems", []).append(f"projection plot failed: {e}")
    path = out / "report.md"
    path.write_text(render(summary, plots))
    return path
