"""tests/conftest.py and tests/skips.py: a session ends with one line naming what it skipped,
and under CI=true a session that skipped anything fails (a skipped tier is a tier not run)."""
from pathlib import Path

import pytest

from tests.skips import ci_failure, skip_line, skip_reason

pytestmark = pytest.mark.unit

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def test_skip_line_counts_each_reason_most_frequent_first():
    assert skip_line([]) == "skipped 0"
    assert skip_line(["simgrid missing"] * 72 + ["need root"] * 3 + ["a"]) == \
        "skipped 76: simgrid missing (72); need root (3); a (1)"
    assert skip_line(["b", "a"]) == "skipped 2: a (1); b (1)"  # ties: alphabetical, so stable


def test_skip_reason_is_one_line_without_pytests_prefix():
    assert skip_reason(("/x/test_a.py", 3, "Skipped: SimGrid is not importable:\n  no module")) == \
        "SimGrid is not importable: no module"
    assert skip_reason(("/x/test_a.py", 3, "Skipped: ")) == "no reason given"
    assert skip_reason("Skipped: odd longrepr") == "odd longrepr"


@pytest.mark.parametrize("env, reasons, failure", [
    ({}, ["x"], None),
    ({"CI": "false"}, ["x"], None),
    ({"CI": "true"}, [], None),
    ({"CI": "true"}, ["need root", "need root"],
     "CI=true: a skipped test is a failure here, every tier must run; skipped 2: need root (2)"),
])
def test_ci_fails_only_when_something_was_skipped(env, reasons, failure):
    assert ci_failure(reasons, env) == failure


SESSION = """
import pytest

pytestmark = pytest.mark.skipif(False, reason="never")

def test_runs():
    assert True

@pytest.mark.skipif(True, reason="simgrid missing")
def test_simgrid_a():
    pass

@pytest.mark.skipif(True, reason="simgrid missing")
def test_simgrid_b():
    pass

def test_skips_inside():
    pytest.skip("/proc/self/io is not readable here")
"""


def _session(pytester, monkeypatch, ci, body=SESSION):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("PYTHONPATH", str(CONFTEST.parents[1]))  # the inner conftest imports tests.skips
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_inner=body)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider")


def test_locally_a_skipping_session_passes_and_its_last_line_names_the_skips(pytester, monkeypatch):
    result = _session(pytester, monkeypatch, ci=None)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, skipped=3)
    assert result.outlines[-1] == \
        "skipped 3: simgrid missing (2); /proc/self/io is not readable here (1)"


def test_under_ci_a_skipping_session_fails_with_that_line(pytester, monkeypatch):
    result = _session(pytester, monkeypatch, ci="true")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.outlines[-1] == ("CI=true: a skipped test is a failure here, every tier must run; "
                                   "skipped 3: simgrid missing (2); /proc/self/io is not readable here (1)")


def test_under_ci_a_session_without_skips_passes(pytester, monkeypatch):
    result = _session(pytester, monkeypatch, ci="true", body="def test_runs():\n    assert True\n")
    assert result.ret == pytest.ExitCode.OK
    assert result.outlines[-1] == "skipped 0"


def test_under_ci_a_module_skipped_at_collection_fails_too(pytester, monkeypatch):
    body = "import pytest\npytest.skip('emulation tests need root', allow_module_level=True)\n"
    result = _session(pytester, monkeypatch, ci="true", body=body)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.outlines[-1].endswith("skipped 1: emulation tests need root (1)")
