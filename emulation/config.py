"""Experiment configuration: YAML file and/or command-line options, validated up front.

Everything that can be wrong with the input is found here, before a process starts:
unknown topology or algorithm (the error lists the valid ones), bad BCube/Fat-Tree
parameters, more workers than hosts, bandwidth out of [0.001, 1000] Mbit/s, an algorithm
that does not run on a topology. `validate()` also builds every run's plan, so a
planner's own refusal surfaces here too.

An experiment is a list of topologies, each with the algorithms to run on it:
    topologies: ["fattree,k=4", "bcube,n=4,k=2"]     # every algorithm on each
    algorithms: [gloo, ring, ps]
or, per topology:
    topologies: {"bcube,n=3,k=2": [bml, ps], "fattree,k=4": [ps]}
An algorithm is a spec with options, `topk,density=0.01` (workloads/algorithms/base.py,
`parse_algos`); the same algorithm may appear twice with other options. `options:
{name: {key: value}}` gives defaults for every spec of that name; a spec's own win.

The same file format drives `syncbed train` (localhost training, emulation/trainer.py):
`load(path, defaults=TRAIN_DEFAULTS)` then `validate_local(cfg)`, which checks what training
reads (the training keys below, `workers` one count or a list of them) and plans one
`LocalRun` per (worker count, algorithm); the network's keys (topologies, bw, ecmp, ...)
mean nothing on `lo` and are not read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

from emulation import background, switch_priority
from topologies import spec as topo_spec
from topologies.placement import PLACEMENTS, place, place_on_servers
from workloads.algorithms import base

# The TCP congestion control of every emulated host (config `tcp_cc`). A new network namespace
# inherits the machine's default, which is the kernel's build choice: BBR on this machine (and, by
# our reading, for the earlier folders of docs/results, which recorded none), CUBIC on Debian's and
# Ubuntu's kernels. Pinned so a result does not depend on which machine ran it; CUBIC, Linux's
# default, is what a Gloo cluster runs unless told otherwise (docs/FIDELITY.md #22).
TCP_CC_DEFAULT = "cubic"
# The hosts' minimum TCP retransmission timeout (config `tcp_rto_min_ms`, the namespace's
# net.ipv4.tcp_rto_min_us, Linux 6.11 and later). None: the kernel's, 200 ms. A knob for
# diagnosis: TCP's timers do not scale with the emulated link rates, and at a few Mbit/s a
# queue of converging flows can outlast them (docs/FIDELITY.md #23).
TCP_RTO_MIN_MS = (1, 120000)


@dataclass
class RunConfig:
    name: str = "experiment"
    topologies: object = field(default_factory=lambda: ["fattree,k=4", "bcube,n=4,k=2"])
    algorithms: list = field(default_factory=lambda: list(base.DEFAULT_ALGORITHMS))
    workers: int | None = None  # None: every host of the topology (syncbed train: a count or a list of counts)
    servers: int = 0  # dedicated PS hosts (ps only)
    placement: str = "ordered"  # ranks on hosts: in host order, or spread over pods/edges
    model: object = "synthetic,mb=4"  # one spec or a list of specs (each run once per model)
    dilation: float = 1.0  # compute times x dilation (time dilation, see docs/DESIGN.md)
    size_scale: float = 1.0  # gradient sizes / size_scale (time dilation)
    real_link_mbps: float | None = None  # the real setting the run stands for (sets dilation)
    # with real_link_mbps: the real setting's compute per iteration, one number or {model: s};
    # each model's profile is scaled to it before the dilation (else this CPU's profile is kept)
    real_backward_s: object = None
    # with real_link_mbps: the real setting's compressor cost per iteration (a rank's top-k
    # selection with its error feedback), one number or {model: s}; the `sparsify` compute of
    # a sparse algorithm is charged that (time-dilated) instead of this CPU's time
    real_compress_s: object = None
    bw: float = 20.0  # Mbit/s on every link class not in link_bw
    ecmp: str = "hash"  # Fat-Tree uplink choice: per-pair hash, or Al-Fares two-level (balanced)
    link_bw: dict = field(default_factory=dict)
    iters: int = 5
    warmup: int = 1
    seed: int = 0
    timeout: float = 300.0  # seconds per (topology, algorithm) run, workers included
    calibrate: bool = True
    capture: bool = True
    reuse_workers: bool = True  # one worker process per rank for all runs on the same hosts (workers.Pool)
    analyse_in_background: bool = True  # a run's analysis overlaps the next run's measurement (nice 19)
    mtu: int = 9000
    tcp_cc: str = TCP_CC_DEFAULT  # TCP congestion control of every emulated host
    tcp_rto_min_ms: int | None = None  # every emulated host's minimum RTO (None: the kernel's, 200 ms)
    # ovs-vswitchd's threads under SCHED_RR for the iterations (emulation/switch_priority.py)
    switch_priority: str = "normal"
    options: dict = field(default_factory=dict)  # algorithm name -> its options
    out: str = "results"
    crash: dict | None = None  # fault injection: {"rank": r, "iter": i}
    link_down: dict | None = None  # fault injection: {"link": "h00-eth1", "after_s": 2}
    description: str = ""
    background: object = None  # concurrent jobs: flows SRC:DST[:MBPS] between non-worker hosts (emulation/background.py)
    sparsity: dict | None = None  # synthetic gradients with zero blocks: {block, zero_blocks, zero_entries}
    # the real cluster a run stands for, by its all-reduce cost model (MG-WFBP's a, b): the
    # runner measures the emulated a, b and scales sizes and compute to it (linkmodel.stand_in)
    real_setting: dict | None = None  # {name, alpha (s), beta (s/byte), backward_s (optional, s)}
    # several servers (issue #22, emulation/cluster.py): [ssh targets] or {servers, placement,
    # capacity, ssh_config}; the first server is this machine
    cluster: object = None
    train: bool = False  # real training on scikit-learn's digits: model a key of training.TRAIN_MODELS
    lr: float = 0.1
    batch: int = 32  # per worker, in training mode
    check_iters: int | None = None  # training: iterations checked against the oracle (None: all)
    eval_every: int = 1  # training: rank 0 evaluates the held-out split every eval_every iterations
    lr_milestones: list = field(default_factory=list)  # training: MultiStepLR, lr x lr_gamma at each iteration here
    lr_gamma: float = 0.1
    target_accuracy: float | None = None  # training: report the time and iterations to reach it
    # a user's DistributedDataParallel script with the algorithm as its communication hook
    # (workloads/ddp_hooks.py, workloads/ddp_worker.py); needs train: true
    ddp: bool = False
    bucket_mb: float = 25.0  # ddp: DDP's bucket_cap_mb (25: DDP's default)

    def models(self) -> list[str]:
        return [self.model] if isinstance(self.model, str) else list(self.model)

    def time_dilation(self) -> float:
        """One factor for compute and communication (docs/DESIGN.md, fidelity).

        With gradients divided by `size_scale` on links of `bw` Mbit/s, a sync takes
        real_link_mbps / (size_scale * bw) times as long as the full model would on the
        real links; compute times are multiplied by the same factor, so the
        compute/communication ratio is that of the real setting."""
        if self.real_link_mbps:
            return float(self.real_link_mbps) / (self.size_scale * self.bw)
        return float(self.dilation)

    def matrix(self) -> list[tuple[str, list[tuple[str, dict]]]]:
        """[(topology spec, [(algorithm name, raw options), ...])]; options of `options:` under a spec's own."""
        if isinstance(self.topologies, dict):
            pairs = [(t, list(a) if isinstance(a, (list, tuple)) else [a]) for t, a in self.topologies.items()]
        else:
            pairs = [(t, list(self.algorithms)) for t in self.topologies]
        return [(t, [(name, {**dict(self.options.get(name) or {}), **opts}) for name, opts in base.parse_algos(a)]
                     if a else []) for t, a in pairs]


# `syncbed train` (emulation/trainer.py): the values a training file leaves out (warmup 0: every
# iteration trains and is logged; a short check, a sparse held-out curve)
TRAIN_DEFAULTS = {"model": "resnet20", "workers": [4], "algorithms": list(base.DEFAULT_TRAIN_ALGORITHMS),
                  "iters": 100, "warmup": 0, "batch": 8, "check_iters": 3, "eval_every": 10, "timeout": 900.0,
                  "train": True}


def load(path: str | Path | None = None, defaults: dict | None = None, **overrides) -> RunConfig:
    """Read a YAML experiment file (optional) and apply non-None overrides on top; `defaults`
    (e.g. TRAIN_DEFAULTS) replace RunConfig's own for the keys neither gives."""
    data: dict = dict(defaults or {})
    if path:
        p = Path(path)
        if not p.is_file():
            raise ValueError(f"experiment file {p} does not exist")
        try:
            data = yaml.safe_load(p.read_text()) or {}
        except yaml.YAMLError as e:
            raise ValueError(f"experiment file {p} is not valid YAML: {str(e).splitlines()[0]}") from None
        if not isinstance(data, dict):
            raise ValueError(f"experiment file {p} must be a mapping of options")
        data = {**dict(defaults or {}), **data}
        data.setdefault("name", p.stem)
    data.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in fields(RunConfig)}
    unknown = sorted(set(data) - known)  # overrides too: a TypeError from RunConfig(**data) otherwise
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
    cfg = RunConfig(**data)
    if isinstance(cfg.topologies, str):
        cfg.topologies = [cfg.topologies]
    if isinstance(cfg.algorithms, str):  # "ring,ps" or "topk,density=0.01": one spec each
        cfg.algorithms = [base.spec_of(n, o) for n, o in base.parse_algos(cfg.algorithms)]
    if cfg.lr_milestones is None or isinstance(cfg.lr_milestones, int):  # one milestone, or none
        cfg.lr_milestones = [] if cfg.lr_milestones is None else [cfg.lr_milestones]
    return cfg


@dataclass
class PlannedRun:
    """One (topology, algorithm) run with everything decided: hosts, plan, traffic."""

    index: int
    topology: object  # Topology
    algorithm: str  # registered name
    hosts: list  # rank -> host name (workers first, then servers)
    workers: int
    servers: int
    plan: dict
    model: object  # workloads.models.layers.Model (after scaling)
    spec: str = ""  # the algorithm with its options, canonical (`topk,density=0.01`)
    options: dict = field(default_factory=dict)  # the raw options the spec gave
    size_scale: float = 1.0  # the model's sizes were divided by this (time dilation)
    link: object = None  # the measured LinkModel once the runner has it (re-planning)
    background: list = field(default_factory=list)  # background.parse flows, started around the workers
    startup_charge_s: float = 0.0  # waited before each collective (real_setting.dilation_x, replan.py)

    @property
    def label(self) -> str:
        return f"{self.topology.name} {self.spec or self.algorithm} {self.model.spec}"

    def context(self):
        """The planner's input for this run (the runner re-plans with measured inputs)."""
        from workloads.algorithms import base as _base  # noqa: PLC0415

        all_hosts = self.topology.hosts()
        return _base.PlanContext(workers=self.workers, servers=self.servers,
                                 layer_sizes=tuple(self.model.layer_sizes), layers=tuple(
                                     (l.name, l.numel, l.backward_s) for l in self.model.layers),
                                 nics=len(self.topology.host_nics(all_hosts[0])), topology=self.topology,
                                 hosts=tuple(self.hosts), options=dict(self.options),
                                 size_scale=self.size_scale, link=self.link,
                                 background=tuple(dict(f) for f in self.background),
                                 startup_charge_s=self.startup_charge_s)


def validate(cfg: RunConfig) -> list[PlannedRun]:
    """Check everything and return the planned runs; raise ValueError with one line."""
    _check_numbers(cfg)
    check_real_setting(cfg.real_setting)
    if cfg.real_setting and (cfg.size_scale != 1.0 or cfg.real_link_mbps or cfg.real_backward_s):
        raise ValueError("real_setting chooses the size scale and dilation from the measured link: "
                         "drop size_scale, real_link_mbps and real_backward_s (give backward_s in real_setting)")
    if cfg.real_backward_s is not None:
        if not cfg.real_link_mbps:
            raise ValueError("real_backward_s needs real_link_mbps (the real network its compute runs beside)")
        check_seconds("real_backward_s", cfg.real_backward_s)
    if cfg.real_compress_s is not None:
        if not cfg.real_link_mbps:
            raise ValueError("real_compress_s needs real_link_mbps (the real setting whose dilation its cost is "
                             "charged under)")
        check_seconds("real_compress_s", cfg.real_compress_s)
    from workloads.gradients import check_sparsity

    check_sparsity(cfg.sparsity)
    flows = background.parse(cfg.background)
    cluster = _check_cluster(cfg)
    if cfg.placement not in PLACEMENTS:
        raise ValueError(f"placement {cfg.placement!r} is unknown; valid: {', '.join(PLACEMENTS)}")
    for spec, algos in cfg.matrix():
        topo_spec.parse(spec)
        if not algos:
            raise ValueError(f"no algorithm given for topology {spec}")
    for a in cfg.options:
        base.get(a)
    if dilation_x(cfg.real_setting) > 1:
        lacking = sorted({a for _, algos in cfg.matrix() for a, _ in algos if "startup" not in base.get(a).needs})
        if lacking:
            raise ValueError(f"real_setting dilation_x charges a start-up wait before each collective, which "
                             f"{', '.join(lacking)} cannot take; valid with dilation_x > 1: "
                             f"{', '.join(n for n, al in base.registry().items() if 'startup' in al.needs)}")
    # torch imports: only once the cheap checks passed
    from workloads.models.layers import scaled
    from workloads.models.registry import valid_specs
    from workloads.models.specs import load
    from workloads.training import TRAIN_MODELS

    if cfg.train:
        _check_training(cfg, TRAIN_MODELS)
    if cfg.ddp:
        _check_ddp(cfg)
    if not cfg.models():
        raise ValueError("no model given; valid: " + ", ".join(valid_specs()))
    loaded = []
    for spec in cfg.models():
        m = load(spec)
        if cfg.size_scale != 1.0 or cfg.time_dilation() != 1.0 or cfg.real_backward_s:
            m = scaled(m, cfg.size_scale, cfg.time_dilation() * compute_factor(cfg.real_backward_s, m))
        loaded.append(m)
    topos = {spec: topo_spec.build(spec, bw=cfg.bw, link_bw=cfg.link_bw or None, ecmp=cfg.ecmp)
             for spec, _ in cfg.matrix()}
    if cluster:
        for t in topos.values():
            place_on_servers(t, list(cluster.servers), cluster.capacities(),
                             cluster.placement if isinstance(cluster.placement, dict) else None)
    runs = []
    for (spec, algos), model in ((x, m) for m in loaded for x in cfg.matrix()):
        topo = topos[spec]
        all_hosts = topo.hosts()
        for a, raw in algos:
            servers = cfg.servers if base.get(a).uses_servers else 0
            workers = cfg.workers if cfg.workers is not None else len(all_hosts) - servers
            if workers < 1:
                raise ValueError(f"workers={workers} is invalid: need at least 1")
            if workers + servers > len(all_hosts):
                raise ValueError(f"{workers} workers + {servers} servers do not fit on {topo.name}, "
                                 f"which has {len(all_hosts)} hosts")
            hosts = place(topo, workers + servers, cfg.placement)
            run = PlannedRun(len(runs) + 1, topo, a, hosts, workers, servers, {}, model,
                             spec=base.spec_of(a, raw), options=raw, size_scale=float(cfg.size_scale))
            background.check(flows, topo, hosts)
            run.background = [dict(f) for f in flows]
            _, run.plan = base.plan_for(a, run.context())
            runs.append(run)
    if cfg.link_down:
        link = cfg.link_down.get("link") if isinstance(cfg.link_down, dict) else None
        after = cfg.link_down.get("after_s", 0) if isinstance(cfg.link_down, dict) else None
        for run in runs:
            t = run.topology
            if link not in t.intfs or not t.intfs[link].ip:
                valid = ", ".join(n.name for n in t.host_nics(t.hosts()[0]))
                raise ValueError(f"link_down: {link!r} is not a host NIC of {t.name}; e.g. {valid}")
        if not isinstance(after, (int, float)) or after < 0:
            raise ValueError(f"link_down: after_s={after!r} must be a number of seconds >= 0")
    if cfg.crash:
        r = cfg.crash.get("rank", -1)
        if not 0 <= r < min(run.workers + run.servers for run in runs):
            raise ValueError(f"crash rank {r} is not a rank of every run")
    return runs


def _check_cluster(cfg: RunConfig):
    """The cluster block (None without one)."""
    from emulation.cluster import parse

    return parse(cfg.cluster)


# Largest emulated MTU: veth and the userspace switch carried 64000-byte frames in
# scripts/ovs_forwarding_bench.py (docs/FIDELITY.md #20); a frame of 64 KiB or more is not an IP packet.
MAX_MTU = 64000
MAX_DILATION_X = 64  # waits of up to 63 start-ups per collective: beyond, runs take hours
REAL_SETTING_KEYS = ("name", "alpha", "beta", "backward_s", "workers", "network", "dilation_x")


def check_real_setting(real) -> None:
    if real is None:
        return
    if not isinstance(real, dict) or set(real) - set(REAL_SETTING_KEYS) or not {"alpha", "beta"} <= set(real):
        raise ValueError(f"real_setting must be a mapping with alpha and beta (and optionally "
                         f"{', '.join(k for k in REAL_SETTING_KEYS if k not in ('alpha', 'beta'))}), got {real!r}")
    for key in ("alpha", "beta", "backward_s"):
        if key in real:
            check_seconds(f"real_setting {key}", real[key], per_model=key == "backward_s")
    x = real.get("dilation_x", 1)
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not 1 <= x <= MAX_DILATION_X:
        raise ValueError(f"real_setting dilation_x={x!r} is invalid: must be a number 1..{MAX_DILATION_X:g} "
                         f"(how many times the measured start-up a the emulated run stands for)")


def dilation_x(real: dict | None) -> float:
    """The real setting's extra time dilation X (1: none). The time factor is X a_e / a_r and the
    start-up the emulated network lacks, (X - 1) a_e, is waited before each collective
    (emulation/replan.py); it lowers the messages per emulated second X times, which slower
    links cannot do for a start-up-bound run (they leave a_e as it is)."""
    return float((real or {}).get("dilation_x", 1))


def check_seconds(what: str, v, per_model: bool = True) -> None:
    """A number > 0, or (per_model) {model name: number > 0}."""
    values = list(v.values()) if per_model and isinstance(v, dict) and v else [v]
    if any(isinstance(x, bool) or not isinstance(x, (int, float)) or not x > 0 for x in values):
        raise ValueError(f"{what}={v!r} must be a number > 0" + (" (s), or {model: s}" if per_model else
                                                                  " (alpha s, beta s/byte)"))


def backward_for(value, model_spec: str) -> float | None:
    """Backward seconds per iteration stated for this model: one number for every model, or
    {model name: seconds} (the name is the spec's first item); None when none is."""
    if isinstance(value, dict):
        value = value.get(model_spec.split(",")[0].strip())
    return float(value) if value else None


def charged_compute(cfg, algorithm: str, model_spec: str) -> dict:
    """{Compute key: emulated seconds per sync} a run of `algorithm` on `model_spec` is charged:
    the stated real compressor cost (`real_compress_s`) x the time dilation, for each compute the
    algorithm declares `stated_as="compress"`; {} when none is stated or it declares none."""
    real = backward_for(cfg.real_compress_s, model_spec)
    if not real:
        return {}
    return {c.key: real * cfg.time_dilation() for c in base.get(algorithm).compute if c.stated_as == "compress"}


def compute_factor(stated, model) -> float:
    """Factor on `model`'s profiled compute that makes it the backward time `stated` for it
    (`backward_for`), 1 when none is stated or the profile has none."""
    real = backward_for(stated, model.spec)
    return real / model.backward_s if real and model.backward_s > 0 else 1.0


def _check_training(cfg: RunConfig, train_models) -> None:
    """Real training: every model one the digits trainer knows, unscaled; its own options sane."""
    bad = [m for m in cfg.models() if m not in train_models]
    if bad or cfg.size_scale != 1.0:
        raise ValueError(f"train: real training needs model(s) among {', '.join(train_models)} and size_scale 1, "
                         f"got model {', '.join(cfg.models())}, size_scale {cfg.size_scale:g}")
    c = cfg.check_iters
    if c is not None and (isinstance(c, bool) or not isinstance(c, int) or c < 0):
        raise ValueError(f"check_iters={c!r} is invalid: must be an integer >= 0 (iterations checked "
                         "against the oracle) or null (all)")
    e = cfg.eval_every
    if isinstance(e, bool) or not isinstance(e, int) or e < 1:
        raise ValueError(f"eval_every={e!r} is invalid: must be an integer >= 1")
    t = cfg.target_accuracy
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= 1):
        raise ValueError(f"target_accuracy={t!r} is invalid: must be a fraction in (0, 1]")
    b = cfg.batch
    if isinstance(b, bool) or not isinstance(b, int) or b < 1:
        raise ValueError(f"batch={b!r} is invalid: must be an integer >= 1 (images per worker and iteration)")
    for name in ("lr", "lr_gamma"):
        v = getattr(cfg, name)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < float("inf"):
            raise ValueError(f"{name}={v!r} is invalid: must be a number > 0")
    m = cfg.lr_milestones
    total = cfg.warmup + cfg.iters if all(isinstance(x, int) for x in (cfg.warmup, cfg.iters)) else None
    if not isinstance(m, (list, tuple)) or any(isinstance(x, bool) or not isinstance(x, int) for x in m) \
            or list(m) != sorted(set(m)) or any(x < 1 or (total is not None and x >= total) for x in m):
        raise ValueError(f"lr_milestones must be increasing iterations in 1..{(total or 0) - 1}, got {m!r}")


@dataclass
class LocalRun:
    """One localhost training run of `syncbed train`: `workers` ranks on `lo`, one algorithm,
    the model unscaled (the job writer, emulation/workers.py, reads it as a PlannedRun)."""

    index: int
    workers: int
    algorithm: str  # registered name
    spec: str  # canonical spec (base.spec_of)
    dense: bool  # the algorithm's result is the dense sum (it has no reference of its own)
    plan: dict
    model: object  # workloads.models.layers.Model of the spec (`train_model`)
    servers: int = 0
    background: list = field(default_factory=list)

    @property
    def hosts(self) -> list:
        return ["localhost"] * self.workers

    @property
    def slug(self) -> str:
        text = "".join(c if c.isalnum() else "-" for c in self.spec).strip("-")
        return f"{self.index:02d}-p{self.workers}-{text}"


def validate_local(cfg: RunConfig) -> list[LocalRun]:
    """`syncbed train`: check what localhost training reads and plan every run, one per (worker
    count, algorithm spec), in that order; ValueError (one line) before any process starts."""
    counts = list(cfg.workers) if isinstance(cfg.workers, (list, tuple)) else [cfg.workers]
    if not counts or any(isinstance(p, bool) or not isinstance(p, int) or p < 1 for p in counts):
        raise ValueError(f"workers={cfg.workers!r} is invalid: must be an integer >= 1 or a list of them")
    for name, lo in (("iters", 1), ("warmup", 0), ("seed", 0)):
        v = getattr(cfg, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"{name}={v!r} is invalid: must be an integer >= {lo}")
    if isinstance(cfg.timeout, bool) or not isinstance(cfg.timeout, (int, float)) or cfg.timeout <= 0:
        raise ValueError(f"timeout={cfg.timeout!r} is invalid: must be a number > 0")
    if cfg.servers:
        raise ValueError(f"servers={cfg.servers!r} is invalid: syncbed train runs every rank as a worker (use 0)")
    if cfg.ddp:
        raise ValueError("ddp: true runs a DDP script inside the emulation (syncbed run); syncbed train runs "
                         "syncbed's own worker")
    if not cfg.train:
        raise ValueError("train: false is invalid for syncbed train (it trains; synthetic gradients: syncbed run)")
    # torch imports: only once the cheap checks passed
    from workloads.models.specs import load
    from workloads.training import TRAIN_MODELS, DigitsTrainer

    if len(cfg.models()) != 1:
        raise ValueError(f"syncbed train trains one model per file, got {', '.join(cfg.models()) or 'none'}; "
                         f"valid: {', '.join(TRAIN_MODELS)}")
    _check_training(cfg, TRAIN_MODELS)
    for a in cfg.options:
        base.get(a)
    specs = [a for _, algos in cfg.matrix() for a in algos] if isinstance(cfg.topologies, dict) else \
        [(n, {**dict(cfg.options.get(n) or {}), **o}) for n, o in base.parse_algos(cfg.algorithms)]
    if not specs:
        raise ValueError("no algorithm given; see syncbed algos")
    specs = list({base.spec_of(n, o): (n, o) for n, o in specs}.values())  # each spec once
    model = load(cfg.model)  # the spec's layers: the job's, and the planners' sizes
    sizes = tuple(layer.numel for layer in model.layers)
    layers = tuple((layer.name, layer.numel, layer.backward_s) for layer in model.layers)
    runs = []
    for p in dict.fromkeys(counts):
        trainer = DigitsTrainer(0, p, cfg.seed, cfg.batch, cfg.model)  # refuses P x batch > the data
        if list(sizes) not in (trainer.layer_sizes(False), trainer.layer_sizes(True)):
            raise ValueError(f"model {cfg.model}: the spec's layers are not the trained network's")
        for name, opts in specs:
            algo, plan = base.plan_for(name, base.PlanContext(p, sizes, options=dict(opts), layers=layers))
            runs.append(LocalRun(len(runs) + 1, p, algo.name, base.spec_of(name, opts), algo.reference is None,
                                 plan, model))
    return runs


def _check_ddp(cfg: RunConfig) -> None:
    """ddp: true trains the model with DDP and the algorithm as its hook: real training, no
    dedicated servers, every algorithm one that can be a hook (workloads/ddp_hooks.py)."""
    from workloads import ddp_hooks  # noqa: PLC0415

    if not isinstance(cfg.ddp, bool):
        raise ValueError(f"ddp={cfg.ddp!r} is invalid: must be true or false")
    if not cfg.train:
        raise ValueError("ddp: true trains a real model with DistributedDataParallel: set train: true "
                         "(model resnet20 or lenet5)")
    if cfg.servers:
        raise ValueError(f"ddp: every rank is a DDP replica; servers={cfg.servers} is invalid (use 0)")
    b = cfg.bucket_mb
    if isinstance(b, bool) or not isinstance(b, (int, float)) or not b > 0:
        raise ValueError(f"bucket_mb={b!r} is invalid: must be a number of MiB > 0 (DDP's bucket_cap_mb)")
    for _, algos in cfg.matrix():
        for name, _ in algos:
            why = ddp_hooks.not_a_run_hook(name)
            if why:
                raise ValueError(f"ddp: {name} cannot be a DDP hook: {why}; hooks: "
                                 f"{', '.join(ddp_hooks.run_hooks())}")


def _check_numbers(cfg: RunConfig) -> None:
    topo_spec.check_bw(cfg.bw, "bw")
    for cls, v in (cfg.link_bw or {}).items():
        topo_spec.check_bw(v, f"link_bw[{cls}]")
    for name, lo in (("iters", 1), ("warmup", 0), ("servers", 0), ("mtu", 576)):
        v = getattr(cfg, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"{name}={v!r} is invalid: must be an integer >= {lo}")
    switch_priority.check(cfg.switch_priority)
    if not isinstance(cfg.tcp_cc, str) or not re.fullmatch(r"[a-z0-9_]+", cfg.tcp_cc):
        raise ValueError(f"tcp_cc={cfg.tcp_cc!r} is invalid: must be a congestion control's name, such as cubic "
                         "or bbr (this machine's: /proc/sys/net/ipv4/tcp_available_congestion_control)")
    lo, hi = TCP_RTO_MIN_MS
    v = cfg.tcp_rto_min_ms
    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi):
        raise ValueError(f"tcp_rto_min_ms={v!r} is invalid: must be an integer number of milliseconds, "
                         f"{lo}..{hi}, or omitted for the kernel's 200 ms")
    if cfg.switch_priority != "normal" and cfg.cluster:
        raise ValueError(f"switch_priority={cfg.switch_priority} is for one server: it raises this machine's "
                         "ovs-vswitchd only; use normal with cluster")
    if cfg.mtu > MAX_MTU:
        raise ValueError(f"mtu={cfg.mtu} is invalid: must be an integer 576..{MAX_MTU} (the largest "
                         f"measured through veth and the userspace switch here)")
    if cfg.workers is not None and (isinstance(cfg.workers, bool) or not isinstance(cfg.workers, int)
                                    or cfg.workers < 1):
        raise ValueError(f"workers={cfg.workers!r} is invalid: must be an integer >= 1")
    if cfg.real_link_mbps is not None and (not isinstance(cfg.real_link_mbps, (int, float)) or cfg.real_link_mbps <= 0):
        raise ValueError(f"real_link_mbps={cfg.real_link_mbps!r} is invalid: must be a number > 0")
    for name in ("timeout", "dilation", "size_scale"):
        v = getattr(cfg, name)
        if not isinstance(v, (int, float)) or v <= 0:
            raise ValueError(f"{name}={v!r} is invalid: must be a number > 0")
