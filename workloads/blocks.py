"""Block-sparse parameter server, the codec: shard layout and wire format.

Pure torch and integers, no processes (docs/STYLE.md: plan in pure functions, execute elsewhere).
`workloads/algorithms/_blocksparse.py` executes what this module describes, for `omnireduce`,
`dfs` and `topk_ps`; the tests check these functions with no process running. DFS's block-size
choice, which prices this format, is a planner: workloads/planners/blocks.py.

Layout. Blocks of `block` elements lie on one grid over the flat gradient (block j is
[j*block, (j+1)*block), the last one may be short). The aggregators own shards of WHOLE
blocks: `shard_blocks` splits the block count near-equally over the owners (`base.split`),
so a block never straddles two owners and only the gradient's last block is ever short.
(OmniReduce assigns blocks to aggregators the same way; `ps` splits elements instead.)
DFS changes the block size per iteration, so its layout is a function of the block size.

Wire format of one message (`encode`/`decode`), an int32 tensor sent with `Comm.send_var`
(which adds its 8-byte length header, and a second Gloo message when the data is not empty):
    [meta words...] [offset of each sent block...] [float32 bits of the blocks' elements...]
- meta: what the algorithm piggybacks (none for omnireduce and topk_ps; DFS: see dfs.py);
- one int32 per block, the element offset of the block's first element, ascending. This
  is OmniReduce's per-block "offset of the next non-zero block" (a uint32 after each block
  in sands-lab/omnireduce `post_send_client`: `block_size*num*element_size +
  num*sizeof(uint32_t)` bytes) shifted by one: the word OmniReduce attaches to block i-1 is
  block i's offset. The first offset travels explicitly and the final "no next block"
  sentinel is implied by the message length, so the count is the same: HEADER_BYTES = 4
  per block;
- the blocks' values, concatenated, bit-cast so that they round-trip exactly.
The number of blocks n is not sent: with R words after the meta, R = n(b+1) - (b - r) where
r in 1..b is the last block's length, so n = ceil(R / (b + 1)). At block = 1 the message is
exactly `sparse.SparseSet.pack` (k indices, then k value bits): Top-k on the PS (`topk_ps`)
is this format with one-element blocks.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from workloads.algorithms.base import DTYPE_BYTES, split

HEADER_BYTES = 4  # per block: its int32 element offset (OmniReduce's next-offset word)
VAR_HEADER_BYTES = 8  # Comm.send_var's length header (one int64), a Gloo message of its own


def _positive_int(what: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be a positive int, got {value!r}")
    return value


def block_count(elements: int, block: int) -> int:
    """Blocks of `block` elements covering `elements` (the last one may be short)."""
    return -(-_positive_int("elements", elements) // _positive_int("block", block))


def shard_blocks(elements: int, block: int, parts: int) -> list[tuple[int, int]]:
    """[first, end) block indices of each owner's shard: whole blocks, near-equal counts,
    the first shards one block larger (`base.split`); empty when there are fewer blocks than owners."""
    return split(block_count(elements, block), _positive_int("parts", parts))


def shard_ranges(elements: int, block: int, parts: int) -> list[tuple[int, int]]:
    """[start, end) element range of each shard of `shard_blocks` (the last block may be short)."""
    return [(min(bs * block, elements), min(be * block, elements))
            for bs, be in shard_blocks(elements, block, parts)]


# --- wire format ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Message:
    """One decoded message: its meta words, the sent blocks' offsets and their elements."""

    meta: list  # ints
    offsets: torch.Tensor  # int64, ascending: first element of each block
    indices: torch.Tensor  # int64, ascending: every element the blocks cover
    values: torch.Tensor  # float32, one per index

    @property
    def blocks(self) -> int:
        return self.offsets.numel()


def encode(meta, segment: torch.Tensor, mask: torch.Tensor, block: int, start: int) -> torch.Tensor:
    """The int32 words of the blocks of `segment` (elements [start, start + len)) that `mask` marks.

    `start` must lie on the block grid (unless the segment is empty: a shard of no block);
    `mask` has one bool per block of the segment."""
    _positive_int("block", block)
    if start % block and segment.numel():
        raise ValueError(f"a segment must start on the block grid: start {start} is not a multiple of {block}")
    if segment.dtype != torch.float32 or segment.dim() != 1:
        raise ValueError(f"segment must be a 1-D float32 tensor, got {segment.dtype} {tuple(segment.shape)}")
    nblocks = -(-segment.numel() // block)
    if mask.dtype != torch.bool or mask.shape != (nblocks,):
        raise ValueError(f"mask must be a bool tensor of {nblocks} blocks, got {mask.dtype} {tuple(mask.shape)}")
    offsets = start + mask.nonzero().squeeze(1) * block
    if offsets.numel() and int(offsets[-1]) > 2**31 - 1:
        raise ValueError("block offsets do not fit the int32 wire format")
    values = segment[mask.repeat_interleave(block)[:segment.numel()]].contiguous()
    return torch.cat([torch.tensor([int(m) for m in meta], dtype=torch.int32), offsets.to(torch.int32),
                      values.view(torch.int32)])


def decode(words: torch.Tensor, meta_words: int, block: int, start: int, end: int) -> Message:
    """Inverse of `encode` for a shard [start, end) on the grid of `block`; validates the message."""
    _positive_int("block", block)
    if words.dtype != torch.int32 or words.dim() != 1 or words.numel() < meta_words:
        raise ValueError(f"a message must be a 1-D int32 tensor of at least {meta_words} meta words, got "
                         f"{words.dtype} {tuple(words.shape)}")
    meta, rest = words[:meta_words].tolist(), words[meta_words:]
    n = -(-rest.numel() // (block + 1))
    offsets = rest[:n].to(torch.int64)
    values = rest[n:].clone().view(torch.float32)
    if n:
        if int(offsets[0]) < start or int(offsets[-1]) >= end:
            raise ValueError(f"block offsets {int(offsets[0])}..{int(offsets[-1])} lie outside the shard "
                             f"[{start}, {end})")
        if bool(((offsets - start) % block).any()) or (n > 1 and not bool((offsets[1:] > offsets[:-1]).all())):
            raise ValueError(f"block offsets must be ascending multiples of the block size {block}")
    lengths = (end - offsets).clamp(max=block)
    if int(lengths.sum()) != values.numel():
        raise ValueError(f"a message of {n} blocks must carry {int(lengths.sum())} values, it carries "
                         f"{values.numel()}")
    first = (lengths.cumsum(0) - lengths).repeat_interleave(lengths)
    indices = offsets.repeat_interleave(lengths) + (torch.arange(values.numel()) - first)
    return Message(meta, offsets, indices, values)


def message_bytes(words: int) -> tuple[int, int]:
    """(payload bytes, Gloo messages) of one `Comm.send_var` of `words` int32 words."""
    return VAR_HEADER_BYTES + DTYPE_BYTES * words, 1 + (words > 0)


def dense_words(meta_words: int, start: int, end: int, block: int) -> int:
    """Words of a message carrying every block of the shard [start, end): the dense worst case."""
    return meta_words + -(-(end - start) // block) + (end - start)
