"""Top-k selection timed outside the emulation, P processes at once on this machine's cores.

    .venv/bin/python scripts/selection_probe.py --elements 3194629 --procs 8 --label before \
        --out docs/results/gtopk-scaling-fattree-r2/selection-probe.json

Each process does what a gTop-k or Top-k worker's `sparsify` does (workloads/algorithms/topk.py:
the residual added to the gradient, then the top k = elements/1000 by magnitude), one thread each,
all starting together at a barrier, `--reps` times; the record keeps the mean over processes and
the mean over repetitions of the slowest process (what `sparsify_seconds` and
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


def _select(elements: int, reps: int, barrier, queue) -> None:
    import torch

    torch.set_num_threads(1)
    grad, residual = torch.randn(elements), torch.randn(elements) * 0.01
    k = max(1, elements // 1000)
    out = []
    for _ in range(reps):
        barrier.wait()
        t0 = time.perf_counter()
        acc = grad + residual
        torch.topk(acc.abs(), k)
        out.append(time.perf_counter() - t0)
    queue.put(out)


def probe(elements: int, procs: int, reps: int) -> dict:
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    barrier, queue = ctx.Barrier(procs), ctx.Queue()
    ps = [ctx.Process(target=_select, args=(elements, reps, barrier, queue)) for _ in range(procs)]
    for p in ps:
        p.start()
    times = [queue.get() for _ in ps]
    for p in ps:
        p.join()
    per_rep = list(zip(*times))
    return {"elements": elements, "procs": procs, "reps": reps, "cores": os.cpu_count(),
            "mean_seconds": statistics.fmean(t for ts in times for t in ts),
            "slowest_seconds": statistics.fmean(max(r) for r in per_rep)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, required=True)
    ap.add_argument("--procs", type=int, required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--label", default="")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    if a.elements < 1000 or a.procs < 1 or a.reps < 1:
        print(f"selection_probe: need --elements >= 1000, --procs >= 1, --reps >= 1; got {a.elements}, {a.procs}, "
              f"{a.reps}", file=sys.stderr)
        return 2
    rec = {"label": a.label, "at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()),
           **probe(a.elements, a.procs, a.reps)}
    print(json.dumps(rec))
    if a.out:
        records = json.loads(a.out.read_text()) if a.out.exists() else []
        a.out.write_text(json.dumps(records + [rec], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
