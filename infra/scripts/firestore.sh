#!/usr/bin/env bash
# Starts and stops a throwaway Firestore emulator for tests.
#
#   eval "$(infra/scripts/firestore.sh start)"   # sets FIRESTORE_EMULATOR_HOST (and SLUICE_FIRESTORE_DIR)
#   go test ./stores/firestore/...
#   infra/scripts/firestore.sh stop              # or: stop <dir>
#
#   start [dir]  When FIRESTORE_EMULATOR_HOST is already set, prints it back
#                and starts nothing. Otherwise starts Google's Cloud Firestore
#                emulator (native mode) on a free 127.0.0.1 port, its pid,
#                port and log in dir (default $SLUICE_FIRESTORE_DIR, else
#                /tmp/sluice-firestore-<uid>), waits until it answers and
#                prints `export FIRESTORE_EMULATOR_HOST=127.0.0.1:PORT` on
#                stdout. Idempotent: when the emulator of dir already runs it
#                only prints the exports.
#   stop [dir]   Stops the emulator of dir and removes dir. The emulator keeps
#                its documents in memory, so they go with it. Idempotent.
#   status [dir] Exit 0 when the emulator of dir is running and answers.
#
# Everything but the export lines goes to stderr. The emulator runs offline:
# the jar is started with java directly (not `gcloud emulators firestore
# start`, which may look for updates). It is found in $FIRESTORE_EMULATOR_DIR,
# else next to gcloud, else in /usr/lib/google-cloud-sdk; when it is missing
# the Debian package google-cloud-cli-firestore-emulator is installed, which
# needs Google's apt repository (packages.cloud.google.com) configured and
# reachable. Java comes from Debian's default-jre-headless when missing.
set -euo pipefail

log() { echo "firestore.sh: $*" >&2; }
die() { log "$*"; exit 1; }

cmd="${1:-start}"
dir="${2:-${SLUICE_FIRESTORE_DIR:-/tmp/sluice-firestore-$(id -u)}}"
emu_pkg="google-cloud-cli-firestore-emulator"
jar_name="cloud-firestore-emulator.jar"
main_class="com.google.cloud.datastore.emulator.firestore.CloudFirestore"

# find_jar prints the emulator jar's path.
find_jar() {
  local d g
  local dirs=()
  [ -n "${FIRESTORE_EMULATOR_DIR:-}" ] && dirs+=("$FIRESTORE_EMULATOR_DIR")
  if g="$(command -v gcloud 2>/dev/null)"; then
    g="$(readlink -f "$g")"
    dirs+=("$(dirname "$(dirname "$g")")/platform/cloud-firestore-emulator")
  fi
  dirs+=(/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator /usr/share/google-cloud-sdk/platform/cloud-firestore-emulator)
  for d in "${dirs[@]}"; do
    if [ -f "$d/$jar_name" ]; then echo "$d/$jar_name"; return 0; fi
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
  need_root "the Firestore emulator" "install the $emu_pkg package (or set FIRESTORE_EMULATOR_DIR to the directory holding $jar_name)"
  command -v apt-get >/dev/null 2>&1 || die "the Firestore emulator is missing and there is no apt-get to install $emu_pkg"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt_has "$emu_pkg"; then
    log "apt does not know $emu_pkg; apt-get update"
    apt-get update -q >&2 || true
  fi
  apt_has "$emu_pkg" ||
    die "the Firestore emulator is missing, and apt cannot install $emu_pkg: Google's apt repository (deb https://packages.cloud.google.com/apt cloud-sdk main) is not configured or not reachable. Configure it, or install the emulator (gcloud components install cloud-firestore-emulator) and set FIRESTORE_EMULATOR_DIR to the directory holding $jar_name"
  log "installing $emu_pkg"
  apt-get install -y -q "$emu_pkg" >&2 || die "apt-get install $emu_pkg failed"
}

install_java() {
  need_root "java" "install a Java runtime (17 or newer), e.g. Debian's default-jre-headless"
  export DEBIAN_FRONTEND=noninteractive
  log "installing default-jre-headless"
  if ! apt-get install -y -q default-jre-headless >&2; then
    apt-get update -q >&2
    apt-get install -y -q default-jre-headless >&2
  fi
}

port_free() {
  # Nothing answers on 127.0.0.1:$1.
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# answers: the emulator on port $1 replies 200 "Ok" to GET / (its health
# page). It keeps the connection open, so the reply is read line by line.
answers() {
  (
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
    IFS= read -r -t 2 line <&3 || exit 1
    case "$line" in "HTTP/1."*" 200 "*) ;; *) exit 1 ;; esac
    while IFS= read -r -t 2 line <&3; do [ "$line" = $'\r' ] && break; done
    IFS= read -r -t 2 line <&3 && [ "${line%$'\r'}" = Ok ]
  ) 2>/dev/null
}

# alive: the pid in dir is our emulator (not a recycled pid).
alive() {
  [ -f "$dir/pid" ] || return 1
  local pid
  pid="$(cat "$dir/pid")"
  kill -0 "$pid" 2>/dev/null || return 1
  grep -q "$main_class" "/proc/$pid/cmdline" 2>/dev/null
}

running() {
  [ -f "$dir/port" ] && alive && answers "$(cat "$dir/port")"
}

print_env() {
  echo "export FIRESTORE_EMULATOR_HOST=127.0.0.1:$(cat "$dir/port")"
  echo "export SLUICE_FIRESTORE_DIR='$dir'"
}

# kill_emulator stops the process group the emulator leads (java and any
# children), politely first.
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
  if [ -n "${FIRESTORE_EMULATOR_HOST:-}" ]; then
    log "FIRESTORE_EMULATOR_HOST is set; starting nothing"
    echo "export FIRESTORE_EMULATOR_HOST=$FIRESTORE_EMULATOR_HOST"
    return 0
  fi
  if running; then
    log "already running in $dir"
    print_env
    return 0
  fi
  local jar
  jar="$(find_jar)" || { install_emulator; jar="$(find_jar)" || die "no $jar_name after installing $emu_pkg"; }
  command -v java >/dev/null 2>&1 || { install_java; command -v java >/dev/null 2>&1 || die "no java after install"; }
  mkdir -p "$dir"
  # A half-dead emulator of an earlier start (not answering) goes first.
  kill_emulator
  local tries=0 port pid deadline
  while :; do
    tries=$((tries + 1))
    [ "$tries" -le 10 ] || { tail -n 30 "$dir/emulator.log" >&2 2>/dev/null || true; die "could not start the Firestore emulator (log: $dir/emulator.log)"; }
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    port_free "$port" || continue
    echo "$port" >"$dir/port"
    # setsid: its own process group, so that stop ends all of it, and the
    # emulator outlives this script. No stdin: it must not wait on a tty.
    setsid java -Duser.language=en -cp "$jar" "$main_class" \
      --host 127.0.0.1 --port "$port" </dev/null >"$dir/emulator.log" 2>&1 &
    pid=$!
    echo "$pid" >"$dir/pid"
    # The JVM and the jar take a few seconds to come up.
    deadline=$((SECONDS + 60))
    while [ "$SECONDS" -lt "$deadline" ]; do
      if answers "$port"; then
        log "ready on 127.0.0.1:$port ($dir)"
        print_env
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$dir/emulator.log" >&2 2>/dev/null || true
      kill_emulator
      die "the Firestore emulator did not answer within 60s (log: $dir/emulator.log)"
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
