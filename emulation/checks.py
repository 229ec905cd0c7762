"""Which checks a run failed, read from its summary.json record: one list for every place
that shows a run's result (the console's `result:` line, `syncbed analyze`, the report's
results table, the paper sections), so a failure shown in one place is shown in all.

A run is checked on (emulation/analysis.py computes each; this module only reads them):
- correctness: every rank held the oracle's result (`correct`);
- payload: TCP payload per host NIC and direction within `tolerance` of the closed form
  laid onto the routes, and none on a NIC direction the closed form leaves empty
  (`payload_ratio`: min, max, tolerance, unexpected; their bytes in `payload_bytes_measured`);
- links: the same per switch port and direction (`link_ratio`; bytes in `link_bytes`);
- fidelity: link calibration, capture drops, CPU starvation, the busiest link's rate and
  the link probe's fit (`fidelity.reasons`, one line each).
Unverified is not failed: `unverified` names what was not measured, and a run whose
`faithful` is None is neither faithful nor unfaithful.
Pure: dicts in, strings out, nothing heavy imported (the report needs no torch).
"""
from __future__ import annotations

MB = 2**20
NAMES_SHOWN = 2  # unexpected NIC directions named in a check, the rest counted


def run_name(run: dict) -> str:
    """`fattree(4) topk,density=0.01 resnet50`: topology, algorithm spec and model, as the
    runner names a run when it starts it."""
    return " ".join(str(x) for x in (run.get("topology") or "?", run.get("algo_spec") or run.get("algorithm") or "?",
                                     run.get("model") or "?"))


def unverified(run: dict) -> list[str]:
    """What the fidelity verdict could not check ("links", "cpu", "capture")."""
    return list((run.get("fidelity") or {}).get("unverified") or [])


def fidelity_failures(run: dict) -> list[str]:
    """The reasons the fidelity verdict failed (its "not verified: ..." lines are not failures)."""
    return [r for r in (run.get("fidelity") or {}).get("reasons") or [] if not r.startswith("not verified:")]


def size(n: float) -> str:
    """Bytes as the report writes them: exact below 1 MB, else MB (2^20 bytes)."""
    return f"{int(n):,} B" if n < MB else f"{n / MB:.2f} MB"


def _ratio_checks(what: str, where: str, ratio: dict | None, measured: dict | None) -> list[str]:
    """`payload_ratio` or `link_ratio` -> what failed: ratios outside the tolerance, bytes
    where the closed form expects none."""
    if not ratio or ratio.get("within_tolerance", True):
        return []
    out = []
    lo, hi, tol = ratio.get("min"), ratio.get("max"), ratio.get("tolerance")
    if lo is None or hi is None:
        out.append(f"{what}: no expected bytes to compare the capture with")
    elif tol is None or lo < 1 - tol or hi > 1 + tol:
        out.append(f"{what} measured/expected {lo:.3f}..{hi:.3f}"
                   + (f" outside 1 ± {tol:g}" if tol is not None else " outside the tolerance"))
    unexpected = list(ratio.get("unexpected") or [])
    if unexpected:
        got = 0
        for key in unexpected:
            name, _, d = key.rpartition(":")
            got += ((measured or {}).get(name) or {}).get(d) or 0
        names = ", ".join(unexpected[:NAMES_SHOWN]) + (f", +{len(unexpected) - NAMES_SHOWN} more"
                                                       if len(unexpected) > NAMES_SHOWN else "")
        out.append(f"{size(got)} on {len(unexpected)} {where} the closed form expects none ({names})")
    return out


def failed_checks(run: dict) -> list[str]:
    """Every check this run failed, one short clause each, in the order of the module
    docstring; [] when none failed (or none was made: see `checked`)."""
    out = []
    if run.get("correct") is False:
        out.append("result not correct: a rank's synchronized gradient differs from the oracle's")
    out += _ratio_checks("payload", "host NIC directions", run.get("payload_ratio"), run.get("payload_bytes_measured"))
    out += _ratio_checks("links", "switch port directions", run.get("link_ratio"), run.get("link_bytes"))
    out += fidelity_failures(run) or (["not faithful (no reason recorded)"] if run.get("faithful") is False else [])
    return out


def checked(run: dict) -> bool:
    """Was anything checked at all (an analysed run), so that "no failed check" means something?"""
    return any(run.get(k) is not None for k in ("correct", "payload_ratio", "link_ratio", "fidelity"))


def verdict(run: dict) -> str:
    """`True`, `False` or `unverified (cpu, links)`: the console's word for `faithful`."""
    if run.get("faithful") is None:
        return f"unverified ({', '.join(unverified(run)) or '?'})"
    return str(run["faithful"])


def result_line(run: dict) -> str:
    """The console's one line for an analysed run: its name (the runner analyses a run while
    the next one measures, so the line prints under the next run's header), its times and
    byte ratios, and every failed check."""
    med, bound = run.get("median_sync_seconds"), run.get("bound_seconds")
    pr, lr = run.get("payload_ratio") or {}, run.get("link_ratio") or {}
    parts = [f"  result of {run_name(run)}: " + (f"sync median {med:.3f} s" if med else "no sync times"),
             f"bound {bound:.3f} s" if bound else "",
             f"payload measured/expected {pr['min']:.3f}..{pr['max']:.3f}" if pr.get("min") is not None else "",
             f"links {lr['min']:.3f}..{lr['max']:.3f}" if lr.get("min") is not None else "",
             f"switches {run.get('switches_with_traffic', '?')}/{run.get('switches_total', '?')}"]
    if run.get("background"):
        parts.append(f"background {run['background']['bytes_sent'] / MB:.1f} MiB sent (not gradient bytes)")
    parts += [f"correct={run.get('correct')}", f"faithful={verdict(run)}"]
    failed = failed_checks(run)
    return ", ".join(p for p in parts if p) + (f"; FAILED: {'; '.join(failed)}" if failed else "")
