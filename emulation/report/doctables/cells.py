"""Cells and lookups every doc table shares: finding runs in parsed summaries, verdict cells, number formats."""
from __future__ import annotations

import statistics
from emulation.papers import common
from emulation.results.columns import NA, fmt
from emulation.results.load import num


def runs_of(data: dict, rel: str) -> list[dict]:
    """The run records of one summary.json, only those that finished ok."""
    runs = data[rel].get("runs")
    if not isinstance(runs, list):
        raise ValueError(f"{rel} holds no runs")
    return [r for r in runs if r.get("status", "ok") == "ok"]


def _matching(runs: list, match: dict) -> list[dict]:
    """The runs whose fields equal `match` (`spec` matches algo_spec, else algorithm)."""
    return [r for r in runs if all((common.label(r) if k == "spec" else r.get(k)) == v for k, v in match.items())]


def find(runs: list, what: str, **match) -> dict:
    """The one run matching `match`; ValueError naming `what` when there is none or several."""
    hits = _matching(runs, match)
    if len(hits) != 1:
        raise ValueError(f"{what}: {len(hits)} runs match {match} (need exactly one)")
    return hits[0]


def find_opt(runs: list, **match) -> dict | None:
    """The one run matching `match`, or None (a baseline a scenario did not run)."""
    hits = _matching(runs, match)
    return hits[0] if len(hits) == 1 else None


def verdict(run: dict | None) -> str:
    """The run's fidelity verdict as the report writes it: yes, NO, or unverified."""
    if run is None:
        return NA
    f = run.get("faithful")
    return "yes" if f is True else "**NO**" if f is False else "unverified"


def starred(seconds, run) -> str:
    """Seconds, with * when the run was not faithful (the docs' convention)."""
    return fmt(seconds, ".3f") + ("*" if run is not None and run.get("faithful") is not True else "")


def reasons(run: dict) -> str:
    f = run.get("fidelity") or {}
    why = [r for r in f.get("reasons") or [] if not r.startswith("not verified")]
    if f.get("unverified"):
        why.append("not verified: " + ", ".join(f["unverified"]))
    return "; ".join(why) or ("not verified" if run.get("faithful") is None else "")


def unfaithful_notes(items: list[tuple[str, dict]]) -> list[str]:
    """One line per run that was not faithful: its label and the verdict's reasons."""
    lines = [f"- {label}: {reasons(r)}" for label, r in items if r is not None and r.get("faithful") is not True]
    return (["", "Runs not faithful or not verified (*), and why:", ""] + lines) if lines else []


def signed(x, digits: int = 1) -> str:
    """+1.2 / -0.3 / 0.0 (no "-0.0" for what rounds to zero)."""
    v = num(x)
    if v is None:
        return NA
    text = f"{v:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


def pct(x, digits: int = 1) -> str:
    v = num(x)
    return NA if v is None else f"{100 * v:.{digits}f}%"


def xf(x, digits: int = 2) -> str:
    v = num(x)
    return NA if v is None else f"{v:.{digits}f}x"


def span(values, spec: str = ".2f", unit: str = "") -> str:
    """"a-b" over the numbers in `values` (one number when they agree at that precision)."""
    vals = [v for v in (num(x) for x in values) if v is not None]
    if not vals:
        return NA
    lo, hi = format(min(vals), spec), format(max(vals), spec)
    return (lo if lo == hi else f"{lo}-{hi}") + unit


def spread(values) -> float | None:
    """(max - min) / median of a run's per-iteration times."""
    vals = [v for v in (num(x) for x in values or []) if v is not None]
    return (max(vals) - min(vals)) / statistics.median(vals) if vals and statistics.median(vals) else None


def payload_range(runs: list) -> str:
    lo = [num((r.get("payload_ratio") or {}).get("min")) for r in runs]
    hi = [num((r.get("payload_ratio") or {}).get("max")) for r in runs]
    lo, hi = [v for v in lo if v is not None], [v for v in hi if v is not None]
    return NA if not lo else f"{min(lo):.3f}..{max(hi):.3f}"


def outside_tolerance(runs: list) -> list[dict]:
    """Runs whose capture was not within the closed form's tolerance on every port."""
    return [r for r in runs if (r.get("payload_ratio") or {}).get("within_tolerance") is False]


def cores(run: dict, key: str = "ovs_cpu_percent") -> str:
    """A CPU figure of the run's fidelity verdict (percent of one core), in cores."""
    v = num((run.get("fidelity") or {}).get(key))
    return NA if v is None else f"{v / 100:.2f}"
