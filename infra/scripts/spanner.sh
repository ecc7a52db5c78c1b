#!/usr/bin/env bash
# Starts and stops a throwaway Cloud Spanner emulator for tests.
#
#   eval "$(infra/scripts/spanner.sh start)"   # sets SPANNER_EMULATOR_HOST (and SLUICE_SPANNER_DIR)
#   go test ./stores/spanner/...
#   infra/scripts/spanner.sh stop              # or: stop <dir>
#
#   start [dir]  When SPANNER_EMULATOR_HOST is already set, prints it back
#                and starts nothing. Otherwise starts Google's Cloud Spanner
#                emulator (the native emulator_main, gRPC only) on a free
#                127.0.0.1 port, its pid, port and log in dir (default
#                $SLUICE_SPANNER_DIR, else /tmp/sluice-spanner-<uid>), waits
#                until it answers and prints
#                `export SPANNER_EMULATOR_HOST=127.0.0.1:PORT` on stdout.
#                Idempotent: when the emulator of dir already runs it only
#                prints the exports.
#   stop [dir]   Stops the emulator of dir and removes dir. The emulator keeps
#                instances and databases in memory, so they go with it.
#                Idempotent.
#   status [dir] Exit 0 when the emulator of dir is running and answers.
#
# Everything but the export lines goes to stderr. The emulator runs offline:
# emulator_main is started directly (not `gcloud emulators spanner start`,
# which may look for updates or use docker). It is found in
# $SPANNER_EMULATOR_DIR (the directory holding emulator_main), else next to
# gcloud, else in /usr/lib/google-cloud-sdk; when it is missing the Debian
# package google-cloud-cli-spanner-emulator is installed, which needs
# Google's apt repository (packages.cloud.google.com) configured and
# reachable. It needs no java.
set -euo pipefail

log() { echo "spanner.sh: $*" >&2; }
die() { log "$*"; exit 1; }

cmd="${1:-start}"
dir="${2:-${SLUICE_SPANNER_DIR:-/tmp/sluice-spanner-$(id -u)}}"
emu_pkg="google-cloud-cli-spanner-emulator"
bin_name="emulator_main"

# find_bin prints the emulator binary's path.
find_bin() {
  local d g
  local dirs=()
  [ -n "${SPANNER_EMULATOR_DIR:-}" ] && dirs+=("$SPANNER_EMULATOR_DIR")
  if g="$(command -v gcloud 2>/dev/null)"; then
    g="$(readlink -f "$g")"
    dirs+=("$(dirname "$g")/cloud_spanner_emulator")
  fi
  dirs+=(/usr/lib/google-cloud-sdk/bin/cloud_spanner_emulator /usr/share/google-cloud-sdk/bin/cloud_spanner_emulator)
  for d in "${dirs[@]}"; do
    if [ -x "$d/$bin_name" ]; then echo "$d/$bin_name"; return 0; fi
  done
  return 1
}

need_root() {
  [ "$(id -u)" = 0 ] || die "$1 is missing and installing it needs root: $2"
}

# apt_has says whether apt knows an installable candidate for a package.
apt_has() {
  local c
  c="$(apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: *//p')"
  [ -n "$c" ] && [ "$c" != "(none)" ]
}

install_emulator() {
  need_root "the Spanner emulator" "install the $emu_pkg package (or set SPANNER_EMULATOR_DIR to the directory holding $bin_name)"
  command -v apt-get >/dev/null 2>&1 || die "the Spanner emulator is missing and there is no apt-get to install $emu_pkg"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt_has "$emu_pkg"; then
    log "apt does not know $emu_pkg; apt-get update"
    apt-get update -q >&2 || true
  fi
  apt_has "$emu_pkg" ||
    die "the Spanner emulator is missing, and apt cannot install $emu_pkg: Google's apt repository (deb https://packages.cloud.google.com/apt cloud-sdk main) is not configured or not reachable. Configure it, or install the emulator (gcloud components install cloud-spanner-emulator) and set SPANNER_EMULATOR_DIR to the directory holding $bin_name"
  log "installing $emu_pkg"
  apt-get install -y -q "$emu_pkg" >&2 || die "apt-get install $emu_pkg failed"
}

port_free() {
  # Nothing answers on 127.0.0.1:$1.
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# answers: the emulator of dir logged that it serves, and its port accepts
# connections (it speaks gRPC only, which bash cannot; the log line comes
# once the server is up).
answers() {
  grep -q "Server address: 127.0.0.1:$1" "$dir/emulator.log" 2>/dev/null &&
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# alive: the pid in dir is our emulator (not a recycled pid).
alive() {
  [ -f "$dir/pid" ] || return 1
  local pid
  pid="$(cat "$dir/pid")"
  kill -0 "$pid" 2>/dev/null || return 1
  grep -q "$bin_name" "/proc/$pid/cmdline" 2>/dev/null
}

running() {
  [ -f "$dir/port" ] && alive && answers "$(cat "$dir/port")"
}

print_env() {
  echo "export SPANNER_EMULATOR_HOST=127.0.0.1:$(cat "$dir/port")"
  echo "export SLUICE_SPANNER_DIR='$dir'"
}

# kill_emulator stops the process group the emulator leads, politely first.
kill_emulator() {
  [ -f "$dir/pid" ] || return 0
  local pid i
  pid="$(cat "$dir/pid")"
  alive || { rm -f "$dir/pid"; return 0; }
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "emulator $pid ignored SIGTERM; SIGKILL"
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/pid"
}

start() {
  if [ -n "${SPANNER_EMULATOR_HOST:-}" ]; then
    log "SPANNER_EMULATOR_HOST is set; starting nothing"
    echo "export SPANNER_EMULATOR_HOST=$SPANNER_EMULATOR_HOST"
    return 0
  fi
  if running; then
    log "already running in $dir"
    print_env
    return 0
  fi
  local bin
  bin="$(find_bin)" || { install_emulator; bin="$(find_bin)" || die "no $bin_name after installing $emu_pkg"; }
  mkdir -p "$dir"
  # A half-dead emulator of an earlier start (not answering) goes first.
  kill_emulator
  local tries=0 port pid deadline
  while :; do
    tries=$((tries + 1))
    [ "$tries" -le 10 ] || { tail -n 30 "$dir/emulator.log" >&2 2>/dev/null || true; die "could not start the Spanner emulator (log: $dir/emulator.log)"; }
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    port_free "$port" || continue
    echo "$port" >"$dir/port"
    # setsid: its own process group, so that stop ends all of it, and the
    # emulator outlives this script. No stdin: it must not wait on a tty.
    setsid "$bin" --host_port "127.0.0.1:$port" </dev/null >"$dir/emulator.log" 2>&1 &
    pid=$!
    echo "$pid" >"$dir/pid"
    # The native emulator is up in well under a second.
    deadline=$((SECONDS + 30))
    while [ "$SECONDS" -lt "$deadline" ]; do
      if answers "$port"; then
        log "ready on 127.0.0.1:$port ($dir)"
        print_env
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$dir/emulator.log" >&2 2>/dev/null || true
      kill_emulator
      die "the Spanner emulator did not answer within 30s (log: $dir/emulator.log)"
    fi
    log "emulator on port $port exited; retrying"
    tail -n 5 "$dir/emulator.log" >&2 2>/dev/null || true
    rm -f "$dir/pid"
  done
}

stop() {
  if [ ! -d "$dir" ]; then
    log "nothing in $dir"
    return 0
  fi
  kill_emulator
  rm -rf "$dir"
  log "stopped and removed $dir"
}

case "$cmd" in
start) start ;;
stop) stop ;;
status) running ;;
*) die "usage: $0 start|stop|status [dir]" ;;
esac
