package app

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/functions/httpapi"
)

// Settings are what an entry point reads from its environment, as text
// (flags of sluice serve take them as their defaults and may replace
// them). Every entry point reads the same variables, here and nowhere
// else: SettingsFromEnv names them.
type Settings struct {
	Store          string // SLUICE_STORE
	Wakeups        string // SLUICE_WAKEUPS
	Region         string // SLUICE_REGION
	AccountID      string // SLUICE_ACCOUNT_ID
	BaseURL        string // SLUICE_BASE_URL
	TrustForwarded bool   // SLUICE_TRUST_FORWARDED
	// Auth: SLUICE_AUTH, sigv4 or none; empty means sigv4 when keys are
	// given, otherwise none (see Config).
	Auth string
	// AccessKeys: SLUICE_ACCESS_KEYS, AKID:SECRET[:ACCOUNT[:TOKEN]],...
	// (ParseKeys); AccessKeysFile: SLUICE_ACCESS_KEYS_FILE, a file holding
	// the same (a mounted secret). Both may be given; their keys add up.
	AccessKeys     string
	AccessKeysFile string
	// MaxWait: SLUICE_MAX_WAIT (Config.MaxWait), e.g. 9s.
	MaxWait time.Duration
	// MaintenanceToken: SLUICE_MAINTENANCE_TOKEN (Config.MaintenanceToken).
	MaintenanceToken string
	// MetricsToken: SLUICE_METRICS_TOKEN (Config.MetricsToken).
	MetricsToken    string
	LogLevel        string // SLUICE_LOG_LEVEL
	LogFormat       string // SLUICE_LOG_FORMAT
	RequestLogLevel string // SLUICE_REQUEST_LOG_LEVEL
	QueuesFile      string // SLUICE_QUEUES
	BodyMemory      int64  // SLUICE_BODY_MEMORY
	BodyTimeout     time.Duration
	NoCooldowns     bool // SLUICE_DEV_NO_COOLDOWNS
	// DevClockOffset: SLUICE_DEV_CLOCK_OFFSET (Config.DevClockOffset).
	DevClockOffset time.Duration
	// MetricsMaxQueues: SLUICE_METRICS_MAX_QUEUES; 0 means none.
	MetricsMaxQueues int
	// Console: SLUICE_CONSOLE (Config.Console).
	Console bool

	// Of a server that listens itself (sluice serve, a container).
	Addr            string // PORT (all interfaces), else SLUICE_ADDR
	MetricsAddr     string // SLUICE_METRICS_ADDR
	ShutdownTimeout time.Duration
}

// DefaultAddr is where sluice serve listens when neither PORT nor
// SLUICE_ADDR says otherwise: loopback, for local development.
const DefaultAddr = "127.0.0.1:9324"

// SettingsFromEnv reads the settings from lookup (os.LookupEnv), with the
// defaults of each for what is unset or empty. PORT, which Cloud Run and
// other platforms set, makes the server listen on all interfaces at that
// port and takes precedence over SLUICE_ADDR (a container image may set
// SLUICE_ADDR, and the platform's port must win).
func SettingsFromEnv(lookup func(string) (string, bool)) (Settings, error) {
	get := func(name, def string) string {
		if v, ok := lookup(name); ok && v != "" {
			return v
		}
		return def
	}
	s := Settings{
		Store:            get("SLUICE_STORE", ""),
		Wakeups:          get("SLUICE_WAKEUPS", ""),
		Region:           get("SLUICE_REGION", "us-east-1"),
		AccountID:        get("SLUICE_ACCOUNT_ID", "000000000000"),
		BaseURL:          get("SLUICE_BASE_URL", ""),
		LogLevel:         get("SLUICE_LOG_LEVEL", "info"),
		LogFormat:        get("SLUICE_LOG_FORMAT", "text"),
		RequestLogLevel:  get("SLUICE_REQUEST_LOG_LEVEL", "debug"),
		QueuesFile:       get("SLUICE_QUEUES", ""),
		Auth:             get("SLUICE_AUTH", ""),
		AccessKeys:       get("SLUICE_ACCESS_KEYS", ""),
		AccessKeysFile:   get("SLUICE_ACCESS_KEYS_FILE", ""),
		MaintenanceToken: get("SLUICE_MAINTENANCE_TOKEN", ""),
		MetricsToken:     get("SLUICE_METRICS_TOKEN", ""),
		Addr:             get("SLUICE_ADDR", DefaultAddr),
		MetricsAddr:      get("SLUICE_METRICS_ADDR", ""),
	}
	if port := get("PORT", ""); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return Settings{}, fmt.Errorf("bad PORT %q: use a port number", port)
		}
		s.Addr = ":" + port
	}
	var err error
	if s.BodyMemory, err = strconv.ParseInt(get("SLUICE_BODY_MEMORY", strconv.Itoa(httpapi.DefaultBodyMemory)), 10, 64); err != nil {
		return Settings{}, fmt.Errorf("bad SLUICE_BODY_MEMORY %q: use a number of bytes", get("SLUICE_BODY_MEMORY", ""))
	}
	if s.BodyTimeout, err = time.ParseDuration(get("SLUICE_BODY_TIMEOUT", httpapi.DefaultBodyTimeout.String())); err != nil {
		return Settings{}, fmt.Errorf("bad SLUICE_BODY_TIMEOUT %q: use a duration such as 30s", get("SLUICE_BODY_TIMEOUT", ""))
	}
	if s.ShutdownTimeout, err = time.ParseDuration(get("SLUICE_SHUTDOWN_TIMEOUT", "30s")); err != nil {
		return Settings{}, fmt.Errorf("bad SLUICE_SHUTDOWN_TIMEOUT %q: use a duration such as 30s", get("SLUICE_SHUTDOWN_TIMEOUT", ""))
	}
	if v := get("SLUICE_TRUST_FORWARDED", ""); v != "" {
		if s.TrustForwarded, err = strconv.ParseBool(v); err != nil {
			return Settings{}, fmt.Errorf("bad SLUICE_TRUST_FORWARDED %q: use true or false", v)
		}
	}
	if v := get("SLUICE_DEV_NO_COOLDOWNS", ""); v != "" {
		if s.NoCooldowns, err = strconv.ParseBool(v); err != nil {
			return Settings{}, fmt.Errorf("bad SLUICE_DEV_NO_COOLDOWNS %q: use true or false", v)
		}
	}
	if v := get("SLUICE_CONSOLE", ""); v != "" {
		if s.Console, err = strconv.ParseBool(v); err != nil {
			return Settings{}, fmt.Errorf("bad SLUICE_CONSOLE %q: use true or false", v)
		}
	}
	if v := get("SLUICE_MAX_WAIT", ""); v != "" {
		if s.MaxWait, err = time.ParseDuration(v); err != nil || s.MaxWait < 0 {
			return Settings{}, fmt.Errorf("bad SLUICE_MAX_WAIT %q: use a duration such as 9s", v)
		}
	}
	if v := get("SLUICE_DEV_CLOCK_OFFSET", ""); v != "" {
		if s.DevClockOffset, err = time.ParseDuration(v); err != nil {
			return Settings{}, fmt.Errorf("bad SLUICE_DEV_CLOCK_OFFSET %q: use a duration such as 6m", v)
		}
	}
	if s.MetricsMaxQueues, err = strconv.Atoi(get("SLUICE_METRICS_MAX_QUEUES", "100")); err != nil {
		return Settings{}, fmt.Errorf("bad SLUICE_METRICS_MAX_QUEUES %q: use a number", get("SLUICE_METRICS_MAX_QUEUES", ""))
	}
	return s, nil
}

// Config turns the settings into the app's configuration, with a logger
// that writes to logs. The queues file, when named, is read now.
func (s Settings) Config(logs io.Writer) (Config, error) {
	logger, err := NewLogger(logs, s.LogLevel, s.LogFormat)
	if err != nil {
		return Config{}, err
	}
	reqLevel, err := ParseRequestLogLevel(s.RequestLogLevel)
	if err != nil {
		return Config{}, err
	}
	c := Config{
		Store: s.Store, Wakeups: s.Wakeups, Region: s.Region, AccountID: s.AccountID, BaseURL: s.BaseURL, TrustForwarded: s.TrustForwarded,
		Logger: logger, RequestLogLevel: reqLevel, BodyMemory: s.BodyMemory, BodyTimeout: s.BodyTimeout,
		NoCooldowns: s.NoCooldowns, DevClockOffset: s.DevClockOffset, MetricsMaxQueues: s.MetricsMaxQueues,
		MaintenanceToken: s.MaintenanceToken, MetricsToken: s.MetricsToken, MaxWait: s.MaxWait, Console: s.Console,
	}
	switch {
	case c.MetricsMaxQueues == 0:
		c.MetricsMaxQueues = -1 // none
	case c.MetricsMaxQueues < 0:
		return Config{}, fmt.Errorf("bad metrics max queues %d", s.MetricsMaxQueues)
	}
	if err := s.auth(&c); err != nil {
		return Config{}, err
	}
	if s.QueuesFile != "" {
		qs, err := LoadQueuesFile(s.QueuesFile)
		if err != nil {
			return Config{}, &QueuesFileError{Err: err}
		}
		c.Queues, c.QueuesSource = qs, s.QueuesFile
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// auth sets c's authentication: the keys given (inline and in the file),
// checked with sigv4 unless Auth says none.
func (s Settings) auth(c *Config) error {
	text := strings.TrimSpace(s.AccessKeys)
	if s.AccessKeysFile != "" {
		b, err := os.ReadFile(s.AccessKeysFile)
		if err != nil {
			return fmt.Errorf("access keys file: %w", err)
		}
		if f := strings.TrimSpace(string(b)); f != "" {
			text = strings.Trim(text+","+f, ",")
		}
	}
	c.Auth = strings.ToLower(s.Auth)
	if text == "" {
		return nil
	}
	keys, err := ParseKeys(text)
	if err != nil {
		return err
	}
	if c.Auth == "" {
		c.Auth = AuthSigV4 // keys given: checked unless told otherwise
	}
	if c.Auth == AuthSigV4 {
		c.AuthKeys = keys
	}
	return nil
}

// FromEnv is the configuration an entry point without flags (a function)
// runs with: SettingsFromEnv, then Config, logging to logs. A function is
// reachable from anywhere, so it does not start without access keys
// unless SLUICE_AUTH=none says so explicitly.
func FromEnv(lookup func(string) (string, bool), logs io.Writer) (Config, error) {
	s, err := SettingsFromEnv(lookup)
	if err != nil {
		return Config{}, err
	}
	c, err := s.Config(logs)
	if err != nil {
		return Config{}, err
	}
	if c.Auth == "" {
		return Config{}, errors.New("no access keys: set SLUICE_ACCESS_KEYS (or SLUICE_ACCESS_KEYS_FILE) so that signatures are checked, or SLUICE_AUTH=none to serve anyone who reaches the function")
	}
	return c, nil
}

// NewLogger is a logger at level (debug, info, warn or error) in format
// (text or json) writing to w.
func NewLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("bad log level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(format) {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("bad log format %q: use text or json", format)
}

// LevelOff is above every level a logger is set to: a request line at it
// is never logged.
const LevelOff = slog.Level(1 << 10)

// ParseRequestLogLevel reads the level of the line logged per request:
// debug, info, warn, error, or off (none).
func ParseRequestLogLevel(s string) (slog.Leveler, error) {
	if strings.EqualFold(s, "off") || strings.EqualFold(s, "none") {
		return LevelOff, nil
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		return nil, fmt.Errorf("bad request log level %q: use debug, info, warn, error or off", s)
	}
	return level, nil
}

// QueuesFileError: the queues file (Settings.QueuesFile) cannot be read or
// is wrong; Err names the file.
type QueuesFileError struct{ Err error }

func (e *QueuesFileError) Error() string { return "queues file " + e.Err.Error() }
func (e *QueuesFileError) Unwrap() error { return e.Err }
