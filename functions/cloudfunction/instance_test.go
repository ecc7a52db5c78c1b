package cloudfunction_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions/app"
	"github.com/sluicehq/sluice/functions/cloudfunction"
	_ "github.com/sluicehq/sluice/stores/memstore"
)

// listQueues sends a Query ListQueues to srv and returns the status and
// the error code, if any.
func listQueues(t *testing.T, srv *httptest.Server) (int, string) {
	t.Helper()
	resp, err := http.PostForm(srv.URL+"/", url.Values{"Action": {"ListQueues"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	code := ""
	if _, rest, ok := strings.Cut(b.String(), "<Code>"); ok {
		code, _, _ = strings.Cut(rest, "</Code>")
	}
	return resp.StatusCode, code
}

func memConfig() (app.Config, error) {
	return app.Config{Store: "mem://", Logger: slog.New(slog.DiscardHandler)}, nil
}

// TestInstanceRetriesAfterFailure: a failed build is answered with
// InternalError for RetryAfter without trying again, then retried.
func TestInstanceRetriesAfterFailure(t *testing.T) {
	var calls atomic.Int32
	var healthy atomic.Bool
	var logs bytes.Buffer
	in := cloudfunction.New(cloudfunction.Options{
		RetryAfter: 200 * time.Millisecond,
		Logs:       &logs,
		Config: func() (app.Config, error) {
			calls.Add(1)
			if !healthy.Load() {
				return app.Config{}, errors.New("bad SLUICE_REGION")
			}
			return memConfig()
		},
	})
	srv := httptest.NewServer(in)
	defer srv.Close()
	defer in.Shutdown(context.Background())

	for i := 0; i < 2; i++ {
		if status, code := listQueues(t, srv); status != 500 || code != "InternalError" {
			t.Fatalf("request %d while broken: %d %q, want 500 InternalError", i, status, code)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d attempts within RetryAfter, want 1", n)
	}
	if !strings.Contains(logs.String(), "bad SLUICE_REGION") {
		t.Errorf("the error is not logged: %q", logs.String())
	}
	healthy.Store(true)
	time.Sleep(250 * time.Millisecond)
	for i := 0; i < 2; i++ {
		if status, code := listQueues(t, srv); status != 200 {
			t.Fatalf("request %d once healthy: %d %q", i, status, code)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d attempts, want 2 (one more after RetryAfter, then the app is kept)", n)
	}
}

// TestInstanceBuildsOnce: concurrent first requests share one build.
func TestInstanceBuildsOnce(t *testing.T) {
	var calls atomic.Int32
	in := cloudfunction.New(cloudfunction.Options{Config: func() (app.Config, error) {
		calls.Add(1)
		time.Sleep(50 * time.Millisecond) // the others arrive meanwhile
		return memConfig()
	}})
	srv := httptest.NewServer(in)
	defer srv.Close()
	defer in.Shutdown(context.Background())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if status, code := listQueues(t, srv); status != 200 {
				t.Errorf("%d %q", status, code)
			}
		})
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("%d builds for 8 concurrent first requests, want 1", n)
	}
}

// TestInstanceAfterShutdown: once stopped, requests get
// ServiceUnavailable (SDKs retry it on another instance) and nothing is
// built again.
func TestInstanceAfterShutdown(t *testing.T) {
	var calls atomic.Int32
	in := cloudfunction.New(cloudfunction.Options{Config: func() (app.Config, error) {
		calls.Add(1)
		return memConfig()
	}})
	srv := httptest.NewServer(in)
	defer srv.Close()
	if status, _ := listQueues(t, srv); status != 200 {
		t.Fatalf("status %d", status)
	}
	if err := in.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if status, code := listQueues(t, srv); status != 503 || code != "ServiceUnavailable" {
		t.Errorf("after Shutdown: %d %q, want 503 ServiceUnavailable", status, code)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d builds, want 1", n)
	}
}
