"""The alpha-beta model's iteration times for an MG-WFBP experiment file's real setting (no emulation).

    python scripts/mgwfbp_predict.py experiments/mgwfbp_fattree16.yaml [MODEL ...]

For each model (default: the file's list) it plans wfbp, single, fusion 25/64 MiB and mgwfbp
with workloads/planners/merge.py under the file's `real_setting` (a, b, backward seconds per model, else
this CPU's profile) and prints one Markdown row: tensors, groups, predicted iteration, and
MG-WFBP's predicted speed-up over each baseline. These are the same predictions `syncbed run`
records as `predicted_iteration_seconds` (its stand-in keeps every ratio of the real setting);
docs/papers/mgwfbp.md section 3 uses them for the cells of the matrix not measured.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from emulation import config  # noqa: E402
from workloads import models
from workloads.planners import merge  # noqa: E402
from workloads.algorithms.base import DTYPE_BYTES  # noqa: E402
from workloads.algorithms.fusion import MIB  # noqa: E402

PLANS = (("wfbp", "wfbp", None), ("single", "single", None), ("fusion 25", "fusion", 25 * MIB),
         ("fusion 64", "fusion", 64 * MIB), ("mgwfbp", "mgwfbp", None))


def predict(path, names=()) -> tuple[dict, list[dict]]:
    """The file's real setting and, per model, tensors, groups and each plan's predicted iteration."""
    cfg = config.load(path)
    real = cfg.real_setting
    if not real:
        raise ValueError(f"{path}: no real_setting (give an mgwfbp_*.yaml file that states one)")
    config.check_real_setting(real)
    a, b = float(real["alpha"]), float(real["beta"])
    rows = []
    for name in names or cfg.models():
        m = models.load(name)
        m = models.scaled(m, time_factor=config.compute_factor(real.get("backward_s"), m))
        sizes = [DTYPE_BYTES * layer.numel for layer in m.layers]
        t_b = [layer.backward_s for layer in m.layers]
        plans = {key: merge.plan_groups(method, sizes, t_b, a, b, bucket) for key, method, bucket in PLANS}
        rows.append({"model": name, "backward_s": sum(t_b), "tensors": len(sizes),
                     "groups": len(plans["mgwfbp"]["groups"]),
                     "iteration_seconds": {k: p["iteration_seconds"] for k, p in plans.items()}})
    return {"workers": cfg.workers, "alpha": a, "beta": b, "name": real.get("name", "")}, rows


def main(argv):
    if not argv:
        sys.exit("usage: python scripts/mgwfbp_predict.py EXPERIMENT.yaml [MODEL ...]")
    try:
        setting, rows = predict(argv[0], argv[1:])
    except (OSError, ValueError) as e:
        sys.exit(str(e))
    print(f"{argv[0]}: {setting['workers']} workers, a = {setting['alpha'] * 1e3:g} ms, "
          f"b = {setting['beta']:g} s/B ({setting['name']})")
    print("| model | backward s | tensors | groups | mgwfbp s | vs WFBP | vs SyncEASGD | vs fusion 25 / 64 MB |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        it = r["iteration_seconds"]
        mg = it["mgwfbp"]
        print(f"| {r['model']} | {r['backward_s']:.3f} | {r['tensors']} | {r['groups']} | {mg:.4f} | "
              f"{it['wfbp'] / mg:.2f}x | {it['single'] / mg:.2f}x | "
              f"{it['fusion 25'] / mg:.2f}x / {it['fusion 64'] / mg:.2f}x |")


if __name__ == "__main__":
    main(sys.argv[1:])
