"""syncbed: an emulation testbed for gradient synchronization in distributed deep learning."""
from setuptools import find_packages, setup

# Every package and subpackage of the five top-level ones (emulation.report, emulation.papers,
# workloads.algorithms, ...): a package left out here works only in the editable install.
PACKAGES = ("common", "topologies", "controllers", "workloads", "emulation")

setup(
    name="syncbed",
    version="0.1.0",
    description="Mininet + Ryu + Gloo testbed for gradient synchronization algorithms",
    packages=find_packages(include=[p for name in PACKAGES for p in (name, f"{name}.*")]),
    # Files read at run time from the package folders: the shipped per-tensor backward
    # profiles (workloads/models/profiles.py, PROFILES_DIR) and the calibrations `syncbed project
    # --calibration` reads (emulation/simulator/calibration.py). tests/unit/test_packaging.py builds
    # a wheel and checks that it holds every module and these files.
    package_data={"workloads": ["profiles/*.json"], "emulation": ["simulator/calibrations/*.json"]},
    python_requires=">=3.10",
    # torch/ryu pins live in requirements.txt and scripts/setup.sh (ryu needs a special build).
    install_requires=["networkx>=3.0", "PyYAML>=6.0", "matplotlib>=3.6", "numpy", "scapy>=2.5",
                      "scipy>=1.10", "scikit-learn>=1.2"],
    entry_points={"console_scripts": ["syncbed=emulation.cli:main"]},
)
