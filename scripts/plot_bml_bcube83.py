"""The BML-at-scale plot (issue #23): BML and ring on BCube(8,3) against PS on a Fat-Tree of the same
512 servers, from the projections docs/PROJECTION.md already holds (no simulation here):

    .venv/bin/python scripts/plot_bml_bcube83.py

reads docs/results/projection-bml-bcube83/, -30us/ and projection-ps-fattree16-512/ (made by the
commands docs/PROJECTION.md gives) and writes docs/results/projection-bml-bcube83/plots/bml-vs-ps.png:
simulated sync seconds beside each busiest-link bound, with the BML paper's claim (BML takes 1/k
of PS's time, k = 3 levels) drawn as PS's time / 3.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "docs" / "results"
LEVELS = 3  # BCube(8,3): k = 3


def main() -> int:
    from emulation.report.plots import PLOTS_DIR, new_figure, save

    def run(folder, algo):
        runs = json.loads((RESULTS / folder / "summary.json").read_text())["runs"]
        return next(r for r in runs if r["algo_spec"] == algo)

    bars = [("BML, BCube(8,3)", run("projection-bml-bcube83", "bml"), run("projection-bml-bcube83-30us", "bml")),
            ("ring, BCube(8,3)", run("projection-bml-bcube83", "ring"), run("projection-bml-bcube83-30us", "ring")),
            ("PS, Fat-Tree k=16\n(512 hosts)", run("projection-ps-fattree16-512", "ps"), None)]
    fig, ax = new_figure(7.0, 4.2)
    xs = range(len(bars))
    ax.bar([x - 0.2 for x in xs], [b[1]["simulated_seconds"] for b in bars], 0.4, label="simulated, L = 0")
    ax.bar([x + 0.2 for x in xs], [b[2]["simulated_seconds"] if b[2] else 0 for b in bars], 0.4,
           label="simulated, L = 30 us per round")
    ax.scatter(list(xs), [b[1]["bound_seconds"] for b in bars], color="k", marker="_", s=400, zorder=3,
               label="busiest-link bound")
    ps = bars[2][1]["simulated_seconds"]
    ax.axhline(ps / LEVELS, color="C3", ls="--", label=f"BML paper: 1/k of PS (k = {LEVELS})")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([b[0] for b in bars])
    ax.set_ylabel("sync seconds (4 MiB, 1000 Mbit/s)")
    ax.set_title("512 servers: BML on BCube(8,3) against PS on a Fat-Tree (SimGrid)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    path = save(fig, RESULTS / "projection-bml-bcube83" / PLOTS_DIR / "bml-vs-ps.png")
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
