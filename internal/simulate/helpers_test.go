package simulate

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/features"
)

// now is when the simulated failure happens.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// readyCluster is a healthy member, Ready and passing its probes for an
// hour, with room for 8 CPUs, 32Gi and 110 pods.
func readyCluster(name string) clusterv1alpha1.Cluster {
	since := metav1.NewTime(now.Add(-time.Hour))
	c := clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.Status.Conditions = []metav1.Condition{
		{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: "ClusterReady", LastTransitionTime: since},
		{Type: clusterv1alpha1.ClusterConditionProbeSucceeded, Status: metav1.ConditionTrue, Reason: "ProbeSucceeded", LastTransitionTime: since},
	}
	c.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("8"),
			corev1.ResourceMemory: resource.MustParse("32Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
	}
	return c
}

// defaultTaintPolicy is the ClusterTaintPolicy `lifeboat up` installs
// (config/samples/default-clustertaintpolicy.yaml).
func defaultTaintPolicy() policyv1alpha1.ClusterTaintPolicy {
	return policyv1alpha1.ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "lifeboat-default-not-ready"},
		Spec: policyv1alpha1.ClusterTaintPolicySpec{
			AddOnConditions: []policyv1alpha1.MatchCondition{{
				ConditionType: clusterv1alpha1.ClusterConditionReady, Operator: policyv1alpha1.MatchConditionOpIn,
				StatusValues: []metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionUnknown},
			}},
			RemoveOnConditions: []policyv1alpha1.MatchCondition{{
				ConditionType: clusterv1alpha1.ClusterConditionReady, Operator: policyv1alpha1.MatchConditionOpIn,
				StatusValues: []metav1.ConditionStatus{metav1.ConditionTrue},
			}},
			Taints: []policyv1alpha1.Taint{{Key: clusterv1alpha1.TaintClusterNotReady, Effect: corev1.TaintEffectNoExecute}},
		},
	}
}

// defaultSettings are the controller manager's default flags.
func defaultSettings() failover.Settings {
	o := cluster.NewOptions()
	return failover.NewSettings(o.StatusUpdateFrequency, o.FailureThreshold, o.ProbeTimeout,
		failover.NewClusterFailoverOptions(), features.New(), true, true)
}

// snapshot is three Ready clusters with the default taint policy and
// settings, and the given bindings.
func snapshot(bindings ...Binding) Snapshot {
	return Snapshot{
		Clusters:      []clusterv1alpha1.Cluster{readyCluster("member1"), readyCluster("member2"), readyCluster("member3")},
		TaintPolicies: []policyv1alpha1.ClusterTaintPolicy{defaultTaintPolicy()},
		Bindings:      bindings,
		Settings:      defaultSettings(),
		Now:           now,
	}
}

type bindingOpt func(*Binding)

// binding is a ResourceBinding default/NAME-deployment for a Deployment
// with the placement clusterNames [member1, member2, member3], Duplicated,
// 2 replicas, scheduled on the given clusters (default: every one).
func binding(name string, opts ...bindingOpt) Binding {
	b := Binding{
		Kind: KindResourceBinding, Namespace: "default", Name: name + "-deployment",
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: name},
			Replicas: 2,
			Placement: &policyv1alpha1.Placement{
				ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2", "member3"}},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
					ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated,
				},
			},
			Clusters: targets("member1", 2, "member2", 2, "member3", 2),
		},
	}
	for _, o := range opts {
		o(&b)
	}
	return b
}

// targets builds spec.clusters from name, replicas pairs.
func targets(kv ...any) []workv1alpha2.TargetCluster {
	var out []workv1alpha2.TargetCluster
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, workv1alpha2.TargetCluster{Name: kv[i].(string), Replicas: int32(kv[i+1].(int))})
	}
	return out
}

func scheduledOn(kv ...any) bindingOpt {
	return func(b *Binding) { b.Spec.Clusters = targets(kv...) }
}

func affinity(names ...string) bindingOpt {
	return func(b *Binding) { b.Spec.Placement.ClusterAffinity.ClusterNames = names }
}

func replicas(n int32) bindingOpt {
	return func(b *Binding) { b.Spec.Replicas = n }
}

func requests(cpu, memory string) bindingOpt {
	return func(b *Binding) {
		b.Spec.ReplicaRequirements = &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
		}}
	}
}

// tolerateNotReady tolerates cluster.karmada.io/not-ready:NoExecute, for
// seconds (nil: forever).
func tolerateNotReady(seconds *int64) bindingOpt {
	return func(b *Binding) {
		b.Spec.Placement.ClusterTolerations = append(b.Spec.Placement.ClusterTolerations, corev1.Toleration{
			Key: clusterv1alpha1.TaintClusterNotReady, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds,
		})
	}
}

// dividedWeighted divides the replicas with static weights by cluster.
func dividedWeighted(weights map[string]int64) bindingOpt {
	return func(b *Binding) {
		var list []policyv1alpha1.StaticClusterWeight
		for _, name := range []string{"member1", "member2", "member3"} {
			if w, ok := weights[name]; ok {
				list = append(list, policyv1alpha1.StaticClusterWeight{
					TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{name}}, Weight: w,
				})
			}
		}
		b.Spec.Placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			WeightPreference:          &policyv1alpha1.ClusterPreferences{StaticWeightList: list},
		}
	}
}

// affinityTerms replaces clusterAffinity with clusterAffinities, one term
// per list of cluster names, named after their order.
func affinityTerms(terms ...[]string) bindingOpt {
	return func(b *Binding) {
		b.Spec.Placement.ClusterAffinity = nil
		for i, names := range terms {
			b.Spec.Placement.ClusterAffinities = append(b.Spec.Placement.ClusterAffinities, policyv1alpha1.ClusterAffinityTerm{
				AffinityName: fmt.Sprintf("term%d", i), ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: names},
			})
		}
	}
}

func observedAffinity(name string) bindingOpt {
	return func(b *Binding) { b.Status.SchedulerObservedAffinityName = name }
}

func clusterFailover(mode policyv1alpha1.PurgeMode, rules ...policyv1alpha1.StatePreservationRule) bindingOpt {
	return func(b *Binding) {
		cf := &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: mode}
		if len(rules) > 0 {
			cf.StatePreservation = &policyv1alpha1.StatePreservation{Rules: rules}
		}
		if b.Spec.Failover == nil {
			b.Spec.Failover = &policyv1alpha1.FailoverBehavior{}
		}
		b.Spec.Failover.Cluster = cf
	}
}

func appFailover(toleration int32, mode policyv1alpha1.PurgeMode) bindingOpt {
	return func(b *Binding) {
		if b.Spec.Failover == nil {
			b.Spec.Failover = &policyv1alpha1.FailoverBehavior{}
		}
		b.Spec.Failover.Application = &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To(toleration)},
			PurgeMode:          mode,
		}
	}
}

// reflected sets the reflected status of the member copy in cluster.
func reflected(cluster string, status map[string]any) bindingOpt {
	return func(b *Binding) {
		raw, err := json.Marshal(status)
		if err != nil {
			panic(err)
		}
		b.Status.AggregatedStatus = append(b.Status.AggregatedStatus, workv1alpha2.AggregatedStatusItem{
			ClusterName: cluster, Applied: true, Health: workv1alpha2.ResourceHealthy, Status: &runtime.RawExtension{Raw: raw},
		})
	}
}

// run runs the simulation and fails the test on an error.
func run(t *testing.T, snap Snapshot, sc Scenario) *Report {
	t.Helper()
	r, err := Run(snap, sc)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return r
}

// outcome returns the outcome of the binding NAME-deployment.
func outcome(t *testing.T, r *Report, name string) Outcome {
	t.Helper()
	for _, o := range r.Outcomes {
		if o.Name == name+"-deployment" {
			return o
		}
	}
	t.Fatalf("no outcome for %s-deployment; outcomes: %+v", name, r.Outcomes)
	return Outcome{}
}

func (o Outcome) evictionFrom(t *testing.T, cluster string) Eviction {
	t.Helper()
	for _, e := range o.Evictions {
		if e.Cluster == cluster {
			return e
		}
	}
	t.Fatalf("%s: no eviction from %s: %+v", o.Key(), cluster, o.Evictions)
	return Eviction{}
}

func names(ts []workv1alpha2.TargetCluster) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func sum(ts []workv1alpha2.TargetCluster) int32 {
	var n int32
	for _, t := range ts {
		n += t.Replicas
	}
	return n
}
