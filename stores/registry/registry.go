// Package registry opens a stores.Store from a URL, the one form in which
// commands, their environment and tests name a store. Each store package
// registers the URL schemes it opens in its own init, so a binary opens
// exactly the stores it imports and links nothing else:
//
//	import _ "github.com/sluicehq/sluice/stores/pgstore" // postgres://, postgresql://
//
// The forms the stores of this module register:
//
//	mem:// or memory://              in memory, gone with the process (memstore)
//	"" (empty)                       embedded, in ./sluice-data (embedded)
//	file:///abs/dir, file://rel/dir  embedded, in that directory
//	embedded:///abs/dir              (the same, spelled for what it is)
//	/abs/dir, ./rel/dir              a plain path (no "://"): embedded there
//	postgres://..., postgresql://... PostgreSQL, a pgx connection string (pgstore)
//	firestore://PROJECT[/DATABASE]   Firestore (stores/firestore)
//	spanner://projects/P/instances/I/databases/D
//	                                 Cloud Spanner (stores/spanner)
//
// A URL without "://" (a plain path, or the empty URL) goes to the one
// driver registered with Schemeless set.
package registry

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/stores"
)

// Driver is what a store package registers: the schemes it opens and how.
type Driver struct {
	// Kind names the store in logs and errors ("memory", "embedded",
	// "postgres").
	Kind string
	// Schemes are the URL schemes the driver opens, without "://"; case
	// does not matter.
	Schemes []string
	// Schemeless makes the driver also open URLs without a scheme: plain
	// paths and the empty URL. At most one driver may set it.
	Schemeless bool
	// Open opens the store target names.
	Open func(ctx context.Context, target Target, opts Options) (stores.Store, error)
	// Wakeups, when set, names the wake-up transport instances of this
	// store use unless told otherwise (stores/wake): PostgreSQL's own
	// database for LISTEN/NOTIFY, Firestore's for snapshot listeners.
	// Unset: none (one process owns the data).
	Wakeups func(target Target) string
}

// Target is a store URL taken apart for the driver that opens it.
type Target struct {
	// URL is the store URL as given, without surrounding space; it may
	// hold a password (see Redact).
	URL string
	// Scheme is the URL's scheme in lower case; "" when it has none.
	Scheme string
	// Rest is what follows "scheme://", or all of URL when it has no
	// scheme ("" for the empty URL).
	Rest string
}

// Options are what every driver is given besides the URL.
type Options struct {
	// Logger is never nil when a driver sees it.
	Logger *slog.Logger
}

// drivers is the process's registry; a table of its own lets tests register
// fakes without touching it.
var drivers table

type table struct {
	mu         sync.RWMutex
	byScheme   map[string]*Driver
	schemeless *Driver
}

// Register makes d open the URLs of its schemes. Store packages call it from
// init; it panics on a scheme (or a second schemeless driver) that another
// driver has, or on a driver without Kind, Open or anything to open.
func Register(d Driver) { drivers.register(d) }

// Open opens the store rawURL names with the driver registered for its
// scheme. logger, when not nil, is told which store was opened (the URL
// without its password) and is given to the driver.
func Open(ctx context.Context, rawURL string, logger *slog.Logger) (stores.Store, error) {
	return drivers.open(ctx, rawURL, logger)
}

// Kind tells which store rawURL opens ("postgres", ...) without opening it,
// for choices that depend on the store; the error is the one Open would
// return for an unregistered scheme.
func Kind(rawURL string) (string, error) {
	d, _, err := drivers.lookup(rawURL)
	if err != nil {
		return "", err
	}
	return d.Kind, nil
}

// DefaultWakeups names the wake-up transport for the store rawURL opens
// (see Driver.Wakeups); "" means none.
func DefaultWakeups(rawURL string) (string, error) {
	d, t, err := drivers.lookup(rawURL)
	if err != nil || d.Wakeups == nil {
		return "", err
	}
	return d.Wakeups(t), nil
}

// Schemes lists the registered schemes, sorted; "" stands for URLs without a
// scheme when a driver opens them.
func Schemes() []string { return drivers.schemes() }

// Split takes rawURL apart as Open does: a URL is schemeless when it has
// no "://".
func Split(rawURL string) Target {
	s := strings.TrimSpace(rawURL)
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return Target{URL: s, Rest: s}
	}
	return Target{URL: s, Scheme: strings.ToLower(scheme), Rest: rest}
}

func (r *table) register(d Driver) {
	if d.Kind == "" || d.Open == nil || (len(d.Schemes) == 0 && !d.Schemeless) {
		panic(fmt.Sprintf("registry: incomplete driver %+v", d))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byScheme == nil {
		r.byScheme = map[string]*Driver{}
	}
	// Check everything before changing anything.
	schemes := make([]string, len(d.Schemes))
	for i, s := range d.Schemes {
		s = strings.ToLower(s)
		if s == "" || strings.ContainsAny(s, ":/") || slices.Contains(schemes[:i], s) {
			panic(fmt.Sprintf("registry: %s: bad or repeated scheme %q", d.Kind, s))
		}
		if prev := r.byScheme[s]; prev != nil {
			panic(fmt.Sprintf("registry: scheme %q registered by both %s and %s", s, prev.Kind, d.Kind))
		}
		schemes[i] = s
	}
	if d.Schemeless && r.schemeless != nil {
		panic(fmt.Sprintf("registry: URLs without a scheme claimed by both %s and %s", r.schemeless.Kind, d.Kind))
	}
	d.Schemes = schemes
	p := &d
	for _, s := range schemes {
		r.byScheme[s] = p
	}
	if d.Schemeless {
		r.schemeless = p
	}
}

func (r *table) open(ctx context.Context, rawURL string, logger *slog.Logger) (stores.Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	d, t, err := r.lookup(rawURL)
	if err != nil {
		return nil, err
	}
	s, err := d.Open(ctx, t, Options{Logger: logger})
	if err != nil {
		return nil, err
	}
	logger.Info("store opened", "kind", d.Kind, "store", Redact(t.URL))
	return s, nil
}

func (r *table) lookup(rawURL string) (*Driver, Target, error) {
	t := Split(rawURL)
	r.mu.RLock()
	d := r.byScheme[t.Scheme]
	if t.Scheme == "" {
		d = r.schemeless
	}
	r.mu.RUnlock()
	if d == nil {
		return nil, t, r.notLinked(t)
	}
	return d, t, nil
}

func (r *table) schemes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for s := range r.byScheme {
		out = append(out, s)
	}
	if r.schemeless != nil {
		out = append(out, "")
	}
	slices.Sort(out)
	return out
}

// known names, for each scheme the stores of this module register, the
// package that registers it: a binary built without that package can then
// say which import it lacks instead of calling the scheme unknown. A test
// keeps it equal to what the stores register.
var known = map[string]string{
	"":           "github.com/sluicehq/sluice/stores/embedded",
	"file":       "github.com/sluicehq/sluice/stores/embedded",
	"embedded":   "github.com/sluicehq/sluice/stores/embedded",
	"mem":        "github.com/sluicehq/sluice/stores/memstore",
	"memory":     "github.com/sluicehq/sluice/stores/memstore",
	"postgres":   "github.com/sluicehq/sluice/stores/pgstore",
	"postgresql": "github.com/sluicehq/sluice/stores/pgstore",
}

// notLinked explains why no driver opens t, naming what would.
func (r *table) notLinked(t Target) error {
	what := fmt.Sprintf("scheme %q", t.Scheme)
	if t.Scheme == "" {
		what = "a URL without a scheme (a plain path, or none)"
	}
	opens := "no store is linked in this binary"
	if list := describe(r.schemes()); list != "" {
		opens = "this binary opens " + list
	}
	if pkg, ok := known[t.Scheme]; ok {
		return fmt.Errorf("store %q: %s is opened by %s, which is not linked in this binary; %s",
			Redact(t.URL), what, pkg, opens)
	}
	return fmt.Errorf("unsupported store %q: unknown %s; %s", Redact(t.URL), what, opens)
}

// describe reads a Schemes list for an error: "file://, mem://, a plain path".
func describe(schemes []string) string {
	var parts []string
	plain := false
	for _, s := range schemes {
		if s == "" {
			plain = true
			continue
		}
		parts = append(parts, s+"://")
	}
	if plain {
		parts = append(parts, "a plain path")
	}
	return strings.Join(parts, ", ")
}

// Redact returns rawURL with any password replaced by "xxxxx", for logs and
// errors.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL
	}
	return u.Redacted()
}
