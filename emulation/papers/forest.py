"""Topology-adaptive parameter synchronization: a forest of aggregation/broadcast trees.

Zhang, Wu, Li, INFOCOM 2021 (`CITATION`); only the abstract is available. On
heterogeneous bandwidth the best synchronization topology is a set of trees rooted at
different workers, each aggregating and broadcasting one partition of the gradient; a
near-optimal forest packing uses the available bandwidth, and aggregation overlaps
broadcast.

`pair(runs)`: for each (topology, model, workers), every forest run against every ring,
PS, gloo and BML run (iteration time, else sync time). Rendering lists the claims;
comparing them with the measurement in sentences is left to whoever implements the forest.
"""
from __future__ import annotations

from emulation.papers import Paper, common

BASELINES = ("ring", "ps", "gloo", "bml")

CITATION = ('Z. Zhang, C. Wu, Z. Li, "Near-Optimal Topology-adaptive Parameter Synchronization in Distributed '
            'DNN Training", IEEE INFOCOM 2021, DOI 10.1109/INFOCOM42981.2021.9488678.')
CLAIMS = [
    {"what": "speed-up over state-of-the-art parameter synchronization schemes (up to)", "value": 18.3, "unit": "x",
     "source": "the abstract"},
]


def pair(runs: list) -> list[dict]:
    return common.speedups(runs, ("forest",), BASELINES, prefer="iteration")


def render(rows: list[dict]) -> list[str]:
    intro = "Same model, topology and workers. Speed-up = baseline time / forest time."
    return common.section("Forest packing against ring, PS and all-reduce (Zhang, Wu, Li, INFOCOM 2021)", CITATION,
                          intro, common.speedup_table(rows, "forest"), CLAIMS)


PAPER = Paper(name="forest", citation=CITATION, claims=CLAIMS, algorithms=("forest",), pair=pair, render=render)
