package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/simulate"
)

func TestParseSimulatedTaints(t *testing.T) {
	cases := map[string]struct {
		values []string
		want   map[string][]string
		err    string
	}{
		"none": {values: nil, want: nil},
		"one":  {values: []string{"member2=maintenance:NoExecute"}, want: map[string][]string{"member2": {"maintenance:NoExecute"}}},
		"with a value": {
			values: []string{"member2=maintenance=soon:NoSchedule"},
			want:   map[string][]string{"member2": {"maintenance=soon:NoSchedule"}},
		},
		"several clusters and taints": {
			values: []string{"member2=a:NoExecute", "member3=b:NoSchedule", "member2=c=d:NoExecute"},
			want:   map[string][]string{"member2": {"a:NoExecute", "c=d:NoExecute"}, "member3": {"b:NoSchedule"}},
		},
		"a removal":              {values: []string{"member2=maintenance:NoExecute-"}, err: "a simulation adds taints"},
		"a removal of any key":   {values: []string{"member2=maintenance-"}, err: "a simulation adds taints"},
		"no cluster":             {values: []string{"maintenance:NoExecute"}, err: "want CLUSTER=KEY[=VALUE]:EFFECT"},
		"an empty cluster":       {values: []string{"=maintenance:NoExecute"}, err: "want CLUSTER=KEY[=VALUE]:EFFECT"},
		"no taint":               {values: []string{"member2="}, err: "want CLUSTER=KEY[=VALUE]:EFFECT"},
		"no effect":              {values: []string{"member2=maintenance"}, err: "missing effect"},
		"a bad effect":           {values: []string{"member2=maintenance:PreferNoSchedule"}, err: `--taint "member2=maintenance:PreferNoSchedule"`},
		"a bad value":            {values: []string{"member2=maintenance=not a value:NoExecute"}, err: "invalid value"},
		"one bad among the good": {values: []string{"member2=a:NoExecute", "member3=b:Never"}, err: `--taint "member3=b:Never"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseSimulatedTaints(tc.values)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
		})
	}
}

// sampleReport is a report with one binding of each kind of outcome.
func sampleReport() *simulate.Report {
	tc := func(kv ...any) []workv1alpha2.TargetCluster {
		var out []workv1alpha2.TargetCluster
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, workv1alpha2.TargetCluster{Name: kv[i].(string), Replicas: int32(kv[i+1].(int))})
		}
		return out
	}
	free := resource.MustParse("2")
	return &simulate.Report{
		Failed:         []string{"member2"},
		SettingsSource: "the defaults",
		Outcomes: []simulate.Outcome{
			{
				Kind: simulate.KindResourceBinding, Namespace: "default", Name: "nginx-deployment", Resource: "apps/v1 Deployment default/nginx",
				Before: tc("member1", 2, "member2", 2), After: tc("member1", 2, "member3", 2), Result: simulate.ResultEvicted,
				Evictions: []simulate.Eviction{{Cluster: "member2", Toleration: "untolerated", At: &simulate.Seconds{Min: 45, Max: 55},
					PurgeMode: policyv1alpha1.PurgeModeGracefully, State: map[string]string{"b": "2", "a": "1"}}},
				Steps: []string{"member2: the taint cluster.karmada.io/not-ready:NoExecute is not tolerated", "scheduler: {member1:2, member3:2}"},
			},
			{
				Kind: simulate.KindClusterResourceBinding, Name: "ns-config", Resource: "v1 Namespace config",
				Before: tc("member2", 0), After: nil, Result: simulate.ResultStays, Reason: "no other cluster fits: 0/3 clusters are available",
				Evictions: []simulate.Eviction{{Cluster: "member2", Toleration: "untolerated", At: &simulate.Seconds{Min: 45, Max: 55}, PurgeMode: policyv1alpha1.PurgeModeGracefully}},
			},
			{
				Kind: simulate.KindResourceBinding, Namespace: "default", Name: "db-statefulset", Resource: "apps/v1 StatefulSet default/db",
				Before: tc("member2", 1), After: tc("member2", 1), Result: simulate.ResultTolerated,
				Evictions: []simulate.Eviction{{Cluster: "member2", Toleration: "tolerated forever"}},
			},
		},
		Totals: simulate.Totals{
			Bindings: 3, Evicted: 1, Stays: 1, Tolerated: 1,
			Clusters:   []simulate.ClusterLoad{{Cluster: "member3", Replicas: 2, CPU: resource.MustParse("3"), Memory: resource.MustParse("1Gi"), FreeCPU: &free, Fits: false}},
			Guard:      []simulate.GroupVerdict{{State: "Normal", Rate: 50, Evictions: 2, Span: simulate.Seconds{}}},
			AllEvicted: &simulate.Seconds{Min: 45, Max: 55},
			AllHealthy: &simulate.Seconds{Min: 55, Max: 65},
			Warnings:   []string{"member3: the new copies request 3 CPU, 2 is free"},
		},
	}
}

func TestPrintSimulation(t *testing.T) {
	var out bytes.Buffer
	if err := printSimulation(&out, sampleReport()); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"Scenario: member2 fails.",
		"Settings: the defaults.",
		"default/nginx-deployment",
		"45–55s",
		"a=1,b=2",
		"{member1:2,member2:2}",
		"{member1:2,member3:2}",
		"crb/ns-config",
		"crb/ns-config: no other cluster fits",
		"tolerated forever",
		"Totals: 3 binding(s): 1 evicted, 1 stay, 1 tolerated, 0 held by the storm guard, 0 not evicted.",
		"member3",
		"NO",
		"Storm guard, clusters without a region: Normal, 50 evictions/s; 2 eviction(s) over 0s.",
		"All evicted 45–55s after the failure; all Healthy elsewhere 55–65s after it",
		"Warning: member3: the new copies request 3 CPU, 2 is free",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output does not hold %q:\n%s", want, got)
		}
	}
}

func TestPrintSimulationNothingTouched(t *testing.T) {
	var out bytes.Buffer
	r := &simulate.Report{Failed: []string{"member2"}, SettingsSource: "the defaults"}
	if err := printSimulation(&out, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "nothing moves") {
		t.Errorf("output = %q, want it to say nothing moves", out.String())
	}
}

// TestPrintSimulationScenarioOrder checks that several tainted clusters
// are listed in the same order on every run.
func TestPrintSimulationScenarioOrder(t *testing.T) {
	r := &simulate.Report{
		Failed:  []string{"member1"},
		Tainted: map[string][]string{"member4": {"d:NoExecute"}, "member2": {"b:NoExecute"}, "member3": {"c:NoExecute"}, "member5": {"e:NoExecute"}},
	}
	const want = "Scenario: member1 fails; member2 gets b:NoExecute; member3 gets c:NoExecute; member4 gets d:NoExecute; member5 gets e:NoExecute.\n"
	for i := 0; i < 20; i++ {
		var out bytes.Buffer
		if err := printSimulation(&out, r); err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(out.String(), "\n"); first+"\n" != want {
			t.Fatalf("scenario line = %q, want %q", first, want)
		}
	}
}

func TestPrintExplain(t *testing.T) {
	cases := map[string]struct {
		report *simulate.Report
		key    string
		want   []string
		err    string
	}{
		"a ResourceBinding": {
			report: sampleReport(), key: "default/nginx-deployment",
			want: []string{
				"default/nginx-deployment (apps/v1 Deployment default/nginx): Evicted",
				"  1. member2: the taint cluster.karmada.io/not-ready:NoExecute is not tolerated",
				"  2. scheduler: {member1:2, member3:2}",
				"  Placement: {member1:2,member2:2} -> {member1:2,member3:2}",
			},
		},
		"a ClusterResourceBinding, with its reason": {
			report: sampleReport(), key: "ns-config",
			want: []string{"crb/ns-config (v1 Namespace config): Stays", "  Reason: no other cluster fits", "  Placement: {member2:0} -> {}"},
		},
		"not touched": {
			report: sampleReport(), key: "default/other",
			err: "--explain default/other: not among the bindings the scenario touches: default/nginx-deployment, ns-config, default/db-statefulset",
		},
		"nothing touched": {
			report: &simulate.Report{}, key: "default/nginx-deployment",
			err: "the scenario touches no binding",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			err := printExplain(&out, tc.report, tc.key)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output does not hold %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// --explain prints text, so with -o json or yaml it is refused, before the
// control plane is contacted, rather than printing text a script would
// fail to parse.
func TestSimulateRefusesExplainWithStructuredOutput(t *testing.T) {
	for _, output := range []string{"json", "yaml"} {
		t.Run(output, func(t *testing.T) {
			o := &simulateOptions{failClusters: []string{"member2"}, explain: "default/nginx", output: output}
			o.controlPlane.kubeconfig = "/nonexistent/kubeconfig"
			err := o.run(context.Background(), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "--explain prints text and does not go with -o "+output) {
				t.Errorf("run = %v, want --explain refused with -o %s", err, output)
			}
		})
	}
}

// An empty --fail-cluster is refused as such, before the control plane is
// contacted, rather than answered "nothing to simulate" or ignored next to
// other names.
func TestSimulateRefusesEmptyFailCluster(t *testing.T) {
	for name, args := range map[string][]string{
		"empty":              {"--fail-cluster", ""},
		"empty with =":       {"--fail-cluster="},
		"a trailing comma":   {"--fail-cluster", "member1,"},
		"an empty among two": {"--fail-cluster", "member1", "--fail-cluster", ""},
		"only commas":        {"--fail-cluster", ","},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := execute(newSimulateCommand(), append(args, "--kubeconfig", "/nonexistent/kubeconfig")...)
			if err == nil || err.Error() != "--fail-cluster: empty cluster name" {
				t.Errorf("simulate %q = %v, want --fail-cluster: empty cluster name", args, err)
			}
		})
	}
	// Without the flag it is still "nothing to simulate".
	_, err := execute(newSimulateCommand(), "--kubeconfig", "/nonexistent/kubeconfig")
	if err == nil || !strings.Contains(err.Error(), "nothing to simulate") {
		t.Errorf("simulate without a scenario = %v, want nothing to simulate", err)
	}
}

// A scenario flag given an empty value is refused as such, before the
// control plane is contacted: not answered "nothing to simulate" when the
// rest of its scenario is there, nor left out next to another scenario.
func TestSimulateRefusesEmptyFlags(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"--unhealthy with --cluster":       {args: []string{"--unhealthy", "", "--cluster", "a"}, want: "--unhealthy is empty"},
		"--unhealthy= with --cluster":      {args: []string{"--unhealthy=", "--cluster", "a"}, want: "--unhealthy is empty"},
		"--unhealthy next to a failure":    {args: []string{"--fail-cluster", "member1", "--unhealthy", ""}, want: "--unhealthy is empty"},
		"--cluster with --unhealthy":       {args: []string{"--unhealthy", "deploy/nginx", "--cluster", ""}, want: "--cluster is empty"},
		"--policy alone":                   {args: []string{"--policy", ""}, want: "--policy is empty"},
		"--policy next to a failure":       {args: []string{"--fail-cluster", "member1", "--policy", ""}, want: "--policy is empty"},
		"--explain with a failure":         {args: []string{"--fail-cluster", "member1", "--explain", ""}, want: "--explain is empty"},
		"a named --cluster is not refused": {args: []string{"--unhealthy", "deploy/nginx", "--cluster", "a"}, want: "/nonexistent/kubeconfig"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := execute(newSimulateCommand(), append(tc.args, "--kubeconfig", "/nonexistent/kubeconfig")...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("simulate %q = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}
