"""workloads/models/: model specs, parameter counts, profiling and its cache, shipped profiles,
scaling. (DigitsTrainer, workloads/training.py: tests/unit/test_training.py.)"""
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from workloads.models import networks, profiles, registry, specs
from workloads.models.layers import Layer, Model, scaled

pytestmark = [pytest.mark.unit, pytest.mark.usefixtures("one_thread")]

REPO = Path(__file__).resolve().parents[2]

# Closed-form parameter counts of the definitions in workloads/models/networks.py.
PARAMS = {
    # conv 1->6 5x5 (156), conv 6->16 5x5 (2,416), fc 400->120, 120->84, 84->10
    "lenet5": 156 + 2_416 + 48_120 + 10_164 + 850,  # 61,706
    # 16 3x3 convs with bias (cfg E), no BatchNorm, + linear 512->10
    "vgg19": 20_024_384 + 5_130,  # 20,029,514
    # CIFAR ResNet-18 (3x3 stem, BatchNorm, projection shortcuts), + linear 512->10
    "resnet18": 11_173_962,
}
LAYERS = {"lenet5": 5, "vgg19": 17, "resnet18": 41}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("syncbed-cache")


@pytest.fixture(scope="module")
def profiled(cache_dir):
    """Each real network profiled once at a small batch (fast), into a private cache."""
    return {name: specs.load(f"{name},batch=2", cache_dir=cache_dir) for name in PARAMS}


# --------------------------------------------------------------------------- networks


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_parameter_counts(name, profiled):
    net = registry.build_network(name)
    assert sum(p.numel() for p in net.parameters()) == PARAMS[name]
    model = profiled[name]
    assert model.elements == PARAMS[name]
    assert model.bytes == 4 * PARAMS[name]
    assert len(model.layers) == LAYERS[name]
    assert [layer.name for layer in model.layers] == [n for n, _ in networks.param_layers(net)]


def test_parameter_counts_match_the_literature():
    assert round(PARAMS["lenet5"] / 1e3, 1) == 61.7
    assert round(PARAMS["vgg19"] / 1e6, 1) == 20.0
    assert round(PARAMS["resnet18"] / 1e6, 1) == 11.2


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_layers_are_in_forward_order(name):
    """Declaration order (what `param_layers` returns) must be the order of the forward
    pass, or per-layer gradients would be scheduled out of order."""
    net = registry.build_network(name)
    layers = networks.param_layers(net)
    called = []
    handles = [module.register_forward_pre_hook(lambda m, args, n=n: called.append(n))
               for n, module in layers]
    shape = registry.NETWORKS[name].input_shape
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
    profiles.profile("lenet5", 2, runs=1, warmup=0)
    assert torch.get_num_threads() == 2


def test_default_batches_profile_quickly(tmp_path):
    """load() of the big models at their default batch, uncached, stays in seconds."""
    for name in ("vgg19", "resnet18"):
        start = time.perf_counter()
        model = specs.load(name, cache_dir=tmp_path)
        elapsed = time.perf_counter() - start
        assert elapsed < 20, f"{name} took {elapsed:.1f} s uncached"
        batch = registry.NETWORKS[name].default_batch
        assert f"batch {batch} " in model.source
        assert model.spec == name


# --------------------------------------------------------------------------- architectures
# The MG-WFBP / gTop-k networks: one layer per parameter tensor, shipped profiles.


def _resnet20_params():
    """He et al. 2016 §4.2, option A shortcuts (no parameters), 3x3 convs without bias."""
    conv = lambda cin, cout: 9 * cin * cout  # noqa: E731
    bn = lambda c: 2 * c  # noqa: E731
    stem = conv(3, 16) + bn(16)
    stage1 = 3 * 2 * (conv(16, 16) + bn(16))
    stage2 = conv(16, 32) + bn(32) + conv(32, 32) + bn(32) + 2 * 2 * (conv(32, 32) + bn(32))
    stage3 = conv(32, 64) + bn(64) + conv(64, 64) + bn(64) + 2 * 2 * (conv(64, 64) + bn(64))
    return stem + stage1 + stage2 + stage3 + 64 * 10 + 10


def _lstm_ptb_params(vocab=10_000, hidden=1500, layers=2):
    lstm_layer = 4 * hidden * (hidden + hidden) + 2 * 4 * hidden  # W_ih, W_hh, b_ih, b_hh
    return vocab * hidden + layers * lstm_layer + hidden * vocab + vocab


# Published counts of torchvision's definitions (torchvision docs / model cards), and the
# project's closed forms. googlenet has both aux heads, inception_v3 none.
SHIPPED_PARAMS = {
    "resnet20": _resnet20_params(),  # 269,722
    "resnet50": 25_557_032,
    "resnet152": 60_192_808,
    "googlenet": 13_004_888,
    "densenet201": 20_013_928,
    "inception_v3": 23_834_568,
    "vgg16": 138_357_544,
    "vgg16_cifar": 14_728_266,  # gTop-k's CIFAR VGG-16 (hclhkbu/gtopkssgd models/vgg.py)
    "alexnet": 61_100_840,
    "lstm_ptb": _lstm_ptb_params(),  # 66,034,000
}


def _meta_build(name):
    """The network on the meta device: shapes only, no memory, no initialisation cost."""
    with torch.device("meta"):
        return registry.build_network(name)


def _forward_order(name, net):
    """Parameter tensors in the order a forward pass (on the meta device) first calls
    their modules, each module's in `named_parameters` order."""
    spec = registry.NETWORKS[name]
    called = []
    handles = [module.register_forward_pre_hook(
        lambda _m, _args, n=n: None if n in called else called.append(n))
        for n, module in networks.param_layers(net)]
    with torch.device("meta"):
        net.train()
        net(torch.zeros(1, *spec.input_shape, dtype=torch.long if spec.tokens else torch.float32))
    for handle in handles:
        handle.remove()
    modules = dict(networks.param_layers(net))
    return [(f"{m}.{p}", t.numel()) for m in called
            for p, t in modules[m].named_parameters(recurse=False)]


def test_closed_forms_match_the_literature():
    assert SHIPPED_PARAMS["resnet20"] == 269_722 and round(SHIPPED_PARAMS["resnet20"] / 1e6, 2) == 0.27
    assert SHIPPED_PARAMS["lstm_ptb"] == 66_034_000  # Zaremba et al.'s large model: 66M


def test_every_shipped_network_has_a_profile():
    assert set(registry.SHIPPED) == set(SHIPPED_PARAMS)
    for name in registry.SHIPPED:
        assert profiles.profile_path(name, registry.NETWORKS[name].default_batch).is_file(), name


@pytest.mark.parametrize("name", sorted(SHIPPED_PARAMS))
def test_shipped_profile_matches_the_network(name, tmp_path):
    """The shipped rows are the network's parameter tensors, in forward order, and their
    sizes sum to the network's own count (torchvision's for its models)."""
    net_spec = registry.NETWORKS[name]
    entry = profiles.read_profile(name, net_spec.default_batch)
    net = _meta_build(name)
    named = [(n, p.numel()) for n, p in net.named_parameters()]
    assert sum(k for _, k in named) == SHIPPED_PARAMS[name] == entry["parameters"]
    rows = [(row[0], row[1]) for row in entry["tensors"]]
    assert sorted(rows) == sorted(named)  # every tensor once
    assert rows == _forward_order(name, net)  # googlenet's aux heads: after inception4a/4d
    for key in ("cpu", "torch", "batch", "date", "input", "method"):
        assert entry[key]
    assert profiles.profile_path(name, net_spec.default_batch).stat().st_size < 100_000

    model = specs.load(name, cache_dir=tmp_path)  # default: shipped batch, tensors=1
    assert model.spec == name
    assert model.elements == SHIPPED_PARAMS[name]
    assert [(layer.name, layer.numel) for layer in model.layers] == rows
    assert "shipped" in model.source and "profiled on" in model.source
    assert model.backward_s > 0 and model.backward_s == pytest.approx(entry["backward_s"])
    # a module's whole time lies on its last tensor; the others get 0
    modules = {}
    for tensor, _, seconds, module in entry["tensors"]:
        modules.setdefault(module, []).append(seconds)
    assert all(all(t == 0 for t in times[:-1]) and times[-1] > 0 for times in modules.values())

    per_module = specs.load(f"{name},tensors=0", cache_dir=tmp_path)
    assert len(per_module.layers) == len(modules) == len(networks.param_layers(net))
    assert [layer.name for layer in per_module.layers] == list(modules)
    assert per_module.elements == model.elements
    assert per_module.backward_s == pytest.approx(model.backward_s)
    assert not list(tmp_path.iterdir())  # nothing profiled, nothing cached


def test_tensor_layers_live_profile(tmp_path):
    """tensors=1 on a live profile (a batch nothing is shipped for): one layer per
    parameter tensor in forward order, named like `layer1.0.conv1.weight`, summing to
    the parameters; tensors=0 of the same network gives its modules."""
    model = specs.load("resnet20,batch=2", cache_dir=tmp_path)
    net = registry.build_network("resnet20")
    named = [(n, p.numel()) for n, p in net.named_parameters()]
    assert [(layer.name, layer.numel) for layer in model.layers] == named
    assert len(model.layers) == 59 and model.elements == SHIPPED_PARAMS["resnet20"]
    assert "profiled on this CPU" in model.source and "batch 2 " in model.source
    assert "one layer per parameter tensor" in model.source
    per_module = specs.load("resnet20,batch=2,tensors=0", cache_dir=tmp_path)
    assert [layer.name for layer in per_module.layers] == [n for n, _ in networks.param_layers(net)]
    assert all(layer.backward_s > 0 for layer in per_module.layers)
    assert len(list(tmp_path.glob("model-*.json"))) == 2  # both cached, apart

    lenet = specs.load("lenet5,batch=2,tensors=1", cache_dir=tmp_path)
    assert [layer.name for layer in lenet.layers] == [
        f"{m}.{p}" for m in ("conv1", "conv2", "fc1", "fc2", "fc3") for p in ("weight", "bias")]
    assert [layer.backward_s == 0 for layer in lenet.layers] == [True, False] * 5
    assert lenet.elements == PARAMS["lenet5"]


@pytest.mark.parametrize("name", ["resnet20", "lstm_ptb"])
def test_project_networks_in_forward_order(name):
    net = registry.build_network(name)
    layers = networks.param_layers(net)
    called = []
    handles = [module.register_forward_pre_hook(lambda m, args, n=n: called.append(n))
               for n, module in layers]
    spec = registry.NETWORKS[name]
    x = torch.zeros(2, *spec.input_shape, dtype=torch.long if spec.tokens else torch.float32)
    out = net(x)
    for handle in handles:
        handle.remove()
    assert called == [n for n, _ in layers]
    assert out.shape == ((2, 35, 10_000) if spec.tokens else (2, 10))


def test_resnet20_has_option_a_shortcuts():
    names = [n for n, _ in registry.build_network("resnet20").named_parameters()]
    assert not [n for n in names if "shortcut" in n or "downsample" in n]
    assert sum(".conv" in n for n in names) == 18  # + stem + classifier = 20 weighted layers


def test_torchvision_any_classification_model(tmp_path):
    """`torchvision:NAME`: torchvision's builder with its defaults, profiled here (a small
    network at batch 1), one layer per tensor; the count is torchvision's own."""
    start = time.perf_counter()
    model = specs.load("torchvision:mobilenet_v2,batch=1", cache_dir=tmp_path)
    assert time.perf_counter() - start < 60
    net = _meta_build("torchvision:mobilenet_v2")
    assert model.elements == sum(p.numel() for p in net.parameters()) == 3_504_872
    assert [layer.name for layer in model.layers] == [n for n, _ in net.named_parameters()]
    assert model.spec == "torchvision:mobilenet_v2,batch=1"
    assert "batch 1 of 3x224x224" in model.source
    assert specs.load("torchvision:mobilenet_v2,batch=1", cache_dir=tmp_path) == model  # cached


def test_torchvision_names_resolve_to_registered_networks(tmp_path):
    """torchvision:resnet50 is the registered resnet50 (same shipped profile);
    inception_v3 is registered without its aux head, so torchvision:inception_v3 (with
    it) is a network of its own."""
    for name in ("resnet50", "googlenet"):
        model = specs.load(f"torchvision:{name}", cache_dir=tmp_path)
        assert model.spec == f"torchvision:{name}" and "shipped" in model.source
        assert model.layers == specs.load(name, cache_dir=tmp_path).layers
    with_aux = sum(p.numel() for p in _meta_build("torchvision:inception_v3").parameters())
    assert with_aux == 27_161_264 > SHIPPED_PARAMS["inception_v3"]
    assert not list(tmp_path.iterdir())


def test_cifar_networks_are_not_torchvisions():
    """vgg19/resnet18 are the CIFAR-10 networks of the BML experiments, not torchvision's
    ImageNet ones; torchvision's resnet18 with a CIFAR stem is the same network."""
    zoo = networks.torchvision_models()
    with torch.device("meta"):
        tv_vgg19, tv_resnet18 = zoo.vgg19(weights=None), zoo.resnet18(weights=None)
        assert sum(p.numel() for p in tv_vgg19.parameters()) == 143_667_240 != PARAMS["vgg19"]
        assert sum(p.numel() for p in tv_resnet18.parameters()) == 11_689_512 != PARAMS["resnet18"]
        cifar = zoo.resnet18(weights=None, num_classes=10)
        cifar.conv1 = torch.nn.Conv2d(3, 64, 3, padding=1, bias=False)
        cifar.maxpool = torch.nn.Identity()
    ours = registry.build_network("resnet18")
    assert [p.shape for p in cifar.parameters()] == [p.shape for p in ours.parameters()]


def test_unknown_name_lists_valid_specs_and_torchvision_hint():
    with pytest.raises(ValueError) as err:
        specs.load("resnet51")
    message = str(err.value)
    assert "\n" not in message and "unknown model 'resnet51'" in message
    assert "torchvision:NAME" in message
    assert "torchvision.models.list_models(module=torchvision.models)" in message
    for name in ("lstm_ptb", "resnet20", "inception_v3", "densenet201", "lenet5"):
        assert f"{name}[,batch=" in message
    with pytest.raises(ValueError) as err:
        specs.load("torchvision:mobilenet_v9")
    message = str(err.value)
    assert "\n" not in message and "mobilenet_v2" in message and "valid specs" in message


def test_profile_command_writes_a_profile(tmp_path, capsys):
    assert profiles.main(["profile", "resnet20", "--batch", "2", "--runs", "1", "--warmup", "0",
                          "--dir", str(tmp_path)]) == 0
    path = tmp_path / "resnet20-b2.json"
    assert str(path) in capsys.readouterr().out
    entry = profiles.read_profile("resnet20", 2, folder=tmp_path)
    assert entry["parameters"] == SHIPPED_PARAMS["resnet20"] and len(entry["tensors"]) == 59
    assert entry["torch"] == torch.__version__ and entry["threads"] == 1
    assert "thread CPU time" in entry["method"]  # the command's default clock
    assert profiles.main(["profile", "resnet51", "--dir", str(tmp_path)]) == 2
    assert "resnet51" in capsys.readouterr().err
    path.write_text('{"format": 1, "network": "resnet20"')
    with pytest.raises(ValueError, match="unusable"):
        profiles.read_profile("resnet20", 2, folder=tmp_path)
    assert profiles.read_profile("resnet20", 3, folder=tmp_path) is None


def test_package_runs_as_the_profile_command_and_layers_need_no_torch():
    """`python -m workloads.models` is profiles.main; the data model (job.json's layers,
    scaling) imports without torch."""
    done = subprocess.run([sys.executable, "-m", "workloads.models", "profile", "resnet51"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "profile resnet51: bad model spec" in done.stderr
    code = "import sys, workloads.models.layers; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
    assert profiles.PROFILES_DIR == REPO / "workloads" / "profiles"  # package data of `workloads`


# --------------------------------------------------------------------------- cache


def test_second_load_uses_cache(tmp_path, monkeypatch):
    first = specs.load("lenet5", cache_dir=tmp_path)
    files = list(tmp_path.glob("model-*.json"))
    assert len(files) == 1 and "lenet5" in files[0].name and torch.__version__ in files[0].name
    entry = json.loads(files[0].read_text())
    assert "lenet5,batch=64" in entry["key"] and torch.__version__ in entry["key"]

    def no_profile(*args, **kwargs):
        raise AssertionError("profiled again despite the cache")

    monkeypatch.setattr(profiles, "profile", no_profile)
    start = time.perf_counter()
    second = specs.load("lenet5", cache_dir=tmp_path)
    assert time.perf_counter() - start < 0.5
    assert second == first
    # the default batch spelled out is the same cache entry
    assert specs.load("lenet5,batch=64", cache_dir=tmp_path).layers == first.layers


def test_cache_keyed_by_batch_and_torch_version(tmp_path, monkeypatch):
    specs.load("lenet5,batch=4", cache_dir=tmp_path)
    specs.load("lenet5,batch=8", cache_dir=tmp_path)
    assert len(list(tmp_path.glob("model-*.json"))) == 2
    monkeypatch.setattr(torch, "__version__", "0.0.0-test")
    specs.load("lenet5,batch=4", cache_dir=tmp_path)
    assert len(list(tmp_path.glob("model-*.json"))) == 3


def test_corrupt_cache_is_replaced(tmp_path):
    specs.load("lenet5,batch=4", cache_dir=tmp_path)
    (path,) = tmp_path.glob("model-*.json")
    path.write_text("{not json")
    model = specs.load("lenet5,batch=4", cache_dir=tmp_path)
    assert model.elements == PARAMS["lenet5"]
    assert json.loads(path.read_text())["layers"] == model.to_list()


def test_default_cache_dir_read_at_call_time(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNCBED_CACHE_DIR", str(tmp_path / "c"))
    specs.load("lenet5,batch=4")
    assert len(list((tmp_path / "c").glob("model-*.json"))) == 1


# --------------------------------------------------------------------------- synthetic


def test_synthetic_sizes_exact():
    model = specs.load("synthetic,mb=4")
    assert model.to_list() == [["fc", 1_048_576, 0.0]]
    assert model.bytes == 4 * 2**20 and model.backward_s == 0


def test_synthetic_layers_and_compute():
    model = specs.load("synthetic,mb=4,layers=8,compute_ms=40")
    assert [layer.numel for layer in model.layers] == [131_072] * 8
    assert [layer.name for layer in model.layers] == [f"fc{i}" for i in range(8)]
    assert all(layer.backward_s == pytest.approx(0.005) for layer in model.layers)
    assert model.backward_s == pytest.approx(0.040)
    assert model.bytes == 4 * 2**20


def test_synthetic_uneven_split_keeps_total():
    model = specs.load("synthetic, mb=1, layers=3")
    sizes = [layer.numel for layer in model.layers]
    assert sum(sizes) == 262_144 and max(sizes) - min(sizes) == 1
    assert specs.load("synthetic,mb=0.5").elements == 131_072


def test_model_list_round_trip_and_validation():
    model = specs.load("synthetic,mb=2,layers=2,compute_ms=3")
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
    "", "   ", "alexnet2", "torchvision:nosuch", "torchvision:", "synthetic", "synthetic,mb=0",
    "synthetic,mb=-1", "synthetic,mb=x",
    "synthetic,mb=inf", "synthetic,mb=nan", "synthetic,mb=4,layers=0", "synthetic,mb=4,layers=1.5",
    "synthetic,mb=4,compute_ms=-1", "synthetic,mb=4,foo=1", "synthetic,mb=4,mb=2",
    "synthetic,mb=1e-9", "synthetic,mb=4,", "vgg19,batch=0", "vgg19,batch=two", "vgg19,depth=3",
    "lenet5,batch", "resnet18,batch=16,batch=8", "lenet5,mb=4",
    "resnet50,tensors=2", "resnet50,tensors=x", "lenet5,tensors=", "lstm_ptb,mb=1",
    "torchvision:mobilenet_v2,depth=2", "resnet20,batch=0",
])
def test_bad_specs_rejected(spec, tmp_path):
    with pytest.raises(ValueError) as err:
        specs.load(spec, cache_dir=tmp_path)
    message = str(err.value)
    assert "\n" not in message
    assert "valid specs" in message
    for valid in registry.valid_specs():
        assert valid in message
    assert not list(tmp_path.iterdir())  # rejected before any profiling


def test_valid_specs_list():
    specs = registry.valid_specs()
    assert specs[0].startswith("synthetic,mb=")
    assert {"lenet5[,batch=64]", "vgg19[,batch=16]", "resnet18[,batch=16]"} <= set(specs)
    assert {"resnet20[,batch=32]", "resnet50[,batch=2]", "lstm_ptb[,batch=20]"} <= set(specs)
    assert any(spec.startswith("torchvision:NAME") for spec in specs)


# --------------------------------------------------------------------------- scaling


def test_scaled_divides_sizes_and_multiplies_times():
    model = specs.load("synthetic,mb=4,layers=4,compute_ms=8")
    dilated = scaled(model, size_factor=4, time_factor=10)
    assert [layer.numel for layer in dilated.layers] == [65_536] * 4
    assert dilated.elements == model.elements // 4
    assert dilated.backward_s == pytest.approx(0.080)
    assert dilated.spec == model.spec and "scaled" in dilated.source
    assert scaled(model, 1, 1) is model
    tiny = scaled(Model("t", (Layer("a", 3, 0.0),), ""), size_factor=100)
    assert tiny.layers[0].numel == 1  # never an empty layer
    for bad in (0, -1, math.inf, math.nan):
        with pytest.raises(ValueError):
            scaled(model, size_factor=bad)
        with pytest.raises(ValueError):
            scaled(model, time_factor=bad)
