// Package cloudfunction serves sluice as a Google Cloud Function (2nd
// gen). An Instance is the HTTP function that the module's root package
// registers with the Functions Framework for Go: the Framework's server
// calls it for every request, and it builds the app (store, service and
// handler, see functions/app) once per instance, on the first request.
//
// Building on the first request rather than at init keeps a store that
// cannot be opened (a database that refuses, a wrong SLUICE_STORE) from
// killing the instance: the error is logged and the request answered with
// SQS's InternalError, which SDKs retry; a later request tries again.
// Failing at init would make the platform restart the container in a loop
// and leave clients with the front end's HTML error pages.
//
// See docs/cloudfunctions.md for the layout the buildpack needs.
package cloudfunction

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/app"
	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/internal/gcfloor"
	"github.com/sluicehq/sluice/stores/registry"
)

// Options configure an Instance.
type Options struct {
	// Config returns the app's configuration (app.FromEnv, for a
	// function); it is called at each attempt to build the app.
	Config func() (app.Config, error)
	// RetryAfter is how long after a failed attempt requests are answered
	// with InternalError before one tries again; 0 means 5 s.
	RetryAfter time.Duration
	// BuildTimeout bounds one attempt (opening the store); 0 means 60 s.
	BuildTimeout time.Duration
	// Logs receives the errors of Config, which come before any logger;
	// nil means os.Stderr.
	Logs io.Writer
}

// Instance is the function: it serves the app it builds on the first
// request, for the life of the instance.
type Instance struct {
	opts Options

	app  atomic.Pointer[app.App] // set once built
	mu   sync.Mutex              // serializes building
	fail http.Handler            // answers while the last attempt's error holds
	when time.Time               // of the last failed attempt

	stopping atomic.Bool
	reqMu    sync.Mutex
	reqs     int           // requests in flight
	drained  chan struct{} // closed when reqs reaches 0 after Shutdown
	stopBG   context.CancelFunc
	bgDone   chan struct{}
}

// New returns an Instance; nothing is built until the first request.
func New(opts Options) *Instance {
	opts.RetryAfter = cmp.Or(opts.RetryAfter, 5*time.Second)
	opts.BuildTimeout = cmp.Or(opts.BuildTimeout, 60*time.Second)
	if opts.Logs == nil {
		opts.Logs = os.Stderr
	}
	return &Instance{opts: opts}
}

// ServeHTTP serves r with the app, building it first when this is the
// instance's first request (concurrent first requests wait for the same
// build).
func (in *Instance) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in.reqMu.Lock()
	in.reqs++
	in.reqMu.Unlock()
	defer in.leave()
	in.handler().ServeHTTP(w, r)
	// Push the answer to the connection before leaving: Shutdown waits for
	// the requests in flight, and then the process exits.
	_ = http.NewResponseController(w).Flush()
}

func (in *Instance) leave() {
	in.reqMu.Lock()
	defer in.reqMu.Unlock()
	in.reqs--
	if in.reqs == 0 && in.drained != nil {
		close(in.drained)
		in.drained = nil
	}
}

// stopped answers the requests that reach an instance after Shutdown
// with an error SDKs retry.
var stopped = httpapi.ErrorHandler(contract.ErrServiceUnavailable(), httpapi.Options{})

func (in *Instance) handler() http.Handler {
	if in.stopping.Load() {
		return stopped
	}
	if a := in.app.Load(); a != nil {
		return a.Handler()
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.stopping.Load() {
		return stopped
	}
	if a := in.app.Load(); a != nil {
		return a.Handler()
	}
	if in.fail != nil && time.Since(in.when) < in.opts.RetryAfter {
		return in.fail
	}
	a, logger, err := in.build()
	if err != nil {
		logger.Error("sluice cannot start; requests are answered with InternalError until it can",
			"err", err, "retry_after", in.opts.RetryAfter.String())
		in.fail = httpapi.ErrorHandler(contract.ErrInternal(), httpapi.Options{Logger: logger})
		in.when = time.Now()
		return in.fail
	}
	in.fail = nil
	ctx, cancel := context.WithCancel(context.Background())
	in.stopBG, in.bgDone = cancel, make(chan struct{})
	go func() {
		defer close(in.bgDone)
		a.RunBackground(ctx)
	}()
	in.app.Store(a)
	return a.Handler()
}

// build makes the app; the logger is the configuration's, or one on
// Options.Logs when there is no configuration.
func (in *Instance) build() (*app.App, *slog.Logger, error) {
	start := time.Now()
	gcfloor.Start(gcfloor.Default) // a small live heap is not collected ten times a second
	cfg, err := in.opts.Config()
	if err != nil {
		return nil, slog.New(slog.NewTextHandler(in.opts.Logs, nil)), err
	}
	logger := cmp.Or(cfg.Logger, slog.Default())
	if cfg.Store == "" {
		return nil, logger, errors.New("SLUICE_STORE is not set: use firestore://PROJECT[/DATABASE], postgres://... or mem://")
	}
	ctx, cancel := context.WithTimeout(context.Background(), in.opts.BuildTimeout)
	defer cancel()
	a, err := app.New(ctx, cfg)
	if err != nil {
		return nil, logger, err
	}
	kind, info := a.StoreInfo()
	attrs := []any{"version", a.Build().String(), "store", registry.Redact(cfg.Store), "store_kind", kind}
	for _, at := range info {
		attrs = append(attrs, slog.Attr{Key: "store_" + at.Key, Value: at.Value})
	}
	attrs = append(attrs, "region", cmp.Or(cfg.Region, "us-east-1"), "account_id", cmp.Or(cfg.AccountID, "000000000000"),
		"took", time.Since(start).Round(time.Millisecond).String())
	logger.Info("sluice started", attrs...)
	if kind == "memory" {
		logger.Warn("the memory store keeps queues in this instance only and loses them when it stops; " +
			"serve a real store, or cap the function at one instance for tests")
	}
	return a, logger, nil
}

// Shutdown stops the instance: waiting long polls return at once with what
// they have, new requests get ServiceUnavailable, and once the requests in
// flight are done (or ctx ends) the app is closed. It returns ctx's error
// when requests were still running.
func (in *Instance) Shutdown(ctx context.Context) error {
	in.mu.Lock() // no build starts after this
	in.stopping.Store(true)
	in.mu.Unlock()
	a := in.app.Load()
	if a == nil {
		return nil
	}
	a.Shutdown()
	drained := make(chan struct{})
	in.reqMu.Lock()
	if in.reqs == 0 {
		close(drained)
	} else {
		in.drained = drained
	}
	in.reqMu.Unlock()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = ctx.Err()
	}
	in.stopBG()
	<-in.bgDone
	return errors.Join(err, a.Close())
}

// ExitOnSignal makes SIGTERM (what Cloud Run sends an instance it stops,
// 10 s before killing it) and SIGINT run Shutdown with grace to finish,
// then exit the process: long polls end with an empty answer instead of a
// cut connection.
func (in *Instance) ExitOnSignal(grace time.Duration) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-ch
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- in.Shutdown(ctx) }()
		var err error
		select {
		case err = <-done:
		case <-ctx.Done(): // a build that hangs holds Shutdown up
			err = ctx.Err()
		}
		if err != nil {
			slog.New(slog.NewTextHandler(in.opts.Logs, nil)).Warn("stopping", "err", err)
			os.Exit(1)
		}
		os.Exit(0)
	}()
}
