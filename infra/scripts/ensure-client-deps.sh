#!/usr/bin/env bash
# Installs what the real-client suites (infra/clients/run.sh) need, when it is
# missing. Idempotent and quiet when everything is already there.
#
#   Debian: awscli (AWS CLI 2.9, Query protocol), python3-boto3 (botocore
#           1.29, Query protocol) for /usr/bin/python3, nodejs/npm if no node.
#   npm:    infra/clients/js/node_modules from package-lock.json (npm ci).
#
# The JSON-protocol Python side (boto3/botocore 1.43 and AWS CLI 1.45 in the
# pyenv Python) comes with the machine: no Python package index is reachable
# here, so it is checked by run.sh, not installed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

log() { echo "ensure-client-deps: $*" >&2; }

deb_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

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
deb_installed awscli || missing+=(awscli)
deb_installed python3-boto3 || missing+=(python3-boto3)
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

# npm packages of the JS suite: install when absent or when the lock changed
# since the last install (npm records its own copy in node_modules).
js="$root/infra/clients/js"
if [ ! -f "$js/node_modules/@aws-sdk/client-sqs/package.json" ] \
  || [ ! -f "$js/node_modules/.package-lock.json" ] \
  || [ "$js/package-lock.json" -nt "$js/node_modules/.package-lock.json" ]; then
  log "installing npm packages in infra/clients/js"
  if [ -f "$js/package-lock.json" ]; then
    (cd "$js" && npm ci --no-audit --no-fund --loglevel=error </dev/null) >&2
  else
    (cd "$js" && npm install --no-audit --no-fund --loglevel=error </dev/null) >&2
  fi
fi
