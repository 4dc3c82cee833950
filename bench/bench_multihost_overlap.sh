#!/bin/bash
# bench/bench_overlap.sh on a real (emulated) link instead of the runtime's
# delay knob: 2 hosts x 2 ranks of tests/cluster, one slice per host, link
# DELAY_US one way at RATE_MBIT; the knob stays 0. The scheduler is given a
# cost model of that link (rtt = 2 x delay, the NIC at the link's rate).
# Run it twice to report both memory settings: MEMORY_LIMIT unset (the
# schedule stays within program order's peak) and MEMORY_LIMIT=1T.
#   bench/bench_multihost_overlap.sh BUILD_DIR [RESULTS_FILE]
# Environment: DELAY_US (2000), RATE_MBIT (1000), PER_HOST (2: ranks per host;
# 1 halves the ranks sharing a host's cores), and bench_overlap.sh's.
set -euo pipefail
build=$(cd "${1:?usage: bench_multihost_overlap.sh BUILD_DIR [RESULTS_FILE]}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
delay=${DELAY_US:-2000} rate=${RATE_MBIT:-1000}
per_host=${PER_HOST:-2}
export CLUSTER=tsbo$$ CLUSTER_SH=$here/../tests/cluster/cluster.sh PER_HOST=$per_host
export TS_CLUSTER_RELAY=$build/tests/ts_cluster_relay
trap '"$CLUSTER_SH" down $CLUSTER' EXIT
"$CLUSTER_SH" up $CLUSTER 2 "$delay" "$rate" 0
export COST_MODEL=${COST_MODEL:-analytical:gpus_per_node=$per_host,nccl_op_launch_us=1,chunk_prep_us=1,rtt_us=$((2 * delay)),nic_speed_gbps=$(awk -v r="$rate" 'BEGIN { print r / 1000 }')}
[ -z "${2:-}" ] || echo "# link: ${delay} us one way, ${rate} Mbit/s (tests/cluster relay), MEMORY_LIMIT=${MEMORY_LIMIT:-none}, ${per_host} rank(s) a host" >>"$2"
LINK_DELAY_US=$delay LINK_RATE_MBIT=$rate MODE=cluster DELAY_US=0 DEVICES=$((2 * per_host)) SLICES=2 HOST_MODEL=${HOST_MODEL:-0} sh "$here/bench_overlap.sh" "$build" "${2:-}"
