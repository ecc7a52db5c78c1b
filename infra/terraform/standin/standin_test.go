package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// A manifest shaped like a CDKTF provider package's, cut down to one
// provider and one resource with a nested block.
const manifest = `{"types": {
 "p.provider.XProvider": {"kind": "class", "base": "cdktf.TerraformProvider",
  "initializer": {"parameters": [{"name": "scope"}, {"name": "id"}, {"name": "config", "type": {"fqn": "p.provider.XProviderConfig"}}]}},
 "p.provider.XProviderConfig": {"kind": "interface", "properties": [
  {"name": "alias", "optional": true, "type": {"primitive": "string"}},
  {"name": "project", "optional": true, "type": {"primitive": "string"}, "docs": {"remarks": "Docs at Terraform Registry: {@link https://registry.terraform.io/providers/hashicorp/x/1.0.0/docs#project XProvider#project}"}}]},
 "p.svc.Svc": {"kind": "class", "base": "cdktf.TerraformResource",
  "docs": {"summary": "Represents a {@link https://registry.terraform.io/providers/hashicorp/x/1.0.0/docs/resources/svc x_svc}."},
  "initializer": {"parameters": [{"name": "scope"}, {"name": "id"}, {"name": "config", "type": {"fqn": "p.svc.SvcConfigA"}}]},
  "properties": [
   {"name": "tfResourceType", "static": true, "type": {"primitive": "string"}},
   {"name": "uri", "type": {"primitive": "string"}},
   {"name": "nameInput", "type": {"primitive": "string"}},
   {"name": "name", "type": {"primitive": "string"}},
   {"name": "labelsAll", "type": {"fqn": "cdktf.StringMap"}}]},
 "p.svc.SvcConfigA": {"kind": "interface", "properties": [
  {"name": "name", "type": {"primitive": "string"}, "docs": {"summary": "Name.", "remarks": "Docs at Terraform Registry: {@link https://registry.terraform.io/providers/hashicorp/x/1.0.0/docs/resources/svc#name Svc#name}"}},
  {"name": "ipv4Enabled", "optional": true, "type": {"union": {"types": [{"primitive": "boolean"}, {"fqn": "cdktf.IResolvable"}]}}, "docs": {"remarks": "Docs at Terraform Registry: {@link https://registry.terraform.io/providers/hashicorp/x/1.0.0/docs/resources/svc#ipv4_enabled Svc#ipv4_enabled}"}},
  {"name": "tags", "optional": true, "type": {"collection": {"kind": "array", "elementtype": {"primitive": "string"}}}, "docs": {"remarks": "Docs at Terraform Registry: {@link https://registry.terraform.io/providers/hashicorp/x/1.0.0/docs/resources/svc#tags Svc#tags}"}},
  {"name": "scaling", "optional": true, "type": {"fqn": "p.svc.SvcScaling"}, "docs": {"summary": "scaling block.", "remarks": "Docs at Terraform Registry: {@link https://registry.terraform.io/providers/hashicorp/x/1.0.0/docs/resources/svc#scaling Svc#scaling}"}},
  {"name": "env", "type": {"union": {"types": [{"fqn": "cdktf.IResolvable"}, {"collection": {"kind": "array", "elementtype": {"fqn": "p.svc.SvcEnv"}}}]}}, "docs": {"summary": "env block.", "remarks": "Docs at Terraform Registry: {@link https://registry.terraform.io/providers/hashicorp/x/1.0.0/docs/resources/svc#env Svc#env}"}}]},
 "p.svc.SvcScaling": {"kind": "interface", "datatype": true, "properties": [
  {"name": "minInstanceCount", "optional": true, "type": {"primitive": "number"}, "docs": {"remarks": "Docs at Terraform Registry: {@link https://registry.terraform.io/providers/hashicorp/x/1.0.0/docs/resources/svc#min_instance_count Svc#min_instance_count}"}}]},
 "p.svc.SvcScalingOutputReference": {"kind": "class", "properties": [
  {"name": "internalValue", "type": {"fqn": "p.svc.SvcScaling"}},
  {"name": "minInstanceCountInput", "type": {"primitive": "number"}},
  {"name": "minInstanceCount", "type": {"primitive": "number"}},
  {"name": "effectiveCount", "type": {"primitive": "number"}}]},
 "p.svc.SvcEnv": {"kind": "interface", "datatype": true, "properties": [
  {"name": "name", "type": {"primitive": "string"}, "docs": {"remarks": "Docs at Terraform Registry: {@link https://registry.terraform.io/providers/hashicorp/x/1.0.0/docs/resources/svc#name Svc#name}"}}]}
}}`

func generated(t *testing.T) schemaFile {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, ".jsii"), filepath.Join(dir, "schema.json")
	if err := os.WriteFile(in, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := generate(in, out); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var f schemaFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestGenerateReadsNamesOptionalityBlocksAndComputed(t *testing.T) {
	f := generated(t)
	if _, ok := f.Provider.Attributes["alias"]; ok {
		t.Error("provider schema has alias (a meta-argument)")
	}
	if f.Provider.Attributes["project"] == nil {
		t.Error("provider schema lacks project")
	}
	svc := f.Resources["x_svc"]
	if svc == nil {
		t.Fatalf("resource x_svc missing; have %v", f.Resources)
	}
	want := map[string]struct {
		typ                          string
		required, optional, computed bool
	}{
		"name":         {`"string"`, true, false, false},
		"ipv4_enabled": {`"bool"`, false, true, true},
		"tags":         {`{"list":"string"}`, false, true, true},
		"uri":          {`"string"`, false, false, true},
		"labels_all":   {`{"map":"string"}`, false, false, true},
		"id":           {`"string"`, false, false, true},
	}
	for name, w := range want {
		a := svc.Attributes[name]
		if a == nil {
			t.Errorf("attribute %s missing", name)
			continue
		}
		if string(a.Type) != w.typ || a.Required != w.required || a.Optional != w.optional || a.Computed != w.computed {
			t.Errorf("%s = %s required=%v optional=%v computed=%v, want %+v", name, a.Type, a.Required, a.Optional, a.Computed, w)
		}
	}
	if len(svc.Attributes) != len(want) {
		t.Errorf("attributes %v, want exactly %d (no Input getters, no static constants)", svc.Attributes, len(want))
	}
	sc := svc.Blocks["scaling"]
	if sc == nil || sc.MaxItems != 1 || sc.MinItems != 0 {
		t.Fatalf("scaling = %+v, want an optional single block", sc)
	}
	if a := sc.Block.Attributes["effective_count"]; a == nil || !a.Computed || a.Optional {
		t.Errorf("scaling.effective_count = %+v, want computed only (from the output reference)", a)
	}
	if env := svc.Blocks["env"]; env == nil || env.MaxItems != 0 || env.MinItems != 1 {
		t.Errorf("env = %+v, want a required list block", env)
	}
}

func TestPlanLeavesUnsetComputedUnknown(t *testing.T) {
	f := generated(t)
	sc, err := toSchema(f.Resources["x_svc"])
	if err != nil {
		t.Fatal(err)
	}
	typ := sc.ValueType().(tftypes.Object)
	scalingType := typ.AttributeTypes["scaling"].(tftypes.List)
	scalingObj := scalingType.ElementType.(tftypes.Object)
	envType := typ.AttributeTypes["env"].(tftypes.List)
	cfg := map[string]tftypes.Value{}
	for k, at := range typ.AttributeTypes {
		cfg[k] = tftypes.NewValue(at, nil)
	}
	cfg["name"] = tftypes.NewValue(tftypes.String, "svc")
	cfg["env"] = tftypes.NewValue(envType, []tftypes.Value{})
	cfg["scaling"] = tftypes.NewValue(scalingType, []tftypes.Value{tftypes.NewValue(scalingObj, map[string]tftypes.Value{
		"min_instance_count": tftypes.NewValue(tftypes.Number, 0),
		"effective_count":    tftypes.NewValue(tftypes.Number, nil),
	})})
	planned, err := fill(sc.Block, tftypes.NewValue(typ, cfg), true)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]tftypes.Value
	if err := planned.As(&got); err != nil {
		t.Fatal(err)
	}
	if got["uri"].IsKnown() || got["ipv4_enabled"].IsKnown() {
		t.Error("unset computed attributes must plan as unknown")
	}
	var name string
	if err := got["name"].As(&name); err != nil || name != "svc" {
		t.Errorf("name = %q (%v), want what the configuration set", name, err)
	}
	var scaling []tftypes.Value
	if err := got["scaling"].As(&scaling); err != nil {
		t.Fatal(err)
	}
	var inner map[string]tftypes.Value
	if err := scaling[0].As(&inner); err != nil {
		t.Fatal(err)
	}
	if !inner["min_instance_count"].IsKnown() || inner["effective_count"].IsKnown() {
		t.Errorf("scaling = %v: a set value stays, a nested computed one plans as unknown", inner)
	}

	read, err := fill(sc.Block, tftypes.NewValue(typ, cfg), false)
	if err != nil {
		t.Fatal(err)
	}
	if !read.IsFullyKnown() {
		t.Error("a data source's read must be wholly known")
	}
}
