package failover

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/fencing"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// markedWork is the Work in edge1 of the binding with permanent id "id",
// its manifest carrying the fencing marks (after "": none), applied by its
// agent at appliedGen (0: never).
func markedWork(t *testing.T, after string, generation, appliedGen int64, deleting bool) *workv1alpha1.Work {
	t.Helper()
	meta := map[string]interface{}{"namespace": "app", "name": "web"}
	if after != "" {
		meta["labels"] = map[string]interface{}{fencing.ActionLabel: string(policyv1alpha1.FencingScaleToZero)}
		meta["annotations"] = map[string]interface{}{fencing.AfterAnnotation: after}
	}
	raw, err := json.Marshal(map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta})
	if err != nil {
		t.Fatal(err)
	}
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-es-edge1", Name: "web-deployment", Generation: generation,
		Labels: map[string]string{workv1alpha2.ResourceBindingPermanentIDLabel: "id"}}}
	w.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
	if appliedGen > 0 {
		w.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: appliedGen, Reason: "AppliedSuccessful"}}
	}
	if deleting {
		w.DeletionTimestamp = &metav1.Time{Time: t0}
		w.Finalizers = []string{workv1alpha1.ExecutionControllerFinalizer}
	}
	return w
}

// The copy is counted as fenced by the marks its agent confirmed applying,
// never by a policy the agent may not have seen.
func TestAppliedMarks(t *testing.T) {
	cases := map[string]struct {
		works     []*workv1alpha1.Work
		wantOK    bool
		wantAfter time.Duration
	}{
		"no Work":                                     {nil, false, 0},
		"applied as it is":                            {[]*workv1alpha1.Work{markedWork(t, "30", 3, 3, false)}, true, 30 * time.Second},
		"changed since it was applied":                {[]*workv1alpha1.Work{markedWork(t, "0", 4, 3, false)}, false, 0},
		"deleted after it was applied":                {[]*workv1alpha1.Work{markedWork(t, "30", 4, 3, true)}, true, 30 * time.Second},
		"changed, then deleted, before the agent saw": {[]*workv1alpha1.Work{markedWork(t, "0", 5, 3, true)}, false, 0},
		"never applied":                               {[]*workv1alpha1.Work{markedWork(t, "30", 1, 0, false)}, false, 0},
		"applied without marks":                       {[]*workv1alpha1.Work{markedWork(t, "", 2, 2, false)}, false, 0},
		"the longest toleration of two": {[]*workv1alpha1.Work{markedWork(t, "10", 1, 1, false), markedWork(t, "40", 1, 1, false)},
			true, 40 * time.Second},
		"one of two not confirmed": {[]*workv1alpha1.Work{markedWork(t, "10", 1, 1, false), markedWork(t, "40", 2, 1, false)}, false, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			works := make([]workv1alpha1.Work, 0, len(tc.works))
			for _, w := range tc.works {
				works = append(works, *w)
			}
			got, ok := AppliedMarks(works)
			if ok != tc.wantOK || (ok && got.After != tc.wantAfter) {
				t.Errorf("AppliedMarks = %+v, %t; want after %s, %t", got, ok, tc.wantAfter, tc.wantOK)
			}
		})
	}
}

// A policy shortened during a partition does not shorten the count: the
// agent fences by the marks it applied (A = 300 s), and the control plane
// counts the copy stopped from them, not from the binding's A = 0 now.
func TestFencedByCountsWithTheMarksTheAgentApplied(t *testing.T) {
	renewed := t0
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: clusterLeaseNamespace, Name: "edge1"},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: renewed}, LeaseDurationSeconds: ptr.To[int32](40)}}
	edge1 := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "edge1"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}
	binding := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web-deployment",
		Labels: map[string]string{workv1alpha2.ResourceBindingPermanentIDLabel: "id"}}}
	binding.Spec.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}}
	binding.Spec.Placement = &policyv1alpha1.Placement{}
	margin := 30 * time.Second

	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		work   *workv1alpha1.Work
		want   time.Time
		wantOK bool
	}{
		"the marks applied, deleted since":       {markedWork(t, "300", 2, 1, true), renewed.Add(40*time.Second + 300*time.Second + margin), true},
		"marks written during the partition":     {markedWork(t, "0", 3, 1, true), time.Time{}, false},
		"a copy applied before fencing was on":   {markedWork(t, "", 1, 1, false), time.Time{}, false},
		"the marks applied, as the binding says": {markedWork(t, "0", 1, 1, false), renewed.Add(40*time.Second + margin), true},
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(lease, edge1, binding, tc.work).Build()
			got, ok := FencedBy(c, policyv1alpha1.PurgeModeGracefully, margin)(context.Background(), binding, &binding.Spec, "edge1")
			if ok != tc.wantOK || !got.Equal(tc.want) {
				t.Errorf("FencedBy = %s, %t; want %s, %t", got, ok, tc.want, tc.wantOK)
			}
		})
	}

	// A Push cluster, or a binding the current policy does not fence: never.
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(lease, binding, markedWork(t, "0", 1, 1, false),
		&clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "edge1"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push}}).Build()
	if _, ok := FencedBy(c, policyv1alpha1.PurgeModeGracefully, margin)(context.Background(), binding, &binding.Spec, "edge1"); ok {
		t.Error("a Push cluster's copy counted as fenced")
	}
	gracefully := binding.DeepCopy()
	gracefully.Spec.Failover = nil
	c = fake.NewClientBuilder().WithScheme(s).WithObjects(lease, edge1, gracefully, markedWork(t, "0", 1, 1, false)).Build()
	if _, ok := FencedBy(c, policyv1alpha1.PurgeModeGracefully, margin)(context.Background(), gracefully, &gracefully.Spec, "edge1"); ok {
		t.Error("a binding the policy no longer fences counted as fenced")
	}
	var _ client.Object = binding
}
