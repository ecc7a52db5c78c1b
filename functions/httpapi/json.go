package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/contract"
)

// jsonErrorNamespace prefixes the error shape name in __type.
const jsonErrorNamespace = "com.amazonaws.sqs#"

func (x *exchange) serveJSON(ctx context.Context) {
	target := x.r.Header.Get(headerTarget)
	name, ok := strings.CutPrefix(target, targetPrefix)
	op := x.h.ops[name]
	if !ok || op == nil {
		x.action = target
		x.fail(contract.ErrUnknownOperation())
		return
	}
	x.action = name
	body, cerr := x.readBody()
	if cerr != nil {
		x.fail(cerr)
		return
	}
	in := op.newInput()
	if err := decodeJSON(body, in); err != nil {
		x.fail(err)
		return
	}
	x.call(ctx, op, in)
}

// decodeJSON decodes an AWS JSON 1.0 request body into in, a pointer to a
// contract input. An empty body is {}.
func decodeJSON(body []byte, in any) *contract.Error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(MarkInvalidText(body), in); err != nil {
		return jsonDecodeError(err)
	}
	return nil
}

func jsonDecodeError(err error) *contract.Error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var b64 base64.CorruptInputError
	switch {
	case errors.As(err, &syn):
		return contract.ErrSerialization(fmt.Sprintf("The request body is not valid JSON: %s (at byte %d).", syn.Error(), syn.Offset))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return contract.ErrSerialization(fmt.Sprintf("The request body must be a JSON object, not %s.", article(typ.Value)))
		}
		return contract.ErrSerialization(fmt.Sprintf("Member %s must be %s, not %s.", typ.Field, jsonKind(typ.Type), article(typ.Value)))
	case errors.As(err, &b64):
		return contract.ErrSerialization("A binary member is not valid base64: " + b64.Error() + ".")
	default:
		msg := strings.TrimPrefix(err.Error(), "json: ")
		return contract.ErrSerialization("The request body could not be decoded: " + msg + ".")
	}
}

// jsonKind names, in JSON terms, what a Go type of the contract expects.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64-encoded string"
		}
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a value"
}

// article turns encoding/json's description of a JSON value ("string",
// "number 1.5", "array") into prose.
func article(v string) string {
	switch {
	case v == "":
		return "this value"
	case strings.HasPrefix(v, "array"), strings.HasPrefix(v, "object"):
		return "an " + v
	}
	return "a " + v
}

// jsonWriter is a buffer and an encoder into it that leaves HTML
// characters as they are (AWS's answers do), kept for the next response:
// a response's buffer and encoder were three allocations and the buffer's
// growth.
type jsonWriter struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var jsonWriters = sync.Pool{New: func() any {
	w := &jsonWriter{}
	w.enc = json.NewEncoder(&w.buf)
	w.enc.SetEscapeHTML(false)
	return w
}}

// maxPooledJSON is the largest buffer kept for reuse: a receive of ten
// 1 MiB messages must not keep its buffer for every later small answer.
const maxPooledJSON = 64 << 10

// writeJSON writes a successful JSON response.
func (x *exchange) writeJSON(out any) {
	jw := jsonWriters.Get().(*jsonWriter)
	defer func() {
		if jw.buf.Cap() <= maxPooledJSON {
			jw.buf.Reset()
			jsonWriters.Put(jw)
		}
	}()
	if err := jw.enc.Encode(out); err != nil {
		x.h.log.Error("encoding JSON response", "request_id", x.id, "action", x.action, "error", err)
		x.writeJSONError(contract.ErrInternal())
		return
	}
	b := bytes.TrimSuffix(jw.buf.Bytes(), []byte("\n"))
	x.writeHead(contentTypeJSON, http.StatusOK, len(b))
	_, _ = x.w.Write(b)
}

// jsonError is the body of a JSON protocol error.
type jsonError struct {
	Type    string `json:"__type"`
	Message string `json:"message"`
}

// encodeJSONError returns the body of e on the JSON protocol.
func encodeJSONError(e *contract.Error) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(jsonError{Type: jsonErrorNamespace + e.Type, Message: e.MessageFor(false)})
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// queryErrorHeader is the x-amzn-query-error value of e: its legacy Query
// code and fault, which awsQueryCompatible SDKs report as the error code.
func queryErrorHeader(e *contract.Error) string {
	fault := "Receiver"
	if e.Sender {
		fault = "Sender"
	}
	return e.Code + ";" + fault
}

func (x *exchange) writeJSONError(e *contract.Error) {
	b := encodeJSONError(e)
	x.w.Header().Set(headerQueryError, queryErrorHeader(e))
	x.writeHead(contentTypeJSON, errStatus(e), len(b))
	_, _ = x.w.Write(b)
}
