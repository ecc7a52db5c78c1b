#!/usr/bin/env bash
# Installs what the console's browser test (infra/console/run.sh) needs,
# when it is missing. Idempotent and quiet when everything is already there.
#
#   Debian: chromium (driven headless; playwright-core downloads no browser),
#           nodejs/npm if there is no node.
#   npm:    infra/console/node_modules from package-lock.json (npm ci).
#
# Exits non-zero when something cannot be installed; run.sh then fails
# under CI=true and skips otherwise.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

log() { echo "ensure-console-deps: $*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo -n "$@"
  else
    log "need root to run: $*"
    return 1
  fi
}

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ "${#missing[@]}" -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  out="$(mktemp)"
  trap 'rm -f "$out"' EXIT
  export DEBIAN_FRONTEND=noninteractive
  if ! { as_root apt-get update -qq && as_root apt-get install -y -qq "${missing[@]}"; } >"$out" 2>&1 </dev/null; then
    cat "$out" >&2
    log "apt-get install failed"
    exit 1
  fi
fi

# npm packages: install when absent or when the lock changed since the last
# install (npm records its own copy in node_modules).
dir="$root/infra/console"
if [ ! -f "$dir/node_modules/playwright-core/package.json" ] \
  || [ ! -f "$dir/node_modules/.package-lock.json" ] \
  || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
  log "installing npm packages in infra/console"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error </dev/null) >&2
fi
