#!/usr/bin/env bash
# gTop-k's scaling-efficiency benchmark (issue #8): four models x P = 4, 8, 16 (Fat-Tree k=4)
# and 32 (Fat-Tree k=6), then one table and plot per model. As root, from the repository:
#   bash scripts/gtopk_scaling.sh [OUT] [MODELS...]      (default OUT results/gtopk-scaling)
#   P="4 8 16" bash scripts/gtopk_scaling.sh ...          (only these worker counts)
# About an hour on a 2-core machine; one emulation at a time (the runs go one after the other).
# Time dilation: the files' 20 Mbit/s links (dilation 6.25) for P <= 16. At P = 32, 32 ranks
# share 2 cores and their top-k selection overruns the paper's compressor cost charged at 6.25
# (docs/papers/gtopk.md section 6), so P = 32 runs on slower links, which dilate the charge with
# them: 5 Mbit/s (ResNet-50: 4). Efficiency is a ratio of emulated times, so it does not change.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/gtopk-scaling}; shift || true
models=("$@"); [ ${#models[@]} -gt 0 ] || models=(vgg16 alexnet resnet20 resnet50)
counts=(${P:-4 8 16 32})
py=.venv/bin/python
for m in "${models[@]}"; do
  for p in "${counts[@]}"; do
    topo="fattree,k=4"; extra=()
    if [ "$p" -gt 16 ]; then
      topo="fattree,k=6"; extra=(--bw 5); [ "$m" = resnet50 ] && extra=(--bw 4)
    fi
    echo "== $m P=$p on $topo ${extra[*]}"
    rc=0
    $py -m emulation.cli run "experiments/gtopk_scaling_$m.yaml" --workers "$p" --topo "$topo" \
        "${extra[@]}" --out "$out/$m/p$p" || rc=$?
    [ "$rc" -eq 2 ] && { echo "!! refused (exit 2): nothing else is started" >&2; exit 2; }
    [ "$rc" -eq 0 ] || echo "!! $m P=$p failed (exit $rc; its folder keeps the partial results)"
  done
  $py -m emulation.cli scaling "$out/$m"/p*/*/ --out "$out/$m" || true
done
