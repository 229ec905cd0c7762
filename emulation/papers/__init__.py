"""The papers syncbed reproduces, one module each, and the registry that names them.

A paper is a module in `emulation/papers/` that defines `PAPER = Paper(...)`:
- `name`: registry key (`bml`, `mgwfbp`, ...);
- `citation`: the full reference;
- `claims`: what the paper says, each a dict with `what`, `value` (a number, a
  [low, high] range or a word), `unit` and `source` (where the number comes from: the
  paper's table or figure, the authors' plotting data, or the abstract), and optionally
  `model` / `baseline` (which runs the number is about) and `note` (what we found);
- `algorithms`: the algorithms whose runs make the paper relevant to an experiment;
- `pair(runs) -> [row dict]`: pure, over summary.json run records that finished ok;
  pairs each run of the paper's algorithm with its baselines (same model and size...);
- `render(rows) -> [Markdown line]`: the report section: a heading, a table, and the
  sentences comparing measured with claimed. Called only with rows.
`syncbed analyze` and the report recompute everything from files; the report
(emulation/report/markdown.py `md_papers`) writes `section(runs)` of every `relevant`
paper, so adding a paper adds a module and touches nothing else.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

CLAIM_KEYS = ("what", "value", "unit", "source")
HELPER_MODULES = {"common"}  # shared pairing/rendering helpers, not papers


@dataclass(frozen=True)
class Paper:
    """One paper: who wrote it, what it claims, and how runs are set against the claims."""

    name: str
    citation: str
    claims: list
    algorithms: tuple
    pair: Callable[[list], list]
    render: Callable[[list], list]

    def __post_init__(self):
        if not self.name or not self.citation:
            raise ValueError(f"paper {self.name!r} needs a name and a citation, so the report can say whose "
                             "claims it checks")
        for i, claim in enumerate(self.claims):
            missing = [k for k in CLAIM_KEYS if k not in claim] if isinstance(claim, dict) else list(CLAIM_KEYS)
            if missing:
                raise ValueError(f"paper {self.name!r} claim {i} lacks {missing}: every claim says what, its "
                                 "value and unit, and where the number comes from")
        if isinstance(self.algorithms, str) or not self.algorithms:
            raise ValueError(f"paper {self.name!r}: algorithms must be a non-empty list of names, got "
                             f"{self.algorithms!r}")
        if not callable(self.pair) or not callable(self.render):
            raise ValueError(f"paper {self.name!r}: pair and render must be callables")

    def relevant(self, runs: list) -> bool:
        """Did any of the paper's algorithms run?"""
        return any(r.get("algorithm") in self.algorithms for r in runs)

    def section(self, runs: list) -> list[str]:
        """Markdown lines of the paper's report section; empty when nothing pairs."""
        rows = self.pair(runs)
        return self.render(rows) if rows else []


_REGISTRY: dict[str, Paper] = {}


def registry() -> dict[str, Paper]:
    """name -> Paper, discovered from the modules of this package once."""
    if not _REGISTRY:
        found = {}  # filled completely or not at all, so a failed import is retried, not half-cached
        for mod in pkgutil.iter_modules(__path__):
            if mod.name in HELPER_MODULES:
                continue
            paper = getattr(importlib.import_module(f"{__name__}.{mod.name}"), "PAPER", None)
            if paper is not None:
                found[paper.name] = paper
        _REGISTRY.update(found)
    return _REGISTRY


def get(name: str) -> Paper:
    reg = registry()
    if name not in reg:
        raise ValueError(f"unknown paper {name!r}; valid: {', '.join(sorted(reg))}")
    return reg[name]


def relevant(runs: list) -> list[Paper]:
    """The papers whose algorithms appear among `runs`, by name."""
    return [p for _, p in sorted(registry().items()) if p.relevant(runs)]
