"""Models as the sync workers see them: per-layer gradient sizes and backward times.

A sync algorithm never needs the network itself, only what backpropagation hands it:
the gradient of each layer (elements, float32) and when it becomes ready. So a model
here is a `Model`, a tuple of `Layer(name, numel, backward_s)` in forward order, where
`backward_s` is the time backpropagation spends between the previous layer's gradient
(in backward order) and this one's (MG-WFBP's t_b^(l); Shi et al., INFOCOM 2019).

Duties are split four ways:
- spec parsing and the registry (`load`, `valid_specs`): a spec names a model and its
  options, e.g. `synthetic,mb=4,layers=8,compute_ms=20`, `vgg19,batch=16`,
  `resnet50,tensors=0` or `torchvision:mobilenet_v2`;
- the networks themselves: the project's own in plain torch.nn (`LeNet5`, `VGG19`,
  `ResNet18` for the BML experiments, `ResNet20` and `LSTMPTB` for MG-WFBP and gTop-k)
  and torchvision's ImageNet architectures (built with weights=None: nothing is
  downloaded), and the profiler that times their backward pass on this CPU; results are
  cached in `~/.cache/syncbed/`;
- shipped profiles (`workloads/profiles/<name>-b<batch>.json`, written by
  `python -m workloads.models profile NAME`): the big networks take up to a minute each
  to profile on a shared 2-core machine and come out noisy there, so their per-tensor
  times (thread CPU time, see CLOCKS) travel with the code and `load` prefers them;
- `DigitsTrainer`, real data-parallel SGD of LeNet-5 on scikit-learn's digits, for
  convergence experiments: it produces real gradients and applies the synchronized sum.

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
import types
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import torch
import torch.nn as nn
import torch.nn.functional as F

from common.specs import parse_spec
from common.units import DTYPE_BYTES

MIB = 1 << 20
CACHE_FORMAT = 1  # bump when the profile method changes, so old cache entries are ignored
PROFILE_RUNS = 5  # timed backward passes; the median of each layer's time is kept
PROFILE_WARMUP = 1  # untimed passes first (allocator and kernel selection)
PROFILE_FORMAT = 1  # of the shipped profile files
PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
# Clocks of the profiler. Backward runs on the calling thread here (CPU autograd, one
# intra-op thread), so the thread's CPU time equals wall time on an idle machine but
# leaves out the time other processes held the core: shipped profiles use it, because
# the 2-core machines that make them are shared. Live profiles keep the wall clock
# their cached entries were made with.
CLOCKS = {"wall": time.perf_counter, "thread": time.thread_time}
TORCHVISION = "torchvision:"  # spec prefix: any classification model of torchvision.models
TORCHVISION_BATCH = 2  # default batch of a `torchvision:NAME` spec (ImageNet-size inputs)


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
    512->10 linear classifier: 20,029,514 parameters.

    Not torchvision's `vgg19`, the ImageNet network (224x224 input, 7x7x512 features and
    three linear layers 25088->4096->4096->1000: 143,667,240 parameters); the BML
    experiments use this one, so it stays as it is."""

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


class VGG16CIFAR(nn.Module):
    """VGG-16 for CIFAR-10 as gTop-k's authors train it (hclhkbu/gtopkssgd `models/vgg.py`):
    torchvision's VGG-16 feature layers with BatchNorm (configuration "D"), 32x32 input
    pooled down to 1x1x512, and one 512->10 linear classifier: 14,728,266 parameters, the
    gradient size of the paper's VGG-16 runs. torchvision's `vgg16` is the ImageNet network
    (138,357,544 parameters)."""

    def __init__(self, classes: int = 10):
        super().__init__()
        vgg = torchvision_models().vgg
        self.features = vgg.make_layers(vgg.cfgs["D"], batch_norm=True)
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
    pooling, 512->10 classifier: 11,173,962 parameters.

    Not torchvision's `resnet18` as built (ImageNet: 7x7 stride-2 stem, max-pooling,
    512->1000 classifier, 11,689,512 parameters). With `num_classes=10`, `conv1` replaced
    by a 3x3 stride-1 convolution and `maxpool` by `nn.Identity()`, torchvision's is the
    same network (same 62 parameter tensors, shapes and order; its shortcut is called
    `downsample`); this definition stays so that layer names and the BML experiments'
    numbers do not change."""

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




class CifarBlock(nn.Module):
    """Basic block of He et al.'s CIFAR ResNets (2016, §4.2) with their option A shortcut:
    where a stage halves the map and doubles the channels, the identity is subsampled
    (stride 2) and zero-padded with the missing channels, so shortcuts own no parameters."""

    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.stride, self.extra = stride, planes - in_planes

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        shortcut = x
        if self.stride != 1 or self.extra:
            shortcut = x[:, :, ::self.stride, ::self.stride]
            half = self.extra // 2
            shortcut = F.pad(shortcut, (0, 0, 0, 0, half, self.extra - half))
        return F.relu(out + shortcut)


class ResNet20(nn.Module):
    """ResNet-20 for CIFAR-10 (He et al. 2016, §4.2): a 3x3 convolution to 16 channels,
    three stages of n=3 basic blocks with 16, 32 and 64 channels on 32x32, 16x16 and 8x8
    maps, global average pooling and a 64->10 classifier: 6n+2 = 20 weighted layers.
    Option A shortcuts (the paper's choice on CIFAR) own no parameters, so the network
    has 269,722 (the paper's "0.27M"): 432 + 32 (stem), 14,016 + 51,072 + 203,520
    (stages), 650 (classifier); 59 parameter tensors."""

    def __init__(self, classes: int = 10, blocks: int = 3):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        stages, in_planes = [], 16
        for planes, stride in ((16, 1), (32, 2), (64, 2)):
            stages.append(nn.Sequential(*(CifarBlock(in_planes if i == 0 else planes, planes,
                                                     stride if i == 0 else 1)
                                          for i in range(blocks))))
            in_planes = planes
        self.layer1, self.layer2, self.layer3 = stages
        self.linear = nn.Linear(64, classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        out = torch.flatten(F.adaptive_avg_pool2d(out, 1), 1)
        return self.linear(out)


class LSTMPTB(nn.Module):
    """Word-level LSTM language model on Penn Treebank, the "large" network of Zaremba
    et al. 2014: a 10,000-word vocabulary embedded in 1500 dimensions, 2 LSTM layers of
    1500 units, dropout 0.65, an untied 1500->10,000 decoder, unrolled over 35 steps with
    batches of 20: 15,000,000 + 2 x 18,012,000 + 15,010,000 = 66,034,000 parameters.

    The size is the one of the LSTM that MG-WFBP's public PyTorch code trains on PTB
    (`lstm(vocab_size, batch_size)` with its defaults: 1500 units, 2 layers, 35 steps,
    batch 20) and of gTop-k's LSTM-PTB (66.0M parameters, docs/papers/gtopk.md). One
    copy of that `lstm` class ties the decoder to the embedding (51,034,000 distinct
    parameters); untied, as here, is Zaremba et al.'s 66M large model. Each LSTM layer is
    an nn.LSTM of its own, so that the layer is a module: the upper layer's gradients
    are complete before the lower one's, and module granularity keeps them apart.
    Input: token ids (batch, 35); output: logits (batch, 35, 10,000).
    """

    def __init__(self, vocab: int = 10_000, hidden: int = 1500, layers: int = 2,
                 dropout: float = 0.65):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.rnn = nn.ModuleList(nn.LSTM(hidden, hidden, batch_first=True) for _ in range(layers))
        self.drop = nn.Dropout(dropout)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        x = self.drop(self.embedding(tokens))
        for rnn in self.rnn:
            x, _ = rnn(x)  # zero initial state: one truncated-BPTT window
            x = self.drop(x)
        return self.decoder(x)


def torchvision_models() -> types.ModuleType:
    """`torchvision.models`, imported on first use (about 2 s, paid only by specs that need it).

    PyPI's torchvision 0.28.0 wheel is built against the CUDA torch: its C extension (the
    detection ops, e.g. nms) links libc10_cuda.so, which the CPU build of torch lacks.
    torchvision then runs without the extension, except that `_meta_registrations`
    registers a fake nms kernel unconditionally and the import fails with "operator
    torchvision::nms does not exist" (pytorch/vision#9085). Classification models use
    none of those ops, so on exactly that failure the import is retried with that one
    module replaced by an empty one (nothing was registered before it failed).
    """
    try:
        import torchvision  # noqa: PLC0415
    except RuntimeError as err:
        if "torchvision::nms" not in str(err):
            raise
        for module in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[module]
        sys.modules["torchvision._meta_registrations"] = types.ModuleType("torchvision._meta_registrations")
        import torchvision  # noqa: PLC0415
    return torchvision.models


def _torchvision_builder(name: str, **kwargs) -> Callable[[], nn.Module]:
    def build():
        with warnings.catch_warnings():
            # googlenet and inception_v3 warn that their default initialisation will
            # change; initial values matter to neither gradient sizes nor backward times.
            warnings.filterwarnings("ignore", "The default weight initialization", FutureWarning)
            return torchvision_models().get_model(name, weights=None, **kwargs)
    return build


def param_layers(net: nn.Module) -> list:
    """`[(name, module)]` for the modules owning parameters directly, in declaration
    order (equal to forward order for the project's networks; the unit tests check it)."""
    return [(name, module) for name, module in net.named_modules()
            if any(True for _ in module.parameters(recurse=False))]


def _layer_numel(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters(recurse=False))


@dataclass(frozen=True)
class _Network:
    build: Callable[[], nn.Module]
    input_shape: tuple  # one sample: (C, H, W) of an image, or (T,) token ids
    classes: int  # classes, or the vocabulary of a language model
    default_batch: int
    summary: str
    tensors: bool = False  # default granularity: one layer per parameter tensor
    tokens: bool = False  # language model: integer input, a target per token
    torchvision: str = ""  # torchvision.models name ("": the project's own network)
    tv_kwargs: tuple = ()  # (key, value) pairs passed to torchvision's builder


def _tv(name: str, input_size: int, batch: int, summary: str, **kwargs) -> _Network:
    return _Network(_torchvision_builder(name, **kwargs), (3, input_size, input_size), 1000,
                    batch, summary, tensors=True, torchvision=name,
                    tv_kwargs=tuple(sorted(kwargs.items())))


# Default batches keep an uncached profile (1 warm-up + PROFILE_RUNS passes, one thread)
# within a few seconds; pass `,batch=B` for the batch of the experiment being reproduced.
# For the networks with a shipped profile the default is the shipped batch (SHIPPED).
NETWORKS = {
    "lenet5": _Network(LeNet5, (1, 32, 32), 10, 64, "LeNet-5, 1x32x32 input, 10 classes"),
    "vgg19": _Network(VGG19, (3, 32, 32), 10, 16, "VGG-19 (CIFAR-10, no BatchNorm)"),
    "resnet18": _Network(ResNet18, (3, 32, 32), 10, 16, "ResNet-18 (CIFAR-10 variant)"),
    "resnet20": _Network(ResNet20, (3, 32, 32), 10, 32, "ResNet-20 (CIFAR-10, He et al. 2016)",
                         tensors=True),
    "resnet50": _tv("resnet50", 224, 2, "torchvision ResNet-50 (ImageNet)"),
    "resnet152": _tv("resnet152", 224, 2, "torchvision ResNet-152 (ImageNet)"),
    # With both auxiliary classifiers, trained with their losses, like the GoogLeNet of
    # MG-WFBP's INFOCOM runs (B-Caffe trace: 13,379,136 parameters, docs/papers/mgwfbp.md;
    # torchvision's has BatchNorm: 13,004,888). Inception-v3 without its auxiliary head,
    # as MG-WFBP's PyTorch code builds it; `torchvision:inception_v3` keeps it.
    "googlenet": _tv("googlenet", 224, 2, "torchvision GoogLeNet (ImageNet, with both aux heads)"),
    "densenet201": _tv("densenet201", 224, 2, "torchvision DenseNet-201 (ImageNet)"),
    "inception_v3": _tv("inception_v3", 299, 2, "torchvision Inception-v3 (ImageNet 299x299, no aux head)",
                        aux_logits=False, init_weights=True),
    "vgg16": _tv("vgg16", 224, 2, "torchvision VGG-16 (ImageNet)"),
    "vgg16_cifar": _Network(VGG16CIFAR, (3, 32, 32), 10, 32,
                            "VGG-16 with BatchNorm (CIFAR-10, gTop-k's; torchvision's feature layers)", tensors=True),
    "alexnet": _tv("alexnet", 224, 2, "torchvision AlexNet (ImageNet)"),
    "lstm_ptb": _Network(LSTMPTB, (35,), 10_000, 20,
                         "LSTM language model, PTB (Zaremba et al. large: 2x1500, 35 steps)",
                         tensors=True, tokens=True),
}
# Shipped profiles (workloads/profiles/), regenerated with
# `python -m workloads.models profile <names>`, one network after the other.
SHIPPED = ("resnet20", "resnet50", "resnet152", "googlenet", "densenet201", "inception_v3",
           "vgg16", "vgg16_cifar", "alexnet", "lstm_ptb")
# torchvision:NAME is timed on ImageNet's 224x224 except where the architecture has its
# own size; networks trained at other resolutions (EfficientNet-B1..B7) run at 224 too.
TORCHVISION_INPUT = {"inception_v3": 299}


def _torchvision_network(name: str) -> _Network:
    """A `torchvision:NAME` network: torchvision's builder with its own defaults."""
    size = TORCHVISION_INPUT.get(name, 224)
    return _Network(_torchvision_builder(name), (3, size, size), 1000, TORCHVISION_BATCH,
                    f"torchvision {name} (ImageNet {size}x{size}, torchvision's defaults)",
                    tensors=True, torchvision=name)


def _resolve(spec: str, name: str) -> tuple:
    """(registry key, _Network) of model `name` (lower case); ValueError names the valid ones.

    `torchvision:NAME` is any classification model of torchvision.models; one that equals
    a registered network (`torchvision:resnet50` is `resnet50`) resolves to it, so it
    shares its shipped profile and cache entries."""
    if name in NETWORKS:
        return name, NETWORKS[name]
    if not name.startswith(TORCHVISION):
        raise _bad(spec, f"unknown model {name!r}")
    tv_name = name[len(TORCHVISION):]
    zoo = torchvision_models()
    valid = zoo.list_models(module=zoo)
    if tv_name not in valid:
        raise _bad(spec, f"unknown torchvision model {tv_name!r} (torchvision "
                         f"{sys.modules['torchvision'].__version__} has: {', '.join(valid)})")
    for key, net in NETWORKS.items():
        if net.torchvision == tv_name and not net.tv_kwargs:
            return key, net
    return name, _torchvision_network(tv_name)


def build_network(name: str) -> nn.Module:
    """A fresh instance of a registered network or `torchvision:NAME` (no weights loaded)."""
    _, net = _resolve(name, name.lower())
    return net.build()


# --------------------------------------------------------------------------- specs


def valid_specs() -> list:
    """Spec templates, defaults shown in brackets; used in every error message."""
    specs = ["synthetic,mb=<MiB>[,layers=1][,compute_ms=0]"]
    specs += [f"{name}[,batch={net.default_batch}]" for name, net in NETWORKS.items()]
    specs += [f"{TORCHVISION}NAME[,batch={TORCHVISION_BATCH}] (NAME: any of "
              f"torchvision.models.list_models(module=torchvision.models))",
              "<network>,tensors=0|1 (1: a layer per parameter tensor, the default for all "
              "but lenet5, vgg19, resnet18; 0: per module)"]
    return specs


def _bad(spec: str, what: str) -> ValueError:
    return ValueError(f"bad model spec {spec!r}: {what}; valid specs: {' | '.join(valid_specs())}")


def _parse(spec: str) -> tuple:
    """`'name,k=v,...'` -> (name, {k: v}): the one spec parser (common/specs.py), with the
    valid model specs listed on a syntax error."""
    try:
        return parse_spec(spec, "model")
    except ValueError as e:
        raise _bad(str(spec), str(e).split(": ", 1)[-1] if ": " in str(e) else "empty spec") from None


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

    A network with a shipped profile for the batch asked (`workloads/profiles/`) is read
    from it. Otherwise it is profiled on this CPU the first time (one thread, see
    `profile`) and the result is cached in `cache_dir` (default `$SYNCBED_CACHE_DIR` or
    `~/.cache/syncbed/`), keyed by spec, torch version and CPU model.
    """
    name, options = _parse(spec)
    if name == "synthetic":
        return _synthetic(spec, options)
    key, net = _resolve(spec, name)
    unknown = set(options) - {"batch", "tensors"}
    if unknown:
        raise _bad(spec, f"unknown option(s) {', '.join(sorted(unknown))} for {name}")
    batch = _number(spec, "batch", options.get("batch", str(net.default_batch)), int, 1, strict=False)
    tensors = options.get("tensors", "1" if net.tensors else "0")
    if tensors not in ("0", "1"):
        raise _bad(spec, f"tensors={tensors} must be 0 or 1")
    tensors = tensors == "1"
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
    key, net = _resolve(name, name.lower())
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
    _, spec_net = _resolve(name, name.lower())
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


def _example(net: _Network, batch: int) -> tuple:
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


def _input_text(net: _Network) -> str:
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
                         f"python -m workloads.models profile {name} --batch {batch}") from None
    return entry


def write_profile(name: str, batch: int, runs: int = PROFILE_RUNS, warmup: int = PROFILE_WARMUP,
                  folder: str | os.PathLike | None = None, clock: str = "thread") -> tuple:
    """Profile network `name` (`measure`) and write it for shipping: (path, entry).
    One row per line keeps the file small and its diffs readable."""
    key, net = _resolve(name, name.lower())
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
                  if net.torchvision else f"workloads.models.{net.build.__name__}()"),
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


# --------------------------------------------------------------------------- real training


@dataclass(frozen=True)
class _TrainNet:
    """A network `DigitsTrainer` can train: the registry network and how the digits feed it."""

    network: str  # key of NETWORKS: the very network (and layer layout) of that spec
    channels: int  # input channels; the grey digit is repeated on each
    image_size: int  # the 8x8 digit upsampled (nearest) to image_size x image_size
    summary: str


# Networks real training runs (job option `train_model`). resnet20 is gTop-k's CIFAR network
# (Shi et al. 2019 train it at density 0.001): its 269,722-element gradient keeps k = 270
# entries at that density, where LeNet-5's 61,706 keep 62. It is fed the grey digit repeated
# on its 3 input channels, so the network is exactly the `resnet20` spec (same 59 tensors,
# the layout of its shipped profile); at 16x16, not CIFAR's 32x32: ResNet-20 pools globally,
# so the size changes no parameter, and 16x16 costs a third of 32x32's compute per image (the
# convergence experiment trains 16 ranks on 2 cores) while still giving the digit 2x2 pixels
# per original one, the last stage 4x4 maps. resnet18 is DFS's network (Yang et al. 2023 train
# ResNet-18): the CIFAR variant of `NETWORKS["resnet18"]`, which is torchvision's resnet18 with
# a 3x3 stride-1 stem and no max-pooling (see ResNet18), fed the digit at its native 8x8 (its
# stages then run at 8, 4, 2 and 1 pixels): 51 ms per forward+backward of 8 images on one
# core here, where 16x16 took 105 ms, so 4 ranks train on 2 cores while the network is timed.
TRAIN_MODELS = {
    "lenet5": _TrainNet("lenet5", 1, 32, "LeNet-5 (61,706 parameters), the digit at 1x32x32"),
    "resnet18": _TrainNet("resnet18", 3, 8, "ResNet-18 (11,173,962 parameters, torchvision's adapted to small "
                                         "inputs), the digit repeated on 3 channels at its own 8x8"),
    "resnet20": _TrainNet("resnet20", 3, 16, "ResNet-20 (269,722 parameters), the digit repeated "
                                             "on 3 channels at 16x16"),
}


_DIGITS_CACHE: dict = {}  # image size -> the split as tensors (a cache, not configuration)


def _digits(image_size: int) -> dict:
    """The fixed split of scikit-learn's digits as float tensors (N, 1, S, S); computed once
    per process and size, and shared by every replica (W replicas per rank in the oracle)."""
    cached = _DIGITS_CACHE.get(image_size)
    if cached is None:
        from sklearn.datasets import load_digits  # noqa: PLC0415 (only real training needs it)
        from sklearn.model_selection import train_test_split  # noqa: PLC0415

        digits = load_digits()
        x_train, x_test, y_train, y_test = train_test_split(
            digits.images, digits.target, test_size=DigitsTrainer.TEST_FRACTION,
            random_state=DigitsTrainer.SPLIT_SEED, stratify=digits.target)

        def tensors(images, labels):
            x = ((torch.tensor(images, dtype=torch.float32).unsqueeze(1) / 16.0 - DigitsTrainer.PIXEL_MEAN)
                 / DigitsTrainer.PIXEL_STD)
            x = F.interpolate(x, size=(image_size, image_size), mode="nearest")
            return x, torch.tensor(labels, dtype=torch.long)

        (xa, ya), (xb, yb) = tensors(x_train, y_train), tensors(x_test, y_test)
        cached = _DIGITS_CACHE[image_size] = {"x_train": xa, "y_train": ya, "x_test": xb, "y_test": yb}
    return cached


class DigitsTrainer:
    """Data-parallel SGD of a registry network (`model`: a key of TRAIN_MODELS, LeNet-5 by
    default) on scikit-learn's digits (1,797 8x8 images, shipped with the package), one
    instance per rank.

    The 8x8 images (0..16, scaled to [0, 1], then standardised) are upsampled (nearest) to
    the network's input: 32x32 for LeNet-5, so the network is exactly the `lenet5` spec
    (61,706 parameters, same five layers) and the digit fills the input field as MNIST does
    in the original LeNet-5; 16x16 on 3 identical channels for ResNet-20 (see TRAIN_MODELS).
    A fixed stratified 80/20 split (independent of `seed`) gives 1,437 training and
    360 held-out images.

    Sharding follows torch's DistributedSampler: each epoch the training split is
    permuted from (seed, epoch), the permutation is cut to a multiple of `workers`,
    and rank r takes every workers-th index from r. Iteration i is batch
    i mod steps_per_epoch of epoch i div steps_per_epoch, where steps_per_epoch =
    (n_train div workers) div batch. The union of the W ranks' batches at iteration i
    is then exactly the single-process batch of size W*batch at iteration i, so
    averaging the W gradients reproduces single-process SGD with batch W*batch
    (exactly for LeNet-5; a network with BatchNorm normalises over each rank's own batch,
    as DistributedDataParallel without SyncBatchNorm does).
    Every rank initialises the model from `seed` alone, so all start identical. BatchNorm's
    running statistics are buffers, not gradients: each instance keeps those of its own
    batches, and `evaluate` uses them.
    """

    TEST_FRACTION = 0.2
    SPLIT_SEED = 0
    PIXEL_MEAN, PIXEL_STD = 0.305, 0.376  # of all 1,797 images scaled to [0, 1]

    def __init__(self, rank: int = 0, workers: int = 1, seed: int = 0, batch: int = 32,
                 model: str = "lenet5"):
        if model not in TRAIN_MODELS:
            raise ValueError(f"DigitsTrainer: unknown model {model!r}; valid: {', '.join(TRAIN_MODELS)}")
        if not (isinstance(workers, int) and workers >= 1):
            raise ValueError(f"DigitsTrainer: workers must be an int >= 1, got {workers!r}")
        if not (isinstance(rank, int) and 0 <= rank < workers):
            raise ValueError(f"DigitsTrainer: rank must be in 0..{workers - 1}, got {rank!r}")
        if not (isinstance(batch, int) and batch >= 1):
            raise ValueError(f"DigitsTrainer: batch must be an int >= 1, got {batch!r}")
        self.rank, self.workers, self.seed, self.batch = rank, workers, seed, batch
        self.model, self.spec = model, TRAIN_MODELS[model]

        data = _digits(self.spec.image_size)
        self.x_train, self.y_train = data["x_train"], data["y_train"]
        self.x_test, self.y_test = data["x_test"], data["y_test"]
        self.steps_per_epoch = (len(self.y_train) // workers) // batch
        if self.steps_per_epoch < 1:
            raise ValueError(
                f"DigitsTrainer: {workers} workers x batch {batch} exceed the "
                f"{len(self.y_train)} training images")

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.net = NETWORKS[self.spec.network].build()
        self._layers = param_layers(self.net)
        self._params = [p for _, module in self._layers for p in module.parameters(recurse=False)]
        self._names = [f"{name}.{p}" if name else p for name, module in self._layers
                       for p, _ in module.named_parameters(recurse=False)]

    def _input(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.spec.channels == 1 else x.expand(-1, self.spec.channels, -1, -1)

    def _tensors_wanted(self, tensors) -> bool:
        return NETWORKS[self.spec.network].tensors if tensors is None else bool(tensors)

    def layer_names(self, tensors: bool | None = None) -> list:
        """Layer names as `load(model)` names them: per module (lenet5) or per parameter
        tensor (resnet20), or as `tensors` says."""
        if self._tensors_wanted(tensors):
            return list(self._names)
        return [name for name, _ in self._layers]

    def layer_sizes(self, tensors: bool | None = None) -> list:
        """Elements per layer, forward order; the layout of `gradients()`. Default: the
        granularity `load(model)` has (per module for lenet5, per tensor for resnet20)."""
        if self._tensors_wanted(tensors):
            return [p.numel() for p in self._params]
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
        `iteration`, layers in forward order (weight then bias). Parameters unchanged
        (BatchNorm's running statistics do follow the batch, as in any training step)."""
        index = self.batch_indices(iteration)
        self.net.train()
        self.net.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.net(self._input(self.x_train[index])), self.y_train[index])
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
            logits = self.net(self._input(self.x_test))
            loss = F.cross_entropy(logits, self.y_test).item()
            accuracy = (logits.argmax(1) == self.y_test).float().mean().item()
        return loss, accuracy


# --------------------------------------------------------------------------- command line


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
    for name in args.names:
        try:
            _, net = _resolve(name, name.lower())
            batch = args.batch if args.batch is not None else net.default_batch
            if batch < 1 or args.runs < 1 or args.warmup < 0:
                raise ValueError(f"batch {batch} and runs {args.runs} must be >= 1, warmup >= 0")
        except ValueError as err:
            print(f"profile {name}: {err}", file=sys.stderr)
            return 2
        # One at a time, never in parallel: two profiles on 2 cores would time each other.
        start = time.perf_counter()
        path, entry = write_profile(name, batch, args.runs, args.warmup, args.dir, args.clock)
        modules = len({row[3] for row in entry["tensors"]})
        print(f"{path}: {entry['network']} batch {batch}, {len(entry['tensors'])} tensors in "
              f"{modules} modules, {entry['parameters']:,} parameters, backward "
              f"{entry['backward_s']:.3f} s (profiled in {time.perf_counter() - start:.0f} s)",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
