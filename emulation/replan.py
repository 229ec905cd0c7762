"""Plans that depend on measurements, made again once the measurements exist.

`config.validate` plans every run before anything starts, with provisional inputs, so bad
input still fails at once. After the network is up, the runner measures what some runs need
(`emulation/linkprobe.py`: the all-reduce cost model a + b*m on these workers) and calls
`apply_link` here, which, per run:
1. scales the model to the experiment's stated real setting when there is one
   (`real_setting: {alpha, beta, backward_s?}`; `linkmodel.stand_in`: sizes / s, every
   time x D, so a : (b x size) and compute : communication are the real setting's);
   with `dilation_x: X` it scales to a start-up of X a_e instead of the measured a_e: D and
   the sizes grow X times, and the (X - 1) a_e the network lacks is waited before each
   collective (`PlanContext.startup_charge_s`, algorithms that need "startup"), so every
   time is the real setting's x D as before with X times fewer messages per second;
2. plans again with the measured link model in `PlanContext.link`;
3. records what it did (`stand_in`), which the run's summary and report show.
The same holds for planners that read the background flows' rates (`needs_background`,
`apply_background`): the runner measures them once the flows run, before the workers start.
Pure: runs and measurements in, runs out; the runner writes the plan actually used into job.json.
"""
from __future__ import annotations

from emulation.config import compute_factor, dilation_x
from workloads.algorithms import base
from workloads.linkmodel import LinkModel, stand_in
from workloads.models.layers import scaled


def needs_link(runs, cfg) -> list:
    """The runs that need the measured link model: their planner asks for it, or the
    experiment scales every run to a real setting."""
    return [r for r in runs if cfg.real_setting or "link" in base.get(r.algorithm).needs]


def apply_link(run, link: LinkModel, real_setting: dict | None, raw_model=None) -> dict:
    """Re-plan `run` (in place) with the measured `link`; returns the stand-in record."""
    record: dict = {"link": link.to_dict()}
    if real_setting:
        real = LinkModel(float(real_setting["alpha"]), float(real_setting["beta"]), source="real setting")
        x = dilation_x(real_setting)
        if x > 1:  # the start-up the network lacks is waited: the planner prices a of x a_e
            run.startup_charge_s = (x - 1) * link.alpha
            link = LinkModel(x * link.alpha, link.beta, link.r2,
                             f"{link.source} + {run.startup_charge_s * 1e3:.3f} ms start-up waited "
                             f"(dilation_x {x:g})", link.points)
            record.update(dilation_x=x, startup_charge_s=run.startup_charge_s, charged_link=link.to_dict())
        size_scale, time_factor = stand_in(real, link)
        raw = raw_model or run.model
        # the profile is this CPU's; the real setting may state its own backward time per iteration
        compute = compute_factor(real_setting.get("backward_s"), raw)
        run.model = scaled(raw, size_scale, time_factor * compute)
        run.size_scale = size_scale
        record.update(real=real.to_dict(), real_setting=dict(real_setting), size_scale=size_scale,
                      time_factor=time_factor, compute_factor=compute,
                      real_backward_s=raw.backward_s * compute, emulated_backward_s=run.model.backward_s)
    run.link = link
    _, run.plan = base.plan_for(run.algorithm, run.context())
    return record


def needs_background(run) -> bool:
    """Does this run's planner read the background flows' measured rates, and has it any?"""
    return bool(getattr(run, "background", None)) and "background" in base.get(run.algorithm).needs


def apply_background(run, measured: list) -> None:
    """Re-plan `run` (in place) with its background flows as measured once they ran
    (`Background.measure`: each flow with `measured_mbps`)."""
    run.background = [dict(f) for f in measured]
    _, run.plan = base.plan_for(run.algorithm, run.context())
