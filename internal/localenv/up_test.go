package localenv

import (
	"strings"
	"testing"
)

// Options that cannot make an environment are refused before anything is
// built or started: 0 members is not the CLI's default 3, and agent flags
// without a Pull member would have no agent to go to.
func TestOptionsDefaultsRefuses(t *testing.T) {
	cases := map[string]struct {
		mutate  func(o *Options)
		wantErr string
	}{
		"three members":                {func(o *Options) {}, ""},
		"zero members":                 {func(o *Options) { o.Members = 0 }, "--members must be between 1 and 20, got 0"},
		"negative members":             {func(o *Options) { o.Members = -1 }, "--members must be between 1 and 20, got -1"},
		"too many members":             {func(o *Options) { o.Members = 21 }, "--members must be between 1 and 20, got 21"},
		"agent flags with a member":    {func(o *Options) { o.PullMembers, o.AgentArgs = []string{"member2"}, []string{"--v=2"} }, ""},
		"agent flags without a member": {func(o *Options) { o.AgentArgs = []string{"--v=2"} }, "--agent-arg needs --pull-member"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := Options{Dir: t.TempDir(), Members: 3, CacheDir: t.TempDir(), LifeboatBinary: "lifeboat"}
			tc.mutate(&o)
			err := o.defaults()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("defaults = %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("defaults = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
