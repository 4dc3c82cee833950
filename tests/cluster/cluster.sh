#!/bin/bash
# An emulated cluster on one machine: N hosts, each a network namespace with
# its own hostname (UTS namespace), boot id and /etc/hosts (mount namespace:
# UCX tells machines apart by boot_id), joined by tests/cluster/relay.c, a
# userspace switch with a link per pair of hosts (delay, rate, loss, cut).
# Root only; see tests/cluster/README.md.
#
#   cluster.sh can                         exit 0 if clusters can be made here, else 77
#   cluster.sh up NAME N [DELAY_US RATE_MBIT LOSS_PPM]   (TS_CLUSTER_MTU: the NICs' MTU, default 9000)
#   cluster.sh down NAME                   kill every process on every host, remove it
#   cluster.sh exec NAME HOST CMD...       run CMD on HOST (h1..hN), in the current directory
#   cluster.sh mpirun NAME PER_HOST ARGS...  mpirun inside h1, PER_HOST slots on each host
#   cluster.sh link NAME A B DELAY_US RATE_MBIT [LOSS_PPM [QUEUE_KB]]  (A/B: hN, or 0 = all)
#   cluster.sh cut NAME [A B]  /  heal NAME [A B]   the whole network, or the pair A-B
#   cluster.sh pids NAME                   the PIDs left on each host ("hN: PID...")
#   cluster.sh hosts NAME / subnet NAME / addr NAME HOST
#
# NAME is a unique prefix (letters, digits, '-'; at most 10): the namespaces
# are NAME-h1..NAME-hN and the state lives in /run/tessera-cluster/NAME.
# Addresses come from 10.77.X.0/24 with X unique among this machine's
# clusters; nothing is attached to the root namespace and there is no route out.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self=$here/$(basename "${BASH_SOURCE[0]}")
state=/run/tessera-cluster
DEV=eth0

die() { echo "cluster.sh: $*" >&2; exit 1; }

check_name() {
  [[ $1 =~ ^[A-Za-z][A-Za-z0-9-]{0,9}$ ]] || die "bad cluster name '$1' (letters, digits, '-', at most 10)"
}

# host index from hN (or 0)
host_index() {
  case $1 in
  0) echo 0 ;;
  h[0-9]*) echo "${1#h}" ;;
  *) die "bad host '$1' (want h1..hN or 0)" ;;
  esac
}

can() {
  [ "$(id -u)" = 0 ] || { echo "skip: not root"; exit 77; }
  command -v ip >/dev/null && command -v nsenter >/dev/null && command -v unshare >/dev/null ||
    { echo "skip: no ip/nsenter/unshare (iproute2, util-linux)"; exit 77; }
  [ -c /dev/net/tun ] || { echo "skip: no /dev/net/tun"; exit 77; }
  local probe=tscan$$
  ip netns add $probe 2>/dev/null || { echo "skip: cannot create network namespaces"; exit 77; }
  local ok=1
  ip netns exec $probe ip tuntap add dev t0 mode tap 2>/dev/null || ok=0
  ip netns del $probe
  [ $ok = 1 ] || { echo "skip: cannot create TAP devices"; exit 77; }
  exit 0
}

relay_bin() {
  local d=$1
  if [ -n "${TS_CLUSTER_RELAY:-}" ] && [ -x "$TS_CLUSTER_RELAY" ]; then
    echo "$TS_CLUSTER_RELAY"
  else
    cc -O2 -std=c11 -o "$d/relay" "$here/relay.c" || die "cannot build the relay"
    echo "$d/relay"
  fi
}

up() {
  local name=$1 n=$2 delay=${3:-0} rate=${4:-0} loss=${5:-0}
  check_name "$name"
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 32 ] || die "bad host count '$n' (1..32)"
  local mtu=${TS_CLUSTER_MTU:-9000}
  [[ $mtu =~ ^[0-9]+$ ]] && [ "$mtu" -ge 576 ] && [ "$mtu" -le 9000 ] || die "bad TS_CLUSTER_MTU '$mtu' (576..9000)"
  local d=$state/$name
  mkdir -p $state
  exec 9>$state/.lock
  flock 9
  [ ! -e "$d" ] || die "cluster '$name' exists ($d)"
  for i in $(seq 1 "$n"); do
    [ ! -e /run/netns/$name-h$i ] || die "namespace $name-h$i exists"
  done
  local x
  for x in $(seq 1 254); do
    grep -qx "$x" $state/*/subnet 2>/dev/null || break
  done
  mkdir "$d"
  echo "$x" >"$d/subnet"
  flock -u 9
  echo "$n" >"$d/hosts_n"
  # Our own mount on the state folder, private, so that the persistent
  # mount/UTS namespace files can be bind-mounted in it.
  mount --bind "$d" "$d"
  mount --make-private "$d"
  {
    echo "127.0.0.1 localhost"
    for i in $(seq 1 "$n"); do echo "10.77.$x.$i h$i"; done
  } >"$d/hosts"
  for i in $(seq 1 "$n"); do
    local ns=$name-h$i
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip netns exec "$ns" ip tuntap add dev $DEV mode tap
    # A long device queue: the relay shares 2 busy cores, and a full TAP
    # queue drops frames before the link's own queue (4 MiB) sees them.
    # Jumbo frames (TS_CLUSTER_MTU, default 9000) as datacenter links have:
    # the relay's cost is per frame, and at MTU 1500 its copies on 2 shared
    # cores, not the link's rate, capped a 1 Gbit/s link at 70-100 MB/s.
    ip -n "$ns" link set $DEV address "02:77:00:00:00:$(printf %02x "$i")" mtu "$mtu" txqueuelen 20000
    ip -n "$ns" addr add "10.77.$x.$i/24" dev $DEV
    ip -n "$ns" link set $DEV up
    cat /proc/sys/kernel/random/uuid >"$d/h$i.boot_id"
    touch "$d/h$i.mnt" "$d/h$i.uts"
    nsenter --net=/run/netns/"$ns" unshare --mount="$d/h$i.mnt" --uts="$d/h$i.uts" --propagation private \
      sh -c "hostname h$i && mount --bind '$d/h$i.boot_id' /proc/sys/kernel/random/boot_id &&
             mount --bind '$d/hosts' /etc/hosts && mount -t sysfs sysfs /sys"
  done
  # The relay: a switch between the TAP devices, in the root namespace.
  local relay
  relay=$(relay_bin "$d")
  mkfifo "$d/control"
  local paths=()
  for i in $(seq 1 "$n"); do paths+=(/run/netns/"$name-h$i"); done
  # Niced up a little: it stands in for NIC hardware, which takes no CPU from the ranks.
  nohup nice -n -5 "$relay" "$d/control" $DEV "${paths[@]}" >"$d/relay.log" 2>&1 </dev/null &
  echo $! >"$d/relay.pid"
  # The relay has attached when every TAP device has a carrier.
  for _ in $(seq 1 100); do
    local all=1
    for i in $(seq 1 "$n"); do
      ip -n "$name-h$i" link show $DEV | grep -q NO-CARRIER && all=0
    done
    [ $all = 1 ] && break
    kill -0 "$(cat "$d/relay.pid")" 2>/dev/null || { cat "$d/relay.log" >&2; down "$name"; die "the relay exited"; }
    sleep 0.05
  done
  link "$name" 0 0 "$delay" "$rate" "$loss"
  # Mpirun's launch agent: what ssh would be, into the host's namespaces.
  # It runs inside h1, whose mount namespace predates the other hosts'
  # namespace files: it steps back into the root mount namespace (the
  # relay's) before entering the target host.
  cat >"$d/agent" <<EOF
#!/bin/sh
host=\$1
shift
exec nsenter --mount=/proc/$(cat "$d/relay.pid")/ns/mnt -- "$self" exec "$name" "\$host" sh -c "\$*"
EOF
  chmod +x "$d/agent"
  echo "cluster $name: $n hosts h1..h$n on 10.77.$x.0/24, link delay ${delay} us rate ${rate} Mbit/s loss ${loss} ppm"
}

down() {
  local name=$1
  check_name "$name"
  local d=$state/$name n=0
  [ -f "$d/hosts_n" ] && n=$(cat "$d/hosts_n")
  # Every process in every host's namespace, by PID; stopped ones too
  # (SIGKILL needs no scheduling). Then the namespaces themselves.
  local ns
  for _ in $(seq 1 50); do
    local left=0
    for ns in $(ip netns list | awk '{print $1}' | grep -E "^$name-h[0-9]+$" || true); do
      local p
      p=$(ip netns pids "$ns" 2>/dev/null || true)
      if [ -n "$p" ]; then
        left=1
        kill -KILL $p 2>/dev/null || true
      fi
    done
    [ $left = 0 ] && break
    sleep 0.1
  done
  if [ -f "$d/relay.pid" ]; then
    kill -KILL "$(cat "$d/relay.pid")" 2>/dev/null || true
  fi
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^$name-h[0-9]+$" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  if [ -d "$d" ]; then
    for f in "$d"/h*.mnt "$d"/h*.uts; do
      [ -e "$f" ] && umount "$f" 2>/dev/null || true
    done
    umount "$d" 2>/dev/null || true
    rm -rf "$d"
  fi
}

hostns() {
  local name=$1 host=$2 d=$state/$1
  local i
  i=$(host_index "$host")
  [ -f "$d/hosts_n" ] && [ "$i" -ge 1 ] && [ "$i" -le "$(cat "$d/hosts_n")" ] || die "no host '$host' in cluster '$name'"
}

run_on() {
  local name=$1 host=$2
  shift 2
  hostns "$name" "$host"
  local d=$state/$name
  exec nsenter --net=/run/netns/"$name-$host" --mount="$d/$host.mnt" --uts="$d/$host.uts" --wd="$PWD" -- "$@"
}

mpirun_on() {
  local name=$1 per=$2
  shift 2
  local d=$state/$name n x
  n=$(cat "$d/hosts_n")
  x=$(cat "$d/subnet")
  # Only the hosts -np fills: Open MPI starts a daemon on every host of the
  # hostfile, and an idle one outlives the job by a moment.
  local prev= a
  for a in "$@"; do
    if [ "$prev" = -np ] || [ "$prev" = -n ]; then
      [ $(((a + per - 1) / per)) -lt "$n" ] && n=$(((a + per - 1) / per))
      break
    fi
    prev=$a
  done
  local hf
  hf=$(mktemp "$d/hostfile.XXXXXX")
  for i in $(seq 1 "$n"); do echo "h$i slots=$per"; done >"$hf"
  local root=()
  [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
  run_on "$name" h1 mpirun "${root[@]}" --hostfile "$hf" --bind-to none \
    --mca plm_rsh_agent "$d/agent" \
    --mca oob_tcp_if_include "10.77.$x.0/24" --mca btl_tcp_if_include "10.77.$x.0/24" \
    --mca mpi_yield_when_idle 1 "$@"
}

ctl() {
  local name=$1
  shift
  local d=$state/$name
  [ -p "$d/control" ] || die "no cluster '$name'"
  echo "$*" >"$d/control"
}

link() {
  local name=$1 a b
  a=$(host_index "$2")
  b=$(host_index "$3")
  ctl "$name" set "$a" "$b" "$4" "$5" "${6:-0}" "${7:-4096}"
}

pids() {
  local name=$1 ns
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^$name-h[0-9]+$" || true); do
    echo "${ns#"$name"-}: $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
  done
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
can) can ;;
up) [ $# -ge 2 ] || die "usage: up NAME N [DELAY_US RATE_MBIT LOSS_PPM]"; up "$@" ;;
down) [ $# = 1 ] || die "usage: down NAME"; down "$1" ;;
exec) [ $# -ge 3 ] || die "usage: exec NAME HOST CMD..."; run_on "$@" ;;
mpirun) [ $# -ge 2 ] || die "usage: mpirun NAME PER_HOST ARGS..."; mpirun_on "$@" ;;
link) [ $# -ge 5 ] || die "usage: link NAME A B DELAY_US RATE_MBIT [LOSS_PPM [QUEUE_KB]]"; link "$@" ;;
cut | heal)
  [ $# = 1 ] || [ $# = 3 ] || die "usage: $cmd NAME [A B]"
  ctl "$1" "$cmd" "$(host_index "${2:-0}")" "$(host_index "${3:-0}")"
  ;;
pids) pids "$1" ;;
hosts) cat "$state/$1/hosts_n" ;;
subnet) echo "10.77.$(cat "$state/$1/subnet").0/24" ;;
addr) echo "10.77.$(cat "$state/$1/subnet").$(host_index "$2")" ;;
*) sed -n '2,20p' "$self" >&2; exit 2 ;;
esac
