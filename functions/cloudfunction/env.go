package cloudfunction

import "os"

// Lookup is os.LookupEnv with the defaults of a function where they
// differ from sluice serve's: SLUICE_TRUST_FORWARDED is true unless set.
// Nothing reaches an instance but through the platform's front end, which
// sends requests on over plain HTTP and names the client's scheme in
// X-Forwarded-Proto: without it queue URLs would say http:// to clients
// that used https://.
func Lookup(name string) (string, bool) {
	v, ok := os.LookupEnv(name)
	if name == "SLUICE_TRUST_FORWARDED" && (!ok || v == "") {
		return "true", true
	}
	return v, ok
}
