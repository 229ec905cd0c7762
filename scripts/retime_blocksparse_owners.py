"""The block-sparse owners' step 2 of runs logged before it was timed, re-timed here (issue #23).

    flock /run/syncbed/lock .venv/bin/python scripts/retime_blocksparse_owners.py \
        docs/results/dfs-resnet18-digits/0[123567]-*

Runs in docs/results/dfs-resnet18-digits/ predate `_blocksparse.AGGREGATE` (`aggregate_seconds`),
so their logs hold no owner time and `syncbed project --measured` charges none. This estimates
it: for 15 iterations spread over each run, every owner's pushes are rebuilt at their logged
sizes (the iteration's block size; each worker's blocks from its logged push bytes, the owner's
own from its zero-block fraction and blocks sent; random block positions drawn from a pool the
size of the logged union, random values), and `_blocksparse.aggregate` (decode, sum, union,
encode the pull) is timed on them, best of 3, one torch thread, on this machine with nothing
else measuring. Prints per run the mean over the sampled syncs of the slowest owner's seconds
(what the sync waits for) and of the owners' mean. An estimate on an idle core, not a logged
time: in the emulation 4 ranks and ovs-vswitchd share 2 cores. Not a result file.
"""
import importlib
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from emulation.simulator.core import logged_iterations
from workloads import blocks
from workloads.algorithms import _blocksparse as bs
from workloads.algorithms import base
from workloads.eventlog import read_logs


def owner_inputs(plan, it_logged, obs_by_rank, s, owner, block, rng):
    d, parts, n = plan["elements"], len(plan["owners"]), plan["workers"]
    (b0, b1), (start, end) = blocks.shard_blocks(d, block, parts)[s], blocks.shard_ranges(d, block, parts)[s]
    nb = b1 - b0
    push = base.get(plan["algorithm"]).logged_steps(plan, it_logged)[0]
    up_meta = plan["meta_words"][0]
    counts = {}
    for f in push:
        if f.dst == owner:
            words = (f.bytes - 8) // 4 if f.bytes > 8 else 0
            rest = max(0, words - up_meta)
            counts[f.src] = min(nb, -(-rest // (block + 1)))
    ob = obs_by_rank[owner]
    nonzero = round((1 - ob["zero_block_fraction"]) * blocks.block_count(d, block))
    counts[owner] = max(0, min(nb, nonzero - ob.get("blocks_up_sent", 0)))
    union = max(min(nb, ob.get("union_blocks", max(counts.values()))), max(counts.values()))
    pool = torch.randperm(nb, generator=rng)[:union]
    words = []
    for w in range(n):
        k = min(counts.get(w, 0), union)
        mask = torch.zeros(nb, dtype=torch.bool)
        mask[pool[torch.randperm(union, generator=rng)[:k]]] = True
        seg = torch.randn(end - start, generator=rng)
        meta = [block] + [k] * (up_meta - 1) if up_meta else []
        words.append(blocks.encode(meta, seg, mask, block, start))
    return words


def main(run_dir, sample=15, reps=3):
    run_dir = Path(run_dir)
    job = json.loads((run_dir / "job.json").read_text())
    plan = job["plan"]
    mod = importlib.import_module(f"workloads.algorithms.{plan['algorithm']}")
    rules = mod.rules(plan) if hasattr(mod, "rules") else bs.fixed(plan)
    logs = read_logs(run_dir / "workers")[0]
    syncs = sum(1 for e in logs[0] if e.get("event") == "iter")
    its = logged_iterations(run_dir / "workers", syncs)
    obs = {}
    for r, evs in logs.items():
        for e in evs:
            if e.get("event") == "iter":
                obs.setdefault(e["iter"], {})[r] = e.get("observed") or {}
    rng = torch.Generator().manual_seed(0)
    picks = sorted(set(round(i * (syncs - 1) / (sample - 1)) for i in range(sample)))
    per_sync_max, per_sync_mean = [], []
    for i in picks:
        block = obs[i][0]["block"]
        times = []
        for s, owner in enumerate(plan["owners"]):
            words = owner_inputs(plan, its[i], obs[i], s, owner, block, rng)
            best = []
            for _ in range(reps):
                t0 = time.perf_counter()
                bs.aggregate(plan, rules, s, block, words)
                best.append(time.perf_counter() - t0)
            times.append(min(best))
        per_sync_max.append(max(times))
        per_sync_mean.append(statistics.fmean(times))
    print(json.dumps({"run": str(run_dir), "algorithm": job.get("algo_spec") or plan["algorithm"],
                      "syncs_sampled": len(picks), "owner_max_s": statistics.fmean(per_sync_max),
                      "owner_mean_s": statistics.fmean(per_sync_mean)}))


if __name__ == "__main__":
    torch.set_num_threads(1)
    for d in sys.argv[1:]:
        main(d)
