"""A paper's claims next to what an experiment measured (BML, Wang et al., NeurIPS 2018).

BML's claims, for the same number of servers, BML on BCube(n, k) against a parameter
server (PS, sharded and co-located on the workers) on a Fat-Tree:
- sync time 1/k of PS's (theory: 2(N-1)M/(kNB) against 2(N-1)M/(NB));
- k/5 of the switches (k n^(k-1) against 5N/n for the same switch port count);
- job completion time up to 56.4% lower (LeNet-5 and VGG-19, 9 dual-GPU servers).
`bml_claims(runs)` pairs every BML run with the PS-on-Fat-Tree run of the same model
and gradient size; pure, so `syncbed analyze` and the report recompute it from files.
"""
from __future__ import annotations

PAPER_JCT_REDUCTION = 0.564


def _key(run):
    return (run.get("model"), run.get("gradient_bytes"))


def bml_claims(runs: list) -> list[dict]:
    ps = {_key(r): r for r in runs if r.get("algorithm") == "ps" and str(r.get("topology", "")).startswith("fattree")}
    out = []
    for b in runs:
        if b.get("algorithm") != "bml" or _key(b) not in ps:
            continue
        p = ps[_key(b)]
        k = _levels(b["topology"])
        row = {"model": b.get("model"), "bcube": b["topology"], "fattree": p["topology"],
               "servers": b["workers"], "k": k, "gradient_bytes": b.get("gradient_bytes"),
               "sync_bml_s": b.get("median_sync_seconds"), "sync_ps_s": p.get("median_sync_seconds"),
               "sync_ratio": _ratio(b.get("median_sync_seconds"), p.get("median_sync_seconds")),
               "sync_ratio_claim": 1 / k,
               "bound_ratio": _ratio(b.get("bound_seconds"), p.get("bound_nonblocking_seconds")),
               # how close each ran to its own bound (BML: its routes; PS: a non-blocking Fat-Tree)
               "bml_over_bound": _ratio(b.get("median_sync_seconds"), b.get("bound_seconds")),
               "ps_over_bound": _ratio(p.get("median_sync_seconds"), p.get("bound_nonblocking_seconds")),
               # PS on the Fat-Tree: its busiest link under the ECMP hash against host links only
               "ps_collision_factor": _ratio(p.get("bound_seconds"), p.get("bound_nonblocking_seconds")),
               "switches_bcube": b.get("switches_total"), "switches_fattree": p.get("switches_total"),
               "switch_ratio": _ratio(b.get("switches_total"), p.get("switches_total")),
               "switch_ratio_claim": k / 5,
               "switches_used_bcube": b.get("switches_with_traffic"),
               "switches_used_fattree": p.get("switches_with_traffic"),
               "switch_used_ratio": _ratio(b.get("switches_with_traffic"), p.get("switches_with_traffic")),
               "jct_bml_s": b.get("jct_seconds"), "jct_ps_s": p.get("jct_seconds"),
               "payload_bml": b.get("payload_ratio"), "payload_ps": p.get("payload_ratio"),
               "nic_share_spread": nic_share_spread(b),
               "faithful": bool(b.get("faithful")) and bool(p.get("faithful")),
               "correct": bool(b.get("correct")) and bool(p.get("correct"))}
        jr = _ratio(b.get("jct_seconds"), p.get("jct_seconds"))
        row["jct_reduction"] = None if jr is None else 1 - jr
        row["jct_reduction_claim"] = PAPER_JCT_REDUCTION
        out.append(row)
    return out


def nic_share_spread(run) -> float | None:
    """max/min measured tx over a BML run's host NICs: 1.0 when every NIC carried an equal share."""
    vals = [d["tx"] for d in (run.get("payload_bytes_measured") or {}).values() if d.get("tx")]
    return max(vals) / min(vals) if vals and min(vals) > 0 else None


def _levels(name: str) -> int:
    # "bcube(n,k)"
    return int(name.split(",")[1].rstrip(")"))


def _ratio(a, b):
    return a / b if a is not None and b else None
