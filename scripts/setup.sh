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
      procps psmisc openssh-server openssh-client sudo python3-venv python3-dev python3-networkx python3-simgrid gcc make vagrant"
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

# 2. Socket buffers, before ovs-vswitchd opens its one packet socket for sending on
#    every port: packets waiting in any egress HTB queue are charged to that socket's
#    send buffer, and with the default 208 KiB (~20 jumbo frames) OVS silently drops
#    what does not fit under incast (measured: 8% of segments retransmitted for PS). 16 MiB
#    was not enough for PS at 24 and 32 workers on Fat-Tree k=6 (more than that held at once at 32;
#    docs/FIDELITY.md #1, #23): 64 MiB (network.MIN_OVS_SNDBUF; syncbed run refuses less).
cat > /etc/sysctl.d/60-syncbed.conf <<'SYSCTL'
net.core.wmem_default = 67108864
net.core.wmem_max = 67108864
net.core.rmem_default = 67108864
net.core.rmem_max = 67108864
SYSCTL
# The emulated hosts pin their TCP congestion control (config tcp_cc, default cubic); a network
# namespace may only pick one this machine allows. Allow every one the kernel has (the machine's
# own default is left as it is).
modprobe tcp_cubic 2>/dev/null || true  # built in on Debian and Ubuntu kernels
echo "net.ipv4.tcp_allowed_congestion_control = $(cat /proc/sys/net/ipv4/tcp_available_congestion_control)" \
  >> /etc/sysctl.d/60-syncbed.conf
sysctl -q -p /etc/sysctl.d/60-syncbed.conf \
  || log "warning: could not apply /etc/sysctl.d/60-syncbed.conf; syncbed run will refuse to start"

# 3. Open vSwitch: no systemd here, so start it with ovs-ctl when it is not running.
#    A fresh machine has none running; one started before the sysctl above is
#    restarted (only when it has no bridges) so its packet socket gets 64 MiB.
if ! ovs-vsctl --timeout=3 show >/dev/null 2>&1; then
  log "starting Open vSwitch"
  /usr/share/openvswitch/scripts/ovs-ctl start --system-id=random 2>&1 | grep -v ulimit || true
  ovs-vsctl --timeout=10 show >/dev/null
else
  sndbuf=$(ss -0 -m -p -n 2>/dev/null | grep ovs-vswitchd | grep -o 'tb[0-9]*' | head -1 | tr -d tb || true)
  if [ -n "$sndbuf" ] && [ "$sndbuf" -lt 67108864 ] && [ -z "$(ovs-vsctl --timeout=3 list-br 2>/dev/null || true)" ]; then
    log "restarting Open vSwitch so its packet socket gets the larger send buffer"
    /usr/share/openvswitch/scripts/ovs-ctl restart --system-id=random 2>&1 | grep -v ulimit || true
  else
    log "Open vSwitch running"
  fi
fi

# 4. The venv, from Debian's python3 so that Mininet (a Debian package) imports.
if [ ! -x "$VENV/bin/python" ]; then
  log "creating venv $VENV"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
py="$VENV/bin/python"
stamp="$VENV/.syncbed-deps"
want=$(cat "$here/requirements.txt" "$here/setup.py" | sha1sum | cut -c1-12)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "installing Python packages into $VENV (torch CPU build, Ryu with pins)"
  # Ryu 4.34 does not build with a current setuptools (docs/ENVIRONMENT.md), and its pbr
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
