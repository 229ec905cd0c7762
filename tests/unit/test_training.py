"""workloads/training.py: DigitsTrainer's data, sharding and data-parallel SGD (checked against
single-process SGD), and its networks being the registry's."""
import pytest
import torch

from workloads.models.networks import param_layers, torchvision_models
from workloads.models.registry import build_network
from workloads.models.specs import load
from workloads.training import DigitsTrainer

pytestmark = [pytest.mark.unit, pytest.mark.usefixtures("one_thread")]

LENET5_PARAMS = 156 + 2_416 + 48_120 + 10_164 + 850  # 61,706 (tests/unit/test_models.py, PARAMS)


def test_digits_trainer_layout():
    trainer = DigitsTrainer(rank=0, workers=1, seed=0, batch=32)
    sizes = trainer.layer_sizes()
    assert sizes == [156, 2_416, 48_120, 10_164, 850]
    lenet = param_layers(build_network("lenet5"))  # same network as the spec
    assert sizes == [sum(p.numel() for p in m.parameters()) for _, m in lenet]
    grad = trainer.gradients(0)
    assert grad.dtype == torch.float32 and grad.shape == (sum(sizes),) == (LENET5_PARAMS,)
    assert trainer.layer_names() == ["conv1", "conv2", "fc1", "fc2", "fc3"]
    before = trainer.parameters_flat()
    trainer.gradients(1)
    assert torch.equal(before, trainer.parameters_flat())  # computing gradients never steps
    loss, accuracy = trainer.evaluate()
    assert loss > 0 and 0 <= accuracy <= 1
    assert len(trainer.y_train) + len(trainer.y_test) == 1_797 and len(trainer.y_test) == 360
    with pytest.raises(ValueError):
        trainer.apply(torch.zeros(10), 1, 0.1)


def test_digits_trainer_sharding_is_a_partition():
    workers, batch = 3, 8
    ranks = [DigitsTrainer(rank=r, workers=workers, seed=5, batch=batch) for r in range(workers)]
    single = DigitsTrainer(rank=0, workers=1, seed=5, batch=workers * batch)
    assert ranks[0].steps_per_epoch == single.steps_per_epoch
    for iteration in (0, 1, ranks[0].steps_per_epoch - 1, ranks[0].steps_per_epoch + 2):
        shards = [set(t.batch_indices(iteration).tolist()) for t in ranks]
        assert all(len(s) == batch for s in shards)
        assert not (shards[0] & shards[1]) and not (shards[1] & shards[2])
        assert set().union(*shards) == set(single.batch_indices(iteration).tolist())
    # deterministic: a fresh instance gives the same batches
    again = DigitsTrainer(rank=1, workers=workers, seed=5, batch=batch)
    assert torch.equal(again.batch_indices(7), ranks[1].batch_indices(7))


def test_data_parallel_sgd_equals_single_process_sgd():
    """2 workers with batch b, gradients summed and averaged, == 1 process with batch 2b."""
    b, lr = 16, 0.1
    rank0, rank1 = (DigitsTrainer(rank=r, workers=2, seed=3, batch=b) for r in (0, 1))
    single = DigitsTrainer(rank=0, workers=1, seed=3, batch=2 * b)
    assert torch.equal(rank0.parameters_flat(), single.parameters_flat())
    for iteration in range(60):  # crosses an epoch boundary (44 steps per epoch)
        flat_sum = rank0.gradients(iteration) + rank1.gradients(iteration)
        reference = single.gradients(iteration)
        torch.testing.assert_close(flat_sum / 2, reference, rtol=1e-4, atol=1e-6)
        rank0.apply(flat_sum, 2, lr)
        rank1.apply(flat_sum, 2, lr)
        single.apply(reference, 1, lr)
        assert torch.equal(rank0.parameters_flat(), rank1.parameters_flat())
    torch.testing.assert_close(rank0.parameters_flat(), single.parameters_flat(), rtol=1e-4, atol=1e-5)


def test_digits_converges():
    workers, lr = 2, 0.1
    trainers = [DigitsTrainer(rank=r, workers=workers, seed=0, batch=16) for r in range(workers)]
    initial_loss, _ = trainers[0].evaluate()
    for iteration in range(200):
        flat_sum = sum(t.gradients(iteration) for t in trainers)
        for t in trainers:
            t.apply(flat_sum, workers, lr)
    loss, accuracy = trainers[0].evaluate()
    assert accuracy > 0.85
    assert loss < initial_loss


def test_digits_trainer_rejects_bad_arguments():
    for kwargs in ({"rank": 2, "workers": 2}, {"rank": 0, "workers": 0},
                   {"rank": 0, "workers": 1, "batch": 0},
                   {"rank": 0, "workers": 100, "batch": 64}):
        with pytest.raises(ValueError):
            DigitsTrainer(**kwargs)


def test_resnet18_trains_on_the_digits_as_torchvisions_adapted_network():
    """DFS's ResNet-18 (issue #9): the registry's CIFAR ResNet-18 is torchvision's resnet18 with
    a 3x3 stride-1 stem and no max-pooling (same parameter shapes, same order), and the digits
    trainer feeds it the 8x8 digit on 3 channels with the registry's layer layout."""
    from torch import nn

    tv = torchvision_models().resnet18(num_classes=10)
    tv.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
    tv.maxpool = nn.Identity()
    ours = build_network("resnet18")
    assert [p.shape for p in tv.parameters()] == [p.shape for p in ours.parameters()]
    trainer = DigitsTrainer(rank=1, workers=4, seed=0, batch=2, model="resnet18")
    assert trainer.x_train.shape[1:] == (1, 8, 8)
    grad = trainer.gradients(0)
    assert grad.numel() == load("resnet18").elements == 11_173_962
    assert trainer.layer_sizes() == [layer.numel for layer in load("resnet18").layers]
    assert torch.isfinite(grad).all() and grad.abs().sum() > 0
