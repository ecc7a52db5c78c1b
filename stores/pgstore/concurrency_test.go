package pgstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// The concurrency of claims, sends, deduplication and deletes is the
// conformance suite's (its Stress area runs two Stores on one schema); here
// are the helpers other tests share and what is PostgreSQL's own.

func createQueue(t testing.TB, s *Store, name string, fifo bool) *stores.Queue {
	t.Helper()
	res, err := s.QueueCreate(context.Background(), &stores.QueueCreateParams{Queue: &stores.Queue{
		Name: name, ID: randomName("id-"), FIFO: fifo, Attributes: map[string]string{}, Retention: 4 * 24 * time.Hour,
	}})
	if err != nil {
		t.Fatalf("QueueCreate %s: %v", name, err)
	}
	return res.Queue
}

func newMsg(body, group, dedup string) stores.NewMessage {
	return stores.NewMessage{ID: randomName("m-"), Body: body, MD5OfBody: "x", GroupID: group, DedupID: dedup}
}

// Several instances opening one fresh schema at once migrate it once.
func TestConcurrentOpen(t *testing.T) {
	dsn, schema := newSchema(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(context.Background(), dsn, Options{Schema: schema, Logger: quietLogger(), MaxConns: 2})
			errs[i] = err
			if err == nil {
				s.Close()
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	s := openSchema(t, dsn, schema)
	var n int
	if err := s.pool.QueryRow(context.Background(), "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	ms, _ := migrations()
	if n != len(ms) {
		t.Errorf("schema_migrations has %d rows, want %d", n, len(ms))
	}
}
