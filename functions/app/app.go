// Package app builds, from one Config, what every entry point of sluice
// serves: the store, the SQS service over it and the HTTP handler. The
// sluice command uses it, and so will the Cloud Run, Cloud Functions and
// Lambda entry points.
//
// It links no store: an entry point imports the stores it deploys, each of
// which registers its URL schemes (see stores/registry), so a Lambda binary
// need not carry the Google SDKs, nor a Cloud Run one pgx.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/registry"
	"github.com/sluicehq/sluice/stores/wake"
)

// Config is everything an entry point decides. The zero value serves the
// embedded store in ./sluice-data (when that store is linked) with the
// defaults of service.Config.
type Config struct {
	// Store is the store URL, in a form a linked store registered (see
	// stores/registry).
	Store string
	// Region is the region in queue ARNs; empty means us-east-1.
	Region string
	// AccountID is the 12-digit account id in queue URLs and ARNs; empty
	// means 000000000000.
	AccountID string
	// BaseURL is scheme://host[:port] of queue URLs; empty means the host
	// each request was sent to.
	BaseURL string
	// Logger receives the logs of the store, the service and the handler;
	// nil means slog.Default().
	Logger *slog.Logger
	// QueueCacheTTL and MoveTaskStep are service.Config's; zero means its
	// default.
	QueueCacheTTL time.Duration
	MoveTaskStep  time.Duration
	// MaxBodyBytes caps request bodies; zero means the cap of each
	// protocol (contract.MaxJSONRequestBytes, contract.MaxQueryRequestBytes).
	MaxBodyBytes int64
	// BodyMemory bounds what all request bodies in flight hold together;
	// zero means httpapi.DefaultBodyMemory.
	BodyMemory int64
	// BodyTimeout bounds how long a request body may take to arrive; zero
	// means httpapi.DefaultBodyTimeout.
	BodyTimeout time.Duration
	// Wakeups names the transport that carries wake-ups between instances
	// (stores/wake): "local" for none (this process is the only instance),
	// or a URL a linked transport registered (postgres://... for
	// LISTEN/NOTIFY). Empty means the store's default: its own database for
	// PostgreSQL, none for the in-memory and embedded stores.
	Wakeups string
	// IdleMemo and RepairInterval are service.Config's; zero means its
	// default.
	IdleMemo       time.Duration
	RepairInterval time.Duration
}

// Validate reports the first field of c that New would refuse, naming it
// so that an entry point can tell a bad configuration from a store that
// cannot be opened.
func (c Config) Validate() error {
	if c.Region != "" && strings.Trim(c.Region, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return fmt.Errorf("bad region %q", c.Region)
	}
	if c.AccountID != "" && (len(c.AccountID) != 12 || strings.Trim(c.AccountID, "0123456789") != "") {
		return fmt.Errorf("bad account id %q: an account id has 12 digits", c.AccountID)
	}
	if _, err := baseURL(c.BaseURL); err != nil {
		return err
	}
	if c.MoveTaskStep < 0 {
		return fmt.Errorf("bad move-task step %s", c.MoveTaskStep)
	}
	if c.MaxBodyBytes < 0 {
		return fmt.Errorf("bad max body bytes %d", c.MaxBodyBytes)
	}
	if c.BodyMemory < 0 {
		return fmt.Errorf("bad body memory %d", c.BodyMemory)
	}
	if c.BodyTimeout < 0 {
		return fmt.Errorf("bad body timeout %s", c.BodyTimeout)
	}
	if c.Wakeups != "" && c.Wakeups != wake.Local && !strings.Contains(c.Wakeups, "://") {
		return fmt.Errorf("bad wake-ups %q: use %s or a transport URL such as postgres://...", c.Wakeups, wake.Local)
	}
	return nil
}

// baseURL checks raw and returns it as scheme://host, without the trailing
// slash people tend to add.
func baseURL(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("bad base URL %q: use scheme://host[:port], such as https://sqs.example.com", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

// App is a store with the service and handler over it.
type App struct {
	store   stores.Store
	hub     *wake.Hub
	svc     *service.Service
	handler http.Handler

	closeOnce sync.Once
	closeErr  error
}

// New checks cfg (see Validate), opens its store (ctx bounds that) and
// builds the service and the handler over it. The caller owns the result:
// Shutdown when it stops serving, Close when done.
func New(ctx context.Context, cfg Config) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base, _ := baseURL(cfg.BaseURL)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	wakeups := cfg.Wakeups
	if wakeups == "" {
		var err error
		if wakeups, err = registry.DefaultWakeups(cfg.Store); err != nil {
			return nil, err
		}
	}
	store, err := registry.Open(ctx, cfg.Store, logger)
	if err != nil {
		return nil, err
	}
	transport, kind, err := wake.OpenTransport(ctx, wakeups, logger)
	if err != nil {
		_ = store.Close()
		return nil, fmt.Errorf("opening the wake-ups transport %s: %w", registry.Redact(wakeups), err)
	}
	logger.Info("wake-ups", "transport", kind)
	hub := wake.NewHub(wake.HubOptions{Transport: transport, Logger: logger})
	svc := service.New(service.Config{
		Store:          store,
		Region:         cfg.Region,
		AccountID:      cfg.AccountID,
		BaseURL:        base,
		MoveTaskStep:   cfg.MoveTaskStep,
		QueueCacheTTL:  cfg.QueueCacheTTL,
		Wakeups:        hub,
		IdleMemo:       cfg.IdleMemo,
		RepairInterval: cfg.RepairInterval,
		Logger:         logger,
	})
	return &App{
		store: store,
		hub:   hub,
		svc:   svc,
		handler: httpapi.NewHandler(svc, httpapi.Options{Logger: logger,
			MaxBodyBytes: cfg.MaxBodyBytes, BodyMemory: cfg.BodyMemory, BodyTimeout: cfg.BodyTimeout}),
	}, nil
}

// Handler serves the SQS API (AWS JSON 1.0 and Query) over the store.
func (a *App) Handler() http.Handler { return a.handler }

// Service is the SQS service the handler calls, for entry points that
// are not HTTP.
func (a *App) Service() *service.Service { return a.svc }

// RunBackground advances message move tasks and does housekeeping until
// ctx ends; run it in a goroutine for as long as the app serves.
func (a *App) RunBackground(ctx context.Context) { a.svc.RunBackground(ctx) }

// Shutdown makes waiting long polls return at once with what they have, so
// that a server shutting down gracefully need not wait out 20-second polls.
// It does not wait for them.
func (a *App) Shutdown() { a.svc.Shutdown() }

// Maintain runs one housekeeping pass over the store (what RunBackground
// does now and then), for entry points run on a schedule.
func (a *App) Maintain(ctx context.Context) error {
	return a.store.Maintain(ctx, &stores.MaintainParams{})
}

// Close closes the wake-ups hub and the store, once; call it after the
// handler and RunBackground are done with them.
func (a *App) Close() error {
	a.closeOnce.Do(func() {
		a.closeErr = errors.Join(a.hub.Close(), a.store.Close())
	})
	return a.closeErr
}
