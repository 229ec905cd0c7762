"""One rank of a DDP job (`"ddp": true` in job.json): a user's DistributedDataParallel training
with a syncbed hook, run inside a Mininet host and logged like any syncbed worker.

workloads/worker.py hands a `Job` (workloads/job.py) with `ddp` true to `run_ddp`. It trains `train_model`
(`resnet20` or `lenet5`) on scikit-learn's digits (`training.DigitsTrainer`'s data, sharding and
initialisation) as a plain DDP script would: `DistributedDataParallel(net)` with a
`ProcessGroup` over the rank's NIC 0 Gloo group (`ddp_hooks.process_group`), the algorithm as
its communication hook (`ddp_hooks.hook(algo_spec, comm=...)`, the worker's own `Comm`, so
every byte leaves through the host's NIC 0 and is counted and logged), forward, backward,
plain SGD (`lr`, `lr_milestones`, `lr_gamma`). `bucket_mb` is DDP's `bucket_cap_mb`
(default 25, DDP's own); `ddp_overlap` (default true) runs the hook on a communication thread
so backward keeps computing while buckets are sent, as DDP's all-reduce does.

What stays out of the measurement: DDP's construction (a parameter check and a broadcast of
rank 0's parameters over the group) and two priming steps (DDP rebuilds its buckets after the
first step and broadcasts the new layout from rank 0 in the second), all before the rank logs
`connected`, which the runner waits for before it starts the capture. The priming steps run
in eval mode (BatchNorm's statistics untouched), apply nothing, and the hook's state is reset
after them. `broadcast_buffers=False`: no per-step buffer broadcast (each rank keeps its
BatchNorm statistics, as syncbed's training mode does), so every captured byte is the hook's.

Per iteration the `iter` event is the worker's: `t_start` (forward begins), `t_ready` (DDP
handed over the last bucket: the whole gradient exists), `t_done` (backward returned: every
bucket synchronized), `sent` (what this rank handed to `Comm.send`), and in `observed` the
buckets' element counts (`buckets`) and whether the bytes each bucket sent equal the
algorithm's closed form for its size (`closed_form`: true; data-dependent algorithms: never
more). The analysis lays `ddp_hooks.closed_form` over the logged buckets onto the routes and
checks the capture against it (data-dependent algorithms: the logged sends). The oracle: each
rank keeps one `DigitsTrainer` replica per worker (as the training mode does), computes every
worker's gradient for the first `check_iters` iterations (null: all), and checks the hook's
averaged gradient, bucket by bucket, against `ddp_hooks.BucketOracle` (the algorithm's
reference with every rank's residual per parameter); replicas copy the DDP model's parameters
after each step, so they stay identical.
"""
from __future__ import annotations

import hashlib
import time

from workloads.eventlog import EventLog, sent_since
from workloads.job import Job


def run_ddp(job: Job, rank: int, nics: list, log: EventLog) -> None:
    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    from workloads import ddp_hooks
    from workloads.algorithms import base
    from workloads.comm import Comm
    from workloads.training import DataParallelDigits, DigitsTrainer
    from workloads.worker import crash_here, wait_for_go

    torch.set_num_threads(1)
    workers, world = job.workers, job.world  # equal: Job.check refuses servers with ddp
    if not 0 <= rank < world:
        raise ValueError(f"rank {rank} is outside the job's world 0..{world - 1}")
    spec = job.spec
    algo = base.get(job.algorithm)
    model_name = job.train_model
    seed, batch = job.seed, job.batch
    lr0, gamma = job.lr, job.lr_gamma
    milestones = list(job.lr_milestones)
    check_iters = job.check_iters
    warmup, iters = job.warmup, job.iters
    timeout = job.timeout_s

    own = DigitsTrainer(rank, workers, seed, batch, model_name)
    params = list(own._params)  # forward order: the layout of every gradient below
    position = {id(p): i for i, p in enumerate(params)}
    offsets, total = [], 0
    for p in params:
        offsets.append(total)
        total += p.numel()
    if total != job.elements:
        raise ValueError(f"ddp: the job's layers ({job.elements} elements, model {job.model.spec!r}) are "
                         f"not train_model {model_name!r} ({total}); ddp needs model {model_name} unscaled")

    comm = Comm(rank, world, job.store, nics, timeout_s=timeout, sink=log.write)
    model = DDP(own.net, process_group=ddp_hooks.process_group(comm), broadcast_buffers=False,
                bucket_cap_mb=job.bucket_mb)
    state, hook = ddp_hooks.hook(spec, comm=comm, overlap=job.ddp_overlap)
    model.register_comm_hook(state, hook)

    def step_input(trainer_, iteration):
        index = trainer_.batch_indices(iteration)
        return trainer_._input(trainer_.x_train[index]), trainer_.y_train[index]

    # Two priming steps before `connected` (module doc): DDP's bucket rebuild stays out of the capture.
    comm.sink = lambda event: None
    own.net.eval()
    for _ in range(2):
        x, y = step_input(own, 0)
        model.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
    model.zero_grad(set_to_none=True)
    state.reset()
    comm.sink = log.write

    replicas = [DigitsTrainer(r, workers, seed, batch, model_name) for r in range(workers)] \
        if check_iters is None or check_iters > 0 else []
    oracle = ddp_hooks.BucketOracle(spec, world)
    log.connected()
    wait_for_go(job.go_file, timeout)

    total_iters = warmup + iters
    for it in range(total_iters):
        crash_here(job, rank, it, log)
        comm.iteration = it
        state.step, state.ready_at = it, None
        checked = bool(replicas) and (check_iters is None or it < check_iters)
        inputs = [rep.gradients(it) for rep in replicas] if checked else None
        sent_before, msgs_before = dict(comm.sent), dict(comm.messages)
        comm.store_barrier(f"iter{it}")
        own.net.train()
        t_start = time.time()
        model.zero_grad(set_to_none=True)
        x, y = step_input(own, it)
        F.cross_entropy(model(x), y).backward()  # the hook synchronizes every bucket in here
        t_done = time.time()
        t_ready = state.ready_at or t_done
        records = list(state.log)
        state.log.clear()
        result = torch.cat([p.grad.reshape(-1) for p in params]).to(torch.float32)
        closed, sizes = True, []
        for rec in records:
            sizes.append(rec["elements"])
            want = {(f.dst, f.nic): f.bytes for f in state.traffic(rec["elements"]) if f.src == rank}
            if algo.data_dependent:
                closed &= set(rec["sent"]) <= set(want) and all(b <= want[k] for k, b in rec["sent"].items())
            else:
                closed &= rec["sent"] == want
        observed = {"buckets": sizes, "closed_form": bool(closed), "ddp": True, **_observed_sums(records, algo.compute)}
        if checked:
            expected = torch.zeros(total, dtype=torch.float32)
            for rec in records:
                layout = [(position[key], at, numel) for key, at, numel in rec["layout"]]
                bucket_inputs = []
                for grad in inputs:
                    flat = torch.zeros(rec["elements"], dtype=torch.float32)
                    for i, at, numel in layout:
                        flat[at:at + numel] = grad[offsets[i]:offsets[i] + numel]
                    bucket_inputs.append(flat)
                want = oracle.expected(rec["bucket"], layout, bucket_inputs)
                for i, at, numel in layout:
                    expected[offsets[i]:offsets[i] + numel] = want[at:at + numel]
            ok, err = DataParallelDigits.matches(result, expected)
            verdict = {"checked": True, "correct": ok, "max_abs_err": err}
        else:
            verdict = {"checked": False}
        log.iteration(it, it < warmup, t_start, t_ready, t_done,
                      sent_since(comm.sent, comm.messages, sent_before, msgs_before), observed, **verdict)
        with torch.no_grad():  # plain SGD with the averaged gradient, every rank alike
            lr = lr0 * gamma ** sum(m <= it for m in milestones)  # MultiStepLR, as the training mode
            for p in params:
                p.sub_(p.grad, alpha=lr)
            for rep in replicas:
                for a, b in zip(rep._params, params):
                    a.copy_(b)
        if rank == 0 and job.evaluates_after(it):
            loss, acc = own.evaluate()
            log.train(it, loss, acc)
        if rank == 0:
            print(f"iter {it + 1}/{total_iters} rank 0 synced in {t_done - t_ready:.3f} s", flush=True)
    state.close()
    digest = hashlib.sha1(own.parameters_flat().numpy().tobytes()).hexdigest()
    log.trained(total_iters, digest)
    comm.store_barrier("end")


def _observed_sums(records: list, compute) -> dict:
    """The CPU durations the algorithm declares (`Algorithm.compute`: a compressor's seconds),
    summed over the iteration's buckets."""
    out: dict = {}
    for rec in records:
        for key in (c.key for c in compute):
            if isinstance(rec.get("observed", {}).get(key), (int, float)):
                out[key] = out.get(key, 0.0) + float(rec["observed"][key])
    return out
