#!/usr/bin/env bash
# sluice's in-memory server next to an in-memory peer, goaws
# (github.com/Admiral-Piett/goaws), which speaks only the Query protocol:
# both benched with `sluice bench --protocol query`, Standard and FIFO,
# unbatched and batches of 10, one run each, then one table. goaws is built
# with `go install` into ~/.cache/sluice the first time. Needs bin/sluice
# (`make build`). Results in .tmp/bench-goaws/.
#   GOAWS_VERSION (v0.4.5), BENCH_DURATION (10s), BENCH_FLAGS (4 producers, 4 consumers)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=bin/sluice
ver="${GOAWS_VERSION:-v0.4.5}"
goaws="$HOME/.cache/sluice/goaws-$ver/cmd"
if [ ! -x "$goaws" ]; then
  GOBIN="$(dirname "$goaws")" go install "github.com/Admiral-Piett/goaws/app/cmd@$ver"
fi
out=.tmp/bench-goaws
rm -rf "$out"; mkdir -p "$out"
port="$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')"
cat >"$out/goaws.yaml" <<YAML
Local:
  Host: 127.0.0.1
  Port: $port
  Region: us-east-1
  AccountId: "100010001000"
  LogToFile: false
  EnableDuplicates: false
  QueueAttributeDefaults:
    VisibilityTimeout: 30
    ReceiveMessageWaitTimeSeconds: 0
    MaximumMessageSize: 262144
YAML
"$goaws" -config "$out/goaws.yaml" >"$out/goaws.log" 2>&1 &
gpid=$!
trap 'kill "$gpid" 2>/dev/null || true; wait 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
status=0
for mode in standard standard-batch fifo fifo-batch; do
  flags=()
  case "$mode" in *fifo*) flags+=(--fifo) ;; esac
  case "$mode" in *batch) flags+=(--batch) ;; esac
  for target in goaws sluice; do
    if [ "$target" = goaws ]; then where=(--endpoint "http://127.0.0.1:$port" --server-pid "$gpid"); else where=(--spawn mem://); fi
    echo "=== $target $mode" >&2
    # shellcheck disable=SC2086
    "$bin" bench "${where[@]}" --protocol query --label "$target-$mode" "${flags[@]}" \
      --duration "${BENCH_DURATION:-10s}" --drain 20s ${BENCH_FLAGS:---producers 4 --consumers 4} \
      --json >"$out/$target-$mode.json" 2>"$out/$target-$mode.txt" || status=1
  done
done
"$bin" bench --table "$out"/*.json
exit "$status"
