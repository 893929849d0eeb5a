// Package version says which Lifeboat this is: the version and the VCS
// revision the binary was built from. The Makefile sets both with -ldflags
// -X (from git); a binary built otherwise falls back to what the Go
// toolchain recorded, and to "devel" without a version.
package version

import (
	"runtime/debug"
)

// Set by the linker: -X github.com/lifeboat-dev/lifeboat/internal/version.version=...
var (
	version  string
	revision string
)

// Info is a build's identity.
type Info struct {
	// Version is a release tag or `git describe` output; "devel" when
	// nothing recorded one.
	Version string `json:"version"`
	// Revision is the full commit, with "-dirty" when the tree had
	// changes; "" when unknown.
	Revision string `json:"revision,omitempty"`
}

// Get returns this binary's identity.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return get(version, revision, bi)
}

func get(linkedVersion, linkedRevision string, bi *debug.BuildInfo) Info {
	info := Info{Version: linkedVersion, Revision: linkedRevision}
	if bi != nil {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		if info.Revision == "" {
			info.Revision = buildRevision(bi)
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	return info
}

// buildRevision is the VCS revision the Go toolchain recorded, with
// "-dirty" when the tree had changes, or "".
func buildRevision(bi *debug.BuildInfo) string {
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
