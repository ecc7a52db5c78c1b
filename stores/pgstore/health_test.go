package pgstore

import (
	"context"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/stores"
)

var (
	_ stores.HealthChecker = (*Store)(nil)
	_ stores.Describer     = (*Store)(nil)
)

func TestHealthPingsTheDatabase(t *testing.T) {
	dsn, schema := newSchema(t)
	s, err := Open(context.Background(), dsn, Options{Schema: schema, Logger: quietLogger(), MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Health(context.Background()); err != nil {
		t.Fatalf("Health of an open store: %v", err)
	}
	attrs := map[string]string{}
	for _, a := range s.Describe(context.Background()) {
		attrs[a.Key] = a.Value.String()
	}
	ms, _ := migrations()
	latest := ms[len(ms)-1].version
	if attrs["schema"] != schema || attrs["schema_version"] != attrs["binary_schema_version"] ||
		attrs["schema_version"] != strconv.Itoa(latest) || attrs["database"] == "" {
		t.Errorf("Describe = %v (latest migration %d)", attrs, latest)
	}
	_ = s.Close()
	if err := s.Health(context.Background()); err == nil {
		t.Error("Health of a closed pool: nil")
	}
}
