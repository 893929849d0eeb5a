package cli

import (
	"bytes"
	"context"
	"path"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	undone := b.Status.FailoverHistory[0]
	undone.Time = metav1.NewTime(undone.Time.Add(-time.Hour))
	undone.FromCluster, undone.ClustersAfter, undone.PreservedLabelState, undone.Message = "member1", []string{"member1"}, nil, ""
	undone.ReplacementHealthyTime = &metav1.Time{Time: undone.Time.Add(20 * time.Second)}
	b.Status.FailoverHistory = append([]workv1alpha2.FailoverHistoryItem{undone}, b.Status.FailoverHistory...)
	var out bytes.Buffer
	err := printHistory(&out, &boundTemplate{kind: "ResourceBinding", namespace: "default", name: b.Name, spec: &b.Spec, status: &b.Status}, histT0.Add(1000*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := `Deployment default/nginx (ResourceBinding default/nginx-deployment), placed on: member1

TIME                  REASON              FROM     TO                PURGE     STATE      REPLACEMENT HEALTHY AFTER
2023-05-08T08:29:02Z  ApplicationFailure  member1  member1 (undone)  Directly  -          20s
2023-05-08T09:29:02Z  ApplicationFailure  member3  member2           Directly  jobid=abc  45s
2023-05-08T09:39:02Z  ApplicationFailure  member2  <pending>         Never     -          -

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

// historyBindings are the bindings of a control plane: a Deployment's, a
// FlinkDeployment's (a CRD) and a ClusterRole's (cluster-scoped).
func historyBindings() []client.Object {
	flink := &workv1alpha2.ResourceBinding{}
	flink.Name, flink.Namespace = "foo-flinkdeployment", "default"
	flink.Spec.Resource = workv1alpha2.ObjectReference{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment", Namespace: "default", Name: "foo"}
	view := &workv1alpha2.ClusterResourceBinding{}
	view.Name = "view-clusterrole"
	view.Spec.Resource = workv1alpha2.ObjectReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "view"}
	return []client.Object{sampleBinding(), flink, view}
}

// TestHistoryFindsBinding names templates every way kubectl accepts and
// checks that history reads the binding the detector made for each.
func TestHistoryFindsBinding(t *testing.T) {
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	nginx, foo, view := "ResourceBinding default/nginx-deployment", "ResourceBinding default/foo-flinkdeployment", "ClusterResourceBinding view-clusterrole"
	cases := map[string]struct {
		args      []string
		namespace string // -n; "" takes the context's, "default" here
		resources []*metav1.APIResourceList
		want      string
		wantErr   string
	}{
		"short name":                   {args: []string{"deploy/nginx"}, want: nginx},
		"singular":                     {args: []string{"deployment/nginx"}, want: nginx},
		"plural":                       {args: []string{"deployments/nginx"}, want: nginx},
		"plural with group":            {args: []string{"deployments.apps/nginx"}, want: nginx},
		"Kind":                         {args: []string{"Deployment/nginx"}, want: nginx},
		"version and group":            {args: []string{"deployment.v1.apps/nginx"}, want: nginx},
		"TYPE NAME":                    {args: []string{"deployment", "nginx"}, want: nginx},
		"TYPE NAME, short":             {args: []string{"deploy", "nginx"}, namespace: "default", want: nginx},
		"CRD singular":                 {args: []string{"flinkdeployment/foo"}, want: foo},
		"CRD Kind":                     {args: []string{"FlinkDeployment/foo"}, want: foo},
		"CRD short name, TYPE NAME":    {args: []string{"flinkdep", "foo"}, want: foo},
		"CRD plural with group":        {args: []string{"flinkdeployments.flink.apache.org/foo"}, want: foo},
		"CRD other version":            {args: []string{"flinkdeployment.v1alpha1.flink.apache.org/foo"}, want: foo},
		"cluster-scoped: -n ignored":   {args: []string{"clusterrole/view"}, namespace: "prod", want: view},
		"cluster-scoped, TYPE NAME":    {args: []string{"clusterroles.rbac.authorization.k8s.io", "view"}, want: view},
		"unknown type":                 {args: []string{"deplo/nginx"}, wantErr: `the server doesn't have a resource type "deplo"`},
		"another namespace":            {args: []string{"deploy/nginx"}, namespace: "prod", wantErr: `no binding for Deployment.apps prod/nginx: found no ResourceBinding "nginx-deployment" in namespace "prod". Is the template propagated by a PropagationPolicy (or ClusterPropagationPolicy)?`},
		"cluster-scoped, no binding":   {args: []string{"clusterrole/edit"}, wantErr: `no binding for ClusterRole.rbac.authorization.k8s.io edit: found no ClusterResourceBinding "edit-clusterrole". Is the template propagated by a ClusterPropagationPolicy?`},
		"same kind name, other group":  {args: []string{"deployments.example.com/nginx"}, resources: clashingResources(), wantErr: `no binding for Deployment.example.com default/nginx: ResourceBinding "nginx-deployment" is the binding of apps/v1 Deployment default/nginx`},
		"ambiguous: the first group's": {args: []string{"deployments/nginx"}, resources: clashingResources(), want: nginx},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resources := tc.resources
			if resources == nil {
				resources = servedResources()
			}
			cp := &controlPlane{
				client:    fake.NewClientBuilder().WithScheme(s).WithObjects(historyBindings()...).Build(),
				discovery: testDiscovery(resources),
				namespace: "default",
			}
			typeArg, objName, err := resourceArgs(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			o := &historyOptions{namespace: tc.namespace}
			b, err := o.find(context.Background(), cp, typeArg, objName, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := b.kind + " " + path.Join(b.namespace, b.name); got != tc.want {
				t.Errorf("binding %s, want %s", got, tc.want)
			}
		})
	}
}

// Arguments are checked before any cluster is contacted.
func TestHistoryArgs(t *testing.T) {
	t.Setenv("KUBECONFIG", "/absent/kubeconfig")
	for _, args := range [][]string{{"nginx"}, {"deployment", "deployment/nginx"}, {"deployment", "a", "b"}} {
		if _, err := execute(newHistoryCommand(), args...); err == nil || !strings.Contains(err.Error(), "want TYPE/NAME or TYPE NAME") {
			t.Errorf("%q: error = %v, want the forms explained", args, err)
		}
	}
}
