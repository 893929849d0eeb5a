package version

import (
	"runtime/debug"
	"testing"
)

func TestGet(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}}
	}
	cases := map[string]struct {
		version, revision string
		bi                *debug.BuildInfo
		want              Info
	}{
		"set by the linker wins":        {version: "v0.3.0", revision: "abc", bi: vcs("def", "false"), want: Info{Version: "v0.3.0", Revision: "abc"}},
		"toolchain's revision":          {bi: vcs("def", "false"), want: Info{Version: "devel", Revision: "def"}},
		"toolchain's revision, dirty":   {bi: vcs("def", "true"), want: Info{Version: "devel", Revision: "def-dirty"}},
		"a module version (go install)": {bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}}, want: Info{Version: "v0.2.0"}},
		"nothing recorded":              {bi: &debug.BuildInfo{}, want: Info{Version: "devel"}},
		"no build info":                 {want: Info{Version: "devel"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := get(tc.version, tc.revision, tc.bi); got != tc.want {
				t.Errorf("get = %+v, want %+v", got, tc.want)
			}
		})
	}
}
