"""Fan-in in the projection (issue #23): which SimGrid option could express it, and the fit of
our own one-parameter model (emulation/simulator/fanin.py) on the fit half of the folders.

    chrt --idle 0 nice -n 19 .venv/bin/python scripts/fan_in.py options   # -> docs/results/projection-fan-in-options/
    chrt --idle 0 nice -n 19 .venv/bin/python scripts/fan_in.py fit       # -> docs/results/projection-fan-in-fit/
    chrt --idle 0 nice -n 19 .venv/bin/python scripts/fan_in.py fit --cc cubic  # -> .../projection-fan-in-fit-cubic/
    chrt --idle 0 nice -n 19 .venv/bin/python scripts/fan_in.py egress    # -> docs/results/projection-fan-in-egress/
    chrt --idle 0 nice -n 19 .venv/bin/python scripts/fan_in.py shape     # -> docs/results/projection-fan-in-shape/
    chrt --idle 0 nice -n 19 .venv/bin/python scripts/fan_in.py fit-oversubscribed --cc cubic  # e_o alone again
    .venv/bin/python scripts/fan_in.py calibration --cc cubic   # -> emulation/simulator/calibrations/cubic.json

`options` simulates every faithful run of the folders with PS or BML runs (OPTION_FOLDERS) under
SimGrid's own alternatives to today's CM02 configuration (NetworkModel.cfg): LV08 (its latency
and bandwidth factors, weight-S), cross-traffic on, the SMPI model (size-dependent bandwidth
factors). `fit` fits the fan-in efficiency e on the faithful PS and BML runs of 2 MiB or more in
the fit half (`in_fit_half`) whose executor still runs (not `superseded`), each simulated at the
candidate e inside SimGrid, plus the round latency L fitted on the fit half's rings
(projection-latency-fit) times its rounds; it records every evaluation. Then the same for each
executor of OWN_E on its own fit-half runs (its own e). With CUBIC (projection.FanIn.oversubscribed)
it then fits e_o, the efficiency of oversubscribed switch links (`fanin.oversubscribed_links`), on
the fit-half runs of any algorithm on a topology with such links, each at its e, L x rounds and
PS's incast start-up as the docs fit it (`_incast_now`), and prints it as OVERSUB for the projections. The held-out half is then projected with
`syncbed project --measured docs/results/F --fan-in E --fan-in ALGO=E... --out
docs/results/projection-fan-in/NAME` (every folder of FOLDERS: `FAN_IN='<what the fit prints>'
bash scripts/project_measured.sh`) and reported by `syncbed docs` (projection-fan-in). `egress`
tries e on every switch egress link instead of links into NICs only (`fanin.egress_links`),
refitted the same way. `shape` profiles
the model's form in n (eff(n) = e + (1 - e) / n^shape, e refitted at each shape). `calibration`
(no simulation: after `syncbed docs` is current) writes the validation's fitted parameters, with
the conditions under which it charges them, into the file `syncbed project --calibration CC`
reads (emulation/simulator/calibration.py).
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from emulation.report.doctables import projection  # noqa: E402
from emulation.report.doctables.projection import (FAN_IN_FOLDERS as FOLDERS, LATENCY_MIN_BYTES,  # noqa: E402
                                                   in_fit_half, projected_name, superseded)
from emulation.simulator import core, fanin, sweep  # noqa: E402
from emulation.simulator.calibration import one_switch_input  # noqa: E402

OPTION_FOLDERS = tuple(f for f in FOLDERS if not f.startswith(("mgwfbp", "gtopk")))  # those with PS or BML runs
# e per executor: what n flows into one NIC lose depends on how an executor sends them (the PS
# executor's posting order moved it most: docs/PROJECTION.md, "Fan-in"). PS and BML, each flow a
# whole shard or share sent at once: the model's own fit, `fan_in_efficiency`, every algorithm's e
# but those below. OWN_E: executors fitted apart on their own fit-half runs, each its own
# e (`fan_in_by_algorithm`; with no fit-half run, the PS and BML e stands for it): the forest (its
# chunks go up as the parent's window of posted receives lets them) and the block-sparse
# executors (dfs, omnireduce and topk_ps share `_blocksparse.exchange`, one e for the three).
# FIT_ALGOS: what `egress` and `shape` profile (the BBR validation's e); `fit` takes its
# validation's own (projection.FanIn.fit_algos: with CUBIC, BML alone, PS taking an incast start-up).
FIT_ALGOS = ("ps", "bml")
OWN_E = {"forest": ("forest",), "block-sparse": ("dfs", "omnireduce", "topk_ps")}

OPTIONS = {
    "CM02 (today)": None,
    "LV08": ["--cfg=network/model:LV08", "--cfg=network/optim:Full"],
    "CM02 + crosstraffic": "crosstraffic",
    "SMPI": ["--cfg=network/model:SMPI", "--cfg=network/optim:Full"],
}


def _preps(folder: str):
    """(prepared projection, measured run) for every faithful measured run of `folder`."""
    s = sweep.Sweep(measured=str(ROOT / "docs/results" / folder))
    measured = sweep.resolve_measured(s)
    for p in sweep.prepare_all(s, measured, log=lambda *a: None):
        m = measured.get((p.topo.name, p.spec, p.model))
        if m is not None and m.get("faithful") is True:
            yield p, m


def _key(folder, p, m) -> dict:
    return {"experiment": projected_name(folder), "folder": folder, "topology": p.topo.name, "algo_spec": p.spec,
            "algorithm": p.algo.name, "model": p.model, "workers": len(p.hosts),
            "gradient_bytes": m.get("gradient_bytes"), "measured_seconds": m["median_sync_seconds"]}


def options(out: Path) -> None:
    base_cfg = core.NetworkModel.cfg
    runs = []
    try:
        for folder in OPTION_FOLDERS:
            for p, m in _preps(folder):
                row = {**_key(folder, p, m), "simulated_seconds": {}}
                for name, cfg in OPTIONS.items():
                    if cfg is None:
                        core.NetworkModel.cfg = base_cfg
                    elif cfg == "crosstraffic":
                        core.NetworkModel.cfg = lambda self: [c for c in base_cfg(self) if "crosstraffic" not in c] + [
                            "--cfg=network/crosstraffic:1"]
                    else:
                        core.NetworkModel.cfg = lambda self, cfg=cfg: list(cfg)
                    row["simulated_seconds"][name] = core.project(p)["simulated_seconds"]
                core.NetworkModel.cfg = base_cfg
                runs.append(row)
                print(row["experiment"], row["topology"], row["algo_spec"], row["model"],
                      {k: round(v / row["measured_seconds"], 3) for k, v in row["simulated_seconds"].items()}, flush=True)
    finally:
        core.NetworkModel.cfg = base_cfg
    _write(out, {"experiment": "SimGrid options against fan-in", "options": {k: v for k, v in OPTIONS.items()},
                 "folders": list(OPTION_FOLDERS), "runs": runs})


def _round_latency(v) -> float:
    """L fitted on the fit half's rings of validation `v` (projection.BBR_FAN_IN: the
    projection-latency-fit table's; projection.CUBIC_FAN_IN: projection-cubic-latency-fit's)."""
    from emulation.report import docs
    from emulation.report.doctables import projection

    data = docs.load_sources(ROOT / "docs/results", projection._sources(v.folders))
    return projection._fitted(projection._validation(data, v.folders, v.cc))[0]


def _points(folders, algos) -> list:
    """(folder, prepared projection, measured run, rounds) of every faithful run of `algos` (None:
    any algorithm) of 2 MiB or more in `folders` whose executor still runs (`superseded`): the runs the fan-in
    model is fitted and checked on."""
    out = []
    for folder in folders:
        started = json.loads((ROOT / "docs/results" / folder / "summary.json").read_text()).get("started")
        out += [(folder, p, m, sum(p.algo.step_rounds(p.plan))) for p, m in _preps(folder)
                if (algos is None or p.algo.name in algos) and (m.get("gradient_bytes") or 0) >= LATENCY_MIN_BYTES
                and not superseded(p.algo.name, started)]
    return out


def _simulate(e: float, rows) -> list:
    """Each `_points` row simulated at fan-in efficiency e, every flow listed (fan-in needs them)."""
    return [core.project(dataclasses.replace(p, req=dataclasses.replace(p.req, fan_in=e, reduce="off"),
                                             reduce=False))["simulated_seconds"] for _, p, _, _ in rows]


def _fit_on(pts, lat: float, what: str) -> tuple[float, float, list]:
    """(e, cost, every evaluation) least squares over `pts` (`_points` rows), L x rounds added."""
    evaluations = []

    def evaluate(e: float) -> list:
        sims = _simulate(e, pts)
        evaluations.append({"fan_in": e, "simulated_seconds": sims})
        ratios = [(s + lat * k) / m["median_sync_seconds"] for s, (_, _, m, k) in zip(sims, pts)]
        print(f"{what}: e = {e:.4f}: cost {sum((x - 1) ** 2 for x in ratios):.4f}", flush=True)
        return ratios

    e, cost = fanin.fit(evaluate)
    return e, cost, evaluations


def _incast_now(v, lat: float) -> dict:
    """{algorithm of v.incast: its incast start-up} as `syncbed docs` fits it (`projection.incast_fit`),
    from the plain projections (projection-vs-measured): those algorithms take e = 1 and the fit
    leaves out runs on topologies with oversubscribed links, so their fan-in projections are the
    plain ones and the start-up does not depend on e_o."""
    from emulation.report import docs
    from emulation.report.doctables import projection

    data = docs.load_sources(ROOT / "docs/results", projection._sources(v.folders))
    rows = [{**r, "fan_in_sim": r["simulated_seconds"], "extra_flows": r["sim"].get("extra_flows_per_sync"),
             "oversubscribed": bool(r["sim"].get("oversubscribed_links"))}
            for r in projection._validation(data, v.folders, v.cc) if r["faithful"] is True]
    # the validation's form (C): charged past the slack, none into NICs of two-port switches
    return {a: {k: x[k] for k in ("seconds", "bytes", "past_slack", "one_switch_input_free", "flow_share")}
            for a, x in projection.incast_fit(rows, lat, v.incast, past_slack=True, one_input_free=True,
                                              flow_share=True).items()}


def _fit_oversubscribed(halves, lat: float, e: float, by_algo: dict, v) -> dict:
    """e_o (`core.NetworkModel.oversubscribed`) on every faithful fit-half run of 2 MiB or more of
    any algorithm (its executor still running) on a topology with oversubscribed links, least
    squares as e: each simulated at its executor's e (else `e`) and the candidate e_o, plus L x
    rounds and its incast start-up x its extra converging flows where it is charged one
    (`_incast_now`, 2 MiB or more, past the sync's slack, none into NICs of two-port switches;
    `syncbed docs` refuses a fit made with another)."""
    pts = [x for x in _points(halves, None) if core.oversubscribed_links_of(x[1].topo)]
    runs = [{**_key(f, p, m), "rounds": k} for f, p, m, k in pts]
    if not pts:
        return {"oversubscribed_efficiency": 1.0, "fitted": False, "runs": runs}
    inc = _incast_now(v, lat)
    incast = {p.algo.name: inc[p.algo.name] for _, p, _, _ in pts if p.algo.name in inc}
    per_flow = [0.0 if one_switch_input(p.topo.name) or p.algo.name not in incast else
                projection.row_startup({"run": m, "gradient_bytes": m.get("gradient_bytes") or 0,
                                        "workers": m.get("workers"),
                                        "link_mbps": core.hosts_link_mbps(p.topo, p.hosts)[0]}, incast[p.algo.name])
                for _, p, m, _ in pts]
    evaluations = []

    def charged(r: dict, c: float) -> float:  # past the sync's slack, as the validation (core.past_slack)
        return fanin.past_slack(c * (r.get("extra_flows_per_sync") or 0),
                                r["bound_seconds"] - r["bound_nonblocking_seconds"])

    def evaluate(eo: float) -> list:
        recs = [core.project(dataclasses.replace(p, req=dataclasses.replace(
            p.req, fan_in=by_algo.get(p.algo.name, e), oversubscribed=eo, reduce="off"), reduce=False))
            for _, p, _, _ in pts]
        evaluations.append({"oversubscribed": eo, "simulated_seconds": [r["simulated_seconds"] for r in recs],
                            "extra_flows_per_sync": [r.get("extra_flows_per_sync") for r in recs]})
        ratios = [(r["simulated_seconds"] + lat * k + charged(r, c)) / m["median_sync_seconds"]
                  for r, c, (_, p, m, k) in zip(recs, per_flow, pts)]
        print(f"oversubscribed links: e_o = {eo:.4f}: cost {sum((x - 1) ** 2 for x in ratios):.4f} "
              f"({' '.join(f'{x:.3f}' for x in ratios)})", flush=True)
        return ratios

    eo, cost = fanin.fit(evaluate)
    return {"oversubscribed_efficiency": eo, "fitted": True, "cost": cost, "runs": runs,
            "evaluations": evaluations, "incast": incast}


def refit_oversubscribed(lat: float, v) -> None:
    """e_o alone again (`_fit_oversubscribed`), e and each executor's own e kept from
    docs/results/<v.fit>/ (what changes e_o and not e: the incast start-up's form)."""
    out = ROOT / "docs/results" / v.fit
    rec = json.loads((out / "summary.json").read_text())
    if abs(rec["round_latency_seconds"] - lat) > 1e-12:
        sys.exit(f"{out} was fitted with L = {rec['round_latency_seconds']} s, not {lat} s: run `fit` instead")
    halves = [f for f in v.folders if in_fit_half(projected_name(f))]
    over = _fit_oversubscribed(halves, lat, rec["fan_in_efficiency"], rec["fan_in_by_algorithm"], v)
    rec.update(oversubscribed_efficiency=over["oversubscribed_efficiency"], oversubscribed=over)
    _write(out, rec)
    print("project every folder with it:",
          f"FAN_IN='{' '.join(fanin.arguments(rec['fan_in_efficiency'], rec['fan_in_by_algorithm']))}' "
          f"OVERSUB={over['oversubscribed_efficiency']:.4f} CC={v.cc} bash scripts/project_measured.sh")


def fit(lat: float, v) -> None:
    """e on the fit half's runs of `v.fit_algos` of validation `v` (projection.BBR_FAN_IN: PS and
    BML; CUBIC_FAN_IN: BML), then each OWN_E executor's e on its own fit-half runs; `v.incast`'s
    algorithms take e = 1 (an incast start-up per converging flow instead, which `syncbed docs`
    fits in closed form: projection.incast_fit). Written to docs/results/<v.fit>/."""
    out = ROOT / "docs/results" / v.fit
    halves = [f for f in v.folders if in_fit_half(projected_name(f))]
    pts = _points(halves, v.fit_algos)
    e, cost, evaluations = _fit_on(pts, lat, " and ".join(a.upper() for a in v.fit_algos))
    executors, by_algo = {}, {}
    for name, algos in OWN_E.items():
        own = _points(halves, algos)
        rec = {"algorithms": list(algos), "runs": [{**_key(f, p, m), "rounds": k} for f, p, m, k in own]}
        if own:
            e_own, cost_own, evals = _fit_on(own, lat, name)
            rec.update(fan_in_efficiency=e_own, cost=cost_own, evaluations=evals, fitted=True)
        else:  # nothing of it in the fit half: the PS and BML e stands for it
            rec.update(fan_in_efficiency=e, fitted=False)
        executors[name] = rec
        by_algo.update({a: rec["fan_in_efficiency"] for a in algos})
    by_algo.update({a: 1.0 for a in v.incast})
    over = _fit_oversubscribed(halves, lat, e, by_algo, v) if v.oversubscribed else None
    eo = over["oversubscribed_efficiency"] if over else 1.0
    _write(out, {"experiment": "fan-in efficiency fitted on the fit half", "fan_in_efficiency": e, "cost": cost,
                 "round_latency_seconds": lat, "fit_algorithms": list(v.fit_algos), "incast_algorithms": list(v.incast),
                 "min_gradient_bytes": LATENCY_MIN_BYTES,
                 "runs": [{**_key(f, p, m), "rounds": k} for f, p, m, k in pts], "evaluations": evaluations,
                 "executors": executors, "fan_in_by_algorithm": by_algo,
                 "oversubscribed_efficiency": eo, "oversubscribed": over})
    print("project every folder with it:",
          f"FAN_IN='{' '.join(fanin.arguments(e, by_algo))}' {f'OVERSUB={eo:.4f} ' if eo != 1.0 else ''}"
          f"{'' if v.cc == 'bbr' else f'CC={v.cc} '}bash scripts/project_measured.sh")


def egress(out: Path, lat: float) -> None:
    """The fan-in model with e on every switch egress link (`fanin.egress_links`) instead of links
    into NICs only: e refitted on the fit half the same way, then every faithful PS and BML run of
    2 MiB or more of both halves simulated both ways at their e, L x rounds added."""
    pts = _points(FOLDERS, FIT_ALGOS)
    fit_pts = [x for x in pts if in_fit_half(projected_name(x[0]))]
    e_nic = json.loads((ROOT / "docs/results/projection-fan-in-fit/summary.json").read_text())["fan_in_efficiency"]
    nic = _simulate(e_nic, pts)
    nic_links = fanin.nic_links
    try:  # the model's links (NetworkModel.nic_capacity asks fanin.nic_links): every switch egress instead
        fanin.nic_links = fanin.egress_links
        e_egress, cost = fanin.fit(lambda e: [(s + lat * k) / m["median_sync_seconds"]
                                              for s, (_, _, m, k) in zip(_simulate(e, fit_pts), fit_pts)])
        eg = _simulate(e_egress, pts)
    finally:
        fanin.nic_links = nic_links
    runs = [{**_key(f, p, m), "rounds": k, "fit": in_fit_half(projected_name(f)),
             "simulated_seconds": {"nic": a + lat * k, "egress": b + lat * k}}
            for (f, p, m, k), a, b in zip(pts, nic, eg)]
    for r in runs:
        print(r["experiment"], r["topology"], r["algo_spec"], r["model"],
              {k: round(v / r["measured_seconds"], 3) for k, v in r["simulated_seconds"].items()}, flush=True)
    _write(out, {"experiment": "fan-in at every switch egress against links into NICs only",
                 "fan_in_efficiency": {"nic": e_nic, "egress": e_egress}, "cost_egress": cost,
                 "round_latency_seconds": lat, "runs": runs})


SHAPES = (0.5, 1.0, 1.5, 2.0, 3.0)  # eff(n) = e + (1 - e) / n^shape; 1 is the model


def shape(out: Path, lat: float) -> None:
    """The model's form in n profiled (`fanin.efficiency`'s shape): for each shape of SHAPES, e
    refitted on the fit half as `fit` does, then every faithful PS and BML run of 2 MiB or more
    of both halves simulated at that (e, shape), L x rounds added. Which shape the fit half
    prefers, and whether the held-out half agrees, is the profile table (projection-fan-in-shape)."""
    import functools

    pts = _points(FOLDERS, FIT_ALGOS)
    fit_pts = [x for x in pts if in_fit_half(projected_name(x[0]))]
    capacity = fanin.capacity
    profile = []
    try:
        for g in SHAPES:  # NetworkModel asks fanin.capacity(e): the same at this shape
            fanin.capacity = functools.partial(capacity, shape=g)
            e, cost = fanin.fit(lambda e: [(s + lat * k) / m["median_sync_seconds"]
                                           for s, (_, _, m, k) in zip(_simulate(e, fit_pts), fit_pts)])
            sims = _simulate(e, pts)
            profile.append({"shape": g, "fan_in_efficiency": e, "cost": cost,
                            "simulated_seconds": [s + lat * k for s, (_, _, _, k) in zip(sims, pts)]})
            print(f"shape {g}: e = {e:.4f}, fit-half cost {cost:.4f}", flush=True)
    finally:
        fanin.capacity = capacity
    _write(out, {"experiment": "the fan-in model's shape in n profiled", "shapes": list(SHAPES),
                 "round_latency_seconds": lat, "profile": profile,
                 "runs": [{**_key(f, p, m), "rounds": k, "fit": in_fit_half(projected_name(f))} for f, p, m, k in pts]})


def calibration(v) -> None:
    """The calibration file of validation `v` (`projection.calibration_record`) from docs/results."""
    from emulation.report.docs import RESULTS, load_sources
    from emulation.report.doctables.projection import calibration_record
    from emulation.simulator import calibration as cal

    record = calibration_record(load_sources(RESULTS, v.sources), v)
    cal.DIR.mkdir(parents=True, exist_ok=True)
    cal.path(v.cc).write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {cal.path(v.cc)}: {cal.describe(record)}")


def _write(out: Path, summary: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    summary.update(simulated=True, finished=time.strftime("%Y-%m-%dT%H:%M:%S"), command=" ".join(sys.argv))
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"wrote {out / 'summary.json'}")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("options", "fit", "fit-oversubscribed", "egress", "shape", "calibration"))
    ap.add_argument("--round-latency", type=float, help="L (s per round) added in the fit; default: projection-latency-fit's")
    ap.add_argument("--cc", choices=("bbr", "cubic"), default="bbr",
                    help="fit: the validation of the runs whose hosts ran this congestion control (cubic: "
                         "projection.CUBIC_FOLDERS -> docs/results/projection-fan-in-fit-cubic/); default bbr")
    a = ap.parse_args()
    if a.cc != "bbr" and a.what not in ("fit", "fit-oversubscribed", "calibration"):
        ap.error(f"--cc {a.cc} is for `fit` and `calibration` only; {a.what} runs on the BBR validation")
    if a.what == "options":
        options(ROOT / "docs/results/projection-fan-in-options")
    else:
        from emulation.report.doctables.projection import BBR_FAN_IN, CUBIC_FAN_IN

        v = CUBIC_FAN_IN if a.cc == "cubic" else BBR_FAN_IN
        if a.what == "calibration":
            calibration(v)
            sys.exit(0)
        lat = a.round_latency if a.round_latency is not None else _round_latency(v)
        if a.what == "egress":
            egress(ROOT / "docs/results/projection-fan-in-egress", lat)
        elif a.what == "shape":
            shape(ROOT / "docs/results/projection-fan-in-shape", lat)
        elif a.what == "fit-oversubscribed":
            refit_oversubscribed(lat, v)
        else:
            fit(lat, v)
