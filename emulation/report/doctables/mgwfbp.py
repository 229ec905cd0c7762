"""docs/papers/mgwfbp.md: the settings, the matrix, where MG-WFBP is slower."""
from __future__ import annotations

from emulation.papers import common
from emulation.papers import mgwfbp as mgwfbp_paper
from emulation.report.doctables.cells import cores, find, pct, runs_of, span, spread, unfaithful_notes, verdict, xf
from emulation.results.columns import fmt, table
from emulation.results.load import median_of, num


MGWFBP_MODELS = ("googlenet", "resnet50", "resnet152", "densenet201", "inception_v3", "vgg16", "lstm_ptb")


MODEL_TITLES = {"googlenet": "GoogLeNet", "resnet50": "ResNet-50", "resnet152": "ResNet-152",
                "densenet201": "DenseNet-201", "inception_v3": "Inception-v3", "vgg16": "VGG-16",
                "lstm_ptb": "LSTM (PTB)"}


MGWFBP_MATRIX = ([f"mgwfbp-fattree4/{m}" for m in MGWFBP_MODELS]
                 + ["mgwfbp-fattree8"] + [f"mgwfbp-fattree8-{m}" for m in ("resnet50", "resnet152", "densenet201",
                                                                           "inception_v3")]
                 + [f"mgwfbp-fattree16-{m}" for m in ("googlenet", "resnet50", "resnet152", "densenet201",
                                                      "inception_v3")])


MGWFBP_SETTINGS = {  # folder -> how section 3 names the setting
    "mgwfbp-fattree8": "8 workers, GoogLeNet (`mgwfbp_fattree8.yaml`)",
    "mgwfbp-fattree8-resnet50": "8 workers, ResNet-50 (`mgwfbp_fattree8.yaml --model resnet50`)",
    "mgwfbp-fattree16-googlenet": "16 workers, GoogLeNet (`mgwfbp_fattree16.yaml --model googlenet`)",
    "mgwfbp-fattree16-resnet50": "16 workers, ResNet-50 (`mgwfbp_fattree16.yaml --model resnet50`)",
    "mgwfbp-bcube42-googlenet": "16 servers of BCube(4,2), GoogLeNet (`mgwfbp_bcube42.yaml --model googlenet`)",
    "mgwfbp-bcube42-resnet50": "16 servers of BCube(4,2), ResNet-50 (`mgwfbp_bcube42.yaml --model resnet50`)",
    "mgwfbp-fattree8-infocom": "8 workers, GoogLeNet, the authors' 8-node K80 trace (`mgwfbp_fattree8_infocom.yaml`)",
}


MGWFBP_ALL = tuple(dict.fromkeys(MGWFBP_MATRIX + list(MGWFBP_SETTINGS)))


def _sources(folders) -> tuple:
    return tuple(f"{f}/{name}" for f in folders for name in ("summary.json", "config.yaml"))


def mgwfbp_setting(data: dict, folder: str) -> dict:
    """One MG-WFBP folder: its five runs, the real setting it stands for, the link probe, the
    speed-ups (emulation/papers/mgwfbp.py's pairing) and the alpha-beta model's accuracy."""
    runs = runs_of(data, f"{folder}/summary.json")
    cfg = data[f"{folder}/config.yaml"]
    real = cfg.get("real_setting") or {}
    mg = find(runs, folder, algorithm="mgwfbp")
    model = common.model_name(mg)
    pairs = {r["baseline"]: r for r in mgwfbp_paper.pair(runs) if r["subject"] == common.label(mg)}
    need = ("wfbp", "single", "fusion,bucket_mb=25", "fusion,bucket_mb=64")
    missing = [b for b in need if b not in pairs]
    if missing:
        raise ValueError(f"{folder}: no {', '.join(missing)} run beside mgwfbp")
    ratios = [median_of(r.get("predicted_iteration_seconds")) / median_of(r.get("iteration_seconds")) for r in runs]
    alpha = num(mg.get("alpha_seconds"))
    compute = (real.get("backward_s") or {}).get(model) if isinstance(real.get("backward_s"), dict) \
        else real.get("backward_s")
    return {"folder": folder, "model": model, "workers": mg["workers"], "topology": mg["topology"], "runs": runs,
            "mg": mg, "pairs": pairs, "real_alpha": num(real.get("alpha")), "real_beta": num(real.get("beta")),
            "real_compute": num(compute), "alpha": alpha, "r2": num(mg.get("link_r2")),
            "time_factor": alpha / num(real.get("alpha")) if alpha and num(real.get("alpha")) else None,
            "ratios": ratios, "faithful_ratios": [x for x, r in zip(ratios, runs) if r.get("faithful") is True],
            "unfaithful": [common.label(r) for r in runs if r.get("faithful") is not True]}


def _names(labels) -> str:
    names = {"wfbp": "WFBP", "single": "SyncEASGD", "mgwfbp": "MG-WFBP", "fusion,bucket_mb=25": "fusion 25",
             "fusion,bucket_mb=64": "fusion 64"}
    return ", ".join(names.get(x, x) for x in labels) or "none"


def _setting_cells(s: dict) -> list[str]:
    p = s["pairs"]
    wfbp_spread = spread(find(s["runs"], s["folder"], algorithm="wfbp").get("iteration_seconds"))
    mg_spread = spread(s["mg"].get("iteration_seconds"))
    spread_text = pct(mg_spread) + (f"; WFBP {pct(wfbp_spread, 0)}" if wfbp_spread and wfbp_spread > 0.05 else "")
    return [f"{fmt(s['alpha'] * 1e3 if s['alpha'] else None, '.1f')} ms, {fmt(s['r2'], '.5f')}",
            fmt(s["time_factor"], ".3g"), f"{fmt(s['mg'].get('groups'), 'g')} / {fmt(s['mg'].get('layers'), 'g')}",
            f"{fmt(median_of(s['mg'].get('iteration_seconds')), '.3f')} ({spread_text})",
            f"{xf(p['wfbp']['speedup'])} ({xf(p['wfbp']['predicted_speedup'])})", xf(p["single"]["speedup"]),
            f"{xf(p['fusion,bucket_mb=25']['speedup'])} / {xf(p['fusion,bucket_mb=64']['speedup'])}",
            span(s["ratios"], ".3f"), _names(s["unfaithful"])]


SETTING_HEADER = ["link probe a, R^2", "time factor (probe a / real a)", "MG-WFBP groups / tensors",
                  "MG-WFBP iteration s (spread)", "vs WFBP (predicted)", "vs SyncEASGD", "vs fusion 25 / 64 MB",
                  "predicted/measured, all five", "not faithful"]


def mgwfbp_settings(data: dict) -> list[str]:
    """Section 3: the paper's settings and the INFOCOM trace, one row per folder."""
    rows = []
    for folder, name in MGWFBP_SETTINGS.items():
        s = mgwfbp_setting(data, folder)
        compute = fmt(s["real_compute"], "g") + " s" if s["real_compute"] else "this CPU's profile"
        rows.append([f"{name}, `{folder}`",
                     f"{fmt(s['real_alpha'] * 1e3, 'g')} ms, {fmt(s['real_beta'], '.3g')}, {compute}",
                     *_setting_cells(s)])
    notes = [(f"`{f}` {common.label(r)}", r) for f in MGWFBP_SETTINGS for r in runs_of(data, f"{f}/summary.json")]
    return table(["setting (experiment file), results folder", "real a, b (s/B), compute", *SETTING_HEADER],
                 rows) + unfaithful_notes(notes)


def mgwfbp_matrix(data: dict) -> list[str]:
    """Section 3.1: every measured (model, workers) of the matrix."""
    settings = [mgwfbp_setting(data, f) for f in MGWFBP_MATRIX]
    settings.sort(key=lambda s: (MGWFBP_MODELS.index(s["model"]), s["workers"]))
    rows = [[MODEL_TITLES.get(s["model"], s["model"]), str(s["workers"]), f"`{s['folder']}`", *_setting_cells(s)]
            for s in settings]
    faithful = [x for s in settings for x in s["faithful_ratios"]]
    others = [x for s in settings for x, r in zip(s["ratios"], s["runs"]) if r.get("faithful") is not True]
    r2 = [s["r2"] for s in settings if s["r2"] is not None]
    return table(["model", "workers", "results folder", *SETTING_HEADER], rows) + [
        "", f"Predicted / measured iteration over the {len(faithful)} faithful runs: {span(faithful, '.3f')}; over "
            f"the {len(others)} others: {span(others, '.3f')}. Link-probe fits: R^2 {span(r2, '.5f')}, "
            f"{sum(1 for x in r2 if x < 0.9999)} of {len(r2)} below 0.9999."] + unfaithful_notes(
        [(f"`{s['folder']}` {common.label(r)}", r) for s in settings for r in s["runs"]])


def mgwfbp_slower(data: dict) -> list[str]:
    """Every comparison, in every MG-WFBP folder, where MG-WFBP's median iteration was the longer one."""
    rows, total = [], 0
    for folder in MGWFBP_ALL:
        s = mgwfbp_setting(data, folder)
        for base, p in s["pairs"].items():
            total += 1
            if p["speedup"] is not None and p["speedup"] < 1:
                b = find(s["runs"], folder, spec=base)
                sp = max(spread(s["mg"].get("iteration_seconds")) or 0, spread(b.get("iteration_seconds")) or 0)
                rows.append([f"`{folder}`", _names([base]), fmt(p["subject_s"], ".3f"), fmt(p["baseline_s"], ".3f"),
                             pct(p["baseline_s"] and p["subject_s"] / p["baseline_s"] - 1, 2), pct(sp, 2),
                             "yes" if p["subject_s"] / p["baseline_s"] - 1 <= sp else "**no**"])
    beyond = sum(1 for r in rows if r[-1] != "yes")
    head = (f"MG-WFBP's median iteration was longer than the baseline's in {len(rows)} of {total} comparisons "
            f"(every MG-WFBP folder: {len(MGWFBP_ALL)} folders, four baselines each)"
            + (f", {beyond} of them by more than the larger spread of the two runs" if rows else ""))
    if not rows:
        return [head + "."]
    return [head + ":", ""] + table(["results folder", "baseline", "MG-WFBP s", "baseline s", "longer by",
                                     "larger spread of the two runs", "within that spread"], rows)


# Issue #21: the WFBP runs that were not faithful in the folders above (ovs-vswitchd CPU-bound
# by their hundreds of small all-reduces), rerun alone with the real setting's start-up dilated
# (`real_setting.dilation_x`, `EXTRA="--algo wfbp --dilation-x X" bash scripts/mgwfbp_matrix.sh`):
# dilated folder -> the folder whose other four runs it stands beside
MGWFBP_WFBP_DILATED = {
    "mgwfbp-wfbp-dilated/fattree4-densenet201": "mgwfbp-fattree4/densenet201",
    "mgwfbp-wfbp-dilated/fattree8-densenet201": "mgwfbp-fattree8-densenet201",
    "mgwfbp-wfbp-dilated/fattree16-densenet201": "mgwfbp-fattree16-densenet201",
    "mgwfbp-wfbp-dilated/fattree8-infocom": "mgwfbp-fattree8-infocom",
    "mgwfbp-wfbp-dilated/bcube42-googlenet-x2": "mgwfbp-bcube42-googlenet",  # not faithful: the runner proposed 2.8
    "mgwfbp-wfbp-dilated/bcube42-googlenet": "mgwfbp-bcube42-googlenet",
}


def _real_s(run: dict, key: str) -> float | None:
    """A run's median `key` (iteration_seconds, predicted_iteration_seconds) in the real
    setting's seconds: emulated seconds / the run's time factor."""
    t, d = median_of(run.get(key)), num((run.get("stand_in") or {}).get("time_factor"))
    return t / d if t is not None and d else None


def _ovs(run: dict) -> str:
    return f"{cores(run)}, {fmt((run.get('fidelity') or {}).get('ovs_cpu_wait_percent'), '.0f')}%"


def mgwfbp_wfbp_dilated(data: dict) -> list[str]:
    """WFBP at dilation_x 1 (its folder) and at the rerun's (alone), in the real setting's seconds,
    and MG-WFBP's speed-up over the rerun."""
    rows, notes, faithful = [], [], 0
    for dilated, folder in MGWFBP_WFBP_DILATED.items():
        s = mgwfbp_setting(data, folder)
        old = find(s["runs"], folder, algorithm="wfbp")
        new = find(runs_of(data, f"{dilated}/summary.json"), dilated, algorithm="wfbp")
        x = num((new.get("stand_in") or {}).get("dilation_x"))
        mg, mg_pred = _real_s(s["mg"], "iteration_seconds"), _real_s(s["mg"], "predicted_iteration_seconds")
        cells = []
        for run in (old, new):  # the loop ends with the rerun's times in t_new, p_new
            t_new, p_new = _real_s(run, "iteration_seconds"), _real_s(run, "predicted_iteration_seconds")
            cells += [f"{fmt(t_new and t_new * 1e3, '.1f')} ({fmt(p_new and p_new * 1e3, '.1f')})", _ovs(run),
                      verdict(run)]
        faithful += new.get("faithful") is True
        rows.append([f"{MODEL_TITLES.get(s['model'], s['model'])}, {s['workers']} workers, {s['topology']}",
                     f"`{folder}`, `{dilated}`", fmt(x, "g"), *cells,
                     f"{fmt(mg and mg * 1e3, '.1f')} ({verdict(s['mg'])})",
                     f"{xf(t_new and mg and t_new / mg)} ({xf(p_new and mg_pred and p_new / mg_pred)})"])
        notes += [n for n in ((f"`{folder}` wfbp", old), (f"`{dilated}` wfbp", new)) if n[0] not in dict(notes)]
    head = ["setting", "results folders (dilation 1, rerun)", "dilation_x of the rerun",
            "WFBP ms, dilation 1 (predicted)", "ovs-vswitchd cores, wait", "faithful",
            "WFBP ms, rerun (predicted)", "ovs-vswitchd cores, wait", "faithful",
            "MG-WFBP ms (faithful)", "MG-WFBP over the rerun WFBP (predicted)"]
    return table(head, rows) + [
        "", f"Reruns faithful: {faithful} of {len(rows)}. Times are the median iteration divided by each run's "
            f"time factor (the real setting's seconds), so runs at different dilations compare."] + unfaithful_notes(notes)
