package app

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/functions/httpapi"
)

// PathMaintain runs one maintenance pass (Maintain) on POST, for a
// scheduler to call where nothing runs between requests (Cloud Scheduler,
// EventBridge, cron). It is authenticated as SQS requests are: a
// Signature V4 by an access key, or the maintenance token as a bearer
// token (for schedulers that cannot sign); open only when the server
// checks no signatures and has no token.
const PathMaintain = "/_sluice/maintain"

// maintainBudget bounds one pass run through PathMaintain; a pass is
// bounded in work anyway (every store's Maintain is), this bounds its time
// under a slow store.
const maintainBudget = 50 * time.Second

// operatorGate says whether a request may use an operator's path that a
// server checking signatures keeps from strangers (a maintenance pass, the
// metrics): one signed by an access key, or carrying the path's token as a
// bearer token (for callers that cannot sign: schedulers, scrapers). With
// neither signatures checked nor a token set, the path is open.
type operatorGate struct {
	token  string
	verify func(*http.Request, []byte) (httpapi.Caller, error) // nil: no signatures checked
}

func (g operatorGate) allows(r *http.Request, body []byte) bool {
	if g.token != "" {
		bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(bearer)), []byte(g.token)) == 1 {
			return true
		}
	}
	if g.verify != nil {
		_, err := g.verify(r, body)
		return err == nil
	}
	return g.token == ""
}

func (a *App) serveMaintain(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": "use POST"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "cannot read the body"})
		return
	}
	if !a.maintain.allows(r, body) {
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "sign the request with an access key, or send the maintenance token as a bearer token"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), maintainBudget)
	defer cancel()
	start := time.Now()
	if err := a.Maintain(ctx); err != nil {
		a.log.Error("maintenance failed", "err", err)
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": "maintenance failed; see the server's log"})
		return
	}
	took := time.Since(start)
	a.log.Info("maintenance done", "took", took.Round(time.Millisecond).String())
	writeJSON(w, http.StatusOK, map[string]any{"took_ms": took.Milliseconds()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(b)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
