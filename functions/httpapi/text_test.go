package httpapi_test

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// Text that is not Unicode gets the same answer on both protocols, and
// nothing is stored: JSON must not repair what Query hands over raw.

// rawJSONCall posts a JSON body written by hand (encoding/json would repair
// the bytes under test) and returns status, error code (x-amzn-query-error)
// and message.
func rawJSONCall(t *testing.T, srv *httptest.Server, target, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(body))
	req.Header.Set("X-Amz-Target", "AmazonSQS."+target)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(b, &e)
	code, _, _ := strings.Cut(resp.Header.Get("x-amzn-query-error"), ";")
	return resp.StatusCode, code, e.Message
}

// rawQueryCall posts a form body written by hand (so that %FF stays a raw
// byte) and returns status, error code and message.
func rawQueryCall(t *testing.T, srv *httptest.Server, form string) (int, string, string) {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+"/", "application/x-www-form-urlencoded", strings.NewReader(form+"&Version=2012-11-05"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Code    string `xml:"Error>Code"`
		Message string `xml:"Error>Message"`
	}
	_ = xml.Unmarshal(b, &e)
	return resp.StatusCode, e.Code, e.Message
}

func TestInvalidTextSameOnBothProtocols(t *testing.T) {
	srv := newServer(t)
	if st, code, msg := rawQueryCall(t, srv, "Action=CreateQueue&QueueName=text"); st != 200 {
		t.Fatalf("CreateQueue: %d %s %s", st, code, msg)
	}
	qurl := srv.URL + "/000000000000/text"
	qs := "Action=SendMessage&QueueUrl=" + url.QueryEscape(qurl)
	js := `{"QueueUrl":"` + qurl + `",`
	strAttr := func(name, typ, value string) string {
		return `"MessageAttributes":{"` + name + `":{"DataType":"` + typ + `","StringValue":"` + value + `"}}`
	}
	qAttr := func(name, typ, value string) string {
		return "&MessageAttribute.1.Name=" + name + "&MessageAttribute.1.Value.DataType=" + typ + "&MessageAttribute.1.Value.StringValue=" + value
	}
	cases := []struct {
		name, json, query, code string
	}{
		{"body invalid UTF-8", js + `"MessageBody":"a` + "\xff" + `b"}`, qs + "&MessageBody=a%FFb", "InvalidMessageContents"},
		{"body lone surrogate", js + `"MessageBody":"a\ud800b"}`, qs + "&MessageBody=a%ED%A0%80b", "InvalidMessageContents"},
		{"body lone low surrogate", js + `"MessageBody":"\udc00"}`, qs + "&MessageBody=%ED%B0%80", "InvalidMessageContents"},
		{"attribute name", js + `"MessageBody":"x",` + strAttr("n\xff", "String", "v") + `}`, qs + "&MessageBody=x" + qAttr("n%FF", "String", "v"), "InvalidParameterValue"},
		{"attribute name surrogate", js + `"MessageBody":"x",` + strAttr(`n\ud800`, "String", "v") + `}`, qs + "&MessageBody=x" + qAttr("n%ED%A0%80", "String", "v"), "InvalidParameterValue"},
		{"attribute type", js + `"MessageBody":"x",` + strAttr("n", "String.\xff", "v") + `}`, qs + "&MessageBody=x" + qAttr("n", "String.%FF", "v"), "InvalidParameterValue"},
		{"attribute value", js + `"MessageBody":"x",` + strAttr("n", "String", "v\xfe") + `}`, qs + "&MessageBody=x" + qAttr("n", "String", "v%FE"), "InvalidParameterValue"},
		{"attribute value surrogate", js + `"MessageBody":"x",` + strAttr("n", "String", `\udfff`) + `}`, qs + "&MessageBody=x" + qAttr("n", "String", "%ED%BF%BF"), "InvalidParameterValue"},
	}
	for _, c := range cases {
		jst, jcode, jmsg := rawJSONCall(t, srv, "SendMessage", c.json)
		qst, qcode, qmsg := rawQueryCall(t, srv, c.query)
		if jst != 400 || jcode != c.code || qst != 400 || qcode != c.code || jmsg != qmsg {
			t.Errorf("%s:\n json  %d %s %q\n query %d %s %q\n want 400 %s, the same message", c.name, jst, jcode, jmsg, qst, qcode, qmsg, c.code)
		}
	}
	// A pair of surrogate escapes is one character, and accepted.
	if st, code, msg := rawJSONCall(t, srv, "SendMessage", js+`"MessageBody":"\ud83d\ude00",`+strAttr(`\u00e9t\u00e9`, "String", `\ud83d\ude00`)+`}`); st != 200 {
		t.Errorf("a surrogate pair: %d %s %s", st, code, msg)
	}
	// Only that message was stored.
	var recv struct {
		Bodies []string `xml:"ReceiveMessageResult>Message>Body"`
	}
	resp, err := srv.Client().Post(srv.URL+"/", "application/x-www-form-urlencoded", strings.NewReader(
		"Action=ReceiveMessage&MaxNumberOfMessages=10&QueueUrl="+url.QueryEscape(qurl)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_ = xml.Unmarshal(b, &recv)
	if len(recv.Bodies) != 1 || recv.Bodies[0] != "\U0001F600" {
		t.Errorf("stored bodies %q, want only the emoji", recv.Bodies)
	}
}
