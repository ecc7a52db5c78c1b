package contract

import "testing"

// A Number attribute is a decimal in SQS's range (docs: "between 10^-128
// and 10^+126"); Go's float syntax beyond decimals is not one.
func TestValidNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "0.000": true, "+1": true, "-12.5": true, ".5": true, "5.": true, "1e3": true, "1E-3": true,
		"1e126": true, "-1e126": true, "1e-128": true, "99999999999999999999999999999999999999": true,
		"abc": false, "": false, "NaN": false, "nan": false, "Infinity": false, "-Inf": false, "0x1p-2": false, "1_000": false,
		"1e200": false, "1e127": false, "1e-129": false, "1e-400": false, "0e-400": true, " 1": false, "1 ": false, "1e": false, ".": false, "--1": false,
	} {
		if got := validNumber(s); got != want {
			t.Errorf("validNumber(%q) = %v, want %v", s, got, want)
		}
	}
}
