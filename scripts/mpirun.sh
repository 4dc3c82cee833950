#!/bin/sh
# mpirun with the flags a small host needs: --oversubscribe (more ranks than
# cores is fine for trying things out), --allow-run-as-root when run as
# root, and --bind-to none (tessera run binds its ranks to cores itself,
# through hwloc, when they fit). Everything else passes through:
#   scripts/mpirun.sh -np 4 build/launcher/tessera run examples/mlp_train.hlo --steps 100 --loop
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
exec mpirun $root --oversubscribe --bind-to none "$@"
