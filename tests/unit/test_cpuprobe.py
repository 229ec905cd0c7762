"""emulation/cpuprobe.py: the machine's speed a run records before its workers start (issue #23)."""
import statistics

import pytest
import torch

from emulation import cpuprobe
from workloads.sparse import Residual


def test_the_probe_times_every_repetition_and_keeps_the_fastest():
    rec = cpuprobe.measure()
    assert rec["elements"] == cpuprobe.ELEMENTS and len(rec["seconds"]) == cpuprobe.REPS
    assert all(s > 0 for s in rec["seconds"])
    assert rec["median_seconds"] == pytest.approx(statistics.median(rec["seconds"]), abs=1e-6)
    assert rec["fastest_seconds"] == pytest.approx(min(rec["seconds"]), abs=1e-6)
    assert torch.get_num_threads() >= 1  # the caller's thread count is given back


def test_one_selection_keeps_the_top_k_and_feeds_the_rest_back_as_a_worker_does():
    n, k = 5000, 5
    grad = torch.arange(1, n + 1, dtype=torch.float32)
    residual = Residual(n)
    assert cpuprobe.select_once(residual, grad, k) > 0
    expect = grad.clone()
    expect[-k:] = 0.0  # the k largest magnitudes were sent; the residual keeps the others
    assert torch.equal(residual.residual, expect)


def test_bad_repetitions_are_refused():
    with pytest.raises(ValueError, match="reps >= 1"):
        cpuprobe.selection_seconds(reps=0)
