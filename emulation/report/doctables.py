"""The generated tables of docs/: each a `Table` of emulation/report/docs.py.

Every builder is pure: the parsed files it names in, Markdown lines out. They reuse what the
report and the paper modules already compute (median sync, speed-ups, pairings, scaling
rows) and add only what a doc compares across folders. A builder raises on what it cannot
build (a run a table needs is absent), so a doc never shows a silently shortened table.
Sentences that carry measured numbers (how many, which range, which run) are built here
too, under their table, so the prose around a block never has to repeat a number.

One section per doc, in the order of `TABLES`.
"""
from __future__ import annotations

import statistics

from emulation import scaling
from emulation.papers import bml as bml_paper
from emulation.papers import common
from emulation.papers import gtopk as gtopk_paper
from emulation.papers import mgwfbp as mgwfbp_paper
from emulation.results.columns import NA, fmt, table
from emulation.report.docs import Table
from emulation.results.load import MB, compress_seconds, median_of, num


# ---- helpers ---------------------------------------------------------------------------
def runs_of(data: dict, rel: str) -> list[dict]:
    """The run records of one summary.json, only those that finished ok."""
    runs = data[rel].get("runs")
    if not isinstance(runs, list):
        raise ValueError(f"{rel} holds no runs")
    return [r for r in runs if r.get("status", "ok") == "ok"]


def _matching(runs: list, match: dict) -> list[dict]:
    """The runs whose fields equal `match` (`spec` matches algo_spec, else algorithm)."""
    return [r for r in runs if all((common.label(r) if k == "spec" else r.get(k)) == v for k, v in match.items())]


def find(runs: list, what: str, **match) -> dict:
    """The one run matching `match`; ValueError naming `what` when there is none or several."""
    hits = _matching(runs, match)
    if len(hits) != 1:
        raise ValueError(f"{what}: {len(hits)} runs match {match} (need exactly one)")
    return hits[0]


def find_opt(runs: list, **match) -> dict | None:
    """The one run matching `match`, or None (a baseline a scenario did not run)."""
    hits = _matching(runs, match)
    return hits[0] if len(hits) == 1 else None


def verdict(run: dict | None) -> str:
    """The run's fidelity verdict as the report writes it: yes, NO, or unverified."""
    if run is None:
        return NA
    f = run.get("faithful")
    return "yes" if f is True else "**NO**" if f is False else "unverified"


def starred(seconds, run) -> str:
    """Seconds, with * when the run was not faithful (the docs' convention)."""
    return fmt(seconds, ".3f") + ("*" if run is not None and run.get("faithful") is not True else "")


def reasons(run: dict) -> str:
    f = run.get("fidelity") or {}
    why = [r for r in f.get("reasons") or [] if not r.startswith("not verified")]
    if f.get("unverified"):
        why.append("not verified: " + ", ".join(f["unverified"]))
    return "; ".join(why) or ("not verified" if run.get("faithful") is None else "")


def unfaithful_notes(items: list[tuple[str, dict]]) -> list[str]:
    """One line per run that was not faithful: its label and the verdict's reasons."""
    lines = [f"- {label}: {reasons(r)}" for label, r in items if r is not None and r.get("faithful") is not True]
    return (["", "Runs not faithful or not verified (*), and why:", ""] + lines) if lines else []


def signed(x, digits: int = 1) -> str:
    """+1.2 / -0.3 / 0.0 (no "-0.0" for what rounds to zero)."""
    v = num(x)
    if v is None:
        return NA
    text = f"{v:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


def pct(x, digits: int = 1) -> str:
    v = num(x)
    return NA if v is None else f"{100 * v:.{digits}f}%"


def xf(x, digits: int = 2) -> str:
    v = num(x)
    return NA if v is None else f"{v:.{digits}f}x"


def span(values, spec: str = ".2f", unit: str = "") -> str:
    """"a-b" over the numbers in `values` (one number when they agree at that precision)."""
    vals = [v for v in (num(x) for x in values) if v is not None]
    if not vals:
        return NA
    lo, hi = format(min(vals), spec), format(max(vals), spec)
    return (lo if lo == hi else f"{lo}-{hi}") + unit


def spread(values) -> float | None:
    """(max - min) / median of a run's per-iteration times."""
    vals = [v for v in (num(x) for x in values or []) if v is not None]
    return (max(vals) - min(vals)) / statistics.median(vals) if vals and statistics.median(vals) else None


def payload_range(runs: list) -> str:
    lo = [num((r.get("payload_ratio") or {}).get("min")) for r in runs]
    hi = [num((r.get("payload_ratio") or {}).get("max")) for r in runs]
    lo, hi = [v for v in lo if v is not None], [v for v in hi if v is not None]
    return NA if not lo else f"{min(lo):.3f}..{max(hi):.3f}"


def outside_tolerance(runs: list) -> list[dict]:
    """Runs whose capture was not within the closed form's tolerance on every port."""
    return [r for r in runs if (r.get("payload_ratio") or {}).get("within_tolerance") is False]


# ---- docs/papers/gtopk.md ----------------------------------------------------------------
GTOPK_FATTREE = tuple(f"gtopk-scaling-fattree/p{p}/summary.json" for p in (4, 8, 16, 32))
GTOPK_MODELS = ("vgg16", "alexnet", "resnet20", "resnet50")
GTOPK_SCALING = tuple(f"gtopk-scaling/{m}/p{p}/summary.json" for m in GTOPK_MODELS for p in (4, 8, 16, 32))


def _share(run) -> str:
    c, s = compress_seconds(run), common.sync_s(run)
    return NA if c is None else f"{c:.3f} ({c / s:.0%})" if s else f"{c:.3f}"


def _per_worker_mib(run) -> str:
    rows = scaling.rows_of({"": {"runs": [run]}})
    b = rows[0]["bytes_per_worker"] if rows else None
    return NA if b is None else f"{b / MB:.3f}"


def gtopk_compression(data: dict) -> list[str]:
    """Section 3: the CPU variant of ResNet-50 at P = 4..32, compression apart."""
    rows, notes = [], []
    for rel in GTOPK_FATTREE:
        runs = runs_of(data, rel)
        g, t = find(runs, rel, algorithm="gtopk"), find(runs, rel, algorithm="topk")
        ring, gloo = find(runs, rel, algorithm="ring"), find(runs, rel, algorithm="gloo")
        p = g["workers"]
        dense_eff = max(num(ring.get("scaling_efficiency")) or 0, num(gloo.get("scaling_efficiency")) or 0)
        rows.append([str(p), g["topology"], starred(common.sync_s(g), g), _share(g), starred(common.sync_s(t), t),
                     _share(t), starred(common.sync_s(ring), ring), starred(common.sync_s(gloo), gloo),
                     f"{pct(g.get('scaling_efficiency'))} / {pct(t.get('scaling_efficiency'))} / {pct(dense_eff)}",
                     f"{_per_worker_mib(g)} / {_per_worker_mib(t)}"])
        notes += [(f"P = {p} {common.label(r)}", r) for r in (g, t, ring, gloo)]
    return table(["P", "topology", "gTop-k sync s", "its compression s (share)", "Top-k sync s",
                  "its compression s (share)", "ring sync s", "gloo sync s",
                  "efficiency gTop-k / Top-k / dense (better of ring, gloo)",
                  "MiB per worker per sync, gTop-k / Top-k"], rows) + ["", largest_faithful(notes)] + \
        unfaithful_notes(notes)


def largest_faithful(items: list[tuple[str, dict]]) -> str:
    """"Largest P with a faithful run: gtopk 16, ..." over (label, run) pairs."""
    best: dict = {}
    for _, r in items:
        name = r.get("algorithm")
        best.setdefault(name, None)
        if r.get("faithful") is True:
            best[name] = max(best[name] or 0, r["workers"])
    return "Largest P with a faithful run: " + ", ".join(f"{a} {p if p else 'none'}" for a, p in best.items()) + "."


def _scaling_rows(data: dict) -> list[dict]:
    rows = scaling.rows_of({rel.rsplit("/", 1)[0]: data[rel] for rel in GTOPK_SCALING})
    if not rows:
        raise ValueError("no run with iteration times in the gTop-k scaling folders")
    return rows


def gtopk_beside_paper(data: dict) -> list[str]:
    """Section 5: each model at P = 32 beside the authors' numbers (emulation/scaling.py's own table)."""
    lines = scaling.beside_paper(_scaling_rows(data), gtopk_paper.EFFICIENCY)
    start = next(i for i, line in enumerate(lines) if line.startswith("| model"))
    return [line for line in lines[start:] if line]


def _kind(row: dict) -> str:
    return {"ring": "dense", "gloo": "dense"}.get(row["algorithm"].split(",")[0], row["algorithm"].split(",")[0])


def gtopk_scaling_all(data: dict) -> list[str]:
    """Section 5: every model at every P: efficiencies, the gTop-k - Top-k gap, bytes, compression."""
    rows = _scaling_rows(data)
    out, gaps_below_16 = [], []
    for model in sorted({r["model"] for r in rows}):
        for p in sorted({r["workers"] for r in rows if r["model"] == model}):
            at = [r for r in rows if r["model"] == model and r["workers"] == p]
            dense = max((r for r in at if _kind(r) == "dense"), key=lambda r: r["efficiency"] or 0, default=None)
            t = next((r for r in at if _kind(r) == "topk"), None)
            g = next((r for r in at if _kind(r) == "gtopk"), None)
            eff = {k: (None if r is None or r["efficiency"] is None else 100 * r["efficiency"])
                   for k, r in (("dense", dense), ("topk", t), ("gtopk", g))}
            gap = eff["gtopk"] - eff["topk"] if eff["gtopk"] is not None and eff["topk"] is not None else None
            if gap is not None and p < 16:
                gaps_below_16.append((abs(gap), model, p, gap))
            mib = [NA if r is None or not r["bytes_per_worker"] else f"{r['bytes_per_worker'] / MB:.3f}"
                   for r in (dense, t, g)]
            comp = NA if g is None or g["compress_s"] is None else \
                f"{g['compress_s']:.3f} of {g['sync_s']:.3f} ({g['compress_s'] / g['sync_s']:.0%})"
            faithful = " / ".join(
                f"{name} {'yes' if r['faithful'] is True else 'NO' if r['faithful'] is False else 'unverified'}"
                for name, r in (("ring", next((r for r in at if r["algorithm"] == "ring"), None)),
                                ("gloo", next((r for r in at if r["algorithm"] == "gloo"), None)),
                                ("Top-k", t), ("gTop-k", g)) if r is not None)
            out.append([model, str(p), *(NA if v is None else f"{v:.1f}%" for v in eff.values()),
                        signed(gap), " / ".join(mib), comp, faithful])
    lines = table(["model", "P", "efficiency dense", "Top-k", "gTop-k", "gTop-k - Top-k (points)",
                   "MiB per worker per sync, dense / Top-k / gTop-k", "gTop-k compression s of sync s (share)",
                   "faithful"], out)
    runs = [r for rel in GTOPK_SCALING for r in data[rel].get("runs", [])]
    worst = max(gaps_below_16) if gaps_below_16 else None
    cells = [(m, p, {k: eff_of(rows, m, p, k) for k in ("dense", "topk", "gtopk")})
             for m in sorted({r["model"] for r in rows})
             for p in sorted({r["workers"] for r in rows if r["model"] == m})]
    sparse_above = sum(1 for _, _, e in cells if None not in e.values() and min(e["topk"], e["gtopk"]) > e["dense"])
    large = [(m, p, e) for m, p, e in cells if p >= 16 and e["gtopk"] is not None and e["topk"] is not None]
    lines += ["", f"Both sparse algorithms above dense in {sparse_above} of {len(cells)} (model, P); gTop-k above "
              f"Top-k at P >= 16 in {sum(1 for _, _, e in large if e['gtopk'] > e['topk'])} of {len(large)}"
              + (f"; below P = 16 the largest gap either way is {signed(worst[3])} points ({worst[1]}, P = {worst[2]})"
                 if worst else "") + ".",
              f"Payload measured / expected over all {len(runs)} runs: {payload_range(runs)}; "
              f"{len(outside_tolerance(runs))} runs outside the tolerance on some port."]
    notes = [(f"{common.model_name(r)} P = {r['workers']} {common.label(r)}", r) for r in runs]
    return lines + unfaithful_notes(notes)


def eff_of(rows: list, model: str, p: int, kind: str) -> float | None:
    """Efficiency in % of `kind` (dense: the better of ring and gloo) for one model and P."""
    vals = [100 * r["efficiency"] for r in rows if r["model"] == model and r["workers"] == p and _kind(r) == kind
            and r["efficiency"] is not None]
    return max(vals) if vals else None


def _convergence_rows(summary: dict) -> list[dict]:
    runs = summary.get("runs")
    if not runs:
        raise ValueError("the convergence summary holds no runs")
    return runs


def gtopk_convergence(data: dict) -> list[str]:
    """Section 4: final held-out accuracy and loss per algorithm and P, the gap to dense."""
    runs = _convergence_rows(data["convergence-gtopk/summary.json"])
    from emulation.localtrain import compare

    gaps = {(c["spec"], c["workers"]): c["gap_pp"] for c in compare(runs)}
    ps = sorted({r["workers"] for r in runs})
    specs = list(dict.fromkeys(r["spec"] for r in runs))
    by = {(r["spec"], r["workers"]): r for r in runs}
    rows = []
    for spec in specs:
        cells = []
        for p in ps:
            r = by.get((spec, p))
            if r is None:
                cells.append(NA)
                continue
            gap = gaps.get((spec, p))
            cells.append(f"{pct(r['final_accuracy'])}" + ("" if gap is None else f" ({signed(gap)})")
                         + f", loss {fmt(r.get('final_loss'), '.3f')}")
        rows.append([spec + (" (dense)" if by[next(k for k in by if k[0] == spec)]["dense"] else ""), *cells])
    lines = table(["algorithm", *(f"P = {p}: accuracy (points vs dense), loss" for p in ps)], rows)
    seed_rows = []
    for seed, rel in ((0, "convergence-gtopk/summary.json"), (1, "convergence-gtopk/seeds-p16/seed1/summary.json"),
                      (2, "convergence-gtopk/seeds-p16/seed2/summary.json")):
        rs = [r for r in _convergence_rows(data[rel]) if r["workers"] == 16]
        d = next(r for r in rs if r["dense"])
        g = next(r for r in rs if r["spec"].startswith("gtopk"))
        seed_rows.append([str(seed), pct(d["final_accuracy"]), pct(g["final_accuracy"]),
                          signed(100 * (g["final_accuracy"] - d["final_accuracy"]))])
    mean_gap = statistics.mean(float(r[3]) for r in seed_rows)
    images = data["convergence-gtopk/summary.json"].get("held_out_images")
    g_gaps = sorted((c["workers"], c["gap_pp"]) for c in compare(runs) if c["spec"].startswith("gtopk"))
    within = [str(p) for p, g in g_gaps if g >= -TARGET_POINTS]
    outside = [str(p) for p, g in g_gaps if g < -TARGET_POINTS]
    lines += ["", f"gTop-k within {TARGET_POINTS:g} point of dense (seed 0) at P = {', '.join(within) or 'none'}"
              + (f"; not at P = {', '.join(outside)}" if outside else "") + "."]
    return lines + ["", "P = 16 over three seeds:", ""] + table(
        ["seed", "dense accuracy", "gTop-k accuracy", "gap (points)"], seed_rows) + [
        "", f"Mean gap over the seeds: {signed(mean_gap)} points, "
            f"{'within' if mean_gap >= -TARGET_POINTS else 'outside'} the {TARGET_POINTS:g}-point target"
        + (f"; one held-out image is {100 / images:.2f} points of the {images}." if images else ".")]


TARGET_POINTS = 1.0  # the convergence target: within 1 percentage point of dense


# ---- docs/papers/mgwfbp.md ---------------------------------------------------------------
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


# ---- docs/forest.md ------------------------------------------------------------------------
FOREST = {  # folder under forest-scenarios -> how the scenario table names it
    "forest-s1-homogeneous": "1 homogeneous Fat-Tree k=4, 16 workers",
    "forest-s2-slow-hosts": "2 four hosts (one per pod) at 5 Mbit/s",
    "forest-s3-oversubscribed": "3 agg-core at 5 Mbit/s (4:1)",
    "forest-s4-background": "4 8 workers, 4 background flows of 8 Mbit/s across pods",
    "forest-s5-bcube-slow-level": "5 BCube(4,2), level 1 at 5 Mbit/s",
}
FOREST_VARIANTS = ("forest-s5-variants", "forest-s5-half-speed", "forest-s3-half-speed")
FOREST_BASELINES = ("ring", "ps", "gloo", "bml")


def _forest_rel(folder: str) -> str:
    return f"forest-scenarios/{folder}/summary.json"


def forest_scenarios(data: dict) -> list[str]:
    """The five scenarios: median sync of every algorithm, the forest against its cut bound and the baselines."""
    rows, notes, over_cut, vs_ring, vs_ps = [], [], [], [], []
    for folder, name in FOREST.items():
        runs = runs_of(data, _forest_rel(folder))
        f = find(runs, folder, spec="forest")
        fs = common.sync_s(f)
        base = {b: find_opt(runs, spec=b) for b in FOREST_BASELINES}
        cut = num(f.get("bound_cut_seconds"))
        n = name.split()[0]
        over_cut.append((n, fs / cut if cut else None, f))
        cells = [starred(fs, f) + (" (runs the ring)" if f.get("fallback") == "ring" else "")]
        cells += [NA if r is None else starred(common.sync_s(r), r) for r in base.values()]
        ring, ps = base["ring"], base["ps"]
        both = lambda r: f.get("faithful") is True and r.get("faithful") is True  # noqa: E731
        vs_ring.append((n, common.ratio(common.sync_s(ring), fs) if ring else None, bool(ring) and both(ring)))
        vs_ps.append((n, common.ratio(common.sync_s(ps), fs) if ps else None, bool(ps) and both(ps)))
        rows.append([name, *cells, fmt(f.get("planned_seconds"), ".3f"),
                     fmt(num(ring.get("bound_seconds")) if ring else None, ".3f"), fmt(cut, ".3f"),
                     fmt(fs / cut if cut else None, ".2f"), xf(vs_ring[-1][1]), xf(vs_ps[-1][1])])
        notes += [(f"scenario {n} {common.label(r)}", r) for r in runs]
        for r in runs:
            if common.label(r).startswith("forest,"):  # the same scenario with other forest options
                rows.append([f"{n}, `{common.label(r)}`", starred(common.sync_s(r), r), "", "", "", "",
                             fmt(r.get("planned_seconds"), ".3f"), "", fmt(num(r.get("bound_cut_seconds")), ".3f"),
                             fmt(common.ratio(common.sync_s(r), r.get("bound_cut_seconds")), ".2f"),
                             xf(common.ratio(common.sync_s(ring), common.sync_s(r)) if ring else None), ""])
    lines = table(["scenario", "forest", "ring", "ps", "gloo", "bml", "forest planned s",
                   "ring's bound (busiest link)", "cut bound",
                   "forest / cut", "forest vs ring", "forest vs ps"], rows)
    within = [n for n, x, _ in over_cut if x is not None and x <= 1.3]
    above = [f"{n} ({x:.2f}, {'faithful' if r.get('faithful') is True else 'not faithful'})"
             for n, x, r in over_cut if x is not None and x > 1.3]
    rings = [x for _, x, _ in vs_ring if x is not None]

    def largest(pairs, what: str) -> str:
        """The largest speed-up among pairs whose two runs were faithful (a headline rests on
        those only), and any larger one that rests on a run that was not."""
        ok = max(((x, n) for n, x, faithful in pairs if x is not None and faithful), default=None)
        top = max(((x, n) for n, x, _ in pairs if x is not None), default=None)
        out = f"over {what} {xf(ok[0])} (scenario {ok[1]})" if ok else f"over {what}: no faithful pair"
        if top and (not ok or top[0] > ok[0]):
            out += f" (scenario {top[1]}'s {xf(top[0])} rests on a run that was not faithful)"
        return out

    lines += ["", f"Forest within 1.3x of the cut bound in scenarios {', '.join(within) or 'none'}"
              + (f"; above it in {', '.join(above)}" if above else "") + ". "
              f"Forest against ring: {span(rings, '.2f', 'x')} (slower than ring in "
              f"{sum(1 for x in rings if x < 1)} of {len(rings)} scenarios); largest gap, both runs faithful: "
              f"{largest(vs_ring, 'ring')}, {largest(vs_ps, 'PS')}."]
    return lines + unfaithful_notes(notes)


def forest_variants(data: dict) -> list[str]:
    """Scenario 5's chunk and tree-count variants, and scenarios 3 and 5 at half the link speeds."""
    rows, notes = [], []
    for folder in FOREST_VARIANTS:
        runs = runs_of(data, _forest_rel(folder))
        if not runs:
            raise ValueError(f"{folder}: no runs")
        for r in runs:
            mbps = r.get("link_mbps")
            speeds = " / ".join(f"{x:g}" for x in mbps) if isinstance(mbps, list) else fmt(mbps, "g")
            rows.append([f"`{folder}`", f"`{common.label(r)}`", speeds, starred(common.sync_s(r), r),
                         fmt(r.get("planned_seconds"), ".3f"), fmt(r.get("bound_cut_seconds"), ".3f"),
                         fmt(common.ratio(common.sync_s(r), r.get("bound_cut_seconds")), ".2f"),
                         fmt(r.get("trees"), "g"), verdict(r)])
            notes.append((f"`{folder}` {common.label(r)}", r))
    return table(["results folder", "algorithm", "link Mbit/s", "median sync s", "planned s", "cut bound s",
                  "measured / cut", "trees", "faithful"], rows) + unfaithful_notes(notes)


# ---- docs/dfs.md ---------------------------------------------------------------------------
DFS = "dfs-resnet18-digits/summary.json"
DFS_FAMILY = ("dfs", "omnireduce", "topk_ps", "ps")


def _dfs_run(run: dict) -> dict:
    """What the DFS tables show of one run (the fields emulation/papers/dfs.py reads)."""
    phases = run.get("phase_bytes_per_sync") or {}
    tta = run.get("time_to_accuracy") or {}
    acc = (run.get("training") or {}).get("accuracy") or []
    jct, iters = num(run.get("jct_seconds")), num(run.get("iters"))
    return {"run": run, "label": common.label(run), "algorithm": run.get("algorithm"),
            "push": num(phases.get("push")), "pull": num(phases.get("pull")),
            "captured": common.bytes_per_sync(run) if run.get("payload_bytes_measured") else None,
            "zero": num(run.get("zero_block_fraction")), "sync_s": common.sync_s(run),
            "per_iteration_s": jct / iters if jct is not None and iters else None,
            "final_accuracy": acc[-1] if acc else None, "target": num(tta.get("target")),
            "target_iter": tta.get("iter"), "target_s": num(tta.get("seconds"))}


def _mb(x) -> str:
    """MB (1e6 bytes, as the DFS report): one decimal from 10 MB, two from 1, else three."""
    v = num(x)
    if v is None:
        return NA
    v /= 1e6
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}" if v >= 1 else f"{v:.3f}"


def _dfs_groups(data: dict) -> dict:
    out: dict = {}
    for r in runs_of(data, DFS):
        if r.get("algorithm") in DFS_FAMILY:
            out.setdefault(r.get("model"), {})[r["algorithm"]] = _dfs_run(r)
    if not out:
        raise ValueError(f"{DFS}: no run of {', '.join(DFS_FAMILY)}")
    return out


def dfs_runs(data: dict) -> list[str]:
    """Section 7: every run of the DFS experiment."""
    rows, notes = [], []
    for model, family in _dfs_groups(data).items():
        for algo in DFS_FAMILY:
            d = family.get(algo)
            if d is None:
                continue
            reached = (NA if d["target"] is None else "not reached" if d["target_iter"] is None
                       else f"iter {d['target_iter']}, {fmt(d['target_s'], '.1f')} s")
            used = d["run"].get("blocks_used") or {}
            rows.append([str(model), d["label"], _mb(d["push"]), _mb(d["pull"]), _mb(d["captured"]),
                         pct(d["zero"]), ", ".join(f"{b} x{n}" for b, n in used.items()) or NA,
                         starred(d["sync_s"], d["run"]),
                         fmt(d["per_iteration_s"], ".3g"), pct(d["final_accuracy"]), reached, verdict(d["run"])])
            notes.append((f"{model} {d['label']}", d["run"]))
    runs = [r for _, r in notes]
    return table(["model", "algorithm", "push MB/sync", "pull MB/sync", "captured MB/sync", "zero blocks",
                  "block sizes used (iterations)", "median sync s", "s/iteration", "final held-out accuracy",
                  "90% reached", "faithful"], rows) + [
        "", f"Payload captured / logged over the {len(runs)} runs: {payload_range(runs)}; "
            f"{len(outside_tolerance(runs))} outside the tolerance on some port; correct: "
            f"{sum(1 for r in runs if r.get('correct') is True)} of {len(runs)}."] + unfaithful_notes(notes)


def _less(x, y) -> str:
    r = common.ratio(x, y)
    return NA if r is None else f"{100 * (1 - r):.1f}% less" if r <= 1 else f"{100 * (r - 1):.1f}% more"


def dfs_headline(data: dict) -> list[str]:
    """Section 7: DFS against OmniReduce, Top-k on the PS and the dense PS, beside the abstract."""
    rows = []
    for model, f in _dfs_groups(data).items():
        d, o, t, p = (f.get(a) for a in DFS_FAMILY)
        if d is None:
            continue
        cmp = [x for x in (d, o, t, p) if x is not None]
        time_cell = NA
        if p is not None:
            if d["target_s"] is not None and p["target_s"] is not None:
                time_cell = f"{_less(d['target_s'], p['target_s'])} to {100 * d['target']:g}% " \
                            f"({fmt(d['target_s'], '.1f')} against {fmt(p['target_s'], '.1f')} s)"
            else:
                time_cell = f"{_less(d['run'].get('jct_seconds'), p['run'].get('jct_seconds'))} wall time"
        rows.append([str(model), _less(d["captured"], o and o["captured"]) if o else NA, "87.17% less (up to)",
                     _less(d["captured"], t and t["captured"]) if t else NA, time_cell,
                     "74.12% less (ResNet-18)", ", ".join(f"{x['label']} {verdict(x['run'])}" for x in cmp)])
    return table(["model", "DFS payload vs OmniReduce (captured, same density)", "paper",
                  "DFS payload vs Top-k PS", "DFS training time vs dense PS", "paper", "faithful"], rows)


# ---- docs/FIDELITY.md and docs/results/README.md ------------------------------------------
BML_FOLDERS = ("bml-bcube32-vs-ps-fattree", "bml-bcube42-vs-ps-fattree")
BML_REPEATS = tuple(f"bml-repeats/{f}-vgg19-r{i}" for f in BML_FOLDERS for i in (2, 3))
FIDELITY_FOLDERS = ("default",) + BML_FOLDERS


def _cores(run) -> str:
    v = num((run.get("fidelity") or {}).get("ovs_cpu_percent"))
    return NA if v is None else f"{v / 100:.2f}"


def _busy(run) -> str:
    link = (run.get("fidelity") or {}).get("busiest_link") or {}
    busy, rate = num(link.get("busy_mean_mbps")), num(link.get("configured_mbps"))
    return NA if busy is None or not rate else f"{busy / rate:.0%}"


def fidelity_bounds(data: dict) -> list[str]:
    """Sync time against the busiest-link bound in the default and BML experiments (MB-size gradients),
    with what the fidelity verdict looked at: OVS's CPU and the busiest link's rate while busy."""
    rows, by_algo = [], {}
    for folder in FIDELITY_FOLDERS:
        for r in runs_of(data, f"{folder}/summary.json"):
            if (num(r.get("gradient_bytes")) or 0) < 2 * MB:
                continue
            over = common.ratio(common.sync_s(r), r.get("bound_seconds"))
            if r.get("faithful") is True and over is not None:
                by_algo.setdefault(r.get("algorithm"), []).append(over)
            pr = r.get("payload_ratio") or {}
            rows.append([f"`{folder}`", r.get("topology", NA), common.label(r), str(r.get("model")),
                         fmt(common.sync_s(r), ".3f"), fmt(r.get("bound_seconds"), ".3f"), fmt(over, ".2f"),
                         f"{fmt(pr.get('min'), '.4f')}..{fmt(pr.get('max'), '.4f')}",
                         pct(r.get("retransmitted_fraction")), _cores(r), _busy(r),
                         fmt((r.get("fidelity") or {}).get("workers_starved_percent"), ".0f") + "%", verdict(r)])
    lines = table(["results folder", "topology", "algorithm", "model", "median sync s", "busiest-link bound s",
                   "sync / bound", "payload measured/expected", "retransmitted", "ovs-vswitchd cores",
                   "busiest link while busy (of its rate)", "workers' CPU demand spent waiting", "faithful"], rows)
    return lines + ["", "Sync / bound over the faithful runs above: " + "; ".join(
        f"{a} {span(v, '.2f', 'x')}" for a, v in sorted(by_algo.items())) + "."]


def bml_summary(data: dict) -> list[str]:
    """The BML experiments beside the paper: emulation/papers/bml.py's pairing, per model."""
    rows = []
    for folder in sorted(BML_FOLDERS + BML_REPEATS, key=lambda f: (f.split("/")[-1][:25], f)):
        runs = runs_of(data, f"{folder}/summary.json")
        for r in bml_paper.pair(runs):
            b = find(runs, folder, algorithm="bml", model=r["model"])
            p = find(runs, folder, algorithm="ps", model=r["model"], topology=r["fattree"])
            rows.append([f"`{folder}`", str(r["model"]), f"{r['bcube']} / {r['fattree']}", str(r["servers"]),
                         fmt(r["sync_ratio"], ".3f"), fmt(r["sync_ratio_claim"], ".3f"),
                         f"{fmt(r['jct_bml_s'], '.2f')} / {fmt(r['jct_ps_s'], '.2f')}",
                         pct(r["jct_reduction"]), "56.4% (up to)", f"BML {verdict(b)}, PS {verdict(p)}"])
    return table(["results folder", "model", "BCube / Fat-Tree", "servers", "sync BML / PS", "1/k", "JCT BML / PS s",
                  "JCT reduction", "paper", "faithful"], rows)


def _bml_vgg19_rows(data: dict) -> list[dict]:
    """Per BML experiment, its VGG-19 pair (BML on BCube, PS on Fat-Tree) in every run of it:
    the main folder and its repeats."""
    out = []
    for main in BML_FOLDERS:
        for folder in (main, *(f for f in BML_REPEATS if f.split("/")[-1].startswith(main))):
            runs = runs_of(data, f"{folder}/summary.json")
            pairs = [r for r in bml_paper.pair(runs) if r["model"] == "vgg19"]
            if len(pairs) != 1:
                raise ValueError(f"{folder}: {len(pairs)} VGG-19 BML/PS pairs (need one)")
            r = pairs[0]
            b = find(runs, folder, algorithm="bml", model="vgg19")
            ps = find(runs, folder, algorithm="ps", model="vgg19", topology=r["fattree"])
            out.append({"experiment": main, "folder": folder, "pair": r, "bml": b, "ps": ps})
    return out


def bml_jct_spread(data: dict) -> list[str]:
    """VGG-19 JCT reduction of BML against PS over repeated runs of each BML experiment."""
    rows, notes = [], []
    by_exp: dict = {}
    for x in _bml_vgg19_rows(data):
        by_exp.setdefault(x["experiment"], []).append(x)
    for exp, xs in by_exp.items():
        red = [x["pair"]["jct_reduction"] for x in xs]
        ratio = [x["pair"]["sync_ratio"] for x in xs]
        rows.append([f"`{exp}`", f"{xs[0]['pair']['bcube']} / {xs[0]['pair']['fattree']}", str(len(xs)),
                     ", ".join(pct(v) for v in red), pct(statistics.median(red)),
                     f"{pct(min(red))} .. {pct(max(red))}",
                     f"{fmt(statistics.median(ratio), '.3f')} ({fmt(min(ratio), '.3f')} .. {fmt(max(ratio), '.3f')})",
                     fmt(xs[0]["pair"]["sync_ratio_claim"], ".3f"),
                     ", ".join(f"BML {verdict(x['bml'])} / PS {verdict(x['ps'])}" for x in xs)])
        notes += [f"- `{x['folder']}`: PS run not faithful: {reasons(x['ps'])}" for x in xs if x["ps"].get("faithful") is False]
        notes += [f"- `{x['folder']}`: BML run not faithful: {reasons(x['bml'])}" for x in xs if x["bml"].get("faithful") is False]
    return table(["experiment", "BCube / Fat-Tree", "runs", "JCT reduction per run", "median", "range",
                  "sync BML / PS median (range)", "1/k", "faithful per run"], rows) + ([""] + notes if notes else [])


BML_TRAINING = ("train-lenet5-digits", "train-lenet5-digits-r2")


def bml_training(data: dict) -> list[str]:
    """LeNet-5 trained on digits, BML on BCube(3,2) against PS on Fat-Tree k=4, per run."""
    rows, notes = [], []
    for folder in BML_TRAINING:
        runs = runs_of(data, f"{folder}/summary.json")
        b, p = find(runs, folder, algorithm="bml"), find(runs, folder, algorithm="ps")
        acc = lambda r: (r.get("training") or {}).get("accuracy") or [None]  # noqa: E731
        rows.append([f"`{folder}`", f"{fmt(b.get('jct_seconds'), '.1f')} / {fmt(p.get('jct_seconds'), '.1f')}",
                     pct(1 - b["jct_seconds"] / p["jct_seconds"]),
                     f"{fmt(common.sync_s(b), '.3f')} / {fmt(common.sync_s(p), '.3f')}",
                     f"{pct(acc(b)[-1])} / {pct(acc(p)[-1])}", f"BML {verdict(b)}, PS {verdict(p)}"])
        notes += [f"- `{folder}` {r['algorithm']}: not faithful: {reasons(r)}" for r in (b, p)
                  if r.get("faithful") is False]
    return table(["results folder", "JCT BML / PS s", "JCT reduction", "sync BML / PS s",
                  "held-out accuracy (last) BML / PS", "faithful"], rows) + ([""] + notes if notes else [])


BML_STATED_MBPS = (100, 400, 1000, 10000)  # real link rates the sensitivity table states


def bml_jct_sensitivity(data: dict) -> list[str]:
    """How the VGG-19 JCT reduction depends on the real link rate the experiment states
    (`real_link_mbps`, 400 in the files): a derivation from each experiment's first run, not a
    measurement. An iteration is its compute c (iteration - sync, measured) plus its sync s;
    stating X Mbit/s instead of 400 multiplies the emulated compute by X / 400 (the
    time-dilation factor real_link_mbps / (size_scale x bw)) and leaves the sync as measured,
    so the reduction is 1 - (c X/400 + s_BML) / (c X/400 + s_PS)."""
    rows = []
    for x in _bml_vgg19_rows(data):
        if x["folder"] not in BML_FOLDERS:
            continue
        b, p = x["bml"], x["ps"]
        s_b, s_p = statistics.median(b["sync_seconds"]), statistics.median(p["sync_seconds"])
        c = statistics.median([statistics.median(r["iteration_seconds"]) - statistics.median(r["sync_seconds"])
                               for r in (b, p)])
        cells = []
        for mbps in BML_STATED_MBPS:
            cx = c * mbps / 400
            cells.append(f"{pct(1 - (cx + s_b) / (cx + s_p))} (c/s_PS {fmt(cx / s_p, '.2f')})")
        rows.append([f"`{x['folder']}`", fmt(c, ".3f"), fmt(s_b, ".3f"), fmt(s_p, ".3f"),
                     pct(x["pair"]["jct_reduction"]), *cells])
    return table(["first run", "compute c s", "sync BML s", "sync PS s", "JCT reduction measured (400)",
                  *(f"derived at {m:g} Mbit/s" for m in BML_STATED_MBPS)], rows)


HD_FOLDERS = ("hd-default", "hd-default-two-level")


def hd_default(data: dict) -> list[str]:
    """hd against ring and gloo in the default setting: sync, both bounds, shared links."""
    rows = []
    for folder in HD_FOLDERS:
        for r in runs_of(data, f"{folder}/summary.json"):
            sync = common.sync_s(r)
            step = num(r.get("bound_step_seconds"))
            c = r.get("collisions") or {}
            first = (c.get("first") or [None])[0]
            shared = (f"{c['count']} (step {first['step']}: {first['link']}, {first['flows']} flows)"
                      if c.get("count") else "none")
            ecmp = data[f"{folder}/config.yaml"].get("ecmp", "hash")
            rows.append([f"`{folder}`", f"{r['topology']}" + (f", {ecmp} ECMP" if r["topology"].startswith("fattree") else ""),
                         common.label(r), fmt(sync, ".3f"), fmt(r.get("bound_seconds"), ".3f"), fmt(step, ".3f"),
                         fmt(sync / step if sync and step else None, ".2f"), shared, verdict(r)])
    return table(["results folder", "network", "algorithm", "median sync s", "bound s", "step bound s",
                  "sync / step bound", "shared links (first)", "faithful"], rows)


RESULTS_INDEX = {  # top folder -> its summaries (the experiments `syncbed run` wrote)
    "default": ("default",), "bml-bcube32-vs-ps-fattree": ("bml-bcube32-vs-ps-fattree",),
    "bml-bcube42-vs-ps-fattree": ("bml-bcube42-vs-ps-fattree",), "bml-repeats": BML_REPEATS,
    "train-lenet5-digits": ("train-lenet5-digits",), "train-lenet5-digits-r2": ("train-lenet5-digits-r2",),
    "dfs-resnet18-digits": ("dfs-resnet18-digits",),
    "hd-default": ("hd-default",), "hd-default-two-level": ("hd-default-two-level",),
    "ddp-resnet20-digits": ("ddp-resnet20-digits",),
    "hash-ecmp": ("hash-ecmp/bml-bcube32-vs-ps-fattree", "hash-ecmp/bml-bcube42-vs-ps-fattree"),
    **{f: (f,) for f in MGWFBP_ALL if "/" not in f},
    "mgwfbp-fattree4": tuple(f"mgwfbp-fattree4/{m}" for m in MGWFBP_MODELS),
    "gtopk-scaling": tuple(f"gtopk-scaling/{m}/p{p}" for m in GTOPK_MODELS for p in (4, 8, 16, 32)),
    "gtopk-scaling-fattree": tuple(f"gtopk-scaling-fattree/p{p}" for p in (4, 8, 16, 32)),
    "forest-scenarios": tuple(f"forest-scenarios/{f}" for f in (*FOREST, *FOREST_VARIANTS)),
}


def results_index(data: dict) -> list[str]:
    """One row per folder of emulated runs: when, how long, and every run's verdicts."""
    rows = []
    for top, folders in sorted(RESULTS_INDEX.items()):
        sums = [data[f"{f}/summary.json"] for f in folders]
        runs = [r for s in sums for r in s.get("runs", [])]
        started = sorted(s.get("started") or "" for s in sums)
        finished = sorted(s.get("finished") or "" for s in sums)
        walls = [num((s.get("throughput") or {}).get("wall_seconds")) for s in sums]
        overhead = [num((s.get("throughput") or {}).get("overhead_fraction")) for s in sums]
        when = started[0].replace("T", " ")[:16]
        if len(sums) > 1:
            when += " - " + finished[-1].replace("T", " ")[:16]
        rows.append([f"`{top}/`", str(len(sums)), when,
                     NA if None in walls else f"{sum(walls) / 60:.1f}",
                     NA if None in overhead or len(overhead) > 1 else pct(overhead[0], 0),
                     str(len(runs)), str(sum(1 for r in runs if r.get("faithful") is True)),
                     str(sum(1 for r in runs if r.get("faithful") is False)),
                     str(sum(1 for r in runs if r.get("faithful") not in (True, False))),
                     str(len(outside_tolerance(runs)))])
    return table(["folder", "experiments", "started (- last finished)", "wall min", "wall not in iterations", "runs",
                  "faithful", "not faithful", "unverified", "payload outside tolerance on some port"], rows)


# ---- docs/PROJECTION.md --------------------------------------------------------------------
PROJECTED = ("default", "bml-bcube32-vs-ps-fattree", "bml-bcube42-vs-ps-fattree", "dfs-resnet18-digits",
             "train-lenet5-digits", "mgwfbp-fattree8", "mgwfbp-fattree8-resnet50",
             *(f"forest-scenarios/{f}" for f in FOREST),
             *(f"gtopk-scaling-fattree/p{p}" for p in (4, 8, 16, 32)))
TOLERANCE = 0.10  # the issue's target for dense algorithms at the emulated scale
LATENCY_MIN_BYTES = 2 * MB  # below this a ring's rounds, not its bytes, set the time: not fitted
LAYERWISE = ("wfbp", "single", "fusion", "mgwfbp")


def projected_name(folder: str) -> str:
    """docs/results/projection-vs-measured/<name>/ of a measured folder (scripts/project_measured.sh)."""
    return folder.removeprefix("forest-scenarios/").replace("/", "-")


def in_fit_half(name: str) -> bool:
    """The split: a folder's runs fit the round latency when the CRC-32 of its name is even, and
    are held out otherwise. By folder, so no experiment is on both sides; by a hash of the name,
    so adding a folder moves no other."""
    import zlib
    return zlib.crc32(name.encode()) % 2 == 0


def fit_round_latency(points) -> tuple[float, float]:
    """(c, L) minimizing sum (measured - c x simulated - L x rounds)^2 over `points`, each
    (measured s, simulated s with no latency, message rounds per sync): the bandwidth term's
    factor and the start-up of one round. Pure; ValueError below two independent points."""
    import numpy as np

    pts = [(float(m), float(s), float(k)) for m, s, k in points]
    a = np.array([[s, k] for _, s, k in pts], dtype=float).reshape(-1, 2)
    if len(pts) < 2 or np.linalg.matrix_rank(a) < 2:
        raise ValueError(f"fitting a round latency needs two runs with different rounds per byte, got {len(pts)}")
    (c, lat), *_ = np.linalg.lstsq(a, np.array([m for m, _, _ in pts]), rcond=None)
    return float(c), float(lat)


PROJECTION_SOURCES = tuple(rel for f in PROJECTED
                           for rel in (f"{f}/summary.json", f"projection-vs-measured/{projected_name(f)}/summary.json"))


def _validation(data: dict) -> list[dict]:
    """Every run simulated against measured: the projection's row, its rounds, the measured run,
    the folder's side of the split. Refuses a projection older than its measured folder."""
    out = []
    for folder in PROJECTED:
        name = projected_name(folder)
        proj = data[f"projection-vs-measured/{name}/summary.json"]
        measured = runs_of(data, f"{folder}/summary.json")
        sims = {(r["topology"], r["algo_spec"], r["model"]): r for r in proj.get("runs", [])}
        for v in proj.get("validation") or []:
            key = (v["topology"], v["algo_spec"], v["model"])
            m = find(measured, folder, topology=key[0], spec=key[1], model=key[2])
            now = num(m.get("median_sync_seconds"))
            if now is None or abs(now - v["measured_seconds"]) > 1e-9 * max(1.0, now):
                raise ValueError(f"projection-vs-measured/{name} simulated other runs than docs/results/{folder} "
                                 f"now holds ({key[1]} on {key[0]}: {v['measured_seconds']} s then, {now} s now): "
                                 f"rerun `bash scripts/project_measured.sh {folder}`")
            sim = sims[key]
            if sim.get("round_latency_seconds"):
                raise ValueError(f"projection-vs-measured/{name} was simulated with a round latency; the fit needs 0")
            out.append({**v, "experiment": name, "folder": folder, "fit": in_fit_half(name), "run": m, "sim": sim,
                        "rounds": sim.get("rounds_per_sync"), "algorithm": m.get("algorithm"),
                        "gradient_bytes": num(m.get("gradient_bytes")) or 0})
    return out


def _fit_points(rows, fit: bool) -> list[dict]:
    return [r for r in rows if r["fit"] == fit and r["algorithm"] in ("ring", "gloo") and r["rounds"]
            and r["gradient_bytes"] >= LATENCY_MIN_BYTES and r["faithful"] is True]


def _fitted(rows) -> tuple[float, float, list, list]:
    fit, held = _fit_points(rows, True), _fit_points(rows, False)
    c, lat = fit_round_latency([(r["measured_seconds"], r["simulated_seconds"], r["rounds"]) for r in fit])
    return c, lat, fit, held


def _with_latency(r: dict, lat: float) -> float | None:
    """What `syncbed project --round-latency lat` gives: every round's start-up before its step
    (serial steps, constant background), so the zero-latency time plus lat x rounds."""
    return None if r["rounds"] is None or r["simulated_seconds"] is None else r["simulated_seconds"] + lat * r["rounds"]


def projection_validation(data: dict) -> list[str]:
    """Every measured run with a simulated form: simulated (no latency, and with the latency fitted
    on the other half of the folders) against measured."""
    rows = _validation(data)
    _, lat, _, _ = _fitted(rows)
    cells = []
    for r in rows:
        with_lat = _with_latency(r, lat)
        it = (f"{fmt(r.get('measured_iteration_seconds'), '.3f')} / {fmt(r.get('simulated_iteration_seconds'), '.3f')}"
              if r.get("measured_iteration_seconds") is not None else "")
        cells.append([r["experiment"], "fit" if r["fit"] else "held out", r["topology"], r["algo_spec"],
                      str(r["model"]), str(r["workers"]), fmt(r["measured_seconds"], ".3f"),
                      fmt(r["simulated_seconds"], ".3f"), fmt(r["sim_over_measured"], ".2f"),
                      fmt(r["rounds"], "g"), fmt(with_lat, ".3f"),
                      fmt(common.ratio(with_lat, r["measured_seconds"]), ".2f"), fmt(r["measured_over_bound"], ".2f"),
                      it, verdict(r["run"])])
    return table(["experiment", "half", "topology", "algorithm", "model", "N", "measured s", "simulated s (L = 0)",
                  "sim/meas", "rounds", f"simulated s (L = {lat * 1e3:.2f} ms)", "sim/meas", "meas/bound",
                  "iteration meas / sim s", "faithful"], cells)


def _ratios(rows, lat=None) -> list[float]:
    out = []
    for r in rows:
        sim = r["simulated_seconds"] if lat is None else _with_latency(r, lat)
        x = common.ratio(sim, r["measured_seconds"])
        if x is not None:
            out.append(x)
    return out


def _mean_error(ratios) -> float | None:
    return statistics.mean(abs(x - 1) for x in ratios) if ratios else None


def _within(ratios) -> int:
    return sum(1 for x in ratios if abs(x - 1) <= TOLERANCE)


def projection_latency_fit(data: dict) -> list[str]:
    """The round latency fitted on one half of the folders, checked on the other half."""
    rows = _validation(data)
    c, lat, fit, held = _fitted(rows)
    lines = [f"Fit: measured = c x simulated (L = 0) + L x rounds, least squares over the {len(fit)} faithful ring "
             f"and gloo runs with gradients of 2 MiB or more in the fit half "
             f"({', '.join(sorted({r['experiment'] for r in fit}))}): **L = {lat * 1e3:.2f} ms per round**, "
             f"c = {c:.3f}.", ""]
    cells = []
    for half, pts in (("fit", fit), ("held out", held)):
        r0, rl = _ratios(pts), _ratios(pts, lat)
        cells.append([half, str(len(pts)), ", ".join(sorted({r["experiment"] for r in pts})) or NA,
                      span(r0), pct(_mean_error(r0)), f"{_within(r0)} of {len(r0)}", span(rl), pct(_mean_error(rl)),
                      f"{_within(rl)} of {len(rl)}"])
    lines += table(["half", "runs", "experiments", "sim/meas, L = 0", "mean abs(sim/meas - 1)",
                    f"within {TOLERANCE:.0%}", f"sim/meas, L = {lat * 1e3:.2f} ms", "mean abs(sim/meas - 1)",
                    f"within {TOLERANCE:.0%}"], cells)
    with_lat = [(r, common.ratio(_with_latency(r, lat), r["measured_seconds"])) for r in held]
    outside = [f"{r['experiment']} {r['topology']} {r['algo_spec']} {r['model']} ({x:.2f})"
               for r, x in with_lat if abs(x - 1) > TOLERANCE]
    lines += ["", "Held out and outside 10% with the fitted L: " + ("; ".join(outside) or "none") + "."]
    return lines + _additivity(data)


ADDITIVITY = tuple(f"projection-validation/{projected_name(f)}/summary-latency{x}.json"
                   for f in PROJECTED if f != "gtopk-scaling-fattree/p32" for x in ("0", "3.1ms"))


def _additivity(data: dict) -> list[str]:
    """The claim `_with_latency` rests on, checked on the earlier projections run both ways."""
    worst, n = 0.0, 0
    for rel0 in ADDITIVITY[::2]:
        zero, lat = data[rel0], data[rel0.replace("latency0", "latency3.1ms")]
        base = {(r["topology"], r["algo_spec"], r["model"]): r for r in zero.get("runs", [])}
        for r in lat.get("runs", []):
            b = base.get((r["topology"], r["algo_spec"], r["model"]))
            if b is None or r.get("rounds_per_sync") is None:
                continue
            n += 1
            step = r["round_latency_seconds"]
            worst = max(worst, abs(r["simulated_seconds"] - (b["simulated_seconds"] + step * r["rounds_per_sync"])))
    if not n:
        raise ValueError("no earlier projection run both with and without a round latency to check additivity")
    return ["", f"The column with L is the zero-latency simulation plus L x rounds: `syncbed project --round-latency "
                f"L` charges each round's start-up before its step, and steps run one after another. Checked on the "
                f"{n} runs projected both ways in `docs/results/projection-validation/` (L = 0 and 3.1 ms): largest "
                f"difference {worst * 1e6:.1f} us."]


def _family(r: dict) -> str:
    a = r["algorithm"]
    if a in ("ring", "gloo"):
        return "ring, gloo (2 MiB and more)" if r["gradient_bytes"] >= LATENCY_MIN_BYTES else \
            "ring, gloo (LeNet-5, 0.25 MB)"
    if a in ("gtopk", "topk"):
        return "gTop-k, Top-k (density 0.001)"
    if a in LAYERWISE:
        return "layer-wise (sync after backprop)"
    return {"ps": "PS", "bml": "BML", "forest": "forest"}.get(a, a)


def projection_families(data: dict) -> list[str]:
    """Simulated / measured by family of algorithm: where the flow model holds and where not."""
    rows = _validation(data)
    _, lat, _, _ = _fitted(rows)
    fams: dict = {}
    for r in rows:
        fams.setdefault(_family(r), []).append(r)
    cells = []
    for fam, rs in fams.items():
        faithful = [r for r in rs if r["faithful"] is True]
        r0 = _ratios(rs)
        it = [x for x in (r.get("iteration_sim_over_measured") for r in rs) if x is not None]
        cells.append([fam, str(len(rs)), str(len(faithful)), span(r0), span(_ratios(faithful)),
                      f"{_within(r0)} of {len(r0)}", span(_ratios(rs, lat)) if any(r["rounds"] for r in rs) else NA,
                      span([r["measured_over_bound"] for r in rs]), span(it, ".3f") if it else NA])
    dense = fams.get("ring, gloo (2 MiB and more)", [])
    outside = [f"{r['experiment']} {r['topology']} {r['algo_spec']} {r['model']} ({r['sim_over_measured']:.2f}, "
               f"{verdict(r['run']).strip('*').lower()})" for r in dense
               if r["sim_over_measured"] is not None and abs(r["sim_over_measured"] - 1) > TOLERANCE]
    return table(["family", "runs", "faithful", "sim/meas, L = 0", "faithful runs only", f"within {TOLERANCE:.0%}",
                  f"sim/meas, L = {lat * 1e3:.2f} ms", "meas/bound", "iteration sim/meas"], cells) + [
        "", "Ring and gloo with 2 MiB or more outside 10% at L = 0 (sim/meas, faithful): "
            + ("; ".join(outside) or "none") + "."]


SWEEP = ("projection-fattree-sweep/summary.json", "projection-fattree-sweep-30us/summary.json",
         "projection-ps-fattree16-512/summary.json")


def projection_sweep(data: dict) -> list[str]:
    """Ring, gloo and PS on Fat-Trees k = 4..24, bandwidth only and with 30 us per round."""
    zero, lat = (data[SWEEP[0]]["runs"], data[SWEEP[1]]["runs"])
    ps512 = data[SWEEP[2]]["runs"]
    skipped = {(s["topology"].replace("fattree,k=", "fattree(") + ")", s["algo_spec"]): s["why"]
               for s in data[SWEEP[0]].get("skipped", [])}
    keys = sorted({(r["topology"], r["workers"]) for r in zero + ps512}, key=lambda k: (k[1], k[0]))

    def hosts(topo: str) -> int:  # fattree(k): k^3/4 hosts; a skip names the topology, for all its hosts
        return int(topo.split("(")[1].rstrip(")")) ** 3 // 4

    def cell(runs, topo, p, algo):
        r = next((r for r in runs if r["topology"] == topo and r["workers"] == p and r["algo_spec"] == algo), None)
        if r is not None:
            return fmt(r["simulated_seconds"], ".4f")
        why = skipped.get((topo, algo)) if p == hosts(topo) else None
        return ("refused (memory)" if "GiB" in why else "refused (time)") if why else ""

    rows = []
    for topo, p in keys:
        first = next(r for r in zero + ps512 if r["topology"] == topo and r["workers"] == p)
        rows.append([topo, str(p), cell(zero, topo, p, "ring"), cell(zero, topo, p, "gloo"),
                     cell(ps512, topo, p, "ps") or cell(zero, topo, p, "ps"), fmt(first["bound_seconds"], ".4f"),
                     cell(lat, topo, p, "ring"), cell(lat, topo, p, "gloo"), cell(lat, topo, p, "ps")])
    over = [r["sync_over_bound"] for r in zero + ps512]
    return table(["Fat-Tree", "P", "ring L=0", "gloo L=0", "PS L=0", "bound (first run)", "ring L=30 us",
                  "gloo L=30 us", "PS L=30 us"], rows) + [
        "", f"With L = 0 every run is at {span(over, '.4f', 'x')} its busiest-link bound."]


BML_SCALE = ("projection-bml-bcube83/summary.json", "projection-bml-bcube83-30us/summary.json",
             "projection-ps-fattree16-512/summary.json")


def projection_bml_scale(data: dict) -> list[str]:
    """BML on BCube(8,3) against PS on a Fat-Tree with the same 512 servers."""
    zero, lat, ps = (data[s]["runs"] for s in BML_SCALE)
    b0, r0 = find(zero, BML_SCALE[0], algo_spec="bml"), find(zero, BML_SCALE[0], algo_spec="ring")
    b1, r1 = find(lat, BML_SCALE[1], algo_spec="bml"), find(lat, BML_SCALE[1], algo_spec="ring")
    p = find(ps, BML_SCALE[2], algo_spec="ps")
    k = 3
    return table(["", "BML, BCube(8,3)", "ring, BCube(8,3)", "PS, Fat-Tree k=16 (512 of 1024 hosts)", "BML / PS",
                  "claim"], [
        ["sync s, L = 0", fmt(b0["simulated_seconds"], ".4f"), fmt(r0["simulated_seconds"], ".4f"),
         fmt(p["simulated_seconds"], ".4f"),
         f"**{fmt(common.ratio(b0['simulated_seconds'], p['simulated_seconds']), '.3f')}**",
         f"1/k = {1 / k:.3f}"],
        ["sync s, L = 30 us", fmt(b1["simulated_seconds"], ".4f"), fmt(r1["simulated_seconds"], ".4f"), "not rerun", "",
         ""],
        ["bound s", fmt(b0["bound_seconds"], ".4f"), fmt(r0["bound_seconds"], ".4f"), fmt(p["bound_seconds"], ".4f"),
         "", ""],
        ["x bound, L = 0", fmt(b0["sync_over_bound"], ".4f"), fmt(r0["sync_over_bound"], ".4f"),
         fmt(p["sync_over_bound"], ".4f"), "", ""]])


RUNTIMES = ("projection-fattree-sweep/summary.json", "projection-ps-fattree16-512/summary.json",
            "projection-bml-bcube83/summary.json")


def projection_runtimes(data: dict) -> list[str]:
    """What each projection cost on this machine, from its simulator record."""
    rows = []
    for rel in RUNTIMES:
        for r in data[rel]["runs"]:
            s = r.get("simulator") or {}
            rows.append([f"`{rel.split('/')[0]}`", r["topology"], str(r["workers"]), r["algo_spec"],
                         f"{s.get('messages', 0):,}" + (f" ({s['steps']} steps)" if (s.get("steps") or 1) > 2 else ""),
                         fmt(s.get("route_seconds"), ".1f"), fmt(s.get("simgrid_cpu_seconds"), ".2g"),
                         fmt(s.get("wall_seconds"), ".3g"), fmt(r["simulated_seconds"], ".4f"),
                         fmt(r["sync_over_bound"], ".4f"), fmt((s.get("child_maxrss_bytes") or 0) / MB, ".0f"),
                         fmt((s.get("memory_estimate_bytes") or 0) / MB, ".0f")])
    return table(["results folder", "topology", "P", "algo", "messages", "routes s", "SimGrid CPU s",
                  "projection wall s", "simulated s", "x bound", "child peak MB", "estimated MB"], rows)


# ---- the registry ------------------------------------------------------------------------
TABLES = {t.id: t for t in [
    Table("gtopk-compression", GTOPK_FATTREE, gtopk_compression),
    Table("gtopk-convergence", ("convergence-gtopk/summary.json", "convergence-gtopk/seeds-p16/seed1/summary.json",
                                "convergence-gtopk/seeds-p16/seed2/summary.json"), gtopk_convergence),
    Table("gtopk-beside-paper", GTOPK_SCALING, gtopk_beside_paper),
    Table("gtopk-scaling", GTOPK_SCALING, gtopk_scaling_all),
    Table("mgwfbp-settings", _sources(MGWFBP_SETTINGS), mgwfbp_settings),
    Table("mgwfbp-matrix", _sources(MGWFBP_MATRIX), mgwfbp_matrix),
    Table("mgwfbp-slower", _sources(MGWFBP_ALL), mgwfbp_slower),
    Table("forest-scenarios", tuple(_forest_rel(f) for f in FOREST), forest_scenarios),
    Table("forest-variants", tuple(_forest_rel(f) for f in FOREST_VARIANTS), forest_variants),
    Table("dfs-runs", (DFS,), dfs_runs),
    Table("dfs-headline", (DFS,), dfs_headline),
    Table("fidelity-bounds", tuple(f"{f}/summary.json" for f in FIDELITY_FOLDERS), fidelity_bounds),
    Table("bml-summary", tuple(f"{f}/summary.json" for f in BML_FOLDERS + BML_REPEATS), bml_summary),
    Table("hd-default", tuple(f"{f}/{name}" for f in HD_FOLDERS for name in ("summary.json", "config.yaml")),
          hd_default),
    Table("bml-training", tuple(f"{f}/summary.json" for f in BML_TRAINING), bml_training),
    Table("bml-jct-spread", tuple(f"{f}/summary.json" for f in BML_FOLDERS + BML_REPEATS), bml_jct_spread),
    Table("bml-jct-sensitivity", tuple(f"{f}/summary.json" for f in BML_FOLDERS + BML_REPEATS), bml_jct_sensitivity),
    Table("results-index", tuple(f"{f}/summary.json" for fs in RESULTS_INDEX.values() for f in fs), results_index),
    Table("projection-validation", PROJECTION_SOURCES, projection_validation),
    Table("projection-latency-fit", PROJECTION_SOURCES + ADDITIVITY, projection_latency_fit),
    Table("projection-families", PROJECTION_SOURCES, projection_families),
    Table("projection-sweep", SWEEP, projection_sweep),
    Table("projection-bml-scale", BML_SCALE, projection_bml_scale),
    Table("projection-runtimes", RUNTIMES, projection_runtimes),
]}
