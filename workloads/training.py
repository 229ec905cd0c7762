"""Real training mode: data-parallel SGD on scikit-learn's digits (no download).

`DigitsTrainer` is one replica: a registry network (a key of `TRAIN_MODELS`, job option
`train_model`: LeNet-5, the default, ResNet-20, whose 269,722-element gradient keeps k = 270
entries at gTop-k's density 0.001, or ResNet-18), its data shard, its real gradient of an
iteration and its SGD step with the synchronized sum. `DataParallelDigits` is what a worker
rank holds: one `DigitsTrainer` replica per worker rank (W networks, identical parameters,
each on its own data shard, sharing one copy of the data). Its own gradient comes from
replica `rank`; the oracle needs every worker's gradient, so `all_gradients` computes all W
locally (no network): O(W) backward passes per rank and iteration, O(W^2) over the job.
`own_gradient` computes replica `rank`'s alone, for the iterations past the job's
`check_iters`, where nothing is checked any more.

After the sync every replica applies the synchronized sum, checked or not, so all ranks
hold the same parameters and rank 0's held-out loss/accuracy can be plotted against
iterations. Synchronized SGD with W workers of batch b equals single-process SGD with
batch W*b (tests/unit/test_training.py; for LeNet-5 exactly, ResNet-20's BatchNorm
normalises per rank as DDP without SyncBatchNorm does). A replica whose gradient is no longer
computed keeps its last BatchNorm running statistics; only replica `rank` is evaluated.

The learning rate follows torch's `MultiStepLR`: `lr`, multiplied by `lr_gamma` at each
iteration of `lr_milestones` (none by default: constant, as before).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from workloads.models.networks import layer_numel, param_layers
from workloads.models.registry import NETWORKS

RTOL, ATOL = 1e-4, 1e-6  # the sync sums floats in another order than the oracle


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
        """Layer names as `specs.load(model)` names them: per module (lenet5) or per parameter
        tensor (resnet20), or as `tensors` says."""
        if self._tensors_wanted(tensors):
            return list(self._names)
        return [name for name, _ in self._layers]

    def layer_sizes(self, tensors: bool | None = None) -> list:
        """Elements per layer, forward order; the layout of `gradients()`. Default: the
        granularity `specs.load(model)` has (per module for lenet5, per tensor for resnet20)."""
        if self._tensors_wanted(tensors):
            return [p.numel() for p in self._params]
        return [layer_numel(module) for _, module in self._layers]

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


class DataParallelDigits:
    """A worker rank's replicas: one `DigitsTrainer` per worker rank, all stepping with the
    synchronized sum at the learning rate of the iteration (see the module docstring)."""

    def __init__(self, rank: int, workers: int, seed: int = 0, batch: int = 32, lr: float = 0.1,
                 model: str = "lenet5", lr_milestones=(), lr_gamma: float = 0.1):
        if not (isinstance(lr, (int, float)) and lr > 0):
            raise ValueError(f"DataParallelDigits: lr must be a number > 0, got {lr!r}")
        milestones = list(lr_milestones or ())
        if any(not isinstance(m, int) or isinstance(m, bool) or m < 1 for m in milestones) \
                or milestones != sorted(set(milestones)):
            raise ValueError(f"DataParallelDigits: lr_milestones must be increasing ints >= 1 "
                             f"(iterations where lr is multiplied by lr_gamma), got {lr_milestones!r}")
        if not (isinstance(lr_gamma, (int, float)) and lr_gamma > 0):
            raise ValueError(f"DataParallelDigits: lr_gamma must be a number > 0, got {lr_gamma!r}")
        self.rank, self.workers, self.lr = rank, workers, float(lr)
        self.lr_milestones, self.lr_gamma = milestones, float(lr_gamma)
        self.replicas = [DigitsTrainer(r, workers, seed, batch, model) for r in range(workers)]

    def layer_sizes(self, tensors: bool | None = None) -> list:
        return self.replicas[0].layer_sizes(tensors)

    def lr_at(self, iteration: int) -> float:
        """The learning rate of `iteration` (MultiStepLR: lr * gamma^(milestones <= iteration))."""
        return self.lr * self.lr_gamma ** sum(m <= iteration for m in self.lr_milestones)

    def own_gradient(self, iteration: int) -> torch.Tensor:
        """This rank's gradient of one iteration, nobody else's computed."""
        return self.replicas[self.rank].gradients(iteration)

    def gradients(self, iteration: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(this rank's gradient, the sum over all workers' gradients) of one iteration."""
        grads = self.all_gradients(iteration)
        return grads[self.rank].clone(), torch.stack(grads).sum(0)

    def all_gradients(self, iteration: int) -> list:
        """Every worker's gradient of one iteration, rank order (the inputs of any oracle)."""
        return [t.gradients(iteration) for t in self.replicas]

    def apply(self, synchronized_sum: torch.Tensor, iteration: int | None = None) -> None:
        """Every replica steps with the synchronized sum (at `iteration`'s learning rate;
        None: the base lr)."""
        lr = self.lr if iteration is None else self.lr_at(iteration)
        for t in self.replicas:
            t.apply(synchronized_sum, self.workers, lr)

    def evaluate(self) -> tuple[float, float]:
        return self.replicas[self.rank].evaluate()

    def digest(self) -> str:
        """SHA-1 of this rank's parameters (float32 bytes): equal on every rank when the
        model stayed identical."""
        return hashlib.sha1(self.replicas[self.rank].parameters_flat().numpy().tobytes()).hexdigest()

    @staticmethod
    def matches(result: torch.Tensor, expected: torch.Tensor) -> tuple[bool, float]:
        err = float((result - expected).abs().max()) if result.numel() else 0.0
        return bool(torch.allclose(result, expected, rtol=RTOL, atol=ATOL)), err
