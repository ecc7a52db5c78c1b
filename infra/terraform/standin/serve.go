package main

// The provider server: schemas from schema.json, plans that leave
// computed attributes unknown, data sources that read as empty values.
// It never talks to a cloud and cannot apply.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

type server struct {
	provider    *tfprotov6.Schema
	resources   map[string]*tfprotov6.Schema
	dataSources map[string]*tfprotov6.Schema
}

// loadServer reads schema.json from beside the executable (the mirror
// directory tofu runs it from).
func loadServer() (*server, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	path := filepath.Join(filepath.Dir(exe), "schema.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f schemaFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &server{resources: map[string]*tfprotov6.Schema{}, dataSources: map[string]*tfprotov6.Schema{}}
	if s.provider, err = toSchema(f.Provider); err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	for name, b := range f.Resources {
		if s.resources[name], err = toSchema(b); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	for name, b := range f.DataSources {
		if s.dataSources[name], err = toSchema(b); err != nil {
			return nil, fmt.Errorf("data %s: %w", name, err)
		}
	}
	return s, nil
}

func toSchema(b *block) (*tfprotov6.Schema, error) {
	pb, err := toBlock(b)
	if err != nil {
		return nil, err
	}
	return &tfprotov6.Schema{Block: pb}, nil
}

func toBlock(b *block) (*tfprotov6.SchemaBlock, error) {
	out := &tfprotov6.SchemaBlock{}
	for _, name := range sortedKeys(b.Attributes) {
		a := b.Attributes[name]
		t, err := parseType(a.Type)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out.Attributes = append(out.Attributes, &tfprotov6.SchemaAttribute{
			Name: name, Type: t, Required: a.Required, Optional: a.Optional, Computed: a.Computed,
		})
	}
	for _, name := range sortedKeys(b.Blocks) {
		n := b.Blocks[name]
		inner, err := toBlock(n.Block)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out.BlockTypes = append(out.BlockTypes, &tfprotov6.SchemaNestedBlock{
			TypeName: name, Block: inner, Nesting: tfprotov6.SchemaNestedBlockNestingModeList,
			MinItems: n.MinItems, MaxItems: n.MaxItems,
		})
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func parseType(raw json.RawMessage) (tftypes.Type, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "string":
			return tftypes.String, nil
		case "number":
			return tftypes.Number, nil
		case "bool":
			return tftypes.Bool, nil
		case "dynamic":
			return tftypes.DynamicPseudoType, nil
		}
		return nil, fmt.Errorf("unknown type %q", s)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if el, ok := m["list"]; ok {
		t, err := parseType(el)
		return tftypes.List{ElementType: t}, err
	}
	if el, ok := m["map"]; ok {
		t, err := parseType(el)
		return tftypes.Map{ElementType: t}, err
	}
	if obj, ok := m["object"]; ok {
		var attrs map[string]json.RawMessage
		if err := json.Unmarshal(obj, &attrs); err != nil {
			return nil, err
		}
		o := tftypes.Object{AttributeTypes: map[string]tftypes.Type{}}
		for k, v := range attrs {
			t, err := parseType(v)
			if err != nil {
				return nil, err
			}
			o.AttributeTypes[k] = t
		}
		return o, nil
	}
	return nil, fmt.Errorf("unknown type %s", raw)
}

// fill returns v (of block b's type) with each null computed attribute
// set by value: unknown for a plan, an empty value for a data source's
// read. Nested blocks are walked; arguments that are set stay as they are.
func fill(b *tfprotov6.SchemaBlock, v tftypes.Value, unknown bool) (tftypes.Value, error) {
	if v.IsNull() || !v.IsKnown() {
		return v, nil
	}
	var given map[string]tftypes.Value
	if err := v.As(&given); err != nil {
		return v, err
	}
	// A copy: the value's own map may be shared with its other holders.
	attrs := make(map[string]tftypes.Value, len(given))
	for k, x := range given {
		attrs[k] = x
	}
	for _, a := range b.Attributes {
		cur, ok := attrs[a.Name]
		if !a.Computed || (ok && !cur.IsNull()) {
			continue
		}
		if unknown {
			attrs[a.Name] = tftypes.NewValue(a.Type, tftypes.UnknownValue)
		} else {
			attrs[a.Name] = empty(a.Type)
		}
	}
	for _, nb := range b.BlockTypes {
		cur, ok := attrs[nb.TypeName]
		if !ok || cur.IsNull() || !cur.IsKnown() {
			continue
		}
		var given []tftypes.Value
		if err := cur.As(&given); err != nil {
			return v, err
		}
		elems := make([]tftypes.Value, len(given))
		copy(elems, given)
		for i, e := range elems {
			filled, err := fill(nb.Block, e, unknown)
			if err != nil {
				return v, err
			}
			elems[i] = filled
		}
		attrs[nb.TypeName] = tftypes.NewValue(cur.Type(), elems)
	}
	return tftypes.NewValue(v.Type(), attrs), nil
}

// empty is a known value of t: "", 0, false, an empty collection, an
// object of empties; a dynamic one is an empty string.
func empty(t tftypes.Type) tftypes.Value {
	switch {
	case t.Is(tftypes.String), t.Is(tftypes.DynamicPseudoType):
		return tftypes.NewValue(tftypes.String, "")
	case t.Is(tftypes.Number):
		return tftypes.NewValue(tftypes.Number, 0)
	case t.Is(tftypes.Bool):
		return tftypes.NewValue(tftypes.Bool, false)
	case t.Is(tftypes.List{}):
		return tftypes.NewValue(t, []tftypes.Value{})
	case t.Is(tftypes.Set{}):
		return tftypes.NewValue(t, []tftypes.Value{})
	case t.Is(tftypes.Map{}):
		return tftypes.NewValue(t, map[string]tftypes.Value{})
	case t.Is(tftypes.Object{}):
		o := t.(tftypes.Object)
		vals := map[string]tftypes.Value{}
		for k, at := range o.AttributeTypes {
			vals[k] = empty(at)
		}
		return tftypes.NewValue(t, vals)
	}
	return tftypes.NewValue(t, nil)
}

func schemaType(s *tfprotov6.Schema) tftypes.Type {
	return s.ValueType()
}

func errDiag(format string, args ...any) []*tfprotov6.Diagnostic {
	return []*tfprotov6.Diagnostic{{Severity: tfprotov6.DiagnosticSeverityError, Summary: fmt.Sprintf(format, args...)}}
}

func (s *server) GetMetadata(context.Context, *tfprotov6.GetMetadataRequest) (*tfprotov6.GetMetadataResponse, error) {
	resp := &tfprotov6.GetMetadataResponse{ServerCapabilities: &tfprotov6.ServerCapabilities{GetProviderSchemaOptional: false}}
	for _, n := range sortedKeys(s.resources) {
		resp.Resources = append(resp.Resources, tfprotov6.ResourceMetadata{TypeName: n})
	}
	for _, n := range sortedKeys(s.dataSources) {
		resp.DataSources = append(resp.DataSources, tfprotov6.DataSourceMetadata{TypeName: n})
	}
	return resp, nil
}

func (s *server) GetProviderSchema(context.Context, *tfprotov6.GetProviderSchemaRequest) (*tfprotov6.GetProviderSchemaResponse, error) {
	return &tfprotov6.GetProviderSchemaResponse{
		ServerCapabilities: &tfprotov6.ServerCapabilities{PlanDestroy: true},
		Provider:           s.provider,
		ResourceSchemas:    s.resources,
		DataSourceSchemas:  s.dataSources,
		Functions:          map[string]*tfprotov6.Function{},
	}, nil
}

func (s *server) GetResourceIdentitySchemas(context.Context, *tfprotov6.GetResourceIdentitySchemasRequest) (*tfprotov6.GetResourceIdentitySchemasResponse, error) {
	return &tfprotov6.GetResourceIdentitySchemasResponse{IdentitySchemas: map[string]*tfprotov6.ResourceIdentitySchema{}}, nil
}

// Argument names, types, required arguments and block counts are checked
// by tofu itself against the schema; the stand-in adds nothing.
func (s *server) ValidateProviderConfig(_ context.Context, req *tfprotov6.ValidateProviderConfigRequest) (*tfprotov6.ValidateProviderConfigResponse, error) {
	return &tfprotov6.ValidateProviderConfigResponse{PreparedConfig: req.Config}, nil
}

func (s *server) ConfigureProvider(context.Context, *tfprotov6.ConfigureProviderRequest) (*tfprotov6.ConfigureProviderResponse, error) {
	return &tfprotov6.ConfigureProviderResponse{}, nil
}

func (s *server) StopProvider(context.Context, *tfprotov6.StopProviderRequest) (*tfprotov6.StopProviderResponse, error) {
	return &tfprotov6.StopProviderResponse{}, nil
}

func (s *server) ValidateResourceConfig(_ context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	if s.resources[req.TypeName] == nil {
		return &tfprotov6.ValidateResourceConfigResponse{Diagnostics: errDiag("unknown resource type %s", req.TypeName)}, nil
	}
	return &tfprotov6.ValidateResourceConfigResponse{}, nil
}

func (s *server) UpgradeResourceState(_ context.Context, req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.UpgradeResourceStateResponse, error) {
	sc := s.resources[req.TypeName]
	if sc == nil {
		return &tfprotov6.UpgradeResourceStateResponse{Diagnostics: errDiag("unknown resource type %s", req.TypeName)}, nil
	}
	v, err := req.RawState.UnmarshalWithOpts(schemaType(sc), tfprotov6.UnmarshalOpts{ValueFromJSONOpts: tftypes.ValueFromJSONOpts{IgnoreUndefinedAttributes: true}})
	if err != nil {
		return &tfprotov6.UpgradeResourceStateResponse{Diagnostics: errDiag("state of %s: %v", req.TypeName, err)}, nil
	}
	dv, err := tfprotov6.NewDynamicValue(schemaType(sc), v)
	if err != nil {
		return nil, err
	}
	return &tfprotov6.UpgradeResourceStateResponse{UpgradedState: &dv}, nil
}

func (s *server) ReadResource(_ context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	return &tfprotov6.ReadResourceResponse{NewState: req.CurrentState, Private: req.Private}, nil
}

// PlanResourceChange plans what tofu proposes, with the computed
// attributes nothing sets unknown ("known after apply").
func (s *server) PlanResourceChange(_ context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	sc := s.resources[req.TypeName]
	if sc == nil {
		return &tfprotov6.PlanResourceChangeResponse{Diagnostics: errDiag("unknown resource type %s", req.TypeName)}, nil
	}
	typ := schemaType(sc)
	proposed, err := req.ProposedNewState.Unmarshal(typ)
	if err != nil {
		return nil, err
	}
	if proposed.IsNull() { // destroy
		return &tfprotov6.PlanResourceChangeResponse{PlannedState: req.ProposedNewState}, nil
	}
	prior, err := req.PriorState.Unmarshal(typ)
	if err != nil {
		return nil, err
	}
	planned := proposed
	if prior.IsNull() {
		if planned, err = fill(sc.Block, proposed, true); err != nil {
			return &tfprotov6.PlanResourceChangeResponse{Diagnostics: errDiag("plan %s: %v", req.TypeName, err)}, nil
		}
	}
	dv, err := tfprotov6.NewDynamicValue(typ, planned)
	if err != nil {
		return nil, err
	}
	return &tfprotov6.PlanResourceChangeResponse{PlannedState: &dv, PlannedPrivate: req.PriorPrivate}, nil
}

func (s *server) ApplyResourceChange(_ context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	return &tfprotov6.ApplyResourceChangeResponse{Diagnostics: errDiag("%s: the schema-only stand-in provider cannot apply; use tofu test with command = plan", req.TypeName)}, nil
}

func (s *server) ImportResourceState(_ context.Context, req *tfprotov6.ImportResourceStateRequest) (*tfprotov6.ImportResourceStateResponse, error) {
	return &tfprotov6.ImportResourceStateResponse{Diagnostics: errDiag("%s: the stand-in provider cannot import", req.TypeName)}, nil
}

func (s *server) MoveResourceState(_ context.Context, req *tfprotov6.MoveResourceStateRequest) (*tfprotov6.MoveResourceStateResponse, error) {
	return &tfprotov6.MoveResourceStateResponse{Diagnostics: errDiag("%s: the stand-in provider cannot move state", req.TargetTypeName)}, nil
}

func (s *server) UpgradeResourceIdentity(_ context.Context, req *tfprotov6.UpgradeResourceIdentityRequest) (*tfprotov6.UpgradeResourceIdentityResponse, error) {
	return &tfprotov6.UpgradeResourceIdentityResponse{Diagnostics: errDiag("%s: no resource identities", req.TypeName)}, nil
}

func (s *server) GenerateResourceConfig(_ context.Context, req *tfprotov6.GenerateResourceConfigRequest) (*tfprotov6.GenerateResourceConfigResponse, error) {
	return &tfprotov6.GenerateResourceConfigResponse{Diagnostics: errDiag("%s: the stand-in provider cannot generate configuration", req.TypeName)}, nil
}

func (s *server) ValidateDataResourceConfig(_ context.Context, req *tfprotov6.ValidateDataResourceConfigRequest) (*tfprotov6.ValidateDataResourceConfigResponse, error) {
	if s.dataSources[req.TypeName] == nil {
		return &tfprotov6.ValidateDataResourceConfigResponse{Diagnostics: errDiag("unknown data source %s", req.TypeName)}, nil
	}
	return &tfprotov6.ValidateDataResourceConfigResponse{}, nil
}

// ReadDataSource answers with the configuration and empty values for the
// computed attributes (tofu wants a data source's result wholly known);
// tests that need real-looking values use override_data.
func (s *server) ReadDataSource(_ context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	sc := s.dataSources[req.TypeName]
	if sc == nil {
		return &tfprotov6.ReadDataSourceResponse{Diagnostics: errDiag("unknown data source %s", req.TypeName)}, nil
	}
	typ := schemaType(sc)
	cfg, err := req.Config.Unmarshal(typ)
	if err != nil {
		return nil, err
	}
	state, err := fill(sc.Block, cfg, false)
	if err != nil {
		return &tfprotov6.ReadDataSourceResponse{Diagnostics: errDiag("read %s: %v", req.TypeName, err)}, nil
	}
	dv, err := tfprotov6.NewDynamicValue(typ, state)
	if err != nil {
		return nil, err
	}
	return &tfprotov6.ReadDataSourceResponse{State: &dv}, nil
}

func (s *server) CallFunction(_ context.Context, req *tfprotov6.CallFunctionRequest) (*tfprotov6.CallFunctionResponse, error) {
	return &tfprotov6.CallFunctionResponse{Error: &tfprotov6.FunctionError{Text: "the stand-in provider has no functions: " + req.Name}}, nil
}

func (s *server) GetFunctions(context.Context, *tfprotov6.GetFunctionsRequest) (*tfprotov6.GetFunctionsResponse, error) {
	return &tfprotov6.GetFunctionsResponse{Functions: map[string]*tfprotov6.Function{}}, nil
}

func (s *server) ValidateEphemeralResourceConfig(_ context.Context, req *tfprotov6.ValidateEphemeralResourceConfigRequest) (*tfprotov6.ValidateEphemeralResourceConfigResponse, error) {
	return &tfprotov6.ValidateEphemeralResourceConfigResponse{Diagnostics: errDiag("no ephemeral resource %s", req.TypeName)}, nil
}

func (s *server) OpenEphemeralResource(_ context.Context, req *tfprotov6.OpenEphemeralResourceRequest) (*tfprotov6.OpenEphemeralResourceResponse, error) {
	return &tfprotov6.OpenEphemeralResourceResponse{Diagnostics: errDiag("no ephemeral resource %s", req.TypeName)}, nil
}

func (s *server) RenewEphemeralResource(_ context.Context, req *tfprotov6.RenewEphemeralResourceRequest) (*tfprotov6.RenewEphemeralResourceResponse, error) {
	return &tfprotov6.RenewEphemeralResourceResponse{Diagnostics: errDiag("no ephemeral resource %s", req.TypeName)}, nil
}

func (s *server) CloseEphemeralResource(_ context.Context, req *tfprotov6.CloseEphemeralResourceRequest) (*tfprotov6.CloseEphemeralResourceResponse, error) {
	return &tfprotov6.CloseEphemeralResourceResponse{}, nil
}
