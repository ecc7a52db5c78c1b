// Command sluice serves the Amazon SQS API.
//
//	sluice serve      run the server
//	sluice maintain   one housekeeping pass over the store, then exit
//	sluice bench      load-test an SQS endpoint (see bench.go)
//	sluice version    print the version
//	sluice help       print usage
//
// Every flag has an environment variable that sets its default; see
// `sluice help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/functions/app"
	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/stores/registry"
	"github.com/sluicehq/sluice/stores/wake"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `sluice: an Amazon SQS-compatible server.

Usage:
  sluice serve [flags]      serve the SQS API (AWS JSON 1.0 and Query protocols)
  sluice maintain [flags]   run one housekeeping pass over the store and exit
  sluice bench [flags]      load-test an SQS endpoint (sluice bench --help)
  sluice version            print the version
  sluice help               print this help

Flags of serve (the environment variable sets the default):
  --addr ADDR           SLUICE_ADDR             listen address (default 127.0.0.1:9324; port 0 picks one)
  --store URL           SLUICE_STORE            store: mem://, file:///dir (embedded), postgres://...
                                                (default: embedded in ./sluice-data)
  --wakeups URL         SLUICE_WAKEUPS          how instances wake each other's long polls: local (none),
                                                postgres://... (LISTEN/NOTIFY); default: the store's own
                                                database for postgres://, local otherwise
  --region REGION       SLUICE_REGION           region in queue ARNs (default us-east-1)
  --account-id ID       SLUICE_ACCOUNT_ID       12-digit account id in queue URLs and ARNs (default 000000000000)
  --base-url URL        SLUICE_BASE_URL         scheme://host[:port] of queue URLs (default: the host each
                                                request was sent to)
  --shutdown-timeout D  SLUICE_SHUTDOWN_TIMEOUT how long to let requests finish on SIGTERM/SIGINT (default 30s)
  --body-memory BYTES   SLUICE_BODY_MEMORY      what all request bodies in flight may hold together; beyond it
                                                requests get RequestThrottled (default 100663296, 96 MiB)
  --body-timeout D      SLUICE_BODY_TIMEOUT     how long a request body may take to arrive (default 30s)
  --log-level LEVEL     SLUICE_LOG_LEVEL        debug, info, warn or error (default info)
  --log-format FORMAT   SLUICE_LOG_FORMAT       text or json (default text)
  --request-log-level LEVEL  (SLUICE_REQUEST_LOG_LEVEL)
                        level of the line logged per request: debug, info, warn, error or off
                        (default debug: shown with --log-level debug)
  --metrics-addr ADDR   SLUICE_METRICS_ADDR     serve /metrics (and /healthz, /readyz) on this address
                                                instead of on --addr (default: on --addr)
  --metrics-max-queues N  (SLUICE_METRICS_MAX_QUEUES)
                        queues whose depths /metrics reports (default 100; 0: none)
  --queues FILE         SLUICE_QUEUES           JSON file of queues to create at start (idempotent)
  --dev-no-cooldowns    SLUICE_DEV_NO_COOLDOWNS for test suites: no 60-second wait to re-create a deleted
                                                queue or to purge again (default off, as on AWS)

Paths besides SQS: /healthz (liveness), /readyz (readiness), /metrics (Prometheus), GET / (this build).

Flags of maintain: --store, --log-level, --log-format, as above.

Once listening, serve prints "sluice listening on http://HOST:PORT" on standard output.
`

// run is the command; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "maintain":
		return maintain(ctx, args[1:], stderr)
	case "bench":
		return benchCmd(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "sluice", app.ReadBuild(version))
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// env returns the environment variable or def.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// common holds the flags that serve and maintain share; cfg gathers those
// that configure the app.
type common struct {
	cfg       app.Config
	logLevel  string
	logFormat string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.cfg.Store, "store", env("SLUICE_STORE", ""), "store URL")
	fs.StringVar(&c.logLevel, "log-level", env("SLUICE_LOG_LEVEL", "info"), "debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", env("SLUICE_LOG_FORMAT", "text"), "text or json")
}

func (c *common) logger(stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("bad --log-level %q: use debug, info, warn or error", c.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(c.logFormat) {
	case "text", "":
		return slog.New(slog.NewTextHandler(stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(stderr, opts)), nil
	}
	return nil, fmt.Errorf("bad --log-format %q: use text or json", c.logFormat)
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sluice "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	return fs
}

// parseFlags parses args; the second result is the exit status when the
// command must stop (help asked for, or a bad flag).
func parseFlags(fs *flag.FlagSet, args []string) (bool, int) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return false, 0
		}
		return false, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return false, 2
	}
	return true, 0
}

type serveConfig struct {
	common
	addr            string
	shutdownTimeout time.Duration
	metricsAddr     string
	requestLogLevel string
	queuesFile      string
}

func (c *serveConfig) validate() error {
	if err := c.cfg.Validate(); err != nil {
		return err
	}
	if c.shutdownTimeout <= 0 {
		return fmt.Errorf("bad --shutdown-timeout %s", c.shutdownTimeout)
	}
	lvl, err := parseRequestLogLevel(c.requestLogLevel)
	if err != nil {
		return err
	}
	c.cfg.RequestLogLevel = lvl
	if c.cfg.MetricsMaxQueues == 0 {
		c.cfg.MetricsMaxQueues = -1 // none
	} else if c.cfg.MetricsMaxQueues < 0 {
		return fmt.Errorf("bad --metrics-max-queues %d", c.cfg.MetricsMaxQueues)
	}
	c.cfg.MetricsElsewhere = c.metricsAddr != ""
	if c.queuesFile != "" {
		qs, err := app.LoadQueuesFile(c.queuesFile)
		if err != nil {
			return fmt.Errorf("--queues %w", err)
		}
		c.cfg.Queues, c.cfg.QueuesSource = qs, c.queuesFile
	}
	return nil
}

// levelOff is above every level a logger is set to: the request line is
// never logged.
const levelOff = slog.Level(1 << 10)

func parseRequestLogLevel(s string) (slog.Leveler, error) {
	if strings.EqualFold(s, "off") || strings.EqualFold(s, "none") {
		return levelOff, nil
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		return nil, fmt.Errorf("bad --request-log-level %q: use debug, info, warn, error or off", s)
	}
	return level, nil
}

// envBool reads a boolean environment variable for a flag's default; a
// value strconv.ParseBool refuses is bad usage.
func envBool(name string) (bool, error) {
	v := env(name, "")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("bad %s %q: use true or false", name, v)
	}
	return b, nil
}

// envInt reads an integer environment variable for a flag's default.
func envInt(name string, def int) (int, error) {
	v := env(name, "")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("bad %s %q: use a number", name, v)
	}
	return n, nil
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c serveConfig
	fs := newFlagSet("serve", stderr)
	c.register(fs)
	fs.StringVar(&c.addr, "addr", env("SLUICE_ADDR", "127.0.0.1:9324"), "listen address")
	fs.StringVar(&c.cfg.Wakeups, "wakeups", env("SLUICE_WAKEUPS", ""), "wake-ups transport URL")
	fs.StringVar(&c.cfg.Region, "region", env("SLUICE_REGION", "us-east-1"), "region")
	fs.StringVar(&c.cfg.AccountID, "account-id", env("SLUICE_ACCOUNT_ID", "000000000000"), "account id")
	fs.StringVar(&c.cfg.BaseURL, "base-url", env("SLUICE_BASE_URL", ""), "base URL of queue URLs")
	timeout, err := time.ParseDuration(env("SLUICE_SHUTDOWN_TIMEOUT", "30s"))
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: bad SLUICE_SHUTDOWN_TIMEOUT: %v\n", err)
		return 2
	}
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", timeout, "grace period on shutdown")
	fs.StringVar(&c.metricsAddr, "metrics-addr", env("SLUICE_METRICS_ADDR", ""), "listen address of /metrics")
	fs.StringVar(&c.requestLogLevel, "request-log-level", env("SLUICE_REQUEST_LOG_LEVEL", "debug"), "level of request lines")
	fs.StringVar(&c.queuesFile, "queues", env("SLUICE_QUEUES", ""), "JSON file of queues to create at start")
	noCooldowns, err := envBool("SLUICE_DEV_NO_COOLDOWNS")
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return 2
	}
	fs.BoolVar(&c.cfg.NoCooldowns, "dev-no-cooldowns", noCooldowns, "no 60-second cooldowns (tests)")
	maxQueues, err := envInt("SLUICE_METRICS_MAX_QUEUES", 100)
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return 2
	}
	fs.IntVar(&c.cfg.MetricsMaxQueues, "metrics-max-queues", maxQueues, "queues whose depths /metrics reports")
	bodyMemory, err := strconv.ParseInt(env("SLUICE_BODY_MEMORY", strconv.Itoa(httpapi.DefaultBodyMemory)), 10, 64)
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: bad SLUICE_BODY_MEMORY: %v\n", err)
		return 2
	}
	fs.Int64Var(&c.cfg.BodyMemory, "body-memory", bodyMemory, "bytes all request bodies in flight may hold")
	bodyTimeout, err := time.ParseDuration(env("SLUICE_BODY_TIMEOUT", httpapi.DefaultBodyTimeout.String()))
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: bad SLUICE_BODY_TIMEOUT: %v\n", err)
		return 2
	}
	fs.DurationVar(&c.cfg.BodyTimeout, "body-timeout", bodyTimeout, "how long a request body may take to arrive")
	if ok, code := parseFlags(fs, args); !ok {
		return code
	}
	if err := c.validate(); err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return 2
	}
	logger, err := c.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return 2
	}

	// SIGINT/SIGTERM start a graceful shutdown; a second one kills at once
	// (stop restores the default handling).
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	c.cfg.Logger = logger
	c.cfg.Version = version
	a, err := app.New(sigCtx, c.cfg)
	var qerr *app.QueuesError
	if errors.As(err, &qerr) {
		fmt.Fprintf(stderr, "sluice serve: --queues %v\n", qerr)
		return 2
	}
	if err != nil {
		logger.Error("cannot open the store", "store", registry.Redact(c.cfg.Store), "err", err)
		return 1
	}
	defer closeApp(a, logger)

	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		logger.Error("cannot listen", "addr", c.addr, "err", err)
		return 1
	}
	srv := newServer(ctx, a.Handler(), c.cfg.BodyTimeout, logger)
	// Shutdown closes the listeners first, then runs this: waiting long
	// polls end with what they have and in-flight requests can finish.
	srv.RegisterOnShutdown(a.Shutdown)

	bgCtx, cancelBg := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	bg.Go(func() { a.RunBackground(bgCtx) })
	defer func() {
		cancelBg()
		bg.Wait()
	}()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	if c.metricsAddr != "" {
		mln, err := net.Listen("tcp", c.metricsAddr)
		if err != nil {
			logger.Error("cannot listen for metrics", "addr", c.metricsAddr, "err", err)
			return 1
		}
		msrv := &http.Server{Handler: a.OpsHandler(), ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
		go func() { _ = msrv.Serve(mln) }()
		defer msrv.Close()
		logger.Info("metrics listening", "addr", mln.Addr().String())
	}

	addr := ln.Addr().String()
	kind, info := a.StoreInfo()
	attrs := []any{"addr", addr, "version", a.Build().String(), "store", registry.Redact(c.cfg.Store), "store_kind", kind}
	for _, at := range info {
		attrs = append(attrs, slog.Attr{Key: "store_" + at.Key, Value: at.Value})
	}
	attrs = append(attrs, "region", c.cfg.Region, "account_id", c.cfg.AccountID)
	if c.cfg.NoCooldowns {
		attrs = append(attrs, "dev_no_cooldowns", true)
	}
	logger.Info("listening", attrs...)
	fmt.Fprintf(stdout, "sluice listening on http://%s\n", addr)

	select {
	case err := <-serveErr:
		logger.Error("server stopped", "err", err)
		return 1
	case <-sigCtx.Done():
	}
	stop()
	logger.Info("shutting down", "grace", c.shutdownTimeout.String())
	shCtx, cancel := context.WithTimeout(context.Background(), c.shutdownTimeout)
	defer cancel()
	code := 0
	if err := srv.Shutdown(shCtx); err != nil {
		logger.Warn("requests still running at the end of the grace period; closing them", "err", err)
		_ = srv.Close()
		code = 1
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("server", "err", err)
		code = 1
	}
	logger.Info("stopped")
	return code
}

// Limits of the HTTP server itself, below the handler.
const (
	// maxHeaderBytes bounds the request line and headers: SDK requests
	// carry a few hundred bytes of headers (SigV4 included). A Query request
	// sent as GET carries its parameters in the URL and so counts here too;
	// the SDKs POST them. Beyond it net/http answers 431 in plain text
	// itself, before any handler runs.
	maxHeaderBytes    = 64 << 10
	readHeaderTimeout = 10 * time.Second
)

// newServer is the HTTP server of serve. The handler bounds each body in
// time (bodyTimeout); ReadTimeout is only the backstop over headers and
// body together.
func newServer(ctx context.Context, h http.Handler, bodyTimeout time.Duration, logger *slog.Logger) *http.Server {
	if bodyTimeout <= 0 {
		bodyTimeout = httpapi.DefaultBodyTimeout
	}
	return &http.Server{
		Handler:           h,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readHeaderTimeout + bodyTimeout,
		// Long polls last up to 20 seconds; leave ample room.
		WriteTimeout: 2 * time.Minute,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:  func(net.Listener) context.Context { return ctx },
	}
}

func closeApp(a *app.App, logger *slog.Logger) {
	if err := a.Close(); err != nil {
		logger.Error("closing the store", "err", err)
	}
}

func maintain(ctx context.Context, args []string, stderr io.Writer) int {
	var c common
	fs := newFlagSet("maintain", stderr)
	c.register(fs)
	if ok, code := parseFlags(fs, args); !ok {
		return code
	}
	logger, err := c.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sluice maintain: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	c.cfg.Logger = logger
	c.cfg.Wakeups = wake.Local // one pass wakes nobody's long polls
	a, err := app.New(ctx, c.cfg)
	if err != nil {
		logger.Error("cannot open the store", "store", registry.Redact(c.cfg.Store), "err", err)
		return 1
	}
	start := time.Now()
	err = a.Maintain(ctx)
	if cerr := a.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing the store: %w", cerr)
	}
	if err != nil {
		logger.Error("maintenance failed", "err", err)
		return 1
	}
	logger.Info("maintenance done", "took", time.Since(start).Round(time.Millisecond).String())
	return 0
}
