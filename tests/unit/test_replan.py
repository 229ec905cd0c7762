"""Re-planning with the measured link model, and scaling to a stated real setting."""
import pytest

from emulation import config, replan
from emulation.config import backward_for
from workloads.linkmodel import LinkModel

pytestmark = pytest.mark.unit

REAL = {"name": "16 workers, 10GbE (the authors' a, b)", "alpha": 0.908e-3, "beta": 7.40e-10}


def _runs(algos, **kw):
    cfg = config.load(topologies=["fattree,k=4"], algorithms=algos, workers=16, **{"model": "googlenet", **kw})
    return cfg, config.validate(cfg)


def test_layerwise_runs_need_the_link_and_start_provisional():
    cfg, runs = _runs(["ring", "mgwfbp", "fusion,bucket_mb=25"])
    assert [r.algorithm for r in replan.needs_link(runs, cfg)] == ["mgwfbp", "fusion"]
    assert runs[1].plan["provisional"] is True


def test_measured_link_replans_and_real_setting_scales_sizes_and_times():
    cfg, runs = _runs(["mgwfbp", "fusion,bucket_mb=25"], real_setting=REAL)
    raw = runs[0].model
    emu = LinkModel(0.02, 7.5e-7, 0.99, "measured")
    rec = replan.apply_link(runs[0], emu, REAL)
    s, d = rec["size_scale"], rec["time_factor"]
    assert d == pytest.approx(0.02 / 0.908e-3) and s == pytest.approx(0.908e-3 * 7.5e-7 / (0.02 * 7.40e-10))
    assert runs[0].plan["provisional"] is False and runs[0].plan["alpha"] == 0.02
    assert runs[0].model.bytes == pytest.approx(raw.bytes / s, rel=0.01)
    assert runs[0].model.backward_s == pytest.approx(raw.backward_s * d)
    replan.apply_link(runs[1], emu, REAL, raw_model=raw)
    # the 25 MiB bucket is the real model's: divided by the same size scale
    assert runs[1].plan["bucket_bytes"] == pytest.approx(25 * 2**20 / s)


def test_dilation_x_charges_the_missing_start_up_and_dilates_time_x_times():
    """X = 2: the plan prices a = 2 a_e and waits a_e before each group; the time factor doubles
    and the sizes grow twice (s halves), so every time is the real setting's x D as before."""
    emu = LinkModel(0.02, 7.5e-7, 0.99, "measured")
    _, plain = _runs(["wfbp"], real_setting=REAL)
    base_rec = replan.apply_link(plain[0], emu, REAL)
    dilated = {**REAL, "dilation_x": 2}
    _, runs = _runs(["wfbp"], real_setting=dilated)
    rec = replan.apply_link(runs[0], emu, dilated)
    assert rec["time_factor"] == pytest.approx(2 * base_rec["time_factor"])
    assert rec["size_scale"] == pytest.approx(base_rec["size_scale"] / 2)
    assert rec["startup_charge_s"] == pytest.approx(0.02) and rec["link"]["alpha"] == 0.02
    plan = runs[0].plan
    assert plan["alpha"] == pytest.approx(0.04) and plan["startup_charge_s"] == pytest.approx(0.02)
    assert plain[0].plan["startup_charge_s"] == 0.0
    # the emulated all-reduce of a scaled group, with the wait, is D x the real one
    m = 4 << 20
    emulated = plan["startup_charge_s"] + emu.alpha + emu.beta * m / rec["size_scale"]
    assert emulated == pytest.approx(rec["time_factor"] * (REAL["alpha"] + REAL["beta"] * m))


def test_dilation_x_is_refused_where_it_cannot_be_charged():
    with pytest.raises(ValueError, match=r"dilation_x charges a start-up wait .* ring cannot take; valid with "
                                         r"dilation_x > 1: .*mgwfbp"):
        _runs(["mgwfbp", "ring"], real_setting={**REAL, "dilation_x": 2})
    with pytest.raises(ValueError, match=r"real_setting dilation_x=0.5 is invalid: must be a number 1..64"):
        _runs(["mgwfbp"], real_setting={**REAL, "dilation_x": 0.5})
    _runs(["ring"], real_setting={**REAL, "dilation_x": 1})  # no charge: any algorithm


def test_real_setting_is_validated_in_one_line():
    with pytest.raises(ValueError, match=r"real_setting alpha=-1 must be a number > 0"):
        _runs(["mgwfbp"], real_setting={"alpha": -1, "beta": 1e-9})
    with pytest.raises(ValueError, match="real_setting must be a mapping with alpha and beta"):
        _runs(["mgwfbp"], real_setting={"alpha": 1e-3})


def test_backward_seconds_per_model():
    assert backward_for({"googlenet": 0.205}, "googlenet,batch=2") == 0.205
    assert backward_for({"googlenet": 0.205}, "resnet50") is None
    assert backward_for(0.3, "resnet50") == 0.3
    with pytest.raises(ValueError, match="real_setting backward_s="):
        _runs(["mgwfbp"], real_setting={"alpha": 1e-3, "beta": 1e-9, "backward_s": {"googlenet": 0}})


def test_real_backward_with_the_bandwidth_stand_in():
    """real_link_mbps with real_backward_s: compute becomes the real setting's, then dilated
    like the communication (real_link / (size_scale x bw))."""
    cfg, runs = _runs(["ring"], model=["resnet20", "googlenet"], size_scale=4, real_link_mbps=1000, bw=20,
                      real_backward_s={"resnet20": 0.146})
    dilation = 1000 / (4 * 20)
    assert runs[0].model.backward_s == pytest.approx(0.146 * dilation, rel=1e-6)
    profiled = config.validate(config.load(topologies=["fattree,k=4"], algorithms=["ring"], workers=16,
                                           model="googlenet", size_scale=4, real_link_mbps=1000, bw=20))
    assert runs[1].model.backward_s == pytest.approx(profiled[0].model.backward_s)  # none stated: the profile
    with pytest.raises(ValueError, match="real_backward_s needs real_link_mbps"):
        _runs(["ring"], real_backward_s=0.1)
    with pytest.raises(ValueError, match="real_backward_s=-1 must be a number > 0"):
        _runs(["ring"], real_link_mbps=1000, real_backward_s=-1)
    with pytest.raises(ValueError, match="drop size_scale, real_link_mbps and real_backward_s"):
        _runs(["mgwfbp"], real_setting=REAL, real_backward_s=0.1)
