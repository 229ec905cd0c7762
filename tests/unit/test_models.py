"""workloads/models.py: model specs, parameter counts, profiling and its cache, scaling,
and DigitsTrainer's data-parallel SGD (checked against single-process SGD)."""
import json
import math
import time

import pytest
import torch

from workloads import models
from workloads.models import DigitsTrainer, Layer, Model

pytestmark = pytest.mark.unit

# Closed-form parameter counts of the definitions in workloads/models.py.
PARAMS = {
    # conv 1->6 5x5 (156), conv 6->16 5x5 (2,416), fc 400->120, 120->84, 84->10
    "lenet5": 156 + 2_416 + 48_120 + 10_164 + 850,  # 61,706
    # 16 3x3 convs with bias (cfg E), no BatchNorm, + linear 512->10
    "vgg19": 20_024_384 + 5_130,  # 20,029,514
    # CIFAR ResNet-18 (3x3 stem, BatchNorm, projection shortcuts), + linear 512->10
    "resnet18": 11_173_962,
}
LAYERS = {"lenet5": 5, "vgg19": 17, "resnet18": 41}


@pytest.fixture(autouse=True)
def one_thread():
    """Small CPU ops on a shared 2-core box run faster and steadier on one thread
    (as a worker would run them); the previous setting is restored."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("syncbed-cache")


@pytest.fixture(scope="module")
def profiled(cache_dir):
    """Each real network profiled once at a small batch (fast), into a private cache."""
    return {name: models.load(f"{name},batch=2", cache_dir=cache_dir) for name in PARAMS}


# --------------------------------------------------------------------------- networks


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_parameter_counts(name, profiled):
    net = models.build_network(name)
    assert sum(p.numel() for p in net.parameters()) == PARAMS[name]
    model = profiled[name]
    assert model.elements == PARAMS[name]
    assert model.bytes == 4 * PARAMS[name]
    assert len(model.layers) == LAYERS[name]
    assert [layer.name for layer in model.layers] == [n for n, _ in models.param_layers(net)]


def test_parameter_counts_match_the_literature():
    assert round(PARAMS["lenet5"] / 1e3, 1) == 61.7
    assert round(PARAMS["vgg19"] / 1e6, 1) == 20.0
    assert round(PARAMS["resnet18"] / 1e6, 1) == 11.2


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_layers_are_in_forward_order(name):
    """Declaration order (what `param_layers` returns) must be the order of the forward
    pass, or per-layer gradients would be scheduled out of order."""
    net = models.build_network(name)
    layers = models.param_layers(net)
    called = []
    handles = [module.register_forward_pre_hook(lambda m, args, n=n: called.append(n))
               for n, module in layers]
    shape = models.NETWORKS[name].input_shape
    net(torch.zeros(2, *shape))
    for handle in handles:
        handle.remove()
    assert called == [n for n, _ in layers]
    # a conv/linear with its bias is one layer; BatchNorm weight+bias one of its own
    for _, module in layers:
        assert isinstance(module, (torch.nn.Conv2d, torch.nn.Linear, torch.nn.BatchNorm2d))


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_backward_times_positive(name, profiled):
    model = profiled[name]
    assert all(layer.backward_s > 0 for layer in model.layers)
    assert model.backward_s == pytest.approx(sum(layer.backward_s for layer in model.layers))
    assert model.backward_s < 10
    assert "profiled on this CPU" in model.source and "batch 2" in model.source
    assert "median of" in model.source


def test_profile_restores_thread_count():
    torch.set_num_threads(2)
    models.profile("lenet5", 2, runs=1, warmup=0)
    assert torch.get_num_threads() == 2


def test_default_batches_profile_quickly(tmp_path):
    """load() of the big models at their default batch, uncached, stays in seconds."""
    for name in ("vgg19", "resnet18"):
        start = time.perf_counter()
        model = models.load(name, cache_dir=tmp_path)
        elapsed = time.perf_counter() - start
        assert elapsed < 20, f"{name} took {elapsed:.1f} s uncached"
        batch = models.NETWORKS[name].default_batch
        assert f"batch {batch} " in model.source
        assert model.spec == name


# --------------------------------------------------------------------------- cache


def test_second_load_uses_cache(tmp_path, monkeypatch):
    first = models.load("lenet5", cache_dir=tmp_path)
    files = list(tmp_path.glob("model-*.json"))
    assert len(files) == 1 and "lenet5" in files[0].name and torch.__version__ in files[0].name
    entry = json.loads(files[0].read_text())
    assert "lenet5,batch=64" in entry["key"] and torch.__version__ in entry["key"]

    def no_profile(*args, **kwargs):
        raise AssertionError("profiled again despite the cache")

    monkeypatch.setattr(models, "profile", no_profile)
    start = time.perf_counter()
    second = models.load("lenet5", cache_dir=tmp_path)
    assert time.perf_counter() - start < 0.5
    assert second == first
    # the default batch spelled out is the same cache entry
    assert models.load("lenet5,batch=64", cache_dir=tmp_path).layers == first.layers


def test_cache_keyed_by_batch_and_torch_version(tmp_path, monkeypatch):
    models.load("lenet5,batch=4", cache_dir=tmp_path)
    models.load("lenet5,batch=8", cache_dir=tmp_path)
    assert len(list(tmp_path.glob("model-*.json"))) == 2
    monkeypatch.setattr(torch, "__version__", "0.0.0-test")
    models.load("lenet5,batch=4", cache_dir=tmp_path)
    assert len(list(tmp_path.glob("model-*.json"))) == 3


def test_corrupt_cache_is_replaced(tmp_path):
    models.load("lenet5,batch=4", cache_dir=tmp_path)
    (path,) = tmp_path.glob("model-*.json")
    path.write_text("{not json")
    model = models.load("lenet5,batch=4", cache_dir=tmp_path)
    assert model.elements == PARAMS["lenet5"]
    assert json.loads(path.read_text())["layers"] == model.to_list()


def test_default_cache_dir_read_at_call_time(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNCBED_CACHE_DIR", str(tmp_path / "c"))
    models.load("lenet5,batch=4")
    assert len(list((tmp_path / "c").glob("model-*.json"))) == 1


# --------------------------------------------------------------------------- synthetic


def test_synthetic_sizes_exact():
    model = models.load("synthetic,mb=4")
    assert model.to_list() == [["fc", 1_048_576, 0.0]]
    assert model.bytes == 4 * 2**20 and model.backward_s == 0


def test_synthetic_layers_and_compute():
    model = models.load("synthetic,mb=4,layers=8,compute_ms=40")
    assert [layer.numel for layer in model.layers] == [131_072] * 8
    assert [layer.name for layer in model.layers] == [f"fc{i}" for i in range(8)]
    assert all(layer.backward_s == pytest.approx(0.005) for layer in model.layers)
    assert model.backward_s == pytest.approx(0.040)
    assert model.bytes == 4 * 2**20


def test_synthetic_uneven_split_keeps_total():
    model = models.load("synthetic, mb=1, layers=3")
    sizes = [layer.numel for layer in model.layers]
    assert sum(sizes) == 262_144 and max(sizes) - min(sizes) == 1
    assert models.load("synthetic,mb=0.5").elements == 131_072


def test_model_list_round_trip_and_validation():
    model = models.load("synthetic,mb=2,layers=2,compute_ms=3")
    again = Model.from_list(model.spec, json.loads(json.dumps(model.to_list())), model.source)
    assert again == model
    with pytest.raises(ValueError):
        Layer("x", 0, 0.0)
    with pytest.raises(ValueError):
        Layer("x", 3, -1.0)
    with pytest.raises(ValueError):
        Model("empty", (), "")


# --------------------------------------------------------------------------- bad specs


@pytest.mark.parametrize("spec", [
    "", "   ", "alexnet", "synthetic", "synthetic,mb=0", "synthetic,mb=-1", "synthetic,mb=x",
    "synthetic,mb=inf", "synthetic,mb=nan", "synthetic,mb=4,layers=0", "synthetic,mb=4,layers=1.5",
    "synthetic,mb=4,compute_ms=-1", "synthetic,mb=4,foo=1", "synthetic,mb=4,mb=2",
    "synthetic,mb=1e-9", "synthetic,mb=4,", "vgg19,batch=0", "vgg19,batch=two", "vgg19,depth=3",
    "lenet5,batch", "resnet18,batch=16,batch=8", "lenet5,mb=4",
])
def test_bad_specs_rejected(spec, tmp_path):
    with pytest.raises(ValueError) as err:
        models.load(spec, cache_dir=tmp_path)
    message = str(err.value)
    assert "\n" not in message
    assert "valid specs" in message
    for valid in models.valid_specs():
        assert valid in message
    assert not list(tmp_path.iterdir())  # rejected before any profiling


def test_valid_specs_list():
    specs = models.valid_specs()
    assert specs[0].startswith("synthetic,mb=")
    assert {"lenet5[,batch=64]", "vgg19[,batch=16]", "resnet18[,batch=16]"} <= set(specs)


# --------------------------------------------------------------------------- scaling


def test_scaled_divides_sizes_and_multiplies_times():
    model = models.load("synthetic,mb=4,layers=4,compute_ms=8")
    dilated = models.scaled(model, size_factor=4, time_factor=10)
    assert [layer.numel for layer in dilated.layers] == [65_536] * 4
    assert dilated.elements == model.elements // 4
    assert dilated.backward_s == pytest.approx(0.080)
    assert dilated.spec == model.spec and "scaled" in dilated.source
    assert models.scaled(model, 1, 1) is model
    tiny = models.scaled(Model("t", (Layer("a", 3, 0.0),), ""), size_factor=100)
    assert tiny.layers[0].numel == 1  # never an empty layer
    for bad in (0, -1, math.inf, math.nan):
        with pytest.raises(ValueError):
            models.scaled(model, size_factor=bad)
        with pytest.raises(ValueError):
            models.scaled(model, time_factor=bad)


# --------------------------------------------------------------------------- DigitsTrainer


def test_digits_trainer_layout():
    trainer = DigitsTrainer(rank=0, workers=1, seed=0, batch=32)
    sizes = trainer.layer_sizes()
    assert sizes == [156, 2_416, 48_120, 10_164, 850]
    lenet = models.param_layers(models.build_network("lenet5"))  # same network as the spec
    assert sizes == [sum(p.numel() for p in m.parameters()) for _, m in lenet]
    grad = trainer.gradients(0)
    assert grad.dtype == torch.float32 and grad.shape == (sum(sizes),) == (PARAMS["lenet5"],)
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
