package main

// gen turns a CDKTF provider package's .jsii manifest into the stand-in's
// schema file. The manifest describes, for every resource and data
// source, a Config interface (the arguments, each with its Terraform name
// in the "Docs at Terraform Registry" link, optional or not, nested blocks
// as structs) and a class whose getters include the computed attributes.
// What it does not say is taken the permissive way: every optional
// argument is also computed (so an unset one plans as unknown, never as a
// wrong null), every nested block is a list, and a type it cannot place
// is dynamic.

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Schema file format (schema.json beside the provider binary).
type schemaFile struct {
	Provider    *block            `json:"provider"`
	Resources   map[string]*block `json:"resources"`
	DataSources map[string]*block `json:"data_sources"`
}

type block struct {
	Attributes map[string]*attribute `json:"attributes,omitempty"`
	Blocks     map[string]*nested    `json:"blocks,omitempty"`
}

type attribute struct {
	Type     json.RawMessage `json:"type"` // "string", "number", "bool", "dynamic", {"list":T}, {"map":T}, {"object":{...}}
	Required bool            `json:"required,omitempty"`
	Optional bool            `json:"optional,omitempty"`
	Computed bool            `json:"computed,omitempty"`
}

type nested struct {
	Block    *block `json:"block"`
	MinItems int64  `json:"min_items,omitempty"`
	MaxItems int64  `json:"max_items,omitempty"`
}

// The parts of a .jsii manifest read here.
type jsiiFile struct {
	Types map[string]*jsiiType `json:"types"`
}

type jsiiType struct {
	Kind       string          `json:"kind"`
	Base       string          `json:"base"`
	Datatype   bool            `json:"datatype"`
	Interfaces []string        `json:"interfaces"`
	Docs       jsiiDocs        `json:"docs"`
	Properties []*jsiiProperty `json:"properties"`
	// Initializer: the constructor, whose "config" parameter names the
	// Config interface (usually <Class>Config, but CDKTF renames some).
	Initializer *struct {
		Parameters []struct {
			Name string  `json:"name"`
			Type jsiiRef `json:"type"`
		} `json:"parameters"`
	} `json:"initializer"`
}

type jsiiDocs struct {
	Summary string `json:"summary"`
	Remarks string `json:"remarks"`
}

type jsiiProperty struct {
	Name     string   `json:"name"`
	Optional bool     `json:"optional"`
	Static   bool     `json:"static"`
	Docs     jsiiDocs `json:"docs"`
	Type     jsiiRef  `json:"type"`
}

type jsiiRef struct {
	Primitive  string `json:"primitive"`
	FQN        string `json:"fqn"`
	Collection *struct {
		Kind        string  `json:"kind"`
		ElementType jsiiRef `json:"elementtype"`
	} `json:"collection"`
	Union *struct {
		Types []jsiiRef `json:"types"`
	} `json:"union"`
}

var (
	// "Represents a {@link https://registry.terraform.io/providers/hashicorp/google/6.50.0/docs/resources/x google_x}."
	representsRE = regexp.MustCompile(`/docs/(resources|data-sources)/[a-z0-9_]+ ([a-z0-9_]+)\}`)
	// "Docs at Terraform Registry: {@link https://...#min_instance_count CloudRunV2Service#min_instance_count}"
	argNameRE = regexp.MustCompile(`#([A-Za-z0-9_]+) [A-Za-z0-9]+#`)
)

type generator struct {
	types map[string]*jsiiType
}

func generate(jsiiPath, outPath string) error {
	raw, err := os.ReadFile(jsiiPath)
	if err != nil {
		return err
	}
	var f jsiiFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return fmt.Errorf("%s: %w", jsiiPath, err)
	}
	g := &generator{types: f.Types}
	out := schemaFile{Resources: map[string]*block{}, DataSources: map[string]*block{}}
	names := make([]string, 0, len(f.Types))
	for fqn := range f.Types {
		names = append(names, fqn)
	}
	sort.Strings(names)
	for _, fqn := range names {
		t := f.Types[fqn]
		if t.Kind != "class" {
			continue
		}
		switch t.Base {
		case "cdktf.TerraformProvider":
			b, err := g.topBlock(fqn, t)
			if err != nil {
				return err
			}
			// alias is a meta-argument of every provider block, not the
			// provider's own.
			delete(b.Attributes, "alias")
			out.Provider = b
		case "cdktf.TerraformResource", "cdktf.TerraformDataSource":
			m := representsRE.FindStringSubmatch(t.Docs.Summary)
			if m == nil {
				return fmt.Errorf("%s: no Terraform type name in %q", fqn, t.Docs.Summary)
			}
			b, err := g.topBlock(fqn, t)
			if err != nil {
				return err
			}
			if m[1] == "resources" {
				out.Resources[m[2]] = b
			} else {
				out.DataSources[m[2]] = b
			}
		}
	}
	if out.Provider == nil || len(out.Resources) == 0 {
		return fmt.Errorf("%s: no provider or no resources found", jsiiPath)
	}
	data, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "standin gen: %s: %d resources, %d data sources\n", jsiiPath, len(out.Resources), len(out.DataSources))
	return os.WriteFile(outPath, data, 0o644)
}

// topBlock is a resource's, data source's or provider's schema: the
// arguments of its Config interface, plus the computed getters of its
// class. Every top-level schema has an "id".
func (g *generator) topBlock(fqn string, class *jsiiType) (*block, error) {
	var cfg *jsiiType
	if class.Initializer != nil {
		for _, p := range class.Initializer.Parameters {
			if p.Name == "config" {
				cfg = g.types[p.Type.FQN]
			}
		}
	}
	if cfg == nil {
		return nil, fmt.Errorf("%s: no Config interface", fqn)
	}
	b, err := g.structBlock(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fqn, err)
	}
	if class.Base != "cdktf.TerraformProvider" {
		g.addComputed(b, class)
		if _, ok := b.Attributes["id"]; !ok {
			b.Attributes["id"] = &attribute{Type: json.RawMessage(`"string"`), Computed: true}
		}
	}
	return b, nil
}

// structBlock is the block of a struct: its properties with their
// Terraform names; structs among them are nested blocks.
func (g *generator) structBlock(t *jsiiType) (*block, error) {
	b := &block{Attributes: map[string]*attribute{}, Blocks: map[string]*nested{}}
	for _, p := range t.Properties {
		name := tfName(p)
		st, list := g.structOf(p.Type)
		if isBlock(p) && st == nil && p.Type.Primitive == "any" {
			// CDKTF leaves a block's schema out where it is very deep
			// (aws_quicksight_analysis.definition): any value passes.
			b.Attributes[name] = &attribute{Type: json.RawMessage(`"dynamic"`), Optional: true, Computed: true}
			continue
		}
		if isBlock(p) {
			if st == nil {
				return nil, fmt.Errorf("%s: block of unknown type", name)
			}
			inner, err := g.structBlock(st)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			// The nested struct's computed attributes are getters of its
			// output reference class.
			if ref := g.types[g.fqnOf(p.Type)+"OutputReference"]; ref != nil {
				g.addComputed(inner, ref)
			}
			n := &nested{Block: inner}
			if !list {
				n.MaxItems = 1
			}
			if !p.Optional {
				n.MinItems = 1
			}
			b.Blocks[name] = n
			continue
		}
		a := &attribute{Type: g.argType(p.Type)}
		if p.Optional {
			a.Optional, a.Computed = true, true
		} else {
			a.Required = true
		}
		b.Attributes[name] = a
	}
	return b, nil
}

// addComputed adds the getters of class that are no argument already.
// Names are compared without underscores: a getter's snake_case name can
// differ from the argument's real one (detectMd5Hash, detect_md5hash).
func (g *generator) addComputed(b *block, class *jsiiType) {
	taken := map[string]bool{}
	for name := range b.Attributes {
		taken[squash(name)] = true
	}
	for name := range b.Blocks {
		taken[squash(name)] = true
	}
	for _, p := range class.Properties {
		if p.Static || strings.HasSuffix(p.Name, "Input") || p.Name == "internalValue" || p.Name == "fqn" {
			continue
		}
		name := snake(p.Name)
		if taken[squash(name)] {
			continue
		}
		b.Attributes[name] = &attribute{Type: g.getterType(p.Type, 0), Computed: true}
	}
}

func isBlock(p *jsiiProperty) bool {
	return strings.HasSuffix(p.Docs.Summary, " block.")
}

// structOf is the struct a block property holds, and whether it is a
// list of them.
func (g *generator) structOf(r jsiiRef) (*jsiiType, bool) {
	switch {
	case r.FQN != "":
		return g.types[r.FQN], false
	case r.Collection != nil:
		return g.types[r.Collection.ElementType.FQN], true
	case r.Union != nil:
		for _, u := range r.Union.Types {
			if u.Collection != nil {
				return g.types[u.Collection.ElementType.FQN], true
			}
		}
	}
	return nil, false
}

func (g *generator) fqnOf(r jsiiRef) string {
	if r.FQN != "" {
		return r.FQN
	}
	if r.Collection != nil {
		return r.Collection.ElementType.FQN
	}
	if r.Union != nil {
		for _, u := range r.Union.Types {
			if u.Collection != nil {
				return u.Collection.ElementType.FQN
			}
		}
	}
	return ""
}

// argType is the type of an argument: primitives, unions with
// IResolvable (which CDKTF adds to booleans and lists), collections.
func (g *generator) argType(r jsiiRef) json.RawMessage {
	switch {
	case r.Primitive != "":
		return primitive(r.Primitive)
	case r.Union != nil:
		for _, u := range r.Union.Types {
			if u.FQN == "cdktf.IResolvable" {
				continue
			}
			return g.argType(u)
		}
	case r.Collection != nil:
		el := g.argType(r.Collection.ElementType)
		kind := "list"
		if r.Collection.Kind == "map" {
			kind = "map"
		}
		return json.RawMessage(fmt.Sprintf(`{%q:%s}`, kind, el))
	}
	return json.RawMessage(`"dynamic"`)
}

// getterType is the type of a computed getter: primitives, CDKTF's
// typed maps and lists, and output references (objects) and their lists.
func (g *generator) getterType(r jsiiRef, depth int) json.RawMessage {
	if r.Primitive != "" {
		return primitive(r.Primitive)
	}
	switch r.FQN {
	case "cdktf.IResolvable":
		return json.RawMessage(`"bool"`) // CDKTF's boolean getters
	case "cdktf.StringMap":
		return json.RawMessage(`{"map":"string"}`)
	case "cdktf.NumberMap":
		return json.RawMessage(`{"map":"number"}`)
	case "cdktf.BooleanMap":
		return json.RawMessage(`{"map":"bool"}`)
	case "cdktf.StringList":
		return json.RawMessage(`{"list":"string"}`)
	case "cdktf.NumberList":
		return json.RawMessage(`{"list":"number"}`)
	case "cdktf.BooleanList":
		return json.RawMessage(`{"list":"bool"}`)
	case "cdktf.StringMapList":
		return json.RawMessage(`{"list":{"map":"string"}}`)
	}
	if r.Collection != nil {
		el := g.getterType(r.Collection.ElementType, depth)
		kind := "list"
		if r.Collection.Kind == "map" {
			kind = "map"
		}
		return json.RawMessage(fmt.Sprintf(`{%q:%s}`, kind, el))
	}
	if depth < 8 {
		base := ""
		switch {
		case strings.HasSuffix(r.FQN, "OutputReference"):
			base = strings.TrimSuffix(r.FQN, "OutputReference")
		case strings.HasSuffix(r.FQN, "List"):
			base = strings.TrimSuffix(r.FQN, "List")
		}
		if ref := g.types[base+"OutputReference"]; base != "" && ref != nil {
			attrs := map[string]json.RawMessage{}
			for _, p := range ref.Properties {
				if p.Static || strings.HasSuffix(p.Name, "Input") || p.Name == "internalValue" || p.Name == "fqn" {
					continue
				}
				attrs[snake(p.Name)] = g.getterType(p.Type, depth+1)
			}
			obj, _ := json.Marshal(attrs)
			// Computed nested objects are lists in SDK-based providers,
			// single or not.
			return json.RawMessage(fmt.Sprintf(`{"list":{"object":%s}}`, obj))
		}
	}
	return json.RawMessage(`"dynamic"`)
}

func primitive(p string) json.RawMessage {
	switch p {
	case "string", "date":
		return json.RawMessage(`"string"`)
	case "number":
		return json.RawMessage(`"number"`)
	case "boolean":
		return json.RawMessage(`"bool"`)
	}
	return json.RawMessage(`"dynamic"`)
}

// tfName is a property's Terraform name: from its registry link when it
// has one (exact, whatever CDKTF renamed), else its camelCase name in
// snake_case.
func tfName(p *jsiiProperty) string {
	if m := argNameRE.FindStringSubmatch(p.Docs.Remarks); m != nil {
		return m[1]
	}
	if m := argNameRE.FindStringSubmatch(p.Docs.Summary); m != nil {
		return m[1]
	}
	return snake(p.Name)
}

func squash(s string) string { return strings.ReplaceAll(s, "_", "") }

func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
