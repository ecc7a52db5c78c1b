#!/usr/bin/env bash
# Starts and stops a throwaway Pub/Sub emulator for tests.
#
#   eval "$(infra/scripts/pubsub.sh start)"   # sets PUBSUB_EMULATOR_HOST (and SLUICE_PUBSUB_DIR)
#   go test ./stores/wake/pubsub/...
#   infra/scripts/pubsub.sh stop              # or: stop <dir>
#
#   start [dir]  When PUBSUB_EMULATOR_HOST is already set, prints it back and
#                starts nothing. Otherwise starts Google's Cloud Pub/Sub
#                emulator on a free 127.0.0.1 port, its pid, port and log in
#                dir (default $SLUICE_PUBSUB_DIR, else
#                /tmp/sluice-pubsub-<uid>), waits until it answers and prints
#                `export PUBSUB_EMULATOR_HOST=127.0.0.1:PORT` on stdout.
#                Idempotent: when the emulator of dir already runs it only
#                prints the exports.
#   stop [dir]   Stops the emulator of dir and removes dir. The emulator keeps
#                topics and subscriptions in memory, so they go with it.
#                Idempotent.
#   status [dir] Exit 0 when the emulator of dir is running and answers.
#
# Everything but the export lines goes to stderr. The emulator runs offline:
# its jar is started with java directly (not `gcloud beta emulators pubsub
# start`, which may look for updates). The jar is found in
# $PUBSUB_EMULATOR_DIR (the directory holding cloud-pubsub-emulator-*.jar),
# else next to gcloud, else in /usr/lib/google-cloud-sdk; when it is missing
# the Debian package google-cloud-cli-pubsub-emulator is installed, which
# needs Google's apt repository (packages.cloud.google.com) configured and
# reachable. Java comes from Debian's default-jre-headless when missing.
set -euo pipefail

log() { echo "pubsub.sh: $*" >&2; }
die() { log "$*"; exit 1; }

cmd="${1:-start}"
dir="${2:-${SLUICE_PUBSUB_DIR:-/tmp/sluice-pubsub-$(id -u)}}"
emu_pkg="google-cloud-cli-pubsub-emulator"
main_class="com.google.cloud.pubsub.testing.v1.Main"

# find_jar prints the emulator jar's path (its name carries a version).
find_jar() {
  local d g j
  local dirs=()
  [ -n "${PUBSUB_EMULATOR_DIR:-}" ] && dirs+=("$PUBSUB_EMULATOR_DIR")
  if g="$(command -v gcloud 2>/dev/null)"; then
    g="$(readlink -f "$g")"
    dirs+=("$(dirname "$(dirname "$g")")/platform/pubsub-emulator/lib")
  fi
  dirs+=(/usr/lib/google-cloud-sdk/platform/pubsub-emulator/lib /usr/share/google-cloud-sdk/platform/pubsub-emulator/lib)
  for d in "${dirs[@]}"; do
    for j in "$d"/cloud-pubsub-emulator-*.jar; do
      if [ -f "$j" ]; then echo "$j"; return 0; fi
    done
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
  need_root "the Pub/Sub emulator" "install the $emu_pkg package (or set PUBSUB_EMULATOR_DIR to the directory holding cloud-pubsub-emulator-*.jar)"
  command -v apt-get >/dev/null 2>&1 || die "the Pub/Sub emulator is missing and there is no apt-get to install $emu_pkg"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt_has "$emu_pkg"; then
    log "apt does not know $emu_pkg; apt-get update"
    apt-get update -q >&2 || true
  fi
  apt_has "$emu_pkg" ||
    die "the Pub/Sub emulator is missing, and apt cannot install $emu_pkg: Google's apt repository (deb https://packages.cloud.google.com/apt cloud-sdk main) is not configured or not reachable. Configure it, or install the emulator (gcloud components install pubsub-emulator) and set PUBSUB_EMULATOR_DIR to the directory holding its jar"
  log "installing $emu_pkg"
  apt-get install -y -q "$emu_pkg" >&2 || die "apt-get install $emu_pkg failed"
}

install_java() {
  need_root "java" "install a Java runtime (11 or newer), e.g. Debian's default-jre-headless"
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

# answers: the emulator on port $1 replies 200 to GET / (gRPC and HTTP
# share the port; the HTTP side answers "Ok").
answers() {
  (
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
    IFS= read -r -t 2 line <&3 || exit 1
    case "$line" in "HTTP/1."*" 200 "*) ;; *) exit 1 ;; esac
  ) 2>/dev/null
}

# alive: the pid in dir is our emulator (not a recycled pid).
alive() {
  [ -f "$dir/pid" ] || return 1
  local pid
  pid="$(cat "$dir/pid")"
  kill -0 "$pid" 2>/dev/null || return 1
  grep -q "cloud-pubsub-emulator" "/proc/$pid/cmdline" 2>/dev/null
}

running() {
  [ -f "$dir/port" ] && alive && answers "$(cat "$dir/port")"
}

print_env() {
  echo "export PUBSUB_EMULATOR_HOST=127.0.0.1:$(cat "$dir/port")"
  echo "export SLUICE_PUBSUB_DIR='$dir'"
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
  if [ -n "${PUBSUB_EMULATOR_HOST:-}" ]; then
    log "PUBSUB_EMULATOR_HOST is set; starting nothing"
    echo "export PUBSUB_EMULATOR_HOST=$PUBSUB_EMULATOR_HOST"
    return 0
  fi
  if running; then
    log "already running in $dir"
    print_env
    return 0
  fi
  local jar
  jar="$(find_jar)" || { install_emulator; jar="$(find_jar)" || die "no emulator jar after installing $emu_pkg"; }
  command -v java >/dev/null 2>&1 || { install_java; command -v java >/dev/null 2>&1 || die "no java after install"; }
  mkdir -p "$dir"
  # A half-dead emulator of an earlier start (not answering) goes first.
  kill_emulator
  local tries=0 port pid deadline
  while :; do
    tries=$((tries + 1))
    [ "$tries" -le 10 ] || { tail -n 30 "$dir/emulator.log" >&2 2>/dev/null || true; die "could not start the Pub/Sub emulator (log: $dir/emulator.log)"; }
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    port_free "$port" || continue
    echo "$port" >"$dir/port"
    # setsid: its own process group, so that stop ends all of it, and the
    # emulator outlives this script. No stdin: it must not wait on a tty.
    setsid java -Duser.language=en -jar "$jar" \
      --host=127.0.0.1 --port="$port" </dev/null >"$dir/emulator.log" 2>&1 &
    pid=$!
    echo "$pid" >"$dir/pid"
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
      die "the Pub/Sub emulator did not answer within 60s (log: $dir/emulator.log)"
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
