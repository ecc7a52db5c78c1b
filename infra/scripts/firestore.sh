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

me=firestore.sh
what="the Firestore emulator"
host_var=FIRESTORE_EMULATOR_HOST
dir_var=SLUICE_FIRESTORE_DIR
dir="${2:-${SLUICE_FIRESTORE_DIR:-/tmp/sluice-firestore-$(id -u)}}"
emu_pkg="google-cloud-cli-firestore-emulator"
jar_name="cloud-firestore-emulator.jar"
emu_hint="or install the emulator (gcloud components install cloud-firestore-emulator) and set FIRESTORE_EMULATOR_DIR to the directory holding $jar_name"
java_min=17
main_class="com.google.cloud.datastore.emulator.firestore.CloudFirestore"
up_wait=60 # the JVM and the jar take a few seconds
cmd_mark="$main_class"

# find_emulator prints the emulator jar's path.
find_emulator() {
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

launch() {
  setsid java -Duser.language=en -cp "$2" "$main_class" --host 127.0.0.1 --port "$1" &
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

# shellcheck source=emulator.sh
source "$(dirname "${BASH_SOURCE[0]}")/emulator.sh"
emulator_main "$@"
