"""The contract does not leak (issue #20): what the emulation needs to know of an algorithm it
asks the algorithm (`Algorithm.timeline`, `.compute`, `.summarize`, `.describe`), so the
emulation core names no algorithm and reads no family's observation keys.

The core is every module under emulation/ but emulation/papers/ (a paper's own module names its
algorithms: that is its job) and emulation/report/ (the report's figures and doc tables of a
paper). In the core, no identifier, attribute, import or string constant names a registered
algorithm; docstrings, comments and argparse `help=` texts may (they are examples of the spec
syntax, `topk,density=0.01`, for the reader). No family's observation or plan key is spelled as a
string in the core's code, and the distinctive ones (with an underscore) in no text of it either."""
from __future__ import annotations

import ast
import dataclasses
import io
import re
import time
import tokenize
from pathlib import Path

import pytest

from workloads.algorithms import base

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
EMULATION = ROOT / "emulation"
OUTSIDE_THE_CORE = ("papers", "report")
# What the algorithm families log in `state.observed` or keep in their plans, which only they
# (and the papers) may read; the hooks' own declarations are added below.
FAMILY_KEYS = {"sparsify_seconds", "merge_seconds", "zero_block_fraction", "blocks_used", "block", "next_block",
               "modelled_bytes", "blocks_up_sent", "blocks_down_recv", "blocks_up_recv", "union_blocks",
               "blocks_down_sent", "pairs_sent", "allgather_steps", "kept", "predicted", "first_block",
               "dense_blocks"}
LAYERWISE = ("wfbp", "single", "fusion", "mgwfbp")
TEXT_TOKENS = {tokenize.COMMENT, tokenize.STRING} | ({tokenize.FSTRING_MIDDLE} if hasattr(tokenize, "FSTRING_MIDDLE")
                                                    else set())


def core_modules() -> list[Path]:
    return sorted(p for p in EMULATION.rglob("*.py")
                  if not set(p.relative_to(EMULATION).parts[:-1]) & set(OUTSIDE_THE_CORE))


def _documentation(tree: ast.AST) -> set[int]:
    """ids of the string constants that document: docstrings and argparse `help=` texts."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
        if isinstance(node, ast.keyword) and node.arg == "help":
            out |= {id(n) for n in ast.walk(node.value) if isinstance(n, ast.Constant)}
    return out


def names_in_code(path: Path, names: set) -> list[str]:
    """Where the code of `path` (not its documentation) names one of `names`."""
    tree = ast.parse(path.read_text())
    doc = _documentation(tree)
    hits = []
    for node in ast.walk(tree):
        found: set = set()
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in doc:
            found = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", node.value)) & names
        elif isinstance(node, ast.Name):
            found = {node.id} & names
        elif isinstance(node, ast.Attribute):
            found = {node.attr} & names
        elif isinstance(node, ast.arg):
            found = {node.arg} & names
        elif isinstance(node, ast.keyword) and node.arg:
            found = {node.arg} & names
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            parts = {p for a in node.names for p in a.name.split(".")} | {a.asname for a in node.names if a.asname}
            if isinstance(node, ast.ImportFrom) and node.module:
                parts |= set(node.module.split("."))
            found = parts & names
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        hits += [f"{where}:{getattr(node, 'lineno', '?')}: {n}" for n in sorted(found)]
    return hits


def keys_in_code(path: Path, keys: set) -> list[str]:
    """Where the code of `path` spells one of `keys` as a string (a dict key, a `.get` of one)."""
    tree = ast.parse(path.read_text())
    doc = _documentation(tree)
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return [f"{where}:{node.lineno}: {node.value}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in doc
            and node.value in keys]


def family_keys() -> set:
    """FAMILY_KEYS, every declared compute duration, and what every `summarize` returns when
    shown every family key."""
    keys = set(FAMILY_KEYS)
    sample = {0: [{k: 1 for k in FAMILY_KEYS}], 1: [{k: 1 for k in FAMILY_KEYS}]}
    for algo in base.registry().values():
        keys |= {c.key for c in algo.compute}
        keys |= set(algo.summarize(sample))
    return keys


def test_the_emulation_core_is_what_the_checks_walk():
    core = {str(p.relative_to(EMULATION)) for p in core_modules()}
    assert {"analysis.py", "timeline.py", "config.py", "simulator/core.py", "results/load.py"} <= core
    assert not {p for p in core if p.startswith(("papers/", "report/"))}


def test_the_emulation_core_names_no_algorithm():
    names = set(base.registry())
    hits = [h for p in core_modules() for h in names_in_code(p, names)]
    assert not hits, "the emulation core names algorithms (ask the Algorithm instead):\n" + "\n".join(hits)


def test_the_emulation_core_reads_no_family_observation_key():
    keys = family_keys()
    assert {"sparsify_seconds", "merge_seconds", "zero_block_fraction", "blocks_used"} <= keys
    hits = [h for p in core_modules() for h in keys_in_code(p, keys)]
    # the distinctive keys not even in a docstring or comment
    spelled = {k for k in keys if "_" in k}
    for p in core_modules():
        for tok in tokenize.generate_tokens(io.StringIO(p.read_text()).readline):
            if tok.type in TEXT_TOKENS:
                hits += [f"{p.relative_to(ROOT)}:{tok.start[0]}: {k} (text)"
                         for k in sorted(spelled) if re.search(rf"\b{k}\b", tok.string)]
    assert not hits, "the emulation core reads a family's keys (let the algorithm say it):\n" + "\n".join(hits)


def test_the_checks_find_what_they_look_for(tmp_path):
    leak = tmp_path / "leak.py"
    leak.write_text('"""ring in a docstring is fine."""\nimport argparse\n'
                    'from workloads.algorithms import gtopk\n'
                    'ap = argparse.ArgumentParser()\nap.add_argument("--x", help="e.g. ring,ps")\n'
                    'if plan["algorithm"] == "ring" or "predicted" in plan:  # a comment on topk\n'
                    '    x = obs.get("sparsify_seconds")\n')
    found = lambda names: sorted(h.rsplit(": ", 1)[-1] for h in names_in_code(leak, names))  # noqa: E731
    assert found(set(base.registry())) == ["gtopk", "ring"]
    assert sorted(h.rsplit(": ", 1)[-1] for h in keys_in_code(leak, family_keys())) == ["predicted", "sparsify_seconds"]


# ---- the hooks and their defaults ---------------------------------------------------------
def _bare() -> base.Algorithm:
    return base.Algorithm(name="bare", summary="a test algorithm", plan=lambda ctx: {}, traffic=lambda plan: [],
                          execute=lambda plan, comm, grads, state: grads)


def test_an_algorithm_that_writes_no_hook_says_nothing():
    algo = _bare()
    assert algo.timeline({}) is None and algo.compute == () and algo.summarize({0: [{"x": 1}]}) == {}
    assert algo.figures({0: [{"sparsify_seconds": 1.0}]}) == {} and algo.describe({}) == {}


def test_figures_are_the_means_of_the_declared_durations_then_summarize():
    algo = dataclasses.replace(_bare(), compute=(base.Compute("a_seconds", "a"), base.Compute("b_seconds", "b", "end")),
                               summarize=lambda observed: {"ranks": sorted(observed)})
    observed = {0: [{"a_seconds": 1.0}, {"a_seconds": 3.0, "b_seconds": 0.5}], 1: [{"a_seconds": 2.0}, {}]}
    # each "mean" compute also keeps the slowest rank's per iteration (iteration 0: 2.0; 1: 3.0)
    assert algo.figures(observed) == {"a_seconds": 2.0, "a_seconds_slowest": 2.5, "b_seconds": 0.5,
                                      "b_seconds_slowest": 0.5, "ranks": [0, 1]}
    assert list(algo.figures(observed)) == ["a_seconds", "a_seconds_slowest", "b_seconds", "b_seconds_slowest",
                                            "ranks"]  # summary.json's key order
    assert algo.figures({}) == {"ranks": []}
    with pytest.raises(ValueError, match="at='middle' must be 'start' or 'end'"):
        base.Compute("c_seconds", "c", "middle")
    with pytest.raises(ValueError, match="across='sum' must be one of mean, max"):
        base.Compute("c_seconds", "c", across="sum")


def test_a_compute_the_sync_waits_for_on_every_rank_keeps_the_slowest_ranks_per_iteration():
    algo = dataclasses.replace(_bare(), compute=(base.Compute("a_seconds", "a", across="max"),
                                                 base.Compute("b_seconds", "b")))
    # iteration 0: ranks 0.1, 0.4, 0.2 -> 0.4; iteration 1: 0.3 (rank 1 logged none) -> 0.3;
    # iteration 2: only rank 0 ran it -> 0.5; iteration 3: nobody -> not counted
    observed = {0: [{"a_seconds": 0.1, "b_seconds": 1.0}, {"a_seconds": 0.3}, {"a_seconds": 0.5}, {}],
                1: [{"a_seconds": 0.4, "b_seconds": 3.0}, {}],
                2: [{"a_seconds": 0.2}, {"a_seconds": 0.1}, {}, {}]}
    figures = algo.figures(observed)
    assert figures["a_seconds"] == pytest.approx((0.4 + 0.3 + 0.5) / 3)
    assert figures["b_seconds"] == pytest.approx(2.0)  # "mean": over ranks and iterations
    assert figures["b_seconds_slowest"] == pytest.approx(3.0) and "a_seconds_slowest" not in figures
    # the max of a charged compute's parts too, each over its own ranks
    charged = dataclasses.replace(_bare(), compute=(base.Compute("a_seconds", "a", across="max"),))
    got = charged.figures({0: [{"a_seconds": 1.0, "a_seconds_cpu": 0.2, "a_seconds_charged": 1.0}],
                           1: [{"a_seconds": 1.5, "a_seconds_cpu": 1.5, "a_seconds_charged": 1.0}]})
    assert (got["a_seconds"], got["a_seconds_cpu"], got["a_seconds_charged"]) == (1.5, 1.5, 1.0)
    assert algo.figures({}) == {}


def test_the_sparse_families_declare_their_durations():
    for name in ("topk", "gtopk"):
        assert [(c.key, c.name, c.at) for c in base.get(name).compute] == [
            ("sparsify_seconds", "sparsify", "start"), ("merge_seconds", "merge", "end")]
    # a worker's selection; an owner's decode, sum and encode; a worker's encode, decodes and finish
    for name in ("omnireduce", "dfs", "topk_ps"):
        assert [(c.key, c.at, c.across, c.serial, c.stated_as) for c in base.get(name).compute] == [
            ("sparsify_seconds", "start", "mean", True, "compress"), ("aggregate_seconds", "end", "max", True, ""),
            ("codec_seconds", "end", "mean", True, "")]
    for name, algo in base.registry().items():
        assert len({c.key for c in algo.compute}) == len(algo.compute), name


def test_block_sparse_summarize_counts_rank_zeros_block_sizes():
    observed = {0: [{"zero_block_fraction": 0.5, "block": 64}, {"zero_block_fraction": 0.7, "block": 256}],
                1: [{"zero_block_fraction": 0.9, "block": 64}]}
    for name in ("omnireduce", "dfs", "topk_ps"):
        got = base.get(name).summarize(observed)
        assert got == {"zero_block_fraction": pytest.approx(0.7), "blocks_used": {"64": 1, "256": 1}}
    assert base.get("dfs").summarize({}) == {}


def _layerwise_plan(name: str):
    layers = (("l0", 3000, 0.02), ("l1", 500, 0.01), ("l2", 2000, 0.005))
    ctx = base.PlanContext(workers=4, layer_sizes=tuple(m for _, m, _ in layers), layers=layers,
                           link={"alpha": 0.002, "beta": 1e-8})
    return base.plan_for(name, ctx)


@pytest.mark.parametrize("name", LAYERWISE)
def test_the_layerwise_timeline_releases_each_group_when_its_last_layer_is_ready(name):
    algo, plan = _layerwise_plan(name)
    overlap = algo.timeline(plan)
    ready = plan["predicted"]["ready"]
    assert overlap.release == tuple(ready[g[-1]] for g in plan["groups"])
    assert overlap.startup == (0.002,) * len(plan["groups"])
    assert overlap.backward_seconds == plan["predicted"]["backward_seconds"]
    assert len(overlap.release) == len(algo.steps(plan))


def test_only_the_layerwise_family_overlaps_backprop():
    for name, algo in base.registry().items():
        if name not in LAYERWISE:
            assert algo.timeline({}) is None, name


def test_the_simulation_follows_the_algorithms_timeline_not_its_plan_keys():
    from emulation.simulator import core as simulator

    ring = base.get("ring")
    _, plan = base.plan_for("ring", base.PlanContext(workers=4, layer_sizes=(1000,)))
    assert not simulator.simulated_form(ring, plan).overlapped  # no timeline: after backprop
    steps = len(ring.steps(plan))
    overlapping = dataclasses.replace(ring, timeline=lambda p: base.Overlap(
        tuple(0.1 * i for i in range(steps)), (0.01,) * steps, 0.5))
    form = simulator.simulated_form(overlapping, plan)
    assert form.overlapped and form.release == [0.1 * i for i in range(steps)]
    assert form.startup == [0.01] * steps and form.backward_seconds == 0.5
    # a plan that merely carries a layer-wise key is not overlapped: the algorithm says so, not the plan
    assert not simulator.simulated_form(ring, {**plan, "predicted": {"ready": [0.0]}}).overlapped
    wrong = dataclasses.replace(ring, timeline=lambda p: base.Overlap((0.0,), (0.0,), 0.0))
    if steps != 1:
        with pytest.raises(ValueError, match="steps for 1 release times"):
            simulator.simulated_form(wrong, plan)


def test_compress_seconds_sums_the_durations_the_algorithm_declares():
    from emulation.results.load import compress_seconds

    assert compress_seconds({"algorithm": "gtopk", "sparsify_seconds": 0.1, "merge_seconds": 0.02}) == \
        pytest.approx(0.12)
    assert compress_seconds({"algorithm": "dfs", "sparsify_seconds": 0.1, "merge_seconds": 0.02}) == \
        pytest.approx(0.1)  # dfs declares no merge
    assert compress_seconds({"algorithm": "ring", "sparsify_seconds": 0.1}) is None
    assert compress_seconds({"algorithm": "nonesuch", "sparsify_seconds": 0.1}) is None
    assert compress_seconds({"algorithm": "topk"}) is None and compress_seconds(None) is None


# ---- where planners go (workloads/planners/__init__.py) -----------------------------------
def test_planners_import_no_algorithm_module_and_nothing_of_the_emulation():
    allowed = {"workloads.algorithms.base"}  # the contract's pure helpers (split)
    for path in sorted((ROOT / "workloads" / "planners").glob("*.py")):
        tree = ast.parse(path.read_text())
        modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | \
                  {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        bad = {m for m in modules if m.startswith("emulation") or
               (m.startswith("workloads.algorithms") and m not in allowed)}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"
    for name in ("forest", "merge", "bml", "blocks", "background"):
        assert (ROOT / "workloads" / "planners" / f"{name}.py").exists()


# ---- stated compute costs (issue #21): SyncState.computing charges the real setting's --------
def test_computing_without_a_charge_logs_this_cpus_time_and_adds_up():
    state = base.SyncState(rank=0, workers=2, world=2)
    for _ in range(2):
        with state.computing("a_seconds"):
            time.sleep(0.01)
    assert 0.02 <= state.observed["a_seconds"] < 0.2
    assert set(state.observed) == {"a_seconds"}


def test_a_charged_compute_takes_its_charge_and_logs_both_times():
    state = base.SyncState(rank=0, workers=2, world=2, charged={"a_seconds": 0.05})
    t0 = time.perf_counter()
    with state.computing("a_seconds"):
        time.sleep(0.005)
    took = time.perf_counter() - t0
    assert 0.05 <= took < 0.15  # padded to the charge, not this CPU's 5 ms
    assert state.observed["a_seconds_charged"] == 0.05
    assert 0.005 <= state.observed["a_seconds_cpu"] < 0.05
    assert 0.05 <= state.observed["a_seconds"] < 0.15


def test_a_charged_compute_that_overruns_is_not_cut_and_says_so():
    state = base.SyncState(rank=0, workers=2, world=2, charged={"a_seconds": 0.01})
    with state.computing("a_seconds"):
        time.sleep(0.04)
    assert state.observed["a_seconds"] >= 0.04 and state.observed["a_seconds_cpu"] >= 0.04
    algo = dataclasses.replace(_bare(), compute=(base.Compute("a_seconds", "a", stated_as="compress"),))
    ok = {"a_seconds": 0.01, "a_seconds_cpu": 0.0101, "a_seconds_charged": 0.01}  # within OVERRUN
    figures = algo.figures({0: [ok, dict(state.observed)], 1: [ok]})
    assert figures["charged_overruns"] == {"a_seconds": {"syncs": 3, "overran": 1,
                                                         "max_ratio": round(state.observed["a_seconds_cpu"] / 0.01, 3)}}
    assert figures["a_seconds_charged"] == pytest.approx(0.01)
    from emulation.analysis import fidelity

    fid = fidelity({"classes": {"host": {"ok": True, "ratio": 1.0}}}, None, None, None, None,
                   figures["charged_overruns"])
    assert fid["faithful"] is False
    assert fid["reasons"][0].startswith("a overran its stated cost in 1 of 3 rank-syncs (up to ")
    clean = algo.figures({0: [ok]})["charged_overruns"]
    assert not any("overran" in r for r in fidelity(None, None, None, None, None, clean)["reasons"])


def test_the_stated_compressor_cost_is_charged_time_dilated_to_the_selection_only():
    from emulation.config import RunConfig, charged_compute, validate

    cfg = RunConfig(real_link_mbps=1000, size_scale=8, bw=20, real_compress_s={"resnet50": 0.1541})
    dilation = 1000 / (8 * 20)
    assert charged_compute(cfg, "gtopk", "resnet50") == {"sparsify_seconds": pytest.approx(0.1541 * dilation)}
    assert charged_compute(cfg, "topk", "resnet50,x=1") == {"sparsify_seconds": pytest.approx(0.1541 * dilation)}
    assert charged_compute(cfg, "dfs", "resnet50") == {"sparsify_seconds": pytest.approx(0.1541 * dilation)}
    assert charged_compute(cfg, "gtopk", "vgg16_cifar") == {}  # not stated for this model
    assert charged_compute(cfg, "ring", "resnet50") == {}  # no compressor
    assert charged_compute(RunConfig(), "gtopk", "resnet50") == {}
    with pytest.raises(ValueError, match="real_compress_s needs real_link_mbps"):
        validate(RunConfig(real_compress_s=0.1))
    with pytest.raises(ValueError, match=r"real_compress_s=-1 must be a number > 0 \(s\), or \{model: s\}"):
        validate(RunConfig(real_link_mbps=1000, real_compress_s=-1))


def test_the_job_carries_the_charges_checked():
    from workloads.job import Job

    job = Job(algorithm="gtopk", plan={}, workers=2, world=2, model={"spec": "x", "layers": [["a", 4, 0.0]]},
              iters=1, store="s", log_dir="l", charged={"sparsify_seconds": 1})
    assert job.check().charged == {"sparsify_seconds": 1.0}
    assert Job.from_json(job.to_json()).charged == {"sparsify_seconds": 1.0}
    job.charged = {"sparsify_seconds": -1}
    with pytest.raises(ValueError, match=r"job: charged=\{'sparsify_seconds': -1\} is invalid: must be "
                                         r"\{compute key: seconds >= 0\}"):
        job.check()
