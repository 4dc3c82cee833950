#!/bin/bash
# One `tessera run` job across the emulated cluster's hosts, with --check:
# it must exit 0 and rank 0 must print "check: match".
#   check_job.sh CLUSTER HOSTS PER_HOST MODE TESSERA ARGS...
# MODE: mpi or ucx (under mpirun, launched from h1; ucx: UCX over TCP
# between hosts, shared memory within one), or tcp (one `tessera run
# --task_id I --num_nodes N --address h1:PORT` per rank, each on its host).
# Exits 77 when no cluster can be made here or the fixture did not make it.
set -u
cluster=$1 hosts=$2 per=$3 mode=$4 tessera=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
C=$here/cluster.sh
"$C" can >/dev/null || exit 77
[ -d /run/tessera-cluster/"$cluster" ] || { echo "skip: no cluster '$cluster' (fixture setup skipped)"; exit 77; }
np=$((hosts * per))
tmp=$(mktemp -d /tmp/cluster_job.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# UCX: tcp between hosts, shared memory within one, on the cluster's NIC.
export UCX_TLS=tcp,sm,self UCX_NET_DEVICES=eth0 UCX_WARN_UNUSED_ENV_VARS=n
start=$SECONDS
case $mode in
mpi | ucx)
  timeout -k 5 240 "$C" mpirun "$cluster" "$per" -np $np "$tessera" run --backend "$mode" --check "$@" \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
  ;;
tcp)
  port=$((20000 + $$ % 20000))
  pids=()
  for r in $(seq $((np - 1)) -1 1); do
    h=h$((r / per + 1))
    timeout -k 5 240 "$C" exec "$cluster" $h "$tessera" run --task_id $r --num_nodes $np --address h1:$port "$@" \
      >"$tmp/out$r" 2>&1 &
    pids+=($!)
  done
  timeout -k 5 240 "$C" exec "$cluster" h1 "$tessera" run --task_id 0 --num_nodes $np --address h1:$port --check "$@" \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
  for p in "${pids[@]}"; do
    wait "$p" || { echo "FAIL: a task exited $?"; cat "$tmp"/out[0-9]*; rc=1; }
  done
  ;;
*) echo "check_job.sh: unknown mode '$mode'"; exit 2 ;;
esac
cat "$tmp/out"
echo "$hosts hosts x $per ranks, $mode: exit $rc in $((SECONDS - start)) s"
# Every process on every host gone (a daemon may take a moment to exit).
for _ in 1 2 3 4 5 6 7 8 9 10; do
  left=$("$C" pids "$cluster" | grep -v ': *$' || true)
  [ -z "$left" ] && break
  sleep 0.5
done
[ -z "$left" ] || { echo "FAIL: processes left on the hosts: $left"; rc=1; }
[ $rc = 0 ] || { echo "FAIL: exit code $rc"; cat "$tmp/err"; exit 1; }
grep -q '^check: match' "$tmp/out" || { echo "FAIL: no 'check: match' line"; cat "$tmp/err"; exit 1; }
prev=
for a in "$@"; do
  if [ "$prev" = --trace ]; then
    grep -q hierarchical "$a" || { echo "FAIL: the trace $a shows no hierarchical collective"; exit 1; }
    echo "trace: hierarchical collectives"
  fi
  prev=$a
done
echo ok
