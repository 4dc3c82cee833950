#!/bin/sh
# mpirun for the collectives tests: oversubscribed (CI has 2 cores), and
# --allow-run-as-root only when running as root.
#   mpirun.sh NP PROGRAM ARGS...
np=$1
shift
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
exec mpirun $root --oversubscribe --bind-to none -np "$np" "$@"
