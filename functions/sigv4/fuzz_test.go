package sigv4

import (
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/sluicehq/sluice/contract"
)

// FuzzVerify feeds arbitrary Authorization headers, query strings, dates
// and bodies to Verify: it must answer each with a caller or an error of
// the catalogue, never panic, and never accept what no key signed.
func FuzzVerify(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260314/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=00", "", "20260314T150926Z", "")
	f.Add("", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20260314%2Fus-east-1%2Fsqs%2Faws4_request&X-Amz-Date=20260314T150926Z&X-Amz-SignedHeaders=host&X-Amz-Signature=00&X-Amz-Expires=60", "", "")
	f.Add("AWS4-HMAC-SHA256 Credential=/, SignedHeaders=, Signature=", "a=%zz&b=%&c", "x", "body")
	f.Add("AWS4-HMAC-SHA256 ,,,=,==", "X-Amz-Algorithm=x", "20260314T150926Z", "")
	f.Fuzz(func(t *testing.T, authz, rawQuery, date, body string) {
		v := newVerifier(t, t0)
		r := &http.Request{Method: "POST", Host: "localhost:9324", Header: http.Header{},
			URL: &url.URL{Path: "/", RawQuery: rawQuery}}
		if authz != "" {
			r.Header.Set("Authorization", authz)
		}
		if date != "" {
			r.Header.Set("X-Amz-Date", date)
		}
		c, err := v.Verify(r, []byte(body))
		if err == nil {
			t.Fatalf("accepted %q %q as %+v", authz, rawQuery, c)
		}
		var ce *contract.Error
		if !errors.As(err, &ce) || ce.Status != 400 && ce.Status != 403 || !ce.Sender {
			t.Fatalf("error %v (%T)", err, err)
		}
	})
}
