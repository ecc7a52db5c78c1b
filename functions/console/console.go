// Package console serves sluice's web console at Path: the queues with
// their depths and attributes, a look at their messages, a test send,
// purge, dead-letter redrive and live message rates. It is a page and a
// small JSON API the page calls; every action goes through the SQS
// service layer (functions/service), so the console applies no SQS rule of
// its own and shows the service's errors as AWS words them.
//
// # Who may use it
//
// A browser cannot sign requests with Signature V4, so when the server
// checks signatures (Config.Keys set) the console asks for HTTP Basic
// credentials: the user name is an access key id, the password its
// secret key (SECRET:TOKEN for a key with a session token), compared with
// the configured keys in constant time. The console then acts for that
// key's account, as a signed request would. Without keys it is open, as
// the API is.
//
// # Cross-site requests
//
// A browser sends cached Basic credentials with any request to the server,
// a cross-site one too, so each request that changes something (peek
// counts as one: it receives) must show it comes from the console's own
// page: POST, Content-Type application/json, the header X-Sluice-Csrf with
// the token the page got from GET api/session, and when the browser says
// where it comes from (Origin, Sec-Fetch-Site), this server. A page on
// another site can neither read the token nor send that header or that
// content type without a CORS preflight, which the console never allows.
// The token is an HMAC of the access key id under the key's secret, so
// every instance of a deployment computes the same one and nobody without
// the secret can; open consoles have a fixed one (there the header and the
// origin checks are the guard).
package console

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/functions/sigv4"
)

// Path is where the console lives. Its first segment starts with "_",
// which no account id does, so no SQS queue URL can be under it.
const Path = "/_sluice/console"

// CSRFHeader carries the token of GET api/session on every POST.
const CSRFHeader = "X-Sluice-Csrf"

//go:embed assets
var assets embed.FS

// Config configures a Console.
type Config struct {
	// Service is the SQS service the console acts through.
	Service *service.Service
	// Keys, when set, are the access keys whose id and secret the console
	// accepts as Basic credentials; none: the console is open.
	Keys []sigv4.Key
	// TrustForwarded reads the host the browser addressed from
	// X-Forwarded-Host, as the SQS handler does (httpapi.Options).
	TrustForwarded bool
	// MaxQueues bounds the queues one listing shows; 0 means 200.
	MaxQueues int
	// Budget is the memory budget of request bodies the console's share
	// with the SQS API's (httpapi.Options.Budget); nil: one of its own.
	Budget *httpapi.BodyBudget
	Logger *slog.Logger
}

// Console is the console's HTTP handler, for requests under Path.
type Console struct {
	cfg    Config
	svc    *service.Service
	log    *slog.Logger
	static fs.FS
}

// New returns the console over cfg.Service.
func New(cfg Config) *Console {
	if cfg.MaxQueues <= 0 {
		cfg.MaxQueues = 200
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Budget == nil {
		cfg.Budget = httpapi.NewBodyBudget(0)
	}
	static, _ := fs.Sub(assets, "assets")
	return &Console{cfg: cfg, svc: cfg.Service, log: cfg.Logger, static: static}
}

// session is who is using the console: the key that authenticated, or nil
// on an open console.
type session struct {
	key *sigv4.Key
}

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")

	sess, ok := c.authenticate(r)
	if !ok {
		h.Set("WWW-Authenticate", `Basic realm="sluice console", charset="UTF-8"`)
		writeError(w, http.StatusUnauthorized, "Unauthorized", "Sign in with an access key id as the user name and its secret key as the password.")
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, Path)
	switch {
	case rest == "":
		// Relative, so that it stays under a front end's prefix (an API
		// Gateway stage), which the app takes off the path before the
		// console sees it.
		h.Set("Location", path.Base(Path)+"/")
		w.WriteHeader(http.StatusMovedPermanently)
	case strings.HasPrefix(rest, "/api/"):
		c.serveAPI(w, r, sess, strings.TrimPrefix(rest, "/api/"))
	default:
		c.serveStatic(w, r, rest)
	}
}

// authenticate checks the Basic credentials against every key, each in
// constant time and all of them whatever matches, so that the time taken
// tells nothing of which ids exist.
func (c *Console) authenticate(r *http.Request) (session, bool) {
	if len(c.cfg.Keys) == 0 {
		return session{}, true
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return session{}, false
	}
	var found *sigv4.Key
	for i := range c.cfg.Keys {
		k := &c.cfg.Keys[i]
		want := k.SecretAccessKey
		if k.SessionToken != "" {
			want += ":" + k.SessionToken
		}
		idOK := subtle.ConstantTimeCompare([]byte(user), []byte(k.AccessKeyID))
		passOK := subtle.ConstantTimeCompare([]byte(pass), []byte(want))
		if idOK&passOK == 1 {
			found = k
		}
	}
	if found == nil {
		c.log.Info("console: credentials refused", "access_key_id", clip(user))
		return session{}, false
	}
	return session{key: found}, true
}

// token is the session's CSRF token (see the package doc).
func (c *Console) token(s session) string {
	key, msg := []byte("sluice console, open"), c.svc.Region()
	if s.key != nil {
		key, msg = []byte(s.key.SecretAccessKey), s.key.AccessKeyID
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("sluice console csrf v1\x00" + msg))
	return hex.EncodeToString(m.Sum(nil))
}

// sameOrigin refuses a state-changing request that does not come from the
// console's own page; the reason is for the answer.
func (c *Console) sameOrigin(r *http.Request, s session) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return fmt.Errorf("cross-site request (Sec-Fetch-Site: %s)", site)
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		base, _ := url.Parse(httpapi.RequestBase(r, c.cfg.TrustForwarded))
		if err != nil || u.Host == "" || base == nil || !strings.EqualFold(u.Host, base.Host) {
			return fmt.Errorf("request from another origin (%s)", printable(o))
		}
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return fmt.Errorf("the body must be application/json")
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(c.token(s))) != 1 {
		return fmt.Errorf("missing or wrong %s header; reload the console", CSRFHeader)
	}
	return nil
}

// context is what the service needs to know of the request: the host for
// queue URLs and whom it acts for.
func (c *Console) context(r *http.Request, s session) context.Context {
	ctx := service.WithRequestBase(r.Context(), httpapi.RequestBase(r, c.cfg.TrustForwarded))
	if s.key != nil && s.key.AccountID != "" {
		ctx = service.WithCaller(ctx, service.Caller{AccountID: s.key.AccountID, Region: c.svc.Region()})
	}
	return ctx
}

func (c *Console) serveStatic(w http.ResponseWriter, r *http.Request, name string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "use GET")
		return
	}
	name = strings.TrimPrefix(path.Clean(name), "/")
	if name == "" {
		name = "index.html"
	}
	b, err := fs.ReadFile(c.static, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(b)
	}
}

// apiError is how the API answers a failure: the service's errors keep
// AWS's code and message (JSON protocol wording).
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]apiError{"error": {Code: code, Message: msg}})
}

// fail answers err: a *contract.Error as AWS would (code, message,
// status), anything else as InternalError, logged.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, action string, err error) {
	var ce *contract.Error
	if !errors.As(err, &ce) {
		if r.Context().Err() == nil {
			c.log.Error("console: internal error", "action", action, "err", err)
		}
		ce = contract.ErrInternal()
	}
	status := ce.Status
	if status < 400 || status > 599 {
		status = http.StatusBadRequest
		if !ce.Sender {
			status = http.StatusInternalServerError
		}
	}
	writeError(w, status, ce.Code, ce.MessageFor(false))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"error":{"code":"InternalError","message":"cannot encode the answer"}}`)
		status = http.StatusInternalServerError
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// clip is at most 64 bytes of something a client sent, for a log.
func clip(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return s
}

// printable is clip quoted, for an answer.
func printable(s string) string { return fmt.Sprintf("%q", clip(s)) }
