"""The alpha-beta model's iteration times for an MG-WFBP experiment file's real setting (no emulation).

A paper's own tool, so it sits with the paper (emulation/papers/mgwfbp.py holds its claims):
it names the algorithms of the MG-WFBP comparison, which the emulation core never does.

    syncbed predict experiments/mgwfbp_fattree16.yaml [MODEL ...]

For each model (default: the file's list) it plans wfbp, single, fusion 25/64 MiB and mgwfbp
with workloads/planners/merge.py under the file's `real_setting` (a, b, backward seconds per model, else
this CPU's profile): tensors, groups, predicted iteration, and MG-WFBP's predicted speed-up over
each baseline (`table`: one Markdown row per model). These are the same predictions `syncbed run`
records as `predicted_iteration_seconds` (its stand-in keeps every ratio of the real setting);
docs/papers/mgwfbp.md section 3 uses them for the cells of the matrix not measured.
"""
from __future__ import annotations

from emulation import config
from workloads.algorithms.base import DTYPE_BYTES
from workloads.algorithms.fusion import MIB
from workloads.planners import merge

PLANS = (("wfbp", "wfbp", None), ("single", "single", None), ("fusion 25", "fusion", 25 * MIB),
         ("fusion 64", "fusion", 64 * MIB), ("mgwfbp", "mgwfbp", None))


def predict(path, names=()) -> tuple[dict, list[dict]]:
    """The file's real setting and, per model, tensors, groups and each plan's predicted iteration."""
    from workloads.models.layers import scaled
    from workloads.models.specs import load  # torch: only once asked

    cfg = config.load(path)
    real = cfg.real_setting
    if not real:
        raise ValueError(f"{path}: no real_setting (give an mgwfbp_*.yaml file that states one)")
    config.check_real_setting(real)
    a, b = float(real["alpha"]), float(real["beta"])
    rows = []
    for name in names or cfg.models():
        m = load(name)
        m = scaled(m, time_factor=config.compute_factor(real.get("backward_s"), m))
        sizes = [DTYPE_BYTES * layer.numel for layer in m.layers]
        t_b = [layer.backward_s for layer in m.layers]
        plans = {key: merge.plan_groups(method, sizes, t_b, a, b, bucket) for key, method, bucket in PLANS}
        rows.append({"model": name, "backward_s": sum(t_b), "tensors": len(sizes),
                     "groups": len(plans["mgwfbp"]["groups"]),
                     "iteration_seconds": {k: p["iteration_seconds"] for k, p in plans.items()}})
    return {"workers": cfg.workers, "alpha": a, "beta": b, "name": real.get("name", "")}, rows


def table(path, setting: dict, rows: list[dict]) -> list[str]:
    """The lines `syncbed predict` prints for one file: its setting, then one Markdown row per model."""
    lines = [f"{path}: {setting['workers']} workers, a = {setting['alpha'] * 1e3:g} ms, "
             f"b = {setting['beta']:g} s/B ({setting['name']})",
             "| model | backward s | tensors | groups | mgwfbp s | vs WFBP | vs SyncEASGD | vs fusion 25 / 64 MB |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        it = r["iteration_seconds"]
        mg = it["mgwfbp"]
        lines.append(f"| {r['model']} | {r['backward_s']:.3f} | {r['tensors']} | {r['groups']} | {mg:.4f} | "
                     f"{it['wfbp'] / mg:.2f}x | {it['single'] / mg:.2f}x | "
                     f"{it['fusion 25'] / mg:.2f}x / {it['fusion 64'] / mg:.2f}x |")
    return lines
