#!/usr/bin/env bash
# The web console in a real browser: builds bin/sluice, starts two
# `sluice serve --console` on free loopback ports (one open, one checking
# access keys), and drives the console in headless Chromium (Debian's
# chromium, through playwright-core) with browser.mjs, which checks what
# the page shows and the screenshots it takes.
#
# Environment:
#   SLUICE_BIN=path    use this binary instead of building bin/sluice
#   SCREENSHOTS=dir    where the screenshots go (default .tmp/console-screenshots)
#   CI=true            a browser that cannot be installed fails the test
#                      (otherwise it is skipped, saying so)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

if ! bash infra/scripts/ensure-console-deps.sh; then
  if [ "${CI:-}" = true ]; then
    echo "console browser test: FAILED: cannot install chromium/node/playwright-core (infra/scripts/ensure-console-deps.sh)"
    exit 1
  fi
  echo "console browser test: SKIPPED: cannot install chromium/node/playwright-core (infra/scripts/ensure-console-deps.sh); CI=true makes this a failure"
  exit 0
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/sluice-console.XXXXXX")"
pids=()
# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
  local rc=$?
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bin="${SLUICE_BIN:-}"
if [ -z "$bin" ]; then
  bin="$root/bin/sluice"
  echo "=== go build -o bin/sluice ./functions/cmd/sluice"
  go build -o "$bin" ./functions/cmd/sluice
fi

# start NAME ARGS...: starts a server, sets $endpoint to its URL.
start() {
  local name=$1; shift
  local log="$tmp/$name.log"
  "$@" >"$log" 2>&1 </dev/null &
  pids+=($!)
  local pid=$! deadline=$((SECONDS + 30))
  endpoint=""
  while [ -z "$endpoint" ]; do
    endpoint="$(grep -m1 -oE 'listening on http://[0-9.]+:[0-9]+' "$log" 2>/dev/null | sed -E 's/^listening on //' || true)"
    if [ -z "$endpoint" ] && { ! kill -0 "$pid" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; }; then
      echo "--- $name did not start listening; its output:"
      sed 's/^/  | /' "$log"
      exit 1
    fi
    [ -n "$endpoint" ] || sleep 0.1
  done
  echo "=== $name: $endpoint"
}

export CONSOLE_KEY_ID=AKIDCONSOLETEST CONSOLE_SECRET=console-test-secret
start open env -u SLUICE_ACCESS_KEYS -u SLUICE_ACCESS_KEYS_FILE "$bin" serve --console --auth none --store mem:// --addr 127.0.0.1:0
export OPEN_URL="$endpoint"
start signed env SLUICE_ACCESS_KEYS="$CONSOLE_KEY_ID:$CONSOLE_SECRET" "$bin" serve --console --store mem:// --addr 127.0.0.1:0
export SIGNED_URL="$endpoint"

export SCREENSHOTS="${SCREENSHOTS:-$root/.tmp/console-screenshots}"
mkdir -p "$SCREENSHOTS"
echo "=== node infra/console/browser.mjs (screenshots in $SCREENSHOTS)"
if timeout 180 node infra/console/browser.mjs; then
  echo "console browser test: ok"
else
  rc=$?
  for name in open signed; do
    echo "--- $name server's output:"
    tail -n 40 "$tmp/$name.log" | sed 's/^/  | /'
  done
  echo "console browser test: FAILED"
  exit "$rc"
fi
