package failover

import (
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// t0 is the tests' epoch.
var t0 = time.Date(2024, 5, 8, 9, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

func mt(seconds int) *metav1.Time { return ptr.To(metav1.NewTime(at(seconds))) }

// bindingWrapper builds ResourceBindings for tests.
type bindingWrapper struct {
	workv1alpha2.ResourceBinding
	stale bool
}

func makeBinding(name string) *bindingWrapper {
	b := &bindingWrapper{}
	b.Name = name + "-deployment"
	b.Namespace = "default"
	b.Labels = map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "policy-" + name}
	b.Generation = 2
	b.Status.SchedulerObservedGeneration = 2
	b.Spec.Resource = workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: name, UID: types.UID("uid-" + name)}
	return b
}

func (b *bindingWrapper) clusters(names ...string) *bindingWrapper {
	b.Spec.Clusters = nil
	for _, n := range names {
		b.Spec.Clusters = append(b.Spec.Clusters, workv1alpha2.TargetCluster{Name: n, Replicas: 2})
	}
	return b
}

// divided makes the binding a Divided workload of replicas.
func divided(replicas int32, b *bindingWrapper) *bindingWrapper {
	b.Spec.Replicas = replicas
	b.Spec.Placement = &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided}}
	return b
}

// released removes the policy's claim, as the detector does when the
// policy is deleted.
func (b *bindingWrapper) released() *bindingWrapper {
	b.Labels = nil
	return b
}

func (b *bindingWrapper) health(cluster string, h workv1alpha2.ResourceHealth) *bindingWrapper {
	b.Status.AggregatedStatus = append(b.Status.AggregatedStatus, workv1alpha2.AggregatedStatusItem{ClusterName: cluster, Applied: true, Health: h})
	return b
}

func (b *bindingWrapper) reflected(cluster string, status map[string]interface{}) *bindingWrapper {
	raw, err := json.Marshal(status)
	if err != nil {
		panic(err)
	}
	for i := range b.Status.AggregatedStatus {
		if b.Status.AggregatedStatus[i].ClusterName == cluster {
			b.Status.AggregatedStatus[i].Status = &runtime.RawExtension{Raw: raw}
			return b
		}
	}
	b.Status.AggregatedStatus = append(b.Status.AggregatedStatus, workv1alpha2.AggregatedStatusItem{ClusterName: cluster, Applied: true, Health: workv1alpha2.ResourceUnhealthy, Status: &runtime.RawExtension{Raw: raw}})
	return b
}

func (b *bindingWrapper) unhealthySince(cluster string, seconds int) *bindingWrapper {
	b.Status.UnhealthyClusters = append(b.Status.UnhealthyClusters, workv1alpha2.UnhealthyCluster{ClusterName: cluster, UnhealthySince: *mt(seconds)})
	return b
}

func (b *bindingWrapper) appFailover(toleration int32, mode policyv1alpha1.PurgeMode, rules ...policyv1alpha1.StatePreservationRule) *bindingWrapper {
	app := &policyv1alpha1.ApplicationFailoverBehavior{
		DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To(toleration)},
		PurgeMode:          mode,
	}
	if len(rules) > 0 {
		app.StatePreservation = &policyv1alpha1.StatePreservation{Rules: rules}
	}
	b.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: app}
	return b
}

func (b *bindingWrapper) task(t workv1alpha2.GracefulEvictionTask) *bindingWrapper {
	b.Spec.GracefulEvictionTasks = append(b.Spec.GracefulEvictionTasks, t)
	return b
}

func (b *bindingWrapper) history(h workv1alpha2.FailoverHistoryItem) *bindingWrapper {
	b.Status.FailoverHistory = append(b.Status.FailoverHistory, h)
	return b
}

// placementHealthySince sets the PlacementHealthy condition the binding
// status controller writes: True since the given second.
func (b *bindingWrapper) placementHealthySince(seconds int) *bindingWrapper {
	b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{
		Type: workv1alpha2.PlacementHealthy, Status: metav1.ConditionTrue, Reason: workv1alpha2.PlacementHealthyReason,
		LastTransitionTime: *mt(seconds),
	})
	return b
}

func (b *bindingWrapper) unscheduled() *bindingWrapper {
	b.Status.SchedulerObservedGeneration = b.Generation - 1
	return b
}

func (b *bindingWrapper) noClusterFit(msg string) *bindingWrapper {
	b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{
		Type: workv1alpha2.Scheduled, Status: metav1.ConditionFalse, Reason: workv1alpha2.BindingReasonNoClusterFit,
		Message: msg, LastTransitionTime: *mt(0), ObservedGeneration: b.Generation,
	})
	return b
}

// withScheduled sets the Scheduled condition, observed at the binding's
// generation plus generationOffset.
func (b *bindingWrapper) withScheduled(status metav1.ConditionStatus, reason string, generationOffset int64) *bindingWrapper {
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{
		Type: workv1alpha2.Scheduled, Status: status, Reason: reason, LastTransitionTime: *mt(0),
		ObservedGeneration: b.Generation + generationOffset,
	})
	return b
}

// staleReport makes the binding's status describe the placement before the
// scheduler's last change: the PlacementHealthy condition names every
// cluster with one replica fewer than spec.clusters gives it.
func (b *bindingWrapper) staleReport() *bindingWrapper {
	b.stale = true
	return b
}

// obj returns the binding, with the PlacementHealthy condition the binding
// status controller writes with its aggregatedStatus (unless the test set
// one): True, naming the placement, when every cluster reports Healthy.
func (b *bindingWrapper) obj() *workv1alpha2.ResourceBinding {
	out := b.ResourceBinding.DeepCopy()
	reportPlacement(&out.Spec, &out.Status)
	if b.stale {
		c := meta.FindStatusCondition(out.Status.Conditions, workv1alpha2.PlacementHealthy)
		before := make([]workv1alpha2.TargetCluster, len(out.Spec.Clusters))
		for i, t := range out.Spec.Clusters {
			before[i] = workv1alpha2.TargetCluster{Name: t.Name, Replicas: t.Replicas - 1}
		}
		c.Message = workv1alpha2.PlacementHealthyMessage(before)
	}
	return out
}

// reportPlacement writes the PlacementHealthy condition for status's
// aggregatedStatus, as the binding status controller does, keeping the
// transition time of one already there.
func reportPlacement(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) {
	if !workv1alpha2.IsPlacementHealthy(spec.Clusters, status.AggregatedStatus) {
		return
	}
	c := meta.FindStatusCondition(status.Conditions, workv1alpha2.PlacementHealthy)
	if c == nil {
		status.Conditions = append(status.Conditions, metav1.Condition{
			Type: workv1alpha2.PlacementHealthy, Status: metav1.ConditionTrue, Reason: workv1alpha2.PlacementHealthyReason,
			LastTransitionTime: *mt(0),
		})
		c = &status.Conditions[len(status.Conditions)-1]
	}
	if c.Status == metav1.ConditionTrue && c.Message == "" {
		c.Message = workv1alpha2.PlacementHealthyMessage(spec.Clusters)
	}
}

// makeTask builds an eviction task created at the given second.
func makeTask(from string, mode policyv1alpha1.PurgeMode, created int, before ...string) workv1alpha2.GracefulEvictionTask {
	t := workv1alpha2.GracefulEvictionTask{
		FromCluster:            from,
		PurgeMode:              mode,
		Reason:                 workv1alpha2.EvictionReasonApplicationFailure,
		Producer:               workv1alpha2.EvictionProducerRBApplicationFailover,
		ClustersBeforeFailover: before,
		CreationTimestamp:      mt(created),
	}
	if mode == policyv1alpha1.PurgeModeNever {
		t.SuppressDeletion = ptr.To(true)
	}
	return t
}

func withGrace(t workv1alpha2.GracefulEvictionTask, s int32) workv1alpha2.GracefulEvictionTask {
	t.GracePeriodSeconds = ptr.To(s)
	return t
}

func withState(t workv1alpha2.GracefulEvictionTask, kv ...string) workv1alpha2.GracefulEvictionTask {
	t.PreservedLabelState = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		t.PreservedLabelState[kv[i]] = kv[i+1]
	}
	return t
}

func withReason(t workv1alpha2.GracefulEvictionTask, reason string) workv1alpha2.GracefulEvictionTask {
	t.Reason = reason
	return t
}

func withSuppress(t workv1alpha2.GracefulEvictionTask, v *bool) workv1alpha2.GracefulEvictionTask {
	t.SuppressDeletion = v
	return t
}

func rule(alias, path string) policyv1alpha1.StatePreservationRule {
	return policyv1alpha1.StatePreservationRule{AliasLabelName: alias, JSONPath: path}
}
