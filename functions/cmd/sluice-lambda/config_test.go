package main

import (
	"fmt"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestConfigFromEnv(t *testing.T) {
	if _, err := configFromEnv(env(nil)); err == nil || !strings.Contains(err.Error(), "SLUICE_STORE") {
		t.Errorf("no store: %v", err)
	}
	if _, err := configFromEnv(env(map[string]string{"SLUICE_STORE": "mem://"})); err == nil || !strings.Contains(err.Error(), "SLUICE_ACCESS_KEYS") {
		t.Errorf("no keys and no SLUICE_AUTH=none: %v", err)
	}
	cfg, err := configFromEnv(env(map[string]string{"SLUICE_STORE": "mem://", "SLUICE_REGION": "eu-west-1",
		"SLUICE_ACCOUNT_ID": "123456789012", "SLUICE_BASE_URL": "https://sqs.example.com",
		"SLUICE_ACCESS_KEYS": "AKIDEXAMPLE:secret"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store != "mem://" || cfg.Region != "eu-west-1" || cfg.AccountID != "123456789012" || cfg.BaseURL != "https://sqs.example.com" {
		t.Errorf("config %+v", cfg)
	}
	if len(cfg.AuthKeys) != 1 || !cfg.TrustForwarded {
		t.Errorf("keys %d, trust forwarded %v: want the key checked and the front end's headers trusted", len(cfg.AuthKeys), cfg.TrustForwarded)
	}
	// JSON lines unless told otherwise.
	if got := fmt.Sprintf("%T", cfg.Logger.Handler()); got != "*slog.JSONHandler" {
		t.Errorf("default log handler %s, want JSON", got)
	}
	cfg, err = configFromEnv(env(map[string]string{"SLUICE_STORE": "mem://", "SLUICE_AUTH": "none",
		"SLUICE_LOG_FORMAT": "text", "SLUICE_TRUST_FORWARDED": "false"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%T", cfg.Logger.Handler()); got != "*slog.TextHandler" {
		t.Errorf("SLUICE_LOG_FORMAT=text: handler %s", got)
	}
	if cfg.TrustForwarded {
		t.Error("SLUICE_TRUST_FORWARDED=false is not honoured")
	}
	if _, err := configFromEnv(env(map[string]string{"SLUICE_STORE": "mem://", "SLUICE_AUTH": "none", "SLUICE_ACCOUNT_ID": "12"})); err == nil {
		t.Error("a bad account id is accepted")
	}
}
