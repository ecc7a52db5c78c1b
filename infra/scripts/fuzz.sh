#!/usr/bin/env bash
# Runs every Go fuzz target of the module for a short while.
#
#   FUZZTIME=10s bash infra/scripts/fuzz.sh      (default 10s per target)
#
# Targets are found with grep (func FuzzXxx(f *testing.F) in *_test.go); each
# runs alone, as `go test -fuzz` takes one target per package at a time. Their
# seed corpora (f.Add and testdata/fuzz) also run in every plain `go test`.
# A crasher found here is written to the package's testdata/fuzz/FuzzXxx/ by
# go test itself: commit it, and it becomes a regression case.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
fuzztime="${FUZZTIME:-10s}"

targets="$(grep -rEo --include='*_test.go' \
  --exclude-dir=.git --exclude-dir=node_modules --exclude-dir=vendor --exclude-dir=testdata \
  '^func Fuzz[A-Za-z0-9_]*\(' . | sed -E 's/^(.*)\/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($/\1 \2/' | sort -u || true)"

if [ -z "$targets" ]; then
  echo "fuzz: no fuzz targets found"
  exit 0
fi

failed=0
ran=0
while read -r dir name; do
  ran=$((ran + 1))
  echo "=== fuzz $name in $dir for $fuzztime"
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$dir"; then
    echo "--- FAIL fuzz $name in $dir"
    failed=$((failed + 1))
  fi
done <<<"$targets"

echo "fuzz: $((ran - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
