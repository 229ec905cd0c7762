"""DFS: joint data formatting and sparsification for parameter-server communication.

Yang, Zhao, Zhao, Xu, Computer Networks 2023 (`CITATION`); only the abstract is available.
Workers sparsify so as to form as many all-zero blocks as possible and stream gradients
block by block, skipping zero blocks, with a block size chosen dynamically, in both
directions (worker -> PS and PS -> worker). Baseline: OmniReduce (Fei et al., SIGCOMM
2021: fixed blocks, zero blocks skipped).

`pair(runs)`: for each (topology, model, workers), every dfs run against every omnireduce
run: speed-up (iteration time, else sync time), payload per sync and job completion time
reductions. Rendering lists the claims; comparing them with the measurement in sentences
is left to whoever implements DFS.
"""
from __future__ import annotations

from emulation.papers import Paper, common
from emulation.report.columns import NA, fmt, table, yes_no

CITATION = ('C. Yang, Y. Zhao, G. Zhao, H. Xu, "DFS: Joint Data Formatting and Sparsification for Efficient '
            'Communication in Distributed Machine Learning", Computer Networks, 2023, '
            'DOI 10.1016/j.comnet.2023.109777.')
CLAIMS = [
    {"what": "ResNet-18 training time reduction (real testbed)", "value": 74.12, "unit": "%",
     "source": "the abstract"},
    {"what": "communication cost reduction against OmniReduce (simulation, up to)", "value": 87.17, "unit": "%",
     "source": "the abstract"},
]


def _reductions(s: dict, b: dict) -> dict:
    """1 - DFS / OmniReduce of the payload per sync and of the job completion time."""
    def reduction(x, y):
        r = common.ratio(x, y)
        return None if r is None else 1 - r
    return {"bytes_reduction": reduction(common.bytes_per_sync(s), common.bytes_per_sync(b)),
            "jct_reduction": reduction(s.get("jct_seconds"), b.get("jct_seconds"))}


def pair(runs: list) -> list[dict]:
    return common.speedups(runs, ("dfs",), ("omnireduce",), prefer="iteration", extra=_reductions)


def _pct(x) -> str:
    return NA if x is None else f"{100 * x:.1f}%"


def render(rows: list[dict]) -> list[str]:
    intro = ("Same model, topology and workers. Speed-up = OmniReduce time / DFS time; reductions are "
             "1 - DFS / OmniReduce of the payload per sync (captures) and of the job completion time.")
    body = table(["topology", "model", "workers", "DFS", "OmniReduce", "time compared", "speed-up",
                  "payload per sync reduction", "JCT reduction", "faithful"],
                 [[str(r["topology"]), str(r["model"]), fmt(r["workers"], "g"), r["subject"], r["baseline"],
                   r["metric"], NA if r["speedup"] is None else f"{r['speedup']:.2f}x", _pct(r["bytes_reduction"]),
                   _pct(r["jct_reduction"]), yes_no(r["faithful"])] for r in rows])
    return common.section("DFS against OmniReduce (Yang et al., Computer Networks 2023)", CITATION, intro, body,
                          CLAIMS)


PAPER = Paper(name="dfs", citation=CITATION, claims=CLAIMS, algorithms=("dfs", "omnireduce"), pair=pair,
              render=render)
