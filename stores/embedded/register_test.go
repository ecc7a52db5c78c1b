package embedded

import (
	"testing"

	"github.com/sluicehq/sluice/stores/registry"
)

func TestDirOf(t *testing.T) {
	cases := []struct{ url, dir string }{
		{"", "./sluice-data"},
		{"  ", "./sluice-data"},
		{"file:///var/lib/sluice", "/var/lib/sluice"},
		{"file://rel/dir", "rel/dir"},
		{"file://./rel", "./rel"},
		{"file://localhost/abs/dir", "/abs/dir"},
		{"file:///with%20space", "/with space"},
		{"file:///dir?mode=x#frag", "/dir"},
		{"FILE:///upper", "/upper"},
		{"embedded:///data", "/data"},
		{"embedded://data", "data"},
		{"/plain/path", "/plain/path"},
		{"./data", "./data"},
		{"./plain%20kept", "./plain%20kept"}, // a plain path is not a URL: nothing is unescaped
	}
	for _, c := range cases {
		dir, err := dirOf(registry.Split(c.url))
		if err != nil || dir != c.dir {
			t.Errorf("dirOf(%q) = %q, %v; want %q", c.url, dir, err, c.dir)
		}
	}
	for _, bad := range []string{"file://", "embedded://", "file://%zz", "file://?x"} {
		if dir, err := dirOf(registry.Split(bad)); err == nil {
			t.Errorf("dirOf(%q) = %q, no error", bad, dir)
		}
	}
}
