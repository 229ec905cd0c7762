"""Gradient-merging planners: which tensors to all-reduce together during backprop.

MG-WFBP, "Merged-Gradient Wait-Free BackPropagation" (S. Shi, X. Chu, B. Li, "MG-WFBP:
Efficient Data Communication for Distributed Synchronous SGD Algorithms", IEEE INFOCOM
2019), and the baselines it is compared with. The authors' code is HKBU-HPML/MG-WFBP,
`distributed_optimizer.py` (`_generate_groups_mgwfbp`, `_generate_groups_with_threshold`);
there the planner is mixed with MPI calls and hard-coded alpha-beta tables. Here every
planner is a pure function from tensor sizes, backward times and the link's alpha-beta
model to a *grouping*; the executor that carries a grouping out lives elsewhere
(docs/STYLE.md: plan in pure functions, execute elsewhere).

Duties:
- `simulate` is the one cost model every planner is judged by (step 1 below);
- `mgwfbp_greedy` is the authors' merge rule, `optimal_dp` the true optimum, `brute_force`
  the oracle the tests check both against;
- `wfbp`, `single`, `fusion` are the baselines, as groupings;
- `plan_groups` picks a planner by name and returns JSON-able data.

1. Cost model. Tensors l = 0..L-1 in forward order have m[l] bytes and backward times
   t_b[l] s. Backprop produces tensor L-1 first: tau_b[L-1] = 0, tau_b[l] = tau_b[l+1] +
   t_b[l+1], and tensor l is ready at tau_b[l] + t_b[l] (so L-1 at t_b[L-1], tensor 0 when
   backprop ends). All-reducing m bytes takes t_c(m) = a + b*m (alpha s, beta s/byte; see
   workloads/linkmodel.py). A grouping is a partition of 0..L-1 into contiguous groups,
   listed in launch order (the group holding L-1 first), each group's indices in the order
   backprop produces them (descending). A group's all-reduce starts when its last-produced
   tensor (its lowest index) is ready and the previous group's all-reduce has ended (one
   all-reduce at a time, as on one communicator), and takes a + b*(its bytes). The
   iteration (backward + communication) ends when the last group, the one holding tensor
   0, finishes.
2. Optimum. With finish(group) = max(previous finish, ready(group)) + a + b*bytes(group),
   finish is non-decreasing in the previous finish, so the earliest finish over the tensors
   L-1..j only needs the earliest finish over L-1..i for each cut i: an O(L^2) dynamic
   program over cut points (`optimal_dp`).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Callable, Sequence

BRUTE_FORCE_MAX_TENSORS = 20  # 2^19 groupings; more is a mistake, not a test


@dataclass(frozen=True)
class Timeline:
    """Predicted schedule of one grouping under the alpha-beta model (step 1).

    groups:      tuple of tuples of tensor indices, launch order, each in production order
    group_bytes: bytes all-reduced by each group
    start, end:  when each group's all-reduce starts and ends, seconds from backprop start
    ready:       when each tensor's gradient is ready (forward index)
    """

    groups: tuple
    group_bytes: tuple
    start: tuple
    end: tuple
    ready: tuple

    @property
    def backward_seconds(self) -> float:
        return self.ready[0]

    @property
    def iteration_seconds(self) -> float:
        """Backward plus the communication it does not hide: the last all-reduce's end."""
        return self.end[-1]

    def to_dict(self) -> dict:
        return {"groups": [list(g) for g in self.groups], "group_bytes": list(self.group_bytes),
                "group_start": list(self.start), "group_end": list(self.end), "ready": list(self.ready),
                "backward_seconds": self.backward_seconds, "iteration_seconds": self.iteration_seconds,
                "exposed_comm_seconds": self.iteration_seconds - self.backward_seconds}


# -- input checks ------------------------------------------------------------------------

def _finite(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def _plain(x):
    """numpy scalars to int/float, so plans stay JSON-able."""
    return int(x) if isinstance(x, numbers.Integral) else float(x)


def _check_sizes(sizes) -> list:
    sizes = list(sizes)
    if not sizes:
        raise ValueError("sizes must list at least one tensor (bytes, forward order)")
    bad = [i for i, m in enumerate(sizes) if not _finite(m) or m <= 0]
    if bad:
        raise ValueError(f"sizes must be positive byte counts; tensor {bad[0]} has {sizes[bad[0]]!r}")
    return [_plain(m) for m in sizes]


def _check_model(sizes, t_b, a, b) -> tuple[list, list, float, float]:
    sizes = _check_sizes(sizes)
    t_b = list(t_b)
    if len(t_b) != len(sizes):
        raise ValueError(f"sizes and t_b must have one entry per tensor; got {len(sizes)} sizes "
                         f"and {len(t_b)} backward times")
    bad = [i for i, t in enumerate(t_b) if not _finite(t) or t < 0]
    if bad:
        raise ValueError(f"backward times must be finite seconds >= 0; tensor {bad[0]} has {t_b[bad[0]]!r}")
    t_b = [float(t) for t in t_b]
    for name, value in (("a (alpha, s)", a), ("b (beta, s/byte)", b)):
        if not _finite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return sizes, t_b, float(a), float(b)


def _check_groups(groups, count: int) -> list[list[int]]:
    """Groups as lists in production order; they must tile L-1..0 in launch order."""
    out = [sorted((int(i) for i in g), reverse=True) for g in groups]
    flat = [i for g in out for i in g]
    # Concatenated, the groups must read L-1, L-2, ..., 0: that makes each one contiguous.
    if any(not g for g in out) or flat != list(range(count - 1, -1, -1)):
        raise ValueError(f"groups must split tensors {count - 1}..0 into non-empty contiguous groups "
                         f"in launch order (the group holding {count - 1} first), got {groups!r}")
    return out


# -- step 1: the cost model --------------------------------------------------------------

def ready_times(t_b: Sequence[float]) -> list[float]:
    """When each tensor's gradient is ready: tau_b[l] + t_b[l] (forward index)."""
    count = len(t_b)
    tau_b = [0.0] * count
    for l in range(count - 2, -1, -1):
        tau_b[l] = tau_b[l + 1] + t_b[l + 1]
    # The same sums the authors form (taob[l-1] + tb[l-1]), so the greedy's comparisons and
    # simulate() see bit-identical times.
    return [tau_b[l] + t_b[l] for l in range(count)]


def simulate(sizes_bytes, t_b, a: float, b: float, groups) -> Timeline:
    """The schedule of `groups` under step 1's model."""
    sizes, t_b, a, b = _check_model(sizes_bytes, t_b, a, b)
    groups = _check_groups(groups, len(sizes))
    ready = ready_times(t_b)
    start, end, nbytes, prev = [], [], [], 0.0
    for g in groups:
        m = sum(sizes[i] for i in g)
        s = max(prev, ready[g[-1]])  # g[-1] is the lowest index, produced last
        prev = s + (a + b * m)
        start.append(s)
        end.append(prev)
        nbytes.append(m)
    return Timeline(tuple(tuple(g) for g in groups), tuple(nbytes), tuple(start), tuple(end), tuple(ready))


# -- baselines ---------------------------------------------------------------------------

def wfbp(sizes) -> list[list[int]]:
    """Wait-free backprop: every tensor is all-reduced on its own as soon as it is ready."""
    return [[l] for l in range(len(_check_sizes(sizes)) - 1, -1, -1)]


def single(sizes) -> list[list[int]]:
    """One all-reduce of everything once backprop has finished (no overlap at all)."""
    return [list(range(len(_check_sizes(sizes)) - 1, -1, -1))]


def fusion(sizes, bucket_bytes) -> list[list[int]]:
    """Fixed-size tensor fusion buckets, as Horovod and PyTorch DDP form them.

    1. Walk the tensors in backward order (L-1 first), adding each to the open bucket.
    2. A tensor of at least `bucket_bytes` goes alone: the open bucket (if any) is closed
       first, then the tensor is a bucket of its own (Horovod sends a tensor above the fusion
       threshold unfused rather than delay it to fill a buffer).
    3. Otherwise the tensor joins the open bucket, which is closed (launched) as soon as its
       bytes reach >= `bucket_bytes` (DDP's compute_bucket_assignment_by_size closes a bucket
       once it reaches the cap, so a bucket can exceed the cap by less than one tensor; the
       authors' `_generate_groups_with_threshold` does the same, in elements).
    4. The last, partly filled bucket closes with tensor 0, at the end of backprop.
    """
    sizes = _check_sizes(sizes)
    if not _finite(bucket_bytes) or bucket_bytes <= 0:
        raise ValueError(f"bucket_bytes must be a positive byte count (DDP uses 25 MiB, Horovod "
                         f"64 MiB), got {bucket_bytes!r}")
    groups, bucket, filled = [], [], 0
    for l in range(len(sizes) - 1, -1, -1):
        if sizes[l] >= bucket_bytes:
            if bucket:
                groups.append(bucket)
            groups.append([l])
            bucket, filled = [], 0
            continue
        bucket.append(l)
        filled += sizes[l]
        if filled >= bucket_bytes:
            groups.append(bucket)
            bucket, filled = [], 0
    if bucket:
        groups.append(bucket)
    return groups


# -- MG-WFBP -----------------------------------------------------------------------------

def _mgwfbp(sizes, t_b, a, b) -> tuple[list[list[int]], float]:
    """The greedy and its own predicted iteration time (tau_c[0] + t_c[0])."""
    count = len(sizes)
    ready = ready_times(t_b)
    p = list(sizes)  # bytes each tensor carries once merges are applied
    t_c = [a + b * m for m in p]

    def comm_start() -> list[float]:
        # tau_c[l]: when tensor l's all-reduce may start. A merged tensor has t_c = 0, so
        # tau_c passes through it unchanged, and tau_c of a group's lowest index is exactly
        # the group's start in simulate().
        tau_c = [0.0] * count
        tau_c[count - 1] = ready[count - 1]
        for l in range(count - 2, -1, -1):
            tau_c[l] = max(tau_c[l + 1] + t_c[l + 1], ready[l])
        return tau_c

    tau_c = comm_start()
    groups, group = [], []
    for l in range(count - 1, 0, -1):
        group.append(l)
        r = ready[l - 1]
        # Merge when l's all-reduce would not have finished before l-1 is ready (so the link,
        # not backprop, is the bottleneck) and the link would sit idle waiting for l-1 less
        # than the start-up time a merge saves. The authors test `tau_c[l] > r` first and
        # `r - tau_c[l] < alpha` second; with alpha >= 0 the first implies the second.
        if r < tau_c[l] + t_c[l] and r - tau_c[l] < a:
            p[l - 1] += p[l]
            p[l] = 0
            t_c[l] = 0.0
            t_c[l - 1] = a + b * p[l - 1]  # the merged message pays one start-up
            tau_c = comm_start()
        else:
            groups.append(group)
            group = []
    group.append(0)
    groups.append(group)
    return groups, tau_c[0] + t_c[0]


def mgwfbp_greedy(sizes, t_b, a: float, b: float) -> list[list[int]]:
    """MG-WFBP's merge rule (Shi, Chu, Li, INFOCOM 2019), as the authors' code applies it.

    For l = L-1 down to 1, with r = tau_b[l-1] + t_b[l-1] (when tensor l-1 is ready): merge
    l into l-1 when r < tau_c[l] + t_c[l] and r - tau_c[l] < a, where tau_c[L-1] = t_b[L-1]
    and tau_c[l] = max(tau_c[l+1] + t_c[l+1], tau_b[l] + t_b[l]). A merge moves l's bytes
    (and everything already merged into l) to l-1, sets t_c[l] = 0, t_c[l-1] = a + b * (the
    merged bytes), and recomputes tau_c.

    Confirmed in HKBU-HPML/MG-WFBP distributed_optimizer.py, `_generate_groups_mgwfbp`:
    - a "layer" is one parameter tensor (`named_parameters()` keys in `seq_layernames`, so a
      weight and its bias are two layers), sizes in elements times 2 or 4 bytes;
    - taob is computed once from the unmerged layers and never changes: merging does not
      move any gradient's ready time;
    - `__merge` sets tc[l] = 0, adds p[l] to p[l-1] and recomputes tc[l-1] =
      predict_allreduce_time_with_size(alpha, beta, p[l-1] * nbytes) = alpha + beta * bytes
      (the issue text mentions only tc[l] = 0; the code also re-prices l-1 as one message;
      utils.py is not in the stored copy of the repository, the function body was read in
      HKBU-HPML-derived copies of utils.py, some returning 0 for 0 bytes);
    - the condition is `current_taob < taoc[l] + tc[l]` and then either `taoc[l] >
      current_taob` or `current_taob - taoc[l] < alpha`, the same as the issue's rule for
      alpha >= 0; groups are closed when a layer is not merged, layer 0 ends the last group.
    Later copies (HKBU-HPML ddl-benchmarks) add a forced merge of tensors under 8192
    elements; that is not in the MG-WFBP repository and not done here.

    Not optimal, although the paper says so: each merge is judged against the next tensor
    only. Sizes 1, 1, 2 MB, t_b = 3, 1, 0 ms, a = 2 ms, b = 1 ms/MB: the greedy merges 2 into
    1 (the wait, 1 ms, is under a) and ends at 9 ms; sending 2 alone and merging 1 with 0
    ends at 8 ms (tests/unit/test_merge.py). It was never worse than `wfbp` or `single` on the
    instances tried; `optimal_dp` gives the optimum at the same O(L^2) cost.
    """
    sizes, t_b, a, b = _check_model(sizes, t_b, a, b)
    return _mgwfbp(sizes, t_b, a, b)[0]


# -- step 2: the optimum, and the oracle ---------------------------------------------------

def optimal_dp(sizes, t_b, a: float, b: float) -> list[list[int]]:
    """The grouping with the earliest finish, by dynamic programming over cut points.

    best[j] = earliest finish of the all-reduces of tensors L-1..j when tensor j closes a
    group; best[L] = 0. A last group j..i-1 (produced i-1 first) gives
    max(best[i], ready[j]) + a + b*bytes(j..i-1). Replacing how L-1..i is grouped by a grouping
    that finishes no later cannot delay the rest (finish is non-decreasing in the previous
    finish), so best[j] = min over i of that, and best[0] is the optimum. O(L^2).
    """
    sizes, t_b, a, b = _check_model(sizes, t_b, a, b)
    count = len(sizes)
    ready = ready_times(t_b)
    above = [0] * (count + 1)  # above[j] = bytes of tensors j..L-1
    for j in range(count - 1, -1, -1):
        above[j] = above[j + 1] + sizes[j]
    best = [math.inf] * (count + 1)
    cut = [count] * (count + 1)
    best[count] = 0.0
    for j in range(count - 1, -1, -1):
        for i in range(j + 1, count + 1):
            # Same arithmetic as simulate(), so equal groupings give equal floats.
            finish = max(best[i], ready[j]) + (a + b * (above[j] - above[i]))
            if finish < best[j]:
                best[j], cut[j] = finish, i
    groups, j = [], 0
    while j < count:
        groups.append(list(range(cut[j] - 1, j - 1, -1)))
        j = cut[j]
    return groups[::-1]  # walked from tensor 0 up; launch order starts at L-1


def brute_force(sizes, t_b, a: float, b: float) -> list[list[int]]:
    """The earliest-finishing grouping among all 2^(L-1) contiguous ones (a test oracle)."""
    sizes, t_b, a, b = _check_model(sizes, t_b, a, b)
    count = len(sizes)
    if count > BRUTE_FORCE_MAX_TENSORS:
        raise ValueError(f"brute_force enumerates 2^(L-1) groupings; L must be <= "
                         f"{BRUTE_FORCE_MAX_TENSORS}, got {count}")
    ready = ready_times(t_b)
    best = [math.inf, None]
    path = []

    def extend(hi: int, prev: float) -> None:
        # Groups are chosen in launch order; hi is the highest tensor not yet sent.
        if hi < 0:
            if prev < best[0]:
                best[0], best[1] = prev, list(path)
            return
        m = 0
        for lo in range(hi, -1, -1):
            m += sizes[lo]
            path.append((hi, lo))
            extend(lo - 1, max(prev, ready[lo]) + (a + b * m))
            path.pop()

    extend(count - 1, 0.0)
    return [list(range(hi, lo - 1, -1)) for hi, lo in best[1]]


# -- one entry point -----------------------------------------------------------------------

_PLANNERS: dict[str, Callable] = {
    "wfbp": lambda sizes, t_b, a, b, bucket: wfbp(sizes),
    "single": lambda sizes, t_b, a, b, bucket: single(sizes),
    "fusion": lambda sizes, t_b, a, b, bucket: fusion(sizes, bucket),
    "mgwfbp": lambda sizes, t_b, a, b, bucket: mgwfbp_greedy(sizes, t_b, a, b),
    "optimal": lambda sizes, t_b, a, b, bucket: optimal_dp(sizes, t_b, a, b),
}


def plan_groups(method: str, sizes, t_b, a: float, b: float, bucket_bytes=None) -> dict:
    """Group tensors with `method` and predict the schedule; JSON-able.

    Returns method, alpha, beta, bucket_bytes, groups (lists of tensor indices in launch
    order), group_bytes, group_start, group_end, ready, backward_seconds,
    iteration_seconds and exposed_comm_seconds (iteration minus backward). `bucket_bytes`
    is required by "fusion" and ignored by the others (but checked whenever given).
    """
    if method not in _PLANNERS:
        raise ValueError(f"unknown merge method {method!r}; valid: {', '.join(_PLANNERS)}")
    sizes, t_b, a, b = _check_model(sizes, t_b, a, b)
    if method == "fusion" and bucket_bytes is None:
        raise ValueError("fusion needs bucket_bytes, a positive byte count (DDP uses 25 MiB)")
    if bucket_bytes is not None and (not _finite(bucket_bytes) or bucket_bytes <= 0):
        raise ValueError(f"bucket_bytes must be a positive byte count, got {bucket_bytes!r}")
    groups = _PLANNERS[method](sizes, t_b, a, b, bucket_bytes)
    timeline = simulate(sizes, t_b, a, b, groups)
    return {"method": method, "alpha": a, "beta": b,
            "bucket_bytes": None if bucket_bytes is None else _plain(bucket_bytes),
            **timeline.to_dict()}
