"""The report of a localhost training experiment (`syncbed train`, emulation/trainer.py): report.md
and convergence.png from its summary.json record, and the comparison every sparse algorithm is
judged by (`compare`: its final held-out accuracy against the dense run of the same P, in
percentage points; the issue's target is within 1 point). Pure over records; `write` writes
the folder's summary.json, report.md and the figure. docs/papers/gtopk.md's convergence table
(emulation/report/doctables/gtopk.py) uses `compare` on a kept summary.
"""
from __future__ import annotations

import json
from pathlib import Path

from emulation.results.columns import table

TARGET_PP = 1.0  # issue 8: gTop-k's final held-out accuracy within 1 percentage point of dense
PLOT = "convergence.png"


def compare(records: list, target_pp: float = TARGET_PP) -> list:
    """Each non-dense run's final accuracy against the dense run of the same P, in
    percentage points (positive: better than dense)."""
    out = []
    for rec in records:
        if rec["dense"] or rec["final_accuracy"] is None:
            continue
        dense = next((d for d in records if d["dense"] and d["workers"] == rec["workers"]
                      and d["final_accuracy"] is not None), None)
        if dense is None:
            continue
        gap = 100.0 * (rec["final_accuracy"] - dense["final_accuracy"])
        out.append({"workers": rec["workers"], "spec": rec["spec"], "dense": dense["spec"],
                    "gap_pp": round(gap, 2), "within_target": gap >= -target_pp})
    return out


def _label(rec: dict) -> str:
    return f"{rec['spec']} (dense)" if rec["dense"] else rec["spec"]


def plot_curves(records: list, path: Path, title: str, milestones=()) -> Path | None:
    """Held-out accuracy (top) and loss (bottom) against iterations, one column per P,
    one line per algorithm spec (the same colour in every panel); dotted lines where the
    learning rate drops (`milestones`)."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    from matplotlib.figure import Figure  # noqa: PLC0415

    shown = [r for r in records if r["curve"]["iter"]]
    if not shown:
        return None
    ps = sorted({r["workers"] for r in shown})
    specs = list(dict.fromkeys(r["spec"] for r in records))
    fig = Figure(figsize=(4.2 * len(ps), 6.8), dpi=110)
    axes = fig.subplots(2, len(ps), squeeze=False, sharex="col")
    handles = {}
    for col, p in enumerate(ps):
        acc_ax, loss_ax = axes[0][col], axes[1][col]
        for rec in (r for r in shown if r["workers"] == p):
            color = f"C{specs.index(rec['spec']) % 10}"
            c = rec["curve"]
            handles[rec["spec"]], = acc_ax.plot(c["iter"], c["accuracy"], color=color, label=_label(rec))
            loss_ax.plot(c["iter"], c["loss"], color=color, label=_label(rec))
        acc_ax.set(title=f"P = {p}", ylim=(0, 1))
        loss_ax.set(xlabel="iteration", yscale="log")
        for ax in (acc_ax, loss_ax):
            ax.grid(alpha=0.3)
            for m in milestones:
                ax.axvline(m, color="0.5", linestyle=":", linewidth=1)
    axes[0][0].set_ylabel("held-out accuracy")
    axes[1][0].set_ylabel("held-out cross-entropy")
    order = [s for s in specs if s in handles]  # every algorithm once, whichever panel has it
    fig.legend([handles[s] for s in order], [h.get_label() for h in (handles[s] for s in order)],
               loc="lower center", ncol=len(order), fontsize=8, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path)
    return path


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def report_markdown(summary: dict) -> str:
    """report.md: settings, the final accuracy table, the gap to dense, checks, the plot."""
    cfg, runs = summary["config"], summary["runs"]
    ps = sorted({r["workers"] for r in runs})
    specs = list(dict.fromkeys(r["spec"] for r in runs))
    by = {(r["spec"], r["workers"]): r for r in runs}
    lines = [f"# Convergence `{summary['experiment']}`", "", f"**Status: {summary['status']}**", ""]
    if summary.get("description"):
        lines += [summary["description"], ""]
    lines += ["## Settings", "",
              f"- model: `{cfg['model']}`, {summary['model_summary']}, trained on scikit-learn's digits "
              f"(1,437 training, 360 held-out images)",
              f"- {cfg['iters']} iterations"
              + (f" after {cfg['warmup']} warm-up" if cfg.get("warmup") else "") + f", batch {cfg['batch']} per worker, SGD lr {cfg['lr']:g}"
              + (f" x {cfg['lr_gamma']:g} at iteration{'s' if len(cfg['lr_milestones']) > 1 else ''} "
                 f"{', '.join(map(str, cfg['lr_milestones']))}"
                 if cfg["lr_milestones"] else "") + f", seed {cfg['seed']} (same initial model and data "
              f"order for every algorithm); held-out split evaluated by rank 0 every {cfg['eval_every']} "
              "iterations and after the last",
              "- localhost: Gloo on `lo`, one process per rank running `workloads.worker.main` (the "
              "emulation's worker code; forked once torch and the digits are loaded), "
              f"{summary['cores']} cores; started {summary['started']}; runs one after the other, "
              f"{summary['runs_wall_seconds'] / 60:.1f} min in all (each run: first rank started to last "
              "one ended)"
              + (f"; the sessions ran {summary['wall_seconds'] / 60:.1f} min, stopped runs included "
                 "(stopped while an emulation measured, resumed with --resume)"
                 if summary["wall_seconds"] > summary["runs_wall_seconds"] + 60 else ""), "",
              "## Final held-out accuracy", ""]
    header = ["algorithm", *(f"P={p}" for p in ps)]
    lines += table(header, [[spec + (" (dense)" if any(r["dense"] for r in runs if r["spec"] == spec) else ""),
                             *(_pct(by[(spec, p)]["final_accuracy"]) if (spec, p) in by else "-" for p in ps)]
                            for spec in specs])
    lines += ["", "Final held-out loss:", ""]
    lines += table(header, [[spec, *(f"{by[(spec, p)]['final_loss']:.3f}" if (spec, p) in by
                                     and by[(spec, p)]["final_loss"] is not None else "-" for p in ps)]
                            for spec in specs])
    images = summary.get("held_out_images")
    lines += ["", f"## Against dense (target: within {TARGET_PP:g} percentage point)", "",
              *([f"One held-out image is {100 / images:.2f} pp of the {images}.", ""] if images else [])]
    lines += table(["algorithm", "P", "final accuracy - dense's", "within target"],
                   [[c["spec"], str(c["workers"]), f"{c['gap_pp']:+.1f} pp", "yes" if c["within_target"] else "no"]
                    for c in summary["comparison"]])
    gtopk = [c for c in summary["comparison"] if c["spec"].split(",")[0] == "gtopk"]
    if gtopk:
        ok = [c for c in gtopk if c["within_target"]]
        lines += ["", f"gTop-k is within {TARGET_PP:g} pp of dense at {len(ok)} of {len(gtopk)} worker counts"
                  + (f" (not at P = {', '.join(str(c['workers']) for c in gtopk if not c['within_target'])})"
                     if len(ok) < len(gtopk) else "") + "."]
    lines += ["", "## Runs", ""]
    lines += table(["#", "P", "algorithm", "iterations", "final accuracy", "final loss", "checked iterations",
                    "correct", "identical model", "wall s", "status"],
                   [[str(i), str(r["workers"]), r["spec"], str(r["iterations"]), _pct(r["final_accuracy"]),
                     "-" if r["final_loss"] is None else f"{r['final_loss']:.3f}", str(r["checked_iterations"]),
                     "yes" if r["correct"] else "no", "yes" if r["identical_model"] else "no",
                     f"{r['wall_seconds']:.0f}", r["status"]] for i, r in enumerate(runs, 1)])
    check = cfg["check_iters"]
    lines += ["", "Checks: " + (
        "every iteration" if check is None else f"the first {check} iterations of each run")
        + " against the algorithm's reference over every worker's real gradient (tolerance of "
        "`DataParallelDigits.matches`); "
        + ("after that each rank computes only its own gradient and nothing is compared (the reference's "
           "error-feedback residuals are not updated past that iteration, so the check cannot resume). "
           if check is not None else "")
        + "Identical model: every rank's final parameters have the same SHA-1."]
    problems = [f"- run {i} ({r['spec']}, P={r['workers']}): {e}" for i, r in enumerate(runs, 1) for e in r["errors"]]
    if problems:
        lines += ["", "## Problems", "", *problems]
    if summary.get("plot"):
        lines += ["", "## Curves", "", f"![held-out accuracy and loss]({summary['plot']})"]
    return "\n".join(lines) + "\n"


def write(out: Path, summary: dict) -> None:
    """summary.json (whole or not at all), report.md and convergence.png of the results folder `out`."""
    summary["comparison"] = compare(summary["runs"])
    # the runs' own time, without attempts stopped before a resume
    summary["runs_wall_seconds"] = round(sum(r["wall_seconds"] for r in summary["runs"]), 1)
    title = (f"{summary['config']['model']} on digits: held-out accuracy and loss"
             + (" (dotted: lr x {:g})".format(summary["config"]["lr_gamma"]) if summary["config"]["lr_milestones"]
                else ""))
    try:
        milestones = summary["config"]["lr_milestones"]
        summary["plot"] = PLOT if plot_curves(summary["runs"], out / PLOT, title, milestones) else None
    except Exception as err:  # a figure that fails never loses the numbers
        summary["plot"] = None
        summary.setdefault("problems", []).append(f"plot: {type(err).__name__}: {err}")
    tmp = out / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=1))
    tmp.replace(out / "summary.json")
    (out / "report.md").write_text(report_markdown(summary))
