"""Session-wide: say what was skipped, and fail a CI session that skipped anything.

`make test` ends with one line naming every skip reason and its count (tests/skips.py);
under `CI=true` (.ci/run) a skipped test means a tier that did not run, so the session
exits non-zero with that line instead of looking green.
"""
import os

import pytest

from tests.skips import ci_failure, skip_line, skip_reason

pytest_plugins = ("pytester",)  # tests/unit/test_skips.py runs small sessions through this conftest

_REASONS = pytest.StashKey[list]()


def _reasons(config) -> list[str]:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return []
    return [skip_reason(r.longrepr) for r in reporter.stats.get("skipped", [])]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    reasons = _reasons(session.config)
    session.config.stash[_REASONS] = reasons
    if ci_failure(reasons, os.environ) and session.exitstatus in (pytest.ExitCode.OK,
                                                                 pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config):
    """After pytest's own summary line, so it is the last line of `make test`."""
    reasons = config.stash.get(_REASONS, None)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reasons is None or reporter is None:
        return
    reporter.write_line(ci_failure(reasons, os.environ) or skip_line(reasons))


@pytest.fixture
def one_thread():
    """Small CPU ops on a shared 2-core box run faster and steadier on one thread (as a worker
    would run them); the previous setting is restored. Modules that time torch use it."""
    import torch  # noqa: PLC0415

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
