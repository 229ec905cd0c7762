"""The Vagrantfile is valid and provisions with the same installer as a bare machine."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.unit


@pytest.mark.skipif(shutil.which("vagrant") is None, reason="Debian's vagrant package is not installed (make setup)")
def test_vagrant_validate(tmp_path):
    p = subprocess.run(["vagrant", "validate", "--ignore-provider"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                         "VAGRANT_HOME": str(tmp_path / "vagrant.d")})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "validated successfully" in p.stdout


def test_vagrant_provisions_with_the_installer():
    text = (ROOT / "Vagrantfile").read_text()
    assert "scripts/setup.sh" in text
    assert "vb.cpus = 2" in text
