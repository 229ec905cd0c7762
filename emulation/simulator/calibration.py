"""Fitted parameters for new projections: `syncbed project --calibration cubic` (issue #23).

docs/PROJECTION.md validates the simulated form on measured runs with parameters fitted on
one half of them: a start-up per message round L, a fan-in efficiency e (every algorithm's,
and an executor's own), an executor's own L (BML's stages), an incast start-up per
converging flow (PS) and an efficiency e_o of oversubscribed switch links (every algorithm's,
on topologies that have such links). Each is charged only where it was fitted: BML's own L at 2 MiB or more
on BCube(n,k) with n >= 3, PS's incast start-up at 2 MiB or more (in the CUBIC file only past
the sync's slack, the seconds its busiest link needs beyond its NICs', and not where the NICs hang
off switches of two ports: `core.past_slack`, and `fanin.one_switch_input` on the topology's
graph, which `core.incast_of` reads); e_o on the oversubscribed
links whose flows meet a second one as loaded (`fanin.in_series`), on any topology, though it
was fitted on Fat-Trees k=4 and 6 only (docs/PROJECTION.md, "What is left"). Typing them as `--round-latency`, `--fan-in`,
`--incast` and `--oversubscribed` loses those conditions; a calibration keeps them.

A calibration is a JSON file shipped with the package (calibrations/NAME.json, one per
validation: the congestion control its hosts ran), written by
`python scripts/fan_in.py calibration --cc NAME` from the same fit `syncbed docs` renders
(`emulation/report/doctables/projection.py`, `calibration_record`); tests/unit/test_calibration.py
checks that each file is what the docs' results give today and that it charges every
validated run what the validation charged it. `parameters` is pure: (algorithm, topology,
gradient bytes) -> what that projection is charged."""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

DIR = Path(__file__).resolve().parent / "calibrations"
NAMES = ("bbr", "cubic")  # the validations of docs/PROJECTION.md, by their hosts' congestion control


@dataclass(frozen=True)
class Charges:
    """What one projection is charged: `core.Request`'s round_latency, fan_in, incast and oversubscribed."""

    round_latency: float
    fan_in: float
    incast: float
    oversubscribed: float = 1.0
    incast_bytes: float = 0.0  # added to incast at the hosts' link rate (core.incast_of)
    incast_past_slack: bool = False  # charged only past the sync's slack (core.past_slack), else every step
    # none where the hosts' NICs hang off switches of two ports (fanin.one_switch_input, read by core.incast_of)
    incast_one_input_free: bool = False
    # no more per flow than this share of its bytes at the hosts' link rate (fanin.capped_startup); 0: no cap
    incast_flow_share: float = 0.0


def bcube_n(topology: str) -> int | None:
    """n of "bcube(n,k)" or of a spec "bcube,n=N,k=K" (None for any other topology)."""
    m = re.fullmatch(r"bcube\((\d+),(\d+)\)", topology or "") or re.search(r"^bcube,.*\bn=(\d+)", topology or "")
    return int(m.group(1)) if m else None


@functools.lru_cache(maxsize=32)
def one_switch_input(topology: str) -> bool:
    """Whether the NICs of `topology` (a name, "bcube(2,4)", or a spec, "bcube,n=2,k=4") hang
    off switches of two ports (`fanin.one_switch_input` on the topology built from it), what
    the validation's rows and the e_o fit read by name; a projection reads its built
    topology (`core.incast_of`)."""
    from emulation.simulator import fanin
    from topologies import spec

    topo = spec.build(spec.spec_of_name(topology))
    return fanin.one_switch_input(topo, topo.hosts())


def parameters(cal: dict, algorithm: str, topology: str, gradient_bytes: int) -> Charges:
    """What a projection of `algorithm` on `topology` (a name, "bcube(4,2)", or a spec,
    "bcube,n=4,k=2") with a gradient of `gradient_bytes` is charged under calibration `cal`
    (a loaded file): L, or the algorithm's own L where its conditions hold; the algorithm's
    own e, else every algorithm's; its incast start-up where its size condition holds (a time and
    bytes at the hosts' link rate, which the projection adds: `core.incast_of`), else 0, with
    its form's flags: past the slack, and none into NICs of two-port switches, which
    `core.incast_of` reads from the built topology (`fanin.one_switch_input`), not from here."""
    lat = cal["round_latency_seconds"]
    own = cal["round_latency_by_algorithm"].get(algorithm)
    if own and gradient_bytes >= own["min_gradient_bytes"] and (bcube_n(topology) or 0) >= own["min_bcube_n"]:
        lat = own["seconds"]
    inc = cal["incast_by_algorithm"].get(algorithm)
    charged = bool(inc) and gradient_bytes >= inc["min_gradient_bytes"]
    return Charges(lat, cal["fan_in_by_algorithm"].get(algorithm, cal["fan_in_efficiency"]),
                   inc["seconds"] if charged else 0.0, cal.get("oversubscribed_efficiency", 1.0),
                   inc.get("bytes", 0.0) if charged else 0.0, charged and bool(inc.get("past_slack")),
                   charged and bool(inc.get("one_switch_input_free")),
                   inc.get("flow_share", 0.0) if charged else 0.0)


def path(name: str) -> Path:
    return DIR / f"{name}.json"


def load(name: str) -> dict:
    """The calibration `name` (one of NAMES); one line (ValueError) for another name or a missing file."""
    if name not in NAMES:
        raise ValueError(f"--calibration {name!r} is not one; give one of {', '.join(NAMES)} "
                         "(the validations of docs/PROJECTION.md, by the hosts' congestion control)")
    p = path(name)
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"calibration {name}: {p} is unreadable ({e}); "
                         f"make it with `python scripts/fan_in.py calibration --cc {name}`") from e


def incast_label(inc: dict) -> str:
    """An incast start-up ({"seconds": t, "bytes": b}) as reports and docs print it:
    "11.4 ms + 5.8 kB at the hosts' link rate", or the time alone where it has no bytes."""
    b, c = inc.get("bytes", 0.0), inc.get("flow_share", 0.0)
    return (f"{inc['seconds'] * 1e3:.1f} ms" + (f" + {b / 1e3:.1f} kB at the hosts' link rate" if b else "")
            + (f", at most {c:.2f} of the flow's own bytes at that rate" if c else ""))


def describe(cal: dict) -> str:
    """One line for a report: the calibration's name, its parameters and where they were fitted."""
    own = "".join(f", {a.upper()}'s own L {x['seconds'] * 1e3:.1f} ms (at {x['min_gradient_bytes'] / 2**20:g} MiB or "
                  f"more, BCube n >= {x['min_bcube_n']})" for a, x in sorted(cal["round_latency_by_algorithm"].items()))
    es = "".join(f", {a} e = {v:.3f}" for a, v in sorted(cal["fan_in_by_algorithm"].items()))
    def size(x: dict) -> str:
        return f"at {x['min_gradient_bytes'] / 2**20:g} MiB or more" if x["min_gradient_bytes"] else "at every size"
    inc = "".join(f", {a.upper()}'s incast start-up {incast_label(x)} per converging flow beyond the first "
                  f"({size(x)}"
                  f"{'; charged past the slack, none into NICs of two-port switches' if x.get('past_slack') else ''}"
                  f"; fitted on runs of up to "
                  f"{x['max_workers_fitted']} workers)" for a, x in sorted(cal["incast_by_algorithm"].items()))
    eo = cal.get("oversubscribed_efficiency", 1.0)
    over = f", e_o = {eo:.3f} on oversubscribed switch links" if eo != 1.0 else ""
    return (f"calibration {cal['name']} (hosts running {cal['congestion_control'].upper()}): "
            f"L {cal['round_latency_seconds'] * 1e3:.2f} ms per round{own}, e = {cal['fan_in_efficiency']:.3f}{es}{inc}"
            f"{over}; "
            f"fitted on the fit half of {cal['folders']} measured folders ({cal['source']})")
