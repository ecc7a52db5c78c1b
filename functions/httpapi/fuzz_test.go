package httpapi

import (
	"encoding/json"
	"encoding/xml"
	"net/url"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluicehq/sluice/contract"
)

// botocoreSeeds returns the request bodies of testdata/botocore_query_requests.json.
func botocoreSeeds(f *testing.F) []struct{ action, input, body string } {
	raw, err := os.ReadFile("testdata/botocore_query_requests.json")
	if err != nil {
		f.Fatal(err)
	}
	var cases []struct {
		Action string          `json:"action"`
		Input  json.RawMessage `json:"input"`
		Body   string          `json:"body"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		f.Fatal(err)
	}
	out := make([]struct{ action, input, body string }, len(cases))
	for i, c := range cases {
		out[i] = struct{ action, input, body string }{c.Action, string(c.Input), c.Body}
	}
	return out
}

// FuzzJSONDecode feeds arbitrary bodies to the JSON decoder of every
// action: it must return an input or a *contract.Error, never panic.
func FuzzJSONDecode(f *testing.F) {
	for _, s := range botocoreSeeds(f) {
		f.Add(s.action, s.input)
	}
	f.Add("SendMessage", `{"MessageAttributes":{"a":{"BinaryValue":"AA==","BinaryListValues":["AQ=="]}}}`)
	f.Add("SendMessage", `{"DelaySeconds":1e400}`)
	f.Add("ReceiveMessage", `null`)
	f.Add("CreateQueue", `{"tags":{"a":null},"Attributes":[]}`)
	f.Add("", ``)
	names := Actions()
	f.Fuzz(func(t *testing.T, action, body string) {
		ops := []*operation{operations[action]}
		if ops[0] == nil {
			// Try the body against every action.
			ops = ops[:0]
			for _, n := range names {
				ops = append(ops, operations[n])
			}
		}
		for _, op := range ops {
			in := op.newInput()
			if err := decodeJSON([]byte(body), in); err != nil {
				if err.Status != 400 || err.Code == "" || err.Message == "" {
					t.Fatalf("bad error %+v", err)
				}
			}
		}
	})
}

// FuzzQueryDecode feeds arbitrary form bodies to the Query decoder of
// every action: it must return an input or a *contract.Error, never panic.
func FuzzQueryDecode(f *testing.F) {
	for _, s := range botocoreSeeds(f) {
		f.Add(s.body)
	}
	f.Add("Action=SendMessage&MessageAttribute.1.Value.BinaryValue=%%%")
	f.Add("Action=SendMessageBatch&SendMessageBatchRequestEntry.99999999999.Id=a&SendMessageBatchRequestEntry.1.DelaySeconds=-1")
	f.Add("Action=CreateQueue&Attribute.1.Value=x&Attribute..Name=y&Attribute.1=z&Tag.1.Key.x=1")
	f.Add("a.b.c.d.e.f.g.h.i.j=1&.=2&..=3")
	f.Fuzz(func(t *testing.T, body string) {
		v, _ := url.ParseQuery(body) // keeps what parsed, as the handler would refuse the rest
		form, err := newQueryForm(v)
		if err != nil {
			if ce, ok := err.(*contract.Error); !ok || ce.Status != 400 || ce.Code == "" {
				t.Fatalf("form: bad error %#v", err)
			}
			return
		}
		for _, name := range Actions() {
			op := operations[name]
			in := op.newInput()
			if err := op.fromQuery(form, in); err != nil {
				ce, ok := err.(*contract.Error)
				if !ok || ce.Status != 400 || ce.Code == "" {
					t.Fatalf("%s: bad error %#v", name, err)
				}
			}
		}
	})
}

// FuzzXMLBodyRoundTrip checks that any message body SQS accepts comes back
// unchanged from the XML a Query client parses.
func FuzzXMLBodyRoundTrip(f *testing.F) {
	f.Add("plain")
	f.Add("cr\rlf\ncrlf\r\ntab\t")
	f.Add("<&>\"' ]]> &amp; \U0001F600 \uFFFD")
	f.Add("\x00\x01 invalid")
	f.Fuzz(func(t *testing.T, body string) {
		out := &contract.ReceiveMessageOutput{Messages: []contract.Message{{
			MessageId: "m", ReceiptHandle: "r", MD5OfBody: "x", Body: body,
			MessageAttributes: map[string]contract.MessageAttributeValue{body: {StringValue: &body, DataType: "String"}},
		}}}
		doc := encodeXML(operations["ReceiveMessage"], out, "rid")
		var got xReceiveResponse
		if err := xml.Unmarshal(doc, &got); err != nil {
			t.Fatalf("encoded XML does not parse: %v\n%q", err, doc)
		}
		if len(got.Messages) != 1 {
			t.Fatalf("messages: %d", len(got.Messages))
		}
		if validSQSText(body) && got.Messages[0].Body != body {
			t.Fatalf("body %q came back as %q", body, got.Messages[0].Body)
		}
	})
}

// validSQSText reports whether s holds only the characters SQS accepts in
// a message (those XML 1.0 allows).
func validSQSText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return !(r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF)
	}) < 0
}
