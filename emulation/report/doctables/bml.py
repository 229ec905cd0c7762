"""docs/papers/bml.md: the BML experiments beside the paper, JCT spread and sensitivity, training."""
from __future__ import annotations

import statistics
from emulation.papers import bml as bml_paper
from emulation.papers import common
from emulation.report.doctables.cells import find, pct, reasons, runs_of, verdict
from emulation.results.columns import fmt, table


BML_FOLDERS = ("bml-bcube32-vs-ps-fattree", "bml-bcube42-vs-ps-fattree")


BML_REPEATS = tuple(f"bml-repeats/{f}-vgg19-r{i}" for f in BML_FOLDERS for i in (2, 3))
# the two files run again on 2026-11-29 after PS's executor posted its receives first
# (workloads/algorithms/ps.py `_post`; docs/PROJECTION.md "Fan-in"): the PS they compare against;
# twice each (the second, -r2, later that day), then a third time that afternoon (BCube(3,2)'s
# -r4, BCube(4,2)'s -r3: the names put them in the projection's fit half)
BML_RECV_FIRST = tuple(sorted((*(f"ps-recv-first/{f}{r}" for f in BML_FOLDERS for r in ("", "-r2")),
                               "ps-recv-first/bml-bcube32-vs-ps-fattree-r4",
                               "ps-recv-first/bml-bcube42-vs-ps-fattree-r3")))
# the two files twice more that evening with every emulated host on CUBIC (docs/FIDELITY.md #22);
# every folder above ran BBR, this machine's kernel default then; the BCube(4,2) file a third
# time on 2026-12-01, in a quiet hour (neither of its first two BML runs was faithful)
BML_CUBIC = tuple(f"tcp-cc/{f}-cubic{r}" for f in BML_FOLDERS for r in ("", "-r2")) + (
    "tcp-cc/bml-bcube42-vs-ps-fattree-cubic-r3",)


def bml_summary(data: dict) -> list[str]:
    """The BML experiments beside the paper: emulation/papers/bml.py's pairing, per model."""
    rows = []
    for folder in (sorted(BML_FOLDERS + BML_REPEATS, key=lambda f: (f.split("/")[-1][:25], f)) + list(BML_RECV_FIRST)
                   + list(BML_CUBIC)):
        runs = runs_of(data, f"{folder}/summary.json")
        for r in bml_paper.pair(runs):
            b = find(runs, folder, algorithm="bml", model=r["model"])
            p = find(runs, folder, algorithm="ps", model=r["model"], topology=r["fattree"])
            rows.append([f"`{folder}`", str(r["model"]), f"{r['bcube']} / {r['fattree']}", str(r["servers"]),
                         fmt(r["sync_ratio"], ".3f"), fmt(r["sync_ratio_claim"], ".3f"),
                         f"{fmt(r['jct_bml_s'], '.2f')} / {fmt(r['jct_ps_s'], '.2f')}",
                         pct(r["jct_reduction"]), "56.4% (up to)", f"BML {verdict(b)}, PS {verdict(p)}",
                         ("**sends first**" if folder not in BML_RECV_FIRST + BML_CUBIC else "receives first")
                         + (", CUBIC" if folder in BML_CUBIC else ", BBR")])
    return table(["results folder", "model", "BCube / Fat-Tree", "servers", "sync BML / PS", "1/k", "JCT BML / PS s",
                  "JCT reduction", "paper", "faithful", "PS executor, hosts' TCP"], rows) + [
        "", "PS executor: until 2026-11-29 PS posted each step's sends before its receives, which held "
            "pushes back (docs/PROJECTION.md, \"Fan-in\"): the rows marked **sends first** compare BML with that "
            "slower PS; the `ps-recv-first/` rows are the same files run again with every receive posted first. "
            "Hosts' TCP: every folder but `tcp-cc/` ran BBR, this machine's kernel default, which the emulation "
            "pins to CUBIC since (docs/FIDELITY.md #22); the `tcp-cc/` rows are the ones to quote."]


def _bml_vgg19_rows(data: dict) -> list[dict]:
    """Per BML experiment, its VGG-19 pair (BML on BCube, PS on Fat-Tree) in every run of it:
    the main folder and its repeats, then its runs with PS's receives first (BML_RECV_FIRST) as
    the experiment `ps-recv-first/<main>`."""
    out = []
    groups = [(main, (main, *(f for f in BML_REPEATS if f.split("/")[-1].startswith(main)))) for main in BML_FOLDERS]
    groups += [(f"ps-recv-first/{main}", tuple(f for f in BML_RECV_FIRST if f.startswith(f"ps-recv-first/{main}")))
               for main in BML_FOLDERS]
    groups += [(f"tcp-cc/{main}-cubic", tuple(f for f in BML_CUBIC if f.startswith(f"tcp-cc/{main}-cubic")))
               for main in BML_FOLDERS]
    for main, folders in groups:
        for folder in folders:
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
                     ", ".join(f"BML {verdict(x['bml'])} / PS {verdict(x['ps'])}" for x in xs),
                     ("**sends first**" if exp in BML_FOLDERS else "receives first")
                     + (", CUBIC" if exp.startswith("tcp-cc/") else ", BBR")])
        notes += [f"- `{x['folder']}`: PS run not faithful: {reasons(x['ps'])}" for x in xs if x["ps"].get("faithful") is False]
        notes += [f"- `{x['folder']}`: BML run not faithful: {reasons(x['bml'])}" for x in xs if x["bml"].get("faithful") is False]
    return table(["experiment", "BCube / Fat-Tree", "runs", "JCT reduction per run", "median", "range",
                  "sync BML / PS median (range)", "1/k", "faithful per run", "PS executor, hosts' TCP"], rows) + (
        [""] + notes if notes else [])


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
