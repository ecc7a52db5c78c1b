# Sourced by the benchmarks that pin the load generator to LOAD_CPUS and
# the servers and PostgreSQL to SERVER_CPUS (lifecycle.sh, soak.sh), after
# they set SERVER_CPUS: a work directory ($work) removed on exit, with
# the throwaway PostgreSQL in it stopped (and first, when the script
# defines it, its own on_exit), start_pg and settle.

if [ "$(nproc)" -lt 2 ]; then
  echo "$(basename "$0"): needs two CPUs to pin the load generator apart from the servers" >&2
  exit 1
fi

work="$(mktemp -d)"
chmod 755 "$work"
cleanup() {
  if declare -F on_exit >/dev/null; then on_exit || true; fi
  bash infra/scripts/postgres.sh stop "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_pg starts a throwaway cluster in $work/pg, sets pg and
# DATABASE_URL to its URL, and pins it: the postmaster and the processes
# it already started; the backends it forks later inherit its set.
start_pg() {
  echo "=== infra/scripts/postgres.sh start (in $work/pg)"
  eval "$(env -u DATABASE_URL bash infra/scripts/postgres.sh start "$work/pg" </dev/null)"
  pg="$DATABASE_URL"
  local postmaster p
  postmaster="$(head -1 "$work/pg/data/postmaster.pid")"
  for p in "$postmaster" $(pgrep -P "$postmaster"); do
    taskset -a -p -c "$SERVER_CPUS" "$p" >/dev/null
  done
}

# settle writes out what the runs before wrote (PostgreSQL's dirty pages,
# then the page cache), so that its write-back does not land in the next
# run, whose commits wait on the same disk.
settle() {
  psql -q -X "$pg" -c CHECKPOINT >/dev/null
  sync
}
