package httpapi

import (
	"bytes"
	"unicode/utf8"
)

// encoding/json repairs text that is not Unicode: invalid UTF-8 in a string
// and a lone surrogate escape (\ud800) both decode to U+FFFD, which the
// contract accepts, while the Query protocol hands the same bytes over as
// they are and the contract refuses them. MarkInvalidText rewrites each such
// byte or escape inside a JSON string to \uffff, a noncharacter that every
// character check of the contract refuses as it refuses the raw bytes, so
// that both protocols give the same answer.

// invalidMark replaces what is not text; U+FFFF is outside the characters
// SQS accepts (#x20-#xD7FF | #xE000-#xFFFD | ...).
const invalidMark = `\uffff`

// MarkInvalidText returns body, or a copy with its non-text marked. Every
// JSON front end (the SQS handler, the console) decodes through it.
func MarkInvalidText(body []byte) []byte {
	if utf8.Valid(body) && !hasSurrogateEscape(body) {
		return body
	}
	out := make([]byte, 0, len(body)+16)
	inString := false
	for i := 0; i < len(body); {
		c := body[i]
		if !inString {
			if c == '"' {
				inString = true
			}
			out = append(out, c)
			i++
			continue
		}
		switch {
		case c == '"':
			inString = false
			out = append(out, c)
			i++
		case c == '\\' && i+1 < len(body) && body[i+1] == 'u':
			r, ok := hex4(body, i+2)
			if !ok || r < 0xD800 || r > 0xDFFF {
				out = append(out, body[i:i+2]...) // json reports a bad escape itself
				i += 2
				continue
			}
			if r <= 0xDBFF && i+12 <= len(body) && body[i+6] == '\\' && body[i+7] == 'u' {
				if lo, ok := hex4(body, i+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					out = append(out, body[i:i+12]...) // a pair: one character
					i += 12
					continue
				}
			}
			out = append(out, invalidMark...)
			i += 6
		case c == '\\' && i+1 < len(body):
			out = append(out, c, body[i+1])
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, invalidMark...)
			} else {
				out = append(out, body[i:i+size]...)
			}
			i += size
		}
	}
	return out
}

// hasSurrogateEscape reports whether body may hold a \uD800-\uDFFF escape.
func hasSurrogateEscape(body []byte) bool {
	for {
		i := bytes.Index(body, []byte(`\u`))
		if i < 0 {
			return false
		}
		if r, ok := hex4(body, i+2); ok && r >= 0xD800 && r <= 0xDFFF {
			return true
		}
		body = body[i+2:]
	}
}

// hex4 parses the four hex digits at body[i:].
func hex4(body []byte, i int) (rune, bool) {
	if i+4 > len(body) {
		return 0, false
	}
	var r rune
	for _, c := range body[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
