"""Model specs: `load(spec)`, the one way from a spec string to a `Model`.

A spec names a model and its options, e.g. `synthetic,mb=4,layers=8,compute_ms=20`,
`vgg19,batch=16`, `resnet50,tensors=0` or `torchvision:mobilenet_v2` (every form:
`registry.valid_specs()`). `synthetic` is built here (equal float32 layers, a backward
time spread evenly); a network's layers and backward times come from profiles.py.
"""
from __future__ import annotations

import math
import os

from common.specs import parse_spec
from common.units import DTYPE_BYTES
from workloads.models.layers import Layer, Model
from workloads.models.profiles import network_model
from workloads.models.registry import bad_spec, resolve

MIB = 1 << 20


def _parse(spec: str) -> tuple:
    """`'name,k=v,...'` -> (name, {k: v}): the one spec parser (common/specs.py), with the
    valid model specs listed on a syntax error."""
    try:
        return parse_spec(spec, "model")
    except ValueError as e:
        raise bad_spec(str(spec), str(e).split(": ", 1)[-1] if ": " in str(e) else "empty spec") from None


def _number(spec: str, key: str, value: str, kind, minimum, strict: bool):
    try:
        number = kind(value)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise bad_spec(spec, f"{key}={value!r} is not {what}") from None
    if not math.isfinite(number) or number < minimum or (strict and number == minimum):
        raise bad_spec(spec, f"{key}={value} must be {'>' if strict else '>='} {minimum}")
    return number


def _synthetic(spec: str, options: dict) -> Model:
    unknown = set(options) - {"mb", "layers", "compute_ms"}
    if unknown:
        raise bad_spec(spec, f"unknown option(s) {', '.join(sorted(unknown))} for synthetic")
    if "mb" not in options:
        raise bad_spec(spec, "synthetic needs mb=<MiB>")
    mb = _number(spec, "mb", options["mb"], float, 0, strict=True)
    count = _number(spec, "layers", options.get("layers", "1"), int, 1, strict=False)
    compute_ms = _number(spec, "compute_ms", options.get("compute_ms", "0"), float, 0, strict=False)
    elements = mb * MIB / DTYPE_BYTES
    if elements != int(elements):
        raise bad_spec(spec, f"mb={options['mb']} is not a whole number of float32 elements")
    elements = int(elements)
    if elements < count:
        raise bad_spec(spec, f"{elements} elements cannot fill layers={count}")
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
    """The model named by `spec` (see `registry.valid_specs()`); ValueError says what is wrong.

    A network with a shipped profile for the batch asked (`workloads/profiles/`) is read
    from it. Otherwise it is profiled on this CPU the first time (one thread, see
    `profiles.profile`) and the result is cached in `cache_dir` (default
    `$SYNCBED_CACHE_DIR` or `~/.cache/syncbed/`), keyed by spec, torch version and CPU model.
    """
    name, options = _parse(spec)
    if name == "synthetic":
        return _synthetic(spec, options)
    key, net = resolve(spec, name)
    unknown = set(options) - {"batch", "tensors"}
    if unknown:
        raise bad_spec(spec, f"unknown option(s) {', '.join(sorted(unknown))} for {name}")
    batch = _number(spec, "batch", options.get("batch", str(net.default_batch)), int, 1, strict=False)
    tensors = options.get("tensors", "1" if net.tensors else "0")
    if tensors not in ("0", "1"):
        raise bad_spec(spec, f"tensors={tensors} must be 0 or 1")
    tensors = tensors == "1"
    return network_model(spec, key, batch, tensors, cache_dir)
