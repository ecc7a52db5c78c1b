#!/usr/bin/env bash
# make bench-lifecycle: what one message's lifecycle (send, receive,
# delete) costs each system, in server CPU, PostgreSQL CPU, WAL bytes and
# commits, with the load generator pinned to LOAD_CPUS and the servers and
# PostgreSQL to SERVER_CPUS, so that the load generator's own work does
# not land in what is measured. Systems, run in turn within each round and
# workload so that the machine's drift touches them alike:
#   mem        sluice serve --store mem://
#   embedded   sluice serve --store file://… (fsync on every commit)
#   postgres   sluice serve --store postgres://… (a throwaway cluster)
#   sql-queue  a pgmq-shaped SQL queue on the same cluster (the yardstick)
#   mem@embedded, mem@postgres
#              mem:// held to the rate the embedded or PostgreSQL store
#              reached just before: a server's CPU per request falls as
#              its load rises, so these compare the stores' own work
#   goaws      the in-memory peer goaws, over the Query protocol (when
#              the load generator speaks it and goaws builds from the Go
#              module proxy), beside mem-query: sluice on mem:// over the
#              same protocol
# Workloads: fifo-b1, std-b1, fifo-b10, std-b10 (b10: batches of 10).
# Before each run of a store that writes to disk, what the runs before it
# wrote is flushed (settle): otherwise its write-back lands in that run,
# whose commits wait on the same disk.
# Then, unless SHORT, a FIFO long poll at half each store's FIFO peak, for
# the pickup p99, in as many rounds. Results: .tmp/bench-lifecycle/*.json, the table in
# .tmp/bench-lifecycle.txt.
#
#   SHORT=1     one round of 3 s windows, no long polls (about two minutes)
#   WORKLOADS   some of the four (the long polls need fifo-b1)
#   ROUNDS, DURATION, WARMUP, FLAGS, LOAD_CPUS, SERVER_CPUS override.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ -n "${SHORT:-}" ]; then
  ROUNDS=${ROUNDS:-1} DURATION=${DURATION:-3s} WARMUP=${WARMUP:-1s} LONGPOLL=${LONGPOLL:-0}
fi
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-15s}
WARMUP=${WARMUP:-3s}
LONGPOLL=${LONGPOLL:-1}
WORKLOADS=${WORKLOADS:-fifo-b1 std-b1 fifo-b10 std-b10}
FLAGS=${FLAGS:---producers 8 --consumers 8 --groups 64 --size 1024}
LOAD_CPUS=${LOAD_CPUS:-0}
SERVER_CPUS=${SERVER_CPUS:-1}
GOAWS_VERSION=v0.4.5

bin=bin/sluice
out=.tmp/bench-lifecycle
rm -rf "$out"
mkdir -p "$out"
goaws_pid=""
on_exit() { [ -z "$goaws_pid" ] || kill "$goaws_pid" 2>/dev/null; }
# shellcheck source=infra/bench/pinned.sh
. infra/bench/pinned.sh
start_pg

# goaws: built once into the cache, when the load generator can speak its
# protocol (Query) and the module proxy has it.
goaws=""
if "$bin" bench --help 2>&1 | grep -q -- '--protocol'; then
  gdir="${XDG_CACHE_HOME:-$HOME/.cache}/sluice/goaws-$GOAWS_VERSION"
  if [ ! -x "$gdir/cmd" ]; then
    echo "=== building goaws $GOAWS_VERSION into $gdir"
    mkdir -p "$gdir"
    GOBIN="$gdir" go install "github.com/Admiral-Piett/goaws/app/cmd@$GOAWS_VERSION" >&2 || echo "bench-lifecycle: could not build goaws: running without it" >&2
  fi
  [ -x "$gdir/cmd" ] && goaws="$gdir/cmd"
else
  echo "bench-lifecycle: this sluice bench has no --protocol query: running without goaws" >&2
fi

n=0
status=0
one() {
  local label="$1"
  shift
  n=$((n + 1))
  local file
  file="$out/$(printf %03d "$n")-${label//\//-}.json"
  echo "=== $label: sluice bench $FLAGS --duration $DURATION $*"
  if ! taskset -c "$LOAD_CPUS" "$bin" bench --label "$label" --duration "$DURATION" --warmup "$WARMUP" $FLAGS --json "$@" >"$file"; then
    case "$label" in
      # The peer's own failures (goaws breaks FIFO order in batches) are
      # marked in the table, not failures of this run.
      goaws/*) echo "=== $label: checks failed (goaws's)" ;;
      *) echo "=== $label: FAILED"; status=1 ;;
    esac
  fi
  [ -s "$file" ] || rm -f "$file"
  last="$file"
}
# paced LABEL ARGS...: mem:// at the lifecycles a second of the run before.
paced() {
  local label="$1" rate
  shift
  rate="$(awk -F': ' '/^  "lifecycles_per_sec"/ { gsub(/,/, "", $2); printf "%.0f", $2 }' "$last" 2>/dev/null)"
  if [ -z "$rate" ] || [ "$rate" -lt 1 ]; then echo "=== $label: no rate to hold"; status=1; return; fi
  one "$label" --spawn mem:// --server-cpus "$SERVER_CPUS" --rate "$rate" "$@"
}

start_goaws() {
  local port=$((20000 + RANDOM % 20000))
  cat >"$work/goaws.yaml" <<EOF
Local:
  Host: 127.0.0.1
  Port: $port
  Region: us-east-1
  AccountId: "100010001000"
  LogToFile: false
  EnableDuplicates: true
  QueueAttributeDefaults:
    VisibilityTimeout: 30
    ReceiveMessageWaitTimeSeconds: 0
    MaximumMessageSize: 262144
EOF
  taskset -c "$SERVER_CPUS" "$goaws" -config "$work/goaws.yaml" >"$work/goaws.log" 2>&1 &
  goaws_pid=$!
  for _ in $(seq 50); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    sleep 0.1
  done
  goaws_url="http://127.0.0.1:$port"
}
stop_goaws() { kill "$goaws_pid" 2>/dev/null || true; wait "$goaws_pid" 2>/dev/null || true; goaws_pid=""; }

for round in $(seq "$ROUNDS"); do
  for wl in $WORKLOADS; do
    args=()
    case "$wl" in fifo-*) args+=(--fifo) ;; esac
    case "$wl" in *-b10) args+=(--batch) ;; esac
    echo "=== round $round/$ROUNDS, $wl"
    one "mem/$wl" --spawn mem:// --server-cpus "$SERVER_CPUS" "${args[@]}"
    settle
    one "embedded/$wl" --spawn "file://$work/embedded-$n" --server-cpus "$SERVER_CPUS" "${args[@]}"
    paced "mem@embedded/$wl" "${args[@]}"
    settle
    one "postgres/$wl" --spawn "$pg" --server-cpus "$SERVER_CPUS" --pg-stats "$pg" "${args[@]}"
    paced "mem@postgres/$wl" "${args[@]}"
    case "$wl" in fifo-*)
      settle
      one "sql-queue/${wl#fifo-}" --sql-queue "$pg" "${args[@]}"
      ;;
    esac
    if [ -n "$goaws" ]; then
      # The yardstick of goaws is sluice on mem:// in goaws's protocol.
      one "mem-query/$wl" --spawn mem:// --server-cpus "$SERVER_CPUS" --protocol query "${args[@]}"
      start_goaws
      one "goaws/$wl" --endpoint "$goaws_url" --server-pid "$goaws_pid" --protocol query "${args[@]}"
      stop_goaws
    fi
  done
done

if [ "$LONGPOLL" = 1 ]; then
  # The long polls get a fresh cluster: the rounds leave the one they used
  # busy with their dead rows (autovacuum, checkpoints), which would land in
  # the pickup latency.
  bash infra/scripts/postgres.sh stop "$work/pg" >/dev/null
  start_pg
  # As many rounds as the others, interleaved, and the table takes their
  # median: a stall of the machine (of up to 100 ms here) then moves one
  # round's p99, not the figure.
  for r in $(seq 1 "$ROUNDS"); do
    for sys in mem embedded postgres; do
      peak="$(cat "$out"/*-"$sys"-fifo-b1.json 2>/dev/null | awk -F': ' '/^  "lifecycles_per_sec"/ { gsub(/,/, "", $2); print $2 }' | sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%.0f", v[int((NR + 1) / 2)] / 2 }')"
      if [ -z "$peak" ] || [ "$peak" -lt 1 ]; then echo "=== $sys/longpoll: no FIFO peak"; status=1; continue; fi
      case "$sys" in
        mem) store=mem:// ;;
        embedded) store="file://$work/embedded-lp-$r" ;;
        postgres) store="$pg" ;;
      esac
      settle
      one "$sys/longpoll" --spawn "$store" --server-cpus "$SERVER_CPUS" --fifo --long-poll --rate "$peak"
    done
  done
fi

{
  echo "make bench-lifecycle, $(date -u +%Y-%m-%dT%H:%M:%SZ): $(nproc) CPUs, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p'), $(go version | cut -d' ' -f3), $(psql -X -At "$pg" -c 'SHOW server_version' 2>/dev/null | cut -d' ' -f1)"
  echo "load generator on CPU $LOAD_CPUS, servers and PostgreSQL on CPU $SERVER_CPUS; $FLAGS, $ROUNDS round(s) of $DURATION after $WARMUP"
  echo
  "$bin" bench --lifecycle-table "$out"/*.json
} | tee .tmp/bench-lifecycle.txt
exit $status
