package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/functions/console"
	"github.com/sluicehq/sluice/stores"
)

// The operator's paths. SQS requests go to "/" and to queue URLs
// ("/<12-digit account>/<queue>"), two path segments: these single-segment
// paths can never be one.
const (
	PathHealth  = "/healthz" // liveness: the process serves HTTP
	PathReady   = "/readyz"  // readiness: the store can serve, and the server is not shutting down
	PathMetrics = "/metrics" // Prometheus
)

// healthTimeout bounds a readiness check of the store.
const healthTimeout = 2 * time.Second

// routes puts the operator's paths and the front page before the SQS
// handler.
func (a *App) routes(sqs http.Handler, withMetrics bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := underFrontEnd(r.URL.Path)
		if a.console != nil && (path == console.Path || strings.HasPrefix(path, console.Path+"/")) {
			a.console.ServeHTTP(w, withPath(r, path))
			return
		}
		switch path {
		case PathHealth, PathReady:
			a.serveOps(w, r, a.metricsGate.verify == nil)
			return
		case PathMaintain:
			a.serveMaintain(w, r) // its signature covers the path as sent
			return
		case PathMetrics:
			if withMetrics {
				// Gated where signatures are checked; a server that checks
				// none serves them to anyone, token or not.
				if a.metricsGate.verify != nil && !a.metricsGate.allows(r, nil) {
					plain(w, http.StatusForbidden, "sign the request with an access key, or send the metrics token (SLUICE_METRICS_TOKEN) as a bearer token\n")
					return
				}
				a.serveOps(w, r, true)
				return
			}
		case "/":
			if isFrontPage(r) {
				a.serveFront(w, r)
				return
			}
		}
		sqs.ServeHTTP(w, r)
	})
}

// underFrontEnd is path without what a front end put before the operator's
// /_sluice/ paths: an API Gateway stage ("/prod/_sluice/maintain"), a custom
// domain's base path. Other paths are returned as they are.
func underFrontEnd(path string) string {
	if i := strings.Index(path, "/_sluice/"); i > 0 {
		return path[i:]
	}
	if strings.HasSuffix(path, console.Path) {
		return console.Path
	}
	return path
}

// withPath is r with its URL's path replaced.
func withPath(r *http.Request, path string) *http.Request {
	if path == r.URL.Path {
		return r
	}
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path, u.RawPath = path, ""
	r2.URL = &u
	return r2
}

// OpsHandler serves only the operator's paths (health, readiness and
// metrics), for a listener of their own (--metrics-addr).
func (a *App) OpsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.serveOps(w, r, true) })
}

// serveOps answers the operator's paths; with why, a failed readiness
// check says why. The SQS listener of a server that checks signatures
// does not: the store's error can name its database's address or project
// to anyone.
func (a *App) serveOps(w http.ResponseWriter, r *http.Request, why bool) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case PathHealth:
		plain(w, http.StatusOK, "ok\n")
	case PathReady:
		if err := a.Ready(r.Context()); err != nil {
			if !why {
				plain(w, http.StatusServiceUnavailable, "not ready\n")
				return
			}
			plain(w, http.StatusServiceUnavailable, "not ready: "+err.Error()+"\n")
			return
		}
		plain(w, http.StatusOK, "ok\n")
	case PathMetrics:
		a.metrics.handler().ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

// Ready reports why the app cannot serve, or nil: it is shutting down, or
// its store says it cannot (stores.HealthChecker; a store that does not
// implement it counts as ready).
func (a *App) Ready(ctx context.Context) error {
	if a.shuttingDown.Load() {
		return fmt.Errorf("shutting down")
	}
	hc, ok := a.rawStore.(stores.HealthChecker)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	if err := hc.Health(ctx); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// isFrontPage tells a browser or a curl at "/" from an SQS request: SQS
// requests name their action in X-Amz-Target (JSON) or in Action (Query,
// which a GET carries in its URL).
func isFrontPage(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if r.Header.Get("X-Amz-Target") != "" {
		return false
	}
	return !r.URL.Query().Has("Action")
}

func (a *App) serveFront(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	fmt.Fprintf(&b, "sluice %s\n\n", a.build)
	b.WriteString("An Amazon SQS-compatible server. Point an AWS SDK's or the AWS CLI's SQS endpoint at this URL.\n\n")
	fmt.Fprintf(&b, "%-10s liveness\n%-10s readiness (the store can serve)\n", PathHealth, PathReady)
	if a.metricsHere {
		fmt.Fprintf(&b, "%-10s Prometheus metrics\n", PathMetrics)
	}
	if a.console != nil {
		fmt.Fprintf(&b, "%s/ the web console\n", console.Path)
	}
	plain(w, http.StatusOK, b.String())
}

func plain(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", fmt.Sprint(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body)) // a HEAD discards it
}
