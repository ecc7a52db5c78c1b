package httpapi

import (
	"testing"
	"unicode/utf8"
)

func TestMarkInvalidText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":"plain é 😀"}`, `{"a":"plain é 😀"}`},
		{`{"a":"\ud83d\ude00"}`, `{"a":"\ud83d\ude00"}`},           // a pair is one character
		{`{"a":"\\ud800"}`, `{"a":"\\ud800"}`},                     // an escaped backslash, then text
		{`{"a":"x\ud800"}`, `{"a":"x\uffff"}`},                     // lone high
		{`{"a":"\udc00\ud800"}`, `{"a":"\uffff\uffff"}`},           // low then high: neither pairs
		{`{"a":"\ud800\u0041"}`, `{"a":"\uffff\u0041"}`},           // high then not a low
		{`{"a":"\uD800"}`, `{"a":"\uffff"}`},                       // upper-case hex
		{"{\"a\":\"x\xffy\"}", `{"a":"x\uffffy"}`},                 // invalid UTF-8
		{"{\"a\":\"\xed\xa0\x80\"}", `{"a":"\uffff\uffff\uffff"}`}, // an encoded surrogate, byte by byte
		{"{\"a\xff\":1}", `{"a\uffff":1}`},                         // member names too
		{`{"a":"\ud8"}`, `{"a":"\ud8"}`},                           // truncated: left to encoding/json
	} {
		if got := string(MarkInvalidText([]byte(c.in))); got != c.want {
			t.Errorf("MarkInvalidText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzMarkInvalidText(f *testing.F) {
	f.Add(`{"a":"\ud800\\u"}`)
	f.Add("{\"a\":\"\xff\"}")
	f.Fuzz(func(t *testing.T, s string) {
		out := MarkInvalidText([]byte(s))
		if !utf8.Valid(out) && utf8.ValidString(s) {
			t.Fatalf("made %q invalid: %q", s, out)
		}
		if utf8.ValidString(s) && !hasSurrogateEscape([]byte(s)) && string(out) != s {
			t.Fatalf("changed text with nothing to mark: %q -> %q", s, out)
		}
	})
}
