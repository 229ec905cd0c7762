"""Markdown tables: how a value becomes a cell, and the column sets of the results table.

The results table is the concatenation of the column sets in `COLUMN_SETS` that apply to
the experiment's runs, in list order. A family of algorithms that records its own fields
(MG-WFBP's predicted iteration time, the sparse algorithms' density, trained accuracy)
adds one `ColumnSet` here; `md_results` (emulation/report/markdown.py) never names a
family. A set may stand in for core columns (`replaces`): its columns then take the place
of the first column it replaces, so `algo_spec` shows `topk,density=0.01` where the bare
algorithm name was.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from emulation import checks
from emulation.results.load import MB, RunData, bound_ratio, median_of, median_sync, num, sync_seconds

NA = "–"


# ---- cells -------------------------------------------------------------------------
def fmt(x, spec: str = ".3g") -> str:
    v = num(x)
    return NA if v is None else format(v, spec)


def yes_no(x) -> str:
    return NA if x is None else ("yes" if x else "**NO**")


def faithful_cell(run: dict) -> str:
    """yes, **NO**, or what was not verified (`unverified (cpu)`): None is not "no"."""
    if run.get("faithful") is None:
        return f"unverified ({', '.join(checks.unverified(run))})" if checks.unverified(run) else NA
    return yes_no(run["faithful"])


def failed_cell(run: dict) -> str:
    """Every check the run failed (emulation/checks.py), or "none" when it was checked."""
    failed = checks.failed_checks(run)
    return "; ".join(failed) if failed else ("none" if checks.checked(run) else NA)


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    clean = [[str(c).replace("|", "\\|").replace("\n", " ") for c in r] for r in rows]
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |"
                                                                          for r in clean]


# ---- column sets ---------------------------------------------------------------------
def always(runs: list[RunData]) -> bool:
    return True


def any_run_has(key: str) -> Callable[[list[RunData]], bool]:
    """Predicate: some run records a non-empty `key`."""
    def applies(runs: list[RunData]) -> bool:
        return any(rd.run.get(key) not in (None, "", [], {}) for rd in runs)
    return applies


@dataclass(frozen=True)
class ColumnSet:
    """Columns of the results table that belong together.

    name:     for problem lines ("column set 'iteration' ...")
    applies:  predicate on all runs: show these columns in this experiment's table?
    header:   the column titles
    cells:    one run -> one string per header entry
    replaces: titles of core columns this set takes the place of (none: it adds columns)
    """

    name: str
    applies: Callable[[list[RunData]], bool]
    header: tuple
    cells: Callable[[RunData], list[str]]
    replaces: tuple = ()

    def __post_init__(self):
        if not self.name or not self.header:
            raise ValueError(f"column set {self.name!r} needs a name and at least one column title")
        if not callable(self.applies) or not callable(self.cells):
            raise ValueError(f"column set {self.name!r}: applies and cells must be callables")


def run_cells(rd: RunData) -> list[str]:
    r = rd.run
    grad = num(r.get("gradient_bytes"))
    return [str(rd.index), r.get("topology", NA), r.get("algorithm", NA), fmt(r.get("workers"), "g"),
            NA if grad is None else f"{grad / MB:.3g}", fmt(r.get("link_mbps"), "g")]


def sync_cells(rd: RunData) -> list[str]:
    _, src = sync_seconds(rd)
    med = median_sync(rd)
    med_s = NA if med is None else f"{med:.3f}" + (" (from logs)" if src == "worker logs" else "")
    r = rd.run
    sim = num(r.get("simulated_seconds"))
    return [med_s, fmt(r.get("bound_seconds"), ".3f"), fmt(r.get("bound_step_seconds"), ".3f"),
            fmt(bound_ratio(rd), ".2f"), fmt(sim, ".3f"), fmt(sim / med if sim is not None and med else None, ".2f")]


def collision_cells(rd: RunData) -> list[str]:
    c = rd.run.get("collisions") or {}
    if not c.get("count"):
        return ["none" if "collisions" in rd.run else NA]
    first = c["first"][0]
    ratio = first["seconds"] / first["endpoint_seconds"] if first.get("endpoint_seconds") else None
    return [f"{c['count']} (step {first['step']}: {first['link']}, {first['flows']} flows, "
            f"{fmt(ratio, '.2f')}x its endpoint bound)"]


def payload_range(run: dict) -> str:
    pr = run.get("payload_ratio") or {}
    return f"{fmt(pr.get('min'), '.3f')}..{fmt(pr.get('max'), '.3f')}" if pr else NA


def traffic_cells(rd: RunData) -> list[str]:
    r = rd.run
    return [payload_range(r), f"{fmt(r.get('switches_with_traffic'), 'g')}/{fmt(r.get('switches_total'), 'g')}"]


def verdict_cells(rd: RunData) -> list[str]:
    r = dict(rd.run)
    r.setdefault("faithful", rd.fidelity.get("faithful"))
    r["fidelity"] = r.get("fidelity") or rd.fidelity or None
    return [yes_no(r.get("correct")), faithful_cell(r), failed_cell(r), r.get("status", NA)]


def spec_cells(rd: RunData) -> list[str]:
    return [rd.run.get("algo_spec") or rd.run.get("algorithm", NA)]


def iteration_cells(rd: RunData) -> list[str]:
    """Measured against the planner's alpha-beta prediction (MG-WFBP and its baselines)."""
    measured = median_of(rd.run.get("iteration_seconds"))
    predicted = median_of(rd.run.get("predicted_iteration_seconds"))
    ratio = measured / predicted if measured is not None and predicted else None
    return [fmt(measured, ".3f"), fmt(predicted, ".3f"), fmt(ratio, ".2f"),
            fmt(rd.run.get("simulated_iteration_seconds"), ".3f")]


def background_cells(rd: RunData) -> list[str]:
    """Concurrent jobs' flows: their bytes from the capture, kept apart from the gradient's."""
    bg = rd.run.get("background") or {}
    flows = bg.get("flows") or []
    gradient = sum((v or {}).get("tx", 0) for v in (rd.run.get("payload_bytes_measured") or {}).values())
    rates = [f.get("mbps_mean") for f in flows if f.get("mbps_mean") is not None]
    return [fmt(sum(len(f.get("dst") or []) for f in flows), "g"),
            NA if not bg else f"{bg.get('bytes_sent', 0) / MB:.3g}", NA if not gradient else f"{gradient / MB:.3g}",
            NA if not rates else f"{min(rates):.3g}..{max(rates):.3g}"]


def training_cells(rd: RunData) -> list[str]:
    acc = (rd.run.get("training") or {}).get("accuracy") or []
    return [fmt(acc[-1], ".3f") if acc else NA]


def has_training(runs: list[RunData]) -> bool:
    return any((rd.run.get("training") or {}).get("accuracy") for rd in runs)


COLUMN_SETS: list[ColumnSet] = [
    ColumnSet("run", always, ("#", "topology", "algorithm", "workers", "gradient MB", "link Mbit/s"), run_cells),
    ColumnSet("spec", any_run_has("algo_spec"), ("algorithm",), spec_cells, replaces=("algorithm",)),
    ColumnSet("sync", always, ("median sync s", "bound s", "step bound s", "ratio", "simulated s",
                               "simulated/measured"), sync_cells),
    ColumnSet("collisions", lambda runs: any((rd.run.get("collisions") or {}).get("count") for rd in runs),
              ("shared links (step: link, flows)",), collision_cells),
    ColumnSet("iteration", any_run_has("predicted_iteration_seconds"),
              ("median iteration s", "predicted iteration s", "iteration measured/predicted",
               "simulated iteration s"), iteration_cells),
    ColumnSet("training", has_training, ("held-out accuracy (last)",), training_cells),
    ColumnSet("background", any_run_has("background"),
              ("background flows", "background MB sent", "gradient MB sent", "background Mbit/s per source"),
              background_cells),
    ColumnSet("traffic", always, ("payload measured/expected min..max", "switches used/total"), traffic_cells),
    ColumnSet("verdict", always, ("correct", "faithful", "failed checks", "status"), verdict_cells),
]


def results_table(runs: list[RunData], sets: list[ColumnSet] | None = None
                  ) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, one row per run, problems) from the column sets that apply.

    A set whose predicate or cells fail, or whose cells do not match its header, is left
    out with a problem line: one family's bug must not lose the results table."""
    problems: list[str] = []
    cells: dict[str, list[list[str]]] = {}
    active: list[ColumnSet] = []
    for cs in COLUMN_SETS if sets is None else sets:
        try:
            if not cs.applies(runs):
                continue
            got = [list(cs.cells(rd)) for rd in runs]
        except Exception as e:  # noqa: BLE001 - see the docstring
            problems.append(f"results column set '{cs.name}' left out: {type(e).__name__}: {e}")
            continue
        if any(len(row) != len(cs.header) for row in got):
            problems.append(f"results column set '{cs.name}' left out: its cells do not match its "
                            f"{len(cs.header)} column(s)")
            continue
        cells[cs.name] = got
        active.append(cs)
    slots = [(cs.name, i, title) for cs in active if not cs.replaces for i, title in enumerate(cs.header)]
    for cs in (cs for cs in active if cs.replaces):
        at = [k for k, (_, _, title) in enumerate(slots) if title in cs.replaces]
        if not at:
            problems.append(f"results column set '{cs.name}' left out: none of {list(cs.replaces)} is shown")
            continue
        mine = [(cs.name, i, title) for i, title in enumerate(cs.header)]
        slots = slots[:at[0]] + mine + [s for k, s in enumerate(slots[at[0]:], at[0]) if k not in at]
    header = [title for _, _, title in slots]
    rows = [[cells[name][r][i] for name, i, _ in slots] for r in range(len(runs))]
    return header, rows, problems
