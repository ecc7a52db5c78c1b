package app

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildFrom(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}}}
	b := buildFrom("", bi, true)
	if b.Version != "v1.4.0" || b.Revision != "0123abcd+dirty" || !strings.HasPrefix(b.String(), "v1.4.0 (commit 0123abcd+dirty, go") {
		t.Errorf("%+v %q", b, b)
	}
	if b := buildFrom("v2.0.0", bi, true); b.Version != "v2.0.0" {
		t.Errorf("-ldflags version lost: %+v", b)
	}
	// go test and a build outside a checkout: no revision.
	b = buildFrom("", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true)
	if b.Revision != "" || !strings.HasPrefix(b.String(), "(devel) (go") {
		t.Errorf("%+v %q", b, b)
	}
	if b := buildFrom("", nil, false); b.Version != "(devel)" {
		t.Errorf("%+v", b)
	}
}
