"""Scaling across experiments: the same algorithms at several worker counts, side by side.

    syncbed scaling results/A results/B results/C --out docs/results/gtopk-scaling

Reads each folder's summary.json (nothing is re-measured), groups the successful runs by
algorithm spec and model, and writes `scaling.json`, `scaling.md` (a table per model:
workers, median sync and iteration seconds, scaling efficiency = backward / iteration, i.e.
throughput with P workers over P times one worker's, and the payload one worker sends per
sync, the busiest) and `scaling.png` (bytes per worker and efficiency against P). It makes
gTop-k's O(k log P) against Top-k's O(kP) and dense O(d) visible in measured bytes.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

from emulation.papers.common import model_name
from emulation.results.load import compress_seconds


def collect(folders) -> list[dict]:
    summaries = {}
    for folder in folders:
        path = Path(folder) / "summary.json"
        if not path.is_file():
            raise ValueError(f"{folder} has no summary.json: give results folders of syncbed run")
        summaries[str(folder)] = json.loads(path.read_text())
    return rows_of(summaries)


def rows_of(summaries: dict) -> list[dict]:
    """The scaling rows of parsed summaries (folder -> summary.json content), pure: one row
    per successful run with iteration times, sorted by model, algorithm and workers."""
    rows = []
    for folder, summary in summaries.items():
        for run in summary.get("runs", []):
            if run.get("status") != "ok" or not run.get("iteration_seconds"):
                continue
            iters = max(1, run.get("syncs_counted") or (run["iters"] + run.get("warmup", 0)))
            sent = [v["tx"] for v in (run.get("payload_bytes_measured") or {}).values()]
            rows.append({"algorithm": run.get("algo_spec", run["algorithm"]), "model": run.get("model"),
                         "topology": run.get("topology"), "workers": run["workers"],
                         "sync_s": statistics.median(run["sync_seconds"]),
                         "iteration_s": statistics.median(run["iteration_seconds"]),
                         "efficiency": run.get("scaling_efficiency"),
                         "bytes_per_worker": max(sent) / iters if sent else None,
                         "compress_s": compress_seconds(run),  # selection + merges, inside the sync
                         "faithful": run.get("faithful"), "folder": str(folder), "dir": run.get("dir")})
    return sorted(rows, key=lambda r: (r["model"] or "", r["algorithm"], r["workers"]))


def markdown(rows) -> str:
    out = ["# Scaling across worker counts", "",
           "Efficiency = median backward / median iteration (one worker would spend the backward pass "
           "only). Bytes: TCP payload (data + Gloo framing) the busiest worker NIC sent per sync, measured. "
           "Compression: the CPU each rank spent per sync selecting its top-k and merging sparse sets "
           "(with the residual's update), inside the sync time.", ""]
    from emulation.papers.gtopk import EFFICIENCY

    out += beside_paper(rows, EFFICIENCY)
    for model in sorted({r["model"] for r in rows}):
        paper = EFFICIENCY.get(model_name({"model": model}))
        note = ([f"The paper's {paper[0]} at P = 32 (the authors' plotting script): dense {paper[1]:g}%, "
                 f"Top-k {paper[2]:g}%, gTop-k {paper[3]:g}%.", ""] if paper else [])
        out += [f"## {model}", "", *note, "| algorithm | P | sync s | iteration s | efficiency | bytes/worker/sync | "
                "compression s/sync | faithful |", "|---|---|---|---|---|---|---|---|"]
        for r in (x for x in rows if x["model"] == model):
            eff = f"{100 * r['efficiency']:.1f}%" if r["efficiency"] is not None else "–"
            b = f"{r['bytes_per_worker'] / 2**20:.3f} MiB" if r["bytes_per_worker"] else "–"
            c = "–" if r.get("compress_s") is None else f"{r['compress_s']:.3f} ({r['compress_s'] / r['sync_s']:.0%})"
            out.append(f"| {r['algorithm']} | {r['workers']} | {r['sync_s']:.3f} | {r['iteration_s']:.3f} | {eff} | "
                       f"{b} | {c} | {r['faithful']} |")
        out.append("")
    return "\n".join(out)


def beside_paper(rows, paper: dict) -> list[str]:
    """Per model, at its largest P: efficiency of dense (the better of ring and gloo), Top-k
    and gTop-k with their ratios, beside the paper's at P = 32 (`paper`: model -> (title,
    dense, Top-k, gTop-k) in %)."""
    lines = []
    for model in sorted({r["model"] for r in rows}):
        mine = [r for r in rows if r["model"] == model and r["efficiency"] is not None]
        if not mine:
            continue
        p = max(r["workers"] for r in mine)
        at = [r for r in mine if r["workers"] == p]
        pick = {kind: max((r for r in at if r["algorithm"].split(",")[0] in names), key=lambda r: r["efficiency"],
                          default=None)
                for kind, names in (("dense", ("ring", "gloo")), ("topk", ("topk",)), ("gtopk", ("gtopk",)))}
        e = {k: None if r is None else 100 * r["efficiency"] for k, r in pick.items()}
        ref = paper.get(model_name({"model": model}))

        def ratio(a, b):
            return f"{a / b:.2f}x" if a is not None and b else "–"

        def pct(v):
            return "–" if v is None else f"{v:.1f}%"

        lines.append(f"| {model} | {p} | {pct(e['dense'])} | {pct(e['topk'])} | {pct(e['gtopk'])} | "
                     f"{ratio(e['gtopk'], e['dense'])} | {ratio(e['gtopk'], e['topk'])} | "
                     + (f"{ref[1]:g}% / {ref[2]:g}% / {ref[3]:g}% | {ref[3] / ref[1]:.1f}x | {ref[3] / ref[2]:.2f}x"
                        if ref else "– | – | –")
                     + " | " + ", ".join(f"{k} {'yes' if r['faithful'] else 'NO'}" for k, r in pick.items() if r)
                     + " |")
    if not lines:
        return []
    return ["## Beside the paper", "",
            "Each model at its largest P here; dense = the better of ring and gloo. The paper's numbers: the "
            "authors' plotting script at P = 32 (docs/papers/gtopk.md).", "",
            "| model | P | dense | Top-k | gTop-k | gTop-k / dense | gTop-k / Top-k | paper dense / Top-k / gTop-k | "
            "paper gTop-k / dense | paper gTop-k / Top-k | faithful |", "|---|---|---|---|---|---|---|---|---|---|---|",
            *lines, ""]


def plot(rows, path: Path) -> None:
    """One row of two panels per model: bytes per worker and efficiency against P."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = sorted({str(r["model"]) for r in rows})
    fig, axes = plt.subplots(len(models), 2, figsize=(10, 4 * len(models)), squeeze=False)
    for (ax1, ax2), model in zip(axes, models):
        mine = [r for r in rows if str(r["model"]) == model]
        for algo in sorted({r["algorithm"] for r in mine}):
            pts = sorted((r["workers"], r["bytes_per_worker"], r["efficiency"]) for r in mine if r["algorithm"] == algo)
            ax1.plot([p for p, b, _ in pts if b], [b / 2**20 for _, b, _ in pts if b], "o-", label=algo)
            ax2.plot([p for p, _, e in pts if e is not None], [100 * e for _, _, e in pts if e is not None], "o-",
                     label=algo)
        ax1.set(xlabel="workers P", ylabel="MiB sent per worker per sync (busiest)", yscale="log",
                title=f"{model}: bytes on the wire")
        ax2.set(xlabel="workers P", ylabel="scaling efficiency %", title=f"{model}: backward / iteration",
                ylim=(0, 105))
        for ax in (ax1, ax2):
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(folders, out) -> Path:
    """scaling.json, scaling.md and scaling.png in `out` from the results folders; returns the
    Markdown's path. ValueError (one line) when a folder is not one or none has a usable run."""
    rows = collect(folders)
    if not rows:
        raise ValueError("no successful run with iteration times in these folders")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scaling.json").write_text(json.dumps(rows, indent=1))
    (out / "scaling.md").write_text(markdown(rows))
    plot(rows, out / "scaling.png")
    return out / "scaling.md"
