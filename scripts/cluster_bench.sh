#!/usr/bin/env bash
# Issue #22's benchmark: experiments/cluster_bench.yaml on one server, then split over the two
# "servers" of scripts/two_servers.sh (brought up here and left up). As root, from the repository:
#   bash scripts/cluster_bench.sh [OUT]          (default OUT results/cluster-two-servers)
# then: syncbed keep OUT/one-server/<stamp> docs/results/cluster-two-servers/one-server (and two-servers),
# syncbed docs (docs/CLUSTER.md's table). About 6 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/cluster-two-servers}
bash scripts/two_servers.sh up >/dev/null
.venv/bin/python -m emulation.cli run experiments/cluster_bench.yaml --out "$out/one-server"
.venv/bin/python -m emulation.cli run experiments/cluster_bench.yaml --out "$out/two-servers" \
  --cluster 10.99.0.1,10.99.0.2 --ssh-config /run/syncbed/two-servers/ssh_config
