package localenv

import (
	"math"
	"strings"
	"testing"
)

// Options that cannot make an environment are refused before anything is
// built or started: 0 members is not the CLI's default 3, agent flags
// without a Pull member would have no agent to go to, a negative GC target
// would turn the servers' collector off, and one past 32 bits would
// silently be Go's 100.
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
		"servers' GC target":           {func(o *Options) { o.ServerGCPercent = 200 }, ""},
		"negative GC target":           {func(o *Options) { o.ServerGCPercent = -1 }, "--server-gc-percent must be between 0 (Go's default) and 2147483647, got -1"},
		"GC target past int32":         {func(o *Options) { o.ServerGCPercent = math.MaxInt32 + 1 }, "--server-gc-percent must be between 0 (Go's default) and 2147483647, got 2147483648"},
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

// The servers' environment sets GOGC only when a target is given, so that
// 0 leaves Go's default (or the caller's GOGC) in force.
func TestServerEnv(t *testing.T) {
	for gc, want := range map[int]string{0: "", 200: "GOGC=200"} {
		if got := strings.Join(serverEnv(gc), " "); got != want {
			t.Errorf("serverEnv(%d) = %q, want %q", gc, got, want)
		}
	}
}
