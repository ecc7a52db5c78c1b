package wake

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// Local names no transport: this process is the only instance (the
// in-memory and embedded stores, whose data one process owns).
const Local = "local"

// Opener is what a transport package registers: the URL schemes it opens.
type Opener struct {
	Kind    string // names the transport in logs ("postgres", "pubsub")
	Schemes []string
	Open    func(ctx context.Context, rawURL string, logger *slog.Logger) (Transport, error)
}

var (
	openersMu sync.RWMutex
	openers   = map[string]*Opener{}
)

// Register makes URLs of o's schemes open o's transport; a transport
// package calls it in init, so a binary opens only what it imports. It
// panics on a scheme registered twice.
func Register(o Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	for _, s := range o.Schemes {
		s = strings.ToLower(s)
		if openers[s] != nil || s == "" || s == Local {
			panic(fmt.Sprintf("wake: bad or repeated transport scheme %q", s))
		}
		openers[s] = &o
	}
}

// OpenTransport opens the transport rawURL names: "" or Local is none (nil).
// It also returns the transport's kind, for logs.
func OpenTransport(ctx context.Context, rawURL string, logger *slog.Logger) (Transport, string, error) {
	if rawURL == "" || rawURL == Local {
		return nil, Local, nil
	}
	scheme, _, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, "", fmt.Errorf("bad wake-ups %q: use %s or a transport URL (scheme://...)", rawURL, Local)
	}
	openersMu.RLock()
	o := openers[strings.ToLower(scheme)]
	var known []string
	for s := range openers {
		known = append(known, s+"://")
	}
	openersMu.RUnlock()
	if o == nil {
		slices.Sort(known)
		return nil, "", fmt.Errorf("unsupported wake-ups scheme %q; this binary has %s and %s", scheme, Local, strings.Join(known, ", "))
	}
	t, err := o.Open(ctx, rawURL, logger)
	if err != nil {
		return nil, "", err
	}
	return t, o.Kind, nil
}

// SplitURL reads scheme://FIRST or scheme://FIRST/SECOND (a trailing slash
// allowed), the form of the transports whose URL names a project and,
// optionally, one thing in it; ok is false for anything else (another
// scheme, no FIRST, more segments, a query or fragment).
func SplitURL(rawURL, scheme string) (first, second string, ok bool) {
	s, rest, found := strings.Cut(rawURL, "://")
	if !found || !strings.EqualFold(s, scheme) {
		return "", "", false
	}
	first, second, _ = strings.Cut(strings.TrimSuffix(rest, "/"), "/")
	if first == "" || strings.ContainsAny(second, "/?#") || strings.ContainsAny(first, "?#") {
		return "", "", false
	}
	return first, second, true
}
