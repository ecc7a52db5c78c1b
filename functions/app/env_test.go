package app_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions/app"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestSettingsFromEnvDefaults(t *testing.T) {
	s, err := app.SettingsFromEnv(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr != app.DefaultAddr || s.Region != "us-east-1" || s.AccountID != "000000000000" || s.ShutdownTimeout != 30*time.Second || s.MetricsMaxQueues != 100 {
		t.Errorf("defaults: %+v", s)
	}
}

// PORT, which Cloud Run sets, wins over SLUICE_ADDR (which an image may
// set) and listens on every interface.
func TestSettingsFromEnvPort(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		addr string
	}{
		{map[string]string{"SLUICE_ADDR": "127.0.0.1:7000"}, "127.0.0.1:7000"},
		{map[string]string{"PORT": "8080"}, ":8080"},
		{map[string]string{"PORT": "8080", "SLUICE_ADDR": ":9324"}, ":8080"},
		{map[string]string{"PORT": ""}, app.DefaultAddr},
	} {
		s, err := app.SettingsFromEnv(envOf(c.env))
		if err != nil || s.Addr != c.addr {
			t.Errorf("%v: addr %q, %v; want %q", c.env, s.Addr, err, c.addr)
		}
	}
}

func TestSettingsFromEnvRefusesBadValues(t *testing.T) {
	for name, v := range map[string]string{
		"PORT": "http", "SLUICE_BODY_MEMORY": "lots", "SLUICE_BODY_TIMEOUT": "30",
		"SLUICE_SHUTDOWN_TIMEOUT": "x", "SLUICE_DEV_NO_COOLDOWNS": "maybe", "SLUICE_METRICS_MAX_QUEUES": "ten",
		"SLUICE_TRUST_FORWARDED": "maybe", "SLUICE_DEV_CLOCK_OFFSET": "soon",
	} {
		if _, err := app.SettingsFromEnv(envOf(map[string]string{name: v})); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: %v, want an error naming %s", name, v, err, name)
		}
	}
	for name, v := range map[string]string{"SLUICE_ACCOUNT_ID": "12", "SLUICE_LOG_LEVEL": "loud", "SLUICE_REQUEST_LOG_LEVEL": "loud", "SLUICE_REGION": "US EAST"} {
		if _, err := app.FromEnv(envOf(map[string]string{name: v, "SLUICE_AUTH": "none"}), io.Discard); err == nil {
			t.Errorf("%s=%q: accepted", name, v)
		}
	}
}

func TestFromEnvConfig(t *testing.T) {
	cfg, err := app.FromEnv(envOf(map[string]string{
		"SLUICE_STORE": "mem://", "SLUICE_REGION": "eu-west-1", "SLUICE_ACCOUNT_ID": "123456789012",
		"SLUICE_BASE_URL": "https://sqs.example.com", "SLUICE_METRICS_MAX_QUEUES": "0", "SLUICE_AUTH": "none",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store != "mem://" || cfg.Region != "eu-west-1" || cfg.AccountID != "123456789012" || cfg.BaseURL != "https://sqs.example.com" || cfg.MetricsMaxQueues != -1 || cfg.Logger == nil {
		t.Errorf("config: %+v", cfg)
	}
}

// Keys given mean signatures are checked; a function does not start with
// none unless told to; the keys of the variable and of the file add up.
func TestFromEnvAuth(t *testing.T) {
	if _, err := app.FromEnv(envOf(map[string]string{"SLUICE_STORE": "mem://"}), io.Discard); err == nil || !strings.Contains(err.Error(), "SLUICE_AUTH=none") {
		t.Errorf("no keys and no SLUICE_AUTH: %v, want a refusal naming SLUICE_AUTH=none", err)
	}
	cfg, err := app.FromEnv(envOf(map[string]string{"SLUICE_AUTH": "none"}), io.Discard)
	if err != nil || cfg.Auth != app.AuthNone {
		t.Errorf("SLUICE_AUTH=none: auth %q, %v", cfg.Auth, err)
	}
	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, []byte("AKIDFILE:secret-from-file:123456789012\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = app.FromEnv(envOf(map[string]string{"SLUICE_ACCESS_KEYS": "AKIDENV:secret-from-env", "SLUICE_ACCESS_KEYS_FILE": file}), io.Discard)
	if err != nil || cfg.Auth != app.AuthSigV4 || len(cfg.AuthKeys) != 2 || cfg.AuthKeys[0].AccessKeyID != "AKIDENV" || cfg.AuthKeys[1].AccountID != "123456789012" {
		t.Errorf("keys from the variable and the file: auth %q, keys %d, %v", cfg.Auth, len(cfg.AuthKeys), err)
	}
	cfg, err = app.FromEnv(envOf(map[string]string{"SLUICE_ACCESS_KEYS": "AKIDENV:secret-from-env", "SLUICE_AUTH": "none"}), io.Discard)
	if err != nil || cfg.Auth != app.AuthNone || len(cfg.AuthKeys) != 0 {
		t.Errorf("keys with SLUICE_AUTH=none: auth %q, keys %d, %v; want none checked", cfg.Auth, len(cfg.AuthKeys), err)
	}
	_, err = app.FromEnv(envOf(map[string]string{"SLUICE_ACCESS_KEYS": "AKIDENV:s3cr3t-value:12"}), io.Discard)
	if err == nil || strings.Contains(err.Error(), "s3cr3t-value") {
		t.Errorf("a bad key: %v; want an error that does not show the secret", err)
	}
}
