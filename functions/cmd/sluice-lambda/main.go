// Command sluice-lambda serves the Amazon SQS API as an AWS Lambda
// function, behind a function URL, an API Gateway HTTP or REST API or an
// Application Load Balancer (see functions/lambdahttp and docs/lambda.md).
//
// Build it for the provided.al2023 runtime as the file bootstrap:
//
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -o bootstrap ./functions/cmd/sluice-lambda
//
// It reads its configuration from the environment, the variables of
// `sluice serve` (app.FromEnv; SLUICE_STORE is required), and builds the
// app once per execution environment, at cold start: every invocation
// after that is served by it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sluicehq/sluice/functions/app"
	"github.com/sluicehq/sluice/functions/lambdahttp"
	"github.com/sluicehq/sluice/internal/gcfloor"
	"github.com/sluicehq/sluice/internal/sysmon"
	"github.com/sluicehq/sluice/stores/registry"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	// Before anything else: it starts the program again (internal/sysmon).
	if err := sysmon.Steady(); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-lambda: running with the runtime's default sysmon:", err)
	}
	gcfloor.Start(gcfloor.Default) // a small live heap is not collected ten times a second
	cfg, err := configFromEnv(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice-lambda:", err)
		os.Exit(2)
	}
	logger := cfg.Logger
	cfg.Version = version
	// The init phase: exiting here makes Lambda report an init error and
	// try again at the next invocation.
	a, err := app.New(context.Background(), cfg)
	if err != nil {
		logger.Error("cannot open the store", "store", registry.Redact(cfg.Store), "err", err)
		os.Exit(1)
	}
	kind, _ := a.StoreInfo()
	logger.Info("ready", "version", a.Build().String(), "store", registry.Redact(cfg.Store), "store_kind", kind,
		"region", cfg.Region, "account_id", cfg.AccountID)

	// The housekeeping `sluice serve` does in a goroutine, done within one
	// scheduled invocation instead: a goroutine running across invocations
	// would be frozen in the middle of its store transactions, holding
	// their locks.
	h := lambdahttp.New(a.Handler(), lambdahttp.Options{Scheduled: a.Maintain})
	// WithEnableSIGTERM registers an internal extension, so that Lambda
	// sends SIGTERM before it ends the environment: end waiting long
	// polls and close the store's connections.
	lambda.StartWithOptions(h, lambda.WithEnableSIGTERM(func() {
		a.Shutdown()
		if err := a.Close(); err != nil {
			logger.Error("closing the store", "err", err)
		}
	}))
}

// configFromEnv reads the variables `sluice serve` reads (app.FromEnv),
// with a function's defaults where they differ: SLUICE_TRUST_FORWARDED is
// true unless set (nothing reaches the function but through its front
// end, whose X-Forwarded-Proto names the client's scheme: without it queue
// URLs would say http:// to https clients), and logs are JSON lines unless
// SLUICE_LOG_FORMAT says otherwise (CloudWatch Logs can filter on their
// fields).
func configFromEnv(lookup func(string) (string, bool)) (app.Config, error) {
	if v, _ := lookup("SLUICE_STORE"); strings.TrimSpace(v) == "" {
		return app.Config{}, errors.New("SLUICE_STORE is not set: use postgres://... (or mem:// for tests)")
	}
	cfg, err := app.FromEnv(func(name string) (string, bool) {
		v, ok := lookup(name)
		switch {
		case name == "SLUICE_LOG_FORMAT" && v == "":
			return "json", true
		case name == "SLUICE_TRUST_FORWARDED" && v == "":
			return "true", true
		}
		return v, ok
	}, os.Stderr)
	if err != nil {
		return app.Config{}, err
	}
	return cfg, nil
}
