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

me=pubsub.sh
what="the Pub/Sub emulator"
host_var=PUBSUB_EMULATOR_HOST
dir_var=SLUICE_PUBSUB_DIR
dir="${2:-${SLUICE_PUBSUB_DIR:-/tmp/sluice-pubsub-$(id -u)}}"
emu_pkg="google-cloud-cli-pubsub-emulator"
emu_hint="or install the emulator (gcloud components install pubsub-emulator) and set PUBSUB_EMULATOR_DIR to the directory holding its jar"
java_min=11
up_wait=60 # the JVM and the jar take a few seconds
cmd_mark="cloud-pubsub-emulator"

# find_emulator prints the emulator jar's path (its name carries a version).
find_emulator() {
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

launch() {
  setsid java -Duser.language=en -jar "$2" --host=127.0.0.1 --port="$1" &
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

# shellcheck source=emulator.sh
source "$(dirname "${BASH_SOURCE[0]}")/emulator.sh"
emulator_main "$@"
