package bench

// The Query protocol mode (Config.Protocol "query"): the SDK for Go v2
// speaks only AWS JSON 1.0 to SQS, so servers that speak only the older
// Query protocol (form-encoded POSTs with Action=..., XML answers) are
// reached through queryTransport, an http.RoundTripper under the SDK
// client that rewrites each JSON request into its Query form and each XML
// answer back into the JSON the SDK decodes. It covers the actions the
// load generator calls and nothing more.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Protocols Config.Protocol accepts.
const (
	ProtocolJSON  = "json"
	ProtocolQuery = "query"
)

const queryAPIVersion = "2012-11-05"

// applyProtocol checks c.Protocol and, for the Query protocol, puts a
// queryTransport under c.HTTPClient's transport.
func (c *Config) applyProtocol() error {
	switch c.Protocol {
	case "", ProtocolJSON:
		c.Protocol = ProtocolJSON
		return nil
	case ProtocolQuery:
	default:
		return fmt.Errorf("bad protocol %q: json or query", c.Protocol)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: newTransport((&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext)}
	}
	own := *hc
	own.Transport = QueryTransport(hc.Transport)
	c.HTTPClient = &own
	return nil
}

// QueryTransport returns a RoundTripper that sends an SQS client's AWS JSON
// 1.0 requests through next as Query protocol requests and turns the XML
// answers into JSON 1.0 answers. next nil is http.DefaultTransport.
func QueryTransport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return queryTransport{next: next}
}

type queryTransport struct{ next http.RoundTripper }

// The load generator's client signs with these (NewClient); the Query
// request is signed again with them, as its body is another.
var queryCreds = aws.Credentials{AccessKeyID: "bench", SecretAccessKey: "bench"}

func (t queryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	action, ok := strings.CutPrefix(req.Header.Get("X-Amz-Target"), "AmazonSQS.")
	if !ok {
		return nil, fmt.Errorf("query protocol: not an SQS JSON request (X-Amz-Target %q)", req.Header.Get("X-Amz-Target"))
	}
	var in map[string]any
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(b)) > 0 {
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			if err := d.Decode(&in); err != nil {
				return nil, fmt.Errorf("query protocol: %s request: %w", action, err)
			}
		}
	}
	form, err := queryForm(action, in)
	if err != nil {
		return nil, err
	}
	body := form.Encode()
	qreq, err := http.NewRequestWithContext(req.Context(), http.MethodPost, req.URL.String(), strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	qreq.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	// sluice answers a Query request in JSON when the client accepts JSON;
	// this mode is about the XML answers.
	qreq.Header.Set("Accept", "text/xml")
	if ua := req.Header.Get("User-Agent"); ua != "" {
		qreq.Header.Set("User-Agent", ua)
	}
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(req.Context(), queryCreds, qreq, hex.EncodeToString(sum[:]), "sqs", "us-east-1", time.Now()); err != nil {
		return nil, fmt.Errorf("query protocol: signing: %w", err)
	}
	resp, err := t.next.RoundTrip(qreq)
	if err != nil {
		return nil, err
	}
	xmlBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	out := &http.Response{
		Status: resp.Status, StatusCode: resp.StatusCode,
		Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor,
		Header:  http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Request: req,
	}
	if id := resp.Header.Get("X-Amzn-Requestid"); id != "" {
		out.Header.Set("X-Amzn-Requestid", id)
	}
	var jsonBody []byte
	if resp.StatusCode/100 == 2 {
		jsonBody, err = queryResultJSON(action, xmlBody)
	} else {
		var queryErr string
		jsonBody, queryErr, err = queryErrorJSON(xmlBody)
		if err == nil {
			out.Header.Set("X-Amzn-Query-Error", queryErr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("query protocol: %s answer (HTTP %d): %w; body %.300q", action, resp.StatusCode, err, xmlBody)
	}
	out.Body = io.NopCloser(bytes.NewReader(jsonBody))
	out.ContentLength = int64(len(jsonBody))
	return out, nil
}

// CloseIdleConnections reaches the connection pool below.
func (t queryTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// queryForm is the Query form of the JSON input of action.
func queryForm(action string, in map[string]any) (url.Values, error) {
	f := url.Values{"Action": {action}, "Version": {queryAPIVersion}}
	var err error
	set := func(key string, v any) {
		if s, ok := scalar(v); ok {
			f.Set(key, s)
		} else if v != nil && err == nil {
			err = fmt.Errorf("query protocol: %s: %s is not a scalar: %v", action, key, v)
		}
	}
	// scalars copies the members named, those present, under the same names.
	scalars := func(prefix string, m map[string]any, names ...string) {
		for _, n := range names {
			if v, ok := m[n]; ok {
				set(prefix+n, v)
			}
		}
	}
	scalars("", in, "QueueUrl")
	switch action {
	case "CreateQueue":
		scalars("", in, "QueueName")
		for i, k := range sortedKeys(in["Attributes"]) {
			n := "Attribute." + strconv.Itoa(i+1)
			f.Set(n+".Name", k)
			set(n+".Value", in["Attributes"].(map[string]any)[k])
		}
		for i, k := range sortedKeys(in["tags"]) {
			n := "Tag." + strconv.Itoa(i+1)
			f.Set(n+".Key", k)
			set(n+".Value", in["tags"].(map[string]any)[k])
		}
	case "DeleteQueue":
	case "SendMessage":
		err = cmpErr(err, sendEntryForm(f, "", in))
	case "SendMessageBatch":
		for i, e := range objects(in["Entries"]) {
			p := "SendMessageBatchRequestEntry." + strconv.Itoa(i+1) + "."
			scalars(p, e, "Id")
			err = cmpErr(err, sendEntryForm(f, p, e))
		}
	case "ReceiveMessage":
		scalars("", in, "MaxNumberOfMessages", "WaitTimeSeconds", "VisibilityTimeout", "ReceiveRequestAttemptId")
		for _, l := range [][2]string{
			{"AttributeNames", "AttributeName"},
			{"MessageSystemAttributeNames", "MessageSystemAttributeName"},
			{"MessageAttributeNames", "MessageAttributeName"},
		} {
			list, _ := in[l[0]].([]any)
			for i, v := range list {
				set(l[1]+"."+strconv.Itoa(i+1), v)
			}
		}
	case "DeleteMessage":
		scalars("", in, "ReceiptHandle")
	case "DeleteMessageBatch":
		for i, e := range objects(in["Entries"]) {
			scalars("DeleteMessageBatchRequestEntry."+strconv.Itoa(i+1)+".", e, "Id", "ReceiptHandle")
		}
	default:
		return nil, fmt.Errorf("query protocol: action %s is not translated", action)
	}
	return f, err
}

// sendEntryForm adds a message to send (SendMessage or one batch entry,
// under prefix p): body, delay, FIFO ids and attributes.
func sendEntryForm(f url.Values, p string, m map[string]any) error {
	for _, n := range []string{"MessageBody", "DelaySeconds", "MessageGroupId", "MessageDeduplicationId"} {
		if s, ok := scalar(m[n]); ok {
			f.Set(p+n, s)
		}
	}
	for _, a := range [][2]string{{"MessageAttributes", "MessageAttribute"}, {"MessageSystemAttributes", "MessageSystemAttribute"}} {
		attrs, _ := m[a[0]].(map[string]any)
		for i, name := range sortedKeys(m[a[0]]) {
			n := p + a[1] + "." + strconv.Itoa(i+1)
			f.Set(n+".Name", name)
			v, ok := attrs[name].(map[string]any)
			if !ok {
				return fmt.Errorf("query protocol: %s %q is not an object", a[0], name)
			}
			for _, k := range []string{"DataType", "StringValue", "BinaryValue"} {
				if s, ok := scalar(v[k]); ok {
					f.Set(n+".Value."+k, s)
				}
			}
			for _, l := range [][2]string{{"StringListValues", "StringListValue"}, {"BinaryListValues", "BinaryListValue"}} {
				list, _ := v[l[0]].([]any)
				for j, x := range list {
					if s, ok := scalar(x); ok {
						f.Set(n+".Value."+l[1]+"."+strconv.Itoa(j+1), s)
					}
				}
			}
		}
	}
	return nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// scalar is the form value of a JSON string, number or boolean.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// sortedKeys are the keys of a JSON object (nil otherwise), sorted so that
// a form is the same from run to run.
func sortedKeys(v any) []string {
	m, _ := v.(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func objects(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// xnode is an element of an XML answer: its local name, its text and its
// child elements in order.
type xnode struct {
	name string
	text string
	kids []*xnode
}

func parseXML(b []byte) (*xnode, error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	var stack []*xnode
	var root *xnode
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &xnode{name: t.Name.Local}
			if len(stack) > 0 {
				top := stack[len(stack)-1]
				top.kids = append(top.kids, n)
			} else if root == nil {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(t)
			}
		}
	}
	if root == nil {
		return nil, errors.New("no XML element")
	}
	return root, nil
}

// child is the first child element called name, nil when there is none.
func (n *xnode) child(name string) *xnode {
	if n == nil {
		return nil
	}
	for _, k := range n.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

// all are the child elements called name (flattened lists and maps).
func (n *xnode) all(name string) []*xnode {
	if n == nil {
		return nil
	}
	var out []*xnode
	for _, k := range n.kids {
		if k.name == name {
			out = append(out, k)
		}
	}
	return out
}

// strings copies the text of the child elements named into m, those
// present and not empty.
func (n *xnode) strings(m map[string]any, names ...string) map[string]any {
	for _, name := range names {
		if k := n.child(name); k != nil && k.text != "" {
			m[name] = k.text
		}
	}
	return m
}

// queryResultJSON is the JSON 1.0 answer of action for its Query (XML)
// answer.
func queryResultJSON(action string, b []byte) ([]byte, error) {
	root, err := parseXML(b)
	if err != nil {
		return nil, err
	}
	if want := action + "Response"; root.name != want {
		return nil, fmt.Errorf("root element %s, want %s", root.name, want)
	}
	res := root.child(action + "Result")
	out := map[string]any{}
	switch action {
	case "CreateQueue":
		res.strings(out, "QueueUrl")
		if out["QueueUrl"] == nil {
			return nil, errors.New("no QueueUrl")
		}
	case "DeleteQueue", "DeleteMessage":
	case "SendMessage":
		res.strings(out, "MessageId", "MD5OfMessageBody", "MD5OfMessageAttributes", "MD5OfMessageSystemAttributes", "SequenceNumber")
	case "SendMessageBatch":
		ok := []any{}
		for _, e := range res.all("SendMessageBatchResultEntry") {
			ok = append(ok, e.strings(map[string]any{}, "Id", "MessageId", "MD5OfMessageBody", "MD5OfMessageAttributes", "MD5OfMessageSystemAttributes", "SequenceNumber"))
		}
		out["Successful"], out["Failed"] = ok, batchErrors(res)
	case "DeleteMessageBatch":
		ok := []any{}
		for _, e := range res.all("DeleteMessageBatchResultEntry") {
			ok = append(ok, e.strings(map[string]any{}, "Id"))
		}
		out["Successful"], out["Failed"] = ok, batchErrors(res)
	case "ReceiveMessage":
		msgs := []any{}
		for _, m := range res.all("Message") {
			msgs = append(msgs, messageJSON(m))
		}
		if len(msgs) > 0 {
			out["Messages"] = msgs
		}
	default:
		return nil, fmt.Errorf("action %s is not translated", action)
	}
	return json.Marshal(out)
}

func batchErrors(res *xnode) []any {
	failed := []any{}
	for _, e := range res.all("BatchResultErrorEntry") {
		m := e.strings(map[string]any{}, "Id", "Code", "Message")
		m["SenderFault"] = e.child("SenderFault") != nil && strings.TrimSpace(e.child("SenderFault").text) == "true"
		failed = append(failed, m)
	}
	return failed
}

// messageJSON is a received message: the Query form flattens its system
// attributes (Attribute: Name, Value) and its message attributes
// (MessageAttribute: Name, Value) into lists.
func messageJSON(m *xnode) map[string]any {
	out := m.strings(map[string]any{}, "MessageId", "ReceiptHandle", "MD5OfBody", "MD5OfMessageAttributes")
	if b := m.child("Body"); b != nil {
		out["Body"] = b.text // an empty body is still a body
	}
	if attrs := m.all("Attribute"); len(attrs) > 0 {
		a := map[string]any{}
		for _, x := range attrs {
			a[x.child("Name").textOr()] = x.child("Value").textOr()
		}
		out["Attributes"] = a
	}
	if attrs := m.all("MessageAttribute"); len(attrs) > 0 {
		a := map[string]any{}
		for _, x := range attrs {
			v := x.child("Value")
			jv := v.strings(map[string]any{}, "DataType", "StringValue", "BinaryValue")
			for _, l := range [][2]string{{"StringListValue", "StringListValues"}, {"BinaryListValue", "BinaryListValues"}} {
				if vs := v.all(l[0]); len(vs) > 0 {
					list := make([]any, len(vs))
					for i, s := range vs {
						list[i] = s.text
					}
					jv[l[1]] = list
				}
			}
			a[x.child("Name").textOr()] = jv
		}
		out["MessageAttributes"] = a
	}
	return out
}

func (n *xnode) textOr() string {
	if n == nil {
		return ""
	}
	return n.text
}

// Query error codes whose JSON shape has another name; the others are the
// shape name behind "AWS.SimpleQueueService." or the code itself (from the
// Query model's error shapes).
var queryErrorShapes = map[string]string{
	"AWS.SimpleQueueService.NonExistentQueue": "QueueDoesNotExist",
	"QueueAlreadyExists":                      "QueueNameExists",
}

// queryErrorJSON is the JSON 1.0 error for a Query error answer
// (ErrorResponse/Error/{Type, Code, Message}) and the x-amzn-query-error
// header ("Code;Sender") from which awsQueryCompatible SDKs take the code.
func queryErrorJSON(b []byte) (body []byte, header string, err error) {
	root, err := parseXML(b)
	if err != nil {
		return nil, "", err
	}
	e := root.child("Error")
	if root.name != "ErrorResponse" || e == nil || e.child("Code") == nil {
		return nil, "", fmt.Errorf("not an ErrorResponse (root %s)", root.name)
	}
	code := strings.TrimSpace(e.child("Code").text)
	shape, ok := queryErrorShapes[code]
	if !ok {
		shape = strings.TrimPrefix(code, "AWS.SimpleQueueService.")
	}
	fault := "Sender"
	if strings.TrimSpace(e.child("Type").textOr()) == "Receiver" {
		fault = "Receiver"
	}
	body, err = json.Marshal(map[string]string{"__type": "com.amazonaws.sqs#" + shape, "message": e.child("Message").textOr()})
	return body, code + ";" + fault, err
}
