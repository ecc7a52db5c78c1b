package sigv4

import (
	"net/http/httptest"
	"testing"
)

func TestScopeRegion(t *testing.T) {
	for _, c := range []struct{ auth, url, want string }{
		{"AWS4-HMAC-SHA256 Credential=AKID/20261201/eu-west-1/sqs/aws4_request, SignedHeaders=host, Signature=ab", "/", "eu-west-1"},
		{"", "/?X-Amz-Credential=AKID%2F20261201%2Fap-south-1%2Fsqs%2Faws4_request", "ap-south-1"},
		{"AWS4-HMAC-SHA256 SignedHeaders=host", "/", ""},
		{"Bearer x", "/", ""},
		{"", "/", ""},
	} {
		r := httptest.NewRequest("POST", c.url, nil)
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		if got := ScopeRegion(r); got != c.want {
			t.Errorf("%q %q: %q, want %q", c.auth, c.url, got, c.want)
		}
	}
}
