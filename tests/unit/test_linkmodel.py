"""The alpha-beta link model (workloads/linkmodel.py): the fit recovers alpha and beta from
noisy synthetic timings, R^2 exposes timings that are not a line, alpha and beta never come
out negative, the model round-trips through JSON, and bad input fails in one line."""
import json

import numpy as np
import pytest

from workloads.linkmodel import LinkModel, fit_alpha_beta

pytestmark = pytest.mark.unit


def test_fit_recovers_alpha_and_beta_from_noisy_timings():
    rng = np.random.default_rng(7)
    alpha, beta = 1e-3, 1e-9  # 1 ms start-up, 1 GB/s
    sizes = np.repeat(np.geomspace(4096, 64 << 20, 15), 5)  # 4 KiB .. 64 MiB, 5 runs each
    times = alpha + beta * sizes + rng.normal(0, 2e-5, sizes.size)  # 20 us jitter
    model = fit_alpha_beta(sizes, times)
    assert model.alpha == pytest.approx(alpha, rel=0.03)
    assert model.beta == pytest.approx(beta, rel=0.01)
    assert model.r2 > 0.999 and model.points == 75
    assert model.source == "least squares over 75 points"


def test_fit_is_exact_on_a_line():
    sizes = [0, 1 << 10, 1 << 20, 1 << 30]
    model = fit_alpha_beta(sizes, [5e-5 + 2e-10 * m for m in sizes])
    assert model.alpha == pytest.approx(5e-5, rel=1e-9) and model.beta == pytest.approx(2e-10, rel=1e-9)
    assert model.r2 == pytest.approx(1.0)
    assert model.t(1 << 20) == pytest.approx(5e-5 + 2e-10 * (1 << 20))
    assert np.allclose(model.t(np.array(sizes, dtype=float)), [5e-5 + 2e-10 * m for m in sizes])


def test_r2_is_low_on_pure_noise():
    rng = np.random.default_rng(3)
    sizes = rng.uniform(1e3, 1e8, 200)
    model = fit_alpha_beta(sizes, rng.uniform(1e-3, 2e-3, 200))
    assert model.r2 < 0.9


def test_negative_intercept_is_constrained_to_zero():
    # Times 1, 3, 7 ms for 2, 4, 8 MB: the unconstrained line is -1 ms + 1 ms/MB.
    sizes, times = [2e6, 4e6, 8e6], [1e-3, 3e-3, 7e-3]
    model = fit_alpha_beta(sizes, times)
    x, y = np.array(sizes), np.array(times)
    assert model.alpha == 0.0
    assert model.beta == pytest.approx(x @ y / (x @ x))  # best line through the origin
    assert "constrained to alpha, beta >= 0 (unconstrained fit: alpha=-0.001 s" in model.source


def test_negative_slope_is_constrained_to_zero():
    model = fit_alpha_beta([1e3, 1e6, 1e9], [3e-3, 2e-3, 1e-3])
    assert model.beta == 0.0 and model.alpha == pytest.approx(2e-3)
    assert "constrained" in model.source


def test_constant_times_have_no_r2():
    model = fit_alpha_beta([1, 2, 3], [1e-3, 1e-3, 1e-3])
    assert model.alpha == pytest.approx(1e-3) and model.beta == pytest.approx(0.0, abs=1e-18)
    assert model.r2 is None


def test_link_model_round_trips_through_json():
    model = fit_alpha_beta([1e3, 1e6, 1e7], [1.1e-4, 1.1e-3, 1.0e-2])
    again = LinkModel.from_dict(json.loads(json.dumps(model.to_dict())))
    assert again == model
    given = LinkModel(alpha=2.5e-6, beta=1e-10)
    assert given.r2 is None and given.source == "given" and given.points == 0
    assert LinkModel.from_dict({"alpha": 2.5e-6, "beta": 1e-10}) == given


@pytest.mark.parametrize("make, message", [
    (lambda: LinkModel(alpha=-1e-6, beta=1e-9), "LinkModel alpha must be a finite number >= 0, got -1e-06"),
    (lambda: LinkModel(alpha=1e-6, beta=float("inf")), "LinkModel beta must be a finite number >= 0"),
    (lambda: LinkModel(alpha=1e-6, beta=1e-9, r2=1.5), "LinkModel r2 must be None or a number <= 1"),
    (lambda: LinkModel.from_dict({"alpha": 1, "beta": 1, "gamma": 2}),
     "unknown key.*gamma; valid: alpha, beta, r2, source, points"),
    (lambda: LinkModel.from_dict({"alpha": 1}), "LinkModel needs beta"),
    (lambda: fit_alpha_beta([1, 2, 3], [1.0, 2.0]), "one time per size; got 3 sizes and 2 times"),
    (lambda: fit_alpha_beta([4, 4, 4], [1.0, 2.0, 3.0]), "at least 2 distinct sizes, got 1"),
    (lambda: fit_alpha_beta([1, 2], [1.0, float("nan")]), "must be finite numbers >= 0"),
    (lambda: fit_alpha_beta([-1, 2], [1.0, 2.0]), "must be finite numbers >= 0"),
])
def test_bad_input_fails_in_one_line(make, message):
    with pytest.raises(ValueError, match=message) as err:
        make()
    assert "\n" not in str(err.value)


def test_stand_in_keeps_alpha_to_beta_size_and_scales_time_by_one_factor():
    from workloads.linkmodel import stand_in

    real = LinkModel(0.908e-3, 7.40e-10)  # the authors' 16 workers on 10GbE
    emu = LinkModel(0.020, 7.5e-7)
    s, d = stand_in(real, emu)
    for m in (1e3, 1e6, 1e8):  # a real tensor of m bytes and its stand-in of m / s bytes
        assert emu.t(m / s) == pytest.approx(d * real.t(m), rel=1e-12)
        assert emu.alpha / (emu.beta * m / s) == pytest.approx(real.alpha / (real.beta * m), rel=1e-12)
    with pytest.raises(ValueError, match="emulated link model needs alpha > 0"):
        stand_in(real, LinkModel(0.0, 1e-7))


def test_a_negative_intercept_from_the_large_sizes_noise_is_refitted_with_relative_errors():
    """The link probe of four workers at 20 Mbit/s (2026-11-25): 5.6 ms at 4 KiB, yet the plain
    line's intercept was -3.5 ms, and alpha clipped to 0 left no stand-in for the real setting."""
    sizes = [4096, 16384, 65536, 262144, 1048576, 4194304]
    times = [0.005638, 0.010431, 0.039115, 0.177009, 0.643665, 2.703973]
    plain_beta, plain_centred = np.polyfit(np.array(sizes) - np.mean(sizes), times, 1)
    assert plain_centred - plain_beta * np.mean(sizes) < -3e-3  # what the plain fit gives
    model = fit_alpha_beta(sizes, times)
    assert 2e-3 < model.alpha < 6e-3, model
    assert model.beta == pytest.approx(6.43e-7, rel=0.10)
    assert "weighted by 1/t" in model.source and "alpha was -0.00347 s" in model.source

    def relative_sse(alpha, beta):
        return sum(((alpha + beta * m) - t) ** 2 / t ** 2 for m, t in zip(sizes, times))
    # what a weighted fit minimises: no line near it does better, the plain one far worse
    best = relative_sse(model.alpha, model.beta)
    for da, db in ((1e-4, 0), (-1e-4, 0), (0, 1e-9), (0, -1e-9)):
        assert best <= relative_sse(model.alpha + da, model.beta + db)
    assert best < relative_sse(plain_centred - plain_beta * np.mean(sizes), plain_beta) / 10
