"""Sparse-gradient machinery shared by Top-k, gTop-k and the block-sparse PS algorithms.

Pure torch, no processes and no Gloo (docs/STYLE.md: plan in pure functions, execute elsewhere).
The split of duties follows GRACE (`grace_dl/dist/__init__.py`: compressor, memory,
communicator):
- compressor: `select_topk` (element top-k with a defined tie-break), `SparseSet` (the
  (index, value) pairs that travel, with an exact int32 wire format) and `merge_topk`
  (gTop-k's per-round operation); `block_nonzero` / `block_topk` for OmniReduce and DFS;
- memory: `Residual` (error feedback);
- communicator: only as data here. `gtopk_rounds` / `gtopk_roles` are the tree an executor
  walks with Gloo send/recv;
- oracles: `reference_topk` / `reference_gtopk` / `reference_iterations` give, bit for bit,
  what a distributed executor must return, because they do the float additions in the order
  the executors are specified to do them (documented on each).

Tie-break, everywhere an element or a block is chosen by magnitude: larger |value| (block:
larger L2 norm) first, then lower index. torch.topk and numpy argsort leave tied entries in
an unspecified order, which would make two runs (or two ranks) disagree.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from common.units import DTYPE_BYTES, INDEX_BYTES

INT32_MAX = 2**31 - 1  # packed indices travel as int32


# --- compressor: element top-k --------------------------------------------------------------

def select_topk(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k entries of `x` (flattened) of largest |value|: (indices int64 ascending, values float32).

    Tie-break: larger |value| first, then lower index. O(d): find the k-th largest |x| (the
    threshold), take every entry strictly above it, then the lowest-index entries equal to it
    until there are k. -0.0 and 0.0 both have magnitude 0. Values are returned as stored
    (a kept -0.0 stays -0.0).
    """
    if not x.is_floating_point():
        raise ValueError(f"select_topk needs a floating-point tensor, got {x.dtype}")
    flat = x.reshape(-1)
    d = flat.numel()
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= d:
        raise ValueError(f"k must be an int in 1..{d} (the number of elements), got {k!r}")
    if torch.isnan(flat).any():
        raise ValueError("select_topk: the tensor holds NaN, whose order against numbers is undefined")
    mag = flat.abs()
    threshold = torch.kthvalue(mag, d - k + 1).values  # the k-th largest magnitude
    keep = mag > threshold
    missing = k - int(keep.sum())
    if missing:  # fill with the lowest-index entries tied at the threshold
        keep[(mag == threshold).nonzero().squeeze(1)[:missing]] = True
    indices = keep.nonzero().squeeze(1)
    return indices, flat[indices].to(torch.float32)


@dataclass(frozen=True, eq=False)
class SparseSet:
    """(index, value) pairs of a length-`size` vector: indices int64 ascending unique, values float32.

    Wire format (`pack`): one int32 tensor of 2k elements, the k indices then the k values'
    bits (`values.view(torch.int32)`), so it round-trips exactly, -0.0 and subnormals included.
    `==` is not defined (tensors); use `equal`, which compares values bit for bit.
    """

    indices: torch.Tensor
    values: torch.Tensor
    size: int

    def __post_init__(self):
        idx, val = self.indices, self.values
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"SparseSet size must be a positive int, got {self.size!r}")
        if idx.dtype != torch.int64 or idx.dim() != 1:
            raise ValueError(f"SparseSet indices must be a 1-D int64 tensor, got {idx.dtype} "
                             f"{tuple(idx.shape)}")
        if val.dtype != torch.float32 or val.shape != idx.shape:
            raise ValueError(f"SparseSet values must be float32 of shape {tuple(idx.shape)}, "
                             f"got {val.dtype} {tuple(val.shape)}")
        if idx.numel():
            if int(idx[0]) < 0 or int(idx[-1]) >= self.size:
                raise ValueError(f"SparseSet indices must lie in [0, {self.size}), got "
                                 f"{int(idx.min())}..{int(idx.max())}")
            if idx.numel() > 1 and not bool((idx[1:] > idx[:-1]).all()):
                raise ValueError("SparseSet indices must be strictly ascending (sorted, no duplicates)")

    @classmethod
    def topk(cls, x: torch.Tensor, k: int) -> "SparseSet":
        """`select_topk(x, k)` as a set over x's flattened length."""
        return cls(*select_topk(x, k), x.numel())

    @property
    def k(self) -> int:
        return self.indices.numel()

    def to_dense(self) -> torch.Tensor:
        """Zeros of `size` with the values written (not added) at the indices."""
        dense = torch.zeros(self.size, dtype=torch.float32)
        dense[self.indices] = self.values
        return dense

    def nbytes(self, index_bytes: int = INDEX_BYTES, value_bytes: int = DTYPE_BYTES) -> int:
        """Payload bytes of the pairs on the wire (4 + 4 per pair for `pack`)."""
        return self.k * (index_bytes + value_bytes)

    def pack(self) -> torch.Tensor:
        """One int32 tensor [indices..., value bits...] of 2k elements."""
        if self.size - 1 > INT32_MAX:
            raise ValueError(f"indices of a {self.size}-element vector do not fit the int32 wire format")
        return torch.cat([self.indices.to(torch.int32), self.values.contiguous().view(torch.int32)])

    @classmethod
    def unpack(cls, packed: torch.Tensor, size: int) -> "SparseSet":
        """Inverse of `pack` for a vector of `size` elements (validates the result)."""
        if packed.dtype != torch.int32 or packed.dim() != 1 or packed.numel() % 2:
            raise ValueError(f"packed sparse set must be a 1-D int32 tensor of even length, got "
                             f"{packed.dtype} {tuple(packed.shape)}")
        k = packed.numel() // 2
        return cls(packed[:k].to(torch.int64), packed[k:].clone().view(torch.float32), size)

    def equal(self, other: "SparseSet") -> bool:
        """Same size, indices and value bits (so -0.0 differs from 0.0)."""
        return (self.size == other.size and torch.equal(self.indices, other.indices)
                and torch.equal(self.values.view(torch.int32), other.values.view(torch.int32)))


def _union_sum(a: SparseSet, b: SparseSet):
    """(union indices ascending, summed values, a's and b's positions in the union).

    Values: a's value where only a has the index, b's where only b has it, a + b where both
    do. Written, not added into zeros, so a lone -0.0 keeps its sign.
    """
    if a.size != b.size:
        raise ValueError(f"cannot merge sparse sets of sizes {a.size} and {b.size}")
    union, inverse = torch.unique(torch.cat([a.indices, b.indices]), sorted=True, return_inverse=True)
    pos_a, pos_b = inverse[:a.k], inverse[a.k:]
    values = torch.zeros(union.numel(), dtype=torch.float32)
    values[pos_a] = a.values
    in_a = torch.zeros(union.numel(), dtype=torch.bool)
    in_a[pos_a] = True
    shared = in_a[pos_b]
    values[pos_b[~shared]] = b.values[~shared]
    values[pos_b[shared]] = values[pos_b[shared]] + b.values[shared]  # a + b, in that order
    return union, values, pos_a, pos_b


def _merge_positions(a: SparseSet, b: SparseSet, k: int):
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    union, values, pos_a, pos_b = _union_sum(a, b)
    if union.numel() == 0:
        chosen = union
    else:
        # Positions in `union` are in index order, so "lower position" is "lower index".
        chosen, _ = select_topk(values, min(k, union.numel()))
    return SparseSet(union[chosen], values[chosen], a.size), chosen, pos_a, pos_b, union.numel()


def merge_topk(a: SparseSet, b: SparseSet, k: int) -> SparseSet:
    """gTop-k's per-round operation: union of a and b, a + b at shared indices, then top-k.

    Same tie-break as `select_topk`. If the union has fewer than k entries, all are kept.
    Entries whose sum is 0 stay candidates like any other (magnitude 0).
    """
    return _merge_positions(a, b, k)[0]


# --- communicator, as data: the gTop-k binomial tree ------------------------------------------

def gtopk_rounds(workers: int) -> list[list[tuple[int, int]]]:
    """Reduction rounds of gTop-k's binomial tree rooted at rank 0: [[(sender, receiver)]].

    Shi et al., "A Distributed Synchronous SGD Algorithm with Global Top-k Sparsification
    for Low Bandwidth Networks", ICDCS 2019 (arXiv 1901.04359), its gTopKAllReduce. In
    round j = 0..ceil(log2 P)-1, rank r with r % 2^(j+1) == 2^j sends its current set to
    r - 2^j, which merges it (`merge_topk`, receiver's set first); ranks r % 2^(j+1) == 0
    receive; everyone else idles. Then the root's set is broadcast down the same tree
    (`gtopk_broadcast_rounds`).

    Any P >= 1, not only powers of two: the tree is the power-of-two tree of 2^ceil(log2 P)
    ranks with the ranks >= P removed. A rank whose partner would be >= P has no partner and
    idles that round (e.g. P=5: round 0 is 1->0, 3->2 and rank 4 idles; round 1 is 2->0;
    round 2 is 4->0). Every non-root rank sends exactly once in the reduction (in round
    j = its lowest set bit) and nothing after, the root never sends, pairs within a round are
    disjoint, and there are ceil(log2 P) rounds (0 for P=1).

    Where this differs from the authors' code (hclhkbu/gtopkssgd, `allreducer.py`,
    `gtopk_sparse_allreduce`): theirs runs int(log2 P) rounds over `range(0, P, 2^j)` with
    even positions receiving from the next one: the same pairing for powers of two, but for
    any other P some round has an odd number of participants and the last one looks up a
    partner past the end (IndexError), so it is powers of two only; it
    broadcasts with MPI `Bcast` (whatever tree MPI picks) instead of the reverse tree; it
    merges by zeroing the sender's duplicates and taking top-k of the 2k concatenated values
    with `np.argsort` (no defined tie-break; a zeroed duplicate can be picked, giving a
    repeated index with value 0) where we take the top-k of the true union; and it ships
    indices and values in one float buffer, where we bit-cast into int32 (`SparseSet.pack`).
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"the gTop-k tree needs a positive int number of workers, got {workers!r}")
    return [[(r, r - (1 << j)) for r in range(1 << j, workers, 1 << (j + 1))]
            for j in range((workers - 1).bit_length())]


def gtopk_broadcast_rounds(workers: int) -> list[list[tuple[int, int]]]:
    """Broadcast of the root's final set: the reduction pairs in reverse round order, reversed.

    Each entry is (sender, receiver) = (the reduction's receiver, the reduction's sender).
    Round b of the broadcast is reduction round ceil(log2 P) - 1 - b.
    """
    return [[(dst, src) for src, dst in pairs] for pairs in reversed(gtopk_rounds(workers))]


@dataclass(frozen=True)
class TreeRole:
    """What one rank does in the gTop-k tree; each entry is (round, peer), in round order.

    Reduction rounds are numbered as in `gtopk_rounds`, broadcast rounds as in
    `gtopk_broadcast_rounds`. `dataclasses.asdict` makes it JSON-able for a plan.
    """

    rank: int
    workers: int
    reduce_recv: tuple  # ((round, from_rank), ...): merge these sets, in this order
    reduce_send: tuple  # ((round, to_rank),) for every rank but the root, else ()
    bcast_recv: tuple  # ((round, from_rank),) for every rank but the root, else ()
    bcast_send: tuple  # ((round, to_rank), ...): forward the global set, in this order

    @property
    def parent(self) -> int | None:
        return self.reduce_send[0][1] if self.reduce_send else None


def gtopk_roles(workers: int, rank: int) -> TreeRole:
    """`rank`'s sends and receives in `gtopk_rounds(workers)` and `gtopk_broadcast_rounds(workers)`."""
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < workers:
        raise ValueError(f"rank must be an int in 0..{workers - 1}, got {rank!r}")

    def roles(rounds):
        sends = tuple((j, dst) for j, pairs in enumerate(rounds) for src, dst in pairs if src == rank)
        recvs = tuple((j, src) for j, pairs in enumerate(rounds) for src, dst in pairs if dst == rank)
        return sends, recvs

    reduce_send, reduce_recv = roles(gtopk_rounds(workers))
    bcast_send, bcast_recv = roles(gtopk_broadcast_rounds(workers))
    return TreeRole(rank, workers, reduce_recv, reduce_send, bcast_recv, bcast_send)


# --- memory: error feedback -----------------------------------------------------------------

class Residual:
    """One rank's error-feedback memory: what it accumulated but has not had counted yet.

    GRACE's `ResidualMemory` (grace_dl/dist/memory/residual.py) with beta = gamma = 1:
    `compensate` is our `accumulate` (acc = grad + residual) and `update` sets the residual
    to acc minus what was sent. Here "sent" means sent AND counted in the result: for Top-k
    the rank's local top-k; for gTop-k only the local top-k entries that made the global set
    (the others go back to the residual, as in Shi et al. 2019 and the authors'
    hclhkbu/gtopkssgd `compression.py` `add_residuals`); for block sparsification the kept
    blocks (`blocks_to_indices`).
    """

    def __init__(self, size: int):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"a residual needs a positive int element count, got {size!r}")
        self.residual = torch.zeros(size, dtype=torch.float32)

    def _check(self, what: str, t: torch.Tensor) -> None:
        if t.dtype != torch.float32 or t.shape != self.residual.shape:
            raise ValueError(f"{what} must be float32 of shape {tuple(self.residual.shape)} like the "
                             f"residual, got {t.dtype} {tuple(t.shape)}")

    def accumulate(self, grad: torch.Tensor) -> torch.Tensor:
        """acc = grad + residual (a new tensor; the residual is unchanged until `update`)."""
        self._check("grad", grad)
        return grad + self.residual

    def update(self, acc: torch.Tensor, kept_indices: torch.Tensor) -> None:
        """residual = acc with zeros at `kept_indices` (the entries sent and counted)."""
        self._check("acc", acc)
        residual = acc.clone()
        residual[kept_indices] = 0.0
        self.residual = residual


# --- oracles ---------------------------------------------------------------------------------

def _check_accs(accs, k) -> int:
    if not accs:
        raise ValueError("need the accumulated gradients of at least one rank")
    d = accs[0].numel()
    for r, acc in enumerate(accs):
        if acc.dtype != torch.float32 or acc.dim() != 1 or acc.numel() != d:
            raise ValueError(f"rank {r}: accumulated gradients must be 1-D float32 of {d} elements, got "
                             f"{acc.dtype} {tuple(acc.shape)}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= d:
        raise ValueError(f"k must be an int in 1..{d}, got {k!r}")
    return d


def reference_topk(accs: list[torch.Tensor], k: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Top-k with AllGather: (result, kept) the executor must equal bit for bit.

    1. Every rank r takes `select_topk(accs[r], k)`.
    2. result = zeros(d), then for r = 0..P-1 in rank order: result[idx_r] += val_r
       (so result[i] = ((0 + v_a) + v_b) + ... over the ranks holding i, ascending rank).
    3. kept[r] = idx_r: everything a rank sends is counted.
    """
    d = _check_accs(accs, k)
    result = torch.zeros(d, dtype=torch.float32)
    kept = []
    for acc in accs:
        idx, val = select_topk(acc, k)
        result[idx] = result[idx] + val
        kept.append(idx)
    return result, kept


def reference_gtopk(accs: list[torch.Tensor], k: int, *, counted_only: bool = False
                    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """gTop-k (Shi et al. 2019): (result, kept) the executor must equal bit for bit.

    1. Every rank r takes its local set L_r = `select_topk(accs[r], k)`.
    2. For each round of `gtopk_rounds(P)`, each receiver replaces its set S with
       `merge_topk(S, sender's set, k)` (receiver is `a`, sender is `b`).
    3. The root's final set G is broadcast; result = G.to_dense() on every rank.
    4. kept[r] = L_r ∩ G (ascending), as in the paper and the authors' code: local top-k
       entries outside G go back to the residual.

    Caveat of step 4: an index rank r sent can be dropped by a merge on the way up and still
    reach G through another subtree; then r's value there is in neither the result nor its
    residual (lost). `counted_only=True` instead keeps only the entries whose value is
    actually summed into G (tracked through the merges), which conserves exactly:
    sum_r (acc_r - residual_r) == result. An executor needs extra information for that
    (e.g. a survival mask sent down with the broadcast).
    """
    _check_accs(accs, k)
    workers = len(accs)
    local = [SparseSet.topk(acc, k) for acc in accs]
    held = list(local)
    # contributors[r][e, q]: rank q's value is summed into entry e of the set rank r holds
    contributors = []
    for r, s in enumerate(local):
        c = torch.zeros(s.k, workers, dtype=torch.bool)
        c[:, r] = True
        contributors.append(c)
    for pairs in gtopk_rounds(workers):
        for src, dst in pairs:
            merged, chosen, pos_a, pos_b, n = _merge_positions(held[dst], held[src], k)
            c = torch.zeros(n, workers, dtype=torch.bool)
            c[pos_a] |= contributors[dst]
            c[pos_b] |= contributors[src]
            held[dst], contributors[dst] = merged, c[chosen]
    final = held[0]
    if counted_only:
        kept = [final.indices[contributors[0][:, r]] for r in range(workers)]
    else:
        kept = [s.indices[torch.isin(s.indices, final.indices)] for s in local]
    return final.to_dense(), kept


REFERENCES = {"topk": reference_topk, "gtopk": reference_gtopk}


@dataclass(frozen=True)
class IterationRecord:
    """One iteration of `reference_iterations`: what every rank gets and keeps."""

    accs: list  # per rank: grad + residual before the sync
    result: torch.Tensor  # the synced (summed) sparse gradient, dense
    kept: list  # per rank: indices sent and counted
    residuals: list  # per rank: the residual after the update


def reference_iterations(kind: str, grads_per_iter: list[list[torch.Tensor]], k: int,
                         **options) -> list[IterationRecord]:
    """Run `REFERENCES[kind]` over iterations with one `Residual` per rank.

    grads_per_iter[i][r] is rank r's gradient at iteration i. Each iteration: acc_r =
    grad_r + residual_r; (result, kept) = reference(accs, k, **options); residual_r =
    acc_r with zeros at kept[r].
    """
    if kind not in REFERENCES:
        raise ValueError(f"unknown sparse reference {kind!r}; valid: {', '.join(sorted(REFERENCES))}")
    if not grads_per_iter or not grads_per_iter[0]:
        raise ValueError("need at least one iteration with at least one rank")
    workers, d = len(grads_per_iter[0]), grads_per_iter[0][0].numel()
    memories = [Residual(d) for _ in range(workers)]
    records = []
    for i, grads in enumerate(grads_per_iter):
        if len(grads) != workers:
            raise ValueError(f"iteration {i} has {len(grads)} ranks' gradients, the first had {workers}")
        accs = [m.accumulate(g) for m, g in zip(memories, grads)]
        result, kept = REFERENCES[kind](accs, k, **options)
        for m, acc, idx in zip(memories, accs, kept):
            m.update(acc, idx)
        records.append(IterationRecord(accs, result, kept, [m.residual for m in memories]))
    return records


# --- block sparsification (OmniReduce, DFS) --------------------------------------------------

def _blocks(x: torch.Tensor, block: int) -> tuple[torch.Tensor, int, int]:
    """(x flattened and zero-padded to whole blocks, viewed [blocks, block]; d; blocks)."""
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise ValueError(f"block must be a positive int element count, got {block!r}")
    flat = x.reshape(-1)
    d = flat.numel()
    nblocks = -(-d // block)
    pad = nblocks * block - d
    if pad:
        flat = torch.cat([flat, flat.new_zeros(pad)])
    return flat.view(nblocks, block), d, nblocks


def block_nonzero(x: torch.Tensor, block: int) -> torch.Tensor:
    """Bool mask per block of `block` elements (the last may be short): any |x| > 0 in it.

    OmniReduce (Fei et al., SIGCOMM 2021) sends exactly these blocks upstream.
    """
    blocks, _, _ = _blocks(x, block)
    return (blocks.abs() > 0).any(dim=1)


def blocks_union(masks: list[torch.Tensor]) -> torch.Tensor:
    """Element-wise OR of block masks: the blocks the PS sends back downstream."""
    if not masks:
        raise ValueError("blocks_union needs at least one mask")
    shape = masks[0].shape
    for m in masks:
        if m.dtype != torch.bool or m.shape != shape:
            raise ValueError(f"block masks must be bool tensors of one shape {tuple(shape)}, got "
                             f"{m.dtype} {tuple(m.shape)}")
    return torch.stack(masks).any(dim=0)


def block_energies(x: torch.Tensor, sizes) -> dict:
    """{block size: float64 sum of squares of each block of x (zero-padded to whole blocks)}.

    When every size is a multiple of the smallest, the squares are summed once at the
    smallest size and the larger blocks add those sums (one pass over x instead of one per
    size: DFS evaluates every candidate each iteration, and on ResNet-18's 11.2M elements a
    pass costs about 70 ms here). Float32 squares are exact in float64; sums of them may round
    differently by path, so every rank and the oracle must call this with the same sizes
    (`dfs.contribution` does)."""
    sizes = sorted({int(b) for b in sizes})
    for b in sizes:
        if b < 1:
            raise ValueError(f"block sizes must be positive ints, got {b!r}")
    d = x.numel()
    if all(b % sizes[0] == 0 for b in sizes):
        fine, _, n0 = _blocks(x, sizes[0])
        e0 = fine.to(torch.float64).square().sum(dim=1)
        out = {}
        for b in sizes:
            m, nb = b // sizes[0], -(-d // b)
            padded = torch.cat([e0, e0.new_zeros(nb * m - n0)]) if nb * m > n0 else e0
            out[b] = padded.view(nb, m).sum(dim=1) if m > 1 else e0
        return out
    return {b: _blocks(x, b)[0].to(torch.float64).square().sum(dim=1) for b in sizes}


def block_keep(energy: torch.Tensor, block: int, size: int, budget_elements: int) -> torch.Tensor:
    """The kept-block mask of `block_topk` from the blocks' energies (see there for the rule)."""
    if isinstance(budget_elements, bool) or not isinstance(budget_elements, int) or budget_elements < 1:
        raise ValueError(f"budget_elements must be a positive int, got {budget_elements!r}")
    nblocks = energy.numel()
    # At most budget // block + 1 blocks can fit (only the last block may be short), so only
    # that prefix of the order (descending, ties to the lower index) is needed: a selection,
    # then a sort of the few above its threshold, instead of sorting every block.
    m = min(nblocks, budget_elements // block + 1)
    if m < nblocks:
        threshold = torch.kthvalue(energy, nblocks - m + 1).values  # the m-th largest
        above = (energy > threshold).nonzero().squeeze(1)
        above = above[torch.sort(energy[above], descending=True, stable=True).indices]
        tied = (energy == threshold).nonzero().squeeze(1)[:m - above.numel()]
        order = torch.cat([above, tied])
    else:
        order = torch.sort(energy, descending=True, stable=True).indices
    sizes = torch.where(order == nblocks - 1, size - (nblocks - 1) * block, block)
    fitting = int((sizes.cumsum(0) <= budget_elements).sum())
    keep_count = min(max(fitting, 1), int((energy > 0).sum()))
    kept = torch.zeros(nblocks, dtype=torch.bool)
    kept[order[:keep_count]] = True
    return kept


def keep_blocks(x: torch.Tensor, kept: torch.Tensor, block: int) -> torch.Tensor:
    """x with every block whose `kept` is False zeroed (values copied as stored; x unchanged)."""
    blocks, d, _ = _blocks(x, block)
    return torch.where(kept.unsqueeze(1), blocks, blocks.new_zeros(())).reshape(-1)[:d].view_as(x)


def block_topk(x: torch.Tensor, block: int, budget_elements: int,
               energy: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Keep whole blocks by descending L2 norm within an element budget: (sparsified x, kept mask).

    1. Norms are compared as float64 sums of squares (exact order; no sqrt rounding ties);
       `energy`, when given, is those sums (`block_energies`), else they are computed here.
    2. Order blocks by norm descending, ties to the lower block index.
    3. Keep the longest prefix of that order whose element count (the last block may be
       short) is <= budget_elements, but at least one block, even if it exceeds the budget.
    4. All-zero blocks are never kept: they cost bytes and carry nothing (so an all-zero x
       keeps no block).
    The rest is zeroed; kept values are copied as stored. `x` is not modified.
    """
    if energy is None:
        energy = block_energies(x, [block])[block]
    kept = block_keep(energy, block, x.numel(), budget_elements)
    return keep_blocks(x, kept, block), kept


def blocks_to_indices(mask: torch.Tensor, block: int, size: int) -> torch.Tensor:
    """Element indices (int64 ascending) covered by the True blocks of `mask` in a `size` vector."""
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise ValueError(f"block must be a positive int element count, got {block!r}")
    if mask.dtype != torch.bool or mask.dim() != 1 or mask.numel() != -(-size // block):
        raise ValueError(f"mask must be a 1-D bool tensor of {-(-size // block)} blocks for {size} "
                         f"elements in blocks of {block}")
    return mask.repeat_interleave(block)[:size].nonzero().squeeze(1)
