package interpreter

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// memberDeployment is a member copy built from template generation tmplGen,
// itself at generation gen, whose controller observed observed.
func memberDeployment(tmplGen, gen, observed int64, replicas, available int) *unstructured.Unstructured {
	return makeObj(deploymentGVK, "web").generation(gen).templateGeneration(tmplGen).set("spec.replicas", replicas).
		status(map[string]any{
			"observedGeneration": observed, "replicas": replicas, "updatedReplicas": replicas,
			"readyReplicas": available, "availableReplicas": available, "unavailableReplicas": replicas - available,
		}).obj()
}

func TestAggregateStatus(t *testing.T) {
	deployTemplate := func(status map[string]any) *unstructured.Unstructured {
		w := makeObj(deploymentGVK, "web").generation(3).set("spec.replicas", 5)
		if status != nil {
			w.status(status)
		}
		return w.obj()
	}
	conditions := []any{map[string]any{"type": "Available", "status": "True",
		"lastUpdateTime": "2025-01-01T00:00:00Z", "lastTransitionTime": "2025-01-01T00:00:00Z"}}

	tests := map[string]struct {
		template   *unstructured.Unstructured
		items      func(t *testing.T) []workv1alpha2.AggregatedStatusItem
		wantStatus any // nil: no .status at all
	}{
		"deployment: counters summed, observedGeneration set when every member caught up": {
			template: deployTemplate(map[string]any{"observedGeneration": 2, "conditions": conditions}),
			items: func(t *testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{
					reflected(t, "member1", memberDeployment(3, 7, 7, 3, 3)),
					reflected(t, "member2", memberDeployment(3, 2, 2, 2, 0)),
				}
			},
			wantStatus: map[string]any{
				"observedGeneration": 3, "replicas": 5, "updatedReplicas": 5, "readyReplicas": 3,
				"availableReplicas": 3, "unavailableReplicas": 2, "conditions": conditions,
			},
		},
		"deployment: a member whose controller lags keeps the old observedGeneration": {
			template: deployTemplate(map[string]any{"observedGeneration": 2}),
			items: func(t *testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{
					reflected(t, "member1", memberDeployment(3, 7, 7, 3, 3)),
					reflected(t, "member2", memberDeployment(3, 3, 2, 2, 2)),
				}
			},
			wantStatus: map[string]any{
				"observedGeneration": 2, "replicas": 5, "updatedReplicas": 5, "readyReplicas": 5, "availableReplicas": 5,
			},
		},
		"deployment: a member still built from an older template keeps the old observedGeneration": {
			template: deployTemplate(map[string]any{"observedGeneration": 2}),
			items: func(t *testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{
					reflected(t, "member1", memberDeployment(3, 7, 7, 3, 3)),
					reflected(t, "member2", memberDeployment(2, 2, 2, 2, 2)),
				}
			},
			wantStatus: map[string]any{
				"observedGeneration": 2, "replicas": 5, "updatedReplicas": 5, "readyReplicas": 5, "availableReplicas": 5,
			},
		},
		"deployment: a member without status yet keeps the old observedGeneration": {
			template: deployTemplate(nil),
			items: func(t *testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{
					reflected(t, "member1", memberDeployment(3, 1, 1, 3, 3)),
					{ClusterName: "member2", Applied: false, AppliedMessage: "conflict"},
				}
			},
			wantStatus: map[string]any{"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3},
		},
		"deployment: no members keeps the old observedGeneration and zeroes the counters": {
			template: deployTemplate(map[string]any{"observedGeneration": 2, "replicas": 4}),
			items:    func(*testing.T) []workv1alpha2.AggregatedStatusItem { return nil },
			wantStatus: map[string]any{
				"observedGeneration": 2,
			},
		},
		"statefulset": {
			template: makeObj(statefulSetGVK, "db").generation(2).obj(),
			items: func(t *testing.T) []workv1alpha2.AggregatedStatusItem {
				member := func(ready int) *unstructured.Unstructured {
					return makeObj(statefulSetGVK, "db").generation(1).templateGeneration(2).status(map[string]any{
						"observedGeneration": 1, "replicas": 2, "readyReplicas": ready, "currentReplicas": 2,
						"updatedReplicas": 2, "availableReplicas": ready,
					}).obj()
				}
				return []workv1alpha2.AggregatedStatusItem{reflected(t, "member1", member(2)), reflected(t, "member2", member(1))}
			},
			wantStatus: map[string]any{
				"observedGeneration": 2, "replicas": 4, "readyReplicas": 3, "currentReplicas": 4,
				"updatedReplicas": 4, "availableReplicas": 3,
			},
		},
		"daemonset": {
			template: makeObj(daemonSetGVK, "ds").generation(1).obj(),
			items: func(t *testing.T) []workv1alpha2.AggregatedStatusItem {
				member := makeObj(daemonSetGVK, "ds").generation(1).templateGeneration(1).status(map[string]any{
					"observedGeneration": 1, "currentNumberScheduled": 1, "desiredNumberScheduled": 1, "numberMisscheduled": 0,
					"numberReady": 1, "updatedNumberScheduled": 1, "numberAvailable": 1,
				}).obj()
				return []workv1alpha2.AggregatedStatusItem{reflected(t, "member1", member), reflected(t, "member2", member)}
			},
			wantStatus: map[string]any{
				"observedGeneration": 1, "currentNumberScheduled": 2, "desiredNumberScheduled": 2, "numberMisscheduled": 0,
				"numberReady": 2, "updatedNumberScheduled": 2, "numberAvailable": 2,
			},
		},
		"replicaset": {
			template: makeObj(replicaSetGVK, "rs").generation(1).obj(),
			items: func(t *testing.T) []workv1alpha2.AggregatedStatusItem {
				member := makeObj(replicaSetGVK, "rs").generation(1).templateGeneration(1).status(map[string]any{
					"observedGeneration": 1, "replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 2,
				}).obj()
				return []workv1alpha2.AggregatedStatusItem{reflected(t, "member1", member), reflected(t, "member2", member)}
			},
			wantStatus: map[string]any{
				"observedGeneration": 1, "replicas": 4, "fullyLabeledReplicas": 4, "readyReplicas": 4, "availableReplicas": 4,
			},
		},
		"load balancer service lists each address once": {
			template: makeObj(serviceGVK, "svc").set("spec.type", "LoadBalancer").obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{
					item("member1", map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "1.1.1.1"}}}}),
					item("member2", map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "2.2.2.2"}, map[string]any{"ip": "1.1.1.1"}}}}),
					item("member3", nil),
				}
			},
			wantStatus: map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "1.1.1.1"}, map[string]any{"ip": "2.2.2.2"}}}},
		},
		"clusterIP service is left alone": {
			template: makeObj(serviceGVK, "svc").obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{item("member1", nil)}
			},
			wantStatus: nil,
		},
		"ingress": {
			template: makeObj(ingressGVK, "ing").obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{
					item("member1", map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"hostname": "a.lb"}}}}),
					item("member2", map[string]any{"loadBalancer": map[string]any{}}),
				}
			},
			wantStatus: map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"hostname": "a.lb"}}}},
		},
		"pod disruption budget": {
			template: makeObj(pdbGVK, "pdb").obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{
					item("member1", map[string]any{"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3,
						"disruptedPods": map[string]any{"web-1": "2025-01-01T00:00:00Z"}}),
					item("member2", map[string]any{"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 2, "expectedPods": 2}),
				}
			},
			wantStatus: map[string]any{
				"disruptionsAllowed": 1, "currentHealthy": 4, "desiredHealthy": 4, "expectedPods": 5,
				"disruptedPods": map[string]any{"member1/web-1": "2025-01-01T00:00:00Z"},
			},
		},
		"horizontal pod autoscaler": {
			template: makeObj(hpaGVK, "hpa").obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{
					item("member1", map[string]any{"currentReplicas": 2, "desiredReplicas": 3}),
					item("member2", map[string]any{"currentReplicas": 1, "desiredReplicas": 1}),
				}
			},
			wantStatus: map[string]any{"currentReplicas": 3, "desiredReplicas": 4, "currentMetrics": nil},
		},
		"cronjob keeps the latest times": {
			template: makeObj(cronJobGVK, "cron").status(map[string]any{"lastScheduleTime": "2025-01-01T00:01:00Z"}).obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{
					item("member1", map[string]any{"lastScheduleTime": "2025-01-01T00:05:00Z", "lastSuccessfulTime": "2025-01-01T00:03:00Z"}),
					item("member2", map[string]any{"lastScheduleTime": "2025-01-01T00:04:00Z", "lastSuccessfulTime": "2025-01-01T00:04:00Z"}),
				}
			},
			wantStatus: map[string]any{"lastScheduleTime": "2025-01-01T00:05:00Z", "lastSuccessfulTime": "2025-01-01T00:04:00Z"},
		},
		"pod: running everywhere": {
			template: makeObj(podGVK, "p").obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{item("member1", map[string]any{"phase": "Running"}), item("member2", map[string]any{"phase": "Succeeded"})}
			},
			wantStatus: map[string]any{"phase": "Running"},
		},
		"pod: one not reported is pending": {
			template: makeObj(podGVK, "p").obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{item("member1", map[string]any{"phase": "Running"}), item("member2", nil)}
			},
			wantStatus: map[string]any{"phase": "Pending"},
		},
		"pod: one failed": {
			template: makeObj(podGVK, "p").obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{item("member1", map[string]any{"phase": "Pending"}), item("member2", map[string]any{"phase": "Failed"})}
			},
			wantStatus: map[string]any{"phase": "Failed"},
		},
		"pod: all succeeded": {
			template: makeObj(podGVK, "p").obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{item("member1", map[string]any{"phase": "Succeeded"})}
			},
			wantStatus: map[string]any{"phase": "Succeeded"},
		},
		"pod: a finished template stays finished": {
			template: makeObj(podGVK, "p").status(map[string]any{"phase": "Succeeded"}).obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{item("member1", map[string]any{"phase": "Running"})}
			},
			wantStatus: map[string]any{"phase": "Succeeded"},
		},
		"pvc: bound everywhere": {
			template: makeObj(pvcGVK, "data").obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{item("member1", map[string]any{"phase": "Bound"}), item("member2", map[string]any{"phase": "Bound"})}
			},
			wantStatus: map[string]any{"phase": "Bound"},
		},
		"pvc: pending somewhere": {
			template: makeObj(pvcGVK, "data").obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{item("member1", map[string]any{"phase": "Bound"}), item("member2", nil)}
			},
			wantStatus: map[string]any{"phase": "Pending"},
		},
		"pvc: lost somewhere": {
			template: makeObj(pvcGVK, "data").obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{item("member1", map[string]any{"phase": "Lost"}), item("member2", map[string]any{"phase": "Bound"})}
			},
			wantStatus: map[string]any{"phase": "Lost"},
		},
		"kind without a rule is unchanged": {
			template: makeObj(schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Widget"}, "w").status(map[string]any{"phase": "Old"}).obj(),
			items: func(*testing.T) []workv1alpha2.AggregatedStatusItem {
				return []workv1alpha2.AggregatedStatusItem{item("member1", map[string]any{"phase": "New"})}
			},
			wantStatus: map[string]any{"phase": "Old"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := NewDefault().AggregateStatus(tc.template, tc.items(t))
			if err != nil {
				t.Fatalf("AggregateStatus: %v", err)
			}
			if diff := cmp.Diff(statusOf(tc.wantStatus), got.Object["status"]); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			delete(got.Object, "status")
			want := tc.template.DeepCopy()
			delete(want.Object, "status")
			if diff := cmp.Diff(want.Object, got.Object); diff != "" {
				t.Errorf("AggregateStatus changed more than .status (-want +got):\n%s", diff)
			}
		})
	}
}

func statusOf(want any) any {
	if want == nil {
		return nil
	}
	return jsonValue(want)
}

func TestAggregateStatusRejectsMalformedStatus(t *testing.T) {
	bad := workv1alpha2.AggregatedStatusItem{ClusterName: "member1", Applied: true, Status: item("x", "not an object").Status}
	if _, err := NewDefault().AggregateStatus(makeObj(deploymentGVK, "web").obj(), []workv1alpha2.AggregatedStatusItem{bad}); err == nil {
		t.Error("AggregateStatus succeeded, want an error")
	}
}

// Aggregating the same inputs into the result again must change nothing,
// or the status controller would write on every pass.
func TestAggregateStatusIsStable(t *testing.T) {
	complete := jobStatus{active: 0, succeeded: 1, start: 1, completion: 5, conditions: []string{"SuccessCriteriaMet", "Complete"}}
	tests := map[string]struct {
		template *unstructured.Unstructured
		items    []workv1alpha2.AggregatedStatusItem
	}{
		"deployment": {
			template: makeObj(deploymentGVK, "web").generation(3).obj(),
			items: []workv1alpha2.AggregatedStatusItem{
				reflected(t, "member1", memberDeployment(3, 1, 1, 2, 2)),
				reflected(t, "member2", memberDeployment(3, 1, 1, 0, 0)),
			},
		},
		"job": {
			template: makeObj(jobGVK, "batch").obj(),
			items:    []workv1alpha2.AggregatedStatusItem{item("member1", complete.obj()), item("member2", complete.obj())},
		},
		"pdb": {
			template: makeObj(pdbGVK, "pdb").obj(),
			items:    []workv1alpha2.AggregatedStatusItem{item("member1", map[string]any{"currentHealthy": 0, "desiredHealthy": 0})},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			once, err := NewDefault().AggregateStatus(tc.template, tc.items)
			if err != nil {
				t.Fatalf("AggregateStatus: %v", err)
			}
			twice, err := NewDefault().AggregateStatus(once, tc.items)
			if err != nil {
				t.Fatalf("AggregateStatus: %v", err)
			}
			if diff := cmp.Diff(once.Object, twice.Object); diff != "" {
				t.Errorf("second aggregation changed the template (-first +second):\n%s", diff)
			}
		})
	}
}

// Members' counters that add up past the largest int32 must stop there,
// not wrap to a negative total.
func TestAggregateStatusCountersStopAtMaxInt32(t *testing.T) {
	tests := map[string]struct {
		gvk      schema.GroupVersionKind
		counters []string
	}{
		"deployment":  {deploymentGVK, []string{"replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"}},
		"statefulset": {statefulSetGVK, []string{"replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"}},
		"daemonset": {daemonSetGVK, []string{"currentNumberScheduled", "desiredNumberScheduled", "numberAvailable",
			"numberMisscheduled", "numberReady", "updatedNumberScheduled", "numberUnavailable"}},
		"replicaset": {replicaSetGVK, []string{"replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas"}},
		"job":        {jobGVK, []string{"active", "succeeded", "failed"}},
		"pdb":        {pdbGVK, []string{"disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"}},
		"hpa":        {hpaGVK, []string{"currentReplicas", "desiredReplicas"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			status := map[string]any{}
			for _, c := range tc.counters {
				status[c] = math.MaxInt32
			}
			items := []workv1alpha2.AggregatedStatusItem{item("member1", status), item("member2", status)}
			got, err := NewDefault().AggregateStatus(makeObj(tc.gvk, "x").obj(), items)
			if err != nil {
				t.Fatalf("AggregateStatus: %v", err)
			}
			for _, c := range tc.counters {
				if v, _, _ := unstructured.NestedInt64(got.Object, "status", c); v != math.MaxInt32 {
					t.Errorf("status.%s = %d, want %d", c, v, math.MaxInt32)
				}
			}
		})
	}
}

func TestAddCount(t *testing.T) {
	tests := []struct{ sum, n, want int32 }{
		{0, 0, 0},
		{2, 3, 5},
		{math.MaxInt32 - 1, 1, math.MaxInt32},
		{math.MaxInt32, 1, math.MaxInt32},
		{math.MaxInt32, math.MaxInt32, math.MaxInt32},
		{math.MinInt32, -1, math.MinInt32},
		{math.MaxInt32, -1, math.MaxInt32 - 1},
	}
	for _, tc := range tests {
		if got := addCount(tc.sum, tc.n); got != tc.want {
			t.Errorf("addCount(%d, %d) = %d, want %d", tc.sum, tc.n, got, tc.want)
		}
	}
}
