package orderedbatch

import "testing"

// TestParseLocator: a locator comes back from clients inside a receipt
// handle, so anything but one this package made finds nothing (and never
// becomes a key the backend refuses).
func TestParseLocator(t *testing.T) {
	gk := hashID("group")
	if g, p, ok := parseLocator(locator(gk, 42)); !ok || g != gk || p != 42 {
		t.Errorf("round trip: %q %d %v", g, p, ok)
	}
	for _, bad := range []string{
		"", gk, gk + ".", gk + ".-1", gk + ".x", gk + ".1 ", gk + ".+1",
		"cd0a\x019856147b6c5b4ff2b7dfee5da20.1", "CD0A19856147B6C5B4FF2B7DFEE5DA20.1", gk[:31] + "/.1",
	} {
		if _, _, ok := parseLocator(bad); ok {
			t.Errorf("parseLocator(%q) accepted", bad)
		}
	}
}
