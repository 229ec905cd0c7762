"""CPU per Gloo point-to-point message on this machine (issue #21: what a forest chunk costs).

    .venv/bin/python scripts/gloo_message_cost.py [--messages 4000] [--out docs/results/gloo-message-cost/result.json]

Two ranks on localhost (`lo`, no emulation: run it when no emulation measures), one thread
each, through `Comm` as every executor sends: rank 0 starts M sends of E float32 elements and
waits for them; rank 1 receives them, either all posted ahead ("ahead", as the forest posts its
down chunks) or one at a time ("one by one"). For each size and mode: CPU seconds (the
process's user + system, all its threads, Gloo's included) and wall seconds per message on
each side. Prints and writes JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from tests.parallel.spawn import spawn_ranks  # noqa: E402
from workloads.comm import Comm  # noqa: E402

SIZES = (1024, 16384)  # elements: the forest's smallest and largest default chunks (docs/forest.md)
MODES = ("ahead", "one by one")


def _child(rank, store, messages, elements, mode, out):
    try:
        torch.set_num_threads(1)
        comm = Comm(rank, 2, store, ["lo"], timeout_s=60)
        buf = torch.zeros(elements)
        comm.barrier()
        c0, w0 = time.process_time(), time.perf_counter()
        if rank == 0:
            for work in [comm.send(buf, 1, 0, j) for j in range(messages)]:
                work.wait()
        elif mode == "ahead":
            bufs = [torch.empty(elements) for _ in range(messages)]
            for work in [comm.recv(bufs[j], 0, 0, j) for j in range(messages)]:
                work.wait()
        else:
            for j in range(messages):
                comm.recv(buf, 0, 0, j).wait()
        c1, w1 = time.process_time(), time.perf_counter()
        comm.barrier()
        out.put(("ok", rank, (c1 - c0, w1 - w0)))
    except BaseException:
        import traceback
        out.put(("error", rank, traceback.format_exc()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=4000)
    ap.add_argument("--out", default=str(ROOT / "docs/results/gloo-message-cost/result.json"))
    args = ap.parse_args(argv)
    if args.messages < 1:
        print("--messages must be an integer >= 1", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for elements in SIZES:
            for mode in MODES:
                store = os.path.join(tmp, f"store-{elements}-{mode.replace(' ', '-')}")
                r = spawn_ranks(2, _child, lambda k: (k, store, args.messages, elements, mode), 300)
                row = {"elements": elements, "bytes": 4 * elements, "receive": mode, "messages": args.messages,
                       "sender_cpu_us": round(r[0][0] / args.messages * 1e6, 1),
                       "receiver_cpu_us": round(r[1][0] / args.messages * 1e6, 1),
                       "wall_us": round(max(r[0][1], r[1][1]) / args.messages * 1e6, 1)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    result = {"what": "CPU per Gloo point-to-point message, two ranks on localhost, one thread each",
              "command": "scripts/gloo_message_cost.py --messages %d" % args.messages,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__},
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
