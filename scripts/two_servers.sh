#!/usr/bin/env bash
# Two "servers" on one machine, for testing syncbed's cluster mode (issue #22) where there is
# only one machine. As root:
#   bash scripts/two_servers.sh up       build it (idempotent); prints the cluster line to use
#   bash scripts/two_servers.sh down     remove everything it made
#   bash scripts/two_servers.sh status   exit 0 if it is up
#
# Server 1 is this machine as it is (its root namespaces, its Open vSwitch, the one running
# syncbed and Ryu). Server 2 is a network namespace (sbsrv2) with a private mount namespace held
# by one process, in which it runs what a second machine would: its own ovsdb-server and
# ovs-vswitchd (userspace datapath, one handler and one revalidator thread; their run, db and log
# directories are tmpfs mounts seen only in that mount namespace) and an sshd for root, on the
# underlay address only. The underlay is one veth pair, 10.99.0.1 (server 1) <-> 10.99.0.2
# (server 2), MTU 9100: room for 9000-byte emulated frames plus VXLAN's 50 bytes. This is the
# layout Open vSwitch's own system tests use for tunnels (docs/CLUSTER.md).
#
# Everything lives under /run/syncbed/two-servers (keys, sshd and ssh configs, the holder's pid):
# nothing in /root/.ssh or /etc is changed. syncbed reaches server 2 with
#   --cluster 10.99.0.1,10.99.0.2 --ssh-config /run/syncbed/two-servers/ssh_config
set -euo pipefail
NS=sbsrv2
DIR=/run/syncbed/two-servers
UL1=sbul0 UL2=sbul1 IP1=10.99.0.1 IP2=10.99.0.2 MTU=9100
OVS_DIRS="/var/run/openvswitch /etc/openvswitch /var/log/openvswitch"
log() { printf '[two-servers] %s\n' "$*"; }
[ "$(id -u)" -eq 0 ] || { echo "two_servers.sh: must run as root" >&2; exit 2; }

holder() { cat "$DIR/holder.pid" 2>/dev/null || true; }
alive() { local p; p=$(holder); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
in2() { nsenter -t "$(holder)" -m -n -- "$@"; }

up() {
  command -v sshd >/dev/null || [ -x /usr/sbin/sshd ] \
    || { echo "two_servers.sh: sshd is missing; run bash scripts/setup.sh" >&2; exit 2; }
  mkdir -p "$DIR" && chmod 700 "$DIR"
  ip netns list | grep -qw "$NS" || ip netns add "$NS"
  if ! ip link show "$UL1" >/dev/null 2>&1; then
    ip link add "$UL1" mtu $MTU type veth peer name "$UL2" mtu $MTU netns "$NS"
    ip addr add $IP1/24 dev "$UL1"
    ip link set "$UL1" up
    ip netns exec "$NS" ip addr add $IP2/24 dev "$UL2"
    ip netns exec "$NS" ip link set "$UL2" up
    ip netns exec "$NS" ip link set lo up
  fi
  if ! alive; then
    # ip netns exec gives its command a mount namespace with the netns's /sys; unshare makes
    # it private, and sleep holds it for nsenter.
    ip netns exec "$NS" unshare --mount --propagation private sleep infinity </dev/null >/dev/null 2>&1 &
    echo $! > "$DIR/holder.pid"
    # the pid above is ip's: wait for the sleep it becomes (ip execs, unshare execs)
    for _ in $(seq 50); do [ "$(readlink /proc/"$(holder)"/exe 2>/dev/null)" = "$(readlink -f "$(command -v sleep)")" ] && break; sleep 0.1; done
    for d in $OVS_DIRS; do in2 mkdir -p "$d"; in2 mount -t tmpfs -o mode=755 tmpfs "$d"; done
    in2 mkdir -p /run/sshd
  fi
  if ! in2 ovs-vsctl --timeout=3 show >/dev/null 2>&1; then
    log "starting server 2's Open vSwitch"
    in2 /usr/share/openvswitch/scripts/ovs-ctl start --system-id=random 2>&1 | grep -v ulimit || true
    in2 ovs-vsctl --timeout=10 set Open_vSwitch . other_config:n-handler-threads=1 \
      other_config:n-revalidator-threads=1
  fi
  [ -f "$DIR/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C syncbed-two-servers -f "$DIR/id_ed25519"
  [ -f "$DIR/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$DIR/host_ed25519"
  cp "$DIR/id_ed25519.pub" "$DIR/authorized_keys"
  cat > "$DIR/sshd_config" <<EOF
ListenAddress $IP2
HostKey $DIR/host_ed25519
PidFile $DIR/sshd.pid
PermitRootLogin prohibit-password
AuthorizedKeysFile $DIR/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
StrictModes no
MaxSessions 200
MaxStartups 200
AllowTcpForwarding yes
PermitTunnel no
AcceptEnv LANG LC_*
Subsystem sftp internal-sftp
EOF
  cat > "$DIR/ssh_config" <<EOF
Host $IP1 $IP2
  User root
  IdentityFile $DIR/id_ed25519
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  ControlMaster auto
  ControlPath $DIR/cm-%r@%h:%p
  ControlPersist 600
EOF
  if ! { [ -f "$DIR/sshd.pid" ] && kill -0 "$(cat "$DIR/sshd.pid")" 2>/dev/null; }; then
    in2 "$(command -v sshd || echo /usr/sbin/sshd)" -f "$DIR/sshd_config"
  fi
  for _ in $(seq 50); do
    ssh -F "$DIR/ssh_config" -o BatchMode=yes $IP2 true 2>/dev/null && break; sleep 0.2
  done
  ssh -F "$DIR/ssh_config" -o BatchMode=yes $IP2 true \
    || { echo "two_servers.sh: cannot ssh to server 2 ($IP2)" >&2; exit 1; }
  log "up: server 1 = this machine ($IP1), server 2 = netns $NS ($IP2, sshd, its own Open vSwitch)"
  echo "--cluster $IP1,$IP2 --ssh-config $DIR/ssh_config"
}

down() {
  if alive; then
    # server 2's switches, then its daemons; its host namespaces die with their shells
    in2 sh -c 'for b in $(ovs-vsctl --timeout=5 list-br 2>/dev/null); do ovs-vsctl --timeout=5 del-br $b; done' || true
    in2 /usr/share/openvswitch/scripts/ovs-ctl stop >/dev/null 2>&1 || true
  fi
  [ -f "$DIR/sshd.pid" ] && kill "$(cat "$DIR/sshd.pid")" 2>/dev/null || true
  for f in "$DIR"/cm-*; do [ -S "$f" ] && ssh -F "$DIR/ssh_config" -O exit -o ControlPath="$f" x 2>/dev/null || true; done
  alive && kill "$(holder)" 2>/dev/null || true
  ip link del "$UL1" 2>/dev/null || true
  ip netns list | grep -qw "$NS" && ip netns del "$NS" || true
  rm -rf "$DIR"
  log "down"
}

status() {
  alive && in2 ovs-vsctl --timeout=3 show >/dev/null 2>&1 \
    && ssh -F "$DIR/ssh_config" -o BatchMode=yes -o ConnectTimeout=3 $IP2 true 2>/dev/null
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status && log "up" || { log "not up"; exit 1; } ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
