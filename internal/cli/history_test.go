package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

var histT0 = time.Date(2023, 5, 8, 9, 29, 2, 0, time.UTC)

func histTime(s int) metav1.Time { return metav1.NewTime(histT0.Add(time.Duration(s) * time.Second)) }

func sampleBinding() *workv1alpha2.ResourceBinding {
	b := &workv1alpha2.ResourceBinding{}
	b.Name, b.Namespace = "nginx-deployment", "default"
	b.Spec.Resource = workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "nginx"}
	b.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}
	b.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{
		FromCluster: "member2", PurgeMode: policyv1alpha1.PurgeModeNever, Reason: workv1alpha2.EvictionReasonApplicationFailure,
		Producer: workv1alpha2.EvictionProducerRBApplicationFailover, SuppressDeletion: ptr.To(true), CreationTimestamp: ptr.To(histTime(600)),
	}}
	b.Status.FailoverHistory = []workv1alpha2.FailoverHistoryItem{
		{Time: histTime(0), Reason: workv1alpha2.EvictionReasonApplicationFailure, FromCluster: "member3", PurgeMode: policyv1alpha1.PurgeModeImmediately,
			ClustersBefore: []string{"member3"}, ClustersAfter: []string{"member2"}, PreservedLabelState: map[string]string{"jobid": "abc"},
			Message: "state not preserved for rule x: JSONPath \"{.a}\": a not found", ReplacementHealthyTime: ptr.To(histTime(45))},
		{Time: histTime(600), Reason: workv1alpha2.EvictionReasonApplicationFailure, FromCluster: "member2", PurgeMode: policyv1alpha1.PurgeModeNever,
			ClustersBefore: []string{"member2"}},
	}
	b.Status.UnhealthyClusters = []workv1alpha2.UnhealthyCluster{{ClusterName: "member1", UnhealthySince: histTime(900)}}
	return b
}

func TestPrintHistory(t *testing.T) {
	b := sampleBinding()
	var out bytes.Buffer
	err := printHistory(&out, &boundTemplate{kind: "ResourceBinding", namespace: "default", name: b.Name, spec: &b.Spec, status: &b.Status}, histT0.Add(1000*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := `Deployment default/nginx (ResourceBinding default/nginx-deployment), placed on: member1

TIME                  REASON              FROM     TO         PURGE     STATE      REPLACEMENT HEALTHY AFTER
2023-05-08T09:29:02Z  ApplicationFailure  member3  member2    Directly  jobid=abc  45s
2023-05-08T09:39:02Z  ApplicationFailure  member2  <pending>  Never     -          -

Notes:
  2023-05-08T09:29:02Z from member3: state not preserved for rule x: JSONPath "{.a}": a not found

Evictions in progress:
FROM     PURGE  AGE    OLD COPY                           PRODUCER
member2  Never  6m40s  kept until suppressDeletion=false  resource-binding-application-failover-controller

Unhealthy now:
  member1 since 2023-05-08T09:44:02Z (1m40s)
`
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

func TestPrintHistoryEmptyAndNoTarget(t *testing.T) {
	b := sampleBinding()
	b.Spec.Clusters = nil
	b.Status.FailoverHistory, b.Status.UnhealthyClusters, b.Spec.GracefulEvictionTasks = nil, nil, nil
	b.Status.Conditions = []metav1.Condition{{Type: "FailoverTargetAvailable", Status: metav1.ConditionFalse, Reason: "NoFailoverTarget", Message: "No cluster can take the workload evicted from member2."}}
	var out bytes.Buffer
	if err := printHistory(&out, &boundTemplate{kind: "ResourceBinding", namespace: "default", name: b.Name, spec: &b.Spec, status: &b.Status}, histT0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"placed on: -", "WARNING: No cluster can take the workload evicted from member2.", "No failover recorded."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestFindBinding(t *testing.T) {
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	crb := &workv1alpha2.ClusterResourceBinding{}
	crb.Name = "foo-flinkcluster"
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(sampleBinding(), crb).Build()
	ctx := context.Background()
	for name, tc := range map[string]struct {
		kind, name, ns string
		wantKind       string
		wantErr        string
	}{
		"deployment in its namespace":             {kind: "deployment", name: "nginx", ns: "default", wantKind: "ResourceBinding"},
		"Kind spelling":                           {kind: "Deployment", name: "nginx", ns: "default", wantKind: "ResourceBinding"},
		"unknown kind falls back to both":         {kind: "FlinkCluster", name: "foo", ns: "default", wantKind: "ClusterResourceBinding"},
		"wrong namespace: clear error":            {kind: "deployment", name: "nginx", ns: "prod", wantErr: `found no ResourceBinding "nginx-deployment" in namespace "prod"`},
		"nothing at all: says what it looked for": {kind: "widget", name: "x", ns: "default", wantErr: `ResourceBinding "x-widget" in namespace "default" and no ClusterResourceBinding "x-widget". Is the template propagated`},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := findBinding(ctx, c, tc.kind, tc.name, tc.ns)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.kind != tc.wantKind {
				t.Errorf("kind = %s, want %s", b.kind, tc.wantKind)
			}
		})
	}
}

func TestHistoryArgs(t *testing.T) {
	cmd := newHistoryCommand()
	cmd.SetArgs([]string{"nginx"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "want <kind>/<name>") {
		t.Errorf("error = %v, want the usage explained", err)
	}
}
