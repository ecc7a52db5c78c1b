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

me=spanner.sh
what="the Spanner emulator"
host_var=SPANNER_EMULATOR_HOST
dir_var=SLUICE_SPANNER_DIR
dir="${2:-${SLUICE_SPANNER_DIR:-/tmp/sluice-spanner-$(id -u)}}"
emu_pkg="google-cloud-cli-spanner-emulator"
bin_name="emulator_main"
emu_hint="or install the emulator (gcloud components install cloud-spanner-emulator) and set SPANNER_EMULATOR_DIR to the directory holding $bin_name"
java_min="" # a native binary
up_wait=30  # it is up in well under a second
cmd_mark="$bin_name"

# find_emulator prints the emulator binary's path.
find_emulator() {
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

launch() {
  setsid "$2" --host_port "127.0.0.1:$1" &
}

# answers: the emulator of dir logged that it serves, and its port accepts
# connections (it speaks gRPC only, which bash cannot; the log line comes
# once the server is up).
answers() {
  grep -q "Server address: 127.0.0.1:$1" "$dir/emulator.log" 2>/dev/null &&
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# shellcheck source=emulator.sh
source "$(dirname "${BASH_SOURCE[0]}")/emulator.sh"
emulator_main "$@"
