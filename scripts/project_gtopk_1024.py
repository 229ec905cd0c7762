"""gTop-k against Top-k (and dense ring) projected to 1,024 workers (issue #23).

gTop-k (Shi et al., ICDCS 2019) merges the local top-k pairs over log2 P rounds and broadcasts
the global k: O(k log P) bytes per worker against O(kP) for Top-k's AllGather and O(d) for a
dense ring. The paper measures P <= 32 and argues the trend from its cost model; this runs the
three plans in SimGrid at P = 4 ... 1024 (`syncbed project`, emulation/simulator/).

    chrt --idle 0 nice -n 19 .venv/bin/python scripts/project_gtopk_1024.py \
        [--workers 4,8,16,32,64,128,256,512,1024] [--reduce off] [--out docs/results/projection-gtopk-1024]

Setting, and whose each part is:
- The paper's: ResNet-50 (25.6M parameters, the registry's per-layer sizes: one gradient of
  102 MB), density 0.001 (k = 25,557 pairs of 8 bytes), 1 Gbit/s Ethernet, and the authors'
  measured per-message start-up alpha = 0.436 ms on it (emulation/papers/gtopk.py ALPHA_S,
  docs/papers/gtopk.md 1.1), charged per message round (`--round-latency`): gTop-k 2 log2 P
  rounds, Top-k P - 1, ring 2(P - 1).
- Ours: the network, one worker per host on the smallest Fat-Tree that holds P (k = 4 to 16),
  every link 1000 Mbit/s, two-level routing (non-blocking: the paper's 1 GbE switch is one
  star, unstated beyond that); the project's own ring AllGather for Top-k and pairwise merge
  tree for gTop-k (workloads/algorithms/topk.py, gtopk.py).
- Not simulated: the top-k selection and merging on the CPU (the compressor), unless the
  simulator charges it (then the summary's runs say so); so the times are communication.

Writes --out (summary.json, report.md, plots/projection.png: sync time against P beside each
bound), as `syncbed project` does for a sweep.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ALGOS = ("gtopk,density=0.001", "topk,density=0.001", "ring")
MODEL = "resnet50"
LINK_MBPS = 1000.0


def fattree_k(p: int) -> int:
    """The smallest even k whose Fat-Tree (k^3 / 4 hosts) holds p workers."""
    k = 4
    while k ** 3 // 4 < p:
        k += 2
    return k


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="4,8,16,32,64,128,256,512,1024")
    ap.add_argument("--reduce", default="off", choices=("auto", "on", "off"),
                    help="syncbed project's --reduce; off: these plans' steps are rings of P flows, cheap to "
                         "simulate whole, while auto's reduction of 1023 ring steps at P = 1024 ran 432 s and "
                         "its SimGrid child was then killed (out of memory)")
    ap.add_argument("--max-minutes", type=float, default=30.0, help="skip a projection estimated above this")
    ap.add_argument("--out", default="docs/results/projection-gtopk-1024")
    args = ap.parse_args(argv)
    from emulation.papers.gtopk import ALPHA_S
    from emulation.simulator import core, sweep
    from emulation.simulator import platform as simgrid_platform
    from topologies import spec

    sizes = [int(x) for x in args.workers.split(",")]
    s = sweep.Sweep(experiment=f"gTop-k vs Top-k vs ring, {MODEL}, P = {args.workers} (scripts/project_gtopk_1024.py)",
                    out=args.out, skip_too_large=True, round_latency=ALPHA_S)
    preps = []
    for p in sizes:
        topo_spec = f"fattree,k={fattree_k(p)}"
        print(f"building {topo_spec} for P = {p} ...", flush=True)
        topo = simgrid_platform.indexed(spec.build(topo_spec, bw=LINK_MBPS, ecmp="two-level"))
        for algo in ALGOS:
            req = core.Request(topo_spec, algo, p, 0, bw=LINK_MBPS, ecmp="two-level", model=MODEL,
                               round_latency=ALPHA_S, max_seconds=args.max_minutes * 60, reduce=args.reduce)
            try:
                preps.append(core.prepare(req, topo))
            except core.TooLarge as e:
                print(f"skipping {algo} at P = {p}: {e}", flush=True)
                s.skipped.append({"topology": topo.name, "algo_spec": algo, "model": MODEL, "workers": p,
                                  "why": str(e)})
    folder, summary = sweep.run(s, preps, {}, time.strftime("%Y-%m-%dT%H:%M:%S"))
    summary["setting"] = {"model": MODEL, "link_mbps": LINK_MBPS, "round_latency_seconds": ALPHA_S,
                          "topologies": {str(p): f"fattree,k={fattree_k(p)}" for p in sizes},
                          "command": "chrt --idle 0 nice -n 19 .venv/bin/python scripts/project_gtopk_1024.py "
                                     + " ".join(argv if argv is not None else sys.argv[1:])}
    (folder / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0 if summary["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
