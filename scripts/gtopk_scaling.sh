#!/usr/bin/env bash
# gTop-k's scaling-efficiency benchmark (issue #8): four models x P = 4, 8, 16 (Fat-Tree k=4)
# and 32 (Fat-Tree k=6), then one table and plot per model. As root, from the repository:
#   bash scripts/gtopk_scaling.sh [OUT] [MODELS...]      (default OUT results/gtopk-scaling)
# About an hour on a 2-core machine; one emulation at a time (the runs go one after the other).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/gtopk-scaling}; shift || true
models=("$@"); [ ${#models[@]} -gt 0 ] || models=(vgg16 alexnet resnet20 resnet50)
py=.venv/bin/python
for m in "${models[@]}"; do
  for p in 4 8 16 32; do
    topo="fattree,k=4"; [ "$p" -gt 16 ] && topo="fattree,k=6"
    echo "== $m P=$p on $topo"
    rc=0
    $py -m emulation.cli run "experiments/gtopk_scaling_$m.yaml" --workers "$p" --topo "$topo" \
        --out "$out/$m/p$p" || rc=$?
    [ "$rc" -eq 2 ] && { echo "!! refused (exit 2): nothing else is started" >&2; exit 2; }
    [ "$rc" -eq 0 ] || echo "!! $m P=$p failed (exit $rc; its folder keeps the partial results)"
  done
  $py -m emulation.cli scaling "$out/$m"/p*/*/ --out "$out/$m" || true
done
