"""docs/forest.md: the scenarios and the variants."""
from __future__ import annotations

from emulation.papers import common
from emulation.report.doctables.cells import (
    cores, find, find_opt, runs_of, span, starred, unfaithful_notes, verdict, xf)
from emulation.results.columns import NA, fmt, table
from emulation.results.load import num


FOREST = {  # folder under forest-scenarios -> how the scenario table names it
    "forest-s1-homogeneous": "1 homogeneous Fat-Tree k=4, 16 workers",
    "forest-s2-slow-hosts": "2 four hosts (one per pod) at 5 Mbit/s",
    "forest-s3-oversubscribed": "3 agg-core at 5 Mbit/s (4:1)",
    "forest-s4-background": "4 8 workers, 4 background flows of 8 Mbit/s across pods",
    "forest-s5-bcube-slow-level": "5 BCube(4,2), level 1 at 5 Mbit/s",
}


FOREST_VARIANTS = ("forest-s5-variants", "forest-s5-half-speed", "forest-s3-half-speed", "forest-s5-chunks",
                   "forest-s5-half-speed-chunks", "forest-s5-dilated", "forest-s5-mtu32000", "forest-s5-window",
                   "forest-s5-window-r2")


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
                         fmt(r.get("trees"), "g"), cores(r), cores(r, "workers_cpu_percent"),
                         verdict(r)])
            notes.append((f"`{folder}` {common.label(r)}", r))
    return table(["results folder", "algorithm", "link Mbit/s", "median sync s", "planned s", "cut bound s",
                  "measured / cut", "trees", "ovs-vswitchd cores", "workers' cores", "faithful"],
                 rows) + unfaithful_notes(notes)


S5_PLANS = (("forest-s5-bcube-slow-level", "01-bcube-4-2-forest-synthetic"),
            ("forest-s5-chunks", "01-bcube-4-2-forest-synthetic"),
            ("forest-s5-chunks", "02-bcube-4-2-forest-chunk-elements-1024-synthetic"),
            ("forest-s5-chunks", "03-bcube-4-2-forest-chunk-elements-2048-synthetic"),
            ("forest-s5-dilated", "01-bcube-4-2-forest-chunk-elements-512-synthetic"),
            ("forest-s5-dilated", "02-bcube-4-2-forest-synthetic"))
S5_COALESCE_SOURCES = tuple({_forest_rel(f): None for f, _ in S5_PLANS}) + tuple(
    f"forest-scenarios/{f}/{d}/job.json" for f, d in S5_PLANS)


def forest_s5_coalescing(data: dict) -> list[str]:
    """Scenario 5's executed plans: messages a sync, and the fewest if the trees' chunks sharing
    a (sender, receiver, NIC) went as one message (`forest.messages(plan, coalesce=True)`)."""
    from workloads.algorithms import forest as forest_algo

    cells = []
    for folder, rundir in S5_PLANS:
        plan = data[f"forest-scenarios/{folder}/{rundir}/job.json"]["plan"]
        run = next(r for r in runs_of(data, _forest_rel(folder)) if r.get("dir") == rundir)
        now, merged = forest_algo.messages(plan), forest_algo.messages(plan, coalesce=True)
        chunk = [t["chunk"] for t in plan["trees"]]
        cells.append([f"`{folder}`", f"`{common.label(run)}`", str(len(plan["trees"])), span(chunk, ".0f"), str(now),
                      str(merged), fmt(merged / now, ".2f"),
                      xf(common.ratio(num(run.get("median_sync_seconds")), num(run.get("bound_cut_seconds")))),
                      verdict(run)])
    return table(["results folder", "algorithm", "trees", "chunk elements", "messages a sync",
                  "coalesced (fewest)", "coalesced / messages", "measured / cut", "faithful"], cells)


FOREST_PLANNER = "forest-planner/result.json"  # scripts/forest_planner_tables.py
FOREST_TIMES = "forest-planner-times/result.json"  # scripts/forest_planner_times.py
NEAR = 0.99  # "near the optimum" in the sentences under the planner tables


def _trees(n: int) -> str:
    return f"{n} tree" + ("" if n == 1 else "s")


def forest_planner_optimum(data: dict) -> list[str]:
    """The packing against the LP over ALL spanning trees on tiny networks, and with at most
    k trees against the best set of k (scripts/forest_planner_tables.py: the unit test's
    networks and enumeration)."""
    d = data[FOREST_PLANNER]
    tiny, capped = d["tiny"], d["capped"]
    if not tiny or not capped:
        raise ValueError(f"{FOREST_PLANNER}: no tiny networks or no capped packings")
    lines = table(["network", "spanning trees enumerated (every NIC choice)", "forest / optimum", "trees",
                   "column generation's optimum / LP over all trees", "converged"],
                  [[r["network"], str(r["trees_enumerated"]), fmt(r["rate_over_optimum"], ".3f"), str(r["trees"]),
                    fmt(r["column_generation_optimum_over_lp"], ".3f"), "yes" if r["converged"] else "**NO**"]
                   for r in tiny])
    caps = sorted({r["max_trees"] for r in capped})
    heights = sorted({r["max_height"] for r in capped})
    cell = {(r["network"], r["max_trees"]): f"{fmt(r['rate_over_best'], '.3f')} ({_trees(r['trees'])})" for r in capped}
    nets = list(dict.fromkeys(r["network"] for r in capped))
    lines += ["", f"With at most k trees (max_height {', '.join(map(str, heights))}), 4 workers: the packing "
                  "against the best set of k trees (the LP over every such set):", ""]
    lines += table(["network, 4 workers"] + [f"k = {k}" for k in caps],
                   [[n] + [cell.get((n, k), NA) for k in caps] for n in nets])
    worst = min([r["rate_over_optimum"] for r in tiny] + [r["rate_over_best"] for r in capped])
    lines += ["", f"Least ratio over all {len(tiny) + len(capped)} cases: {worst:.3f}; column generation "
                  f"converged on {sum(bool(r['converged']) for r in tiny)} of {len(tiny)} networks "
                  f"(computed {d['date'][:10]})."]
    return lines


def forest_planner_scenarios(data: dict) -> list[str]:
    """The forest's plan on the scenario topologies against ring, PS and the bounds, and the
    rate against the optimum with taller trees and more trees (scripts/forest_planner_tables.py)."""
    d = data[FOREST_PLANNER]
    rows = d["scenarios"]
    if not rows:
        raise ValueError(f"{FOREST_PLANNER}: no scenario rows")
    tall, more = rows[0]["tall"], rows[0]["tall_more_trees"]
    s = lambda x: fmt(x, ".2f")  # noqa: E731
    lines = table(["network", "forest bandwidth term", "forest with pipeline fill", "ring", "PS", "cut bound",
                   "RS+AG bound", "forest rate / optimum", "trees x height", "planner s",
                   f"rate / optimum, max_height {tall['max_height']}",
                   f"rate / optimum, max_height {more['max_height']}, max_trees {more['max_trees']}"],
                  [[r["network"], s(r["forest_bandwidth_seconds"]), s(r["forest_pipeline_seconds"]),
                    s(r["ring_seconds"]), s(r["ps_seconds"]), s(r["cut_bound_seconds"]), s(r["rsag_bound_seconds"]),
                    fmt(r["rate_over_optimum"], ".3f"), f"{r['trees']} x {r['max_height']}",
                    fmt(r["planner_seconds"], ".1f"), fmt(r["tall"]["rate_over_optimum"], ".3f"),
                    fmt(r["tall_more_trees"]["rate_over_optimum"], ".3f")] for r in rows])
    off = max(abs(r["forest_busiest_link_seconds"] / r["forest_bandwidth_seconds"] - 1) for r in rows)
    near = lambda x: round(x, 3) >= NEAR  # as the table shows it  # noqa: E731
    below = [r for r in rows if not near(r["rate_over_optimum"])]
    lifted = [r["network"] for r in below if near(r["tall"]["rate_over_optimum"])]
    needs = [r["network"] for r in below if not near(r["tall"]["rate_over_optimum"])
             and near(r["tall_more_trees"]["rate_over_optimum"])]
    never = [r["network"] for r in below if not near(r["tall_more_trees"]["rate_over_optimum"])]
    sentence = (f"Below {NEAR} of the optimum with the defaults: {len(below)} of {len(rows)} rows. Of these, "
                f"max_height {tall['max_height']} alone lifts {len(lifted)} to {NEAR} or more"
                + (f" ({'; '.join(lifted)})" if lifted else "")
                + f", {len(needs)} reach it only with {more['max_trees']} trees too"
                + (f" ({'; '.join(needs)})" if needs else "")
                + (f", {len(never)} not even then ({'; '.join(never)})" if never else "") + ".")
    lines += ["", f"Column generation converged on {sum(bool(r['converged']) for r in rows)} of {len(rows)} rows, "
                  f"so `optimum` there is the LP over all trees. The forest's bandwidth term is the busiest link "
                  f"of its own traffic on the routes (relative difference at most {off:.1e}). {sentence} "
                  f"Planner s: the planner's own timer (`planner_seconds`) in the run of {d['date'][:10]}, "
                  f"one row after the other on this machine: a timing, it varies with the CPU and its load."]
    return lines


def forest_planner_times(data: dict) -> list[str]:
    """The planner's run time on Fat-Trees, as timed by scripts/forest_planner_times.py: the
    routes alone and the whole plan (median and range of its repeats), with the plan's rounds,
    trees, height and rate against the optimum, and the machine and date of the timing."""
    d = data[FOREST_TIMES]
    if not d.get("cases"):
        raise ValueError(f"{FOREST_TIMES}: no case timed")
    cells = [[f"k={c['k']} ({c['hosts']} hosts)", str(c["workers"]),
              f"{c['plan_median_seconds']:.2f} ({min(c['plan_seconds']):.2f}-{max(c['plan_seconds']):.2f})",
              f"{c['routes_median_seconds']:.2f}", str(c["rounds"]), f"{c['trees']} x {c['max_height']}",
              fmt(c["rate_over_optimum"], ".3f") + ("" if c["converged"] else " (**not converged**)")]
             for c in d["cases"]]
    m = d["machine"]
    return table(["Fat-Tree", "workers", "plan s, median (range)", "routes alone s", "column-generation rounds",
                  "trees x height", "rate / optimum"], cells) + [
        "", f"Timed {d['date'][:16].replace('T', ' ')} UTC, {d['repeats']} times each, on {m['cpu']} "
            f"({m['cores']} cores, load {m['load_1min_before']:.2f} before) by `python scripts/forest_planner_times.py`: "
            "a timing, which varies with the CPU and its load."]
