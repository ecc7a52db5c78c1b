// Package sigv4 verifies AWS Signature Version 4 on an HTTP request, as
// Amazon SQS does: the Authorization header form and the query-string
// (presigned) form, HMAC-SHA256 only. It has one job: say who signed a
// request, or why the request is refused, with the error AWS returns.
//
// The canonical request is built as the signers build it (aws-sdk-go-v2
// aws/signer/v4, botocore auth.py SigV4Auth) for services other than S3:
//
//   - the URI path is the request's escaped path escaped once more, every
//     byte but A-Z a-z 0-9 - . _ ~ and "/" as %XX (so "%" becomes "%25");
//     an empty path is "/"; a signature of the path without its empty
//     and dot segments (botocore's and the JavaScript SDK's, which send
//     the path as it is) is taken too;
//   - the query string is every parameter but X-Amz-Signature, names and
//     values decoded and encoded again (unreserved bytes kept, space as
//     %20), sorted by name, then by value;
//   - each signed header is "name:value\n", the name lower case, values of
//     repeated headers joined by ",", each trimmed and its runs of spaces
//     made one; host is the request's Host;
//   - the payload hash is the hex SHA-256 of the body, or the value of
//     X-Amz-Content-Sha256 when the request carries it (which must then be
//     the body's hash, or UNSIGNED-PAYLOAD when Config.AllowUnsignedPayload).
//
// The signing key is HMAC chain "AWS4"+secret, date, region, service,
// "aws4_request"; the signature is compared in constant time.
//
// # Order of the checks
//
//  1. Which form: an Authorization header, or X-Amz-Algorithm,
//     X-Amz-Credential or X-Amz-Signature in the query; both is refused;
//     neither is an anonymous request, refused (AccessDenied).
//  2. The form's fields: algorithm AWS4-HMAC-SHA256; Credential,
//     SignedHeaders, Signature present; a date (X-Amz-Date, or for the
//     header form the Date header).
//  3. The credential scope: five parts, the terminator aws4_request, the
//     scope's date the request date's day, the region the configured one,
//     the service sqs.
//  4. host among the signed headers.
//  5. The access key is one of the configured keys.
//  6. The time: within 15 minutes either side of the server's clock
//     (presigned: also no later than X-Amz-Expires after X-Amz-Date).
//  7. The session token: a key configured with one requires exactly it; a
//     key without one refuses a request that carries one.
//  8. The body against X-Amz-Content-Sha256, then the signature.
//
// # Errors and where they come from
//
// Every error is a *contract.Error, sender fault, so that the HTTP handler
// writes it in the request's protocol. Verified against AWS's answers
// recorded in public issue threads (SQS Query XML bodies quoted in them):
//
//   - no signature: AccessDenied, 403, "Access to the resource <URL> is
//     denied." (SQS serves anonymous requests and denies them for want of
//     a policy that allows them; aws-sdk-php#188, bbc/sqs-consumer#225);
//   - unknown access key: InvalidClientTokenId, 403, "The security token
//     included in the request is invalid." (ex-aws/ex_aws#220, SQS XML);
//   - clock skew: SignatureDoesNotMatch, 403, "Signature expired: <date>
//     is now earlier than <now-15m> (<now> - 15 min.)" (aws-sdk-php#642,
//     SQS XML; aws-sdk-go#487);
//   - wrong region: SignatureDoesNotMatch, 403, "Credential should be
//     scoped to a valid region, not '<region>'. " (boto/boto#3688, SQS
//     XML; aws-sdk-cpp#93);
//   - wrong service: SignatureDoesNotMatch, 403, "Credential should be
//     scoped to correct service: 'sqs'. " (the wording AWS's shared
//     front end gives, cllunsford/aws-signing-proxy#25, for another service);
//   - wrong signature: SignatureDoesNotMatch, 403, "The request signature
//     we calculated does not match the signature you provided. Check your
//     AWS Secret Access Key and signing method. Consult the service
//     documentation for details." (AWS's common wording).
//
// Inferred (AWS's front-end wordings as other services report them; not
// seen from SQS itself): the IncompleteSignature messages (400) for a
// malformed Authorization header or presigned query, the scope's date and
// terminator messages, the future-date message ("Signature not yet
// current: ...", AWS's wording seen on another service, serverless/
// enterprise#11), a presigned request past its X-Amz-Expires answered like
// clock skew, the JSON shape names (Type = Code: the SDKs read the code
// from the x-amzn-query-error header), and a token that does not match
// answered InvalidClientTokenId.
//
// SQS honours no X-Amz-Expires longer than 15 minutes (aws-sdk-ruby#2498:
// a presigned SQS URL lasts 15 minutes whatever it asks for); sluice does
// the same, and also ends a presigned request sooner when its X-Amz-Expires
// says so.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Key is one access key the verifier accepts.
type Key struct {
	AccessKeyID     string
	SecretAccessKey string
	// AccountID, when set, is the account the key's requests act for.
	AccountID string
	// SessionToken, when set, makes the key temporary credentials: a
	// request must carry exactly this X-Amz-Security-Token.
	SessionToken string
}

// String names the key without its secret or token, so that a key logged
// by mistake gives nothing away.
func (k Key) String() string { return "sigv4.Key{" + k.AccessKeyID + "}" }

// GoString is String, for %#v.
func (k Key) GoString() string { return k.String() }

// Caller is who signed a request.
type Caller struct {
	AccessKeyID string
	AccountID   string // the key's, "" when it has none
}

// Config configures a Verifier.
type Config struct {
	// Region is the only region a credential scope may name.
	Region string
	// Service is the service a scope must name; empty means "sqs".
	Service string
	// Keys are the access keys accepted, several at once for rotation.
	Keys []Key
	// Now is the server's clock; nil means time.Now.
	Now func() time.Time
	// AllowUnsignedPayload accepts X-Amz-Content-Sha256: UNSIGNED-PAYLOAD,
	// a body the signature does not cover. Off by default.
	AllowUnsignedPayload bool
}

// MaxSkew is how far a request's date may be from the server's clock.
const MaxSkew = 15 * time.Minute

// MaxExpires is the largest X-Amz-Expires a presigned request may give
// (seven days).
const MaxExpires = 604800

const (
	algorithm      = "AWS4-HMAC-SHA256"
	terminator     = "aws4_request"
	unsignedHash   = "UNSIGNED-PAYLOAD"
	amzDateFormat  = "20060102T150405Z"
	scopeDayFormat = "20060102"
)

// Verifier checks request signatures against a set of keys. It is safe for
// concurrent use and holds no state besides its configuration.
type Verifier struct {
	region, service string
	keys            map[string]Key
	now             func() time.Time
	unsigned        bool
}

// New returns a Verifier, or an error naming what is wrong with cfg (never
// a secret).
func New(cfg Config) (*Verifier, error) {
	if cfg.Region == "" {
		return nil, fmt.Errorf("sigv4: no region")
	}
	v := &Verifier{region: cfg.Region, service: cfg.Service, keys: make(map[string]Key, len(cfg.Keys)),
		now: cfg.Now, unsigned: cfg.AllowUnsignedPayload}
	if v.service == "" {
		v.service = "sqs"
	}
	if v.now == nil {
		v.now = time.Now
	}
	if len(cfg.Keys) == 0 {
		return nil, fmt.Errorf("sigv4: no keys")
	}
	for i, k := range cfg.Keys {
		if k.AccessKeyID == "" || strings.ContainsAny(k.AccessKeyID, "/ ,=") {
			return nil, fmt.Errorf("sigv4: key %d: bad access key id %q", i+1, k.AccessKeyID)
		}
		if k.SecretAccessKey == "" {
			return nil, fmt.Errorf("sigv4: key %s: empty secret", k.AccessKeyID)
		}
		if _, dup := v.keys[k.AccessKeyID]; dup {
			return nil, fmt.Errorf("sigv4: key %s given twice", k.AccessKeyID)
		}
		v.keys[k.AccessKeyID] = k
	}
	return v, nil
}

// auth is what a request says of its signature, in either form.
type auth struct {
	presigned     bool
	credential    string
	signedHeaders []string
	signature     string
	date          time.Time
	amzDate       string // the date as the string to sign carries it
	expires       int    // presigned; 0 when absent
	token         string
}

// Verify checks the signature of r, whose body (already read) is body. On
// success it says who signed; otherwise the error is a *contract.Error.
func (v *Verifier) Verify(r *http.Request, body []byte) (Caller, error) {
	a, err := v.parse(r)
	if err != nil {
		return Caller{}, err
	}
	akid, day, err := v.checkScope(a)
	if err != nil {
		return Caller{}, err
	}
	if !contains(a.signedHeaders, "host") {
		return Caller{}, errHostNotSigned()
	}
	if _, present := r.Header[targetHeader]; present && !contains(a.signedHeaders, "x-amz-target") {
		return Caller{}, errTargetNotSigned()
	}
	key, ok := v.keys[akid]
	if !ok {
		return Caller{}, errInvalidClientTokenID()
	}
	if err := v.checkTime(a); err != nil {
		return Caller{}, err
	}
	if subtle.ConstantTimeCompare([]byte(a.token), []byte(key.SessionToken)) != 1 {
		return Caller{}, errInvalidClientTokenID()
	}
	payload, err := v.payloadHash(r, body)
	if err != nil {
		return Caller{}, err
	}
	scope := day + "/" + v.region + "/" + v.service + "/" + terminator
	sk := signingKey(key.SecretAccessKey, day, v.region, v.service)
	signedWith := func(path string) bool {
		sts := stringToSign(a.amzDate, scope, canonicalRequest(r, path, a, payload))
		want := hex.EncodeToString(hmacSHA256(sk, sts))
		return subtle.ConstantTimeCompare([]byte(want), []byte(strings.ToLower(a.signature))) == 1
	}
	// The Go SDK signs the path as sent; botocore and the JavaScript SDK
	// sign it without empty and dot segments (and send it as it is). A
	// path that has them names no queue (see httpapi's pathQueueURL), so
	// either way the signed query or body decides what the request does.
	path := r.URL.EscapedPath()
	if !signedWith(path) {
		if norm := withoutDotSegments(path); norm == path || !signedWith(norm) {
			return Caller{}, errSignatureDoesNotMatch()
		}
	}
	return Caller{AccessKeyID: key.AccessKeyID, AccountID: key.AccountID}, nil
}

// targetHeader names the action of an AWS JSON request (the SDKs sign it).
// Unsigned, it would let whoever holds a signed request, a presigned URL
// say, make it another action on the same queue: the signature covers the
// path and the query, but the JSON protocol takes its action from here.
var targetHeader = http.CanonicalHeaderKey("X-Amz-Target")

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parse reads the signature fields of either form.
func (v *Verifier) parse(r *http.Request) (*auth, error) {
	header := r.Header.Get("Authorization")
	query := parseQuery(r.URL.RawQuery)
	inQuery := query.has("X-Amz-Algorithm") || query.has("X-Amz-Credential") || query.has("X-Amz-Signature")
	switch {
	case header != "" && inQuery:
		return nil, errIncomplete("Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter or the Authorization header should be specified.")
	case header != "":
		return parseHeader(r, header)
	case inQuery:
		return parsePresigned(query)
	}
	return nil, errAccessDenied(r)
}

func parseHeader(r *http.Request, header string) (*auth, error) {
	alg, rest, _ := strings.Cut(strings.TrimSpace(header), " ")
	if alg != algorithm {
		return nil, errIncomplete(fmt.Sprintf("Unsupported AWS 'algorithm': '%s'.", printable(alg)))
	}
	a := &auth{}
	var missing []string
	fields := map[string]string{}
	for _, part := range strings.Split(rest, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, errIncomplete(fmt.Sprintf("Invalid key=value pair (missing equal-sign) in Authorization header: '%s'.", printable(part)))
		}
		fields[k] = val
	}
	a.credential = fields["Credential"]
	if a.credential == "" {
		missing = append(missing, "Authorization header requires 'Credential' parameter.")
	}
	if a.signature = fields["Signature"]; a.signature == "" {
		missing = append(missing, "Authorization header requires 'Signature' parameter.")
	}
	sh := fields["SignedHeaders"]
	if sh == "" {
		missing = append(missing, "Authorization header requires 'SignedHeaders' parameter.")
	}
	a.signedHeaders = strings.Split(sh, ";")
	if d := r.Header.Get("X-Amz-Date"); d != "" {
		t, err := time.Parse(amzDateFormat, d)
		if err != nil {
			return nil, errIncomplete(fmt.Sprintf("Date must be in ISO-8601 'basic format'. Got '%s'. See http://en.wikipedia.org/wiki/ISO_8601", printable(d)))
		}
		a.date, a.amzDate = t, d
	} else if d := r.Header.Get("Date"); d != "" {
		t, err := http.ParseTime(d)
		if err != nil {
			return nil, errIncomplete(fmt.Sprintf("Date must be in ISO-8601 'basic format'. Got '%s'. See http://en.wikipedia.org/wiki/ISO_8601", printable(d)))
		}
		a.date, a.amzDate = t.UTC(), t.UTC().Format(amzDateFormat)
	} else {
		missing = append(missing, "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
	}
	if len(missing) > 0 {
		return nil, errIncomplete(strings.Join(missing, " ") + " Authorization=" + printable(header))
	}
	a.token = r.Header.Get("X-Amz-Security-Token")
	return a, nil
}

func parsePresigned(q query) (*auth, error) {
	a := &auth{presigned: true}
	if alg := q.get("X-Amz-Algorithm"); alg != algorithm {
		if alg == "" {
			return nil, errIncomplete("AWS query-string parameters must include 'X-Amz-Algorithm'. Re-examine the query-string parameters.")
		}
		return nil, errIncomplete(fmt.Sprintf("Unsupported AWS 'algorithm': '%s'.", printable(alg)))
	}
	var missing []string
	for _, p := range []string{"X-Amz-Credential", "X-Amz-Signature", "X-Amz-SignedHeaders", "X-Amz-Date"} {
		if q.get(p) == "" {
			missing = append(missing, "'"+p+"'")
		}
	}
	if len(missing) > 0 {
		return nil, errIncomplete("AWS query-string parameters must include " + strings.Join(missing, ", ") + ". Re-examine the query-string parameters.")
	}
	a.credential = q.get("X-Amz-Credential")
	a.signature = q.get("X-Amz-Signature")
	a.signedHeaders = strings.Split(q.get("X-Amz-SignedHeaders"), ";")
	d := q.get("X-Amz-Date")
	t, err := time.Parse(amzDateFormat, d)
	if err != nil {
		return nil, errIncomplete(fmt.Sprintf("Date must be in ISO-8601 'basic format'. Got '%s'. See http://en.wikipedia.org/wiki/ISO_8601", printable(d)))
	}
	a.date, a.amzDate = t, d
	if e := q.get("X-Amz-Expires"); e != "" {
		n, err := strconv.Atoi(e)
		if err != nil || n < 1 || n > MaxExpires {
			return nil, errIncomplete(fmt.Sprintf("X-Amz-Expires must be a whole number of seconds from 1 to %d, not '%s'.", MaxExpires, printable(e)))
		}
		a.expires = n
	}
	a.token = q.get("X-Amz-Security-Token")
	return a, nil
}

// checkScope checks AKID/DATE/REGION/SERVICE/aws4_request and returns the
// access key id and the scope's day.
func (v *Verifier) checkScope(a *auth) (akid, day string, err error) {
	parts := strings.Split(a.credential, "/")
	if len(parts) != 5 || parts[0] == "" {
		return "", "", errIncomplete(fmt.Sprintf("Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, got '%s'", printable(a.credential)))
	}
	akid, day, region, service, term := parts[0], parts[1], parts[2], parts[3], parts[4]
	if term != terminator {
		return "", "", errSignature(fmt.Sprintf("Credential should be scoped with a valid terminator: 'aws4_request', not '%s'. ", printable(term)))
	}
	if want := a.date.Format(scopeDayFormat); day != want {
		return "", "", errSignature(fmt.Sprintf("Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '%s' != '%s', from '%s'.",
			printable(day), want, a.amzDate))
	}
	if region != v.region {
		return "", "", errSignature(fmt.Sprintf("Credential should be scoped to a valid region, not '%s'. ", printable(region)))
	}
	if service != v.service {
		return "", "", errSignature(fmt.Sprintf("Credential should be scoped to correct service: '%s'. ", v.service))
	}
	return akid, day, nil
}

// checkTime applies the 15-minute window, and a presigned request's own.
func (v *Verifier) checkTime(a *auth) error {
	now := v.now().UTC()
	earliest := now.Add(-MaxSkew)
	if a.presigned && a.expires > 0 && time.Duration(a.expires)*time.Second < MaxSkew {
		// A presigned request ends at its own expiry when that comes first.
		if end := a.date.Add(time.Duration(a.expires) * time.Second); now.After(end) {
			return errSignature(fmt.Sprintf("Signature expired: %s is now earlier than %s (%s - %d sec.)",
				a.amzDate, now.Add(-time.Duration(a.expires)*time.Second).Format(amzDateFormat), now.Format(amzDateFormat), a.expires))
		}
	}
	if a.date.Before(earliest) {
		return errSignature(fmt.Sprintf("Signature expired: %s is now earlier than %s (%s - 15 min.)",
			a.amzDate, earliest.Format(amzDateFormat), now.Format(amzDateFormat)))
	}
	if latest := now.Add(MaxSkew); a.date.After(latest) {
		return errSignature(fmt.Sprintf("Signature not yet current: %s is still later than %s (%s + 15 min.)",
			a.amzDate, latest.Format(amzDateFormat), now.Format(amzDateFormat)))
	}
	return nil
}

// payloadHash is the hash the canonical request ends with.
func (v *Verifier) payloadHash(r *http.Request, body []byte) (string, error) {
	sum := sha256.Sum256(body)
	actual := hex.EncodeToString(sum[:])
	claimed := r.Header.Get("X-Amz-Content-Sha256")
	switch {
	case claimed == "":
		return actual, nil
	case claimed == unsignedHash && v.unsigned:
		return claimed, nil
	case strings.EqualFold(claimed, actual):
		return claimed, nil
	}
	// The body is not the one signed (or its hash is not given).
	return "", errSignatureDoesNotMatch()
}

// canonicalRequest builds the canonical request of r, taking path (the
// escaped path) for r's, for the fields of a.
func canonicalRequest(r *http.Request, path string, a *auth, payload string) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(canonicalURI(path))
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(parseQuery(r.URL.RawQuery)))
	b.WriteByte('\n')
	for _, h := range a.signedHeaders {
		b.WriteString(h)
		b.WriteByte(':')
		b.WriteString(headerValue(r, h))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(a.signedHeaders, ";"))
	b.WriteByte('\n')
	b.WriteString(payload)
	return b.String()
}

// canonicalURI escapes an escaped path once more, as non-S3 services do.
func canonicalURI(p string) string {
	if p == "" {
		return "/"
	}
	return escape(p, false)
}

// withoutDotSegments is the path as botocore and the JavaScript SDK sign
// it for services other than S3: empty and "." segments dropped, ".."
// dropping the segment before it, the leading "/" kept, and the trailing
// one when a segment is left.
func withoutDotSegments(p string) string {
	var out []string
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
		}
	}
	norm := strings.Join(out, "/")
	if strings.HasPrefix(p, "/") {
		norm = "/" + norm
	}
	if len(out) > 0 && strings.HasSuffix(p, "/") {
		norm += "/"
	}
	return norm
}

// escape percent-encodes every byte of s but the unreserved ones (and "/"
// unless slash).
func escape(s string, slash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || (c == '/' && !slash) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// headerValue is the canonical value of the signed header name.
func headerValue(r *http.Request, name string) string {
	var vals []string
	switch name {
	case "host":
		vals = []string{canonicalHost(r)}
	case "content-length":
		vals = r.Header.Values("Content-Length")
		if len(vals) == 0 && r.ContentLength >= 0 {
			vals = []string{strconv.FormatInt(r.ContentLength, 10)}
		}
	case "transfer-encoding":
		vals = r.TransferEncoding
	default:
		vals = r.Header.Values(name)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = collapseSpaces(strings.TrimSpace(v))
	}
	return strings.Join(out, ",")
}

// canonicalHost is the request's Host without the port of its scheme, as
// both signers write it (a URL of http://host:80/ signs "host").
func canonicalHost(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p != "" {
		p, _, _ = strings.Cut(p, ",")
		scheme = strings.ToLower(strings.TrimSpace(p))
	}
	host := r.Host
	switch {
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		return strings.TrimSuffix(host, ":80")
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		return strings.TrimSuffix(host, ":443")
	}
	return host
}

// collapseSpaces makes each run of spaces one space.
func collapseSpaces(s string) string {
	if !strings.Contains(s, "  ") {
		return s
	}
	var b strings.Builder
	space := false
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func stringToSign(amzDate, scope, canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return algorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
}

func signingKey(secret, day, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), day)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, terminator)
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// query is a raw query string's parameters, decoded, in order.
type query []param

type param struct{ name, value string }

// parseQuery splits a raw query on "&" and "=" and decodes each side ("+"
// is a space, as in a form). A part that does not decode is kept as it is:
// it then fails the signature rather than the parse.
func parseQuery(raw string) query {
	var q query
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		k, val, _ := strings.Cut(part, "=")
		q = append(q, param{unescape(k), unescape(val)})
	}
	return q
}

func unescape(s string) string {
	s = strings.ReplaceAll(s, "+", " ")
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			n, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b.WriteByte(byte(n))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (q query) has(name string) bool {
	for _, p := range q {
		if p.name == name {
			return true
		}
	}
	return false
}

func (q query) get(name string) string {
	for _, p := range q {
		if p.name == name {
			return p.value
		}
	}
	return ""
}

// canonicalQuery encodes q without X-Amz-Signature, sorted by name then value.
func canonicalQuery(q query) string {
	enc := make([]param, 0, len(q))
	for _, p := range q {
		if p.name == "X-Amz-Signature" {
			continue
		}
		enc = append(enc, param{escape(p.name, true), escape(p.value, true)})
	}
	sort.Slice(enc, func(i, j int) bool {
		if enc[i].name != enc[j].name {
			return enc[i].name < enc[j].name
		}
		return enc[i].value < enc[j].value
	})
	var b strings.Builder
	for i, p := range enc {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.name)
		b.WriteByte('=')
		b.WriteString(p.value)
	}
	return b.String()
}

// printable bounds what of a request an error message repeats: at most 256
// bytes, control bytes as "?".
func printable(s string) string {
	if len(s) > 256 {
		s = s[:256] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// ScopeRegion is the region of the credential scope a request claims, in
// its Authorization header or its presigned query, without checking
// anything; "" when it claims none. A server that checks no signatures
// uses it to tell that a client signs for another region than its own.
func ScopeRegion(r *http.Request) string {
	var cred string
	if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "AWS4-HMAC-SHA256 ") {
		_, after, ok := strings.Cut(a, "Credential=")
		if !ok {
			return ""
		}
		cred, _, _ = strings.Cut(after, ",")
	} else if strings.Contains(r.URL.RawQuery, "X-Amz-Credential") {
		// Parsed only when present: most requests are unsigned or signed
		// in the header.
		cred = r.URL.Query().Get("X-Amz-Credential")
	}
	// KEY/DATE/REGION/SERVICE/aws4_request: exactly five parts.
	rest := strings.TrimSpace(cred)
	var part [5]string
	for i := range part {
		var ok bool
		if part[i], rest, ok = strings.Cut(rest, "/"); !ok && i < 4 {
			return ""
		}
	}
	if rest != "" {
		return ""
	}
	return part[2]
}
