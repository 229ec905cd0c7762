"""Run time and memory of `syncbed project` against P, for every algorithm of the registry
(issue #23's benchmark: "to the largest P it reaches in 60 s").

For each algorithm, project growing topologies (Fat-Trees k = 4 to 24; BML on BCube(n,3)), one
whole command per point, until a command takes more than twice --limit seconds of wall, is
refused (by the memory, CPU or growth estimates), or is killed at --kill seconds; the largest P
within --limit is the result. Each point keeps the
command's wall and peak resident size, and from its summary.json the simulator record: SimGrid's
CPU seconds, the run-time estimate it was checked against (`estimate_seconds`), the messages
SimGrid ran per step (the estimate's input), routes and planning time. The per-point projection
folders are not kept (they hold every NIC's bytes); the points are, in one JSON file.

Run it on an otherwise idle machine (no emulation, no tests): the walls are the result.

    .venv/bin/python scripts/projection_runtimes.py --out docs/results/projection-runtimes-all
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FATTREES = [4, 6, 8, 10, 12, 16, 20, 24]
BCUBES = [(4, 2), (4, 3), (6, 3), (8, 3), (10, 3), (12, 3), (16, 3)]
MB = 4  # gradient MiB of the single-layer algorithms (the projections' synthetic,mb=4)
# (spec, extra arguments): layer-wise schedules on a model's layers (ResNet-50: 161 tensors)
ALGOS = [
    ("ring", []), ("gloo", []), ("ps", []), ("hd", []), ("bml", []), ("forest", []),
    ("forest,fallback=none", []),  # its trees even where a ring is as fast (homogeneous links)
    ("gtopk,density=0.001", []), ("topk,density=0.001", []), ("topk_ps,density=0.001", []),
    ("dfs,density=0.01", []), ("omnireduce,density=0.01", []),
    ("wfbp", ["--model", "resnet50"]), ("single", ["--model", "resnet50"]),
    ("mgwfbp", ["--model", "resnet50"]), ("fusion", ["--model", "resnet50"]),
]


def sizes(algo: str):
    """(topology spec, workers or None) in growing P."""
    if algo == "bml":
        return [(f"bcube,n={n},k={k}", None) for n, k in BCUBES]
    out, seen = [], set()
    for k in FATTREES:
        hosts = k ** 3 // 4
        workers = 1 << (hosts.bit_length() - 1) if algo == "hd" else None  # hd: a power of two
        if workers is not None and workers in seen:
            continue
        seen.add(workers)
        out.append((f"fattree,k={k}", workers))
    return out


def point(spec: str, extra: list, topo: str, workers, kill: float) -> dict:
    """One whole `syncbed project` command: its wall, peak and simulator record."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "emulation.cli", "project", "--topo", topo, "--algo", spec,
               *(extra or ["--mb", str(MB)]), "--bw", "1000", "--ecmp", "two-level",
               "--max-minutes", "30", "--out", f"{tmp}/p"]
        if workers is not None:
            cmd += ["--workers", str(workers)]
        t0 = time.perf_counter()
        proc = subprocess.Popen(["/usr/bin/time", "-f", "PEAK_KB %M", *cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=kill)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"topology": topo, "workers": workers, "status": "killed",
                    "command_wall_seconds": round(time.perf_counter() - t0, 1)}
        wall = time.perf_counter() - t0
        # the command and its SimGrid child (waited for by it): the largest resident set
        peak = next((int(line.split()[1]) * 1024 for line in out.splitlines() if line.startswith("PEAK_KB ")), None)
        out = "\n".join(line for line in out.splitlines()
                        if not line.startswith(("PEAK_KB ", "Command exited with", "Command terminated by")))
        rec = {"topology": topo, "command": " ".join(["syncbed"] + cmd[3:-2]),
               "command_wall_seconds": round(wall, 3)}
        summary = Path(tmp, "p", "summary.json")
        if proc.returncode != 0 or not summary.exists():
            last = [line for line in out.splitlines() if line.strip()][-1:] or [""]
            return {**rec, "workers": workers, "status": "refused" if proc.returncode == 2 else "failed",
                    "message": last[0][:400]}
        run = json.loads(summary.read_text())["runs"][0]
        s = run.get("simulator") or {}
        red = s.get("reduction") or {}
        return {**rec, "status": "ok", "workers": run["workers"], "peak_bytes": peak,
                "simulated_seconds": run["simulated_seconds"], "sync_over_bound": run["sync_over_bound"],
                "messages": s.get("messages"), "steps": s.get("steps"),
                "simulated_messages_per_step": s.get("simulated_messages_per_step"),
                "repeated_steps": s.get("repeated_steps"),
                "reduced_classes_per_step": red.get("classes_per_step"),
                "route_seconds": s.get("route_seconds"), "simgrid_cpu_seconds": s.get("simgrid_cpu_seconds"),
                "projection_wall_seconds": s.get("wall_seconds"), "cpu_estimate_seconds": s.get("cpu_estimate_seconds"),
                "step_estimate_seconds": s.get("step_estimate_seconds"),
                "memory_estimate_bytes": s.get("memory_estimate_bytes"),
                "child_maxrss_bytes": s.get("child_maxrss_bytes"), "parent_maxrss_bytes": s.get("parent_maxrss_bytes")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for result.json")
    ap.add_argument("--limit", type=float, default=60.0, help="the command wall (s) a size must stay within; past twice it an algorithm stops")
    ap.add_argument("--kill", type=float, default=150.0, help="kill a command past this wall (s)")
    ap.add_argument("--algo", action="append", help="only this spec or algorithm name (repeatable)")
    args = ap.parse_args()
    want = set(args.algo) if args.algo else None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"what": "syncbed project, one whole command per point, growing P until one is refused, killed "
                      "or takes more than twice the limit",
              "limit_seconds": args.limit, "kill_seconds": args.kill, "cores": os.cpu_count(),
              "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "algorithms": {}}
    if want and (out / "result.json").exists():  # measure these algorithms again, keep the others
        result = json.loads((out / "result.json").read_text())
        result.setdefault("remeasured", []).append({"algorithms": sorted(want),
                                                    "started": time.strftime("%Y-%m-%dT%H:%M:%S")})
    for spec, extra in ALGOS:
        name = spec.split(",")[0]
        if want and name not in want and spec not in want:
            continue
        pts = result["algorithms"][spec] = []
        for topo, workers in sizes(name):
            p = point(spec, extra, topo, workers, args.kill)
            pts.append(p)
            print(f"{spec:26s} {topo:18s} P={p.get('workers')!s:5s} {p['status']:8s} "
                  f"wall {p['command_wall_seconds']:7.1f} s  SimGrid CPU {p.get('simgrid_cpu_seconds')!s:8s} "
                  f"estimate {p.get('cpu_estimate_seconds')!s:8s}", flush=True)
            (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
            # a size past the limit may be followed by a faster one (PS by orbits needs equal
            # shards: k = 16 is, k = 12 is not), so go on unless it was refused, killed, or far over
            if p["status"] != "ok" or p["command_wall_seconds"] > 2 * args.limit:
                break
    now = time.strftime("%Y-%m-%dT%H:%M:%S")
    if "remeasured" in result:
        result["remeasured"][-1]["finished"] = now
    else:
        result["finished"] = now
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
