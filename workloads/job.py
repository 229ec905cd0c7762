"""The worker job file (`job.json`): one typed `Job`, the only definition of its fields.

Whoever writes job.json builds a `Job` and `write`s it (the runner: `emulation/workers.write_job`);
the worker (`workloads/worker.py`, `ddp_worker.py`) `read`s it and uses its attributes.
`from_json` checks it once (`check`): an unknown or missing field, or a value of the wrong
type or range, is one line, `job: <field>=<value> is invalid: must be <what is valid>`.
`to_json` writes every field under the same keys as before this module existed, so kept
job.json files still read (a field a file lacks takes its default).

    job = Job(algorithm="ring", plan=plan, workers=4, world=4,
              model=JobModel("synthetic,mb=4", [["fc", 1048576, 0.0]]), iters=5,
              store="/run/store", log_dir="/run/workers")
    job.write(run_dir / "job.json");  Job.read(run_dir / "job.json") == job

Only the standard library and the contract's `GroupSpec`: the emulation imports this module
without torch.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from common.units import DTYPE_BYTES
from workloads.algorithms.base import GroupSpec


def _refuse(name: str, value, valid: str):
    raise ValueError(f"job: {name}={value!r} is invalid: must be {valid}")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


@dataclass
class JobModel:
    """`"model"`: the model spec the run was planned for and its layers as the run has them
    (after scaling and time dilation), `[[name, numel, backward_s], ...]` in forward order."""

    spec: str
    layers: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"spec": self.spec, "layers": [list(layer) for layer in self.layers]}


@dataclass
class Crash:
    """`"crash"`: fault injection for tests: rank `rank` exits (code 3) at iteration `iter`."""

    rank: int
    iter: int


@dataclass
class Probe:
    """`"probe"`: the job measures the all-reduce cost model instead of iterating
    (`workloads/probe.py`): a ring all-reduce of each of `sizes_bytes`, `reps` times."""

    sizes_bytes: list
    reps: int = 3


@dataclass
class Job:
    """One run as every rank sees it. Field groups, in the order job.json lists them:"""

    # --- What to run (required). `algorithm`: a registry name ("probe" with `probe`); `plan`:
    # its JSON plan (the one actually used, after re-planning); `workers`: ranks that hold a
    # gradient; `world`: every rank, dedicated servers (ranks >= workers) included; `model`:
    # the layers the gradient is made of; `iters`: measured iterations; `store`: the
    # FileStore folder of the rendezvous (shared disk); `log_dir`: where rank<R>.jsonl goes.
    algorithm: str
    plan: dict
    workers: int
    world: int
    model: JobModel
    iters: int
    store: str
    log_dir: str

    # --- How to run it. `algo_spec`: the canonical spec (`base.spec_of`; "": the name);
    # `groups`: extra Gloo groups (`Algorithm.groups(plan)`); `servers`: world - workers;
    # `warmup`: unmeasured iterations first; `seed`: of the synthetic gradients and the
    # trainer; `dilation`: backward times x this (0: no compute time); `timeout_s`: Gloo's
    # and the go-file wait's; `hosts`: each rank's host, rank order; `go_file`: the rank waits
    # for this file after connecting (None: go at once); `dtype_bytes`: bytes per element the
    # plan's byte counts assume; `crash`: fault injection; `background`: the run's background
    # flows `{src, dst, mbps, port}` (emulation/background.py; the analysis keeps them apart);
    # `charged`: {Compute key: seconds} the executor's work is charged per sync instead of this
    # CPU's time (`SyncState.charged`: a stated real cost, time-dilated; {}: none).
    algo_spec: str = ""
    groups: list = field(default_factory=list)  # [GroupSpec]
    servers: int = 0
    warmup: int = 0
    seed: int = 0
    dilation: float = 1.0
    timeout_s: float = 120.0
    hosts: list = field(default_factory=list)
    go_file: str | None = None
    dtype_bytes: int = DTYPE_BYTES
    crash: Crash | None = None
    background: list = field(default_factory=list)
    charged: dict = field(default_factory=dict)

    # --- The gradient and its oracle. `sparsity`: synthetic gradients with whole zero blocks
    # `{block, zero_blocks, zero_entries}` (checked by `gradients.check_sparsity`; None:
    # dense); `oracle_ranks`: the ranks that rebuild every worker's gradient to check the
    # result (None: all; the others log a digest); `probe`: measure the link instead.
    sparsity: dict | None = None
    oracle_ranks: list | None = None
    probe: Probe | None = None

    # --- Real training (`train`: workloads/training.py): `train_model` (lenet5 | resnet20;
    # the model spec must name it unscaled), `batch` per worker, `lr` with MultiStepLR's
    # `lr_milestones` and `lr_gamma`, `check_iters` (iterations checked against the oracle;
    # None: all), `eval_every` (rank 0 evaluates every n-th iteration), `target_accuracy`
    # (the analysis reports when it was reached; None: not asked).
    train: bool = False
    train_model: str = "lenet5"
    batch: int = 32
    lr: float = 0.1
    lr_milestones: list = field(default_factory=list)
    lr_gamma: float = 0.1
    check_iters: int | None = None
    eval_every: int = 1
    target_accuracy: float | None = None

    # --- DDP (`ddp`: workloads/ddp_worker.py, training with the algorithm as the hook of a
    # DistributedDataParallel model): `bucket_mb` is DDP's bucket_cap_mb, `ddp_overlap` runs
    # the hook on a communication thread while backward goes on.
    ddp: bool = False
    bucket_mb: float = 25.0
    ddp_overlap: bool = True

    # ---------------------------------------------------------------- derived
    @property
    def spec(self) -> str:
        """The canonical algorithm spec (the name when the job names none)."""
        return self.algo_spec or self.algorithm

    @property
    def layers(self) -> list[tuple[str, int, float]]:
        """[(name, numel, backward_s)] of `model`, forward order."""
        return [(str(n), int(k), float(s)) for n, k, s in self.model.layers]

    @property
    def elements(self) -> int:
        return sum(int(layer[1]) for layer in self.model.layers)

    def evaluates_after(self, it: int) -> bool:
        """Training: rank 0 evaluates the held-out split after iteration `it` (the first, every
        `eval_every`-th and the last)."""
        return it == 0 or (it + 1) % self.eval_every == 0 or it == self.warmup + self.iters - 1

    # ---------------------------------------------------------------- JSON
    def to_json(self) -> dict:
        """The job.json object: every field, under its key."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "groups":
                v = [{"id": g.id, "ranks": list(g.ranks), "nic": g.nic} for g in v]
            elif isinstance(v, JobModel):
                v = v.to_json()
            elif isinstance(v, (Crash, Probe)):
                v = dataclasses.asdict(v)
            elif isinstance(v, list):
                v = list(v)
            out[f.name] = v
        return out

    @classmethod
    def from_json(cls, d) -> "Job":
        """A checked Job from a job.json object; ValueError (one line) on anything invalid."""
        if isinstance(d, Job):
            return d.check()
        if not isinstance(d, dict):
            raise ValueError(f"job: must be a JSON object, got {type(d).__name__}")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - set(fields))
        if unknown:
            raise ValueError(f"job: unknown field(s) {', '.join(unknown)}; valid: {', '.join(fields)}")
        required = [n for n, f in fields.items()
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        missing = [n for n in required if n not in d]
        if missing:
            raise ValueError(f"job: missing field(s) {', '.join(missing)}; a job needs {', '.join(required)}")
        kw = dict(d)
        kw["model"] = _model(d["model"])
        if "groups" in d:
            kw["groups"] = _groups(d["groups"])
        if d.get("crash") is not None:
            kw["crash"] = _record(Crash, "crash", d["crash"])
        if d.get("probe") is not None:
            kw["probe"] = _record(Probe, "probe", d["probe"])
        return cls(**kw).check()

    def write(self, path) -> Path:
        """Check, then write job.json at `path` (indented, as the runner always wrote it)."""
        path = Path(path)
        path.write_text(json.dumps(self.check().to_json(), indent=1))
        return path

    @classmethod
    def read(cls, path) -> "Job":
        with open(path) as f:
            return cls.from_json(json.load(f))

    # ---------------------------------------------------------------- checks
    def check(self) -> "Job":
        """Refuse, in one line naming the field, what no rank could run; normalise numbers
        (an int where a float is meant, a tuple where a list is). Returns self."""
        for name in ("hosts", "background", "lr_milestones", "oracle_ranks"):
            if isinstance(getattr(self, name), tuple):
                setattr(self, name, list(getattr(self, name)))
        for name in ("algorithm", "store", "log_dir"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                _refuse(name, getattr(self, name), "a non-empty string")
        if not isinstance(self.algo_spec, str):
            _refuse("algo_spec", self.algo_spec, "a string (the canonical algorithm spec)")
        self.algo_spec = self.algo_spec or self.algorithm
        if not isinstance(self.plan, dict):
            _refuse("plan", self.plan, "a JSON object (the algorithm's plan)")
        self._int("workers", 1)
        self._int("world", self.workers)
        self._int("servers", 0)
        if self.servers != self.world - self.workers:
            _refuse("servers", self.servers, f"world - workers = {self.world - self.workers}")
        self._int("iters", 0)
        self._int("warmup", 0)
        self._int("seed", None)
        self._int("dtype_bytes", 1)
        self._num("dilation", 0.0, "a number >= 0")
        if not isinstance(self.charged, dict) or not all(
                isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                for k, v in self.charged.items()):
            _refuse("charged", self.charged, "{compute key: seconds >= 0}")
        self.charged = {k: float(v) for k, v in self.charged.items()}
        self._num("timeout_s", 0.0, "a number > 0 (seconds)", strict=True)
        if not isinstance(self.model, JobModel):
            self.model = _model(self.model)
        if not self.train and not self.model.layers:
            _refuse("model.layers", self.model.layers, "a non-empty list [[name, numel, backward_s], ...]")
        if not isinstance(self.groups, list) or not all(isinstance(g, GroupSpec) for g in self.groups):
            self.groups = _groups(self.groups)
        for g in self.groups:
            if not all(_is_int(r) and 0 <= r < self.world for r in g.ranks):
                _refuse(f"groups[{g.id}].ranks", list(g.ranks), f"ranks in 0..{self.world - 1}")
        if not isinstance(self.hosts, list) or not all(isinstance(h, str) for h in self.hosts):
            _refuse("hosts", self.hosts, "a list of host names, rank order")
        if self.go_file is not None and not isinstance(self.go_file, str):
            _refuse("go_file", self.go_file, "a path or null")
        if self.crash is not None and not isinstance(self.crash, Crash):
            self.crash = _record(Crash, "crash", self.crash)
        if self.crash is not None and not (_is_int(self.crash.rank) and _is_int(self.crash.iter)):
            _refuse("crash", dataclasses.asdict(self.crash), "{rank: int, iter: int} or null")
        if not isinstance(self.background, list) or not all(isinstance(b, dict) for b in self.background):
            _refuse("background", self.background, "a list of {src, dst, mbps, port}")
        if self.sparsity is not None and not isinstance(self.sparsity, dict):
            _refuse("sparsity", self.sparsity, "{block, zero_blocks, zero_entries} or null")
        if self.oracle_ranks is not None and (not isinstance(self.oracle_ranks, list) or not all(
                _is_int(r) and 0 <= r < self.workers for r in self.oracle_ranks)):
            _refuse("oracle_ranks", self.oracle_ranks, f"a list of worker ranks in 0..{self.workers - 1} or null")
        if self.probe is not None:
            if not isinstance(self.probe, Probe):
                self.probe = _record(Probe, "probe", self.probe)
            if not isinstance(self.probe.sizes_bytes, list) or not all(
                    _is_int(b) and b > 0 for b in self.probe.sizes_bytes):
                _refuse("probe.sizes_bytes", self.probe.sizes_bytes, "a list of sizes in bytes > 0")
            if not _is_int(self.probe.reps) or self.probe.reps < 1:
                _refuse("probe.reps", self.probe.reps, "an int >= 1")
        self._bool("train")
        if not isinstance(self.train_model, str) or not self.train_model:
            _refuse("train_model", self.train_model, "a model name (lenet5 | resnet20)")
        self._int("batch", 1)
        self._num("lr", 0.0, "a number > 0", strict=True)
        self._num("lr_gamma", 0.0, "a number > 0", strict=True)
        if self.lr_milestones is None:
            self.lr_milestones = []
        if not isinstance(self.lr_milestones, list) or not all(_is_int(m) for m in self.lr_milestones):
            _refuse("lr_milestones", self.lr_milestones, "a list of iterations (ints)")
        if self.check_iters is not None:
            self._int("check_iters", 0, "an int >= 0 (iterations checked against the oracle) or null (all)")
        self._int("eval_every", 1)
        if self.target_accuracy is not None:
            self._num("target_accuracy", 0.0, "a fraction in [0, 1] or null")
            if self.target_accuracy > 1:
                _refuse("target_accuracy", self.target_accuracy, "a fraction in [0, 1] or null")
        self._bool("ddp")
        self._bool("ddp_overlap")
        self._num("bucket_mb", 0.0, "a number > 0 (MiB, DDP's bucket_cap_mb)", strict=True)
        if self.ddp and self.servers:
            _refuse("servers", self.servers, "0 with ddp (every rank is a DDP replica)")
        return self

    def _int(self, name: str, low, valid: str | None = None) -> None:
        v = getattr(self, name)
        if not _is_int(v) or (low is not None and v < low):
            _refuse(name, v, valid or ("an int" if low is None else f"an int >= {low}"))

    def _num(self, name: str, low: float, valid: str, strict: bool = False) -> None:
        v = getattr(self, name)
        if not _is_num(v) or v < low or (strict and v == low):
            _refuse(name, v, valid)
        setattr(self, name, float(v))

    def _bool(self, name: str) -> None:
        if not isinstance(getattr(self, name), bool):
            _refuse(name, getattr(self, name), "true or false")


def _model(d) -> JobModel:
    if isinstance(d, JobModel):
        m = d
    elif isinstance(d, dict) and set(d) <= {"spec", "layers"} and "spec" in d:
        m = JobModel(d["spec"], d.get("layers") or [])
    else:
        _refuse("model", d, "{spec, layers: [[name, numel, backward_s], ...]}")
    if not isinstance(m.spec, str):
        _refuse("model.spec", m.spec, "a model spec (string)")
    if not isinstance(m.layers, (list, tuple)):
        _refuse("model.layers", m.layers, "a list [[name, numel, backward_s], ...]")
    for layer in m.layers:
        if not (isinstance(layer, (list, tuple)) and len(layer) == 3 and _is_int(layer[1]) and layer[1] > 0
                and _is_num(layer[2]) and layer[2] >= 0):
            _refuse("model.layers", layer, "[name, numel > 0, backward_s >= 0] per layer")
    m.layers = [list(layer) for layer in m.layers]
    return m


def _groups(groups) -> list:
    if not isinstance(groups, list):
        _refuse("groups", groups, "a list of {id, ranks, nic}")
    out = []
    for g in groups:
        if isinstance(g, GroupSpec):
            out.append(g)
            continue
        if not (isinstance(g, dict) and isinstance(g.get("id"), str) and isinstance(g.get("ranks"), (list, tuple))
                and _is_int(g.get("nic", 0)) and g.get("nic", 0) >= 0 and set(g) <= {"id", "ranks", "nic"}):
            _refuse("groups", g, "{id: str, ranks: [int], nic: int >= 0} per group")
        out.append(GroupSpec(g["id"], tuple(g["ranks"]), int(g.get("nic", 0))))
    return out


def _record(cls, name: str, d):
    if isinstance(d, cls):
        return d
    names = [f.name for f in dataclasses.fields(cls)]
    need = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
    if not isinstance(d, dict) or set(d) - set(names) or any(n not in d for n in need):
        _refuse(name, d, "{" + ", ".join(names) + "} or null")
    return cls(**d)
