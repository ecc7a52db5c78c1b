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
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/console"
	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/functions/sigv4"
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
	// TrustForwarded takes that host and scheme from the X-Forwarded-Host
	// and X-Forwarded-Proto headers of a front end (httpapi.Options); only
	// for a server that nothing reaches but through one.
	TrustForwarded bool
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
	// LISTEN/NOTIFY, firestore://... for snapshot listeners). Empty means
	// the store's default: its own database for PostgreSQL and Firestore,
	// none for the in-memory and embedded stores.
	Wakeups string
	// IdleMemo and RepairInterval are service.Config's; zero means its
	// default.
	IdleMemo       time.Duration
	RepairInterval time.Duration

	// RequestLogLevel is the level of the one line logged per request
	// (httpapi.Options); nil means debug.
	RequestLogLevel slog.Leveler
	// NoCooldowns switches off SQS's 60-second rules (re-creating a
	// just-deleted queue, a second purge) for test suites; see
	// service.Config. Off by default, as on AWS.
	NoCooldowns bool
	// DevClockOffset moves the clock of the service and of maintenance
	// passes this far from the real one, for tests of time across process
	// restarts (a scale-to-zero test starts each process later in
	// simulated time); zero is the real clock.
	DevClockOffset time.Duration
	// Queues are created at start through CreateQueue (see QueueSpec;
	// LoadQueuesFile reads them from a file, named by QueuesSource in
	// errors). New fails with a *QueuesError when CreateQueue refuses one.
	Queues       []QueueSpec
	QueuesSource string
	// Version, when set, is the version the front page and sluice_build_info
	// show (set at release time); empty: the module's (see ReadBuild).
	Version string
	// MetricsElsewhere leaves /metrics out of Handler: the entry point
	// serves OpsHandler on a listener of its own.
	MetricsElsewhere bool
	// MetricsMaxQueues bounds the queues whose depths a scrape reports
	// (sluice_queue_messages); 0 means 100, negative none.
	MetricsMaxQueues int
	// MetricsDepthTTL is how long a reading of the queue depths serves
	// scrapes; 0 means 5 s.
	MetricsDepthTTL time.Duration

	// Auth is how SQS requests are authenticated: AuthSigV4 checks every
	// request's AWS Signature Version 4 against AuthKeys (see
	// functions/sigv4); AuthNone or empty checks nothing, and any
	// credentials work.
	Auth string
	// AuthKeys are the access keys AuthSigV4 accepts, several at once for
	// rotation (ParseKeys reads them from text). A key with an account id
	// acts for that account; one without, for AccountID.
	AuthKeys []sigv4.Key
	// MaxWait caps long polls (service.Config.MaxWait); zero: none.
	MaxWait time.Duration
	// MaintenanceToken, when set, lets a request that carries it as a
	// bearer token run a maintenance pass through PathMaintain (for
	// schedulers that cannot sign requests).
	MaintenanceToken string
	// MetricsToken, when set, lets a request that carries it as a bearer
	// token read the metrics on the SQS listener of a server that checks
	// signatures (for scrapers that cannot sign); without it only a signed
	// request may. They name every account's queues. A listener of their
	// own (MetricsElsewhere, --metrics-addr) serves them to anyone who
	// reaches it.
	MetricsToken string
	// Console serves the web console at console.Path, behind HTTP Basic
	// credentials checked against AuthKeys when those are checked (see
	// functions/console). Off by default.
	Console bool
}

// The values of Config.Auth.
const (
	AuthNone  = "none"
	AuthSigV4 = "sigv4"
)

// Validate reports the first field of c that New would refuse, naming it
// so that an entry point can tell a bad configuration from a store that
// cannot be opened.
func (c Config) Validate() error {
	if c.Region != "" && strings.Trim(c.Region, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return fmt.Errorf("bad region %q", c.Region)
	}
	if c.AccountID != "" && !contract.ValidAccountID(c.AccountID) {
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
	if err := c.validateAuth(); err != nil {
		return err
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
	store    stores.Store // rawStore, timed for metrics
	rawStore stores.Store
	hub      *wake.Hub
	svc      *service.Service
	handler  http.Handler
	console  http.Handler // nil: no console
	log      *slog.Logger
	maintain operatorGate

	build        Build
	metrics      *metrics
	metricsHere  bool         // Handler serves /metrics
	metricsGate  operatorGate // who may read them there
	shuttingDown atomic.Bool
	storeKind    string
	storeInfo    []slog.Attr

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
	verify, err := newVerify(cfg, logger)
	if err != nil {
		return nil, err
	}
	wakeups := cfg.Wakeups
	if wakeups == "" {
		if wakeups, err = registry.DefaultWakeups(cfg.Store); err != nil {
			return nil, err
		}
	}
	storeKind, err := registry.Kind(cfg.Store)
	if err != nil {
		return nil, err
	}
	raw, err := registry.Open(ctx, cfg.Store, logger)
	if err != nil {
		return nil, err
	}
	transport, kind, err := wake.OpenTransport(ctx, wakeups, logger)
	if err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("opening the wake-ups transport %s: %w", registry.Redact(wakeups), err)
	}
	logger.Info("wake-ups", "transport", kind)
	hub := wake.NewHub(wake.HubOptions{Transport: transport, Logger: logger})
	build := ReadBuild(cfg.Version)
	m := newMetrics(build)
	_, billed := raw.(stores.Biller)
	store := &meteredStore{s: raw, m: m, billed: billed}
	var clock func() time.Time
	if off := cfg.DevClockOffset; off != 0 {
		clock = func() time.Time { return time.Now().Add(off) }
	}
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
		// A store call there costs money; elsewhere CPU, and racing the
		// woken poll lowers the pickup latency.
		TrustWokenPolls: billed,
		NoCooldowns:     cfg.NoCooldowns,
		Clock:           clock,
		MaxWait:         cfg.MaxWait,
		OnLongPoll:      m.observeLongPoll,
		Logger:          logger,
	})
	a := &App{
		store: store, rawStore: raw, hub: hub, svc: svc, log: logger,
		// Tokens trimmed as access keys are: a secret written with echo
		// ends in a newline no header can carry.
		maintain:    operatorGate{token: strings.TrimSpace(cfg.MaintenanceToken), verify: verify},
		metricsGate: operatorGate{token: strings.TrimSpace(cfg.MetricsToken), verify: verify},
		build:       build, metrics: m, metricsHere: !cfg.MetricsElsewhere, storeKind: storeKind,
	}
	var depth *depthCollector
	if n := cfg.MetricsMaxQueues; n >= 0 {
		ttl := cfg.MetricsDepthTTL
		if ttl <= 0 {
			ttl = 5 * time.Second
		}
		depth = newDepthCollector(svc, cmp.Or(n, 100), ttl)
	}
	m.watch(svc, raw, hub, transport, depth)
	budget := httpapi.NewBodyBudget(cfg.BodyMemory) // the SQS API's and the console's bodies together
	sqs := httpapi.NewHandler(svc, httpapi.Options{Logger: logger, MaxBodyBytes: cfg.MaxBodyBytes,
		Budget: budget, BodyTimeout: cfg.BodyTimeout, TrustForwarded: cfg.TrustForwarded,
		RequestLogLevel: cfg.RequestLogLevel, Observe: m.observeRequest, Verify: verify})
	if cfg.Console {
		var keys []sigv4.Key
		if cfg.Auth == AuthSigV4 {
			keys = cfg.AuthKeys
		}
		a.console = console.New(console.Config{Service: svc, Keys: keys, TrustForwarded: cfg.TrustForwarded, Budget: budget, Logger: logger})
		logger.Info("web console", "path", console.Path+"/", "basic_auth", len(keys) > 0)
	}
	a.handler = a.routes(sqs, a.metricsHere)
	if d, ok := raw.(stores.Describer); ok {
		a.storeInfo = d.Describe(ctx)
	}
	if cfg.NoCooldowns {
		logger.Warn("cooldowns off: a deleted queue can be created again and a queue purged again at once, unlike on AWS")
	}
	if len(cfg.Queues) > 0 {
		source := cmp.Or(cfg.QueuesSource, "queues")
		if err := applyQueues(ctx, svc, source, cfg.Queues); err != nil {
			_ = a.Close()
			return nil, err
		}
		logger.Info("queues created or found", "from", source, "count", len(cfg.Queues))
	}
	return a, nil
}

// Build says which build runs.
func (a *App) Build() Build { return a.build }

// StoreInfo says which store the app opened: its kind ("embedded",
// "postgres", ...) and what the store tells of itself (stores.Describer:
// the embedded store's directory, PostgreSQL's schema version), for the
// startup log.
func (a *App) StoreInfo() (kind string, attrs []slog.Attr) { return a.storeKind, a.storeInfo }

// Handler serves the SQS API (AWS JSON 1.0 and Query) over the store, and
// beside it the operator's paths (ops.go): /healthz, /readyz, /metrics
// (unless Config.MetricsElsewhere) and a front page at GET /.
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
func (a *App) Shutdown() {
	a.shuttingDown.Store(true) // readiness fails from now on
	a.svc.Shutdown()
}

// Maintain steps the move tasks and runs one housekeeping pass over the
// store (what RunBackground does now and then), for entry points run on a
// schedule.
func (a *App) Maintain(ctx context.Context) error { return a.svc.Maintain(ctx) }

// Close closes the wake-ups hub and the store, once; call it after the
// handler and RunBackground are done with them.
func (a *App) Close() error {
	a.closeOnce.Do(func() {
		a.closeErr = errors.Join(a.hub.Close(), a.store.Close())
	})
	return a.closeErr
}
