"""`gloo`: torch's own Gloo all_reduce of the whole flat gradient on NIC 0 (the baseline).

Traffic model, read from the Gloo sources torch 2.13 builds (third_party/gloo,
gloo/allreduce.cc `ring()`, via ProcessGroupGloo's AsyncAllreduceWork, which sets no
algorithm, so UNSPECIFIED -> ring; this CPU build has no shared-memory path):
1. The buffer of B = 4E bytes is cut into S = roundUp(max(ceil(B / 1 MiB), 2N), N) segments of
   s = roundUp(ceil(B / S), 4) bytes (the last ones short or empty); rank c's chunk is segments
   c*S/N .. (c+1)*S/N - 1.
2. Reduce-scatter then allgather, each rank sending to its PREDECESSOR (rank - 1 mod N) and
   receiving from its successor: in reduce-scatter it sends every chunk but its own, in the
   allgather every chunk but that of rank - 1.
So rank r sends 2B - chunk(r) - chunk(r - 1) bytes to rank r - 1: 2(N-1)B/N when the segments
divide evenly, and 2(N-1)B summed over ranks always (checked against /proc/self/io in
tests/parallel). Gloo adds a small header per segment message, which is not payload here.
"""
from __future__ import annotations

import time

from workloads.algorithms.base import DTYPE_BYTES, Algorithm, Flow
from workloads.gradients import as_flat

MAX_SEGMENT_BYTES = 1024 * 1024  # gloo AllreduceOptionsImpl::kMaxSegmentSize


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def segments(total_bytes: int, ranks: int) -> tuple[int, int]:
    """(number of segments, bytes per segment) Gloo's ring all-reduce uses for this buffer."""
    count = _round_up(max(-(-total_bytes // MAX_SEGMENT_BYTES), 2 * ranks), ranks)
    return count, _round_up(-(-total_bytes // count), DTYPE_BYTES)


def chunk_bytes(total_bytes: int, ranks: int) -> list[int]:
    """Bytes of each rank's chunk in Gloo's ring (segments clipped to the buffer)."""
    count, seg = segments(total_bytes, ranks)
    per = count // ranks
    return [sum(max(0, min(seg, total_bytes - s * seg)) for s in range(c * per, (c + 1) * per))
            for c in range(ranks)]


def plan(ctx) -> dict:
    count, seg = segments(ctx.gradient_bytes, ctx.workers)
    return {"algorithm": "gloo", "workers": ctx.workers, "world": ctx.world, "elements": ctx.elements,
            "nic": 0, "segments": count, "segment_bytes": seg}


def traffic(plan: dict) -> list[Flow]:
    n, total = plan["workers"], plan["elements"] * DTYPE_BYTES
    if n == 1:
        return []
    chunk = chunk_bytes(total, n)
    # one message per segment per step: 2(N-1) steps of S/N segments
    msgs = 2 * (n - 1) * plan["segments"] // n
    return [Flow(r, (r - 1) % n, plan["nic"], 2 * total - chunk[r] - chunk[(r - 1) % n], msgs) for r in range(n)]


def execute(plan: dict, comm, grads, state=None):
    flat = as_flat(grads)
    if comm.world > 1:
        t0 = time.time()
        comm.nic(plan["nic"]).allreduce([flat]).wait()
        comm.record(tree=0, stage=0, nic=plan["nic"], phase="allreduce", t0=t0, t1=time.time(),
                    bytes=sum(f.bytes for f in traffic(plan) if f.src == comm.rank))
    return flat


ALGORITHM = Algorithm(
    name="gloo",
    summary="torch.distributed Gloo all_reduce (ring to the predecessor) on NIC 0",
    plan=plan, traffic=traffic, execute=execute,
    rounds=lambda plan: [2 * (plan["workers"] - 1)],  # its ring: reduce-scatter then all-gather
)
