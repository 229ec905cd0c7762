"""One parser for every `name,key=value,...` spec: topologies, models and algorithms.

`parse_spec("topk,density=0.01", "algorithm") -> ("topk", {"density": "0.01"})`. Syntax only:
names are lower-cased, values stay strings (each owner converts and range-checks its own
options and lists the valid ones); an empty spec, an item that is not key=value or a key
given twice is refused in one line that names the kind of spec.
"""
from __future__ import annotations


def parse_spec(spec, what: str = "spec") -> tuple[str, dict]:
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"empty {what} spec; write name[,key=value...]")
    name, *items = [part.strip() for part in spec.strip().split(",")]
    if not name or "=" in name:
        raise ValueError(f"bad {what} spec {spec!r}: it must start with a name, then key=value items")
    options: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise ValueError(f"bad {what} spec {spec!r}: option {item!r} is not key=value")
        if key in options:
            raise ValueError(f"bad {what} spec {spec!r}: option {key!r} given twice")
        options[key] = value
    return name.lower(), options
