"""What a test session skipped, in one line, and whether CI must fail because of it.

A skipped tier is a tier that did not run: SimGrid's tests skip when its module is missing,
the emulation tier when not root, a few parallel tests when /proc/self/io is unreadable.
Locally that is fine as long as it is said (`skip_line`, printed last by tests/conftest.py);
under CI (`CI=true`, `.ci/run`) every tier must run, so a session that skipped anything
fails (`ci_failure`). Pure functions: the conftest hands in the skip reasons and the
environment.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping


def skip_reason(longrepr) -> str:
    """The reason of one skipped report, on one line. pytest keeps a skip's longrepr as
    (path, lineno, "Skipped: <reason>")."""
    text = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    text = " ".join(text.split())
    if text.startswith("Skipped:"):
        text = text[len("Skipped:"):].lstrip()
    return text or "no reason given"


def skip_line(reasons: Iterable[str]) -> str:
    """'skipped N: reason (count); ...', most frequent reason first; 'skipped 0' for none."""
    counts = Counter(reasons)
    if not counts:
        return "skipped 0"
    parts = "; ".join(f"{r} ({n})" for r, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"skipped {sum(counts.values())}: {parts}"


def ci_failure(reasons: Iterable[str], env: Mapping[str, str]) -> str | None:
    """The one line that fails a CI session which skipped something; None when it may pass
    (not CI, or nothing skipped). CI is `CI=true`, as GitHub Actions, GitLab and .ci/run set it."""
    reasons = list(reasons)
    if env.get("CI") != "true" or not reasons:
        return None
    return f"CI=true: a skipped test is a failure here, every tier must run; {skip_line(reasons)}"
