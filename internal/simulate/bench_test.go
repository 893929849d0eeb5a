package simulate

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/features"
)

// benchSnapshot is a fleet of three Ready members and n single-replica
// Deployments' bindings spread over them, each with its reported status,
// and the default ClusterTaintPolicy.
func benchSnapshot(n int) Snapshot {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clusters []clusterv1alpha1.Cluster
	for i := 1; i <= 3; i++ {
		clusters = append(clusters, clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("member%d", i)},
			Status: clusterv1alpha1.ClusterStatus{
				Conditions: []metav1.Condition{
					{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
					{Type: clusterv1alpha1.ClusterConditionProbeSucceeded, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
				},
				ResourceSummary: &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"), corev1.ResourcePods: resource.MustParse("100000"),
				}},
			},
		})
	}
	policy := policyv1alpha1.ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "lifeboat-default-not-ready"},
		Spec: policyv1alpha1.ClusterTaintPolicySpec{
			AddOnConditions:    []policyv1alpha1.MatchCondition{{ConditionType: clusterv1alpha1.ClusterConditionReady, Operator: policyv1alpha1.MatchConditionOpIn, StatusValues: []metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionUnknown}}},
			RemoveOnConditions: []policyv1alpha1.MatchCondition{{ConditionType: clusterv1alpha1.ClusterConditionReady, Operator: policyv1alpha1.MatchConditionOpIn, StatusValues: []metav1.ConditionStatus{metav1.ConditionTrue}}},
			Taints:             []policyv1alpha1.Taint{{Key: clusterv1alpha1.TaintClusterNotReady, Effect: corev1.TaintEffectNoExecute}},
		},
	}
	bindings := make([]Binding, 0, n)
	for i := 0; i < n; i++ {
		member := fmt.Sprintf("member%d", i%3+1)
		name := fmt.Sprintf("app-%d", i)
		bindings = append(bindings, Binding{
			Kind: KindResourceBinding, Namespace: "bench", Name: name + "-deployment",
			Spec: workv1alpha2.ResourceBindingSpec{
				Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "bench", Name: name},
				Replicas: 1,
				ReplicaRequirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
				}},
				Placement: &policyv1alpha1.Placement{
					ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
						{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{member}}},
						{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2", "member3"}}},
					},
					SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: 1, MinGroups: 1}},
				},
				Clusters: []workv1alpha2.TargetCluster{{Name: member, Replicas: 1}},
			},
			Status: workv1alpha2.ResourceBindingStatus{
				SchedulerObservedAffinityName: "primary",
				AggregatedStatus: []workv1alpha2.AggregatedStatusItem{{
					ClusterName: member, Applied: true, Health: workv1alpha2.ResourceHealthy,
					Status: &runtime.RawExtension{Raw: []byte(`{"replicas":1,"readyReplicas":1,"availableReplicas":1}`)},
				}},
			},
		})
	}
	o := cluster.NewOptions()
	return Snapshot{
		Clusters:      clusters,
		TaintPolicies: []policyv1alpha1.ClusterTaintPolicy{policy},
		Bindings:      bindings,
		Settings:      failover.NewSettings(o.StatusUpdateFrequency, o.FailureThreshold, o.ProbeTimeout, failover.NewClusterFailoverOptions(), features.New(), true, true),
		Now:           now,
	}
}

// BenchmarkRun5000 simulates member2 failing under 5,000 bindings over
// three members (about 1,667 evicted).
func BenchmarkRun5000(b *testing.B) {
	snap := benchSnapshot(5000)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r, err := Run(snap, Scenario{FailClusters: []string{"member2"}})
		if err != nil {
			b.Fatal(err)
		}
		if r.Totals.Evicted != 1667 {
			b.Fatalf("evicted %d, want 1667", r.Totals.Evicted)
		}
	}
}
