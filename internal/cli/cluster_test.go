package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTaintArgs(t *testing.T) {
	cases := map[string]struct {
		args      []string
		wantName  string
		wantSpecs []string
		wantErr   string
	}{
		"name and spec":             {args: []string{"member1", "a=b:NoSchedule"}, wantName: "member1", wantSpecs: []string{"a=b:NoSchedule"}},
		"karmadactl resource word":  {args: []string{"clusters", "member1", "a-"}, wantName: "member1", wantSpecs: []string{"a-"}},
		"singular resource word":    {args: []string{"cluster", "member1", "a:NoExecute", "b-"}, wantName: "member1", wantSpecs: []string{"a:NoExecute", "b-"}},
		"a cluster named clusters":  {args: []string{"clusters", "a:NoSchedule"}, wantName: "clusters", wantSpecs: []string{"a:NoSchedule"}},
		"clusters then a spec":      {args: []string{"clusters", "a:NoSchedule", "b-"}, wantName: "clusters", wantSpecs: []string{"a:NoSchedule", "b-"}},
		"resource word but no spec": {args: []string{"clusters", "member1"}, wantName: "clusters", wantSpecs: []string{"member1"}},
		"invalid name":              {args: []string{"Member_1", "a:NoSchedule"}, wantErr: "invalid cluster name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gotName, gotSpecs, err := taintArgs(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if gotName != tc.wantName {
				t.Errorf("name = %q, want %q", gotName, tc.wantName)
			}
			if diff := cmp.Diff(tc.wantSpecs, gotSpecs); diff != "" {
				t.Errorf("specs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClusterCommandFlagScheme checks the flag mistakes that are refused
// before any cluster is contacted.
func TestClusterCommandFlagScheme(t *testing.T) {
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"join without the member's kubeconfig": {
			args: []string{"join", "member4"}, wantErr: "join needs the member's kubeconfig",
		},
		"join with disagreeing aliases": {
			args: []string{"join", "member4", "--kubeconfig", "a", "--cluster-kubeconfig", "b"}, wantErr: "disagree",
		},
		"join with an invalid name": {
			args: []string{"join", "Member4", "--kubeconfig", "a"}, wantErr: "invalid cluster name",
		},
		"cordon with --kubeconfig": {
			args: []string{"cordon", "member1", "--kubeconfig", "cp.kubeconfig"}, wantErr: "use --control-plane-kubeconfig",
		},
		"taint with --context": {
			args: []string{"taint", "member1", "a:NoSchedule", "--context", "lifeboat"}, wantErr: "use --control-plane-context",
		},
		"unjoin with member flags but no --cleanup-member": {
			args: []string{"unjoin", "member1", "--kubeconfig", "m.kubeconfig"}, wantErr: "only used with --cleanup-member",
		},
		"taint with a bad effect": {
			args: []string{"taint", "member1", "a:PreferNoSchedule"}, wantErr: "PreferNoSchedule is not supported",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := NewRootCommand()
			if c, _, err := root.Find([]string{"join"}); err != nil || c == root {
				root.AddCommand(newClusterCommands()...) // until root.go registers them
			}
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(tc.args)
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
