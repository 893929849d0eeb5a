package failback

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	st "github.com/lifeboat-dev/lifeboat/internal/scheduler/schedtesting"
)

// t0 is the tests' epoch; the window is 600s.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

// binding is a workload with clusterAffinities member1 first, then
// member2, that failed over from member1 to member2 at second -3600.
type binding struct{ workv1alpha2.ResourceBinding }

func makeBinding(name string) *binding {
	groups := st.MakePlacement().AffinityTerm("primary", "member1").AffinityTerm("backup", "member2").Obj()
	b := &binding{*st.MakeBinding("default", name).Replicas(2).Placement(groups).Cluster("member2", 2).Obj()}
	b.Generation = 3
	last := metav1.NewTime(at(-3600))
	b.Status.LastScheduledTime = &last
	b.Status.SchedulerObservedGeneration = 3
	b.Status.SchedulerObservedAffinityName = "backup"
	b.Spec.Failover = &policyv1alpha1.FailoverBehavior{
		Cluster:  &policyv1alpha1.ClusterFailoverBehavior{},
		Failback: &policyv1alpha1.FailbackBehavior{StabilizationSeconds: ptr.To[int32](600)},
	}
	return b.history("member1", workv1alpha2.EvictionReasonTaintUntolerated, -3600)
}

func (b *binding) history(from, reason string, seconds int) *binding {
	b.Status.FailoverHistory = append(b.Status.FailoverHistory, workv1alpha2.FailoverHistoryItem{
		Time: metav1.NewTime(at(seconds)), Reason: reason, FromCluster: from, Producer: "test",
	})
	return b
}

func (b *binding) noFailback() *binding { b.Spec.Failover.Failback = nil; return b }

func (b *binding) obj() *workv1alpha2.ResourceBinding { return b.ResourceBinding.DeepCopy() }

// readySince is a Ready cluster whose Ready condition changed at seconds.
func readySince(name string, seconds int) *clusterv1alpha1.Cluster {
	c := st.MakeCluster(name).Obj()
	c.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at(seconds))
	return c
}

func notReady(name string) *clusterv1alpha1.Cluster {
	return st.MakeCluster(name).Ready(metav1.ConditionFalse).Obj()
}

func tainted(c *clusterv1alpha1.Cluster, key string, effect corev1.TaintEffect) *clusterv1alpha1.Cluster {
	c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: key, Effect: effect})
	return c
}

// untaintedAt sets the annotation the cluster-taint controller keeps:
// the cluster's last NoExecute taint was removed at the given second.
func untaintedAt(c *clusterv1alpha1.Cluster, seconds int) *clusterv1alpha1.Cluster {
	c.Annotations = map[string]string{clusterv1alpha1.AnnotationNoExecuteCleared: at(seconds).UTC().Format(time.RFC3339)}
	return c
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func equalBinding(a, b *workv1alpha2.ResourceBinding) bool { return equality.Semantic.DeepEqual(a, b) }
