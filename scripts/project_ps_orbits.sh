#!/usr/bin/env bash
# PS at 1024 and 3456 workers by orbits (issue #23), timed as whole commands:
#   flock /run/syncbed/lock bash scripts/project_ps_orbits.sh     (the machine otherwise idle)
# Each projection becomes docs/results/projection-ps-fattree<k>-<P>/ (summary.json, report.md)
# plus command.json: the command and what `/usr/bin/time -v` measured of it (elapsed wall,
# user and system CPU, peak resident set), which the run-time table of docs/PROJECTION.md reads.
# k = 24 splits 4 MiB into unequal shards (1408 owners of 304 elements, 2048 of 303): simulated
# padded to 304 (the same pairs and routes), which `orbits.padded_exact` proves changes no time
# here (the unequal plan's busiest-NIC bound equals the padded flows' max-min completion bound).
# Placements on fewer hosts (ordered: whole pods) go by the orbits of the symmetries that keep
# them: 512 of k=16's 1024 hosts (listed flow by flow, projection-ps-fattree16-512/, 887 s on
# 2026-11-23) and 1440 of k=24's 3456. PS on BCube(8,3), every server a rank, by the orbits of
# each level's digit permutations, and the same with every flow routed and reduced by colour
# refinement (--reduce on), the comparison. With NAMEs, only those folders:
#   flock /run/syncbed/lock bash scripts/project_ps_orbits.sh projection-ps-fattree16-512-orbits
set -euo pipefail
cd "$(dirname "$0")/.."
only=" $* "
run() {  # NAME then the project options
  local name=$1; shift
  [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || return 0
  local out="docs/results/$name" tmp
  tmp=$(mktemp -d)
  /usr/bin/time -v -o "$tmp/time.txt" .venv/bin/python -m emulation.cli project "$@" --out "$tmp/out"
  rm -rf "$out" && mkdir -p "$out" && cp "$tmp/out/summary.json" "$tmp/out/report.md" "$out/"
  .venv/bin/python - "$tmp/time.txt" "$out/command.json" "$*" "${CONDITIONS:-the machine otherwise idle (flock /run/syncbed/lock)}" <<'PY'
import json, sys
keys = {"Elapsed (wall clock) time (h:mm:ss or m:ss)": "wall_seconds", "User time (seconds)": "user_seconds",
        "System time (seconds)": "system_seconds", "Maximum resident set size (kbytes)": "max_rss_kbytes"}
out = {}
for line in open(sys.argv[1]):
    k, _, v = line.strip().rpartition(": ")
    if k in keys:
        if ":" in v:  # m:ss.ss or h:mm:ss
            secs = 0.0
            for part in v.split(":"):
                secs = secs * 60 + float(part)
            v = secs
        out[keys[k]] = float(v)
json.dump({"command": "syncbed project " + sys.argv[3], "time_v": out, "conditions": sys.argv[4]},
          open(sys.argv[2], "w"), indent=1)
PY
  rm -rf "$tmp"
  echo "== $name: $(cat "$out/command.json" | tr -d '\n')"
}
run projection-ps-fattree16-1024 --topo fattree,k=16 --workers 1024 --algo ps --mb 4 --bw 1000 --ecmp two-level
run projection-ps-fattree24-3456 --topo fattree,k=24 --algo ps --mb 4 --bw 1000 --ecmp two-level
run projection-ps-fattree16-512-orbits --topo fattree,k=16 --workers 512 --algo ps --mb 4 --bw 1000 --ecmp two-level
run projection-ps-fattree24-1440 --topo fattree,k=24 --workers 1440 --algo ps --mb 4 --bw 1000 --ecmp two-level
run projection-ps-bcube83-orbits --topo bcube,n=8,k=3 --algo ps --mb 4 --bw 1000
run projection-ps-bcube83-listed --topo bcube,n=8,k=3 --algo ps --mb 4 --bw 1000 --reduce on
