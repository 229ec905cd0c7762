"""Top-k selection timed outside the emulation, P processes at once on this machine's cores.

    .venv/bin/python scripts/selection_probe.py --elements 3194629 --procs 8 --label before \
        --out docs/results/gtopk-scaling-fattree-r2/selection-probe.json

Each process runs a Top-k worker's own `sparsify` step (`emulation.cpuprobe.select_once`: the
residual added to the gradient, then the selection `SparseSet.topk` makes, k at density 0.001)
on the run's own synthetic gradients (seed 0, rank r of P, iteration i), with error feedback
between repetitions, one thread each, all starting together at a barrier, `--reps` times; the
record keeps the mean over processes and the mean over repetitions of the slowest process (what `sparsify_seconds` and
`sparsify_seconds_slowest` mean in a run's summary.json). Whether the emulated selection's time
is this machine's CPU alone: compare it with the same P and elements in an emulation run
(docs/PROJECTION.md, "Compute and data-dependent bytes"). Appends one record per call to --out.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's workloads package


def _select(elements: int, workers: int, rank: int, reps: int, idle: float, barrier, queue) -> None:
    import torch

    from emulation.cpuprobe import DENSITY, select_once
    from workloads.algorithms.topk import k_of
    from workloads.gradients import SyntheticGradients
    from workloads.sparse import Residual

    torch.set_num_threads(1)
    source, residual = SyntheticGradients(workers, elements, 0), Residual(elements)
    k = k_of(DENSITY, elements)
    out = []
    for it in range(reps):
        grad = source.mine(rank, it)  # the run's own gradient of this rank and iteration (seed 0)
        time.sleep(idle)  # what a worker does during the emulated backward pass
        barrier.wait()
        out.append(select_once(residual, grad, k))
    queue.put(out)


def probe(elements: int, procs: int, reps: int, idle: float = 0.0) -> dict:
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    barrier, queue = ctx.Barrier(procs), ctx.Queue()
    ps = [ctx.Process(target=_select, args=(elements, procs, rank, reps, idle, barrier, queue)) for rank in range(procs)]
    for p in ps:
        p.start()
    times = [queue.get() for _ in ps]
    for p in ps:
        p.join()
    per_rep = list(zip(*times))
    return {"elements": elements, "procs": procs, "reps": reps, "idle_seconds": idle, "cores": os.cpu_count(),
            "mean_seconds": statistics.fmean(t for ts in times for t in ts),
            "slowest_seconds": statistics.fmean(max(r) for r in per_rep)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, required=True)
    ap.add_argument("--procs", type=int, required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--idle", type=float, default=0.0, help="seconds each process sleeps before each selection")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    if a.elements < 1000 or a.procs < 1 or a.reps < 1 or not 0 <= a.idle <= 60:
        print(f"selection_probe: need --elements >= 1000, --procs >= 1, --reps >= 1, 0 <= --idle <= 60; got "
              f"{a.elements}, {a.procs}, {a.reps}, {a.idle}", file=sys.stderr)
        return 2
    rec = {"label": a.label, "at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()),
           **probe(a.elements, a.procs, a.reps, a.idle)}
    print(json.dumps(rec))
    if a.out:
        records = json.loads(a.out.read_text()) if a.out.exists() else []
        a.out.write_text(json.dumps(records + [rec], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
