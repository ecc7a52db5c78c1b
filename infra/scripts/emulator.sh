# Sourced by firestore.sh, pubsub.sh and spanner.sh: running one of
# Google's emulators offline on a free loopback port, its pid, port and log
# in a directory, with the start/stop/status contract those scripts
# document.
#
# The caller sets, before sourcing:
#   me        its name in log lines (firestore.sh)
#   what      the emulator in messages (the Firestore emulator)
#   host_var  the variable start exports (FIRESTORE_EMULATOR_HOST)
#   dir_var   the variable naming the directory (SLUICE_FIRESTORE_DIR)
#   dir       the directory
#   emu_pkg   the Debian package holding the emulator
#   emu_hint  how to install or point at the emulator without apt
#   java_min  the oldest Java it runs on; empty: it needs no Java
#   cmd_mark  a string of the emulator's command line (to tell a recycled pid)
#   up_wait   seconds it may take to answer after its start
# and defines:
#   find_emulator        prints the jar's or binary's path, or fails
#   launch PORT PATH     starts it in the background on 127.0.0.1:PORT
#   answers PORT         succeeds when the emulator on PORT serves requests

log() { echo "$me: $*" >&2; }
die() { log "$*"; exit 1; }

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
  need_root "$what" "install the $emu_pkg package ($emu_hint)"
  command -v apt-get >/dev/null 2>&1 || die "$what is missing and there is no apt-get to install $emu_pkg"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt_has "$emu_pkg"; then
    log "apt does not know $emu_pkg; apt-get update"
    apt-get update -q >&2 || true
  fi
  apt_has "$emu_pkg" ||
    die "$what is missing, and apt cannot install $emu_pkg: Google's apt repository (deb https://packages.cloud.google.com/apt cloud-sdk main) is not configured or not reachable. Configure it, $emu_hint"
  log "installing $emu_pkg"
  apt-get install -y -q "$emu_pkg" >&2 || die "apt-get install $emu_pkg failed"
}

install_java() {
  need_root "java" "install a Java runtime ($java_min or newer), e.g. Debian's default-jre-headless"
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

# alive: the pid in dir is our emulator (not a recycled pid).
alive() {
  [ -f "$dir/pid" ] || return 1
  local pid
  pid="$(cat "$dir/pid")"
  kill -0 "$pid" 2>/dev/null || return 1
  grep -q "$cmd_mark" "/proc/$pid/cmdline" 2>/dev/null
}

running() {
  [ -f "$dir/port" ] && alive && answers "$(cat "$dir/port")"
}

print_env() {
  echo "export $host_var=127.0.0.1:$(cat "$dir/port")"
  echo "export $dir_var='$dir'"
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
  if [ -n "${!host_var:-}" ]; then
    log "$host_var is set; starting nothing"
    echo "export $host_var=${!host_var}"
    return 0
  fi
  if running; then
    log "already running in $dir"
    print_env
    return 0
  fi
  local emu
  emu="$(find_emulator)" || { install_emulator; emu="$(find_emulator)" || die "no emulator after installing $emu_pkg"; }
  if [ -n "$java_min" ]; then
    command -v java >/dev/null 2>&1 || { install_java; command -v java >/dev/null 2>&1 || die "no java after install"; }
  fi
  mkdir -p "$dir"
  # A half-dead emulator of an earlier start (not answering) goes first.
  kill_emulator
  local tries=0 port pid deadline
  while :; do
    tries=$((tries + 1))
    [ "$tries" -le 10 ] || { tail -n 30 "$dir/emulator.log" >&2 2>/dev/null || true; die "could not start $what (log: $dir/emulator.log)"; }
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    port_free "$port" || continue
    echo "$port" >"$dir/port"
    # setsid (in launch): its own process group, so that stop ends all of
    # it, and the emulator outlives this script. No stdin: it must not
    # wait on a tty.
    launch "$port" "$emu" </dev/null >"$dir/emulator.log" 2>&1
    pid=$!
    echo "$pid" >"$dir/pid"
    deadline=$((SECONDS + up_wait))
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
      die "$what did not answer within ${up_wait}s (log: $dir/emulator.log)"
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

# emulator_main runs the command named by $1.
emulator_main() {
  case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) running ;;
  *) die "usage: $0 start|stop|status [dir]" ;;
  esac
}
