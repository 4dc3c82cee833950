#!/bin/bash
# Collectives across a real (emulated) link: 2 hosts x 2 ranks of the
# tests/cluster cluster, link DELAY_US one way and RATE_MBIT, hierarchical
# (--slices 2: one slice per host) vs flat (ring) all-reduce, all-gather
# and reduce-scatter, each beside Open MPI's own collective in the same run
# (--peer=mpi: the ratio column). Root only. Prints each table and a summary
# with busbw / the link bound: every one of the three must move S bytes per
# direction across the link for the 2 x 2 job, so busbw <= 1.5 x rate / 8
# (busbw = algbw x 2(n-1)/n for all-reduce, x (n-1)/n for the others).
#   bench/bench_multihost.sh BUILD_DIR
# Environment: DELAY_US (default 2000), RATE_MBIT (1000), REPEAT (1),
# SIZES (default "-b 1M -e 64M -f 4"), OUT (folder for the tables), BACKEND (mpi).
set -euo pipefail
build=$(cd "${1:?usage: bench_multihost.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
C=$here/tests/cluster/cluster.sh
delay=${DELAY_US:-2000} rate=${RATE_MBIT:-1000} repeat=${REPEAT:-1}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
name=tsbm$$
export TS_CLUSTER_RELAY=$build/tests/ts_cluster_relay
export UCX_TLS=tcp,sm,self UCX_NET_DEVICES=eth0 UCX_WARN_UNUSED_ENV_VARS=n
trap '"$C" down $name' EXIT
"$C" up $name 2 "$delay" "$rate" 0
bound=$(awk -v r="$rate" 'BEGIN { printf "%.4f", 1.5 * r / 8000 }')
echo "## link: ${delay} us one way, ${rate} Mbit/s, no loss; busbw bound ${bound} GB/s; load $(cut -d' ' -f1-3 /proc/loadavg)"
for k in $(seq 1 "$repeat"); do
  for alg in hierarchical ring; do
    f=$out/multihost_${alg}_run$k.txt
    flags=(--slices 2)
    [ $alg = ring ] && flags=(--algorithm=ring)
    echo "## $alg run $k/$repeat, load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$f"
    timeout -k 5 900 "$C" mpirun $name 2 -np 4 "$build/launcher/tessera" bench collectives --backend=${BACKEND:-mpi} \
      --peer=mpi ${SIZES:--b 1M -e 64M -f 4} -n 5 -w 1 -c 1 "${flags[@]}" \
      --collectives=all-reduce,all-gather,reduce-scatter | tee -a "$f"
  done
done
echo
echo "## summary (median over $repeat run(s)): busbw GB/s, ratio to Open MPI, busbw / bound ($bound GB/s)"
for alg in hierarchical ring; do
  cat "$out"/multihost_${alg}_run*.txt | awk -v alg=$alg -v bound="$bound" '
    function median(s,   n, v, i, j, t) {
      n = split(s, v, " ")
      for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    /^# collective: / { kind = $3; next }
    /^ *[0-9]/ && NF >= 10 {
      key = kind " " $1
      if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
      bw[key] = bw[key] " " $7; ratio[key] = ratio[key] " " $10
    }
    END {
      for (i = 1; i <= nk; i++) {
        k = keys[i]; b = median(bw[k])
        printf "%-13s %-15s %10s busbw %7.4f  vs Open MPI %5.2fx  of bound %4.0f%%\n", alg, substr(k, 1, index(k, " ") - 1),
               substr(k, index(k, " ") + 1), b, median(ratio[k]), 100 * b / bound
      }
    }'
done
