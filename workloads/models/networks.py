"""The networks themselves, in plain torch.nn, and torchvision's, built without weights.

The project's own: `LeNet5`, `VGG19` and `ResNet18` (CIFAR variants) for the BML
experiments, `ResNet20`, `VGG16CIFAR` and `LSTMPTB` for MG-WFBP and gTop-k. torchvision's
ImageNet architectures come from `torchvision_builder` (weights=None: nothing is
downloaded). Which spec name builds which network, with what input and default batch, is
registry.py; `param_layers` is what a layer of a model is made of (the modules owning
parameters), for the profiler (profiles.py) and the trainer (workloads/training.py).
"""
from __future__ import annotations

import sys
import types
import warnings
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


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


def _main_branch(block: nn.Module, in_planes: int, planes: int, stride: int) -> None:
    """A basic block's two 3x3 convolutions with their batch norms, declared in forward order
    (both ResNet blocks below; only their shortcuts differ)."""
    block.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
    block.bn1 = nn.BatchNorm2d(planes)
    block.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
    block.bn2 = nn.BatchNorm2d(planes)


class BasicBlock(nn.Module):
    """ResNet basic block; the projection shortcut is declared last so that module
    order equals forward order (the shortcut is computed after the main branch)."""

    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        _main_branch(self, in_planes, planes, stride)
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
        _main_branch(self, in_planes, planes, stride)
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


def torchvision_builder(name: str, **kwargs) -> Callable[[], nn.Module]:
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


def layer_numel(module: nn.Module) -> int:
    """Elements of the parameters `module` owns directly (one layer of `param_layers`)."""
    return sum(p.numel() for p in module.parameters(recurse=False))

