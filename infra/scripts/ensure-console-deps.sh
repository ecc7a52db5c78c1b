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

# shellcheck source=deps.sh
source "$root/infra/scripts/deps.sh"

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

apt_install "${missing[@]}"
npm_ci "$root/infra/console" playwright-core
