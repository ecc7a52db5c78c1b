package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/functions/app"
	"github.com/sluicehq/sluice/functions/lambdahttp"
)

// Behind a REST API every path starts with its stage (/prod/...), as the
// Lambda adapter hands it on: the console (its redirect to the slash
// included) and the maintenance path are reached there all the same
// (docs/lambda.md).
func TestOperatorPathsBehindAStage(t *testing.T) {
	a := newApp(t, app.Config{Store: "mem://", Auth: app.AuthNone, Console: true})
	h := lambdahttp.New(a.Handler(), lambdahttp.Options{})
	invoke := func(method, path string) events.APIGatewayProxyResponse {
		t.Helper()
		ev := events.APIGatewayProxyRequest{HTTPMethod: method, Path: path,
			Headers: map[string]string{"Host": "abc123.execute-api.us-east-1.amazonaws.com", "X-Forwarded-Proto": "https"},
			RequestContext: events.APIGatewayProxyRequestContext{Stage: "prod", Path: "/prod" + path,
				DomainName: "abc123.execute-api.us-east-1.amazonaws.com"}}
		payload, _ := json.Marshal(ev)
		out, err := h.Invoke(context.Background(), payload)
		if err != nil {
			t.Fatal(err)
		}
		var resp events.APIGatewayProxyResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// The redirect to the slash stays under the stage.
	r := invoke("GET", "/_sluice/console")
	loc := r.Headers["Location"]
	if loc == "" && len(r.MultiValueHeaders["Location"]) > 0 {
		loc = r.MultiValueHeaders["Location"][0]
	}
	if got := mustParse(t, "https://abc123.execute-api.us-east-1.amazonaws.com/prod/_sluice/console").ResolveReference(mustParse(t, loc)).Path; got != "/prod/_sluice/console/" {
		t.Errorf("GET /prod/_sluice/console: %d, Location %q resolves to %q, outside the stage", r.StatusCode, loc, got)
	}
	if r := invoke("GET", "/_sluice/console/"); r.StatusCode != http.StatusOK {
		t.Errorf("GET /prod/_sluice/console/: %d %.300q, want the console page", r.StatusCode, r.Body)
	}
	if r := invoke("GET", "/_sluice/console/api/queues"); r.StatusCode != http.StatusOK {
		t.Errorf("GET /prod/_sluice/console/api/queues: %d %.300q, want the queues", r.StatusCode, r.Body)
	}
	if r := invoke("POST", "/_sluice/maintain"); r.StatusCode != http.StatusOK {
		t.Errorf("POST /prod/_sluice/maintain: %d %.300q, want a maintenance pass", r.StatusCode, r.Body)
	}
}

// Tokens from secrets often end in a newline, which no header carries:
// they are trimmed, as access keys are.
func TestOperatorTokensAreTrimmed(t *testing.T) {
	cfg, err := app.FromEnv(envOf(map[string]string{"SLUICE_STORE": "mem://",
		"SLUICE_ACCESS_KEYS": "AKIDM:secretm\n", "SLUICE_MAINTENANCE_TOKEN": "tok123\n", "SLUICE_METRICS_TOKEN": "mtok\n"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	a := newApp(t, cfg)
	if w := operatorRequest(t, a, http.MethodPost, app.PathMaintain, "", "", "tok123"); w.Code != http.StatusOK {
		t.Errorf("maintain with the token: %d %s", w.Code, w.Body.String())
	}
	if w := operatorRequest(t, a, http.MethodGet, app.PathMetrics, "", "", "mtok"); w.Code != http.StatusOK {
		t.Errorf("metrics with the token: %d", w.Code)
	}
}

// The metrics are gated only where signatures are checked (README): a
// token set on a server that checks none does not lock scrapers out.
func TestMetricsOpenWithoutSignaturesTokenOrNot(t *testing.T) {
	a := newApp(t, app.Config{Store: "mem://", Auth: app.AuthNone, MetricsToken: "mtok"})
	if w := operatorRequest(t, a, http.MethodGet, app.PathMetrics, "", "", ""); w.Code != http.StatusOK {
		t.Errorf("a plain scrape: %d, want 200", w.Code)
	}
}
