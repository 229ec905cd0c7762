#!/usr/bin/env bash
# Simulated against measured for the results folders docs/PROJECTION.md validates (SimGrid, no root):
#   bash scripts/project_measured.sh [FOLDER...]     (FOLDER under docs/results; default: all of them)
# Each becomes docs/results/projection-vs-measured/<name>/ (summary.json, report.md) from
# `syncbed project --measured docs/results/FOLDER` with no round latency: the bandwidth term alone.
# `syncbed docs` fits the per-round latency on half of these folders and checks it on the others
# (emulation/report/doctables/projection.py, in_fit_half); rerun a folder here after rerunning its
# experiment, or `syncbed docs` refuses the stale projection. Seconds to a minute per folder; it
# waits while an emulation holds the machine (/run/syncbed/lock), so it never disturbs one.
# With FAN_IN in the environment (what `scripts/fan_in.py fit` prints, `fanin.arguments`:
# every algorithm's e, then each executor's own as ALGO=E, 4 decimals as the docs
# print them) each goes instead to docs/results/projection-fan-in/<name>/ with a `--fan-in` each:
#   FAN_IN='0.6962 dfs=0.9000 forest=1.0000' bash scripts/project_measured.sh
# With OVERSUB=E as well (what `fan_in.py fit` prints when it fits one), each also gets
# `--oversubscribed E`: that efficiency on oversubscribed switch links (fanin.oversubscribed_links).
# With CC=cubic the default folders are the CUBIC validation's (projection.CUBIC_FOLDERS) and the
# fan-in projections go to docs/results/projection-fan-in-cubic/ (what `fan_in.py fit --cc cubic` prints).
set -euo pipefail
cd "$(dirname "$0")/.."
folders=("$@")
# default: every folder docs/PROJECTION.md validates (projection.PROJECTED), each with its
# projection's name (projection.projected_name), so the list is kept in one place
if [ ${#folders[@]} -eq 0 ]; then
  mapfile -t folders < <(.venv/bin/python -c 'import sys; from emulation.report.doctables import projection as p
print(*(p.CUBIC_FOLDERS if sys.argv[1] == "cubic" else p.PROJECTED), sep="\n")' "${CC:-bbr}")
fi
fan_in_dir=projection-fan-in
[ "${CC:-bbr}" = cubic ] && fan_in_dir=projection-fan-in-cubic
busy() { ! { flock -n /run/syncbed/lock true 2>/dev/null || [ ! -e /run/syncbed/lock ]; }; }
for f in "${folders[@]}"; do
  name=$(.venv/bin/python -c 'import sys; from emulation.report.doctables.projection import projected_name
print(projected_name(sys.argv[1]))' "$f")
  while busy; do echo "an emulation holds /run/syncbed/lock: waiting 30 s"; sleep 30; done
  if [ -n "${FAN_IN:-}" ]; then
    echo "== $f -> docs/results/$fan_in_dir/$name (--fan-in $FAN_IN${OVERSUB:+ --oversubscribed $OVERSUB})"
    read -ra es <<< "$FAN_IN"
    .venv/bin/python -m emulation.cli project --measured "docs/results/$f" "${es[@]/#/--fan-in=}" \
        ${OVERSUB:+--oversubscribed "$OVERSUB"} --out "docs/results/$fan_in_dir/$name"
  else
    echo "== $f -> docs/results/projection-vs-measured/$name"
    .venv/bin/python -m emulation.cli project --measured "docs/results/$f" \
        --out "docs/results/projection-vs-measured/$name"
  fi
done
