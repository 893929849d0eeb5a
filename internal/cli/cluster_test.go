package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/lifeboat-dev/lifeboat/internal/cluster"
)

func TestTaintArgs(t *testing.T) {
	cases := map[string]struct {
		args      []string
		wantType  string
		wantName  string
		wantSpecs []string
		wantErr   string
	}{
		"name and spec":                 {args: []string{"member1", "a=b:NoSchedule"}, wantName: "member1", wantSpecs: []string{"a=b:NoSchedule"}},
		"karmadactl resource word":      {args: []string{"clusters", "member1", "a-"}, wantType: "clusters", wantName: "member1", wantSpecs: []string{"a-"}},
		"any type word, resolved later": {args: []string{"clusters.cluster.karmada.io", "member1", "a:NoExecute", "b-"}, wantType: "clusters.cluster.karmada.io", wantName: "member1", wantSpecs: []string{"a:NoExecute", "b-"}},
		"TYPE/NAME":                     {args: []string{"cluster/member1", "a:NoSchedule"}, wantType: "cluster", wantName: "member1", wantSpecs: []string{"a:NoSchedule"}},
		"a cluster named clusters":      {args: []string{"clusters", "a:NoSchedule"}, wantName: "clusters", wantSpecs: []string{"a:NoSchedule"}},
		"clusters then a spec":          {args: []string{"clusters", "a:NoSchedule", "b-"}, wantName: "clusters", wantSpecs: []string{"a:NoSchedule", "b-"}},
		"resource word but no spec":     {args: []string{"clusters", "member1"}, wantName: "clusters", wantSpecs: []string{"member1"}},
		"type and TYPE/NAME":            {args: []string{"clusters", "cluster/member1", "a-"}, wantErr: "no separate type argument"},
		"empty type":                    {args: []string{"/member1", "a-"}, wantErr: "want NAME or TYPE/NAME"},
		"invalid name":                  {args: []string{"Member_1", "a:NoSchedule"}, wantErr: "invalid cluster name"},
		"invalid name after a type":     {args: []string{"clusters", "Member_1", "a:NoSchedule"}, wantErr: "invalid cluster name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gotType, gotName, gotSpecs, err := taintArgs(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if gotType != tc.wantType || gotName != tc.wantName {
				t.Errorf("type, name = %q, %q; want %q, %q", gotType, gotName, tc.wantType, tc.wantName)
			}
			if diff := cmp.Diff(tc.wantSpecs, gotSpecs); diff != "" {
				t.Errorf("specs (-want +got):\n%s", diff)
			}
		})
	}
}

// The cluster commands take a type before the name only when it names
// Lifeboat's Cluster, resolved as kubectl resolves types.
func TestCheckClusterType(t *testing.T) {
	cases := map[string]string{ // type -> wanted error, "" for none
		"":                                    "",
		"cluster":                             "",
		"clusters":                            "",
		"Cluster":                             "",
		"clusters.cluster.karmada.io":         "",
		"cluster.v1alpha1.cluster.karmada.io": "",
		"deployments":                         `resource type "deployments" is Deployment.apps; this command works on member clusters (Cluster.cluster.karmada.io)`,
		"clustr":                              `the server doesn't have a resource type "clustr"`,
	}
	for typeArg, wantErr := range cases {
		t.Run(typeArg, func(t *testing.T) {
			err := checkClusterType(&controlPlane{discovery: testDiscovery(servedResources())}, typeArg, nil)
			if wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || err.Error() != wantErr {
				t.Fatalf("error = %v, want %q", err, wantErr)
			}
		})
	}
}

func TestClusterArg(t *testing.T) {
	for arg, want := range map[string][3]string{ // type, name, error
		"member1":                             {"", "member1", ""},
		"cluster/member1":                     {"cluster", "member1", ""},
		"clusters.cluster.karmada.io/member1": {"clusters.cluster.karmada.io", "member1", ""},
		"/member1":                            {"", "", "want NAME or TYPE/NAME"},
		"cluster/":                            {"", "", "cluster name is empty"},
		"cluster/a/b":                         {"", "", "invalid cluster name"},
	} {
		typeArg, name, err := clusterArg(arg)
		if want[2] != "" {
			if err == nil || !strings.Contains(err.Error(), want[2]) {
				t.Errorf("%s: error = %v, want %q", arg, err, want[2])
			}
			continue
		}
		if err != nil || typeArg != want[0] || name != want[1] {
			t.Errorf("%s: got %q %q %v, want %q %q", arg, typeArg, name, err, want[0], want[1])
		}
	}
}

// writeKubeconfig writes a kubeconfig with one context, ctxName, for a
// server nobody listens on: loading it works, contacting it does not.
func writeKubeconfig(t *testing.T, ctxName string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), ctxName+".kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: ` + ctxName + `
  context: {cluster: c, user: u}
current-context: ` + ctxName + "\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestClusterCommandFlags checks, before any cluster is contacted, which
// cluster each flag of the cluster commands names and the mistakes refused.
func TestClusterCommandFlags(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
	member := writeKubeconfig(t, "member4")
	cases := map[string]struct {
		args        []string
		wantErr     string
		wantWarning string
	}{
		"join without the member's kubeconfig": {
			args: []string{"join", "member4"}, wantErr: "join needs the member's kubeconfig: --cluster-kubeconfig",
		},
		"join: --kubeconfig names the control plane when the member is --cluster-kubeconfig": {
			args:    []string{"join", "member4", "--cluster-kubeconfig", member, "--kubeconfig", "/absent/cp.kubeconfig"},
			wantErr: "control plane: loading kubeconfig /absent/cp.kubeconfig",
		},
		"join: --cluster-kubeconfig names the member": {
			args:    []string{"join", "member4", "--cluster-kubeconfig", "/absent/m.kubeconfig", "--kubeconfig", member},
			wantErr: "member: loading kubeconfig /absent/m.kubeconfig",
		},
		"join, older spelling: --kubeconfig read as the member's, with a warning": {
			args:        []string{"join", "member4", "--kubeconfig", "/absent/m.kubeconfig", "--control-plane-kubeconfig", member},
			wantErr:     "member: loading kubeconfig /absent/m.kubeconfig",
			wantWarning: "Warning: without --cluster-kubeconfig/--cluster-context, join reads --kubeconfig/--context as the member's (/absent/m.kubeconfig)",
		},
		"join, older spelling: the control plane is --control-plane-kubeconfig": {
			args:        []string{"join", "member4", "--kubeconfig", member, "--control-plane-kubeconfig", "/absent/cp.kubeconfig"},
			wantErr:     "control plane: loading kubeconfig /absent/cp.kubeconfig",
			wantWarning: "join reads --kubeconfig/--context as the member's",
		},
		"join with disagreeing names of the control plane": {
			args: []string{"join", "member4", "--cluster-kubeconfig", member, "--kubeconfig", "a", "--control-plane-kubeconfig", "b"}, wantErr: "disagree",
		},
		"join with a kind kubectl would not name": {
			args: []string{"join", "member4", "--cluster-kubeconfig", member, "--propagate-resource", "Deployment"}, wantErr: "--propagate-resource: resource \"Deployment\": resources are lower-case plurals",
		},
		"join with a group left out after the dot": {
			args: []string{"join", "member4", "--cluster-kubeconfig", member, "--propagate-resource", "deployments."}, wantErr: "--propagate-resource: resource \"deployments.\": no group after the dot",
		},
		"join with an invalid name": {
			args: []string{"join", "Member4", "--cluster-kubeconfig", "a"}, wantErr: "invalid cluster name",
		},
		"unjoin with member flags but no --cleanup-member": {
			args: []string{"unjoin", "member1", "--cluster-kubeconfig", "m.kubeconfig"}, wantErr: "only used with --cleanup-member",
		},
		"unjoin --cleanup-member with only --kubeconfig: refused before anything": {
			args: []string{"unjoin", "member1", "--cleanup-member", "--kubeconfig", member}, wantErr: "--cleanup-member needs the member's kubeconfig: --cluster-kubeconfig",
		},
		"unjoin: --kubeconfig names the control plane": {
			args: []string{"unjoin", "member1", "--kubeconfig", "/absent/cp.kubeconfig"}, wantErr: "control plane: loading kubeconfig /absent/cp.kubeconfig",
		},
		"cordon: --context names the control plane": {
			args: []string{"cordon", "member1", "--kubeconfig", member, "--context", "lifeboat"}, wantErr: `control plane: loading kubeconfig ` + member + ` (context lifeboat)`,
		},
		"cordon: --control-plane-context is the same flag": {
			args: []string{"cordon", "member1", "--control-plane-kubeconfig", member, "--control-plane-context", "lifeboat"}, wantErr: `control plane: loading kubeconfig ` + member + ` (context lifeboat)`,
		},
		"cordon with a member flag": {
			args: []string{"cordon", "member1", "--cluster-kubeconfig", "m.kubeconfig"}, wantErr: "names a member in join and unjoin --cleanup-member only",
		},
		"taint with disagreeing names of the context": {
			args: []string{"taint", "member1", "a:NoSchedule", "--context", "lifeboat", "--control-plane-context", "other"}, wantErr: "--context and --control-plane-context name the same cluster but disagree",
		},
		"taint with a bad effect": {
			args: []string{"taint", "member1", "a:PreferNoSchedule"}, wantErr: "PreferNoSchedule is not supported",
		},
		"history: --kubeconfig names the control plane": {
			args: []string{"history", "deploy/nginx", "--kubeconfig", "/absent/cp.kubeconfig"}, wantErr: "control plane: loading kubeconfig /absent/cp.kubeconfig",
		},
		"history with disagreeing names of the kubeconfig": {
			args: []string{"history", "deploy/nginx", "--kubeconfig", "a", "--control-plane-kubeconfig", "b"}, wantErr: "disagree",
		},
		"join with a negative --token-timeout: refused before any kubeconfig is read": {
			args: []string{"join", "member4", "--cluster-kubeconfig", member, "--token-timeout", "-1s"}, wantErr: "--token-timeout -1s must not be negative",
		},
		"unjoin with a negative --timeout: refused before the control plane": {
			args: []string{"unjoin", "member1", "--timeout", "-1s"}, wantErr: "--timeout -1s must not be negative",
		},
		"unjoin --wait=false with a negative --timeout": {
			args: []string{"unjoin", "member1", "--wait=false", "--timeout", "-5m"}, wantErr: "--timeout -5m0s must not be negative",
		},
		"init with a negative --timeout: refused, not run without a limit": {
			args: []string{"init", "--timeout", "-1s"}, wantErr: "--timeout -1s must not be negative",
		},
		"init with a negative --timeout and --wait-for-api-server": {
			args: []string{"init", "--wait-for-api-server", "--timeout=-1ns"}, wantErr: "--timeout -1ns must not be negative",
		},
		"controller-manager with disagreeing names of the kubeconfig": {
			args: []string{"controller-manager", "--kubeconfig", "a", "--control-plane-kubeconfig", "b"}, wantErr: "disagree",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := NewRootCommand()
			var out, errOut bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&errOut)
			root.SetArgs(tc.args)
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			if tc.wantWarning != "" && !strings.Contains(errOut.String(), tc.wantWarning) {
				t.Errorf("stderr lacks the warning %q:\n%s", tc.wantWarning, errOut.String())
			}
			if tc.wantWarning == "" && strings.Contains(errOut.String(), "Warning") {
				t.Errorf("unexpected warning:\n%s", errOut.String())
			}
		})
	}
}

func TestJoinKubeconfigs(t *testing.T) {
	cases := map[string]struct {
		cp         controlPlaneFlags
		member     memberFlags
		wantMember kubeconfigRef
		wantCP     kubeconfigRef
		wantOlder  bool
		wantErr    string
	}{
		"member flags; --kubeconfig is the control plane": {
			cp: controlPlaneFlags{kubeconfig: "cp", context: "lifeboat"}, member: memberFlags{kubeconfig: "m"},
			wantMember: kubeconfigRef{path: "m"}, wantCP: kubeconfigRef{path: "cp", context: "lifeboat"},
		},
		"member flags; the control plane by its other names": {
			cp: controlPlaneFlags{cpKubeconfig: "cp", cpContext: "lifeboat"}, member: memberFlags{context: "member4"},
			wantMember: kubeconfigRef{context: "member4"}, wantCP: kubeconfigRef{path: "cp", context: "lifeboat"},
		},
		"member flags; both names of the control plane agree": {
			cp: controlPlaneFlags{kubeconfig: "cp", cpKubeconfig: "cp"}, member: memberFlags{kubeconfig: "m"},
			wantMember: kubeconfigRef{path: "m"}, wantCP: kubeconfigRef{path: "cp"},
		},
		"member flags; the names of the control plane disagree": {
			cp: controlPlaneFlags{kubeconfig: "a", cpKubeconfig: "b"}, member: memberFlags{kubeconfig: "m"}, wantErr: "disagree",
		},
		"older spelling: --kubeconfig/--context are the member": {
			cp:         controlPlaneFlags{kubeconfig: "m", context: "member4", cpKubeconfig: "cp", cpContext: "lifeboat"},
			wantMember: kubeconfigRef{path: "m", context: "member4"}, wantCP: kubeconfigRef{path: "cp", context: "lifeboat"}, wantOlder: true,
		},
		"older spelling, control plane from $KUBECONFIG": {
			cp: controlPlaneFlags{kubeconfig: "m"}, wantMember: kubeconfigRef{path: "m"}, wantOlder: true,
		},
		"no member": {
			cp: controlPlaneFlags{cpKubeconfig: "cp"}, wantCP: kubeconfigRef{path: "cp"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m, cp, older, err := joinKubeconfigs(tc.cp, tc.member)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m != tc.wantMember || cp != tc.wantCP || older != tc.wantOlder {
				t.Errorf("member %+v, control plane %+v, older %v; want %+v, %+v, %v", m, cp, older, tc.wantMember, tc.wantCP, tc.wantOlder)
			}
		})
	}
}

// --print-member-role prints what join would grant, contacting nothing.
func TestJoinPrintsTheMemberRole(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
	var out, errOut bytes.Buffer
	cmd := NewRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"join", "member4", "--print-member-role", "--propagate-resource", "*.flink.apache.org"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(out.Bytes(), &role); err != nil {
		t.Fatalf("not a ClusterRole: %v\n%s", err, out.String())
	}
	want := cluster.MemberRules(append(cluster.DefaultMemberResources(), cluster.MemberResource{Group: "flink.apache.org", Resource: "*"}))
	if role.Kind != "ClusterRole" || role.Name != "lifeboat-member4" || !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("printed %s", out.String())
	}
}
