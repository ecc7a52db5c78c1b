// Command sluice serves the Amazon SQS API.
//
//	sluice serve      run the server
//	sluice maintain   one housekeeping pass over the store, then exit
//	sluice bench      load-test an SQS endpoint (see bench.go)
//	sluice cost       what a workload costs per variant, beside SQS (see cost.go)
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
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/functions/app"
	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/internal/gcfloor"
	"github.com/sluicehq/sluice/internal/sysmon"
	"github.com/sluicehq/sluice/stores/registry"
	"github.com/sluicehq/sluice/stores/wake"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		// A server waits on its store between requests: see internal/sysmon.
		if err := sysmon.Steady(); err != nil {
			fmt.Fprintln(os.Stderr, "sluice: running with the runtime's default sysmon:", err)
		}
		gcfloor.Start(gcfloor.Default) // a small live heap is not collected ten times a second
	}
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `sluice: an Amazon SQS-compatible server.

Usage:
  sluice serve [flags]      serve the SQS API (AWS JSON 1.0 and Query protocols)
  sluice maintain [flags]   run one housekeeping pass over the store and exit
  sluice bench [flags]      load-test an SQS endpoint (sluice bench --help)
  sluice cost run|report    measure and price a workload per variant, beside SQS (sluice cost help)
  sluice version            print the version
  sluice help               print this help

Flags of serve (the environment variable sets the default):
  --addr ADDR           SLUICE_ADDR             listen address (default 127.0.0.1:9324; port 0 picks one);
                        PORT                    PORT=N (as Cloud Run sets it) means :N, all interfaces, over
                                                SLUICE_ADDR
  --store URL           SLUICE_STORE            store: mem://, file:///dir (embedded), postgres://...
                                                (default: embedded in ./sluice-data)
  --wakeups URL         SLUICE_WAKEUPS          how instances wake each other's long polls: local (none),
                                                postgres://... (LISTEN/NOTIFY), firestore://PROJECT (snapshot
                                                listeners), pubsub://PROJECT/TOPIC (Pub/Sub); default: the
                                                store's own database for postgres:// and firestore://,
                                                pubsub://PROJECT/sluice-wake-INSTANCE-DATABASE for spanner://,
                                                local otherwise
  --region REGION       SLUICE_REGION           region in queue ARNs (default us-east-1)
  --account-id ID       SLUICE_ACCOUNT_ID       12-digit account id in queue URLs and ARNs (default 000000000000)
  --base-url URL        SLUICE_BASE_URL         scheme://host[:port] of queue URLs (default: the host each
                                                request was sent to)
  --trust-forwarded     SLUICE_TRUST_FORWARDED  take that host and scheme from X-Forwarded-Host and
                                                X-Forwarded-Proto (only behind a front end that sets them)
  --access-keys KEYS    SLUICE_ACCESS_KEYS      access keys whose AWS Signature V4 requests are accepted:
                                                AKID:SECRET[:ACCOUNT[:TOKEN]], comma-separated (the
                                                environment or a file keeps them out of ps)
  --access-keys-file F  SLUICE_ACCESS_KEYS_FILE a file of access keys in the same form (a mounted secret)
  --auth MODE           SLUICE_AUTH             sigv4 (checked; the default when keys are given) or none
                                                (nothing checked; the default without keys, with a warning)
  --shutdown-timeout D  SLUICE_SHUTDOWN_TIMEOUT how long to let requests finish on SIGTERM/SIGINT (default 30s)
  --body-memory BYTES   SLUICE_BODY_MEMORY      what all request bodies in flight may hold together; beyond it
                                                requests get RequestThrottled (default 100663296, 96 MiB)
  --body-timeout D      SLUICE_BODY_TIMEOUT     how long a request body may take to arrive (default 30s)
  --max-wait D          SLUICE_MAX_WAIT         cap long polls at D, for a front end that times out sooner
                                                than 20 s (default: none)
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
  --console             SLUICE_CONSOLE          serve the web console at /_sluice/console/ (default off); when
                                                keys are checked it asks for one: access key id as the user,
                                                secret key as the password (HTTP Basic)
  --dev-no-cooldowns    SLUICE_DEV_NO_COOLDOWNS for test suites: no 60-second wait to re-create a deleted
                                                queue or to purge again (default off, as on AWS)
  (SLUICE_DEV_CLOCK_OFFSET=D)  for tests: requests and maintenance run on a clock D from the real one

Paths besides SQS: /healthz (liveness), /readyz (readiness), /metrics (Prometheus), GET / (this build),
POST /_sluice/maintain (one maintenance pass, for a scheduler; signed, or SLUICE_MAINTENANCE_TOKEN as a bearer),
/_sluice/console/ (the web console, with --console).

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
	case "cost":
		return costCmd(ctx, args[1:], stdout, stderr)
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

// common holds the settings that serve and maintain share, their
// defaults from the environment (app.SettingsFromEnv).
type common struct {
	set app.Settings
}

// load reads the environment; false means it was refused (reported).
func (c *common) load(name string, stderr io.Writer) bool {
	s, err := app.SettingsFromEnv(os.LookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "sluice %s: %v\n", name, err)
		return false
	}
	c.set = s
	return true
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.set.Store, "store", c.set.Store, "store URL")
	fs.StringVar(&c.set.LogLevel, "log-level", c.set.LogLevel, "debug, info, warn or error")
	fs.StringVar(&c.set.LogFormat, "log-format", c.set.LogFormat, "text or json")
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

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c common
	if !c.load("serve", stderr) {
		return 2
	}
	set := &c.set
	fs := newFlagSet("serve", stderr)
	c.register(fs)
	fs.StringVar(&set.Addr, "addr", set.Addr, "listen address")
	fs.StringVar(&set.Wakeups, "wakeups", set.Wakeups, "wake-ups transport URL")
	fs.StringVar(&set.Region, "region", set.Region, "region")
	fs.StringVar(&set.AccountID, "account-id", set.AccountID, "account id")
	fs.StringVar(&set.BaseURL, "base-url", set.BaseURL, "base URL of queue URLs")
	fs.BoolVar(&set.TrustForwarded, "trust-forwarded", set.TrustForwarded, "queue URLs from X-Forwarded-Host/-Proto")
	fs.StringVar(&set.Auth, "auth", set.Auth, "sigv4 or none")
	fs.DurationVar(&set.MaxWait, "max-wait", set.MaxWait, "cap of long polls")
	fs.StringVar(&set.AccessKeys, "access-keys", set.AccessKeys, "AKID:SECRET[:ACCOUNT[:TOKEN]],...")
	fs.StringVar(&set.AccessKeysFile, "access-keys-file", set.AccessKeysFile, "file of access keys")
	fs.DurationVar(&set.ShutdownTimeout, "shutdown-timeout", set.ShutdownTimeout, "grace period on shutdown")
	fs.StringVar(&set.MetricsAddr, "metrics-addr", set.MetricsAddr, "listen address of /metrics")
	fs.StringVar(&set.RequestLogLevel, "request-log-level", set.RequestLogLevel, "level of request lines")
	fs.StringVar(&set.QueuesFile, "queues", set.QueuesFile, "JSON file of queues to create at start")
	fs.BoolVar(&set.NoCooldowns, "dev-no-cooldowns", set.NoCooldowns, "no 60-second cooldowns (tests)")
	fs.BoolVar(&set.Console, "console", set.Console, "serve the web console at /_sluice/console")
	fs.IntVar(&set.MetricsMaxQueues, "metrics-max-queues", set.MetricsMaxQueues, "queues whose depths /metrics reports")
	fs.Int64Var(&set.BodyMemory, "body-memory", set.BodyMemory, "bytes all request bodies in flight may hold")
	fs.DurationVar(&set.BodyTimeout, "body-timeout", set.BodyTimeout, "how long a request body may take to arrive")
	if ok, code := parseFlags(fs, args); !ok {
		return code
	}
	if set.ShutdownTimeout <= 0 {
		fmt.Fprintf(stderr, "sluice serve: bad --shutdown-timeout %s\n", set.ShutdownTimeout)
		return 2
	}
	cfg, err := set.Config(stderr)
	var qfe *app.QueuesFileError
	if errors.As(err, &qfe) {
		fmt.Fprintf(stderr, "sluice serve: --queues %v\n", qfe.Err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return 2
	}
	logger := cfg.Logger
	cfg.MetricsElsewhere = set.MetricsAddr != ""

	// SIGINT/SIGTERM start a graceful shutdown; a second one kills at once
	// (stop restores the default handling).
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	cfg.Version = version
	a, err := app.New(sigCtx, cfg)
	var qerr *app.QueuesError
	if errors.As(err, &qerr) {
		fmt.Fprintf(stderr, "sluice serve: --queues %v\n", qerr)
		return 2
	}
	if err != nil {
		logger.Error("cannot open the store", "store", registry.Redact(cfg.Store), "err", err)
		return 1
	}
	defer closeApp(a, logger)

	ln, err := net.Listen("tcp", set.Addr)
	if err != nil {
		logger.Error("cannot listen", "addr", set.Addr, "err", err)
		return 1
	}
	srv := newServer(ctx, a.Handler(), cfg.BodyTimeout, logger)
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

	if set.MetricsAddr != "" {
		mln, err := net.Listen("tcp", set.MetricsAddr)
		if err != nil {
			logger.Error("cannot listen for metrics", "addr", set.MetricsAddr, "err", err)
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
	attrs := []any{"addr", addr, "version", a.Build().String(), "store", registry.Redact(cfg.Store), "store_kind", kind}
	for _, at := range info {
		attrs = append(attrs, slog.Attr{Key: "store_" + at.Key, Value: at.Value})
	}
	attrs = append(attrs, "region", cfg.Region, "account_id", cfg.AccountID)
	if cfg.NoCooldowns {
		attrs = append(attrs, "dev_no_cooldowns", true)
	}
	logger.Info("listening", attrs...)
	switch cfg.Auth {
	case "":
		logger.Warn("signatures are not checked: anyone who reaches this address can use every queue; give access keys (--access-keys, SLUICE_ACCESS_KEYS) to check them, or --auth none to say that this is meant")
	case app.AuthNone:
		logger.Info("signatures are not checked (--auth none)")
	}
	fmt.Fprintf(stdout, "sluice listening on http://%s\n", addr)

	select {
	case err := <-serveErr:
		logger.Error("server stopped", "err", err)
		return 1
	case <-sigCtx.Done():
	}
	stop()
	logger.Info("shutting down", "grace", set.ShutdownTimeout.String())
	shCtx, cancel := context.WithTimeout(context.Background(), set.ShutdownTimeout)
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
	if !c.load("maintain", stderr) {
		return 2
	}
	fs := newFlagSet("maintain", stderr)
	c.register(fs)
	if ok, code := parseFlags(fs, args); !ok {
		return code
	}
	c.set.QueuesFile = "" // a pass creates no queues
	cfg, err := c.set.Config(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sluice maintain: %v\n", err)
		return 2
	}
	logger := cfg.Logger
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg.Wakeups = wake.Local // one pass wakes nobody's long polls
	a, err := app.New(ctx, cfg)
	if err != nil {
		logger.Error("cannot open the store", "store", registry.Redact(cfg.Store), "err", err)
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
