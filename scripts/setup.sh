#!/usr/bin/env bash
# Idempotent installer for syncbed: Debian packages, Open vSwitch running, the venv.
# Safe to run again; each step checks before it acts. Needs root (apt, ovs-ctl).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
VENV=${SYNCBED_VENV:-$here/.venv}
log() { printf '[setup] %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
  echo "setup.sh: must run as root (installs Debian packages and starts Open vSwitch); try: sudo $0" >&2
  exit 2
fi

# 1. Debian packages. mininet brings mn/mnexec and the Python module for /usr/bin/python3.
pkgs="mininet openvswitch-switch openvswitch-common tcpdump iperf3 ethtool iproute2 iputils-ping
      procps psmisc python3-venv python3-dev gcc make vagrant"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  log "installing Debian packages:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # vagrant is only needed for the Vagrantfile check; do not fail the install without it.
  apt-get install -y -qq --no-install-recommends $missing || {
    missing=${missing/ vagrant/}
    apt-get install -y -qq --no-install-recommends $missing
  }
else
  log "Debian packages present"
fi

# 2. Open vSwitch: no systemd here, so start it with ovs-ctl when it is not running.
if ! ovs-vsctl --timeout=3 show >/dev/null 2>&1; then
  log "starting Open vSwitch"
  /usr/share/openvswitch/scripts/ovs-ctl start --system-id=random 2>&1 | grep -v ulimit || true
  ovs-vsctl --timeout=10 show >/dev/null
else
  log "Open vSwitch running"
fi

# 3. The venv, from Debian's python3 so that Mininet (a Debian package) imports.
if [ ! -x "$VENV/bin/python" ]; then
  log "creating venv $VENV"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
py="$VENV/bin/python"
stamp="$VENV/.syncbed-deps"
want=$(cat "$here/requirements.txt" "$here/setup.py" | sha1sum | cut -c1-12)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "installing Python packages into $VENV (torch CPU build, Ryu with pins)"
  # Ryu 4.34 does not build with a current setuptools (ENVIRONMENT.md), and its pbr
  # build reports version 0.0.0 under pip 26 without pbr preinstalled: keep the
  # venv's own pip and install pbr first.
  "$py" -m pip install -q "setuptools<58" wheel pbr
  "$py" -m pip install -q --no-build-isolation ryu==4.34
  "$py" -m pip install -q -r "$here/requirements.txt"
  "$py" -m pip install -q --no-build-isolation --no-deps -e "$here"
  echo "$want" > "$stamp"
else
  log "Python packages present"
fi
"$py" -c "import mininet.net, ryu, torch, networkx, scapy, yaml, matplotlib" \
  || { echo "setup.sh: venv $VENV is missing a package; delete it and run again" >&2; exit 1; }
log "ready: $VENV"
