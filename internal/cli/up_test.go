package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

func TestUpHelpNamesKyverno(t *testing.T) {
	cmd := newUpCommand()
	f := cmd.Flags().Lookup("with-kyverno")
	if f == nil || f.DefValue != "false" {
		t.Fatalf("up has no --with-kyverno flag defaulting to false: %+v", f)
	}
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--with-kyverno", "examples/flink/kyverno-clusterpolicy.yaml", "memberN-kyverno"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("up --help lacks %q:\n%s", want, out.String())
		}
	}
}

// up, finding the environment running, says which of the options it was
// given that environment does not have, rather than ignoring them.
func TestAlreadyUpWarnings(t *testing.T) {
	s := &localenv.State{Dir: "/tmp/env", Clusters: []localenv.ClusterInfo{
		{Name: localenv.ControlPlaneName},
		{Name: "member1", Member: true},
		{Name: "member2", Member: true, Pull: true},
	}, Components: []localenv.Component{{Name: "etcd", Env: []string{"GOGC=200"}}}}
	cases := map[string]struct {
		opts                    localenv.Options
		membersGiven, pullGiven bool
		gcGiven                 bool
		want                    []string // a part of each warning, in order
	}{
		"the defaults, not given":      {opts: localenv.Options{Members: 3}},
		"the same members":             {opts: localenv.Options{Members: 2}, membersGiven: true},
		"other members":                {opts: localenv.Options{Members: 5}, membersGiven: true, want: []string{"It runs 2 members, not --members 5"}},
		"the same pull member":         {opts: localenv.Options{Members: 3, PullMembers: []string{"member2"}}, pullGiven: true},
		"another pull member":          {opts: localenv.Options{Members: 3, PullMembers: []string{"member1"}}, pullGiven: true, want: []string{"It runs the Pull members member2, not --pull-member member1"}},
		"the same GC target":           {opts: localenv.Options{Members: 3, ServerGCPercent: 200}, gcGiven: true},
		"another GC target, not given": {opts: localenv.Options{Members: 3, ServerGCPercent: 100}},
		"another GC target":            {opts: localenv.Options{Members: 3, ServerGCPercent: 0}, gcGiven: true, want: []string{"with --server-gc-percent 200, not 0"}},
		"kyverno, members and pull":    {opts: localenv.Options{Members: 4, WithKyverno: true, PullMembers: []string{"member1", "member2"}}, membersGiven: true, pullGiven: true, want: []string{"without Kyverno", "not --members 4", "not --pull-member member1, member2"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			given := func(flag string) bool {
				return flag == "members" && tc.membersGiven || flag == "pull-member" && tc.pullGiven || flag == "server-gc-percent" && tc.gcGiven
			}
			got := alreadyUpWarnings(s, tc.opts, given)
			if len(got) != len(tc.want) {
				t.Fatalf("warnings = %q, want %d saying %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) || !strings.Contains(got[i], "lifeboat down --state-dir /tmp/env") {
					t.Errorf("warning %d = %q, want it to say %q and how to start again", i, got[i], w)
				}
			}
		})
	}
	noPull := &localenv.State{Dir: "/tmp/env", Clusters: []localenv.ClusterInfo{{Name: "member1", Member: true}}}
	pullGiven := func(flag string) bool { return flag == "pull-member" }
	if got := alreadyUpWarnings(noPull, localenv.Options{Members: 1, PullMembers: []string{"member1"}}, pullGiven); len(got) != 1 || !strings.Contains(got[0], "It runs no Pull member") {
		t.Errorf("warnings = %q, want one saying it runs no Pull member", got)
	}
}
