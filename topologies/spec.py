"""Topology specs ("bcube,n=4,k=2", "fattree,k=4") -> `Topology`, with one-line errors."""
from __future__ import annotations

from . import bcube, fattree
from .description import Topology

# name -> (builder, {param: default}); the registry the CLI and `mn --custom` read
BUILDERS = {
    "bcube": (bcube.build, {"n": 4, "k": 2}),
    "fattree": (fattree.build, {"k": 4}),
}
MAX_MBPS = 1000.0  # Mininet's TCLink silently ignores larger bandwidths


def parse(spec: str) -> tuple[str, dict]:
    """'bcube,n=4,k=2' -> ('bcube', {'n': 4, 'k': 2}); unknown names or params raise."""
    parts = [p.strip() for p in str(spec).split(",") if p.strip()]
    if not parts:
        raise ValueError(f"empty topology spec; valid: {', '.join(examples())}")
    kind = parts[0].lower().replace("-", "")
    if kind not in BUILDERS:
        raise ValueError(f"unknown topology {parts[0]!r}; valid: {', '.join(examples())}")
    params = dict(BUILDERS[kind][1])
    for p in parts[1:]:
        key, _, val = p.partition("=")
        if key not in params or not val:
            raise ValueError(f"bad parameter {p!r} for {kind}; valid: {', '.join(examples())}")
        try:
            params[key] = int(val)
        except ValueError:
            raise ValueError(f"parameter {key} of {kind} must be an integer, got {val!r}") from None
    return kind, params


ECMP_METHODS = ("hash", "two-level")


def build(spec: str, bw: float = 20.0, link_bw: dict | None = None, ecmp: str = "hash") -> Topology:
    check_bw(bw, "bw")
    for cls, v in (link_bw or {}).items():
        check_bw(v, f"link_bw[{cls}]")
    if ecmp not in ECMP_METHODS:
        raise ValueError(f"ecmp {ecmp!r} is unknown; valid: {', '.join(ECMP_METHODS)}")
    kind, params = parse(spec)
    topo = BUILDERS[kind][0](bw=bw, link_bw=link_bw, **params)
    topo.params["ecmp"] = ecmp
    unknown = set(link_bw or {}) - set(topo.link_classes())
    if unknown:
        raise ValueError(f"unknown link class {sorted(unknown)} for {topo.name}; "
                         f"valid: {sorted(topo.link_classes())}")
    return topo


def check_bw(v, what="bw") -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number of Mbit/s, got {v!r}") from None
    if not 0 < f <= MAX_MBPS:
        raise ValueError(f"{what}={v} Mbit/s is out of range: must be > 0 and <= {MAX_MBPS:g} "
                         "(Mininet ignores larger values)")
    return f


def examples() -> list[str]:
    return ["bcube,n=N,k=K (BML notation: N^K servers, K levels)", "fattree,k=K (K even)"]
