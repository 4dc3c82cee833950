#!/bin/sh
# Faults from outside, as an operator makes them: real signals to the real
# PIDs of a 4-rank mpirun job (found from outside: mpirun's children, their
# OMPI_COMM_WORLD_RANK). Usage:
#   signal_fault.sh TESSERA MPIRUN_SH EXAMPLE SCENARIO WHO [REPEATS]
# SCENARIO: kill (SIGKILL), term (SIGTERM), stop (SIGSTOP), slow (STOP/CONT
# every second: must give no digest), cancel (SIGTERM to mpirun: no digest,
# no culprit). WHO: first, middle or last rank. Each repeat signals at a
# different moment; the digest must name exactly the faulty rank (cause
# unrecoverable_error, or bad_device for stop) within 30 s (the measured
# latency is printed), and every process must be gone afterwards.
set -u
tessera=$1 mpirun_sh=$2 example=$3 scenario=$4 who=$5 repeats=${6:-${TESSERA_FAULT_REPEATS:-2}}
np=4
case $who in first) target=0 ;; middle) target=$((np / 2)) ;; last) target=$((np - 1)) ;; *) echo "bad WHO $who"; exit 2 ;; esac
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT  # KEEP=1 keeps the runs' logs
fails=0

now() { date +%s.%N; }
# alive PID: running or stopped, not a zombie.
alive() { st=$(sed 's/.*) //' /proc/"$1"/stat 2>/dev/null | cut -c1); [ -n "$st" ] && [ "$st" != Z ]; }
elapsed() { echo "$1 $2" | awk '{printf "%.2f", $2 - $1}'; }

# rank_pid MPIRUN_PID RANK: the pid of that rank (a child of mpirun).
rank_pid() {
  for p in $(pgrep -P "$1"); do
    r=$(tr '\0' '\n' < /proc/"$p"/environ 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    [ "$r" = "$2" ] && { echo "$p"; return 0; }
  done
  return 1
}

for i in $(seq 1 "$repeats"); do
  d=$tmp/run$i
  mkdir -p "$d"
  steps=100000
  setsid "$mpirun_sh" -np $np "$tessera" run "$example" --steps $steps --loop --hang-timeout 3 \
    --hang-digest "$d/digest.json" > "$d/out" 2> "$d/err" &
  mpirun_pid=$!
  # Wait until every rank runs steps (rank 0 prints them), then a moment
  # that differs per repeat.
  t_wait=$(now)
  until grep -q "^step" "$d/out" 2>/dev/null || ! alive $mpirun_pid; do
    sleep 0.2
    [ "$(elapsed "$t_wait" "$(now)" | cut -d. -f1)" -ge 120 ] && break
  done
  sleep "$(echo "$i" | awk '{printf "%.1f", 0.3 + ($1 % 5) * 0.6}')"
  pid=$(rank_pid $mpirun_pid $target)
  if [ -z "$pid" ]; then
    echo "FAIL $scenario $who run $i: no rank $target under mpirun $mpirun_pid"; sed -n 1,20p "$d/err"
    fails=$((fails + 1)); kill -KILL -- -$mpirun_pid 2>/dev/null; continue
  fi
  ranks=$(for r in $(seq 0 $((np - 1))); do rank_pid $mpirun_pid "$r"; done | tr '\n' ' ')
  t0=$(now)
  case $scenario in
  kill) kill -KILL "$pid" ;;
  term) kill -TERM "$pid" ;;
  stop) kill -STOP "$pid" ;;
  cancel) kill -TERM $mpirun_pid ;;
  slow)
    k=0
    while [ $k -lt 8 ] && alive "$pid"; do
      kill -STOP "$pid"; sleep 1; kill -CONT "$pid"; sleep 1; k=$((k + 1))
    done
    # Still running, no digest: then cancel it (no digest either).
    if alive $mpirun_pid; then
      kill -TERM $mpirun_pid
    else # say how it ended: its last lines and the start of its errors
      echo "FAIL slow run $i: the job ended while slow (after $k STOP/CONT rounds)"; fails=$((fails + 1))
      tail -n 3 "$d/out"; sed -n 1,20p "$d/err"
    fi ;;
  esac
  # The digest (or, for slow/cancel, the job's end).
  t_digest=
  while alive $mpirun_pid || [ ! -e "$d/digest.json" ]; do
    [ -z "$t_digest" ] && [ -e "$d/digest.json" ] && t_digest=$(now)
    [ "$(elapsed "$t0" "$(now)" | cut -d. -f1)" -ge 60 ] && break
    ! alive $mpirun_pid && [ ! -e "$d/digest.json" ] && break
    sleep 0.1
  done
  [ -z "$t_digest" ] && [ -e "$d/digest.json" ] && t_digest=$(now)
  kill -CONT "$pid" 2>/dev/null
  # Every process gone: mpirun, the ranks, the coordinator.
  t_end=$(now)
  while alive $mpirun_pid && [ "$(elapsed "$t_end" "$(now)" | cut -d. -f1)" -lt 30 ]; do sleep 0.2; done
  wait $mpirun_pid 2>/dev/null
  t_end=$(now)
  left=x
  while [ -n "$left" ] && [ "$(elapsed "$t_end" "$(now)" | cut -d. -f1)" -lt 5 ]; do
    left=
    for p in $ranks $(pgrep -f "tessera-hang-coordinator.*$d/digest.json"); do
      alive "$p" && left="$left $p"
    done
    [ -n "$left" ] && sleep 0.2
  done
  ok=1
  case $scenario in
  slow | cancel)
    if [ -e "$d/digest.json" ]; then ok=0; echo "FAIL $scenario $who run $i: a digest was written"; fi
    # (The coordinator's "cancelled" line goes through mpirun's stderr
    # forwarding, which is gone by then: the missing digest is the proof.)
    got="no digest" ;;
  *)
    want_cause=unrecoverable_error
    [ "$scenario" = stop ] && want_cause=bad_device
    if [ -z "$t_digest" ]; then
      ok=0; got="no digest"
    else
      got=$(jq -r '"\(.cause) [\([.culprits[].rank] | map(tostring) | join(","))]"' "$d/digest.json")
      [ "$got" = "$want_cause [$target]" ] || ok=0
    fi ;;
  esac
  [ -n "$left" ] && { ok=0; echo "processes left: $left"; kill -KILL $left 2>/dev/null; }
  lat=-
  [ -n "$t_digest" ] && lat=$(elapsed "$t0" "$t_digest")
  if [ $ok = 1 ]; then
    echo "ok $scenario rank $target run $i: $got latency ${lat} s"
  else
    echo "FAIL $scenario rank $target run $i: got $got latency ${lat} s"; sed -n 1,30p "$d/err"
    fails=$((fails + 1))
  fi
  if [ -n "$t_digest" ] && [ "$(echo "$lat" | cut -d. -f1)" -ge 30 ]; then
    echo "FAIL $scenario run $i: latency $lat s over the 30 s bound"; fails=$((fails + 1))
  fi
  kill -KILL -- -$mpirun_pid 2>/dev/null
done
echo "$scenario $who: $((repeats - fails))/$repeats right"
[ $fails = 0 ]
