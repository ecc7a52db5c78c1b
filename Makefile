# sluice: an implementation of the Amazon SQS API.
#
#   make build         bin/sluice
#   make test          everything CI runs: services, go vet, go test -race (with
#                      the fuzz seed corpora), then the real-client suites
#   make test-go       go vet + go test -race only
#   make test-clients  the real AWS clients against a fresh bin/sluice
#                      (infra/clients/run.sh; SUITES="py-json js" to pick some)
#   make fuzz          every Fuzz target for FUZZTIME each (default 10s)
#   make run           build, then serve (ARGS="--addr 127.0.0.1:9324 --store mem://")
#   make clean         remove bin/ (distclean: also the JS suite's node_modules)
#
# `make test` installs what it needs that is missing (Debian and npm packages),
# so it runs on a fresh machine as it is.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

GO          ?= go
BIN         := bin/sluice
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
SERVICE_NAMES := postgres
SERVICES ?= $(foreach s,$(SERVICE_NAMES),$(if $(wildcard infra/scripts/$(s).sh),$(s)))

.PHONY: all build test test-go vet test-clients fuzz run clean distclean services services-stop

all: build

build:
	$(GO) build -o $(BIN) $(CMD)

# Both halves run even when the first fails, so that one CI run shows all
# that is broken; the exit status is a failure when either failed.
test:
	@rc=0; \
	$(MAKE) --no-print-directory test-go && go_result=ok || { go_result=FAILED; rc=1; }; \
	$(MAKE) --no-print-directory test-clients && clients_result=ok || { clients_result=FAILED; rc=1; }; \
	if [ $$rc -ne 0 ]; then echo "make test: test-go $$go_result, test-clients $$clients_result"; fi; \
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

test-clients:
	bash infra/clients/run.sh

fuzz:
	FUZZTIME=$(FUZZTIME) bash infra/scripts/fuzz.sh

run: build
	./$(BIN) serve $(ARGS)

clean:
	rm -rf bin

distclean: clean
	rm -rf infra/clients/js/node_modules
