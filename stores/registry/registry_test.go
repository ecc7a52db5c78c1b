package registry

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/stores"
)

// fake registers a driver of kind that records the target it was asked
// to open and fails (no store is needed to test the routing).
func fake(kind string, schemeless bool, schemes ...string) (Driver, *Target) {
	var got Target
	return Driver{
		Kind: kind, Schemes: schemes, Schemeless: schemeless,
		Open: func(_ context.Context, t Target, o Options) (stores.Store, error) {
			if o.Logger == nil {
				return nil, errors.New("no logger")
			}
			got = t
			return nil, errors.New(kind + " opened")
		},
	}, &got
}

func TestSplit(t *testing.T) {
	cases := []struct {
		url  string
		want Target
	}{
		{"", Target{}},
		{"  ", Target{}},
		{"mem://", Target{URL: "mem://", Scheme: "mem"}},
		{" MEM://x ", Target{URL: "MEM://x", Scheme: "mem", Rest: "x"}},
		{"postgres://u:p@h/db", Target{URL: "postgres://u:p@h/db", Scheme: "postgres", Rest: "u:p@h/db"}},
		{"./data", Target{URL: "./data", Rest: "./data"}},
		{"/a/b", Target{URL: "/a/b", Rest: "/a/b"}},
		{"c:dir", Target{URL: "c:dir", Rest: "c:dir"}}, // no "://": a plain path
	}
	for _, c := range cases {
		if got := Split(c.url); got != c.want {
			t.Errorf("Split(%q) = %+v; want %+v", c.url, got, c.want)
		}
	}
}

func TestRouting(t *testing.T) {
	var r table
	disk, diskGot := fake("disk", true, "file", "Disk")
	net, netGot := fake("net", false, "net")
	r.register(disk)
	r.register(net)
	cases := []struct {
		url, kind string
		got       *Target
		want      Target
	}{
		{"file:///x", "disk", diskGot, Target{URL: "file:///x", Scheme: "file", Rest: "/x"}},
		{"DISK://y", "disk", diskGot, Target{URL: "DISK://y", Scheme: "disk", Rest: "y"}},
		{"", "disk", diskGot, Target{}},
		{"./here", "disk", diskGot, Target{URL: "./here", Rest: "./here"}},
		{"net://h:1", "net", netGot, Target{URL: "net://h:1", Scheme: "net", Rest: "h:1"}},
	}
	for _, c := range cases {
		_, err := r.open(context.Background(), c.url, nil)
		if err == nil || err.Error() != c.kind+" opened" {
			t.Errorf("open(%q): %v; want the %s driver", c.url, err, c.kind)
			continue
		}
		if *c.got != c.want {
			t.Errorf("open(%q): driver got %+v; want %+v", c.url, *c.got, c.want)
		}
	}
	if got, want := r.schemes(), []string{"", "disk", "file", "net"}; !slices.Equal(got, want) {
		t.Errorf("schemes = %q; want %q", got, want)
	}
}

func TestUnregisteredSchemes(t *testing.T) {
	var r table
	d, _ := fake("net", false, "net")
	r.register(d)
	cases := []struct {
		url      string
		want     []string
		dontWant []string
	}{
		// Unknown to every store of the module.
		{"redis://:pw@h", []string{"unsupported store", `unknown scheme "redis"`, "this binary opens net://"}, []string{"pw", "not linked"}},
		// Known, not linked: say which package would open it.
		{"postgres://u:secret@h/db", []string{`scheme "postgres"`, "stores/pgstore", "not linked in this binary", "this binary opens net://"}, []string{"secret"}},
		{"./data", []string{"without a scheme", "stores/embedded", "not linked in this binary"}, nil},
		{"", []string{"without a scheme", "stores/embedded", "not linked in this binary"}, nil},
	}
	for _, c := range cases {
		_, err := r.open(context.Background(), c.url, nil)
		if err == nil {
			t.Errorf("open(%q): no error", c.url)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("open(%q): %q lacks %q", c.url, err, w)
			}
		}
		for _, w := range c.dontWant {
			if strings.Contains(err.Error(), w) {
				t.Errorf("open(%q): %q shows %q", c.url, err, w)
			}
		}
	}
	var empty table
	if _, err := empty.open(context.Background(), "mem://", nil); err == nil || !strings.Contains(err.Error(), "no store is linked") {
		t.Errorf("empty registry: %v", err)
	}
}

func TestRegisterRefusesClashes(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	var r table
	a, _ := fake("a", true, "a")
	r.register(a)
	b, _ := fake("b", false, "b", "A")
	mustPanic("scheme taken", func() { r.register(b) })
	if _, _, err := r.lookup("b://"); err == nil {
		t.Error("a refused driver left some of its schemes registered")
	}
	c, _ := fake("c", true, "c")
	mustPanic("second schemeless driver", func() { r.register(c) })
	d, _ := fake("d", false, "d", "D")
	mustPanic("repeated scheme", func() { r.register(d) })
	e, _ := fake("e", false, "e://")
	mustPanic("scheme with ://", func() { r.register(e) })
	mustPanic("no Open", func() { r.register(Driver{Kind: "f", Schemes: []string{"f"}}) })
	mustPanic("nothing to open", func() { r.register(Driver{Kind: "g", Open: a.Open}) })
}

func TestRedact(t *testing.T) {
	if got := Redact("postgres://u:secret@h/db"); strings.Contains(got, "secret") || !strings.Contains(got, "u:") {
		t.Errorf("Redact = %q", got)
	}
	for _, same := range []string{"mem://", "", "./data", "postgres://h/db"} {
		if got := Redact(same); got != same {
			t.Errorf("Redact(%q) = %q", same, got)
		}
	}
}
