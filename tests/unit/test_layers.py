"""Dependencies point one way (issue #20): no module imports one on a higher layer.

The layers, lowest first, are the ones docs/ARCHITECTURE.md draws. A module may import its
own layer and every layer below; every import counts, also one inside a function (a lazy
import is still a dependency). Read from the source with `ast`, so nothing is imported.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]

# (layer, module prefixes), lowest first. A module belongs to the layer of its longest prefix.
LAYERS = [
    ("vocabulary", ["common"]),
    ("topologies", ["topologies"]),
    ("routing and workers", ["controllers", "workloads"]),
    ("emulation parts", ["emulation"]),  # config, network, capture, pcap, expected, checks, ...
    ("simulator", ["emulation.simulator"]),
    ("measurement", ["emulation.workers", "emulation.linkprobe", "emulation.timeline", "emulation.analysis"]),
    ("results", ["emulation.results"]),
    ("papers", ["emulation.papers"]),
    ("report", ["emulation.report"]),
    ("front-end", ["emulation.runner", "emulation.trainer", "emulation.simulator.sweep", "emulation.cli",
                   "emulation.bench_pcap"]),
]
PACKAGES = sorted({prefix.split(".")[0] for _, prefixes in LAYERS for prefix in prefixes})


def layer_of(module: str) -> int | None:
    best, layer = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, layer = len(prefix), i
    return layer


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, module: str) -> set[str]:
    """Every syncbed module `path` imports, absolute or relative, at any depth of the file."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}  # `from pkg import module`
    return {name for name in found if name.split(".")[0] in PACKAGES}


def sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_has_a_layer():
    assert sources(), "no sources found"
    assert [module_name(p) for p in sources() if layer_of(module_name(p)) is None] == []


def test_no_module_imports_one_on_a_higher_layer():
    known = {module_name(p) for p in sources()}
    upward = []
    for path in sources():
        me = module_name(path)
        mine = layer_of(me)
        for name in sorted(imports(path, me)):
            while name not in known and "." in name:  # `from pkg.mod import function`
                name = name.rpartition(".")[0]
            theirs = layer_of(name)
            if theirs is not None and theirs > mine:
                upward.append(f"{me} ({LAYERS[mine][0]}) imports {name} ({LAYERS[theirs][0]})")
    assert upward == []


def test_the_layer_check_sees_an_upward_import(tmp_path):
    """The check itself can fail: a lower module importing a higher one is found, relative or lazy."""
    pkg = tmp_path / "workloads"
    pkg.mkdir()
    lazy = pkg / "x.py"
    lazy.write_text("def f():\n    from emulation import analysis\n    from . import comm\n")
    found = imports(lazy, "workloads.x")
    assert "emulation.analysis" in found and "workloads.comm" in found
    assert layer_of("emulation.analysis") > layer_of("workloads.x")
    assert layer_of("emulation.simulator.core") < layer_of("emulation.analysis") < layer_of("emulation.report.markdown")
