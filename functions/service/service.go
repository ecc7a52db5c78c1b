// Package service is the SQS service layer: it validates every request
// against the contract, applies every rule that does not depend on storage
// (limits, defaults, digests, batch entry results, the long-poll loop, the
// receipt-handle codec) and calls a stores.Store for the atomic parts.
//
// A Service holds no per-queue state: any number of instances may serve the
// same store.
package service

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/wake"
)

// Config configures a Service.
type Config struct {
	Store     stores.Store
	Region    string // default us-east-1
	AccountID string // default 000000000000
	// BaseURL, when set, is the scheme and host of queue URLs
	// ("https://sqs.example.com"); otherwise each request's own host is used
	// (see WithRequestBase).
	BaseURL string
	// Clock, when set, supplies "now" to every store call (tests). When nil,
	// stores use their own clock.
	Clock func() time.Time
	// MoveTaskStep is how often a running message move task is advanced by
	// RunBackground; default 1s.
	MoveTaskStep time.Duration
	// QueueCacheTTL is how long a queue record read from the store is
	// reused (default 1s; negative disables). See queueCache.
	QueueCacheTTL time.Duration
	// Wakeups is the process's wake-up hub, shared by every Service of the
	// process; nil: a hub of the Service's own without a transport (one
	// instance alone).
	Wakeups *wake.Hub
	// IdleMemo is how long at most a receive that found nothing answers
	// for the queue's next receives (see idleMemo); default 1s, negative:
	// never.
	IdleMemo time.Duration
	// TrustWokenPolls: a receive behind wake-ups that waiting long polls
	// here speak for (each message woke one, which claims it at once) is
	// answered from the idle memo, not the store. With long-polling
	// consumers that spares about half of all claims, but a receive that
	// arrives just after a send no longer races the poll woken for it (on
	// PostgreSQL, whose concurrent sends and claims share transactions, the
	// median pickup rose from about 0.5 to 1.2 ms). The app sets it for
	// stores billed per operation (stores.Biller).
	TrustWokenPolls bool
	// RepairInterval bounds how long a long poll trusts wake-ups alone
	// before it checks the store (default 2s); while the transport is
	// degraded it checks every RepairInterval/8.
	RepairInterval time.Duration
	// NoCooldowns switches off SQS's 60-second rules (re-creating a queue
	// deleted less than 60 s ago, a second purge within 60 s), for test
	// suites that create, delete and purge queues quickly; it also turns the
	// queue cache off unless QueueCacheTTL is set. Off by default.
	NoCooldowns bool
	// MaxWait caps how long a long poll waits, for a front end whose
	// request timeout is shorter than SQS's 20 s: a poll asking for longer
	// returns what it has (maybe nothing) after MaxWait, which SQS clients
	// take as an empty receive and poll again. Zero: no cap.
	MaxWait time.Duration
	// OnLongPoll, when set, is told about every receive that waited (see
	// LongPoll); it must be quick.
	OnLongPoll func(LongPoll)
	Logger     *slog.Logger
}

// Service implements every SQS action.
type Service struct {
	cfg    Config
	store  stores.Store
	log    *slog.Logger
	cache  *queueCache
	hub    *wake.Hub
	idle   *idleMemo
	traits stores.Traits
	// handOffs are the long polls waiting here, for sends to claim for
	// (stores.Traits.HandOffs).
	handOffs handOffs
	// shutdown ends waiting long polls early (with empty results).
	shutdown chan struct{}
	// waiting counts the long polls waiting now.
	waiting atomic.Int64
	counts  messageCounters
}

// New returns a Service over cfg.Store.
func New(cfg Config) *Service {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.AccountID == "" {
		cfg.AccountID = "000000000000"
	}
	if cfg.MoveTaskStep == 0 {
		cfg.MoveTaskStep = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.QueueCacheTTL == 0 {
		cfg.QueueCacheTTL = time.Second
		if cfg.NoCooldowns {
			// A cached queue ID is safe because a deleted name cannot be
			// re-created for 60 s; without that rule another instance's
			// delete and re-create would leave this one's ID stale.
			cfg.QueueCacheTTL = -1
		}
	}
	if cfg.Wakeups == nil {
		cfg.Wakeups = wake.NewHub(wake.HubOptions{Logger: cfg.Logger})
	}
	if cfg.IdleMemo == 0 {
		cfg.IdleMemo = time.Second
	}
	if cfg.RepairInterval <= 0 {
		cfg.RepairInterval = 2 * time.Second
	}
	var traits stores.Traits
	if cfg.Store != nil { // handler tests build services that never reach a store
		traits = cfg.Store.Traits()
	}
	return &Service{traits: traits, cfg: cfg, store: cfg.Store, log: cfg.Logger, cache: newQueueCache(cfg.QueueCacheTTL),
		hub: cfg.Wakeups, idle: newIdleMemo(cfg.IdleMemo, cfg.Wakeups, cfg.TrustWokenPolls), shutdown: make(chan struct{})}
}

type baseKey struct{}

// WithRequestBase records the scheme and host the request came to
// ("http://127.0.0.1:9324"), used for queue URLs when Config.BaseURL is empty.
func WithRequestBase(ctx context.Context, base string) context.Context {
	return context.WithValue(ctx, baseKey{}, base)
}

type traceKey struct{}

// WithTraceHeader records the request's X-Amzn-Trace-Id header. SQS makes
// it the AWSTraceHeader system attribute of each message the request sends
// that does not carry one of its own.
func WithTraceHeader(ctx context.Context, header string) context.Context {
	return context.WithValue(ctx, traceKey{}, header)
}

func traceHeader(ctx context.Context) string {
	h, _ := ctx.Value(traceKey{}).(string)
	return h
}

// Shutdown makes waiting long polls return at once with what they have.
// It does not wait for them.
func (s *Service) Shutdown() {
	select {
	case <-s.shutdown:
	default:
		close(s.shutdown)
	}
}
