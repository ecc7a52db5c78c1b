#!/usr/bin/env bash
# Runs sluice's scenario list through real, unmodified AWS clients.
#
# Builds bin/sluice, starts it on a free loopback port with a temporary data
# directory, runs every client suite against it, stops it with SIGTERM, and
# ends with the line "N passed, N failed" summed over all suites (plus the
# harness's own checks: build, start, clean stop). Exits 1 when anything failed.
#
# The server checks AWS Signature V4 with the key the clients sign with.
#
# Suites (names usable in SUITES):
#   py-json   boto3/botocore 1.43 in the pyenv Python     JSON protocol
#   py-query  Debian python3-boto3 (botocore 1.29)        Query protocol
#   cli-v1    AWS CLI 1.45 in the pyenv Python            JSON protocol
#   cli-v2    Debian awscli 2.9 (/usr/bin/aws)            Query protocol
#   js        @aws-sdk/client-sqs v3 on node              JSON protocol
#
# Environment:
#   SUITES="py-json js"   run only these suites (default: all)
#   SLUICE_BIN=path       use this binary instead of building bin/sluice
#   SLUICE_STORE=url      store to serve (default file://<temp dir>; mem:// works too)
#   SLUICE_ENDPOINT=url   test an already running server; start nothing
#   SLUICE_ENTRY=...      what to start: serve (sluice serve, the default), function
#                         (the Cloud Function as the buildpack builds it, under the
#                         Functions Framework) or lambda (the bootstrap under the
#                         Runtime Interface Emulator behind a front end's events,
#                         SLUICE_LAMBDA_FRONT_END, default rest; PostgreSQL started
#                         here unless DATABASE_URL is set)
#   SLUICE_PY_JSON=path   the Python with boto3 (JSON) and AWS CLI v1 (default: pyenv's)
#   SUITE_TIMEOUT=secs    time limit of one suite (default 600)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
clients="$root/infra/clients"

# --- a clean, fixed AWS environment -----------------------------------------
# Nothing from the caller's profile, config files, credentials, endpoints or
# CA bundle may reach the clients.
while read -r var; do
  unset "$var"
done < <(compgen -e | grep -E '^AWS_' || true)
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP BOTO_CONFIG BOTO_DISABLE_COMMONNAME
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export AWS_DEFAULT_REGION=us-east-1
export AWS_REGION=us-east-1
export AWS_CONFIG_FILE=/dev/null
export AWS_SHARED_CREDENTIALS_FILE=/dev/null
export AWS_EC2_METADATA_DISABLED=true
export AWS_PAGER=""
export AWS_DEFAULT_OUTPUT=json
export AWS_CLI_AUTO_PROMPT=off
export PYTHONNOUSERSITE=1 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PYTHONIOENCODING=utf-8
export LC_ALL=C.UTF-8 LANG=C.UTF-8
export NO_PROXY="127.0.0.1,localhost,::1${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1,localhost,::1${no_proxy:+,$no_proxy}"

suites="${SUITES:-py-json py-query cli-v1 cli-v2 js}"
suite_timeout="${SUITE_TIMEOUT:-600}"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/sluice-clients.XXXXXX")"
server_pid=""

# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
  local rc=$?
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$server_pid" 2>/dev/null || kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [ -n "${pg_dir:-}" ]; then
    bash "$root/infra/scripts/postgres.sh" stop "$pg_dir" >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- tallies ------------------------------------------------------------------
total_pass=0
total_fail=0
summary=()

harness_pass() { echo "PASS harness: $1"; total_pass=$((total_pass + 1)); }
harness_fail() { echo "FAIL harness: $1"; total_fail=$((total_fail + 1)); summary+=("harness: FAIL $1"); }

finish() {
  echo
  echo "=== summary"
  local s
  for s in "${summary[@]}"; do echo "  $s"; done
  echo "$total_pass passed, $total_fail failed"
  if [ "$total_fail" -eq 0 ]; then exit 0; else exit 1; fi
}

# --- what the suites run with ---------------------------------------------------
if ! bash "$root/infra/scripts/ensure-client-deps.sh"; then
  harness_fail "installing client dependencies"
fi

# The JSON-protocol Python: pyenv's, with boto3 and the AWS CLI v1 beside it.
find_py_json() {
  local c cands=()
  [ -n "${SLUICE_PY_JSON:-}" ] && { echo "$SLUICE_PY_JSON"; return; }
  command -v pyenv >/dev/null 2>&1 && cands+=("$(pyenv which python3 2>/dev/null || true)")
  cands+=("${PYENV_ROOT:-${HOME:-/root}/.pyenv}"/versions/*/bin/python3)
  for c in "${cands[@]}"; do
    [ -x "$c" ] || continue
    [ "$(readlink -f "$c")" = "$(readlink -f /usr/bin/python3)" ] && continue
    "$c" -s -c 'import boto3' >/dev/null 2>&1 && { echo "$c"; return; }
  done
  return 1
}
py_json="$(find_py_json || true)"
aws_v1="${py_json:+$(dirname "$py_json")/aws}"

# --- the server -----------------------------------------------------------------
endpoint="${SLUICE_ENDPOINT:-}"
entry="${SLUICE_ENTRY:-serve}"
keys="$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
if [ -z "$endpoint" ]; then
  store="${SLUICE_STORE:-file://$tmp/data}"
  mkdir -p "$tmp/data"
  server_log="$tmp/server.log"
  # Signatures are checked, with the key the clients sign with: every suite
  # also tests that its client's SigV4 is accepted. Each entry point is
  # started in a session of its own, so that one that must be killed goes
  # with anything it started.
  case "$entry" in
  serve)
    bin="${SLUICE_BIN:-}"
    if [ -z "$bin" ]; then
      bin="$root/bin/sluice"
      echo "=== go build -o bin/sluice ./functions/cmd/sluice"
      if go build -o "$bin" ./functions/cmd/sluice; then
        harness_pass "build bin/sluice"
      else
        harness_fail "build bin/sluice"
        finish
      fi
    fi
    echo "=== $bin serve --addr 127.0.0.1:0 --store $store (SLUICE_ACCESS_KEYS=$AWS_ACCESS_KEY_ID:…)"
    SLUICE_ACCESS_KEYS="$keys" \
      setsid "$bin" serve --addr 127.0.0.1:0 --store "$store" >"$server_log" 2>&1 </dev/null &
    server_pid=$!
    ;;
  function)
    # The Cloud Function as Google's buildpack builds it (its generated
    # main over the repository's root package), under the Functions
    # Framework's own server.
    bin="$tmp/sluice-function"
    echo "=== the Cloud Function, built as the buildpack builds it (functions/cloudfunction TestFunctionKeep)"
    if SLUICE_KEEP_FUNCTION="$bin" go test -count=1 -run '^TestFunctionKeep$' ./functions/cloudfunction >"$tmp/build.log" 2>&1; then
      harness_pass "build the Cloud Function"
    else
      sed 's/^/  | /' "$tmp/build.log"
      harness_fail "build the Cloud Function"
      finish
    fi
    [ "$store" = "file://$tmp/data" ] && store="mem://" # a function has no disk to keep
    port="$(free_port)"
    echo "=== PORT=$port FUNCTION_TARGET=Sluice $bin (SLUICE_STORE=$store, SLUICE_ACCESS_KEYS=$AWS_ACCESS_KEY_ID:…)"
    PORT="$port" FUNCTION_TARGET=Sluice SLUICE_STORE="$store" SLUICE_ACCESS_KEYS="$keys" \
      setsid "$bin" >"$server_log" 2>&1 </dev/null &
    server_pid=$!
    ;;
  lambda)
    # The Lambda bootstrap under the Runtime Interface Emulator, three
    # execution environments over one PostgreSQL (a poll holds an
    # environment, so a send that ends it needs another), each request
    # wrapped into the events of a front end (SLUICE_LAMBDA_FRONT_END).
    fe="${SLUICE_LAMBDA_FRONT_END:-rest}"
    if [ -z "${DATABASE_URL:-}" ]; then
      chmod 755 "$tmp" # the server runs as its own user, which must reach its directory
      pg_exports="$(bash "$root/infra/scripts/postgres.sh" start "$tmp/pg")" || { harness_fail "start PostgreSQL for the Lambda environments"; finish; }
      eval "$pg_exports"
      pg_dir="$tmp/pg"
    fi
    echo "=== lambda-bridge -front-end $fe -environments 3 (SLUICE_ACCESS_KEYS=$AWS_ACCESS_KEY_ID:…)"
    bridge="$tmp/lambda-bridge"
    if go build -o "$bridge" ./functions/lambdahttp/bridge/lambda-bridge; then
      harness_pass "build the Lambda bridge"
    else
      harness_fail "build the Lambda bridge"
      finish
    fi
    SLUICE_ACCESS_KEYS="$keys" setsid "$bridge" -addr 127.0.0.1:0 -front-end "$fe" -environments 3 \
      -store "$DATABASE_URL" >"$server_log" 2>&1 </dev/null &
    server_pid=$!
    ;;
  *)
    echo "SLUICE_ENTRY=$entry: use serve, function or lambda" >&2
    exit 2
    ;;
  esac

  deadline=$((SECONDS + ${SLUICE_START_TIMEOUT:-120}))
  while :; do
    # The URL is scheme://host:port; whatever follows it (a quote of a
    # structured log line, a slash) is not part of it.
    if [ "$entry" = function ]; then
      curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && endpoint="http://127.0.0.1:$port"
    else
      endpoint="$(grep -m1 -oE 'listening on http://[][0-9A-Za-z.:-]+' "$server_log" 2>/dev/null \
        | sed -E 's/^listening on //' || true)"
    fi
    [ -n "$endpoint" ] && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
      wait "$server_pid" && rc=0 || rc=$?
      server_pid=""
      echo "--- $entry exited ($rc) before listening; its output:"
      sed 's/^/  | /' "$server_log"
      harness_fail "$entry starts and listens"
      finish
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "--- $entry did not listen within ${SLUICE_START_TIMEOUT:-120}s; its output:"
      sed 's/^/  | /' "$server_log"
      harness_fail "$entry starts and listens"
      finish
    fi
    sleep 0.1
  done
  if [[ "$endpoint" =~ ^http://127\.0\.0\.1:[0-9]+$ ]] && [ "${endpoint##*:}" != 0 ]; then
    harness_pass "$entry listening on $endpoint"
  else
    harness_fail "$entry address '$endpoint' is not http://127.0.0.1:PORT with a real port"
    finish
  fi
fi

# --- suites ---------------------------------------------------------------------
run_suite() {
  local name=$1; shift
  local log="$tmp/suite-$name.log" rc line p f
  echo
  echo "=== suite $name"
  set +e
  timeout --kill-after=10 "$suite_timeout" "$@" </dev/null 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  line="$(grep -E "^$name: [0-9]+ passed, [0-9]+ failed\$" "$log" | tail -n1 || true)"
  if [ -z "$line" ]; then
    if [ "$rc" -eq 124 ]; then
      echo "FAIL $name: timed out after ${suite_timeout}s"
    else
      echo "FAIL $name: exited $rc without reporting its counts"
    fi
    p=$(grep -c '^PASS ' "$log" || true)
    f=$(( $(grep -c '^FAIL ' "$log" || true) + 1 ))
  else
    p="$(sed -E 's/^.*: ([0-9]+) passed, ([0-9]+) failed$/\1/' <<<"$line")"
    f="$(sed -E 's/^.*: ([0-9]+) passed, ([0-9]+) failed$/\2/' <<<"$line")"
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
      echo "FAIL $name: exited $rc although it reported no failure"
      f=1
    fi
  fi
  total_pass=$((total_pass + p))
  total_fail=$((total_fail + f))
  summary+=("$(printf '%-9s %3d passed, %3d failed' "$name" "$p" "$f")")
}

missing_suite() { # name why
  echo
  echo "=== suite $1"
  echo "FAIL $1: $2"
  total_fail=$((total_fail + 1))
  summary+=("$(printf '%-9s %3d passed, %3d failed (%s)' "$1" 0 1 "$2")")
}

for s in $suites; do
  case "$s" in
    py-json)
      if [ -n "$py_json" ]; then
        run_suite py-json "$py_json" -s "$clients/python/check.py" \
          --endpoint "$endpoint" --label py-json --expect-protocol json
      else
        missing_suite py-json "no pyenv Python with boto3 (set SLUICE_PY_JSON)"
      fi ;;
    py-query)
      if [ -x /usr/bin/python3 ]; then
        run_suite py-query /usr/bin/python3 -s "$clients/python/check.py" \
          --endpoint "$endpoint" --label py-query --expect-protocol query
      else
        missing_suite py-query "no /usr/bin/python3"
      fi ;;
    cli-v1)
      # JSON protocol; botocore maps the x-amzn-query-error header back to the
      # Query code, so the CLI prints AWS.SimpleQueueService.NonExistentQueue.
      if [ -n "$py_json" ] && [ -f "$aws_v1" ]; then
        run_suite cli-v1 "$py_json" -s "$clients/cli/check_cli.py" --endpoint "$endpoint" --label cli-v1 \
          --python "$py_json" --aws "$aws_v1" --expect-protocol json \
          --expect-error-code AWS.SimpleQueueService.NonExistentQueue
      else
        missing_suite cli-v1 "no AWS CLI v1 beside the pyenv Python"
      fi ;;
    cli-v2)
      # Query protocol: the code comes straight from <Error><Code>.
      if [ -f /usr/bin/aws ] && [ -x /usr/bin/python3 ]; then
        run_suite cli-v2 /usr/bin/python3 -s "$clients/cli/check_cli.py" --endpoint "$endpoint" --label cli-v2 \
          --python /usr/bin/python3 --aws /usr/bin/aws --expect-protocol query \
          --expect-error-code AWS.SimpleQueueService.NonExistentQueue
      else
        missing_suite cli-v2 "no Debian /usr/bin/aws"
      fi ;;
    js)
      if command -v node >/dev/null 2>&1 && [ -d "$clients/js/node_modules/@aws-sdk/client-sqs" ]; then
        run_suite js node "$clients/js/check.mjs" --endpoint "$endpoint" --label js
      else
        missing_suite js "no node or no @aws-sdk/client-sqs in infra/clients/js/node_modules"
      fi ;;
    *)
      missing_suite "$s" "unknown suite (known: py-json py-query cli-v1 cli-v2 js)" ;;
  esac
done

# --- stop the server --------------------------------------------------------------
if [ -n "$server_pid" ]; then
  echo
  echo "=== stopping the server (SIGTERM)"
  if ! kill -0 "$server_pid" 2>/dev/null; then
    wait "$server_pid" && rc=0 || rc=$?
    harness_fail "server was still running after the suites (it exited $rc)"
  else
    kill -TERM "$server_pid"
    stopped=""
    for _ in $(seq 1 $(( ${SLUICE_STOP_TIMEOUT:-15} * 10 ))); do
      kill -0 "$server_pid" 2>/dev/null || { stopped=1; break; }
      sleep 0.1
    done
    if [ -n "$stopped" ]; then
      wait "$server_pid" && rc=0 || rc=$?
      if [ "$rc" -eq 0 ]; then
        harness_pass "server exits 0 on SIGTERM"
      else
        harness_fail "server exited $rc on SIGTERM (want 0)"
      fi
    else
      kill -KILL -- "-$server_pid" 2>/dev/null || kill -KILL "$server_pid" 2>/dev/null || true
      wait "$server_pid" 2>/dev/null || true
      harness_fail "server still running ${SLUICE_STOP_TIMEOUT:-15}s after SIGTERM (killed)"
    fi
  fi
  server_pid=""
  if grep -qE '^(panic:|fatal error:|WARNING: DATA RACE)' "$server_log"; then
    echo "--- the server log shows a crash; its output:"
    sed 's/^/  | /' "$server_log" | tail -n 200
    harness_fail "server log free of panics and data races"
  else
    harness_pass "server log free of panics and data races"
    if [ "$total_fail" -gt 0 ]; then
      echo "--- last lines of the server's output:"
      tail -n 40 "$server_log" | sed 's/^/  | /'
    fi
  fi
fi

finish
