"""Measure the all-reduce cost model t(m) = a + b*m on the emulated network, before planning.

MG-WFBP's planner prices every merge with a and b (workloads/linkmodel.py); the authors time
all-reduces of a range of sizes on their cluster and fit a line. Here the same: the
workers that will run the experiment are started in their Mininet hosts with a probe job
(`workloads/worker.py` probe mode, `workloads/probe.py`: the project's ring all-reduce, the
one the layer-wise algorithms run), rank 0 logs the median time per size, and the fit with
its R^2 is kept in `<topology>/link-probe/link_model.json`. Runs whose planner needs it are
planned again with it (`PlanContext.link`), and an experiment that states a real setting
(`real_setting: {alpha, beta, ...}`) is scaled to it (`linkmodel.stand_in`).

A fit below `MIN_R2` is not planned on silently: the record says so, the runs keep it, and
their fidelity verdict says unfaithful.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

from workloads.eventlog import read_events
from workloads.job import Job, JobModel, Probe
from workloads.linkmodel import LinkModel, fit_alpha_beta

MIN_R2 = 0.9
REPS = 3
MAX_PROBE_BYTES = 4 << 20  # 16 workers at 20 Mbit/s: 3.4 s per all-reduce of this size


def probe_sizes(max_bytes: int) -> list[int]:
    """Sizes from 4 KiB up by 4x, ending with the largest not above `max_bytes` (at least
    three points): enough spread for a line, small enough to cost seconds, not minutes."""
    sizes, m = [], 4096
    while m <= max(max_bytes, 4096 * 16) and len(sizes) < 7:
        sizes.append(m)
        m *= 4
    return sizes


def measure(net, topo, hosts: list, out_dir: Path, state, max_bytes: int, timeout: float, log=print,
            pool=None) -> dict:
    """Run the probe on `hosts` (rank order) and return {"model": LinkModel dict, "points", ...};
    with `pool` (a workers.Pool on those hosts), by its processes, which the runs then reuse."""
    from emulation.workers import Workers

    out_dir.mkdir(parents=True, exist_ok=True)
    sizes = probe_sizes(max_bytes)
    job = Job(algorithm="probe", plan={}, workers=len(hosts), world=len(hosts),
              model=JobModel("probe", [["probe", 1, 0.0]]), iters=0, store=str(out_dir / "store"),
              log_dir=str(out_dir / "workers"), timeout_s=max(30.0, float(timeout)), hosts=list(hosts),
              go_file=str(out_dir / "go"), probe=Probe(sizes_bytes=sizes, reps=REPS))
    path = out_dir / "job.json"
    job.write(path)
    log(f"  link probe: all-reduce of {', '.join(f'{s >> 10} KiB' for s in sizes)} x {REPS} "
        f"on {len(hosts)} workers")
    t0 = time.time()
    workers = Workers(net, SimpleNamespace(hosts=hosts, topology=topo), path, out_dir, state, log=log, pool=pool)
    try:
        workers.start()
        workers.wait_connected(timeout)
        (out_dir / "go").touch()
        workers.wait(timeout, "link probe")
    finally:
        workers.stop()
    points = read_points(out_dir / "workers" / "rank0.jsonl")
    model = fit_alpha_beta([b for b, _ in points], [s for _, s in points])
    model = LinkModel(model.alpha, model.beta, model.r2, f"measured: {model.source}", model.points)
    rec = {"model": model.to_dict(), "points": points, "seconds": round(time.time() - t0, 2),
           "workers": len(hosts), "ok": model.r2 is not None and model.r2 >= MIN_R2, "min_r2": MIN_R2}
    (out_dir / "link_model.json").write_text(json.dumps(rec, indent=1))
    log(f"  link probe: a = {model.alpha * 1e3:.3f} ms, b = {model.beta * 1e9:.3f} ns/B "
        f"({8e-6 / model.beta if model.beta else float('inf'):.1f} Mbit/s effective), R^2 = "
        f"{model.r2 if model.r2 is not None else float('nan'):.4f}{'' if rec['ok'] else ' (below ' + str(MIN_R2) + ')'}")
    return rec


def read_points(log_path: Path) -> list[tuple[int, float]]:
    """The (bytes, seconds) points of rank 0's `probe` event (workloads/eventlog.py)."""
    events, _ = read_events(log_path)
    for event in events:
        if event.get("event") == "probe":
            return [(int(b), float(s)) for b, s in event["points"]]
    raise RuntimeError(f"the link probe wrote no result to {log_path}")
