#!/bin/sh
# Runs `tessera opt --stage=verified` on modules modelled on XLA's verifier
# tests (hlo_verifier_test.cc) and checks Tessera agrees with XLA's verdict.
#   check.sh TESSERA DIR valid|invalid [FILE]
# DIR/KIND/cases.txt lists one case a line: `FILE | flags | want | note` for
# invalid (want: a substring of the message), `FILE | flags | note` for valid.
# An invalid module must exit 2 with a located `file:line:col: error:` line
# holding `want`; a valid one must exit 0. Without FILE every case runs and a
# count is printed; each failure prints got/want.
set -u
tessera=$1 dir=$2 kind=$3 only=${4:-}
cd "$dir/$kind" || exit 1
err=$(mktemp)
trap 'rm -f "$err"' EXIT
pass=0 total=0
while IFS='|' read -r file flags want _rest; do
  file=$(echo "$file" | sed 's/^ *//; s/ *$//')
  case "$file" in ''|'#'*) continue ;; esac
  [ -n "$only" ] && [ "$file" != "$only" ] && continue
  flags=$(echo "$flags" | sed 's/^ *//; s/ *$//')
  want=$(echo "$want" | sed 's/^ *//; s/ *$//')
  total=$((total + 1))
  # shellcheck disable=SC2086
  timeout 20 "$tessera" opt --stage=verified $flags "$file" >/dev/null 2>"$err"
  rc=$?
  got=$(head -1 "$err")
  if [ "$kind" = valid ]; then
    if [ "$rc" = 0 ]; then
      pass=$((pass + 1)); echo "ok: $file accepted"
    else
      echo "FAIL: $file: got exit $rc: $got"; echo "      want: exit 0 (XLA accepts it)"
    fi
    continue
  fi
  located=no
  echo "$got" | grep -Eq "^$file:[0-9]+:[0-9]+: error: " && located=yes
  if [ "$rc" = 2 ] && [ $located = yes ] && [ -n "$want" ] && echo "$got" | grep -Fq -- "$want"; then
    pass=$((pass + 1)); echo "ok: $got"
  else
    echo "FAIL: $file: got exit $rc: $got"; echo "      want: exit 2, located, holding '$want'"
  fi
done < cases.txt
[ -z "$only" ] && echo "XLA-$kind modules Tessera $( [ "$kind" = valid ] && echo accepts || echo rejects as expected ): $pass/$total"
[ "$total" -gt 0 ] && [ "$pass" = "$total" ]
