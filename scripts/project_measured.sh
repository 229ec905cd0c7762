#!/usr/bin/env bash
# Simulated against measured for the results folders docs/PROJECTION.md validates (SimGrid, no root):
#   bash scripts/project_measured.sh [FOLDER...]     (FOLDER under docs/results; default: all of them)
# Each becomes docs/results/projection-vs-measured/<name>/ (summary.json, report.md) from
# `syncbed project --measured docs/results/FOLDER` with no round latency: the bandwidth term alone.
# `syncbed docs` fits the per-round latency on half of these folders and checks it on the others
# (emulation/report/doctables/projection.py, in_fit_half); rerun a folder here after rerunning its
# experiment, or `syncbed docs` refuses the stale projection. Seconds to a minute per folder; it
# waits while an emulation holds the machine (/run/syncbed/lock), so it never disturbs one.
set -euo pipefail
cd "$(dirname "$0")/.."
folders=("$@")
[ ${#folders[@]} -gt 0 ] || folders=(default bml-bcube32-vs-ps-fattree bml-bcube42-vs-ps-fattree
  dfs-resnet18-digits dfs-resnet18-digits-held-out dfs-resnet18-digits-codec-logged dfs-resnet18-digits-concurrent-recv
  dfs-resnet18-digits-concurrent-recv-again dfs-resnet18-digits-recv-fixed dfs-resnet18-digits-fit-half
  train-lenet5-digits mgwfbp-fattree8 mgwfbp-fattree8-resnet50
  forest-scenarios/forest-s1-homogeneous forest-scenarios/forest-s2-slow-hosts
  forest-scenarios/forest-s3-oversubscribed forest-scenarios/forest-s4-background
  forest-scenarios/forest-s5-bcube-slow-level
  gtopk-scaling-fattree/p4 gtopk-scaling-fattree/p8 gtopk-scaling-fattree/p16 gtopk-scaling-fattree/p32
  small-messages/bcube32 small-messages/bcube32-check)
busy() { ! { flock -n /run/syncbed/lock true 2>/dev/null || [ ! -e /run/syncbed/lock ]; }; }
for f in "${folders[@]}"; do
  name=${f#forest-scenarios/}; name=${name//\//-}
  while busy; do echo "an emulation holds /run/syncbed/lock: waiting 30 s"; sleep 30; done
  echo "== $f -> docs/results/projection-vs-measured/$name"
  .venv/bin/python -m emulation.cli project --measured "docs/results/$f" \
      --out "docs/results/projection-vs-measured/$name"
done
