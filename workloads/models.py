"""Models as the sync workers see them: per-layer gradient sizes and backward times.

A sync algorithm never needs the network itself, only what backpropagation hands it:
the gradient of each layer (elements, float32) and when it becomes ready. So a model
here is a `Model`, a tuple of `Layer(name, numel, backward_s)` in forward order, where
`backward_s` is the time backpropagation spends between the previous layer's gradient
(in backward order) and this one's (MG-WFBP's t_b^(l); Shi et al., INFOCOM 2019).

Duties are split three ways:
- spec parsing and the registry (`load`, `valid_specs`): a spec names a model and its
  options, e.g. `synthetic,mb=4,layers=8,compute_ms=20` or `vgg19,batch=16`;
- the networks themselves (`LeNet5`, `VGG19`, `ResNet18`), written in plain torch.nn
  (no torchvision, nothing downloaded), and the profiler that times their backward
  pass on this CPU; results are cached in `~/.cache/syncbed/`;
- `DigitsTrainer`, real data-parallel SGD of LeNet-5 on scikit-learn's digits, for
  convergence experiments: it produces real gradients and applies the synchronized sum.

Layers are the modules that own parameters directly: a conv or linear layer with its
bias is one layer, a BatchNorm's affine parameters are a layer of their own.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import re
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import torch
import torch.nn as nn
import torch.nn.functional as F

DTYPE_BYTES = 4  # float32 gradients everywhere
MIB = 1 << 20
CACHE_FORMAT = 1  # bump when the profile method changes, so old cache entries are ignored
PROFILE_RUNS = 5  # timed backward passes; the median of each layer's time is kept
PROFILE_WARMUP = 1  # untimed passes first (allocator and kernel selection)


# --------------------------------------------------------------------------- data model


@dataclass(frozen=True)
class Layer:
    """One parameter-owning module: gradient elements and its share of backward time."""

    name: str
    numel: int
    backward_s: float

    def __post_init__(self):
        if not isinstance(self.numel, int) or isinstance(self.numel, bool) or self.numel < 1:
            raise ValueError(f"layer {self.name!r}: numel must be a positive int, got {self.numel!r}")
        if not (isinstance(self.backward_s, (int, float)) and math.isfinite(self.backward_s)
                and self.backward_s >= 0):
            raise ValueError(
                f"layer {self.name!r}: backward_s must be a finite number >= 0, got {self.backward_s!r}")


@dataclass(frozen=True)
class Model:
    """A model's gradient as a sync algorithm sees it. `source` says how it was obtained."""

    spec: str
    layers: tuple
    source: str

    def __post_init__(self):
        if not self.layers:
            raise ValueError(f"model {self.spec!r} has no layers")
        object.__setattr__(self, "layers", tuple(self.layers))

    @property
    def elements(self) -> int:
        return sum(layer.numel for layer in self.layers)

    @property
    def bytes(self) -> int:
        return self.elements * DTYPE_BYTES

    @property
    def backward_s(self) -> float:
        return math.fsum(layer.backward_s for layer in self.layers)

    @property
    def layer_sizes(self) -> tuple:
        return tuple(layer.numel for layer in self.layers)

    def to_list(self) -> list:
        """`[[name, numel, backward_s], ...]`, the form job.json carries."""
        return [[layer.name, layer.numel, layer.backward_s] for layer in self.layers]

    @classmethod
    def from_list(cls, spec: str, rows: Iterable, source: str = "") -> "Model":
        """Inverse of `to_list` (e.g. a worker rebuilding the model from job.json)."""
        return cls(spec, tuple(Layer(str(n), int(k), float(t)) for n, k, t in rows), source)


def scaled(model: Model, size_factor: float = 1.0, time_factor: float = 1.0) -> Model:
    """Time dilation: every layer's numel divided by `size_factor` (rounded, at least 1)
    and every backward time multiplied by `time_factor`.

    Communication time is roughly bytes / bandwidth, so what a run preserves is the
    ratio of compute to communication. Emulating links D times slower than the real
    cluster keeps that ratio with `time_factor=D` (same gradients, compute stretched:
    a D-times longer run), or with `size_factor=D` (gradients D times smaller, same
    compute: same wall time, valid while per-message latency stays negligible).
    The two may be combined; the ratio changes by size_factor * time_factor.
    `spec` is kept; `source` records the scaling.
    """
    for label, factor in (("size_factor", size_factor), ("time_factor", time_factor)):
        if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor > 0):
            raise ValueError(f"scaled(): {label} must be a finite number > 0, got {factor!r}")
    if size_factor == 1 and time_factor == 1:
        return model
    layers = tuple(
        Layer(layer.name, max(1, round(layer.numel / size_factor)), layer.backward_s * time_factor)
        for layer in model.layers)
    note = f"scaled: sizes / {size_factor:g}, backward times x {time_factor:g}"
    return Model(model.spec, layers, f"{model.source}; {note}" if model.source else note)


# --------------------------------------------------------------------------- networks


class LeNet5(nn.Module):
    """LeNet-5 (LeCun et al. 1998) for 1x32x32 inputs and 10 classes: 61,706 parameters.

    The common modern variant: ReLU and max-pooling instead of tanh and subsampling
    layers with trainable coefficients, and a full C3 (all 6 maps feed every 16);
    the parameter-owning layers and their sizes are the classic ones.
    """

    def __init__(self, in_channels: int = 1, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


VGG19_CONFIG = (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M",
                512, 512, 512, 512, "M", 512, 512, 512, 512, "M")


class VGG19(nn.Module):
    """VGG-19 (Simonyan & Zisserman 2015, configuration E) as commonly used on CIFAR-10:
    16 3x3 convolutions without BatchNorm, 32x32 input pooled down to 1x1x512, and one
    512->10 linear classifier: 20,029,514 parameters."""

    def __init__(self, classes: int = 10):
        super().__init__()
        layers, channels = [], 3
        for item in VGG19_CONFIG:
            if item == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [nn.Conv2d(channels, item, 3, padding=1), nn.ReLU(inplace=True)]
                channels = item
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(512, classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class BasicBlock(nn.Module):
    """ResNet basic block; the projection shortcut is declared last so that module
    order equals forward order (the shortcut is computed after the main branch)."""

    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18 (He et al. 2016), CIFAR-10 variant: 3x3 stem without max-pooling,
    four stages of two basic blocks (64, 128, 256, 512 channels), global average
    pooling, 512->10 classifier: 11,173,962 parameters."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        stages, in_planes = [], 64
        for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            stages.append(nn.Sequential(BasicBlock(in_planes, planes, stride),
                                        BasicBlock(planes, planes, 1)))
            in_planes = planes
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.linear = nn.Linear(512, classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        out = torch.flatten(F.adaptive_avg_pool2d(out, 1), 1)
        return self.linear(out)


def param_layers(net: nn.Module) -> list:
    """`[(name, module)]` for the modules owning parameters directly, in declaration
    order (equal to forward order for the networks above; the unit tests check it)."""
    return [(name, module) for name, module in net.named_modules()
            if any(True for _ in module.parameters(recurse=False))]


def _layer_numel(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters(recurse=False))


@dataclass(frozen=True)
class _Network:
    build: Callable[[], nn.Module]
    input_shape: tuple  # (C, H, W) of one sample
    classes: int
    default_batch: int
    summary: str


# Default batches keep an uncached profile (1 warm-up + PROFILE_RUNS passes, one thread)
# within a few seconds; pass `,batch=B` for the batch of the experiment being reproduced.
NETWORKS = {
    "lenet5": _Network(LeNet5, (1, 32, 32), 10, 64, "LeNet-5, 1x32x32 input, 10 classes"),
    "vgg19": _Network(VGG19, (3, 32, 32), 10, 16, "VGG-19 (CIFAR-10, no BatchNorm)"),
    "resnet18": _Network(ResNet18, (3, 32, 32), 10, 16, "ResNet-18 (CIFAR-10 variant)"),
}


def build_network(name: str) -> nn.Module:
    """A fresh instance of a registered network (weights from torch's default init)."""
    if name not in NETWORKS:
        raise ValueError(f"unknown network {name!r}; valid: {', '.join(NETWORKS)}")
    return NETWORKS[name].build()


# --------------------------------------------------------------------------- specs


def valid_specs() -> list:
    """Spec templates, defaults shown in brackets; used in every error message."""
    specs = ["synthetic,mb=<MiB>[,layers=1][,compute_ms=0]"]
    specs += [f"{name}[,batch={net.default_batch}]" for name, net in NETWORKS.items()]
    return specs


def _bad(spec: str, what: str) -> ValueError:
    return ValueError(f"bad model spec {spec!r}: {what}; valid specs: {' | '.join(valid_specs())}")


def _parse(spec: str) -> tuple:
    """`'name,k=v,...'` -> (name, {k: v}); syntax errors only, values stay strings."""
    if not isinstance(spec, str) or not spec.strip():
        raise _bad(str(spec), "empty spec")
    name, *items = [part.strip() for part in spec.strip().split(",")]
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise _bad(spec, f"option {item!r} is not key=value")
        if key in options:
            raise _bad(spec, f"option {key!r} given twice")
        options[key] = value
    return name.lower(), options


def _number(spec: str, key: str, value: str, kind, minimum, strict: bool):
    try:
        number = kind(value)
    except ValueError:
        raise _bad(spec, f"{key}={value!r} is not {'an integer' if kind is int else 'a number'}") from None
    if not math.isfinite(number) or number < minimum or (strict and number == minimum):
        raise _bad(spec, f"{key}={value} must be {'>' if strict else '>='} {minimum}")
    return number


def _synthetic(spec: str, options: dict) -> Model:
    unknown = set(options) - {"mb", "layers", "compute_ms"}
    if unknown:
        raise _bad(spec, f"unknown option(s) {', '.join(sorted(unknown))} for synthetic")
    if "mb" not in options:
        raise _bad(spec, "synthetic needs mb=<MiB>")
    mb = _number(spec, "mb", options["mb"], float, 0, strict=True)
    count = _number(spec, "layers", options.get("layers", "1"), int, 1, strict=False)
    compute_ms = _number(spec, "compute_ms", options.get("compute_ms", "0"), float, 0, strict=False)
    elements = mb * MIB / DTYPE_BYTES
    if elements != int(elements):
        raise _bad(spec, f"mb={options['mb']} is not a whole number of float32 elements")
    elements = int(elements)
    if elements < count:
        raise _bad(spec, f"{elements} elements cannot fill layers={count}")
    # Equal layers; when L does not divide the total, the first (total mod L) get one
    # element more, so the total is exact.
    base, extra = divmod(elements, count)
    per_layer_s = compute_ms / 1000.0 / count
    names = ["fc"] if count == 1 else [f"fc{i}" for i in range(count)]
    layers = tuple(Layer(names[i], base + (i < extra), per_layer_s) for i in range(count))
    source = (f"synthetic: {count} equal layer(s), {mb:g} MiB float32, "
              f"{compute_ms:g} ms backward spread evenly")
    return Model(spec.strip(), layers, source)


def load(spec: str, cache_dir: str | os.PathLike | None = None) -> Model:
    """The model named by `spec` (see `valid_specs()`); ValueError says what is wrong.

    Real networks are profiled on this CPU the first time (one thread, see `profile`)
    and the result is cached in `cache_dir` (default `$SYNCBED_CACHE_DIR` or
    `~/.cache/syncbed/`), keyed by spec, torch version and CPU model.
    """
    name, options = _parse(spec)
    if name == "synthetic":
        return _synthetic(spec, options)
    if name not in NETWORKS:
        raise _bad(spec, f"unknown model {name!r}")
    unknown = set(options) - {"batch"}
    if unknown:
        raise _bad(spec, f"unknown option(s) {', '.join(sorted(unknown))} for {name}")
    net = NETWORKS[name]
    batch = _number(spec, "batch", options.get("batch", str(net.default_batch)), int, 1, strict=False)
    canonical = f"{name},batch={batch}"
    path, key = _cache_entry(canonical, cache_dir)
    cached = _read_cache(path, key)
    if cached is not None:
        return Model.from_list(spec.strip(), cached["layers"], cached["source"])
    model = profile(name, batch)
    _write_cache(path, key, model)
    return Model(spec.strip(), model.layers, model.source)


# --------------------------------------------------------------------------- profiling


def profile(name: str, batch: int, runs: int = PROFILE_RUNS, warmup: int = PROFILE_WARMUP) -> Model:
    """Time the backward pass of network `name` layer by layer on this CPU, one thread.

    Each parameter gets a post-accumulate-grad hook that stamps the moment its
    gradient exists; a layer is ready when its last parameter is. Sorting layers by
    readiness, a layer's time is its stamp minus the previous one (the first one's
    from the start of `loss.backward()`), so it covers this layer's backward kernels
    and the parameter-free ops (ReLU, pooling) between it and the layer after it,
    and the times sum to the whole backward pass up to the last gradient. Module
    backward hooks would not do: they fire on the gradient w.r.t. the module's
    input, which the first layer never computes. Each layer keeps its median over
    `runs` timed passes, after `warmup` untimed ones. Uncached, no network call.
    """
    spec_net = NETWORKS[name]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # per-layer times comparable across runs and machines' load
    handles = []
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            net = spec_net.build()
            x = torch.randn((batch, *spec_net.input_shape))
            y = torch.randint(spec_net.classes, (batch,))
        net.train()
        layers = param_layers(net)
        stamps = {}

        def stamp(index):
            def hook(_param):
                stamps[index] = time.perf_counter()  # params of one layer: last one wins
            return hook

        for index, (_, module) in enumerate(layers):
            for param in module.parameters(recurse=False):
                handles.append(param.register_post_accumulate_grad_hook(stamp(index)))
        samples = [[] for _ in layers]
        for run in range(warmup + runs):
            net.zero_grad(set_to_none=True)
            loss = F.cross_entropy(net(x), y)
            stamps.clear()
            start = time.perf_counter()
            loss.backward()
            if len(stamps) != len(layers):
                raise RuntimeError(f"profile {name}: {len(layers) - len(stamps)} layers got no gradient")
            if run < warmup:
                continue
            previous = start
            for index in sorted(stamps, key=stamps.get):
                samples[index].append(stamps[index] - previous)
                previous = stamps[index]
    finally:
        for handle in handles:
            handle.remove()
        torch.set_num_threads(threads)
    model_layers = tuple(Layer(layer_name, _layer_numel(module), statistics.median(times))
                         for (layer_name, module), times in zip(layers, samples))
    c, h, w = spec_net.input_shape
    source = (f"profiled on this CPU ({_cpu_name()}), torch {torch.__version__}, 1 thread, "
              f"batch {batch} of {c}x{h}x{w}, per-layer median of {runs} backward passes "
              f"after {warmup} warm-up")
    return Model(f"{name},batch={batch}", model_layers, source)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def default_cache_dir() -> Path:
    """Read at call time, never at import (`$SYNCBED_CACHE_DIR`, else ~/.cache/syncbed)."""
    override = os.environ.get("SYNCBED_CACHE_DIR")
    return Path(override) if override else Path.home() / ".cache" / "syncbed"


def _cache_entry(canonical: str, cache_dir) -> tuple:
    key = f"{canonical}|torch={torch.__version__}|cpu={_cpu_name()}|format={CACHE_FORMAT}"
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    slug = re.sub(r"[^A-Za-z0-9.=+-]+", "_", f"{canonical}-torch{torch.__version__}")
    # The CPU is in the key but not spelled out in the name; a short hash keeps it apart.
    digest = hashlib.sha1(key.encode()).hexdigest()[:8]
    return folder / f"model-{slug}-{digest}.json", key


def _read_cache(path: Path, key: str):
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # missing or corrupt: profile again and overwrite
    if not isinstance(entry, dict) or entry.get("key") != key or "layers" not in entry:
        return None
    return entry


def _write_cache(path: Path, key: str, model: Model) -> None:
    """Atomic (temp file + rename), so concurrent loads never see half a file.
    A read-only home only costs the next load a new profile."""
    entry = {"key": key, "source": model.source, "layers": model.to_list(),
             "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as out:
            json.dump(entry, out, indent=1)
        os.replace(tmp, path)
    except OSError:
        pass


# --------------------------------------------------------------------------- real training


class DigitsTrainer:
    """Data-parallel SGD of LeNet-5 on scikit-learn's digits (1,797 8x8 images, shipped
    with the package), one instance per rank.

    The 8x8 images (0..16, scaled to [0, 1], then standardised) are upsampled 4x (nearest) to 32x32, so
    the network is exactly the `lenet5` spec (61,706 parameters, same five layers):
    the digit fills the input field as MNIST does in the original LeNet-5.
    A fixed stratified 80/20 split (independent of `seed`) gives 1,437 training and
    360 held-out images.

    Sharding follows torch's DistributedSampler: each epoch the training split is
    permuted from (seed, epoch), the permutation is cut to a multiple of `workers`,
    and rank r takes every workers-th index from r. Iteration i is batch
    i mod steps_per_epoch of epoch i div steps_per_epoch, where steps_per_epoch =
    (n_train div workers) div batch. The union of the W ranks' batches at iteration i
    is then exactly the single-process batch of size W*batch at iteration i, so
    averaging the W gradients reproduces single-process SGD with batch W*batch.
    Every rank initialises the model from `seed` alone, so all start identical.
    """

    IMAGE_SIZE = 32
    TEST_FRACTION = 0.2
    SPLIT_SEED = 0
    PIXEL_MEAN, PIXEL_STD = 0.305, 0.376  # of all 1,797 images scaled to [0, 1]

    def __init__(self, rank: int = 0, workers: int = 1, seed: int = 0, batch: int = 32):
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        if not (isinstance(workers, int) and workers >= 1):
            raise ValueError(f"DigitsTrainer: workers must be an int >= 1, got {workers!r}")
        if not (isinstance(rank, int) and 0 <= rank < workers):
            raise ValueError(f"DigitsTrainer: rank must be in 0..{workers - 1}, got {rank!r}")
        if not (isinstance(batch, int) and batch >= 1):
            raise ValueError(f"DigitsTrainer: batch must be an int >= 1, got {batch!r}")
        self.rank, self.workers, self.seed, self.batch = rank, workers, seed, batch

        digits = load_digits()
        x_train, x_test, y_train, y_test = train_test_split(
            digits.images, digits.target, test_size=self.TEST_FRACTION,
            random_state=self.SPLIT_SEED, stratify=digits.target)
        self.x_train, self.y_train = self._tensors(x_train, y_train)
        self.x_test, self.y_test = self._tensors(x_test, y_test)
        self.steps_per_epoch = (len(self.y_train) // workers) // batch
        if self.steps_per_epoch < 1:
            raise ValueError(
                f"DigitsTrainer: {workers} workers x batch {batch} exceed the "
                f"{len(self.y_train)} training images")

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.net = LeNet5()
        self._layers = param_layers(self.net)
        self._params = [p for _, module in self._layers for p in module.parameters(recurse=False)]

    @classmethod
    def _tensors(cls, images, labels) -> tuple:
        x = (torch.tensor(images, dtype=torch.float32).unsqueeze(1) / 16.0 - cls.PIXEL_MEAN) / cls.PIXEL_STD
        x = F.interpolate(x, size=(cls.IMAGE_SIZE, cls.IMAGE_SIZE), mode="nearest")
        return x, torch.tensor(labels, dtype=torch.long)

    def layer_names(self) -> list:
        return [name for name, _ in self._layers]

    def layer_sizes(self) -> list:
        """Elements per parameter layer, forward order; the layout of `gradients()`."""
        return [_layer_numel(module) for _, module in self._layers]

    def batch_indices(self, iteration: int) -> torch.Tensor:
        """Training-set indices of this rank's mini-batch at `iteration` (deterministic)."""
        if iteration < 0:
            raise ValueError(f"DigitsTrainer: iteration must be >= 0, got {iteration}")
        epoch, step = divmod(iteration, self.steps_per_epoch)
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
        order = torch.randperm(len(self.y_train), generator=generator)
        order = order[: len(order) // self.workers * self.workers]
        shard = order[self.rank::self.workers]
        return shard[step * self.batch:(step + 1) * self.batch]

    def gradients(self, iteration: int) -> torch.Tensor:
        """Flat float32 gradient of the mean cross-entropy over this rank's mini-batch of
        `iteration`, layers in forward order (weight then bias). Parameters unchanged."""
        index = self.batch_indices(iteration)
        self.net.train()
        self.net.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.net(self.x_train[index]), self.y_train[index])
        loss.backward()
        return torch.cat([p.grad.reshape(-1) for p in self._params]).to(torch.float32)

    def apply(self, flat_sum: torch.Tensor, workers: int, lr: float) -> None:
        """One plain SGD step with the synchronized gradient: p -= lr * flat_sum / workers."""
        flat = torch.as_tensor(flat_sum, dtype=torch.float32).reshape(-1)
        total = sum(p.numel() for p in self._params)
        if flat.numel() != total:
            raise ValueError(f"DigitsTrainer.apply: got {flat.numel()} elements, model has {total}")
        with torch.no_grad():
            offset = 0
            for p in self._params:
                p.sub_(flat[offset:offset + p.numel()].view_as(p), alpha=lr / workers)
                offset += p.numel()

    def parameters_flat(self) -> torch.Tensor:
        with torch.no_grad():
            return torch.cat([p.reshape(-1) for p in self._params]).clone()

    def evaluate(self) -> tuple:
        """(mean cross-entropy, accuracy) on the held-out split."""
        self.net.eval()
        with torch.no_grad():
            logits = self.net(self.x_test)
            loss = F.cross_entropy(logits, self.y_test).item()
            accuracy = (logits.argmax(1) == self.y_test).float().mean().item()
        return loss, accuracy
