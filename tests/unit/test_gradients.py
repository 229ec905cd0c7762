"""The synthetic-gradient oracle and the backward stream, without any process group."""
import time

import pytest
import torch

from workloads import gradients
from workloads.gradients import GradientStream

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("workers", [1, 3, 16])
def test_expected_sum_is_exact_sum_of_synthetic(workers):
    size, seed, it = 4099, 7, 3
    total = torch.zeros(size)
    for r in range(workers):
        total += gradients.synthetic(r, size, seed, it)
    assert torch.equal(total, gradients.expected_sum(workers, size, seed, it))
    values, expected = gradients.iteration_data(1, workers, size, seed, it)
    assert torch.equal(values, gradients.synthetic(1, size, seed, it))
    assert torch.equal(expected, total)


def test_gradients_are_integer_valued_and_differ_by_seed_and_iteration():
    g = gradients.synthetic(0, 1000, 0, 0)
    assert g.dtype == torch.float32 and torch.equal(g, g.round())
    assert not torch.equal(g, gradients.synthetic(0, 1000, 0, 1))
    assert not torch.equal(g, gradients.synthetic(0, 1000, 1, 0))
    assert torch.equal(g, gradients.synthetic(0, 1000, 0, 0))


def test_a_missing_or_doubled_contribution_changes_the_sum():
    parts = [gradients.synthetic(r, 500, 0, 0) for r in range(4)]
    expected = gradients.expected_sum(4, 500, 0, 0)
    assert not torch.equal(parts[0] + parts[1] + parts[2], expected)
    assert not torch.equal(parts[0] + parts[1] + parts[2] + parts[2], expected)


def test_stream_lays_out_layers_in_forward_order():
    stream = GradientStream([("a", 3, 0.0), ("b", 5, 0.0), ("c", 2, 0.0)])
    assert stream.layers == [(0, 3), (3, 5), (8, 2)]
    assert stream.size == 10 and stream.order == [2, 1, 0]


def test_stream_produces_last_layer_first_after_dilated_backward_times():
    values = torch.arange(1, 11, dtype=torch.float32)
    stream = GradientStream([("a", 3, 0.02), ("b", 5, 0.0), ("c", 2, 0.03)], values, dilation=2.0)
    assert torch.count_nonzero(stream.flat) == 0  # nothing exists before backward starts
    stream.start()
    last = stream.wait_layer(2)
    t_last = time.time()
    assert torch.equal(last, values[8:])
    assert t_last - stream.t_start >= 0.06 - 0.005
    assert torch.count_nonzero(stream.flat[:3]) == 0  # layer 0 still running (0.04 s more)
    assert torch.equal(stream.wait_all(), values)
    assert stream.t_ready - stream.t_start >= 0.10 - 0.005


def test_stream_rejects_bad_input():
    with pytest.raises(ValueError, match="1-D float32 tensor of 4 elements"):
        GradientStream([("a", 4, 0.0)], torch.zeros(5))
    with pytest.raises(ValueError, match="numel must be > 0"):
        GradientStream([("a", 0, 0.0)])
    with pytest.raises(RuntimeError, match="call start"):
        GradientStream([("a", 1, 0.0)]).wait_all()


def test_as_flat_accepts_a_tensor_or_a_stream():
    t = torch.ones(3)
    assert gradients.as_flat(t) is t
    stream = GradientStream([("a", 3, 0.0)], t.clone()).start()
    assert torch.equal(gradients.as_flat(stream), t)
