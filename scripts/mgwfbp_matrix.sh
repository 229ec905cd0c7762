#!/usr/bin/env bash
# MG-WFBP's matrix on Fat-Tree k=4 (docs/papers/mgwfbp.md section 3), one result folder per
# setting, named as in docs/results. As root, from the repository:
#   bash scripts/mgwfbp_matrix.sh [OUT] [FOLDER...]     (default OUT results/mgwfbp-matrix)
# FOLDER is a docs/results name: mgwfbp-fattree8, mgwfbp-fattree8-infocom,
# mgwfbp-fattree8-MODEL, mgwfbp-fattree16-MODEL, mgwfbp-fattree4/MODEL. Without any, all 18
# (about 3 hours on a 2-core machine; the runs go one after the other, each waiting for the
# project's lock, so a CPU-heavy job run under `flock /run/syncbed/lock` goes between two runs). Keep one with
#   syncbed keep OUT/FOLDER/<stamp> docs/results/FOLDER
# Also mgwfbp-bcube42-MODEL. EXTRA holds options added to every run, for example the WFBP runs
# alone at twice the real setting's start-up (docs/results/mgwfbp-wfbp-dilated):
#   EXTRA="--algo wfbp --dilation-x 2" bash scripts/mgwfbp_matrix.sh OUT mgwfbp-fattree8-infocom
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/mgwfbp-matrix}; shift || true
folders=("$@")
if [ ${#folders[@]} -eq 0 ]; then
  folders=(mgwfbp-fattree8-infocom mgwfbp-fattree8 mgwfbp-fattree8-resnet50)
  for m in googlenet resnet50 resnet152 densenet201 inception_v3 vgg16 lstm_ptb; do
    folders+=("mgwfbp-fattree4/$m"); done
  for m in densenet201 inception_v3 resnet152; do folders+=("mgwfbp-fattree8-$m"); done
  for m in googlenet resnet50 densenet201 inception_v3 resnet152; do folders+=("mgwfbp-fattree16-$m"); done
fi
py=.venv/bin/python
for f in "${folders[@]}"; do
  case "$f" in
    mgwfbp-fattree8-infocom) args=(experiments/mgwfbp_fattree8_infocom.yaml) ;;
    mgwfbp-fattree8) args=(experiments/mgwfbp_fattree8.yaml --model googlenet) ;;
    mgwfbp-fattree8-*) args=(experiments/mgwfbp_fattree8.yaml --model "${f#mgwfbp-fattree8-}") ;;
    mgwfbp-fattree16-*) args=(experiments/mgwfbp_fattree16.yaml --model "${f#mgwfbp-fattree16-}") ;;
    mgwfbp-fattree4/*) args=(experiments/mgwfbp_fattree4.yaml --model "${f#mgwfbp-fattree4/}") ;;
    mgwfbp-bcube42-*) args=(experiments/mgwfbp_bcube42.yaml --model "${f#mgwfbp-bcube42-}") ;;
    *) echo "unknown folder '$f': valid are mgwfbp-fattree8[-MODEL|-infocom], mgwfbp-fattree16-MODEL, mgwfbp-fattree4/MODEL, mgwfbp-bcube42-MODEL" >&2; exit 2 ;;
  esac
  # shellcheck disable=SC2206
  args+=(${EXTRA:-})
  echo "== $f: syncbed run ${args[*]}"
  while :; do
    rc=0
    flock /run/syncbed/lock true 2>/dev/null || true   # another run or a CPU-heavy job ends first
    $py -m emulation.cli run "${args[@]}" --out "$out/$f" || rc=$?
    # refused because the lock was taken between the wait and the start: wait again
    [ "$rc" -eq 2 ] && ! flock -n /run/syncbed/lock true 2>/dev/null && continue
    break
  done
  [ "$rc" -eq 2 ] && { echo "!! refused (exit 2): nothing else is started" >&2; exit 2; }
  [ "$rc" -eq 0 ] || echo "!! $f failed (exit $rc; its folder keeps the partial results)"
done
