#!/bin/sh
# The collectives comparison of issue 6: Tessera vs Open MPI's own
# collectives on the same buffers, plus concurrent memcpy bandwidth, at
# np=2 and np=4 from 4 KiB to 256 MiB.
#   bench/bench_coll.sh BUILD_DIR [NP...]      (default NP: 2 4)
# Environment:
#   REPEAT=N       runs per rank count (default 1); the summary keeps each
#                  point's median ratio over the runs
#   OUT=DIR        keeps every run's table as DIR/coll_np<NP>_run<K>.txt
#   BENCH_FLAGS    extra flags (--malloc: plain buffers, CMA and staged
#                  copies, instead of ts_coll_alloc's mapped ones)
#   SIZES          -b/-e/-f flags (default "-b 4K -e 256M -f 4")
# Shared machines are noisy: compare the ratio column (measured side by
# side in one run), not absolute times, and repeat. The load average before
# each run is printed with it.
set -eu
build=${1:?usage: bench_coll.sh BUILD_DIR [NP...]}
shift
[ $# -gt 0 ] || set -- 2 4
repeat=${REPEAT:-1}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
for np in "$@"; do
  k=1
  while [ "$k" -le "$repeat" ]; do
    f="$out/coll_np${np}_run$k.txt"
    echo "## np=$np run $k/$repeat, load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$f"
    mpirun $root --oversubscribe --bind-to none -np "$np" "$build/launcher/tessera" bench collectives \
      --peer=mpi --memcpy ${SIZES:--b 4K -e 256M -f 4} -n 10 -w 2 -c 1 ${BENCH_FLAGS:-} \
      --collectives=all-reduce,all-gather,reduce-scatter,all-to-all | tee -a "$f"
    k=$((k + 1))
  done
done

# Summary: median over the runs of ratio (Tessera busbw / Open MPI busbw)
# per size and collective, and of all-reduce busbw / memcpy.
for np in "$@"; do
  echo
  echo "## np=$np: median ratio over $repeat run(s) (Tessera busbw / Open MPI busbw; all-reduce busbw / memcpy)"
  cat "$out"/coll_np"${np}"_run*.txt | awk '
    function median(s,   n, v, i, j, t) {
      n = split(s, v, " ")
      for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      if (n == 0) return "-"
      return n % 2 ? v[(n + 1) / 2] : sprintf("%.2f", (v[n / 2] + v[n / 2 + 1]) / 2)
    }
    /^# collective: / { kind = $3; next }
    /^ *[0-9]/ && NF >= 12 {
      r[kind, $1] = r[kind, $1] " " $10
      if (kind == "all-reduce") m[$1] = m[$1] " " $12
      if (!(($1) in seen)) { seen[$1] = 1; sizes[++ns] = $1 }
    }
    END {
      printf "%12s %11s %11s %15s %11s %13s\n", "size", "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "ar/memcpy"
      for (i = 1; i <= ns; i++) {
        s = sizes[i]
        printf "%12s %11s %11s %15s %11s %13s\n", s, median(r["all-reduce", s]), median(r["all-gather", s]),
               median(r["reduce-scatter", s]), median(r["all-to-all", s]), median(m[s])
      }
    }'
done
echo
echo "# runs kept in $out"
