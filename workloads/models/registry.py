"""The registry of networks: which name of a model spec builds which network, with what
input, default batch and granularity.

`NETWORKS` holds the project's own networks (networks.py) and the torchvision ones the
papers use; a spec `torchvision:NAME` is any classification model of torchvision.models.
`resolve` turns a spec's name into its registry key and `Network`; `valid_specs` lists
every spec form (specs.py parses the options, `synthetic` included) and `bad_spec` is the
one error every wrong spec gets. `SHIPPED` are the networks whose backward profile travels
with the code (workloads/profiles/, see profiles.py).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

import torch.nn as nn

from workloads.models.networks import (LSTMPTB, VGG16CIFAR, VGG19, LeNet5, ResNet18, ResNet20,
                                       torchvision_builder, torchvision_models)

TORCHVISION = "torchvision:"  # spec prefix: any classification model of torchvision.models
TORCHVISION_BATCH = 2  # default batch of a `torchvision:NAME` spec (ImageNet-size inputs)


@dataclass(frozen=True)
class Network:
    """A registered network: how to build it, one sample's input, its default batch and
    granularity (`tensors`), and for torchvision's the name and builder options."""

    build: Callable[[], nn.Module]
    input_shape: tuple  # one sample: (C, H, W) of an image, or (T,) token ids
    classes: int  # classes, or the vocabulary of a language model
    default_batch: int
    summary: str
    tensors: bool = False  # default granularity: one layer per parameter tensor
    tokens: bool = False  # language model: integer input, a target per token
    torchvision: str = ""  # torchvision.models name ("": the project's own network)
    tv_kwargs: tuple = ()  # (key, value) pairs passed to torchvision's builder


def _tv(name: str, input_size: int, batch: int, summary: str, **kwargs) -> Network:
    return Network(torchvision_builder(name, **kwargs), (3, input_size, input_size), 1000,
                   batch, summary, tensors=True, torchvision=name,
                   tv_kwargs=tuple(sorted(kwargs.items())))


# Default batches keep an uncached profile (1 warm-up + profiles.PROFILE_RUNS passes, one thread)
# within a few seconds; pass `,batch=B` for the batch of the experiment being reproduced.
# For the networks with a shipped profile the default is the shipped batch (SHIPPED).
NETWORKS = {
    "lenet5": Network(LeNet5, (1, 32, 32), 10, 64, "LeNet-5, 1x32x32 input, 10 classes"),
    "vgg19": Network(VGG19, (3, 32, 32), 10, 16, "VGG-19 (CIFAR-10, no BatchNorm)"),
    "resnet18": Network(ResNet18, (3, 32, 32), 10, 16, "ResNet-18 (CIFAR-10 variant)"),
    "resnet20": Network(ResNet20, (3, 32, 32), 10, 32, "ResNet-20 (CIFAR-10, He et al. 2016)",
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
    "vgg16_cifar": Network(VGG16CIFAR, (3, 32, 32), 10, 32,
                           "VGG-16 with BatchNorm (CIFAR-10, gTop-k's; torchvision's feature layers)", tensors=True),
    "alexnet": _tv("alexnet", 224, 2, "torchvision AlexNet (ImageNet)"),
    "lstm_ptb": Network(LSTMPTB, (35,), 10_000, 20,
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


def _torchvision_network(name: str) -> Network:
    """A `torchvision:NAME` network: torchvision's builder with its own defaults."""
    size = TORCHVISION_INPUT.get(name, 224)
    return Network(torchvision_builder(name), (3, size, size), 1000, TORCHVISION_BATCH,
                   f"torchvision {name} (ImageNet {size}x{size}, torchvision's defaults)",
                   tensors=True, torchvision=name)


def resolve(spec: str, name: str) -> tuple:
    """(registry key, Network) of model `name` (lower case); ValueError names the valid ones.

    `torchvision:NAME` is any classification model of torchvision.models; one that equals
    a registered network (`torchvision:resnet50` is `resnet50`) resolves to it, so it
    shares its shipped profile and cache entries."""
    if name in NETWORKS:
        return name, NETWORKS[name]
    if not name.startswith(TORCHVISION):
        raise bad_spec(spec, f"unknown model {name!r}")
    tv_name = name[len(TORCHVISION):]
    zoo = torchvision_models()
    valid = zoo.list_models(module=zoo)
    if tv_name not in valid:
        raise bad_spec(spec, f"unknown torchvision model {tv_name!r} (torchvision "
                             f"{sys.modules['torchvision'].__version__} has: {', '.join(valid)})")
    for key, net in NETWORKS.items():
        if net.torchvision == tv_name and not net.tv_kwargs:
            return key, net
    return name, _torchvision_network(tv_name)


def build_network(name: str) -> nn.Module:
    """A fresh instance of a registered network or `torchvision:NAME` (no weights loaded)."""
    _, net = resolve(name, name.lower())
    return net.build()


def valid_specs() -> list:
    """Spec templates, defaults shown in brackets; used in every error message."""
    specs = ["synthetic,mb=<MiB>[,layers=1][,compute_ms=0]"]
    specs += [f"{name}[,batch={net.default_batch}]" for name, net in NETWORKS.items()]
    specs += [f"{TORCHVISION}NAME[,batch={TORCHVISION_BATCH}] (NAME: any of "
              f"torchvision.models.list_models(module=torchvision.models))",
              "<network>,tensors=0|1 (1: a layer per parameter tensor, the default for all "
              "but lenet5, vgg19, resnet18; 0: per module)"]
    return specs


def bad_spec(spec: str, what: str) -> ValueError:
    """The error of a wrong model spec: what is wrong, and every valid form."""
    return ValueError(f"bad model spec {spec!r}: {what}; valid specs: {' | '.join(valid_specs())}")

