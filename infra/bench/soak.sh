#!/usr/bin/env bash
# make bench-soak: whether the PostgreSQL store holds its pace under a long
# steady load. Short windows cannot show it: a queue table gathers the
# dead rows of deleted messages until a vacuum removes them, autovacuum
# looks at a database at most once a minute, and the cost of what it left
# shows over minutes. For each workload, one run of DURATION against a
# throwaway cluster (pinned as bench-lifecycle pins it, and settled after
# the workload before), reported in parts of EVERY (lifecycles/s), with
# the heap pages of `messages` sampled as it goes. Results: .tmp/bench-soak/*.json and *.pages, the summary in
# .tmp/bench-soak.txt.
#
#   DURATION (default 300s), EVERY (10s), WORKLOADS ("std-b10 fifo-b10";
#   also std-b1, fifo-b1), FLAGS, LOAD_CPUS, SERVER_CPUS override;
#   RESIDENT=N first fills a second queue of the workload's kind with N
#   messages that stay unread through the window (a deep backlog in the
#   same tables: sluice bench --resident; the pages sampled include it);
#   SERVER_BIN (default bin/sluice) is the server, e.g. another build to
#   compare (the load generator is bin/sluice).
set -euo pipefail
cd "$(dirname "$0")/../.."

DURATION=${DURATION:-300s}
EVERY=${EVERY:-10s}
WORKLOADS=${WORKLOADS:-std-b10 fifo-b10}
RESIDENT=${RESIDENT:-0}
FLAGS=${FLAGS:---producers 8 --consumers 8 --groups 64 --size 1024}
LOAD_CPUS=${LOAD_CPUS:-0}
SERVER_CPUS=${SERVER_CPUS:-1}
bin=bin/sluice
SERVER_BIN=${SERVER_BIN:-$bin}

out=.tmp/bench-soak
rm -rf "$out"
mkdir -p "$out"
sampler=""
on_exit() { [ -z "$sampler" ] || kill "$sampler" 2>/dev/null; }
# shellcheck source=infra/bench/pinned.sh
. infra/bench/pinned.sh
start_pg

status=0
for wl in $WORKLOADS; do
  case "$wl" in
    fifo-b1) args=(--fifo) ;;
    std-b1) args=() ;;
    fifo-b10) args=(--fifo --batch) ;;
    std-b10) args=(--batch) ;;
    *) echo "bench-soak: unknown workload $wl" >&2; exit 2 ;;
  esac
  # Each workload on a database of its own, so one's dead rows do not
  # weigh on the next.
  db="soak_${wl//-/_}"
  psql -q -X "$DATABASE_URL" -c "CREATE DATABASE $db"
  settle
  dsn="$(printf '%s' "$DATABASE_URL" | sed -E "s#/[^/?]*(\\?|\$)#/$db\\1#")"
  pages="$out/$wl.pages"
  (
    while sleep "${EVERY%s}"; do
      psql -X -At "$dsn" -c "SELECT to_char(now(), 'HH24:MI:SS'), coalesce(pg_relation_size(to_regclass('messages')), 0) / 8192" 2>/dev/null || true
    done >"$pages"
  ) &
  sampler=$!
  echo "=== $wl: sluice bench $FLAGS --duration $DURATION --every $EVERY --resident $RESIDENT ${args[*]} (server: $SERVER_BIN)"
  if ! taskset -c "$LOAD_CPUS" "$bin" bench --label "soak/$wl" --spawn "$dsn" --server-bin "$SERVER_BIN" \
    --server-cpus "$SERVER_CPUS" --pg-stats "$dsn" --duration "$DURATION" --every "$EVERY" \
    --resident "$RESIDENT" $FLAGS "${args[@]}" --json >"$out/$wl.json" 2>"$out/$wl.log"; then
    echo "=== $wl: FAILED (see $out/$wl.log)"
    status=1
  fi
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  sampler=""
done

python3 - "$out" $WORKLOADS <<'PY' | tee .tmp/bench-soak.txt
import json, statistics, sys
out, wls = sys.argv[1], sys.argv[2:]
print("| workload | lifecycles/s | slowest / median / fastest part | PostgreSQL CPU per lifecycle | messages heap pages, most / last |")
print("|---|--:|--:|--:|--:|")
for wl in wls:
    try:
        d = json.load(open(f"{out}/{wl}.json"))
    except (OSError, ValueError):
        print(f"| {wl} | (no result) | | | |")
        continue
    rates = sorted(iv["lifecycles_per_sec"] for iv in d.get("intervals", []))
    n = d["lifecycles_per_sec"]
    pg = d.get("pg") or {}
    cpu = f"{pg['cpu_sec'] / d['window_sec'] / n * 1e6:.0f} µs" if pg.get("cpu_sec") and n else "–"
    pages = [int(l.split("|")[1]) for l in open(f"{out}/{wl}.pages") if "|" in l]
    pace = f"{rates[0]:.0f} / {statistics.median(rates):.0f} / {rates[-1]:.0f}" if rates else "–"
    heap = f"{max(pages):,} / {pages[-1]:,}" if pages else "–"
    print(f"| {wl} | {n:,.0f} | {pace} | {cpu} | {heap} |")
PY
exit "$status"
