package bench

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

func TestBindingMarks(t *testing.T) {
	item := func(cluster string, h workv1alpha2.ResourceHealth) workv1alpha2.AggregatedStatusItem {
		return workv1alpha2.AggregatedStatusItem{ClusterName: cluster, Health: h, Applied: true}
	}
	cases := map[string]struct {
		spec   workv1alpha2.ResourceBindingSpec
		status workv1alpha2.ResourceBindingStatus
		want   []string
	}{
		"new": {want: []string{"present"}},
		"scheduled, not yet reported": {
			spec: workv1alpha2.ResourceBindingSpec{Clusters: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 1}}},
			want: []string{"present", "scheduled:member1"},
		},
		"healthy in its target": {
			spec:   workv1alpha2.ResourceBindingSpec{Clusters: []workv1alpha2.TargetCluster{{Name: "member1"}}},
			status: workv1alpha2.ResourceBindingStatus{AggregatedStatus: []workv1alpha2.AggregatedStatusItem{item("member1", workv1alpha2.ResourceHealthy)}},
			want:   []string{"healthy:member1", "present", "scheduled:member1"},
		},
		"healthy only in a cluster it is leaving: the kept copy, not a Healthy target": {
			spec: workv1alpha2.ResourceBindingSpec{
				Clusters:              []workv1alpha2.TargetCluster{{Name: "member2"}},
				GracefulEvictionTasks: []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1"}},
			},
			status: workv1alpha2.ResourceBindingStatus{AggregatedStatus: []workv1alpha2.AggregatedStatusItem{
				item("member1", workv1alpha2.ResourceHealthy), item("member2", workv1alpha2.ResourceUnknown)}},
			want: []string{"evicting:member1", "kepthealthy:member1", "present", "scheduled:member2"},
		},
		"healthy in a cluster it left without a task does not count": {
			spec: workv1alpha2.ResourceBindingSpec{Clusters: []workv1alpha2.TargetCluster{{Name: "member2"}}},
			status: workv1alpha2.ResourceBindingStatus{AggregatedStatus: []workv1alpha2.AggregatedStatusItem{
				item("member1", workv1alpha2.ResourceHealthy)}},
			want: []string{"present", "scheduled:member2"},
		},
		"unhealthy": {
			spec:   workv1alpha2.ResourceBindingSpec{Clusters: []workv1alpha2.TargetCluster{{Name: "member1"}}},
			status: workv1alpha2.ResourceBindingStatus{AggregatedStatus: []workv1alpha2.AggregatedStatusItem{item("member1", workv1alpha2.ResourceUnhealthy)}},
			want:   []string{"present", "scheduled:member1", "unhealthy:member1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := BindingMarks(&workv1alpha2.ResourceBinding{Spec: tc.spec, Status: tc.status})
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("BindingMarks = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClusterMarks(t *testing.T) {
	ready := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: s}}
	}
	noExecute := corev1.Taint{Key: clusterv1alpha1.TaintClusterNotReady, Effect: corev1.TaintEffectNoExecute}
	cases := map[string]struct {
		conds  []metav1.Condition
		taints []corev1.Taint
		want   []string
	}{
		"no condition yet": {want: []string{"notready", "present"}},
		"ready":            {conds: ready(metav1.ConditionTrue), want: []string{"present", "ready"}},
		"unknown":          {conds: ready(metav1.ConditionUnknown), want: []string{"notready", "present"}},
		"false and tainted": {conds: ready(metav1.ConditionFalse), taints: []corev1.Taint{noExecute},
			want: []string{"notready", "present", "taint:cluster.karmada.io/not-ready:NoExecute"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &clusterv1alpha1.Cluster{Spec: clusterv1alpha1.ClusterSpec{Taints: tc.taints}, Status: clusterv1alpha1.ClusterStatus{Conditions: tc.conds}}
			got := ClusterMarks(c)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("ClusterMarks = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDeploymentMarks(t *testing.T) {
	dep := func(gen, observed int64, replicas *int32, available, updated int32) *appsv1.Deployment {
		d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: replicas},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, AvailableReplicas: available, UpdatedReplicas: updated}}
		d.Generation = gen
		return d
	}
	cases := map[string]struct {
		d    *appsv1.Deployment
		want []string
	}{
		"just created":            {d: dep(1, 0, ptr.To[int32](2), 0, 0), want: []string{"present"}},
		"available":               {d: dep(1, 1, ptr.To[int32](2), 2, 2), want: []string{"present", "available"}},
		"partly available":        {d: dep(1, 1, ptr.To[int32](2), 1, 2), want: []string{"present", "unavailable"}},
		"none available":          {d: dep(1, 1, ptr.To[int32](2), 0, 2), want: []string{"present", "unavailable"}},
		"available, not updated":  {d: dep(1, 1, ptr.To[int32](2), 2, 1), want: []string{"present"}},
		"stale status":            {d: dep(2, 1, ptr.To[int32](2), 2, 2), want: []string{"present"}},
		"stale status, none":      {d: dep(2, 1, ptr.To[int32](2), 0, 0), want: []string{"present"}},
		"default replicas is one": {d: dep(1, 1, nil, 1, 1), want: []string{"present", "available"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := DeploymentMarks(tc.d); !slices.Equal(got, tc.want) {
				t.Errorf("DeploymentMarks = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMarkHelpers(t *testing.T) {
	if got := HealthyCluster(Healthy("member3")); got != "member3" {
		t.Errorf("HealthyCluster = %q", got)
	}
	if got := HealthyCluster(Unhealthy("member3")); got != "" {
		t.Errorf("HealthyCluster(unhealthy) = %q", got)
	}
	if !NoExecuteTaint(Tainted("cluster.karmada.io/unreachable", "NoExecute")) || NoExecuteTaint(Tainted("x", "NoSchedule")) || NoExecuteTaint("ready") {
		t.Error("NoExecuteTaint misjudged")
	}
}

func TestMemberUsable(t *testing.T) {
	cases := map[string]struct {
		marks []string
		want  bool
	}{
		"Ready, no taints":        {marks: []string{MarkPresent, MarkReady}, want: true},
		"not Ready":               {marks: []string{MarkPresent, MarkNotReady}},
		"Ready, NoSchedule taint": {marks: []string{MarkPresent, MarkReady, Tainted("cluster.karmada.io/not-ready", "NoSchedule")}},
		"Ready, NoExecute taint":  {marks: []string{MarkPresent, MarkReady, Tainted("k", "NoExecute")}},
		"not seen yet":            {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := memberUsable(tc.marks); got != tc.want {
				t.Errorf("memberUsable(%v) = %t, want %t", tc.marks, got, tc.want)
			}
		})
	}
}
