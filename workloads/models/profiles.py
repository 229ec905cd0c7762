"""Backward times: the profiler, the shipped profiles and the cache of live profiles.

`network_model` gives a registered network's layers at a batch, the first of:
- its shipped profile (`workloads/profiles/<name>-b<batch>.json`, package data, written by
  `python -m workloads.models profile NAME`, i.e. `main`): the big networks take up to a
  minute each to profile on a shared 2-core machine and come out noisy there, so their
  per-tensor times (thread CPU time, see CLOCKS) travel with the code;
- a profile of this CPU cached in `~/.cache/syncbed/` (`$SYNCBED_CACHE_DIR`), keyed by
  spec, torch version and CPU model;
- `profile` now (`measure`: one thread, the median of PROFILE_RUNS backward passes), then
  cached.

Granularity. With `tensors=0` a layer is a module that owns parameters directly: a conv
or linear layer with its bias is one layer, a BatchNorm's affine parameters are a layer
of their own (the default of lenet5, vgg19 and resnet18, as the BML experiments count).
With `tensors=1` (the default of every other network) a layer is one parameter tensor,
weights and biases apart, as MG-WFBP's and gTop-k's PyTorch code count them (one hook
per `named_parameters()` entry), named like `features.0.weight`; a module's tensors keep
their `named_parameters` order. Backward time is still measured per module, and all of
it goes to the module's *last* tensor (its bias, for a conv or linear layer), the rest
get 0: PyTorch computes a module's weight and bias gradients in one backward node
(ConvolutionBackward0, AddmmBackward0, NativeBatchNormBackward0 return them together),
so they are ready within microseconds of each other, and per-tensor stamps would only
measure the order of two AccumulateGrad steps. Gradients are produced last layer first,
so the module's last tensor is its first one produced: with its module's whole time on
it, every tensor of the module is ready exactly when the module is, and both
granularities describe the same backward timeline.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterable

import torch
import torch.nn.functional as F

from workloads.models.layers import Layer, Model
from workloads.models.networks import param_layers
from workloads.models.registry import NETWORKS, TORCHVISION, Network, resolve

CACHE_FORMAT = 1  # bump when the profile method changes, so old cache entries are ignored
PROFILE_RUNS = 5  # timed backward passes; the median of each layer's time is kept
PROFILE_WARMUP = 1  # untimed passes first (allocator and kernel selection)
PROFILE_FORMAT = 1  # of the shipped profile files
# The shipped profiles: package data of `workloads` (setup.py package_data), next to this package.
PROFILES_DIR = Path(__file__).resolve().parent.parent / "profiles"
# Clocks of the profiler. Backward runs on the calling thread here (CPU autograd, one
# intra-op thread), so the thread's CPU time equals wall time on an idle machine but
# leaves out the time other processes held the core: shipped profiles use it, because
# the 2-core machines that make them are shared. Live profiles keep the wall clock
# their cached entries were made with.
CLOCKS = {"wall": time.perf_counter, "thread": time.thread_time}


def network_model(spec: str, key: str, batch: int, tensors: bool,
                  cache_dir: str | os.PathLike | None = None) -> Model:
    """Registered network `key` at `batch` as the Model named `spec`, one layer per module
    or per parameter tensor (`tensors`): from its shipped profile for that batch, else from
    the cache in `cache_dir` (default `default_cache_dir()`), else profiled on this CPU now
    (one thread, see `profile`) and cached."""
    shipped = read_profile(key, batch)
    if shipped is not None:
        return Model(spec.strip(), _granular(shipped["tensors"], tensors),
                     _shipped_source(shipped, tensors))
    # Per-module entries keep the key they always had, so existing caches stay valid.
    canonical = f"{key},batch={batch}" + (",tensors=1" if tensors else "")
    path, cache_key = _cache_entry(canonical, cache_dir)
    cached = _read_cache(path, cache_key)
    if cached is not None:
        return Model.from_list(spec.strip(), cached["layers"], cached["source"])
    model = profile(key, batch, tensors=tensors)
    _write_cache(path, cache_key, model)
    return Model(spec.strip(), model.layers, model.source)


# --------------------------------------------------------------------------- profiling


def profile(name: str, batch: int, runs: int = PROFILE_RUNS, warmup: int = PROFILE_WARMUP,
            tensors: bool = False) -> Model:
    """Time the backward pass of network `name` layer by layer on this CPU, one thread.

    `measure` gives one row per parameter tensor with its module's time on the module's
    last tensor; `tensors=False` sums each module's rows back into one layer (see the
    module docstring). Uncached, no network call.
    """
    key, net = resolve(name, name.lower())
    rows = measure(key, batch, runs, warmup)
    source = (f"profiled on this CPU ({_cpu_name()}), torch {torch.__version__}, 1 thread, "
              f"batch {batch} of {_input_text(net)}, per-layer median of {runs} backward passes "
              f"after {warmup} warm-up")
    if tensors:
        source += "; one layer per parameter tensor, a module's time on its last tensor"
    return Model(f"{key},batch={batch}" + (",tensors=1" if tensors else ""),
                 _granular(rows, tensors), source)


def measure(name: str, batch: int, runs: int = PROFILE_RUNS, warmup: int = PROFILE_WARMUP,
            clock: str = "wall") -> list:
    """`[[tensor, numel, backward_s, module], ...]`: network `name` timed on this CPU
    with `clock` (a key of CLOCKS).

    Each parameter gets a post-accumulate-grad hook that stamps the moment its
    gradient exists; a module is ready when its last parameter is. Sorting modules by
    readiness, a module's time is its stamp minus the previous one (the first one's
    from the start of `loss.backward()`), so it covers this module's backward kernels
    and the parameter-free ops (ReLU, pooling) between it and the module after it,
    and the times sum to the whole backward pass up to the last gradient. Module
    backward hooks would not do: they fire on the gradient w.r.t. the module's
    input, which the first layer never computes. Each module keeps its median over
    `runs` timed passes, after `warmup` untimed ones, and it goes to the module's last
    tensor (module docstring). Rows are in forward order: modules in the order the
    first forward pass calls them, a module's tensors in `named_parameters` order.
    """
    _, spec_net = resolve(name, name.lower())
    now = CLOCKS[clock]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # per-layer times comparable across runs and machines' load
    handles = []
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            net = spec_net.build()
            x, y = _example(spec_net, batch)
        net.train()
        owners = param_layers(net)
        called = {}

        def first_call(module_name):
            def hook(_module, _args):
                called.setdefault(module_name, len(called))  # returns None: inputs untouched
            return hook

        order_hooks = [module.register_forward_pre_hook(first_call(n)) for n, module in owners]
        stamps = {}

        def stamp(module_name):
            def hook(_param):
                stamps[module_name] = now()  # params of one module: last one wins
            return hook

        for module_name, module in owners:
            for param in module.parameters(recurse=False):
                handles.append(param.register_post_accumulate_grad_hook(stamp(module_name)))
        samples = {module_name: [] for module_name, _ in owners}
        for run in range(warmup + runs):
            net.zero_grad(set_to_none=True)
            loss = _loss(net(x), y)
            for hook in order_hooks:  # the first forward pass gave the order
                hook.remove()
            order_hooks = []
            stamps.clear()
            start = now()
            loss.backward()
            if len(stamps) != len(owners):
                missing = [n for n, _ in owners if n not in stamps]
                raise RuntimeError(f"profile {name}: {len(missing)} modules got no gradient "
                                   f"({', '.join(missing[:5])})")
            if run < warmup:
                continue
            previous = start
            for module_name in sorted(stamps, key=stamps.get):
                samples[module_name].append(stamps[module_name] - previous)
                previous = stamps[module_name]
    finally:
        for handle in handles:
            handle.remove()
        torch.set_num_threads(threads)
    position = {module_name: i for i, (module_name, _) in enumerate(owners)}
    rows = []
    for module_name, module in sorted(owners, key=lambda o: (called.get(o[0], math.inf), position[o[0]])):
        params = list(module.named_parameters(recurse=False))
        seconds = statistics.median(samples[module_name])
        for i, (param_name, param) in enumerate(params):
            full = f"{module_name}.{param_name}" if module_name else param_name
            rows.append([full, param.numel(), seconds if i == len(params) - 1 else 0.0, module_name])
    return rows


def _example(net: Network, batch: int) -> tuple:
    """(input, target) of one batch, drawn from the current RNG."""
    if net.tokens:
        x = torch.randint(net.classes, (batch, *net.input_shape))
        return x, torch.randint(net.classes, (batch, *net.input_shape))
    x = torch.randn((batch, *net.input_shape))
    return x, torch.randint(net.classes, (batch,))


def _loss(out, y) -> torch.Tensor:
    """Cross-entropy; a language model's logits (B, T, V) against targets (B, T); every
    output of a tuple (torchvision's GoogLeNet/Inception with aux heads: the main and
    auxiliary logits) adds its loss, so every head gets a gradient (weights are irrelevant
    to backward time)."""
    outputs = out if isinstance(out, tuple) else (out,)
    return sum(F.cross_entropy(o.reshape(-1, o.shape[-1]), y.reshape(-1))
               for o in outputs if o is not None)


def _input_text(net: Network) -> str:
    if net.tokens:
        return f"{net.input_shape[0]} tokens"
    return "x".join(str(d) for d in net.input_shape)


def _granular(rows: Iterable, tensors: bool) -> tuple:
    """Layers from `measure` rows: one per tensor, or one per module (consecutive rows of
    one module summed: its numel and its time, which lies on one of them)."""
    if tensors:
        return tuple(Layer(str(n), int(k), float(t)) for n, k, t, _ in rows)
    layers, current = [], None
    for _, numel, seconds, module in rows:
        if current is not None and current[0] == module:
            current[1] += int(numel)
            current[2].append(float(seconds))
        else:
            current = [module, int(numel), [float(seconds)]]
            layers.append(current)
    return tuple(Layer(str(m) or "<root>", k, math.fsum(t)) for m, k, t in layers)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


# --------------------------------------------------------------------------- cache of live profiles


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


# --------------------------------------------------------------------------- shipped profiles


def profile_path(name: str, batch: int, folder: str | os.PathLike | None = None) -> Path:
    """`<folder>/<name>-b<batch>.json` (`torchvision:NAME` -> `torchvision-NAME-b<batch>.json`)."""
    return Path(folder if folder is not None else PROFILES_DIR) / f"{name.replace(':', '-')}-b{batch}.json"


def read_profile(name: str, batch: int, folder: str | os.PathLike | None = None):
    """The shipped profile of registry key `name` at `batch`, or None when none is shipped.
    A file that is there but unreadable is an error, never a silent re-profile."""
    path = profile_path(name, batch, folder)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        entry = json.loads(text)
        if entry["format"] != PROFILE_FORMAT or entry["network"] != name or entry["batch"] != batch:
            raise ValueError(f"format/network/batch {entry['format']}/{entry['network']}/{entry['batch']}")
        if not entry["tensors"] or any(len(row) != 4 for row in entry["tensors"]):
            raise ValueError("rows must be [tensor, numel, backward_s, module]")
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"shipped profile {path} is unusable ({err}); regenerate it with "
                         f"syncbed profile {name} --batch {batch}") from None
    return entry


def write_profile(name: str, batch: int, runs: int = PROFILE_RUNS, warmup: int = PROFILE_WARMUP,
                  folder: str | os.PathLike | None = None, clock: str = "thread") -> tuple:
    """Profile network `name` (`measure`) and write it for shipping: (path, entry).
    One row per line keeps the file small and its diffs readable."""
    key, net = resolve(name, name.lower())
    load_before = os.getloadavg()[0]  # other work on the machine skews the times: say so
    rows = measure(key, batch, runs, warmup, clock)
    entry = {
        "format": PROFILE_FORMAT,
        "network": key,
        "summary": net.summary,
        "batch": batch,
        "input": _input_text(net),
        "cpu": _cpu_name(),
        "cores": os.cpu_count(),
        "threads": 1,
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],  # before, after
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": sys.modules["torchvision"].__version__ if net.torchvision else None,
        "build": (f"torchvision.models.get_model({net.torchvision!r}, weights=None"
                  + "".join(f", {k}={v!r}" for k, v in net.tv_kwargs) + ")"
                  if net.torchvision else f"workloads.models.networks.{net.build.__name__}()"),
        "date": time.strftime("%Y-%m-%d"),
        "method": (f"per-module median of {runs} backward passes after {warmup} warm-up, "
                   f"{'thread CPU' if clock == 'thread' else 'wall-clock'} time between "
                   f"post-accumulate-grad stamps; a module's time on its last tensor"),
        "parameters": sum(row[1] for row in rows),
        "backward_s": math.fsum(row[2] for row in rows),
    }
    header = json.dumps(entry, indent=1)[:-2]  # without the closing "\n}"
    body = ",\n".join("  " + json.dumps([n, k, round(t, 9), m]) for n, k, t, m in rows)
    path = profile_path(key, batch, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{path.name}")
    tmp.write_text(f'{header},\n "tensors": [\n{body}\n ]\n}}\n')
    os.replace(tmp, path)
    return path, json.loads(path.read_text())


def _shipped_source(entry: dict, tensors: bool) -> str:
    source = (f"profiled on {entry['cpu']}, {entry['date']}, shipped "
              f"(workloads/profiles/{profile_path(entry['network'], entry['batch']).name}): "
              f"torch {entry['torch']}, {entry['threads']} thread, batch {entry['batch']} of "
              f"{entry['input']}, {entry['method']}")
    if tensors:
        source += "; one layer per parameter tensor"
    return source


# --------------------------------------------------------------------------- command line


def write_profiles(names: Iterable[str], batch: int | None = None, runs: int = PROFILE_RUNS,
                   warmup: int = PROFILE_WARMUP, folder: str | os.PathLike = PROFILES_DIR,
                   clock: str = "thread", log=print) -> int:
    """Profile networks `names` one after the other and write their shipped profiles in
    `folder` (`write_profile`), at `batch` (None: each network's default batch); one line
    per network to `log`. 0, or 2 (and the reason on stderr) at the first bad name or
    option."""
    for name in names:
        try:
            _, net = resolve(name, name.lower())
            size = batch if batch is not None else net.default_batch
            if size < 1 or runs < 1 or warmup < 0:
                raise ValueError(f"batch {size} and runs {runs} must be >= 1, warmup >= 0")
        except ValueError as err:
            print(f"profile {name}: {err}", file=sys.stderr)
            return 2
        # One at a time, never in parallel: two profiles on 2 cores would time each other.
        start = time.perf_counter()
        path, entry = write_profile(name, size, runs, warmup, folder, clock)
        modules = len({row[3] for row in entry["tensors"]})
        log(f"{path}: {entry['network']} batch {size}, {len(entry['tensors'])} tensors in "
            f"{modules} modules, {entry['parameters']:,} parameters, backward "
            f"{entry['backward_s']:.3f} s (profiled in {time.perf_counter() - start:.0f} s)")
    return 0


def main(argv=None) -> int:
    """`python -m workloads.models profile NAME... [--batch B]`: write shipped profiles."""
    parser = argparse.ArgumentParser(
        prog="python -m workloads.models",
        description="Profile networks' backward pass on this CPU (one thread) and write "
                    "workloads/profiles/<name>-b<batch>.json, which load() then prefers.")
    commands = parser.add_subparsers(dest="command", required=True)
    prof = commands.add_parser("profile", help="profile networks one after the other")
    prof.add_argument("names", nargs="+", metavar="NAME",
                      help=f"a registered network ({', '.join(NETWORKS)}) or {TORCHVISION}NAME")
    prof.add_argument("--batch", type=int, help="default: the network's default batch")
    prof.add_argument("--runs", type=int, default=PROFILE_RUNS)
    prof.add_argument("--warmup", type=int, default=PROFILE_WARMUP)
    prof.add_argument("--dir", default=str(PROFILES_DIR), help="default: %(default)s")
    prof.add_argument("--clock", choices=sorted(CLOCKS), default="thread",
                      help="thread CPU time (default; robust to other processes) or wall clock")
    args = parser.parse_args(argv)
    return write_profiles(args.names, args.batch, args.runs, args.warmup, args.dir, args.clock,
                          log=lambda line: print(line, flush=True))
