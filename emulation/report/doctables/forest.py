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
