"""Topology specs ("bcube,n=4,k=2", "fattree,k=4") -> `Topology`, with one-line errors."""
from __future__ import annotations

import re

from . import bcube, fattree
from common.specs import parse_spec

from .description import Topology

# name -> (builder, {param: default}); the registry the CLI and `mn --custom` read
BUILDERS = {
    "bcube": (bcube.build, {"n": 4, "k": 2}),
    "fattree": (fattree.build, {"k": 4}),
}
MAX_MBPS = 1000.0  # Mininet's TCLink silently ignores larger bandwidths
# Smallest rate tc's HTB shapes as configured, measured here (iproute2 6.1, veth, Mininet's
# own `htb rate %fMbit burst 15k`). tc keeps whole bytes/s: below 8e-6 Mbit the rate is
# 0 B/s, tc refuses the class ('"rate" is required'), Mininet only logs it and the link
# stays unshaped (docs/ENVIRONMENT.md: 2.7 Gbit/s at 1e-6). Up to 4.5e-4 Mbit tc accepts the rate
# but the 15 KB burst overflows its 32-bit time in ticks (shown as "burst 1b".."1616b"),
# and rates are rounded down to whole bytes/s (1e-5 becomes 8 bit/s). 0.001 Mbit is
# the smallest round rate kept exactly with the configured burst: measured 1.02 kbit/s.
MIN_MBPS = 0.001


def parse(spec: str) -> tuple[str, dict]:
    """'bcube,n=4,k=2' -> ('bcube', {'n': 4, 'k': 2}); unknown names or params raise."""
    if not str(spec).strip():
        raise ValueError(f"empty topology spec; valid: {', '.join(examples())}")
    try:
        name, options = parse_spec(spec, "topology")
    except ValueError as e:
        raise ValueError(f"{e}; valid: {', '.join(examples())}") from None
    kind = name.replace("-", "")
    if kind not in BUILDERS:
        raise ValueError(f"unknown topology {name!r}; valid: {', '.join(examples())}")
    params = dict(BUILDERS[kind][1])
    for key, val in options.items():
        if key not in params:
            raise ValueError(f"bad parameter '{key}={val}' for {kind}; valid: {', '.join(examples())}")
        try:
            params[key] = int(val)
        except ValueError:
            raise ValueError(f"parameter {key} of {kind} must be an integer, got {val!r}") from None
    return kind, params


def spec_of_name(name: str) -> str:
    """A topology's name as results record it, "bcube(4,2)" or "fattree(4)", as a spec
    ("bcube,n=4,k=2", "fattree,k=4": its builder's parameters in order); a spec is returned as
    it is. One line (ValueError) for anything else."""
    m = re.fullmatch(r"\s*([a-z-]+)\(([\d,\s]*)\)\s*", str(name))
    if not m:
        parse(name)  # a spec, or its one-line error
        return str(name)
    kind, values = m.group(1).replace("-", ""), [v.strip() for v in m.group(2).split(",") if v.strip()]
    if kind not in BUILDERS or len(values) != len(BUILDERS[kind][1]):
        forms = ", ".join(f"{k}({','.join(params)})" for k, (_, params) in BUILDERS.items())
        raise ValueError(f"topology name {name!r} is not one of {forms}")
    return ",".join([kind] + [f"{k}={v}" for k, v in zip(BUILDERS[kind][1], values)])


ECMP_METHODS = ("hash", "two-level")


def build(spec: str, bw: float = 20.0, link_bw: dict | None = None, ecmp: str = "hash") -> Topology:
    check_bw(bw, "bw")
    for cls, v in (link_bw or {}).items():
        check_bw(v, f"link_bw[{cls}]")
    if ecmp not in ECMP_METHODS:
        raise ValueError(f"ecmp {ecmp!r} is unknown; valid: {', '.join(ECMP_METHODS)}")
    kind, params = parse(spec)
    topo = BUILDERS[kind][0](bw=bw, **params)
    topo.params["ecmp"] = ecmp
    if link_bw:
        # classes first, then hosts and single links (Topology.set_bandwidth): the most
        # specific key wins, whatever order the experiment file lists them in
        classes = set(topo.link_classes())
        ordered = sorted(link_bw.items(), key=lambda kv: (kv[0] not in classes, kv[0]))
        topo.set_bandwidth(dict(ordered))
        topo.params["link_bw"] = {k: float(v) for k, v in ordered}
    return topo


def check_bw(v, what="bw") -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number of Mbit/s, got {v!r}") from None
    if not MIN_MBPS <= f <= MAX_MBPS:  # also refuses nan
        raise ValueError(f"{what}={v} Mbit/s is out of range: must be >= {MIN_MBPS:g} and <= {MAX_MBPS:g} "
                         "(tc's HTB cannot shape less; Mininet ignores more)")
    return f


# What `syncbed run` can start on the project's machines (2 cores, OVS userspace datapath),
# measured with this code: Fat-Tree k=8 (128 hosts, 80 switches, 384 links) had its network
# ready in 74 s and all pairs reachable 25 s later, BCube(5,3) (125 servers, 75 switches,
# 375 links) in 87 s + 71 s (a loaded machine); BCube(2,7) (128 servers, 448 switches)
# took over 10 min just to create its bridges (each userspace bridge added costs more than
# the last). Bigger networks are for the SimGrid projection (syncbed project),
# which builds any size `build` accepts.
MAX_EMULATED_HOSTS = 128
MAX_EMULATED_SWITCHES = 80
MAX_INTF_NAME = 15  # Linux IFNAMSIZ - 1: a longer interface name cannot be created


def _sizes(kind: str, params: dict) -> tuple[int, int]:
    """(hosts, switches) from the closed forms, without building anything."""
    if kind == "fattree":
        k = params["k"]
        return k**3 // 4, 5 * k * k // 4
    n, k = params["n"], params["k"]
    if k < 1 or n < 1:
        return 0, 0  # the builder says what is wrong
    if k > 64:  # n^k would be astronomic for any n >= 2
        return 2**64, 2**64
    return n**k, k * n ** (k - 1)


def emulation_problem(spec: str) -> str | None:
    """Why `syncbed` cannot emulate this topology here, or None. Checks the size before
    building (BCube(16,3) alone needs over 24 GiB to describe), then the names the
    network would create. Bad specs raise ValueError like `build`."""
    kind, params = parse(spec)
    hosts, switches = _sizes(kind, params)
    if hosts > MAX_EMULATED_HOSTS or switches > MAX_EMULATED_SWITCHES:
        name = f"{kind}({','.join(str(v) for v in params.values())})"
        return (f"{name} has {hosts} hosts and {switches} switches: syncbed emulates at most "
                f"{MAX_EMULATED_HOSTS} hosts and {MAX_EMULATED_SWITCHES} switches on one machine "
                "(e.g. fattree,k=8 or bcube,n=5,k=3); project larger networks with syncbed project")
    topo = build(spec)
    long = [i for i in topo.intfs if len(i) > MAX_INTF_NAME]
    if long:
        return (f"{topo.name} needs interface names longer than Linux's {MAX_INTF_NAME} characters, "
                f"e.g. {long[0]}; it cannot be emulated")
    return None


def examples() -> list[str]:
    return ["bcube,n=N,k=K (BML notation: N^K servers, K levels)", "fattree,k=K (K even)"]
