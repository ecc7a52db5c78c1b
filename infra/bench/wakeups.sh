#!/usr/bin/env bash
# What publishing wake-ups costs the send path: three `sluice serve` on one
# PostgreSQL that differ only in --wakeups (local, LISTEN/NOTIFY, Pub/Sub),
# benched in turn, ROUNDS times interleaved so that a noisy machine hits
# each alike. Starts a throwaway PostgreSQL and Pub/Sub emulator unless
# DATABASE_URL and PUBSUB_EMULATOR_HOST are set. Run with `make bench-wakeups`.
#   BENCH_DURATION (15s), ROUNDS (2), BENCH_FLAGS (Standard, 8 producers and 8 consumers)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=bin/sluice
out=.tmp/bench-wakeups
rm -rf "$out"; mkdir -p "$out"
work="$(mktemp -d)"; chmod 755 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  bash infra/scripts/postgres.sh stop "$work/pg" >/dev/null 2>&1 || true
  SLUICE_PUBSUB_DIR="$work/ps" bash infra/scripts/pubsub.sh stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
if [ -z "${DATABASE_URL:-}" ]; then eval "$(bash infra/scripts/postgres.sh start "$work/pg" </dev/null)"; fi
if [ -z "${PUBSUB_EMULATOR_HOST:-}" ]; then eval "$(SLUICE_PUBSUB_DIR="$work/ps" bash infra/scripts/pubsub.sh start </dev/null | grep '^export')"; fi
declare -A wake=([local]=local [listen]="$DATABASE_URL" [pubsub]="pubsub://sluice-bench/wake-$$")
declare -A port pid
for w in local listen pubsub; do
  port[$w]="$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')"
  "$bin" serve --addr "127.0.0.1:${port[$w]}" --store "$DATABASE_URL" --wakeups "${wake[$w]}" --auth none >"$out/serve-$w.log" 2>&1 &
  pid[$w]=$!; pids+=("$!")
done
for w in local listen pubsub; do
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:${port[$w]}/healthz" >/dev/null && break; sleep 0.1; done
done
for r in $(seq "${ROUNDS:-2}"); do
  for w in local listen pubsub; do
    echo "=== $w, round $r" >&2
    # shellcheck disable=SC2086
    "$bin" bench --endpoint "http://127.0.0.1:${port[$w]}" --server-pid "${pid[$w]}" --label "$w-$r" \
      --duration "${BENCH_DURATION:-15s}" ${BENCH_FLAGS:---producers 8 --consumers 8} --json >"$out/$w-$r.json" 2>"$out/$w-$r.txt"
  done
done
"$bin" bench --table "$out"/*.json
