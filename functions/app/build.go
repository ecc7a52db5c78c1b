package app

import (
	"runtime"
	"runtime/debug"
)

// Build says which build of sluice runs.
type Build struct {
	// Version is the module version ("v1.2.3"), or "(devel)" for a build
	// from a checkout.
	Version string
	// Revision is the commit the binary was built from (vcs.revision, set
	// when built with VCS stamping in a git checkout), with "+dirty" when
	// the work tree had changes; "" when unknown.
	Revision  string
	GoVersion string
}

// ReadBuild reads the build info Go stamps into every binary; version, when
// set (by -ldflags at release time), wins over the module version.
func ReadBuild(version string) Build {
	bi, ok := debug.ReadBuildInfo()
	return buildFrom(version, bi, ok)
}

func buildFrom(version string, bi *debug.BuildInfo, ok bool) Build {
	b := Build{Version: version, GoVersion: runtime.Version()}
	if !ok {
		if b.Version == "" {
			b.Version = "(devel)"
		}
		return b
	}
	if b.Version == "" {
		b.Version = bi.Main.Version
	}
	if b.Version == "" {
		b.Version = "(devel)"
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if b.Revision != "" && dirty {
		b.Revision += "+dirty"
	}
	return b
}

// String reads "v1.2.3 (commit abc123…, go1.26.8)".
func (b Build) String() string {
	s := b.Version + " ("
	if b.Revision != "" {
		s += "commit " + b.Revision + ", "
	}
	return s + b.GoVersion + ")"
}
