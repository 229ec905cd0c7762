"""An exact reduction of a step's flows for the flow model: one SimGrid communication per class
of interchangeable flows instead of one per flow (issue #23, PS beyond 512 ranks).

Why. SimGrid's CM02 solves max-min fair sharing among every flow of a step at each flow's end.
A sharded PS step on P ranks is P(P-1) flows on links they all share; SimGrid's cost grows
faster than F (measured on this machine, Fat-Tree with two-level routing, one step:
16,256 flows 0.8 s, 62,250 flows 6.9 s of engine time), so PS at 1024 ranks (1M flows a step)
would take hours. But such a step is symmetric: most flows are interchangeable.

What (pure, numpy; `reduce_step`). The flows of a step and the directed links they cross form
a bipartite graph (a flow crosses the links of its route). Colour refinement (1-dimensional
Weisfeiler-Leman) starts from flows coloured by their size and links by their capacity and
splits a flow class by the multiset of link classes its route crosses, a link class by the
multiset of flow classes crossing it, until nothing splits. The result is the coarsest
*equitable* partition: every link of a link class L is crossed by the same number n(L, F) of
flows of a flow class F, and all flows of F have the same size.

Why it is exact. Max-min fair sharing is progressive filling: every unfrozen flow's rate grows
at the same pace until a link saturates, which freezes the flows on it. By induction, flows of
one class always have the same rate and links of one class the same load (sum over F of
n(L, F) x_F), so a link class saturates all at once; flows of one class, of equal size and
rate, end at the same moment, and what is left is again equitable. So the step is the same as
the reduced system: one variable x_F per flow class, one constraint per link class,
sum_F n(L, F) x_F <= C_L. That system runs in SimGrid itself: one communication per class,
from an endpoint of its own to another, on a route holding the link class's representative
link n(L, F) times (SimGrid's solver adds a repeated link of a route into the flow's
consumption weight on that link's constraint: a communication over [L, L, L] beside one over
[L, M] on L of 100 B/s gets 25 B/s each, measured). Same model, same solver, same options;
what changes is the number of variables, not the system's solution. Exact in exact arithmetic;
in floating point the reduced and the unreduced runs agree to SimGrid's precision (the unit
tests hold them to 1e-9 relative).

What it does not do. It needs every flow's route (the partition is computed on them), so the
route walk stays O(F); and where routes break symmetry (hash ECMP: collisions give flows
bottlenecks of their own) the partition is close to one class per flow and nothing is
gained. Bytes per directed link are laid by this module along every member flow's route
(`Reduced.link_bytes`) once SimGrid says its class completed, not read back from SimGrid's
routes as the unreduced run does.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class StepClasses:
    """The coarsest equitable partition of one step (`equitable_partition`)."""

    flow_class: np.ndarray  # class id per flow, 0..classes-1
    link_class: np.ndarray  # class id per link index
    rep_flow: np.ndarray  # per flow class: its first flow
    rep_link: np.ndarray  # per link class: its first link
    weights: list  # per flow class: [(representative link index, n(L, F))], n > 0
    rounds: int  # refinement rounds until nothing split

    @property
    def classes(self) -> int:
        return len(self.rep_flow)


def _canonical(rows: np.ndarray) -> np.ndarray:
    """Class id per row of a 2-D int array: equal rows, equal ids."""
    if rows.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(rows, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _signature(owner: np.ndarray, colour: np.ndarray, count: int, own: np.ndarray) -> np.ndarray:
    """New class per item: (its class, the multiset of colours of its incidences).
    owner[i], colour[i]: the item and the neighbour's colour of incidence i; own: items' classes."""
    ncol = int(colour.max()) + 1 if colour.size else 1
    key, mult = np.unique(owner.astype(np.int64) * ncol + colour, return_counts=True)
    item, col = key // ncol, key % ncol
    pair = _canonical(np.stack([col, mult], axis=1))  # (colour, how many) -> one id
    first = np.searchsorted(item, item, side="left")
    pos = np.arange(len(item)) - first
    width = int(pos.max()) + 1 if pos.size else 0
    rows = np.full((count, width + 1), -1, dtype=np.int64)
    rows[:, 0] = own
    rows[item, pos + 1] = pair  # keys sorted by (item, colour): one canonical order per item
    return _canonical(rows)


def equitable_partition(indptr, links, sizes, caps) -> StepClasses:
    """Coarsest equitable partition of flows (route of flow f: links[indptr[f]:indptr[f+1]],
    link indices; `sizes` per flow) and links (`caps` per link index), from sizes and
    capacities by colour refinement. Pure; raises ValueError on inconsistent input."""
    indptr, links = np.asarray(indptr, dtype=np.int64), np.asarray(links, dtype=np.int64)
    sizes, caps = np.asarray(sizes), np.asarray(caps)
    nf, nl = len(sizes), len(caps)
    if len(indptr) != nf + 1 or indptr[0] != 0 or indptr[-1] != len(links) or np.any(np.diff(indptr) < 0):
        raise ValueError(f"routes of {nf} flows: indptr must rise from 0 to {len(links)} in {nf + 1} entries")
    if links.size and (links.min() < 0 or links.max() >= nl):
        raise ValueError(f"a route names a link index outside 0..{nl - 1}")
    fi = np.repeat(np.arange(nf, dtype=np.int64), np.diff(indptr))
    fc = np.unique(sizes, return_inverse=True)[1].reshape(-1).astype(np.int64)
    lc = np.unique(caps, return_inverse=True)[1].reshape(-1).astype(np.int64)
    rounds = 0
    while True:
        rounds += 1
        new_fc = _signature(fi, lc[links], nf, fc)
        new_lc = _signature(links, new_fc[fi], nl, lc)
        done = new_fc.max(initial=-1) == fc.max(initial=-1) and new_lc.max(initial=-1) == lc.max(initial=-1)
        fc, lc = new_fc, new_lc
        if done:
            break
    rep_flow = np.unique(fc, return_index=True)[1]
    rep_link = np.unique(lc, return_index=True)[1]
    # n(L, F): flows of class F on the representative link of class L (the same on every link of L)
    on_rep = rep_link[lc[links]] == links
    key, n = np.unique(fc[fi[on_rep]] * max(nl, 1) + links[on_rep], return_counts=True)
    weights: list = [[] for _ in rep_flow]
    for k, c in zip(key.tolist(), n.tolist()):
        weights[k // max(nl, 1)].append((k % max(nl, 1), c))
    return StepClasses(fc, lc, rep_flow, rep_link, weights, rounds)


@dataclass
class Reduced:
    """A schedule's reduced form: the platform and schedule SimGrid runs (one communication per
    class), and what is needed to lay the bytes of every member flow on its route."""

    platform: object  # platform.Platform: class endpoints, the representative links, class routes
    sched: list  # steps of (src endpoint, dst endpoint, bytes), one per class
    link_names: list  # link index -> directed link name
    steps: list = field(default_factory=list)  # per step: (indptr, links, sizes, StepClasses)

    def describe(self) -> dict:
        return {"method": "coarsest equitable partition (colour refinement), one communication per class",
                "flows_per_step": [int(len(s[2])) for s in self.steps],
                "classes_per_step": [int(s[3].classes) for s in self.steps],
                "link_classes_per_step": [int(len(s[3].rep_link)) for s in self.steps],
                "refinement_rounds": [int(s[3].rounds) for s in self.steps]}

    def link_bytes(self, sent: dict) -> dict:
        """Bytes per directed link: every flow of a class SimGrid completed, along its own route."""
        total = np.zeros(len(self.link_names), dtype=np.int64)
        for (indptr, links, sizes, cls), msgs in zip(self.steps, self.sched):
            done = np.array([sent.get((s, d), 0) == b for s, d, b in msgs], dtype=bool)
            keep = done[cls.flow_class]
            per = np.repeat(np.where(keep, sizes, 0).astype(np.int64), np.diff(indptr))
            np.add.at(total, links, per)
        return {self.link_names[i]: int(total[i]) for i in np.nonzero(total)[0]}


def reduce_schedule(platform, sched: list) -> Reduced:
    """`sched` (steps of (src endpoint, dst endpoint, bytes) on `platform`'s routes) -> its
    reduced form, step by step (steps are separated by a barrier: each is its own max-min
    problem). Pure: reads `platform.routes` and `platform.links` (after any background load
    was taken off them)."""
    from emulation.simulator.platform import Platform

    names = list(platform.links)
    index = {n: i for i, n in enumerate(names)}
    caps = np.array([float(platform.links[n]) for n in names])
    hosts, routes, out_sched, steps = [], {}, [], []
    used_links: set = set()
    for i, step in enumerate(sched):
        lens, flat, sizes = [], [], []
        for s, d, b in step:
            r = platform.routes.get((s, d))
            if r is None:
                raise ValueError(f"no route from {s} to {d} on the platform")
            lens.append(len(r))
            flat.extend(index[x] for x in r)
            sizes.append(int(b))
        indptr = np.concatenate([[0], np.cumsum(lens, dtype=np.int64)]) if lens else np.zeros(1, dtype=np.int64)
        links = np.array(flat, dtype=np.int64)
        sizes = np.array(sizes, dtype=np.int64)
        cls = equitable_partition(indptr, links, sizes, caps)
        msgs = []
        for c, f in enumerate(cls.rep_flow.tolist()):
            a, b = f"s{i}c{c}>", f"s{i}c{c}<"
            hosts += [a, b]
            route = tuple(names[l] for l, n in cls.weights[c] for _ in range(n))
            used_links.update(route)
            routes[(a, b)] = route
            msgs.append((a, b, int(sizes[f])))
        out_sched.append(msgs)
        steps.append((indptr, links, sizes, cls))
    reduced = Platform(f"{platform.name} (reduced)", hosts or ["idle"], [],
                       {n: platform.links[n] for n in names if n in used_links}, routes,
                       {(a, b): (a, b) for a, b in routes})
    return Reduced(reduced, out_sched, names, steps)
