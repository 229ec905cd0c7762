"""Turn a results folder into `report.md` and PNG plots: the last step of the pipeline.

Reads only files (summary.json, and per run topology.json, workers/rank<R>.jsonl,
calibration.json, fidelity.json), never a live network, so a report can be regenerated
anywhere. It must tolerate partial and failed results: every field is optional, a missing
file becomes a line under "Problems", and a failed experiment says so in the report's
first line, with the reason, before what exists.

Split of duties, one module each:
- load.py:     read the folder into `RunData`; re-derive what summary.json may lack
               (`sync_from_logs`, `link_loads`, `busy_switches`, stage events);
- plots.py:    topology layouts and one `plot_*` per figure; `make_plots` draws them all;
- columns.py:  cell formatting, `table`, and the results table's column sets (one per
               family of fields; a new family adds a `ColumnSet`, not a branch);
- markdown.py: one `md_*` per section of report.md, `write_report`.
Papers' claims next to the measurement live in emulation/papers/, one module per paper;
the report renders the section of every paper whose algorithms ran.
Usage: `syncbed report FOLDER` (emulation/cli.py).
"""
from emulation.results.columns import COLUMN_SETS, NA, ColumnSet, fmt, results_table, table, yes_no
from emulation.results.load import (MB, RunData, bound_ratio, busy_switches, link_loads, load_run, load_summary,
                                   median_of, median_sync, num, sync_from_logs, sync_seconds)
from emulation.report.markdown import md_papers, write_report
from emulation.report.plots import LAYOUTS, PLOTS_DIR, layout, make_plots

__all__ = ["COLUMN_SETS", "LAYOUTS", "MB", "NA", "PLOTS_DIR", "ColumnSet", "RunData", "bound_ratio",
           "busy_switches", "fmt", "layout", "link_loads", "load_run", "load_summary", "make_plots",
           "md_papers", "median_of", "median_sync", "num", "results_table", "sync_from_logs", "sync_seconds",
           "table", "write_report", "yes_no"]
