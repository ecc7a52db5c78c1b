#!/usr/bin/env bash
# Starts and stops a throwaway PostgreSQL for tests.
#
#   eval "$(infra/scripts/postgres.sh start)"   # sets DATABASE_URL (and SLUICE_PG_DIR)
#   go test ./stores/pgstore/...
#   infra/scripts/postgres.sh stop              # or: stop <dir>
#
#   start [dir]  When DATABASE_URL is already set, prints it back and starts
#                nothing. Otherwise initialises a cluster in dir (default
#                $SLUICE_PG_DIR, else /tmp/sluice-postgres-<uid>) unless one is
#                there, starts it on a free loopback port with its unix socket
#                inside dir, waits until it accepts connections and prints
#                `export DATABASE_URL=...` on stdout. Idempotent: when the
#                cluster in dir is already running it only prints the URL.
#   stop [dir]   Stops the cluster in dir (fast shutdown) and removes dir.
#                Idempotent.
#   status [dir] Exit 0 when the cluster in dir is running.
#   restart [dir] Restarts the running cluster in dir (pg_ctl restart -m fast:
#                clients are disconnected) on the same port and options,
#                waits until it accepts connections again; fails when it
#                does not run. For tests of what survives a server restart.
#   crash [dir]  As restart, but stops the server as a crash would
#                (pg_ctl restart -m immediate: no shutdown checkpoint), so
#                that it starts with crash recovery, which empties unlogged
#                tables.
#
# Everything but the export lines goes to stderr. The server runs as a
# non-root user (initdb refuses root): the current user when it is not root,
# otherwise the `postgres` system user (created if missing). fsync stays on:
# durability is what a queue store is tested for. PostgreSQL is installed from
# Debian's packages when no server binaries are found.
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }
die() { log "$*"; exit 1; }

cmd="${1:-start}"
dir="${2:-${SLUICE_PG_DIR:-/tmp/sluice-postgres-$(id -u)}}"
db_user="sluice"

find_bindir() {
  local d
  if [ -n "${PG_BINDIR:-}" ] && [ -x "$PG_BINDIR/postgres" ]; then
    echo "$PG_BINDIR"; return 0
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4,4 -n -r); do
    if [ -x "$d/postgres" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
      echo "$d"; return 0
    fi
  done
  if command -v pg_config >/dev/null 2>&1; then
    d="$(pg_config --bindir)"
    if [ -x "$d/postgres" ] && [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
  fi
  return 1
}

install_postgres() {
  [ "$(id -u)" = 0 ] || die "PostgreSQL server binaries not found and not root: install the postgresql package"
  log "installing PostgreSQL from Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q postgresql >&2; then
    apt-get update -q >&2
    apt-get install -y -q postgresql >&2
  fi
}

# run_as runs a command as the cluster's owner.
run_as() {
  if [ "$owner" = "$(id -un)" ]; then
    "$@"
  elif command -v runuser >/dev/null 2>&1; then
    runuser -u "$owner" -- "$@"
  else
    su -s /bin/sh "$owner" -c "$(printf '%q ' "$@")"
  fi
}

pick_owner() {
  if [ "$(id -u)" != 0 ]; then
    owner="$(id -un)"
    return
  fi
  owner=postgres
  if ! id "$owner" >/dev/null 2>&1; then
    log "creating system user $owner"
    useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/sh "$owner" >&2 ||
      adduser --system --group --home /var/lib/postgresql --shell /bin/sh "$owner" >&2
  fi
}

port_free() {
  # Nothing answers on 127.0.0.1:$1.
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

url() {
  echo "postgres://${db_user}@127.0.0.1:$(cat "$dir/port")/postgres?sslmode=disable"
}

print_env() {
  echo "export DATABASE_URL='$(url)'"
  echo "export SLUICE_PG_DIR='$dir'"
}

running() {
  [ -f "$dir/port" ] && [ -f "$dir/data/postmaster.pid" ] || return 1
  "$bindir/pg_isready" -q -h 127.0.0.1 -p "$(cat "$dir/port")" -U "$db_user" -d postgres -t 2 >/dev/null 2>&1
}

start() {
  if [ -n "${DATABASE_URL:-}" ]; then
    log "DATABASE_URL is set; starting nothing"
    echo "export DATABASE_URL='$DATABASE_URL'"
    return 0
  fi
  bindir="$(find_bindir)" || { install_postgres; bindir="$(find_bindir)" || die "no PostgreSQL server binaries after install"; }
  pick_owner
  if running; then
    log "already running in $dir"
    print_env
    return 0
  fi
  mkdir -p "$dir"
  chmod 700 "$dir"
  chown "$owner" "$dir" 2>/dev/null || true
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    rm -rf "$dir/data"
    log "initdb in $dir/data"
    run_as "$bindir/initdb" -D "$dir/data" -U "$db_user" --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
      run_as "$bindir/initdb" -D "$dir/data" -U "$db_user" --auth=trust --encoding=UTF8 --no-locale >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; die "initdb failed"; }
  fi
  # A stale pid file from a killed server would block the start.
  if [ -f "$dir/data/postmaster.pid" ] && ! run_as "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    rm -f "$dir/data/postmaster.pid"
  fi
  local tries=0 port
  while :; do
    tries=$((tries + 1))
    if [ "$tries" -gt 20 ]; then
      tail -n 30 "$dir/postgres.log" >&2 2>/dev/null || true
      die "could not start PostgreSQL (log: $dir/postgres.log)"
    fi
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    port_free "$port" || continue
    echo "$port" >"$dir/port"
    chown "$owner" "$dir/port" 2>/dev/null || true
    # fsync stays on (the default); max_connections leaves room for
    # parallel tests, each with a pool and a listener.
    if run_as "$bindir/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 start \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir -c fsync=on -c max_connections=500 -c shared_buffers=128MB" >&2; then
      break
    fi
    log "start on port $port failed; retrying"
    tail -n 5 "$dir/postgres.log" >&2 2>/dev/null || true
  done
  local i
  for i in $(seq 1 120); do
    if "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" -U "$db_user" -d postgres -t 1 >/dev/null 2>&1; then
      log "ready on 127.0.0.1:$port ($dir)"
      print_env
      return 0
    fi
    sleep 0.5
  done
  tail -n 30 "$dir/postgres.log" >&2 2>/dev/null || true
  die "PostgreSQL did not become ready (log: $dir/postgres.log)"
}

stop() {
  if [ ! -d "$dir" ]; then
    log "nothing in $dir"
    return 0
  fi
  if [ -f "$dir/data/postmaster.pid" ]; then
    bindir="$(find_bindir)" || die "no PostgreSQL binaries to stop the cluster in $dir"
    pick_owner
    owner="$(stat -c %U "$dir/data" 2>/dev/null || echo "$owner")"
    run_as "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >&2 || true
  fi
  rm -rf "$dir"
  log "stopped and removed $dir"
}

# restart [mode]: pg_ctl's shutdown mode, fast unless given.
restart() {
  local mode="${1:-fast}"
  bindir="$(find_bindir)" || die "no PostgreSQL binaries"
  running || die "no running cluster in $dir"
  owner="$(stat -c %U "$dir/data")"
  local port
  port="$(cat "$dir/port")"
  log "restarting the cluster in $dir ($mode)"
  # Without -o, pg_ctl restart reuses the options of the last start
  # (postmaster.opts): same port, socket directory and settings.
  run_as "$bindir/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -m "$mode" -w -t 60 restart >&2 ||
    { tail -n 30 "$dir/postgres.log" >&2 2>/dev/null || true; die "restart failed (log: $dir/postgres.log)"; }
  local i
  for i in $(seq 1 120); do
    if "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" -U "$db_user" -d postgres -t 1 >/dev/null 2>&1; then
      log "ready again on 127.0.0.1:$port"
      return 0
    fi
    sleep 0.5
  done
  tail -n 30 "$dir/postgres.log" >&2 2>/dev/null || true
  die "PostgreSQL did not become ready after the restart (log: $dir/postgres.log)"
}

case "$cmd" in
start) start ;;
stop) stop ;;
restart) restart ;;
crash) restart immediate ;;
status)
  bindir="$(find_bindir)" || exit 1
  running
  ;;
*) die "usage: $0 start|stop|status|restart|crash [dir]" ;;
esac
