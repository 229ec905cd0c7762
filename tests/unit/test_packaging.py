"""A non-editable install works (issue 19, section 6): a wheel built by setup.py holds every
module of every top-level package (common, topologies, controllers, workloads, emulation,
with their subpackages) and the shipped profiles, and from that wheel alone, outside the repo,
`syncbed algos` runs and a shipped profile loads.

The .venv has an editable install of this repo, whose import finder would quietly supply
whatever the wheel lacks; the check runs in a child process that drops that finder and
asserts every syncbed module it imported came from the unpacked wheel. The build runs on a
copy of the sources, so its build/ and *.egg-info stay out of the checkout. About 15-30 s.
"""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
# Every top-level package of the checkout (a folder with __init__.py), found here and not read from
# setup.py, so that a new package setup.py forgets fails this test.
PACKAGES = tuple(sorted(p.parent.name for p in REPO.glob("*/__init__.py") if p.parent.name != "tests"))
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
PROFILE = ("resnet50", 2)  # workloads/profiles/resnet50-b2.json


def source_files() -> set[str]:
    """Wheel-relative paths every install must hold: each module of every package and
    each shipped profile and calibration."""
    files = {p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py") if "__pycache__" not in p.parts}
    files |= set((REPO / "workloads" / "profiles").glob("*.json"))
    files |= set((REPO / "emulation" / "simulator" / "calibrations").glob("*.json"))
    return {p.relative_to(REPO).as_posix() for p in files}


def copy_sources(dst: Path) -> Path:
    """setup.py and the package folders, as a fresh clone has them."""
    dst.mkdir()
    for name in ("setup.py", "README.md", "requirements.txt"):
        shutil.copy2(REPO / name, dst / name)
    for pkg in PACKAGES:
        shutil.copytree(REPO / pkg, dst / pkg, ignore=SKIP)
    return dst


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def build_wheel(src: Path, out: Path) -> Path:
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(out), str(src)], cwd=src.parent, env=_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"pip wheel failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    (wheel,) = out.glob("syncbed-*.whl")
    return wheel


# Runs in a child with the unpacked wheel first on sys.path and no editable finder; prints JSON.
CHILD = r"""
import contextlib, importlib, io, json, sys
from importlib.metadata import distributions
from pathlib import Path

site = sys.argv[1]
sys.path.insert(0, site)
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")
                    and "__editable__" not in type(f).__module__]
(dist,) = [d for d in distributions(path=[site]) if d.metadata["Name"] == "syncbed"]
(ep,) = [e for e in dist.entry_points if e.group == "console_scripts" and e.name == "syncbed"]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    rc = ep.load()(["algos"])
from workloads.models import profiles, specs
name, batch = sys.argv[2], int(sys.argv[3])
shipped = profiles.read_profile(name, batch)  # None: the wheel lacks the file
model = specs.load(name, cache_dir=sys.argv[4]) if shipped else None
for mod in ("emulation.report", "emulation.papers", "emulation.report.markdown", "emulation.report.plots"):
    importlib.import_module(mod)
files = {n: getattr(m, "__file__", None) for n, m in list(sys.modules.items())
         if n.split(".")[0] in ("topologies", "controllers", "workloads", "emulation")}
print(json.dumps({"entry_point": ep.value, "rc": rc, "algos": out.getvalue(), "shipped": shipped is not None,
                  "source": model.source if model else None, "layers": len(model.layers) if model else 0,
                  "profiles_dir": str(profiles.PROFILES_DIR), "files": files}))
"""


def check_installed(site: Path, cwd: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(site), *map(str, PROFILE), str(cwd / "cache")],
                          cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"from the wheel alone:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_wheel_holds_every_package_and_profile_and_runs_outside_the_repo(tmp_path):
    wheel = build_wheel(copy_sources(tmp_path / "src"), tmp_path / "wheel")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(source_files() - names)
    assert not missing, f"setup.py leaves out {len(missing)} file(s), e.g. {missing[:8]}"
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "elsewhere"  # cwd outside the repo: nothing found relative to it
    elsewhere.mkdir()
    got = check_installed(site, elsewhere)
    assert got["entry_point"] == "emulation.cli:main" and got["rc"] == 0
    listed = {line.split()[0] for line in got["algos"].splitlines() if line and not line.startswith(" ")}
    assert {"ring", "ps", "gloo", "bml", "mgwfbp", "gtopk", "dfs", "forest"} <= listed, got["algos"]
    assert got["shipped"], f"no shipped profile {PROFILE} in the wheel ({got['profiles_dir']})"
    assert "shipped (workloads/profiles/resnet50-b2.json)" in got["source"] and got["layers"] > 100
    assert Path(got["profiles_dir"]).is_relative_to(site)
    assert "emulation.report" in got["files"] and "emulation.papers" in got["files"]
    outside = {n: f for n, f in got["files"].items() if f is None or not Path(f).is_relative_to(site)}
    assert not outside, f"imported from outside the wheel: {outside}"
