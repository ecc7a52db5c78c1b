#!/usr/bin/env bash
# make bench-pair: two builds of sluice under the same load at the same
# time, each on its own database of one throwaway PostgreSQL cluster, so
# that the machine's drift (up to 2x between runs here) touches both alike.
# The two load generators run on LOAD_CPUS, both servers and PostgreSQL on
# SERVER_CPUS. For each build it prints the CPU of its own PostgreSQL
# backends (found by application_name, read from /proc/PID/schedstat), of
# its server, and the WAL records written for its database's relations (by
# the database in their block references, pg_walinspect; commit records name
# no relation, and full-page images follow the checkpoints' timing, so both
# are left out), per lifecycle, and at the end the median of new / old per
# workload. Autovacuum's records land in one database or the other: read the
# WAL column's median, not its range. The load generator is the new build
# for both, so only the servers differ.
#
#   OLD=REV     the old build: a git revision (default HEAD~1), built in a
#               temporary worktree; the new build is the working tree
#   STORE       postgres (default), embedded (a file:// store of each build's
#               own) or mem: with the last two only the server's CPU is compared
#   ALONE=1     run the two builds of a pair one after the other, each alone
#               on the CPUs (old first), instead of at once: the deployment
#               each figure describes, at the cost of the drift between the two
#   PAIRS       pairs per workload (default 3)
#   WORKLOADS   of fifo-b1 std-b1 fifo-b10 std-b10 (default all four)
#   DURATION, WARMUP (seconds; default 8 and 2), FLAGS, LOAD_CPUS,
#   SERVER_CPUS override.
#
# The backends are sampled from one second into the measured window to one
# second before its end, and the window's lifecycles scaled to that span:
# the figure is per lifecycle of a steady run, alike for both builds.
set -euo pipefail
cd "$(dirname "$0")/../.."

OLD=${OLD:-HEAD~1}
PAIRS=${PAIRS:-3}
WORKLOADS=${WORKLOADS:-fifo-b1 std-b1 fifo-b10 std-b10}
DURATION=${DURATION:-8}
WARMUP=${WARMUP:-2}
FLAGS=${FLAGS:---producers 8 --consumers 8 --groups 64 --size 1024}
LOAD_CPUS=${LOAD_CPUS:-0}
SERVER_CPUS=${SERVER_CPUS:-1}
ALONE=${ALONE:-0}
if [ "$ALONE" = 1 ]; then sets=(old new); else sets=("old new"); fi
STORE=${STORE:-postgres}
case "$STORE" in postgres | embedded | mem) ;; *) echo "bench-pair: STORE is postgres, embedded or mem, not $STORE" >&2; exit 1 ;; esac
[ "$DURATION" -ge 4 ] || { echo "bench-pair: DURATION must be at least 4 (seconds)" >&2; exit 1; }

work="$(mktemp -d)"
chmod 755 "$work"
cleanup() {
  bash infra/scripts/postgres.sh stop "$work/pg" >/dev/null 2>&1 || true
  git worktree remove --force "$work/old-src" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "=== building old ($OLD) and new (the working tree)"
git worktree add --detach "$work/old-src" "$OLD" >/dev/null 2>&1
(cd "$work/old-src" && go build -o "$work/sluice-old" ./functions/cmd/sluice)
go build -o "$work/sluice-new" ./functions/cmd/sluice

echo "=== infra/scripts/postgres.sh start (in $work/pg)"
eval "$(env -u DATABASE_URL bash infra/scripts/postgres.sh start "$work/pg" </dev/null)"
base="$DATABASE_URL"
postmaster="$(head -1 "$work/pg/data/postmaster.pid")"
for p in "$postmaster" $(pgrep -P "$postmaster"); do taskset -a -p -c "$SERVER_CPUS" "$p" >/dev/null; done
for b in old new; do psql -q -X "$base" -c "CREATE DATABASE pair_$b"; done
# pg_walinspect (PostgreSQL 15 and later) splits the WAL by database; without
# it the WAL column stays empty.
walinspect=1
psql -q -X "$base" -c "CREATE EXTENSION IF NOT EXISTS pg_walinspect" >/dev/null 2>&1 || { walinspect=0; echo "bench-pair: no pg_walinspect: no WAL figures" >&2; }
declare -A dboid=()
for b in old new; do dboid[$b]="$(psql -qAtX "$base" -c "SELECT oid FROM pg_database WHERE datname = 'pair_$b'")"; done
# The databases' URLs: the cluster's, with the database and application_name.
dsn() { printf '%s' "$base" | sed -E "s#/[^/?]*(\?|$)#/pair_$1\1#"; printf '&application_name=pair-%s' "$1"; }
case "$(dsn old)" in *'?'*) ;; *) echo "bench-pair: cannot make a database URL from $base" >&2; exit 1 ;; esac

# backend_ns BUILD: "pid ns" of each of the build's backends.
backend_ns() {
  local p
  for p in $(psql -qAtX "$base" -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'pair-$1'"); do
    [ -r "/proc/$p/schedstat" ] && awk -v p="$p" '{print p, $1}' "/proc/$p/schedstat"
  done
  true
}

flags_of() {
  case "$1" in
    fifo-b1) echo "--fifo" ;; std-b1) echo "" ;; fifo-b10) echo "--fifo --batch" ;; std-b10) echo "--batch" ;;
    *) echo "bench-pair: unknown workload $1" >&2; return 1 ;;
  esac
}

results="$work/results"
: >"$results"
status=0
for round in $(seq 1 "$PAIRS"); do
  for w in $WORKLOADS; do
    wf="$(flags_of "$w")"
    for set in "${sets[@]}"; do
      psql -q -X "$base" -c CHECKPOINT
      declare -A pid=()
      for b in $set; do
        case "$STORE" in
          postgres) store="$(dsn "$b")" ;;
          embedded) store="file://$work/embedded-$w-$round-$b" ;;
          mem) store="mem://" ;;
        esac
        # shellcheck disable=SC2086
        taskset -c "$LOAD_CPUS" "$work/sluice-new" bench --spawn "$store" --server-bin "$work/sluice-$b" --server-cpus "$SERVER_CPUS" \
          --label "$w-$b" --duration "${DURATION}s" --warmup "${WARMUP}s" $FLAGS $wf --json \
          >"$work/$w-$round-$b.json" 2>"$work/$w-$round-$b.err" &
        pid[$b]=$!
      done
      sleep $((WARMUP + 1))
      for b in $set; do backend_ns "$b" >"$work/c0-$b"; done
      lsn0="$(psql -qAtX "$base" -c "SELECT pg_current_wal_lsn()")"
      sleep $((DURATION - 2))
      for b in $set; do backend_ns "$b" >"$work/c1-$b"; done
      lsn1="$(psql -qAtX "$base" -c "SELECT pg_current_wal_lsn()")"
      for b in $set; do
        rc=0
        wait "${pid[$b]}" || rc=$?
        echo "$rc" >"$work/rc-$b"
      done
      # Each database's WAL between the two samples, as "oid bytes" lines.
      : >"$work/wal-${set// /-}"
      if [ "$walinspect" = 1 ] && [ "$STORE" = postgres ]; then
        psql -qAtX -F' ' "$base" -c "SELECT substring(block_ref FROM 'rel [0-9]+/([0-9]+)/'), sum(record_length - fpi_length)
          FROM pg_get_wal_records_info('$lsn0', '$lsn1') WHERE block_ref <> '' GROUP BY 1" >"$work/wal-${set// /-}" || true
      fi
      for b in $set; do cp "$work/wal-${set// /-}" "$work/wal-of-$b"; done
    done
    for b in old new; do
      rc="$(cat "$work/rc-$b")"
      # The bench exits 1 when a check failed (a message lost, FIFO order).
      if ! python3 - "$work" "$w" "$round" "$b" "$DURATION" "$rc" "${dboid[$b]}" >>"$results" <<'PY'
import json, sys
work, w, rnd, b, dur, rc, oid = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), sys.argv[6], sys.argv[7]
wal = dict(l.split() for l in open(f"{work}/wal-of-{b}") if len(l.split()) == 2).get(oid)
before = dict(l.split() for l in open(f"{work}/c0-{b}"))
ns = sum(int(v) - int(before.get(p, 0)) for p, v in (l.split() for l in open(f"{work}/c1-{b}")))
r = json.load(open(f"{work}/{w}-{rnd}-{b}.json"))
lc = r["lifecycles_per_sec"] * (dur - 2)
ok = rc == "0"
srv = r["cpu"]["server_cores"] * r["window_sec"] * 1e6 / r["lifecycles"]
# No backend found at the window's end (the sample's psql failed, or it
# found none): no figure, rather than a zero that would pass for one.
pg = f"{ns / 1000 / lc:.0f}" if ns > 0 else "-"
print(w, rnd, b, pg, f"{srv:.0f}", f"{r['lifecycles_per_sec']:.0f}", "ok" if ok else "FAILED",
      f"{int(wal) / lc:.0f}" if wal else "-", f"{r['pickup']['p99_ms']:.2f}")
PY
      then
        echo "=== $w pair $round, $b: no result (see $w-$round-$b.err)"; sed -n '1,20p' "$work/$w-$round-$b.err"; status=1
      fi
    done
    tail -2 "$results" | awk '{printf "=== %s pair %s %s: PostgreSQL backends %s µs/lc, server %s µs/lc, WAL %s B/lc, %s lc/s, pickup p99 %s ms, checks %s\n", $1, $2, $3, $4, $5, $8, $6, $9, $7}'
  done
done

echo
echo "bench-pair, $(date -u +%Y-%m-%dT%H:%M:%SZ): old $(git rev-parse --short "$OLD"), new the working tree at $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' with changes'); $STORE store$([ "$ALONE" = 1 ] && echo ', each build alone'); $FLAGS, ${DURATION}s windows"
python3 - "$results" "$WORKLOADS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
# Each column: the old and new builds' medians over the pairs, and the
# median of new / old taken pair by pair (the figure the drift cancels in).
print("| workload | pairs | PostgreSQL backends µs/lc: old → new, new ÷ old (range) | server µs/lc: old → new, new ÷ old (range) | WAL B/lc: old → new, new ÷ old (range) | pickup p99 ms: old → new |")
print("|---|--:|---|---|---|---|")
num = lambda x: float(x) if x != "-" else None
for w in sys.argv[2].split():
    by = {}
    for r in rows:
        if r[0] == w:
            by.setdefault(r[1], {})[r[2]] = dict(pg=num(r[3]), srv=float(r[4]), ok=r[6] == "ok", wal=num(r[7]), p99=float(r[8]))
    pairs = [v for v in by.values() if "old" in v and "new" in v and v["old"]["ok"] and v["new"]["ok"]]
    if not pairs:
        print(f"| {w} | 0 | | | | |")
        continue
    def col(k, fmt):
        both = [(v["old"][k], v["new"][k]) for v in pairs if v["old"][k] and v["new"][k]]
        if not both:
            return ""
        q = [n / o for o, n in both]
        med = lambda i: statistics.median(p[i] for p in both)
        return f"{med(0):{fmt}} → {med(1):{fmt}}, {statistics.median(q):.2f} ({min(q):.2f}–{max(q):.2f})"
    p99 = lambda b: statistics.median(v[b]["p99"] for v in pairs)
    print(f"| {w} | {len(pairs)} | {col('pg', ',.0f')} | {col('srv', ',.0f')} | {col('wal', ',.0f')} | {p99('old'):.1f} → {p99('new'):.1f} |")
PY
exit $status
