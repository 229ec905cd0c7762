"""syncbed: an emulation testbed for gradient synchronization in distributed deep learning."""
from setuptools import setup

setup(
    name="syncbed",
    version="0.1.0",
    description="Mininet + Ryu + Gloo testbed for gradient synchronization algorithms",
    packages=["topologies", "controllers", "workloads", "workloads.algorithms", "emulation"],
    python_requires=">=3.10",
    # torch/ryu pins live in requirements.txt and scripts/setup.sh (ryu needs a special build).
    install_requires=["networkx>=3.0", "PyYAML>=6.0", "matplotlib>=3.6", "numpy", "scapy>=2.5"],
    entry_points={"console_scripts": ["syncbed=emulation.cli:main"]},
)
