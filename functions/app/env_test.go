package app_test

import (
	"io"
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
		if _, err := app.FromEnv(envOf(map[string]string{name: v}), io.Discard); err == nil {
			t.Errorf("%s=%q: accepted", name, v)
		}
	}
}

func TestFromEnvConfig(t *testing.T) {
	cfg, err := app.FromEnv(envOf(map[string]string{
		"SLUICE_STORE": "mem://", "SLUICE_REGION": "eu-west-1", "SLUICE_ACCOUNT_ID": "123456789012",
		"SLUICE_BASE_URL": "https://sqs.example.com", "SLUICE_METRICS_MAX_QUEUES": "0",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store != "mem://" || cfg.Region != "eu-west-1" || cfg.AccountID != "123456789012" || cfg.BaseURL != "https://sqs.example.com" || cfg.MetricsMaxQueues != -1 || cfg.Logger == nil {
		t.Errorf("config: %+v", cfg)
	}
}
