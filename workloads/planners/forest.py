"""Forest packing for topology-adaptive all-reduce, and the cut bound it is measured against.

Pure functions: a network description in, a packing or a number of seconds out; no process,
no socket. `workloads/algorithms/forest.py` turns a packing into a plan and executes it.

Model (Zhang, Wu, Li, INFOCOM 2021, as far as its abstract says; the packing method follows
Blink, MLSys 2020; docs/forest.md says which part is whose):
- The workers are nodes of a physical network of directed links with capacities (bytes/s;
  a full-duplex link is two directed links). A *tree* is a spanning tree over the workers;
  its edge {u, v} is carried on the installed route from u to v (broadcast, parent to child)
  and on the route from v to u (aggregation, child to parent), each on a NIC of its own.
  One tree edge therefore loads every directed link of both routes once.
- A *packing* is trees T_k with rates x_k (bytes/s) such that no directed link carries more
  than its capacity: sum_k x_k * load_k(e) <= cap(e). Tree k aggregates and broadcasts the
  share x_k / X of the gradient, X = sum_k x_k, both at once, so an all-reduce of M bytes
  takes about M / X (the bandwidth term; pipelining adds a fill time, see the executor).

The planner (`pack`), steps numbered as in docs/forest.md:
1. Routes and capacities of every ordered worker pair and NIC (`Overlay`).
2. Column generation on the LP  max sum_k x_k  s.t.  A x <= cap,  x >= 0  (scipy linprog,
   HiGHS). The pricing problem is exact: the reduced cost of a tree is 1 - sum over its
   edges of the link duals on both routes, and because each edge loads both directions its
   weight w(u, v) = d(u->v) + d(v->u) is symmetric, so the cheapest tree is a minimum
   spanning tree of the worker overlay (networkx; the root does not change the load).
   Degree-capped Kruskal trees join the pool too, and pricing runs at smoothed duals.
3. The LP value divided by the cheapest tree's dual cost bounds the best packing over all
   trees from above (LP duality); at convergence both agree: the yardstick.
4. The optimum may need one star per worker (a sharded PS) and tall trees pipeline badly,
   so at most `max_trees` trees of height <= H are grown (Prim-like, against exponential
   congestion weights as in Blink's multiplicative weights), improved by rip-up and
   re-grow, and given rates by the LP over them.
5. H is `max_height`, or whichever of 2, log2 N, 2 log2 N gives the least
   `pipeline_seconds` (the bandwidth term plus the fill of a chunk pipeline).
6. Each tree is rooted at its center, preferring workers that root no other tree.

The cut bound (`cut_bound`, derivation in docs/forest.md): a lower bound on the time of
*any* all-reduce in which only workers add and everything else forwards, over the physical
graph (any routing), and ForestColl's bound for reduce-scatter + all-gather with equal
shards (`rsag_bound_seconds`), which holds for ring-like schedules but not for forests.
"""
from __future__ import annotations

import functools
import itertools
import math
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

import networkx as nx
import numpy as np
from networkx.algorithms.flow import boykov_kolmogorov, build_residual_network
from scipy import sparse
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.optimize import linprog

from common.units import DTYPE_BYTES
from workloads.planners.background import left_over

MAX_TREES = 8
ITERATIONS = 200  # column-generation rounds at most (BCube(4,2): 84, Fat-Tree k=8 with 64: 69)
TOLERANCE = 1e-7  # a tree improves the LP when its dual cost is below 1 - TOLERANCE
DEGREES = (2, 3)  # degree caps of the extra Kruskal trees each pricing round adds
SMOOTHING = 0.8  # Wentges dual smoothing of the pricing
ALPHA = 10.0  # congestion cost exp(ALPHA * utilization) when growing bounded trees
# (a, b): a tree node one level deeper costs 1 + a times more to join, one with one more
# edge 1 + b times more. Both are tried: a alone joins shallow nodes first (BCube with a slow
# level: the inter-group edges leave from near the root); with b, ties (a direct link per
# pair) become paths that later trees complement, instead of stars that block each other.
BIASES = ((0.3, 0.0), (0.3, 0.5))
PASSES = 3  # rip-up and re-grow rounds over the bounded trees
CHUNKS_PER_TREE = 32  # pipelined chunks a tree's partition is cut into, unless MIN/MAX_CHUNK say
MIN_CHUNK, MAX_CHUNK = 1024, 16384  # elements: 4 KiB..64 KiB per Gloo message
_SOURCE = ("forest", "source")  # the extra node of the ratio max-flow
FLOW = boykov_kolmogorov  # max-flow for the cuts (about twice preflow-push's speed here)
EXHAUSTIVE_NODES = 8  # cut bound: every partition of the nodes up to this many (Bell(8) = 4140)
# workers from which `pack` grows its bounded forests in forked processes and the cut bound is
# computed in one (`default_processes`). Measured on 2 CPUs, in a process with torch loaded: a
# fork costs about 10 ms; packing Fat-Tree k = 4 with 8 workers took 0.16 s forked against 0.19 s,
# 16 workers 0.29 against 0.40 s (the cut bound at 16: 40 against 17 ms, at 32: 85 against 70 ms).
# Below 64 plans take seconds at most, and the emulation's (16-32 workers on one machine) are made
# in the runner, a process that may hold threads (the CPU monitor's, emulation/monitor.py, and
# torch's): forking a threaded process risks a child that waits on a lock no thread of it holds,
# for tenths of a second saved. So only plans of 64 workers and more (the projections') fork.
PARALLEL_FROM = 64


# --- 1. the network as the planner sees it ---------------------------------------------------
@dataclass(frozen=True)
class Overlay:
    """Workers 0..size-1, directed links with capacities, and the route of every ordered pair
    of workers on every NIC: routes[(src, dst, nic)] = the link ids that route crosses."""

    size: int
    nics: int
    capacity: dict  # link id -> bytes/s
    routes: dict  # (src, dst, nic) -> tuple of link ids
    source: str = "topology"  # where the capacities come from: "topology" | "graph" | "uniform"

    def __post_init__(self):
        for (s, d, l), links in self.routes.items():
            if not links:
                raise ValueError(f"forest: workers {s} and {d} share a node (empty route on NIC {l}); "
                                 "every worker needs a host of its own")
            unknown = [e for e in links if e not in self.capacity]
            if unknown:
                raise ValueError(f"forest: route {s}->{d} crosses link {unknown[0]!r} without a capacity")
        if any(not c > 0 for c in self.capacity.values()):
            raise ValueError("forest: every link capacity must be > 0 bytes/s")


def overlay_from_topology(topo, hosts, nics: int | None = None) -> Overlay:
    """Routes as the controller installs them (`Topology.route`: BCube relays, ECMP choices)
    to the destination's NIC l address; a link is named by its transmitting interface."""
    hosts = list(hosts)
    if len(set(hosts)) != len(hosts):
        raise ValueError(f"forest: workers must run on distinct hosts, got {hosts}")
    nics = nics if nics is not None else len(topo.host_nics(hosts[0]))
    routes, capacity = {}, {}
    for i, a in enumerate(hosts):
        for j, b in enumerate(hosts):
            if i == j:
                continue
            for l in range(nics):
                links = tuple(tx for tx, _ in topo.route(a, topo.host_nics(b)[l].ip))
                routes[(i, j, l)] = links
                for tx in links:
                    capacity[tx] = topo.link_of(tx).bw * 1e6 / 8
    return Overlay(len(hosts), nics, capacity, routes, "topology")


def less_load(ov: Overlay, load: dict) -> Overlay:
    """The overlay with `load` (bytes/s per link) taken off each link's capacity (`left_over`)."""
    capacity = {e: left_over(c, load.get(e, 0.0)) for e, c in ov.capacity.items()}
    return Overlay(ov.size, ov.nics, capacity, ov.routes, ov.source)


def overlay_from_graph(graph: nx.DiGraph, workers, capacity: str = "capacity") -> Overlay:
    """Shortest-hop routes over a directed graph whose edges carry `capacity` (bytes/s);
    for hand-made networks in tests and notes. Links are named (u, v)."""
    workers = list(workers)
    routes = {}
    for i, a in enumerate(workers):
        paths = nx.single_source_shortest_path(graph, a)
        for j, b in enumerate(workers):
            if i != j:
                if b not in paths:
                    raise ValueError(f"forest: no route from {a} to {b}")
                p = paths[b]
                routes[(i, j, 0)] = tuple(zip(p, p[1:]))
    cap = {(u, v): float(d[capacity]) for u, v, d in graph.edges(data=True)}
    return Overlay(len(workers), 1, cap, routes, "graph")


def complete_overlay(size: int, bytes_per_s: float = 1.0) -> Overlay:
    """No topology (localhost): a complete graph of equal links, one per ordered pair."""
    routes = {(i, j, 0): ((i, j),) for i in range(size) for j in range(size) if i != j}
    return Overlay(size, 1, {link[0]: float(bytes_per_s) for link in routes.values()}, routes, "uniform")


# --- 2.-5. the packing ----------------------------------------------------------------------
@dataclass(frozen=True)
class Tree:
    """A spanning tree over the workers, rooted: parent[i] (-1 at the root), and the NIC of
    each edge in each direction: nic_up[i] carries i -> parent[i] (aggregation), nic_down[i]
    parent[i] -> i (broadcast)."""

    root: int
    parent: tuple
    nic_up: tuple
    nic_down: tuple

    @property
    def height(self) -> int:
        return max((self.depth(i) for i in range(len(self.parent))), default=0)

    def depth(self, i: int) -> int:
        d = 0
        while self.parent[i] >= 0:
            i, d = self.parent[i], d + 1
        return d

    def children(self, i: int) -> list[int]:
        return [c for c, p in enumerate(self.parent) if p == i]


@dataclass(frozen=True)
class Packing:
    trees: tuple  # Tree
    rates: tuple  # bytes/s per tree (the overlay's units)
    optimum: float  # best total rate column generation found over ALL trees (no cap, any height)
    upper: float  # upper bound on the total rate of any packing of spanning trees (LP duality)
    iterations: int  # column-generation rounds run
    converged: bool  # no tree with a positive reduced cost was left: optimum == upper
    pool: int  # trees column generation generated
    max_height: int  # the height limit the chosen trees respect (chosen by `pack` unless given)
    method: str  # which step produced the chosen trees
    notes: tuple = ()

    @property
    def rate(self) -> float:
        return float(sum(self.rates))

    @property
    def gap(self) -> float:
        """1 - rate / upper: how far the chosen trees are from any packing's best, at most."""
        return 1.0 - self.rate / self.upper if self.upper > 0 and math.isfinite(self.upper) else 0.0

    def seconds(self, nbytes: float) -> float:
        """Bandwidth term of an all-reduce of `nbytes`: nbytes / total rate."""
        return nbytes / self.rate if self.rate > 0 else 0.0


class _Columns:
    """Route incidence as a sparse matrix, and tree columns as link-load vectors."""

    def __init__(self, ov: Overlay):
        self.ov = ov
        used = sorted({e for links in ov.routes.values() for e in links}, key=repr)
        self.links = used
        self.index = {e: k for k, e in enumerate(used)}
        cap = np.array([ov.capacity[e] for e in used])
        self.scale = float(cap.max())  # LPs see capacities in units of the fastest link
        self.cap = cap / self.scale
        n, m = ov.size, ov.nics
        rows, cols = [], []
        for (s, d, l), links in ov.routes.items():
            r = (l * n + s) * n + d
            for e in links:
                rows.append(r)
                cols.append(self.index[e])
        self.R = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(m * n * n, len(used)))
        self._nic0 = None  # `weights`' NIC choice with one NIC (read-only, made once)
        self._routes = None  # R as `_Routes` (`_Growth`, made once)
        self._loads: dict = {}  # column key -> its load vector (R never changes; read-only arrays)

    def routes(self) -> "_Routes":
        if self._routes is None:
            self._routes = _Routes.of(self.R)
        return self._routes

    def weights(self, y: np.ndarray):
        """Overlay weights under link prices y: (w, nic) with w[u, v] = d(u->v) + d(v->u), d
        the cheapest route over the NICs, nic[u, v] the NIC that gives it (lowest on ties)."""
        n, m = self.ov.size, self.ov.nics
        cost = (self.R @ y).reshape(m, n, n)
        if m == 1:  # one NIC (Fat-Tree): the argmin over one row would be most of the call
            if self._nic0 is None:
                self._nic0 = np.zeros((n, n), dtype=np.intp)
                self._nic0.setflags(write=False)
            nic, d = self._nic0, cost[0]
        else:
            nic = np.argmin(cost, axis=0)
            d = np.min(cost, axis=0)
        w = d + d.T
        np.fill_diagonal(w, np.inf)
        return w, nic

    def column(self, edges, nic) -> tuple[tuple, np.ndarray]:
        """(key, load vector) of an undirected edge list with the NIC choices of `nic`. Each
        key's vector is computed once and kept (read-only): the bounded trees price the same
        few hundred columns thousands of times, and the sparse row sum was most of a plan's time
        (docs/forest.md, "Planner run time")."""
        n = self.ov.size
        key = tuple(sorted((min(u, v), max(u, v), int(nic[min(u, v), max(u, v)]),
                            int(nic[max(u, v), min(u, v)])) for u, v in edges))
        load = self._loads.get(key)
        if load is None:
            rows = [(ln * n + a) * n + b for a, b, ln, _ in key] + [(lb * n + b) * n + a for a, b, _, lb in key]
            load = np.asarray(self.R[rows].sum(axis=0)).ravel()
            load.setflags(write=False)
            self._loads[key] = load
        return key, load


@functools.lru_cache(maxsize=1)  # one plan's n at a time: at thousands of workers they are large
def _upper(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs u < v of n workers in row order (np.triu_indices(n, 1)) and the row pointers of
    a CSR matrix holding exactly them; read-only, made once per plan (every pricing round uses them)."""
    iu, ju = np.triu_indices(n, 1)
    indptr = np.concatenate([[0], np.cumsum(np.arange(n - 1, -1, -1))])
    for a in (iu, ju, indptr):
        a.setflags(write=False)
    return iu, ju, indptr


def _kruskal(w: np.ndarray, degree=None) -> list[tuple[int, int]]:
    """Spanning tree of the complete overlay by Kruskal: the exact minimum with degree None,
    else greedy under a degree cap (on a complete graph it always spans). Edges in order of
    weight, ties in row order (u < v), as networkx's Kruskal takes them from a graph built row
    by row (its stable sort), so the exact tree is the one networkx returned, without building
    a graph of n^2 / 2 edges at every pricing round (most of the plan's time at 128 workers).
    The exact tree is scipy's on the ranks of that order (one tree, no ties left to break); the
    capped trees walk the order with a union-find."""
    n = len(w)
    iu, ju, indptr = _upper(n)
    # the pairs are in row order already, so a stable sort by weight alone is the lexsort by
    # (weight, u, v) this was, the same permutation in a third less time
    order = np.argsort(w[iu, ju], kind="stable")
    if degree is None:  # the order made strict (rank + 1, distinct): its unique minimum tree, in C
        rank = np.empty(len(order))
        rank[order] = np.arange(1, len(order) + 1, dtype=float)
        # the CSR matrix of the dense upper triangle of ranks, made without scanning n^2 zeros
        tree = minimum_spanning_tree(sparse.csr_matrix((rank, ju, indptr), shape=(n, n))).tocoo()
        return sorted(zip(tree.row.tolist(), tree.col.tolist()))
    root, deg, edges = list(range(n)), [0] * n, []  # union-find by path halving

    def find(a: int) -> int:
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a

    for u, v in zip(iu[order].tolist(), ju[order].tolist()):
        if deg[u] >= degree or deg[v] >= degree:
            continue
        ru, rv = find(u), find(v)
        if ru == rv:
            continue
        root[ru] = rv
        deg[u] += 1
        deg[v] += 1
        edges.append((u, v))
        if len(edges) == n - 1:
            break
    return edges


def _cost(w: np.ndarray, edges) -> float:
    return float(sum(w[u, v] for u, v in edges))


def _lp(A: np.ndarray, cap: np.ndarray):
    """max sum x s.t. A x <= cap, x >= 0: (x, value, duals >= 0)."""
    global _HIGHS
    fast = None
    if _HIGHS is not None:
        try:
            fast = _highs_lp(A, cap)
        except TypeError:  # the private wrapper's signature is not 1.17.1's after all: linprog from now on
            _HIGHS = None
    if fast is not None:
        x, fun, marginals = fast
    else:
        res = linprog(-np.ones(A.shape[1]), A_ub=A, b_ub=cap, bounds=(0, None), method="highs")
        if res.status != 0:
            raise RuntimeError(f"forest: the packing LP failed: {res.message}")
        x, fun, marginals = res.x, res.fun, res.ineqlin.marginals
    return x, -fun, np.maximum(-marginals, 0.0)


# linprog(method="highs") of scipy 1.17.1 (requirements.txt) reduced to what `_lp` asks of it: the
# same HiGHS call on the same model and options, so the same solution to the bit, but with the
# matrix handed to HiGHS as lists (pybind copies a numpy array into a C++ vector through one
# Python object per element, about 5 times slower than from a list) and without linprog's input
# checks and dense-to-sparse conversions. At 432 workers (Fat-Tree k = 12: 200 LPs of 2592 rows)
# the time around HiGHS's own 21 s went from 6.3 to 4.1 s (profiled). With another scipy:
# linprog itself, as these private functions may differ there.
try:
    import scipy
    from scipy.optimize._highspy import _core as _highs_core
    from scipy.optimize._highspy._highs_wrapper import _highs_wrapper
    from scipy.optimize._linprog_util import _check_result

    _HIGHS = None if scipy.__version__ != "1.17.1" else {  # _linprog_highs's options at linprog's defaults
        "presolve": True, "highs_debug_level": _highs_core.HighsDebugLevel.kHighsDebugLevelNone,
        "log_to_console": False, "output_flag": False,
        "simplex_strategy": _highs_core.simplex_constants.SimplexStrategy.kSimplexStrategyDual}
except (ImportError, AttributeError):
    _HIGHS = None


def _highs_lp(A: np.ndarray, cap: np.ndarray):
    """(x, objective, row duals) of linprog(-1, A_ub=A, b_ub=cap, bounds=(0, None), method="highs")
    as scipy 1.17.1's `_linprog_highs` computes them (see above)."""
    m, n = A.shape
    col, row = np.nonzero(A.T)  # csc_array(A)'s order: column by column, rows ascending
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(col, minlength=n), out=indptr[1:])
    inf = _highs_core.kHighsInf  # for infinite bounds, as `_replace_inf`
    res = _highs_wrapper(-np.ones(n), indptr.tolist(), row.tolist(), A.T[col, row].tolist(), np.full(m, -inf),
                         np.array(cap, dtype=float), np.zeros(n), np.full(n, inf), np.empty(0, dtype=np.uint8),
                         dict(_HIGHS))
    ok = res["status"] == _highs_core.HighsModelStatus.kOptimal
    if ok:  # and linprog's check of the solution against the constraints
        bounds = np.column_stack([np.zeros(n), np.full(n, np.inf)])
        ok = _check_result(res["x"], res["fun"], 0, res["slack"], np.empty(0), bounds, 1e-9, "", None)[0] == 0
    if not ok:
        raise RuntimeError(f"forest: the packing LP failed: {res.get('message')}")
    return res["x"], res["fun"], res["lambda"]


def _column_generation(cols: _Columns, iterations: int):
    """Steps 2-3: the LP over all spanning trees by column generation. Pricing is exact
    (minimum spanning tree of the overlay under the duals); it runs at duals smoothed
    towards those of the best bound so far (Wentges), which cuts the rounds on BCube about
    twofold, and falls back to the plain duals when the smoothed tree does not improve.
    Returns (pool keys, pool loads, LP value, upper bound, rounds, converged)."""
    keys, loads = [], []

    def add(edges, nic, y=None) -> bool:
        key, load = cols.column(edges, nic)
        if key in keys or (y is not None and load @ y >= 1 - TOLERANCE):
            return False
        keys.append(key)
        loads.append(load)
        return True

    w, nic = cols.weights(1.0 / cols.cap)  # start: the cheapest trees under 1/capacity
    for edges in [_kruskal(w)] + [_kruskal(w, d) for d in DEGREES]:
        add(edges, nic)
    upper, center, value, rounds, converged = math.inf, None, 0.0, 0, False
    for rounds in range(1, iterations + 1):
        _, value, y = _lp(np.column_stack(loads), cols.cap)
        w, nic = cols.weights(y)
        exact = _kruskal(w)
        least = _cost(w, exact)
        bound = value / least if least > 0 else math.inf  # y / least is dual feasible
        if center is None or bound < upper:
            upper, center = min(upper, bound), y
        if least >= 1 - TOLERANCE or upper <= value * (1 + TOLERANCE):
            converged = True
            break
        ys = SMOOTHING * center + (1 - SMOOTHING) * y
        ws, nics = cols.weights(ys)
        smoothed = _kruskal(ws)
        least_s = _cost(ws, smoothed)
        if least_s > 0 and cols.cap @ ys / least_s < upper:
            upper, center = cols.cap @ ys / least_s, ys
        if not add(smoothed, nics, y):
            for edges in [exact] + [_kruskal(w, d) for d in DEGREES]:
                add(edges, nic, y)
    return keys, loads, value, max(upper, value), rounds, converged


# exp from IEEE-754 adds, multiplies, rint and ldexp alone (Cody-Waite reduction by ln 2, then a
# degree-13 Taylor polynomial on |r| <= ln2 / 2, relative error below 1e-15): the same bits on
# every CPU. numpy's np.exp is Intel's SVML routine on CPUs with AVX-512 and glibc's elsewhere,
# one ulp apart on about 5% of inputs, which moved near-tied choices of `_grown` and so the trees
# (the BCube forest runs of 2026-12-02, planned on AVX-512 hosts, packed other trees than the same
# code and libraries on a host without it; docs/forest.md, "The same plan on every machine").
_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10  # fdlibm's split of ln 2
_INV_LN2 = 1.44269504088896338700e+00
_TAYLOR = tuple(1.0 / math.factorial(i) for i in range(14))


def _exp(x: np.ndarray) -> np.ndarray:
    """e**x elementwise, CPU-independent (see above); x of moderate size (congestion costs)."""
    x = np.asarray(x, dtype=np.float64)
    k = np.rint(x * _INV_LN2)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = np.full_like(r, _TAYLOR[-1])
    for c in reversed(_TAYLOR[:-1]):
        p = p * r + c
    return np.ldexp(p, np.clip(k, -1074, 1024).astype(np.int64))


def _grown(cols: _Columns, base: np.ndarray, x: float, height: int, bias: tuple) -> tuple[list, np.ndarray]:
    """Step 4: one tree of height <= `height`, grown from a root like Prim's algorithm, each
    step attaching the outside worker whose two routes (to and from the tree node it joins)
    add the least congestion cost: sum over their links of exp(ALPHA * utilization) (`_exp`) after
    minus before, with `base` the other trees' load (bytes/s), `x` this tree's rate, and the
    tree's own edges counted as they are added (which spreads its degrees). The cost is
    scaled by (1 + a depth) (1 + b degree) of the tree node joined, (a, b) = `bias`.

    Incremental, with the bits of recomputing every route at every step (`_Growth`): an edge
    added changes the marginal cost of the links of its two routes only, so only the routes
    crossing one of them are summed again, and of the pairs only those a tree node could join
    to an outside worker are compared. At 432 workers (Fat-Tree k = 12) the full product per
    step was most of the plan's time (docs/forest.md, "Planner run time")."""
    n, m = cols.ov.size, cols.ov.nics
    cost = (cols.R @ _exp(ALPHA * base / cols.cap)).reshape(m, n, n).min(axis=0)
    np.fill_diagonal(cost, 0.0)
    root = int(np.argmin(cost.sum(axis=0) + cost.sum(axis=1)))  # the least congested worker
    depth = np.full(n, -1)
    depth[root] = 0
    degree = np.zeros(n)
    edges, nic_of = [], np.zeros((n, n), dtype=int)
    grow = _Growth(cols, base, x)
    for _ in range(n - 1):
        inside = depth >= 0
        joins = np.flatnonzero(inside & (depth < height))  # tree nodes a worker may join
        outside = np.flatnonzero(~inside)
        scale = (1 + bias[0] * np.maximum(depth, 0)) * (1 + bias[1] * degree)
        w = grow.both[np.ix_(joins, outside)] * scale[joins][:, None]
        i, j = divmod(int(np.argmin(w)), len(outside))  # row-major: the full matrix's first minimum
        u, v = int(joins[i]), int(outside[j])
        depth[v] = depth[u] + 1
        degree[u] += 1
        degree[v] += 1
        edges.append((min(u, v), max(u, v)))
        nic_of[u, v], nic_of[v, u] = grow.nic[u, v], grow.nic[v, u]
        grow.add(u, v, depth >= 0)
    return edges, nic_of


class _Growth:
    """The state of `_grown` between steps: this tree's own load on every link, the marginal
    congestion cost of each link (exp(ALPHA (base + own + x) / cap) - exp(ALPHA (base + own) / cap)),
    every route's cost under it, the cheapest NIC's cost d and choice nic per ordered pair (as
    `_Columns.weights`) and both[a, b] = d[a, b] + d[b, a]. Every number a step reads is the one
    recomputing from scratch gives, bit for bit: the marginal is elementwise, a route's cost is
    summed over its links in the order of its row of R from 0 as csr_matvec sums it (`_Routes`),
    links and routes an edge does not touch keep their values, and routes between two tree
    nodes, which no later step of this tree reads, are left as they were."""

    def __init__(self, cols: _Columns, base: np.ndarray, x: float):
        self.cols, self.x = cols, x
        self.base = np.zeros_like(cols.cap) + base  # a 0 (no other tree) as a vector: the same sums
        self.n, self.m = n, m = cols.ov.size, cols.ov.nics
        self.routes = cols.routes()
        self.own = np.zeros_like(cols.cap)
        self.marginal = np.append(self._marginal(slice(None)), 0.0)  # and the padding's 0
        self.flat = cols.R @ self.marginal[:-1]
        cost = self.flat.reshape(m, n, n)
        if m == 1:  # a view: updates to `flat` are seen
            self.d, self.nic = cost[0], np.zeros((n, n), dtype=np.intp)
        else:
            self.nic, self.d = np.argmin(cost, axis=0), np.min(cost, axis=0)
        self.both = self.d + self.d.T
        self._slot = np.zeros(len(self.flat), dtype=np.int64)  # scratch: dropping repeated routes

    def _marginal(self, at) -> np.ndarray:
        cols = self.cols
        before = (self.base[at] + self.own[at]) / cols.cap[at]
        after = (self.base[at] + self.own[at] + self.x) / cols.cap[at]
        both = _exp(ALPHA * np.concatenate([after, before]))  # elementwise: one call, the same bits
        return both[:len(after)] - both[len(after):]

    def add(self, u: int, v: int, inside: np.ndarray) -> None:
        """The edge {u, v} joined on the NICs `nic` gives it (`inside`: the tree's nodes with v)."""
        n, m, rt = self.n, self.m, self.routes
        rows = [(int(self.nic[u, v]) * n + u) * n + v, (int(self.nic[v, u]) * n + v) * n + u]
        load = np.bincount(rt.links[rows].ravel(), rt.data[rows].ravel(), len(self.own) + 1)  # padding: last
        links = np.flatnonzero(load[:-1])
        self.own[links] = self.own[links] + self.x * load[links]
        self.marginal[links] = self._marginal(links)
        touched = np.concatenate([rt.crossing[rt.start[e]:rt.start[e + 1]] for e in links.tolist()])
        s, t = (touched // n) % n, touched % n
        touched = touched[~(inside[s] & inside[t])]  # a route between tree nodes is read no more
        self._slot[touched] = np.arange(len(touched))
        touched = touched[self._slot[touched] == np.arange(len(touched))]  # each route once
        self.flat[touched] = rt.cost(touched, self.marginal)
        pair = touched % (n * n)
        s, t = pair // n, pair % n
        if m > 1:
            cost = self.flat.reshape(m, n, n)[:, s, t]
            self.nic[s, t], self.d[s, t] = np.argmin(cost, axis=0), np.min(cost, axis=0)
        self.both[s, t] = self.both[t, s] = self.d[s, t] + self.d[t, s]


@dataclass(frozen=True)
class _Routes:
    """R's rows as a padded table, for summing a few rows fast: links[r] the link ids of route r in
    its row's order, then the padding link (id = number of links, priced 0); data[r] its entries
    (0 on the padding); and R by columns: crossing[start[e]:start[e + 1]] the routes crossing link e."""

    links: np.ndarray
    data: np.ndarray
    crossing: np.ndarray
    start: np.ndarray
    ones: bool  # every entry of R is 1

    @classmethod
    def of(cls, R) -> "_Routes":
        rows, links = R.shape
        length = np.diff(R.indptr)
        width = int(length.max()) if rows else 0
        table = np.full((rows, width), links, dtype=np.int64)
        data = np.zeros((rows, width))
        mask = np.arange(width)[None, :] < length[:, None]
        table[mask], data[mask] = R.indices, R.data  # row by row, each in its order
        by_link = R.tocsc()
        return cls(table, data, by_link.indices.astype(np.int64), by_link.indptr.astype(np.int64),
                   bool(np.all(R.data == 1.0)))

    def cost(self, rows, price: np.ndarray) -> np.ndarray:
        """(R @ price[:-1])[rows], with the bits of csr_matvec: from 0, each entry's data x price
        added in the row's order (the padding adds 0, which changes no sum of prices >= 0)."""
        links = self.links[rows]
        out = np.zeros(len(rows))
        if self.ones:  # every entry 1 (routes cross a link once): 1 x price is the price
            for k in range(links.shape[1]):
                out = out + price[links[:, k]]
            return out
        data = self.data[rows]
        for k in range(links.shape[1]):
            out = out + data[:, k] * price[links[:, k]]
        return out


def _bounded_forest(cols: _Columns, k: int, height: int, target: float, bias: tuple):
    """Step 4: k trees of bounded height, grown one after another against the load of the
    ones before (each at the provisional rate target / k), then improved by rip-up and
    re-grow: tree j is grown again against the others at their LP rates and kept if the
    LP over the k trees rises (Blink's multiplicative weights, made to respect a tree count
    and a height instead of packing thousands of trees)."""
    x = target / k
    trees, loads = [], []
    for _ in range(k):
        base = sum(loads) * x if loads else np.zeros_like(cols.cap)
        edges, nic = _grown(cols, base, x, height, bias)
        trees.append((edges, nic))
        loads.append(cols.column(edges, nic)[1])
    rates, best, _ = _lp(np.column_stack(loads), cols.cap)
    for _ in range(PASSES):
        improved = False
        for j in range(k):
            base = sum(r * l for i, (r, l) in enumerate(zip(rates, loads)) if i != j)
            edges, nic = _grown(cols, base, x, height, bias)
            load = cols.column(edges, nic)[1]
            trial = loads[:j] + [load] + loads[j + 1:]
            r, value, _ = _lp(np.column_stack(trial), cols.cap)
            if value > best * (1 + 1e-9):
                trees[j], loads[j], rates, best, improved = (edges, nic), load, r, value, True
        if not improved:
            break
    return trees, loads, rates, best


def default_processes(workers: int) -> int:
    """Processes to plan `workers` with: the CPUs this process may run on from PARALLEL_FROM
    workers, else 1; 1 in a daemonic process (multiprocessing lets it have no children)."""
    if workers < PARALLEL_FROM or multiprocessing.current_process().daemon:
        return 1
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _bounded_forests(cols: _Columns, k: int, target: float, jobs: list, processes: int) -> list:
    """[(trees, rates, value)] of `_bounded_forest` for each (height, bias) of `jobs`, in order.
    They are independent of one another, so with `processes` > 1 they are grown at once in
    forked processes: 'fork' so that `cols` (its routes, matrix and cached columns) is shared
    copy-on-write and not pickled to each; a column a child caches is lost with it, which
    costs the parent time but not bits (the cache only saves recomputing a column)."""
    if processes <= 1 or len(jobs) <= 1:
        return [_expanded(_forest_job(job, cols, k, target), cols.ov.size) for job in jobs]
    cols.routes()  # made once, before the fork, instead of once per child
    try:
        pool = ProcessPoolExecutor(min(processes, len(jobs)), mp_context=multiprocessing.get_context("fork"),
                                   initializer=_share, initargs=(cols, k, target))
        try:
            # the tallest first: they grow longest (k = 12: 7 s against 3 s at height 2), so the
            # short ones fill in behind and the processes end together
            done = list(pool.map(_forest_job, jobs[::-1]))[::-1]
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)  # the jobs not started are dropped
            raise
        pool.shutdown()
    except (OSError, BrokenProcessPool):  # no fork (memory, process limit) or a child killed: here
        return _bounded_forests(cols, k, target, jobs, 1)
    return [_expanded(out, cols.ov.size) for out in done]


_SHARED: tuple = ()  # (cols, k, target) in a child of `_bounded_forests`, inherited by the fork


def _share(*args) -> None:
    global _SHARED
    _SHARED = args
    _die_with_parent()


def _die_with_parent() -> None:
    """In a forked child: be sent SIGTERM when the parent dies (Linux's PR_SET_PDEATHSIG), so
    that a planner killed mid-plan leaves no child computing, or waiting on a queue whose
    writing end it holds itself. Elsewhere nothing."""
    try:
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _forest_job(job: tuple, *shared) -> tuple:
    """`_bounded_forest` at job = (height, bias): each tree as (a, b, nic[a, b], nic[b, a]) per
    edge, in the edges' order, for a pickle of a few kB instead of an n x n NIC matrix."""
    cols, k, target = shared or _SHARED
    trees, _, rates, value = _bounded_forest(cols, k, job[0], target, job[1])
    return [[(a, b, int(nic[a, b]), int(nic[b, a])) for a, b in edges] for edges, nic in trees], rates, value


def _expanded(job_out: tuple, n: int) -> tuple:
    """`_forest_job`'s trees as (edges, NIC matrix) again: the matrix `_grown` made, zeros but
    on the tree's edges."""
    trees, rates, value = job_out
    return [([(a, b) for a, b, _, _ in t], _nic_matrix(t, n)) for t in trees], rates, value


def forked(fn, *args) -> "_Forked":
    """fn(*args) computed in a forked process while the caller goes on: call the result to wait
    for it and get fn's value (or what fn raised), or `cancel` it. Forked so that the arguments
    are not pickled; the value is, which keeps its bits. Where the fork fails, fn runs when
    called, in this process."""
    return _Forked(fn, args)


class _Forked:
    def __init__(self, fn, args):
        self.fn, self.args, self.child = fn, args, None
        ctx = multiprocessing.get_context("fork")
        self.receive, send = ctx.Pipe(duplex=False)

        def run():
            _die_with_parent()
            try:
                out = (True, fn(*args))
            except BaseException as e:  # noqa: BLE001 - raised again in the parent
                out = (False, e)
            send.send(out)

        try:
            self.child = ctx.Process(target=run, daemon=True)
            self.child.start()
        except OSError:  # no fork here (memory, process limit): computed when asked, in this process
            self.child = None
            self.receive.close()
        send.close()

    def __call__(self):
        if self.child is None:
            return self.fn(*self.args)
        try:
            ok, out = self.receive.recv()
        except EOFError:  # it died before sending (killed, or a value that does not pickle)
            self.child.join()
            raise RuntimeError(f"forest: the process computing {self.fn.__name__} died "
                               f"(exit code {self.child.exitcode})") from None
        finally:
            self.receive.close()
        self.child.join()
        if not ok:
            raise out
        return out

    def cancel(self) -> None:
        """Stop the child, if any, and close the pipe: for a caller that will not ask."""
        if self.child is not None:
            self.child.terminate()
            self.child.join()
            self.receive.close()


def _tree_radius(edges) -> int:
    """nx.radius of a tree, as ceil(diameter / 2) from two searches (a tree's center is the
    middle of its longest path) instead of one search per node."""
    g = nx.Graph(edges)
    far = max(nx.single_source_shortest_path_length(g, next(iter(g))).items(), key=lambda kv: kv[1])[0]
    return -(-max(nx.single_source_shortest_path_length(g, far).values()) // 2)


def _rooted(edges, nic, n: int, used_roots: dict) -> Tree:
    """Step 5: root at a center of the tree (least height), preferring workers rooting fewer trees."""
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    root = min(nx.center(g), key=lambda r: (used_roots.get(r, 0), r))
    used_roots[root] = used_roots.get(root, 0) + 1
    parent = [-1] * n
    for child, par in nx.bfs_predecessors(g, root, sort_neighbors=sorted):
        parent[child] = par
    up = tuple(-1 if parent[i] < 0 else int(nic[i, parent[i]]) for i in range(n))
    down = tuple(-1 if parent[i] < 0 else int(nic[parent[i], i]) for i in range(n))
    return Tree(root, tuple(parent), up, down)


def default_height(workers: int) -> int:
    """ceil(log2 N), at least 2: the middle of the heights `pack` tries (16 workers: 4)."""
    return max(2, math.ceil(math.log2(max(workers, 2))))


def chunk_elements(elements: int, chunk: int = 0) -> int:
    """Elements per pipelined chunk of a tree's partition: `chunk` if given, else about
    CHUNKS_PER_TREE chunks, within MIN_CHUNK..MAX_CHUNK elements (few messages for large
    partitions, a short pipeline fill for small ones)."""
    if chunk:
        return int(chunk)
    return int(min(MAX_CHUNK, max(MIN_CHUNK, -(-elements // CHUNKS_PER_TREE))))


def pipeline_seconds(trees, rates, elements: int, chunk: int = 0) -> float:
    """Predicted all-reduce time of `elements` float32 over trees at `rates` (bytes/s):
    tree k moves its share m_k at rate x_k, after a fill and drain of 2 x height chunk
    times (a chunk climbs to the root, then comes down): max_k (m_k + 2 h_k c_k) / x_k."""
    out = 0.0
    for tree, rate, (a, b) in zip(trees, rates, proportional(elements, rates)):
        if b > a and rate > 0:
            c = min(chunk_elements(b - a, chunk), b - a)
            out = max(out, DTYPE_BYTES * ((b - a) + 2 * tree.height * c) / rate)
    return out


def pack(ov: Overlay, max_trees: int = MAX_TREES, iterations: int = ITERATIONS,
         max_height: int | None = None, elements: int | None = None, chunk: int = 0,
         processes: int | None = None) -> Packing:
    """A near-optimal packing of at most `max_trees` trees (module docstring, steps 2-5).

    With `max_height`, the trees respect it. Without, heights 2, ceil(log2 N) and twice that
    are tried and the packing with the least `pipeline_seconds(elements, chunk)` wins
    (`elements` None: the highest rate; ties go to the lower height).

    The bounded forests (one per height and bias) are grown in up to `processes` forked
    processes at once (None: `default_processes(ov.size)`; 1: in this process). The packing is the
    same whatever the number."""
    n = ov.size
    if max_trees < 1 or iterations < 1 or (max_height is not None and max_height < 1):
        raise ValueError(f"forest: max_trees, iterations and max_height must be >= 1, "
                         f"got {max_trees}, {iterations}, {max_height}")
    if n == 1:
        return Packing((Tree(0, (-1,), (-1,), (-1,)),), (math.inf,), math.inf, math.inf, 0, True, 1, 0,
                       "one worker")
    cols = _Columns(ov)
    keys, loads, optimum, upper, rounds, converged = _column_generation(cols, iterations)
    x, _, _ = _lp(np.column_stack(loads), cols.cap)
    support = [j for j in range(len(keys)) if x[j] > 1e-9 * optimum]
    radius = {j: _tree_radius([(a, b) for a, b, _, _ in keys[j]]) for j in support}
    d = default_height(n)
    heights = [int(max_height)] if max_height is not None else sorted({min(h, n - 1) for h in (2, d, 2 * d)})
    k = min(max_trees, n * (n - 1) // 2)
    # the LP's own trees, when few and shallow enough, are the optimum itself
    shallow = {h: len(support) <= max_trees and all(radius[j] <= h for j in support) for h in heights}
    jobs = [(h, bias) for h in heights if not shallow[h] for bias in BIASES]
    forests = dict(zip(jobs, _bounded_forests(cols, k, optimum, jobs,
                                              processes if processes is not None else default_processes(n))))
    scored = []
    for height in heights:
        if shallow[height]:
            found = [("column generation", [([(a, b) for a, b, _, _ in keys[j]], _nic_matrix(keys[j], n))
                                            for j in support], x[support], optimum)]
        else:
            found = [("congestion-aware trees", *forests[height, bias]) for bias in BIASES]
        for method, trees, rates, value in found:
            picked = sorted(((t, r) for t, r in zip(trees, rates) if r > 1e-9 * value),
                            key=lambda tr: (-tr[1], sorted(tr[0][0])))
            roots: dict = {}
            out = tuple(_rooted(edges, nic, n, roots) for (edges, nic), _ in picked)
            rates = tuple(float(r * cols.scale) for _, r in picked)
            score = pipeline_seconds(out, rates, elements, chunk) if elements else -sum(rates)
            scored.append(((score, len(scored)), height, method, out, rates))  # ties: the first
    _, height, method, out, rates = min(scored, key=lambda s: s[0])
    notes = () if converged else (f"column generation stopped after {rounds} rounds (option iterations): "
                                  f"the optimum is known only to lie below the upper bound",)
    return Packing(out, rates, float(optimum * cols.scale), float(upper * cols.scale), rounds, converged,
                   len(keys), height, method, notes)


def _nic_matrix(key, n: int) -> np.ndarray:
    nic = np.zeros((n, n), dtype=int)
    for a, b, ab, ba in key:
        nic[a, b], nic[b, a] = ab, ba
    return nic


def proportional(total: int, rates) -> list[tuple[int, int]]:
    """Contiguous [start, end) of `total` elements in proportion to `rates` (largest
    remainder; ties to the earlier tree): the partition each tree aggregates."""
    rates = [float(r) for r in rates]
    s = sum(rates)
    exact = [total * r / s for r in rates]
    sizes = [int(math.floor(e)) for e in exact]
    for k in sorted(range(len(rates)), key=lambda k: (-(exact[k] - sizes[k]), k))[:total - sum(sizes)]:
        sizes[k] += 1
    out, start = [], 0
    for size in sizes:
        out.append((start, start + size))
        start += size
    return out


def tree_loads(ov: Overlay, trees, rates) -> dict:
    """link id -> bytes/s the packing puts on it (both directions of every tree edge)."""
    out: dict = {}
    for tree, rate in zip(trees, rates):
        for i, p in enumerate(tree.parent):
            if p < 0:
                continue
            for e in ov.routes[(i, p, tree.nic_up[i])] + ov.routes[(p, i, tree.nic_down[i])]:
                out[e] = out.get(e, 0.0) + rate
    return out


# --- the cut bound ------------------------------------------------------------------------------
def physical_graph(topo, load: dict | None = None) -> nx.DiGraph:
    """Nodes of a Topology and its links as two directed edges with `capacity` in bytes/s;
    with `load` ({transmitting interface: bytes/s}, `background.background_load`), what is left of each
    direction after it (`left_over`, as `less_load`)."""
    load = load or {}
    g = nx.DiGraph()
    for name, node in topo.nodes.items():
        g.add_node(name, kind=node.kind, role=node.role)
    for link in topo.links:
        a, b = topo.intfs[link.a].node, topo.intfs[link.b].node
        for (u, v), tx in (((a, b), link.a), ((b, a), link.b)):
            old = g.edges[u, v]["capacity"] if g.has_edge(u, v) else 0.0
            g.add_edge(u, v, capacity=old + left_over(link.bw * 1e6 / 8, load.get(tx, 0.0)))
    return g


@dataclass(frozen=True)
class CutBound:
    seconds: float  # max of the two terms below: no all-reduce (forest, ring, PS, ...) is faster
    cut_seconds: float  # M / (least capacity out of or into a set separating the workers)
    partition_seconds: float  # 2(p-1)M / (capacity out of p disjoint worker sets), best family
    which: str  # the family or cut that gave `seconds`
    rsag_seconds: float  # ForestColl: reduce-scatter then all-gather with equal shards


def _out(g: nx.DiGraph, s: set) -> float:
    return sum(d["capacity"] for u, v, d in g.edges(data=True) if u in s and v not in s)


def _in(g: nx.DiGraph, s: set) -> float:
    return sum(d["capacity"] for u, v, d in g.edges(data=True) if v in s and u not in s)


def _outs_ins(g: nx.DiGraph, sets: list) -> tuple[list, list]:
    """[_out(g, s) for s in sets], [_in(g, s) for s in sets] for disjoint sets, in one pass over
    the edges instead of one per set and direction (most of the cut bound's own time at hundreds
    of workers): each set's sum adds the same capacities in the same edge order from 0, so the
    same floats."""
    where = {}
    for k, members in enumerate(sets):
        for node in members:
            if where.setdefault(node, k) != k:
                raise ValueError(f"forest: node {node!r} is in two of the sets")
    outs, ins = [0] * len(sets), [0] * len(sets)
    for u, v, d in g.edges(data=True):
        a, b = where.get(u), where.get(v)
        if a != b:
            if a is not None:
                outs[a] += d["capacity"]
            if b is not None:
                ins[b] += d["capacity"]
    return outs, ins


def _families(g: nx.DiGraph, workers: list) -> list[tuple[str, list[set]]]:
    """Disjoint node sets, each holding a worker, together holding all of them: every
    partition of the nodes of a tiny graph; else one set per worker node, and the connected
    components left after removing the nodes of some set of roles (Fat-Tree: pods without
    the cores, edge groups; BCube: the servers sharing a switch of the other level)."""
    wset = set(workers)
    out = [("one set per worker", [{w} for w in dict.fromkeys(workers)])]
    nodes = list(g.nodes)
    if len(nodes) <= EXHAUSTIVE_NODES:
        for part in _partitions(nodes):
            sets = [set(b) for b in part if wset & set(b)]
            if len(sets) >= 2:
                out.append(("partition " + " | ".join(",".join(map(str, sorted(s, key=str))) for s in sets), sets))
        return out
    roles = sorted({d.get("role") for n, d in g.nodes(data=True) if n not in wset and d.get("role")})
    und = g.to_undirected(as_view=True)
    for r in range(1, len(roles) + 1):
        for removed in itertools.combinations(roles, r):
            keep = [n for n in nodes if n in wset or g.nodes[n].get("role") not in removed]
            comps = [c for c in nx.connected_components(und.subgraph(keep)) if wset & c]
            if len(comps) >= 2:
                comps.sort(key=lambda c: sorted(map(str, c)))
                out.append((f"components without {'+'.join(removed)}", comps))
    return out


def _partitions(items: list):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _partitions(rest):
        for k in range(len(part)):
            yield part[:k] + [[first] + part[k]] + part[k + 1:]
        yield [[first]] + part


def _symmetric(g: nx.DiGraph) -> bool:
    """Every link as fast one way as the other (full duplex, no background load yet)."""
    return all(g.has_edge(v, u) and math.isclose(d["capacity"], g.edges[v, u]["capacity"])
               for u, v, d in g.edges(data=True))


def _min_cut(g: nx.DiGraph, residual: nx.DiGraph, s, t) -> tuple[float, set]:
    """nx.minimum_cut(g, s, t) with FLOW on a residual network built once for many pairs
    (`build_residual_network`, a quarter of the cut bound's time at 250 workers, profiled): the same value and
    source side, the nodes that cannot reach t over unsaturated edges. An edge whose capacity
    was set to 0 in `residual` is the edge absent: it is never crossed, and the others keep
    their order. minimum_cut itself takes the saturated edges out of the residual and puts
    them back at the end of their lists, which would reorder the next search."""
    FLOW(g, s, t, capacity="capacity", residual=residual, value_only=True)
    reach, todo = {t}, [t]
    while todo:
        v = todo.pop()
        for u, d in residual.pred[v].items():
            if u not in reach and d["flow"] < d["capacity"]:
                reach.add(u)
                todo.append(u)
    return residual.graph["flow_value"], set(g) - reach


def _min_separating_cut(g: nx.DiGraph, workers: list) -> tuple[float, set]:
    """Least capacity out of a node set holding some but not all workers (max-flow min-cut:
    every such set separates workers[0] from another worker, in one direction or the other)."""
    best, best_set = math.inf, set()
    w0 = workers[0]
    symmetric = _symmetric(g)
    residual = build_residual_network(g, "capacity")
    for w in workers[1:]:
        if w == w0:
            continue
        for s, t in ((w0, w),) if symmetric else ((w0, w), (w, w0)):
            value, side = _min_cut(g, residual, s, t)
            if value < best:
                best, best_set = value, set(side)
    return best, best_set


def _max_ratio(g: nx.DiGraph, workers: list) -> float:
    """ForestColl's max over S (holding some, not all workers) of |S ∩ W| / (capacity out of
    S), exactly: Dinkelbach iterations, each a max-flow per excluded worker t, on the graph
    plus a source feeding every other worker with capacity theta."""
    wl = list(dict.fromkeys(workers))
    n = len(wl)
    outs, ins = _outs_ins(g, [{w} for w in wl])
    theta = min(min(outs), min(c / (n - 1) for c in ins))  # singletons and all-but-one
    h = g.copy()
    for _ in range(100):
        for w in wl:
            h.add_edge(_SOURCE, w, capacity=theta)
        residual = build_residual_network(h, "capacity")
        best, best_set = 0.0, None
        for t in wl:  # t fed nothing: its source edge at 0, as if absent (`_min_cut`)
            residual.edges[_SOURCE, t]["capacity"] = 0.0
            value, side = _min_cut(h, residual, _SOURCE, t)
            residual.edges[_SOURCE, t]["capacity"] = theta
            val = value - theta * (n - 1)
            if val < best - 1e-12 * theta * n:
                best, best_set = val, set(side) - {_SOURCE}
        if best_set is None:
            return 1.0 / theta
        theta = _out(g, best_set) / len(best_set & set(wl))
    return 1.0 / theta


def cut_bound(g: nx.DiGraph, workers, nbytes: float) -> CutBound:
    """The lower bound on all-reduce time (docs/forest.md) for `nbytes` over graph `g`."""
    workers = list(dict.fromkeys(workers))
    if len(workers) < 2 or nbytes <= 0:
        return CutBound(0.0, 0.0, 0.0, "one worker", 0.0)
    least, _ = _min_separating_cut(g, workers)
    cut = nbytes / least
    part, which = 0.0, ""
    for name, sets in _families(g, workers):
        p = len(sets)
        for cap in map(sum, _outs_ins(g, sets)):
            t = 2 * (p - 1) * nbytes / cap
            if t > part * (1 + 1e-12):
                part, which = t, name
    if cut >= part:
        which = "least cut separating the workers"
    shard = nbytes / len(workers)
    ratio = _max_ratio(g, workers)
    rsag = shard * (2 * ratio if _symmetric(g) else ratio + _max_ratio(g.reverse(copy=True), workers))
    return CutBound(max(cut, part), cut, part, which, rsag)


def cut_bound_seconds(topo, hosts, nbytes: float) -> float:
    """Lower bound on the all-reduce time of `nbytes` among `hosts` of `topo` (docs/forest.md)."""
    return cut_bound(physical_graph(topo), list(hosts), nbytes).seconds


def rsag_bound_seconds(topo, hosts, nbytes: float) -> float:
    """ForestColl's bound for reduce-scatter then all-gather with equal shards (not a bound
    for forests, whose shards follow the rates; docs/forest.md)."""
    return cut_bound(physical_graph(topo), list(hosts), nbytes).rsag_seconds
