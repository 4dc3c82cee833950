#!/bin/sh
# tessera --help-env lists every TESSERA_* variable the sources name (one
# table, common/env.def), and no library or command source but common/env.c
# calls getenv on one.
#   check_help_env.sh TESSERA SOURCE_ROOT
set -u
bin=$1 root=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$bin" --help-env >"$out" 2>&1 </dev/null
rc=$?
fail=0
[ "$rc" = 0 ] || { echo "FAIL: tessera --help-env exited $rc"; fail=1; }
# Every knob the C sources name, in a message or a read (build options such
# as TESSERA_WERROR live in CMake, not in C).
names=$(cd "$root" && find . -path ./build -prune -o -path ./tests -prune -o -name '*.c' -print -o -name '*.h' -print |
        xargs grep -ohE 'TESSERA_[A-Z0-9_]+' | sort -u)
[ -n "$names" ] || { echo "FAIL: no TESSERA_* names found under $root"; fail=1; }
for n in $names; do
  grep -qE "^  $n +\[" "$out" || { echo "FAIL: --help-env does not list $n"; fail=1; }
done
ad_hoc=$(cd "$root" && grep -rn --include='*.c' 'getenv("TESSERA_' . | grep -v -e '^./build/' -e '^./tests/' -e '^./common/env.c:')
[ -z "$ad_hoc" ] || { echo "FAIL: TESSERA_* read outside common/env.c:"; echo "$ad_hoc"; fail=1; }
[ $fail = 0 ] && echo "ok: --help-env lists $(echo $names | wc -w) knobs"
exit $fail
