# sluice: an implementation of the Amazon SQS API.
#
#   make build         bin/sluice
#   make static        bin/sluice-static: static, reproducible (what the container image runs)
#   make test          everything CI runs: services, go vet, go test -race (with
#                      the fuzz seed corpora), then the real-client suites
#   make test-go       go vet + go test -race only
#   make test-clients  the real AWS clients through each entry point: sluice serve,
#                      the Cloud Function, the Lambda bootstrap (infra/clients/run.sh;
#                      SUITES="py-json js", CLIENT_ENTRIES="serve" to pick some)
#   make test-console  the web console in headless Chromium against sluice serve
#                      --console (infra/console/run.sh; screenshots in
#                      .tmp/console-screenshots)
#   make test-terraform  tofu fmt, validate and test (plan mode) on every module
#                      and example under terraform/, offline: OpenTofu built
#                      from the Go module proxy, a schema-only stand-in for
#                      the google and aws providers (infra/terraform/run.sh)
#   make fuzz          every Fuzz target for FUZZTIME each (default 10s)
#   make bench         the load matrix; make bench-lifecycle the work per
#                      lifecycle on pinned cores; make bench-pair two builds
#                      under one load; make bench-wakeups; make cost
#                      (none of them part of make test)
#   make run           build, then serve (ARGS="--addr 127.0.0.1:9324 --store mem://")
#   make clean         remove bin/ (distclean: also the JS suite's node_modules)
#
# `make test` installs what it needs that is missing (Debian and npm packages),
# so it runs on a fresh machine as it is.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

GO          ?= go
BIN         := bin/sluice
STATIC      ?= bin/sluice-static
VERSION     ?=
CMD         := ./functions/cmd/sluice
GOTEST_TIMEOUT ?= 15m
GOTESTFLAGS ?=
FUZZTIME    ?= 10s
ARGS        ?=

# Services the Go tests need (PostgreSQL, emulators, ...): one script each,
# infra/scripts/<name>.sh, listed in SERVICES. Its interface:
#   start   install what is missing, start the service on loopback unless it
#           already runs, wait until it answers, and print `export VAR=...`
#           lines on stdout (everything else on stderr);
#   stop    stop it and remove its data; idempotent;
#   status  exit 0 when it runs.
# `make test-go` starts each, evals its exports, runs the tests and stops
# again the ones it started. See infra/scripts/README.md.
# Add a name here when its script lands; `make test SERVICES=` runs without any.
SERVICE_NAMES := postgres firestore pubsub spanner
SERVICES ?= $(foreach s,$(SERVICE_NAMES),$(if $(wildcard infra/scripts/$(s).sh),$(s)))

.PHONY: all build static test test-go vet test-clients test-console test-terraform fuzz run clean distclean services services-stop

all: build

build:
	$(GO) build -buildvcs=auto -o $(BIN) $(CMD)

# No cgo, so it runs on any Linux base (distroless, scratch); -trimpath and
# no VCS stamp, so the same source gives the same bytes wherever it is
# built (the Dockerfile runs this; infra/container checks that it does).
static:
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=$(VERSION)" -o $(STATIC) $(CMD)

# All parts run even when one fails, so that one CI run shows all that is
# broken; the exit status is a failure when any failed.
test:
	@rc=0; \
	$(MAKE) --no-print-directory test-go && go_result=ok || { go_result=FAILED; rc=1; }; \
	$(MAKE) --no-print-directory test-clients && clients_result=ok || { clients_result=FAILED; rc=1; }; \
	$(MAKE) --no-print-directory test-console && console_result=ok || { console_result=FAILED; rc=1; }; \
	$(MAKE) --no-print-directory test-terraform && terraform_result=ok || { terraform_result=FAILED; rc=1; }; \
	if [ $$rc -ne 0 ]; then echo "make test: test-go $$go_result, test-clients $$clients_result, test-console $$console_result, test-terraform $$terraform_result"; fi; \
	exit $$rc

# For a shell of your own: eval "$$(make -s services)"; later make services-stop.
services:
	@for s in $(SERVICES); do bash "infra/scripts/$$s.sh" start; done

services-stop:
	@for s in $(SERVICES); do bash "infra/scripts/$$s.sh" stop || true; done

vet:
	$(GO) vet ./...

# Fuzz targets' seed corpora (f.Add and testdata/fuzz/) run as ordinary
# tests here; `make fuzz` is what explores beyond them.
test-go: vet
	@started=""; \
	stop_services() { for s in $$started; do bash "infra/scripts/$$s.sh" stop || true; done; }; \
	trap stop_services EXIT; \
	for s in $(SERVICES); do \
	  echo "=== infra/scripts/$$s.sh start"; \
	  bash "infra/scripts/$$s.sh" status >/dev/null 2>&1 || started="$$started $$s"; \
	  exports="$$(bash "infra/scripts/$$s.sh" start </dev/null)"; \
	  eval "$$exports"; \
	done; \
	echo "$(GO) test -race -timeout $(GOTEST_TIMEOUT) $(GOTESTFLAGS) ./..."; \
	$(GO) test -race -timeout $(GOTEST_TIMEOUT) $(GOTESTFLAGS) ./...

# The real clients through each entry point: sluice serve, the Cloud
# Function under the Functions Framework, the Lambda bootstrap under the
# Runtime Interface Emulator. All three run even when one fails.
CLIENT_ENTRIES ?= serve function lambda
test-clients:
	@rc=0; for e in $(CLIENT_ENTRIES); do \
	  echo "=== client suites through: $$e"; \
	  SLUICE_ENTRY=$$e bash infra/clients/run.sh || { echo "client suites through $$e: FAILED"; rc=1; }; \
	done; exit $$rc

# The web console in headless Chromium (Debian's chromium, driven by
# playwright-core; both installed when missing, a failure under CI=true
# when they cannot be).
test-console:
	bash infra/console/run.sh

# The Terraform modules, checked offline (no provider download, no cloud).
test-terraform:
	bash infra/terraform/run.sh

fuzz:
	FUZZTIME=$(FUZZTIME) bash infra/scripts/fuzz.sh

run: build
	./$(BIN) serve $(ARGS)

clean:
	rm -rf bin

distclean: clean
	rm -rf infra/clients/js/node_modules infra/console/node_modules infra/terraform/schemas/node_modules

# ---- make bench: the load matrix (`sluice bench`, infra/bench/). Not part
# of `make test`; takes about five minutes.
#
# Builds bin/sluice, starts a throwaway PostgreSQL of its own
# (infra/scripts/postgres.sh in a temporary directory, stopped at the end;
# a DATABASE_URL already set is used instead), then for each store,
# embedded (file:// in a fresh temporary directory per run) and
# PostgreSQL, runs with BENCH_FLAGS for BENCH_DURATION after BENCH_WARMUP:
#   <store>-fifo           FIFO unbatched, as fast as it goes (the peak)
#   <store>-fifo-batch     FIFO, batches of 10
#   <store>-standard       Standard unbatched
#   <store>-fifo-longpoll  FIFO long polls at BENCH_LONGPOLL_RATE msg/s (pickup latency)
#   <store>-fifo-halfpeak  FIFO unbatched at half the <store>-fifo peak (latency at half load)
# postgres-fifo also measures the ceiling: PostgreSQL alone, one-row
# INSERT+DELETE transactions, same connection count. postgres-fifo and
# postgres-fifo-batch also measure the baseline (--baseline): a pure-SQL
# queue shaped like pgmq (send, read with SKIP LOCKED, delete; three
# commits) on the same PostgreSQL, max(producers, consumers) workers,
# unbatched and in batches of 10 respectively. Every run starts its
# own server (`--spawn`), so the peak RSS is per run. BENCH_PG_PARAMS is
# appended to the store URL (e.g. '&pool_max_conns=32'). Results: one JSON
# per run in .tmp/bench/, the table on stdout and in .tmp/bench-results.txt.
BENCH_DURATION      ?= 20s
BENCH_WARMUP        ?= 3s
BENCH_FLAGS         ?= --producers 8 --consumers 8 --groups 64 --size 1024
BENCH_LONGPOLL_RATE ?= 100
BENCH_PG_PARAMS     ?=
BENCH_DIR           := .tmp/bench

# ---- make bench-lifecycle: server CPU, PostgreSQL CPU, WAL bytes and
# commits per lifecycle on pinned cores (load generator on CPU 0, servers
# and PostgreSQL on CPU 1) for sluice on mem://, the embedded store and
# PostgreSQL, beside the SQL queue and the in-memory peer goaws in the same
# run, with the ratios the performance targets are stated in
# (infra/bench/lifecycle.sh). Not part of `make test`; about 30 minutes,
# SHORT=1 about two minutes. Table: .tmp/bench-lifecycle.txt.
.PHONY: bench-lifecycle
bench-lifecycle: build
	bash infra/bench/lifecycle.sh

# ---- make bench-pair: two builds under the same load at the same time
# (infra/bench/pair.sh: OLD=REV, default HEAD~1, against the working tree),
# each on its own database of one throwaway PostgreSQL (STORE=embedded or
# mem: those stores instead), pinned as bench-lifecycle is; the PostgreSQL
# and server CPU, the WAL per lifecycle and the pickup p99 of each, and
# new / old per workload. Not part of `make test`; about three minutes.
.PHONY: bench-pair
bench-pair:
	bash infra/bench/pair.sh

# ---- make bench-soak: whether the PostgreSQL store holds its pace over a
# long steady load (infra/bench/soak.sh: Standard and FIFO batches of 10,
# five minutes each on a throwaway PostgreSQL, pinned as bench-lifecycle
# is, reported in 10 s parts beside the size of the messages table). Not
# part of `make test`; about eleven minutes.
.PHONY: bench-soak
bench-soak: build
	bash infra/bench/soak.sh

# ---- make bench-wakeups: what publishing wake-ups costs the send path
# (infra/bench/wakeups.sh: local, LISTEN/NOTIFY and Pub/Sub servers on one
# PostgreSQL, benched in turn). Not part of `make test`; about two minutes.
.PHONY: bench-wakeups
bench-wakeups: build
	bash infra/bench/wakeups.sh

.PHONY: bench
bench: build
	@out="$(BENCH_DIR)"; rm -rf "$$out"; mkdir -p "$$out"; \
	work="$$(mktemp -d)"; chmod 755 "$$work"; \
	cleanup() { bash infra/scripts/postgres.sh stop "$$work/pg" >/dev/null 2>&1 || true; rm -rf "$$work"; }; \
	trap cleanup EXIT; trap 'exit 130' INT TERM; \
	echo "=== infra/scripts/postgres.sh start (in $$work/pg)"; \
	exports="$$(bash infra/scripts/postgres.sh start "$$work/pg" </dev/null)"; \
	eval "$$exports"; \
	pg="$$DATABASE_URL$(BENCH_PG_PARAMS)"; \
	n=0; status=0; last=""; \
	one() { \
	  n=$$((n + 1)); label="$$1"; store="$$2"; shift 2; \
	  if [ "$$store" = embedded ]; then url="file://$$work/embedded-$$n"; else url="$$pg"; fi; \
	  last="$$out/$$(printf %02d "$$n")-$$label.json"; \
	  echo "=== $$label: sluice bench --spawn <$$store> $(BENCH_FLAGS) --duration $(BENCH_DURATION) $$*"; \
	  ./$(BIN) bench --spawn "$$url" --label "$$label" --duration $(BENCH_DURATION) --warmup $(BENCH_WARMUP) \
	    $(BENCH_FLAGS) --json "$$@" >"$$last" || { echo "=== $$label: FAILED"; status=1; }; \
	  [ -s "$$last" ] || rm -f "$$last"; \
	}; \
	half() { [ -f "$$1" ] && awk -F': ' '/^  "lifecycles_per_sec"/ { gsub(/,/, "", $$2); printf "%.0f", $$2 / 2 }' "$$1" || true; }; \
	for store in embedded postgres; do \
	  ceiling=""; baseline=""; \
	  if [ "$$store" = postgres ]; then ceiling="--ceiling $$DATABASE_URL"; baseline="--baseline $$DATABASE_URL"; fi; \
	  one "$$store-fifo" "$$store" --fifo $$ceiling $$baseline; peak="$$last"; \
	  one "$$store-fifo-batch" "$$store" --fifo --batch $$baseline; \
	  one "$$store-standard" "$$store"; \
	  one "$$store-fifo-longpoll" "$$store" --fifo --long-poll --rate $(BENCH_LONGPOLL_RATE); \
	  rate="$$(half "$$peak")"; \
	  if [ -n "$$rate" ] && [ "$$rate" -ge 1 ]; then one "$$store-fifo-halfpeak" "$$store" --fifo --rate "$$rate"; \
	  else echo "=== $$store-fifo-halfpeak: skipped, no peak from $$store-fifo"; status=1; fi; \
	done; \
	echo; \
	{ echo "make bench, $$(date -u +%Y-%m-%dT%H:%M:%SZ): $$(nproc) CPUs, $$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p'), $$($(GO) version)"; \
	  echo "flags: $(BENCH_FLAGS) --duration $(BENCH_DURATION) --warmup $(BENCH_WARMUP); ms columns are p50/p99/max (pickup, e2e: p50/p99)"; \
	  echo; \
	  ./$(BIN) bench --table "$$out"/*.json; } | tee .tmp/bench-results.txt; \
	exit $$status

# ---- make cost: the cost comparison (`sluice cost`, infra/cost/). Not
# part of `make test` (which runs a short one: TestCostPipeline); takes
# about (COST_DURATION + COST_WARMUP + ~5s) × rates × variants × workloads.
#
# For each workload of COST_WORKLOADS (infra/cost/workloads/*.json, or
# files) and each variant of COST_VARIANTS, starts the services the variant
# needs (infra/scripts/<name>.sh in a temporary directory, stopped at the
# end), runs `sluice cost run --spawn` (a fresh server per rate) and then
# `sluice cost report`, into cost-report/<workload>/: report.md,
# cost-vs-rate.svg and .png, counts.json, runs/<variant>.json; and
# cost-report/report.md, the tables of all. Variants:
#   embedded          the embedded store (file://), the self-hosted reference
#   postgres          PostgreSQL, LISTEN/NOTIFY wake-ups
#   postgres-pubsub   PostgreSQL, wake-ups through Pub/Sub (emulator)
#   firestore         Firestore (emulator)
#   spanner           Spanner (emulator; listed when stores/spanner exists;
#                     SPANNER_URL names the database, default
#                     spanner://projects/sluice-cost/instances/cost/databases/cost),
#                     with its default wake-ups, Pub/Sub (emulator), priced
# A new variant is one more case in cost_store below and a name here.
COST_WORKLOADS ?= steady-100 idle-longpoll batched-high bursty
COST_VARIANTS  ?= embedded postgres postgres-pubsub firestore $(if $(wildcard stores/spanner/*.go),spanner)
COST_DURATION  ?= 20s
COST_WARMUP    ?= 3s
COST_FLAGS     ?=
COST_DIR       := cost-report

.PHONY: cost
cost: build
	@out="$(COST_DIR)"; rm -rf "$$out"; mkdir -p "$$out"; \
	work="$$(mktemp -d)"; chmod 755 "$$work"; started=""; \
	cleanup() { for s in $$started; do bash "infra/scripts/$$s.sh" stop "$$work/$$s" >/dev/null 2>&1 || true; done; rm -rf "$$work"; }; \
	trap cleanup EXIT; trap 'exit 130' INT TERM; \
	need() { case " $$started " in *" $$1 "*) return 0;; esac; \
	  echo "=== infra/scripts/$$1.sh start (in $$work/$$1)"; \
	  exports="$$(bash "infra/scripts/$$1.sh" start "$$work/$$1" </dev/null)" || return 1; \
	  eval "$$exports"; started="$$started $$1"; }; \
	cost_store() { args=""; case "$$1" in \
	  embedded) store="file://$$work/embedded-$$RANDOM";; \
	  postgres) need postgres || return 1; store="$$DATABASE_URL";; \
	  postgres-pubsub) need postgres && need pubsub || return 1; store="$$DATABASE_URL"; args="--wakeups pubsub://sluice-cost/wake-$$RANDOM";; \
	  firestore) need firestore || return 1; store="firestore://sluice-cost-$$RANDOM";; \
	  spanner) need spanner && need pubsub || return 1; store="$${SPANNER_URL:-spanner://projects/sluice-cost/instances/cost/databases/cost}"; args="--wakeups pubsub://sluice-cost/wake-$$RANDOM";; \
	  *) echo "make cost: unknown variant $$1"; return 1;; \
	esac; }; \
	if ! command -v rsvg-convert >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  echo "=== installing librsvg2-bin (rsvg-convert, for the PNG charts)"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q librsvg2-bin >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q librsvg2-bin >/dev/null 2>&1; } || \
	  echo "make cost: could not install librsvg2-bin: SVG charts only"; \
	fi; \
	status=0; \
	for w in $(COST_WORKLOADS); do \
	  wd="$$out/$$(basename "$$w" .json)"; mkdir -p "$$wd/runs"; cp "$$(test -f "$$w" && echo "$$w" || echo "infra/cost/workloads/$$w.json")" "$$wd/workload.json"; \
	  for v in $(COST_VARIANTS); do \
	    if ! cost_store "$$v"; then echo "=== $$w / $$v: FAILED (its service did not start)"; status=1; continue; fi; \
	    echo "=== $$w / $$v: sluice cost run --spawn $$store $$args"; \
	    ./$(BIN) cost run --workload "$$w" --spawn "$$store" $$args --variant "$$v" \
	      --duration $(COST_DURATION) --warmup $(COST_WARMUP) --out "$$wd/runs/$$v.json" || { echo "=== $$w / $$v: FAILED"; status=1; }; \
	    [ -s "$$wd/runs/$$v.json" ] || rm -f "$$wd/runs/$$v.json"; \
	  done; \
	done; \
	$(MAKE) --no-print-directory cost-report || status=1; \
	exit $$status

# Prices the runs in cost-report/*/runs again (after an edit of the price
# table or of the pricing) without measuring anything: each workload's
# report, and cost-report/report.md with all their tables.
.PHONY: cost-report
cost-report: build
	@out="$(COST_DIR)"; status=0; \
	{ echo "# sluice cost comparison"; echo; \
	  echo "USD per month at list prices, from \`make cost\` runs. Each workload's report.md gives the date, machine and measured window of its runs, the assumptions, the operations per message and the sources of the price table."; echo; } >"$$out/report.md"; \
	for wd in "$$out"/*/; do \
	  wd="$${wd%/}"; name="$$(basename "$$wd")"; \
	  ls "$$wd"/runs/*.json >/dev/null 2>&1 || continue; \
	  ./$(BIN) cost report --workload "$$wd/workload.json" --out "$$wd" $(COST_FLAGS) "$$wd"/runs/*.json || { status=1; continue; }; \
	  { echo "## $$name ([report]($$name/report.md))"; echo; \
	    sed -n '1,/^Measured/{/^Measured/p}' "$$wd/report.md"; echo; \
	    sed -n '/^| deployment | 1 msg/,/^$$/p' "$$wd/report.md"; \
	    echo "![$$name]($$name/cost-vs-rate.svg)"; echo; } >>"$$out/report.md"; \
	done; \
	echo "make cost: $$out/report.md"; \
	exit $$status
