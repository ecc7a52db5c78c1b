package httpapi

// Checks of the Query codec against the Query service model that botocore
// shipped last (1.32.6), kept beside the repository in
// shared/reference. The model's serialization rules: a structure member is
// named by its locationName (on the member or on its shape) or its member
// name; a flattened list repeats its member's locationName (in place of the
// list's own name) numbered from 1; a flattened map repeats its own name
// numbered from 1 with the key and value under their locationNames.

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

const queryModelFile = "botocore-sqs-2012-11-05-query-1.32.6.service-2.json"

type modelRef struct {
	Shape        string `json:"shape"`
	LocationName string `json:"locationName"`
	Flattened    bool   `json:"flattened"`
}

type modelShape struct {
	Type         string              `json:"type"`
	Members      map[string]modelRef `json:"members"`
	Member       modelRef            `json:"member"`
	Key          modelRef            `json:"key"`
	Value        modelRef            `json:"value"`
	LocationName string              `json:"locationName"`
	Flattened    bool                `json:"flattened"`
}

type queryModel struct {
	Operations map[string]struct {
		Input  *modelRef `json:"input"`
		Output *struct {
			Shape         string `json:"shape"`
			ResultWrapper string `json:"resultWrapper"`
		} `json:"output"`
	} `json:"operations"`
	Shapes map[string]modelShape `json:"shapes"`
}

// loadQueryModel finds the reference model in a shared/reference folder
// beside (or above) the repository; nil when there is none.
func loadQueryModel(t *testing.T) *queryModel {
	t.Helper()
	dir, _ := filepath.Abs(".")
	for i := 0; i < 6; i++ {
		p := filepath.Join(dir, "shared", "reference", queryModelFile)
		if b, err := os.ReadFile(p); err == nil {
			var m queryModel
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			return &m
		}
		dir = filepath.Dir(dir)
	}
	return nil
}

type modelParam struct {
	name string
	typ  string // the model type of the leaf: string, integer, blob, ...
}

// queryModelNames returns, for every operation, the names of all leaf
// parameters of its input as the Query protocol serializes them, with one
// element in every list and map.
func queryModelNames(t *testing.T) map[string][]modelParam {
	m := loadQueryModel(t)
	if m == nil {
		return nil
	}
	out := map[string][]modelParam{}
	for name, o := range m.Operations {
		var params []modelParam
		if o.Input != nil {
			m.inputLeaves(o.Input.Shape, "", &params)
		}
		out[name] = params
	}
	return out
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func (m *queryModel) inputLeaves(shapeName, prefix string, out *[]modelParam) {
	s := m.Shapes[shapeName]
	switch s.Type {
	case "structure":
		for key, ref := range s.Members {
			name := key
			if ms := m.Shapes[ref.Shape]; ms.LocationName != "" {
				name = ms.LocationName
			}
			if ref.LocationName != "" {
				name = ref.LocationName
			}
			m.memberLeaves(ref, join(prefix, name), out)
		}
	default:
		*out = append(*out, modelParam{prefix, s.Type})
	}
}

// memberLeaves handles a member reached through ref, already named prefix.
func (m *queryModel) memberLeaves(ref modelRef, prefix string, out *[]modelParam) {
	s := m.Shapes[ref.Shape]
	flat := s.Flattened || ref.Flattened
	switch s.Type {
	case "list":
		var p string
		if flat {
			p = prefix
			if s.Member.LocationName != "" {
				parts := strings.Split(prefix, ".")
				parts[len(parts)-1] = s.Member.LocationName
				p = strings.Join(parts, ".")
			}
		} else {
			n := s.Member.LocationName
			if n == "" {
				n = "member"
			}
			p = prefix + "." + n
		}
		m.memberLeaves(modelRef{Shape: s.Member.Shape}, p+".1", out)
	case "map":
		p := prefix
		if !flat {
			p += ".entry"
		}
		k, v := s.Key.LocationName, s.Value.LocationName
		if k == "" {
			k = "key"
		}
		if v == "" {
			v = "value"
		}
		m.memberLeaves(modelRef{Shape: s.Key.Shape}, p+".1."+k, out)
		m.memberLeaves(modelRef{Shape: s.Value.Shape}, p+".1."+v, out)
	case "structure":
		m.inputLeaves(ref.Shape, prefix, out)
	default:
		*out = append(*out, modelParam{prefix, s.Type})
	}
}

// sampleValue is a valid value of a leaf of the given model type.
func sampleValue(p modelParam) string {
	switch p.typ {
	case "integer", "long":
		return "1"
	case "blob":
		return "AQ=="
	case "boolean":
		return "true"
	}
	return "x"
}

// notInQueryModel lists input members that came after the last Query model.
var notInQueryModel = map[string]bool{
	"ReceiveMessageInput.MessageSystemAttributeNames": true,
}

// unsetLeaves lists the members of v (a contract input) left at their zero
// value, looking into the first element of lists and maps.
func unsetLeaves(v reflect.Value, path string) []string {
	var missing []string
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return []string{path}
		}
		return unsetLeaves(v.Elem(), path)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			p := join(path, f.Name)
			if notInQueryModel[v.Type().Name()+"."+f.Name] {
				continue
			}
			missing = append(missing, unsetLeaves(v.Field(i), p)...)
		}
	case reflect.Slice:
		if v.Len() == 0 {
			return []string{path}
		}
		if v.Type().Elem().Kind() == reflect.Struct {
			return unsetLeaves(v.Index(0), path+"[0]")
		}
	case reflect.Map:
		if v.Len() == 0 {
			return []string{path}
		}
		it := v.MapRange()
		it.Next()
		if it.Value().Kind() == reflect.Struct {
			return unsetLeaves(it.Value(), path+"[k]")
		}
	case reflect.String:
		if v.String() == "" {
			return []string{path}
		}
	}
	return missing
}

// ---- output side

// xmlPaths lists the element paths (a/b/c) the model allows under the
// result wrapper of shapeName.
func (m *queryModel) xmlPaths(shapeName, prefix string, out map[string]bool) {
	s := m.Shapes[shapeName]
	for key, ref := range s.Members {
		ms := m.Shapes[ref.Shape]
		name := key
		flat := ms.Flattened || ref.Flattened
		if ms.Type == "list" && flat && ms.Member.LocationName != "" {
			name = ms.Member.LocationName
		} else if ref.LocationName != "" {
			name = ref.LocationName
		} else if ms.LocationName != "" {
			name = ms.LocationName
		}
		path := name
		if prefix != "" {
			path = prefix + "/" + name
		}
		m.xmlValuePaths(ref.Shape, flat, path, out)
	}
}

func (m *queryModel) xmlValuePaths(shapeName string, flat bool, path string, out map[string]bool) {
	s := m.Shapes[shapeName]
	switch s.Type {
	case "list":
		if flat {
			m.xmlValuePaths(s.Member.Shape, false, path, out)
		} else {
			n := s.Member.LocationName
			if n == "" {
				n = "member"
			}
			out[path] = true
			m.xmlValuePaths(s.Member.Shape, false, path+"/"+n, out)
		}
	case "map":
		if !flat {
			out[path] = true
			path += "/entry"
		}
		k, v := s.Key.LocationName, s.Value.LocationName
		if k == "" {
			k = "key"
		}
		if v == "" {
			v = "value"
		}
		out[path] = true
		m.xmlValuePaths(s.Key.Shape, false, path+"/"+k, out)
		m.xmlValuePaths(s.Value.Shape, false, path+"/"+v, out)
	case "structure":
		out[path] = true
		m.xmlPaths(shapeName, path, out)
	default:
		out[path] = true
	}
}

// xmlElementPaths parses doc and returns the paths of all elements under
// the element named root.
func xmlElementPaths(t *testing.T, doc []byte, root string) map[string]bool {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(doc)))
	var stack []string
	in := -1
	out := map[string]bool{}
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch e := tok.(type) {
		case xml.StartElement:
			stack = append(stack, e.Name.Local)
			if e.Name.Local == root && in < 0 {
				in = len(stack)
			} else if in >= 0 {
				out[strings.Join(stack[in:], "/")] = true
			}
		case xml.EndElement:
			if len(stack) == in {
				in = -1
			}
			stack = stack[:len(stack)-1]
		}
	}
	return out
}

// TestXMLMatchesModel fills every output with all members set, encodes it
// and checks that the element paths under <XResult> are exactly those the
// Query model defines for the result.
func TestXMLMatchesModel(t *testing.T) {
	m := loadQueryModel(t)
	if m == nil {
		t.Skip("reference model not available")
	}
	for name, o := range m.Operations {
		op := operations[name]
		if op == nil {
			t.Errorf("model operation %s missing", name)
			continue
		}
		if o.Output == nil {
			if op.toXML != nil {
				t.Errorf("%s: model has no output but the encoder writes a Result", name)
			}
			continue
		}
		if o.Output.ResultWrapper != name+"Result" {
			t.Errorf("%s: result wrapper %s", name, o.Output.ResultWrapper)
		}
		want := map[string]bool{}
		m.xmlPaths(o.Output.Shape, "", want)
		out := filledOutput(t, op)
		doc := encodeXML(op, out, "rid")
		got := xmlElementPaths(t, doc, o.Output.ResultWrapper)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: element paths differ\n got %v\nwant %v", name, sortedKeys(got), sortedKeys(want))
		}
	}
}

// filledOutput returns an output of op with every member set.
func filledOutput(t *testing.T, op *operation) any {
	t.Helper()
	v := reflect.New(op.outputType)
	fill(v.Elem())
	return v.Interface()
}

func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i))
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		mv := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e)
		mv.SetMapIndex(reflect.ValueOf("k"), e)
		v.Set(mv)
	case reflect.String:
		v.SetString("x")
	case reflect.Int64, reflect.Int:
		v.SetInt(1)
	case reflect.Uint8:
		v.SetUint(1)
	case reflect.Bool:
		v.SetBool(true)
	}
}

func TestSortedKeysHelper(t *testing.T) {
	if got := sortedKeys(map[string]bool{"b": true, "a": true}); !sort.StringsAreSorted(got) || len(got) != 2 {
		t.Fatal(got)
	}
}
