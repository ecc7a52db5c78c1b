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

# shellcheck source=deps.sh
source "$root/infra/scripts/deps.sh"

missing=()
deb_installed awscli || missing+=(awscli)
deb_installed python3-boto3 || missing+=(python3-boto3)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

apt_install "${missing[@]}"

npm_ci "$root/infra/clients/js" @aws-sdk/client-sqs
