"""MG-WFBP and its baselines projected to 2,048 workers with the authors' a, b (issue #23).

The TPDS version of MG-WFBP (Shi, Chu, Li, TPDS 2021) simulates 4 to 2,048 GPUs from traces;
this projects the same four schedules (WFBP, SyncEASGD = `single`, fixed-size fusion 25 and 64
MiB, MG-WFBP) of the measured models in SimGrid (`syncbed project`, emulation/simulator/).

    chrt --idle 0 nice -n 19 .venv/bin/python scripts/project_mgwfbp_2048.py \
        [--workers 4,16,64,256,1024,2048] [--models googlenet,resnet50] [--reduce off] \
        [--out docs/results/projection-mgwfbp-2048]

Setting, and whose each part is:
- The paper's (docs/papers/mgwfbp.md 1.3, experiments/mgwfbp_fattree16.yaml `real_setting`):
  the all-reduce cost model of 16 workers on 10GbE, a = 0.908 ms, b = 7.40e-10 s/B, and the
  per-iteration backward times (GoogLeNet 0.205 s, the authors' K80 trace; ResNet-50 0.40 s is
  OUR estimate, as in that file). The four schedules and their merge rule.
- Ours: a and b at other P. A ring all-reduce pays 2(P-1) message rounds and moves 2(P-1)/P of
  the bytes, so a(P) = a16 x (P-1)/15 (30.3 us per round, the figure docs/PROJECTION.md uses)
  and b(P) = b16 x ((P-1)/P) / (15/16). The planners plan with a(P), b(P); the simulation pays
  a(P) before each group's flows (the plan's start-up) and takes the bandwidth term from the
  flow model.
- Ours: the network. Every link 10 Gbit/s (the authors' 10GbE), simulated as 1000 Mbit/s
  links carrying gradients divided by SIZE_SCALE = 10 (topologies refuse links above 1000
  Mbit/s; in the flow model m / 10 bytes at 1 Gbit/s take what m takes at 10 Gbit/s), so the
  planner's b is per scaled byte (x 10), fusion's buckets are 25 / 10 and 64 / 10 MiB of scaled
  bytes, and every time is real seconds. One worker per host (the authors' 4 GPUs per node and
  their intra-node reduction are not modelled) on the smallest Fat-Tree that holds P (k = 4,
  8, 12, 16, 22 for 16, 64, 256, 1024, 2048), two-level routing (non-blocking, as the paper's
  alpha-beta model assumes).
- Ours: per-layer sizes and the shape of the backward timeline are the registry's profiles
  (workloads/profiles/), scaled to the stated totals (`config.compute_factor`).

Writes one results folder per model under --out (summary.json, report.md, plots/ from
`syncbed project`'s writer), and plots/efficiency.png in --out: the authors' scaling
efficiency (tf + tb) / (t_iter + tf) with tf = tb / 2 (their simulator's, docs/papers/mgwfbp.md
1.6) against P.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SETTING_FILE = ROOT / "experiments" / "mgwfbp_fattree16.yaml"  # the authors' a, b at 16 workers
SIZE_SCALE = 10.0  # gradients / 10 on 1000 Mbit/s links stand for the full model on 10 Gbit/s
LINK_MBPS = 1000.0
REAL_MBPS = 10000.0
FUSION_MB = (25, 64)  # real bucket sizes (PyTorch DDP, Horovod)
A_WORKERS = 16  # the worker count the authors' a, b were measured at
FORWARD_SHARE = 0.5  # the authors' simulator: tf = 0.5 tb


def fattree_k(p: int) -> int:
    """The smallest even k whose Fat-Tree (k^3 / 4 hosts) holds p workers."""
    k = 4
    while k ** 3 // 4 < p:
        k += 2
    return k


def link_at(p: int, a16: float, b16: float) -> tuple[float, float]:
    """(a, b) of a ring all-reduce among p workers from the authors' 16-worker a, b."""
    n = A_WORKERS
    return a16 * (p - 1) / (n - 1), b16 * ((p - 1) / p) / ((n - 1) / n)


def efficiency(tb: float, t_iter: float) -> float:
    """The authors' scaling efficiency: speed-up / N = (tf + tb) / (t_iter + tf), tf = tb / 2."""
    tf = FORWARD_SHARE * tb
    return (tf + tb) / (t_iter + tf)


def prepared(model_spec: str, backward_s: float, p: int, a16: float, b16: float, max_minutes: float,
             reduce: str = "off"):
    """The projections of one model at p workers (core.checked, as `syncbed project` checks them)."""
    from emulation.config import compute_factor
    from emulation.simulator import core
    from emulation.simulator import platform as simgrid_platform
    from topologies import spec
    from topologies.placement import place
    from workloads.algorithms import base
    from workloads.linkmodel import LinkModel
    from workloads.models.layers import scaled
    from workloads.models.specs import load

    m = load(model_spec)
    m = scaled(m, SIZE_SCALE, compute_factor({model_spec: backward_s}, m))
    a, b = link_at(p, a16, b16)
    link = LinkModel(a, b * SIZE_SCALE, source=f"the authors' 16-worker a, b scaled to {p} workers as a ring's "
                                               f"(per byte of gradients / {SIZE_SCALE:g})")
    topo_spec = f"fattree,k={fattree_k(p)}"
    topo = simgrid_platform.indexed(spec.build(topo_spec, bw=LINK_MBPS, ecmp="two-level"))
    hosts = place(topo, p, "ordered")
    layers = tuple((l.name, l.numel, l.backward_s) for l in m.layers)
    out = []
    algos = ["wfbp", "single", *(f"fusion,bucket_mb={mb / SIZE_SCALE:g}" for mb in FUSION_MB), "mgwfbp"]
    for name, raw in base.parse_algos(algos):
        req = core.Request(topo_spec, base.spec_of(name, raw), p, 0, bw=LINK_MBPS, ecmp="two-level",
                           model=model_spec, link=link.to_dict(), max_seconds=max_minutes * 60,
                           reduce=reduce)
        ctx = base.PlanContext(workers=p, layer_sizes=tuple(m.layer_sizes), nics=1, topology=topo,
                               hosts=tuple(hosts), options=raw, layers=layers, link=link, size_scale=SIZE_SCALE)
        t0 = time.process_time()
        algo, plan = base.plan_for(name, ctx)
        plan_cpu = time.process_time() - t0
        prep = core.checked(req, topo, hosts, algo, plan, ctx, base.spec_of(name, raw), model_spec)
        out.append((prep, plan_cpu))
    return out


def main(argv=None) -> int:
    import yaml

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="4,16,64,256,1024,2048")
    ap.add_argument("--models", default="googlenet,resnet50")
    ap.add_argument("--reduce", default="off", choices=("auto", "on", "off"),
                    help="syncbed project's --reduce; off: these plans' steps are rings of P flows, cheap to "
                         "simulate whole, while auto's reduction of 1023 ring steps at P = 1024 ran 432 s and "
                         "its SimGrid child was then killed (out of memory)")
    ap.add_argument("--max-minutes", type=float, default=30.0, help="skip a projection estimated above this")
    ap.add_argument("--out", default="docs/results/projection-mgwfbp-2048")
    args = ap.parse_args(argv)
    from emulation.simulator import sweep
    from emulation.simulator.core import TooLarge

    real = yaml.safe_load(SETTING_FILE.read_text())["real_setting"]
    a16, b16 = float(real["alpha"]), float(real["beta"])
    sizes = [int(x) for x in args.workers.split(",")]
    out = Path(args.out)
    setting = {"source": str(SETTING_FILE.relative_to(ROOT)), "alpha_16": a16, "beta_16": b16,
               "size_scale": SIZE_SCALE, "link_mbps": LINK_MBPS, "stands_for_mbps": REAL_MBPS,
               "forward_share": FORWARD_SHARE, "fusion_real_mb": list(FUSION_MB),
               "links": {str(p): dict(zip(("alpha", "beta"), link_at(p, a16, b16))) for p in sizes},
               "topologies": {str(p): f"fattree,k={fattree_k(p)}" for p in sizes},
               "command": "chrt --idle 0 nice -n 19 .venv/bin/python scripts/project_mgwfbp_2048.py "
                          + " ".join(argv if argv is not None else sys.argv[1:])}
    for model in args.models.split(","):
        tb = float(real["backward_s"][model])
        s = sweep.Sweep(experiment=f"MG-WFBP and baselines, {model}, P = {args.workers} (scripts/project_mgwfbp_2048.py)",
                        out=str(out / model), skip_too_large=True)
        preps, plan_cpu = [], {}
        for p in sizes:
            print(f"planning {model} at P = {p} ...", flush=True)
            try:
                for prep, cpu in prepared(model, tb, p, a16, b16, args.max_minutes, args.reduce):
                    preps.append(prep)
                    plan_cpu[(p, prep.spec)] = cpu
            except TooLarge as e:
                print(f"skipping {model} at P = {p}: {e}", flush=True)
                s.skipped.append({"topology": f"fattree,k={fattree_k(p)}", "algo_spec": "*", "model": model,
                                  "workers": p, "why": str(e)})
        folder, summary = sweep.run(s, preps, {}, time.strftime("%Y-%m-%dT%H:%M:%S"))
        for r in summary["runs"]:
            r["planner_cpu_seconds"] = round(plan_cpu.get((r["workers"], r["algo_spec"]), 0.0), 3)
            r["real_backward_seconds"] = tb
            r["authors_efficiency"] = efficiency(tb, r["simulated_iteration_seconds"])
        summary["setting"] = setting
        (folder / "summary.json").write_text(json.dumps(summary, indent=1))
    plot(out, args.models.split(","))
    return 0


def plot(out: Path, models: list) -> None:
    """plots/efficiency.png: the authors' scaling efficiency against P, per model and schedule."""
    from emulation.report.plots import PLOTS_DIR, save, new_figure

    fig, _ = new_figure(5.5 * len(models), 4.2)
    fig.clear()
    axes = [fig.add_subplot(1, len(models), i + 1) for i in range(len(models))]
    for ax, model in zip(axes, models):
        runs = json.loads((out / model / "summary.json").read_text())["runs"]
        for i, spec in enumerate(dict.fromkeys(r["algo_spec"] for r in runs)):
            rs = sorted((r for r in runs if r["algo_spec"] == spec), key=lambda r: r["workers"])
            ax.plot([r["workers"] for r in rs], [r["authors_efficiency"] for r in rs], "o-", color=f"C{i}",
                    label=spec.replace("bucket_mb=2.5", "25 MiB").replace("bucket_mb=6.4", "64 MiB"))
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("workers P")
        ax.set_ylabel("scaling efficiency (tf + tb) / (t_iter + tf)")
        ax.set_title(f"{model}: SimGrid, 10 Gbit/s, a(P) from the authors' a")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    save(fig, out / PLOTS_DIR / "efficiency.png")


if __name__ == "__main__":
    sys.exit(main())
