package httpapi

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"reflect"
	"sort"
	"strings"

	"github.com/sluicehq/sluice/contract"
)

// The Query API at a queue URL, as AWS serves it:
//   - no Action at all is a 404 with an empty UnknownOperationException
//     document, in XML whatever the client accepts;
//   - the service-level actions are not valid there (InvalidAction, "The
//     action CreateQueue is not valid for this endpoint.");
//   - a Query request that accepts application/json is answered in JSON:
//     the XML document's structure with members by name, maps as lists of
//     {"Name","Value"} ({"Key","Value"} for tags), and errors as
//     {"Error":{"Type","Code","Message"},"RequestId"}.
//
// (LocalStack's AWS-validated TestSqsQueryApi.)

const contentTypePlainJSON = "application/json"

// serviceLevelActions are refused at a queue URL.
var serviceLevelActions = map[string]bool{"CreateQueue": true, "ListQueues": true}

// unknownOperation answers a Query request without an Action at a queue
// URL.
func (x *exchange) unknownOperation() {
	body := []byte("<UnknownOperationException/>")
	x.writeHead(contentTypeXML, http.StatusNotFound, len(body))
	_, _ = x.w.Write(body)
}

// acceptsJSON says whether the request lists application/json in Accept.
func acceptsJSON(r *http.Request) bool {
	for _, h := range r.Header.Values("Accept") {
		for _, part := range strings.Split(h, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == contentTypePlainJSON {
				return true
			}
		}
	}
	return false
}

func (x *exchange) writeQueryJSON(op *operation, out any) {
	resp := map[string]any{"ResponseMetadata": map[string]any{"RequestId": x.id}}
	if op.toXML != nil {
		resp[op.name+"Result"] = queryJSONValue("", reflect.ValueOf(out))
	}
	x.writePlainJSON(http.StatusOK, map[string]any{op.name + "Response": resp})
}

func (x *exchange) writeQueryJSONError(e *contract.Error) {
	fault := "Receiver"
	if e.Sender {
		fault = "Sender"
	}
	x.writePlainJSON(errStatus(e), map[string]any{
		"Error":     map[string]any{"Type": fault, "Code": e.Code, "Message": e.MessageFor(true)},
		"RequestId": x.id,
	})
}

func (x *exchange) writePlainJSON(status int, doc any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(doc) // maps, slices and strings only
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	x.writeHead(contentTypePlainJSON, status, len(b))
	_, _ = x.w.Write(b)
}

// queryJSONValue turns an output value into the Query JSON form; name is
// the member it is the value of (tags list their entries by Key).
func queryJSONValue(name string, v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return queryJSONValue(name, v.Elem())
	case reflect.Struct:
		obj := map[string]any{}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			key, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if key == "-" {
				continue
			}
			if key == "" {
				key = f.Name
			}
			fv := v.Field(i)
			if fv.IsZero() && (strings.Contains(opts, "omitempty") || fv.Kind() == reflect.Pointer || fv.Kind() == reflect.Slice || fv.Kind() == reflect.Map) {
				continue
			}
			obj[key] = queryJSONValue(f.Name, fv)
		}
		return obj
	case reflect.Map:
		keyName := "Name"
		if name == "Tags" {
			keyName = "Key"
		}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		list := make([]any, 0, len(keys))
		for _, k := range keys {
			list = append(list, map[string]any{keyName: k, "Value": queryJSONValue("", v.MapIndex(reflect.ValueOf(k)))})
		}
		return list
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Bytes() // base64, as encoding/json writes it
		}
		list := make([]any, v.Len())
		for i := range v.Len() {
			list[i] = queryJSONValue("", v.Index(i))
		}
		return list
	}
	return v.Interface()
}
