// Package schedtesting has object builders for the scheduler's tests:
// MakeCluster("member1").Region("eu").Taint(...).Obj(),
// MakeBinding("default", "nginx-deployment").Replicas(2).Placement(p).Obj()
// and MakePlacement().ClusterNames(...).SpreadByCluster(1, 1).Obj().
package schedtesting

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// ClusterWrapper builds a Cluster.
type ClusterWrapper struct{ clusterv1alpha1.Cluster }

// MakeCluster returns a Push cluster with Ready=True and no taints.
func MakeCluster(name string) *ClusterWrapper {
	w := &ClusterWrapper{clusterv1alpha1.Cluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1alpha1.SchemeGroupVersion.String(), Kind: "Cluster"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec:       clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push},
	}}
	return w.Ready(metav1.ConditionTrue)
}

// Obj returns a copy of the cluster.
func (w *ClusterWrapper) Obj() *clusterv1alpha1.Cluster { return w.DeepCopy() }

// Label sets a label.
func (w *ClusterWrapper) Label(k, v string) *ClusterWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// Provider sets spec.provider.
func (w *ClusterWrapper) Provider(p string) *ClusterWrapper { w.Spec.Provider = p; return w }

// Region sets spec.region.
func (w *ClusterWrapper) Region(r string) *ClusterWrapper { w.Spec.Region = r; return w }

// Zones sets spec.zones.
func (w *ClusterWrapper) Zones(z ...string) *ClusterWrapper { w.Spec.Zones = z; return w }

// Taint adds a taint.
func (w *ClusterWrapper) Taint(key, value string, effect corev1.TaintEffect) *ClusterWrapper {
	w.Spec.Taints = append(w.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return w
}

// Ready sets the Ready condition.
func (w *ClusterWrapper) Ready(status metav1.ConditionStatus) *ClusterWrapper {
	for i := range w.Status.Conditions {
		if w.Status.Conditions[i].Type == clusterv1alpha1.ClusterConditionReady {
			w.Status.Conditions[i].Status = status
			return w
		}
	}
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{
		Type: clusterv1alpha1.ClusterConditionReady, Status: status, Reason: "Test", LastTransitionTime: metav1.Unix(0, 0),
	})
	return w
}

// Deleting sets a deletionTimestamp (and a finalizer, as the fake client
// requires).
func (w *ClusterWrapper) Deleting() *ClusterWrapper {
	now := metav1.Unix(1, 0)
	w.DeletionTimestamp = &now
	w.Finalizers = append(w.Finalizers, clusterv1alpha1.ClusterControllerFinalizer)
	return w
}

// APIs adds an API enablement.
func (w *ClusterWrapper) APIs(groupVersion string, kinds ...string) *ClusterWrapper {
	e := clusterv1alpha1.APIEnablement{GroupVersion: groupVersion}
	for _, k := range kinds {
		e.Resources = append(e.Resources, clusterv1alpha1.APIResource{Kind: k})
	}
	w.Status.APIEnablements = append(w.Status.APIEnablements, e)
	return w
}

// APIsComplete sets the CompleteAPIEnablements condition.
func (w *ClusterWrapper) APIsComplete(status metav1.ConditionStatus) *ClusterWrapper {
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{
		Type: clusterv1alpha1.ClusterConditionCompleteAPIEnablements, Status: status, Reason: "Test", LastTransitionTime: metav1.Unix(0, 0),
	})
	return w
}

// Free sets a resource summary with room for pods more pods and cpu more
// CPU (e.g. "2" or "500m"); cpu "" leaves CPU out.
func (w *ClusterWrapper) Free(pods int64, cpu string) *ClusterWrapper {
	alloc := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods+10, resource.DecimalSI)}
	used := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(10, resource.DecimalSI)}
	if cpu != "" {
		q := resource.MustParse(cpu)
		q.Add(resource.MustParse("1"))
		alloc[corev1.ResourceCPU] = q
		used[corev1.ResourceCPU] = resource.MustParse("1")
	}
	w.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{Allocatable: alloc, Allocated: used}
	return w
}

// PlacementWrapper builds a Placement.
type PlacementWrapper struct{ policyv1alpha1.Placement }

// MakePlacement returns an empty placement (every cluster, Duplicated).
func MakePlacement() *PlacementWrapper { return &PlacementWrapper{} }

// Obj returns a copy of the placement.
func (w *PlacementWrapper) Obj() *policyv1alpha1.Placement { return w.DeepCopy() }

func (w *PlacementWrapper) affinity() *policyv1alpha1.ClusterAffinity {
	if w.ClusterAffinity == nil {
		w.ClusterAffinity = &policyv1alpha1.ClusterAffinity{}
	}
	return w.ClusterAffinity
}

// ClusterNames sets clusterAffinity.clusterNames.
func (w *PlacementWrapper) ClusterNames(names ...string) *PlacementWrapper {
	w.affinity().ClusterNames = names
	return w
}

// Exclude sets clusterAffinity.exclude.
func (w *PlacementWrapper) Exclude(names ...string) *PlacementWrapper {
	w.affinity().Exclude = names
	return w
}

// LabelSelector sets clusterAffinity.labelSelector to matchLabels.
func (w *PlacementWrapper) LabelSelector(matchLabels map[string]string) *PlacementWrapper {
	w.affinity().LabelSelector = &metav1.LabelSelector{MatchLabels: matchLabels}
	return w
}

// Field adds a clusterAffinity.fieldSelector requirement.
func (w *PlacementWrapper) Field(key string, op corev1.NodeSelectorOperator, values ...string) *PlacementWrapper {
	a := w.affinity()
	if a.FieldSelector == nil {
		a.FieldSelector = &policyv1alpha1.FieldSelector{}
	}
	a.FieldSelector.MatchExpressions = append(a.FieldSelector.MatchExpressions, corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values})
	return w
}

// AffinityTerm adds a clusterAffinities term selecting clusterNames.
func (w *PlacementWrapper) AffinityTerm(name string, clusterNames ...string) *PlacementWrapper {
	w.ClusterAffinities = append(w.ClusterAffinities, policyv1alpha1.ClusterAffinityTerm{
		AffinityName: name, ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: clusterNames},
	})
	return w
}

// Tolerate adds a toleration (operator Exists when value is "").
func (w *PlacementWrapper) Tolerate(key, value string, effect corev1.TaintEffect) *PlacementWrapper {
	t := corev1.Toleration{Key: key, Value: value, Effect: effect, Operator: corev1.TolerationOpEqual}
	if value == "" {
		t.Operator = corev1.TolerationOpExists
	}
	w.ClusterTolerations = append(w.ClusterTolerations, t)
	return w
}

// Spread adds a spreadByField constraint.
func (w *PlacementWrapper) Spread(field policyv1alpha1.SpreadFieldValue, minGroups, maxGroups int) *PlacementWrapper {
	w.SpreadConstraints = append(w.SpreadConstraints, policyv1alpha1.SpreadConstraint{SpreadByField: field, MinGroups: minGroups, MaxGroups: maxGroups})
	return w
}

// Duplicated sets replicaScheduling Duplicated.
func (w *PlacementWrapper) Duplicated() *PlacementWrapper {
	w.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}
	return w
}

// Divided sets Divided/Weighted without a weightPreference (every cluster
// weighs 1).
func (w *PlacementWrapper) Divided() *PlacementWrapper {
	w.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
	}
	return w
}

// StaticWeights sets Divided/Weighted with one weight per cluster name.
func (w *PlacementWrapper) StaticWeights(weights map[string]int64) *PlacementWrapper {
	wp := &policyv1alpha1.ClusterPreferences{}
	for name, weight := range weights {
		wp.StaticWeightList = append(wp.StaticWeightList, policyv1alpha1.StaticClusterWeight{
			TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{name}}, Weight: weight,
		})
	}
	w.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
		WeightPreference:          wp,
	}
	return w
}

// DynamicWeight sets Divided/Weighted by available replicas.
func (w *PlacementWrapper) DynamicWeight() *PlacementWrapper {
	w.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
		WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas},
	}
	return w
}

// Aggregated sets Divided/Aggregated.
func (w *PlacementWrapper) Aggregated() *PlacementWrapper {
	w.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated,
	}
	return w
}

// BindingWrapper builds a ResourceBinding for a Deployment.
type BindingWrapper struct{ workv1alpha2.ResourceBinding }

// MakeBinding returns a binding of Deployment namespace/name (binding name
// <name>-deployment) with generation 1, claimed by a PropagationPolicy.
func MakeBinding(namespace, name string) *BindingWrapper {
	return &BindingWrapper{workv1alpha2.ResourceBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: workv1alpha2.SchemeGroupVersion.String(), Kind: "ResourceBinding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-deployment", Generation: 1,
			Labels: map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "policy-" + name}},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: namespace, Name: name, UID: types.UID(name + "-uid")},
		},
	}}
}

// Obj returns a copy of the binding.
func (w *BindingWrapper) Obj() *workv1alpha2.ResourceBinding { return w.DeepCopy() }

// Released removes the policy's claim, as the detector does when the
// policy is deleted or no longer selects the template.
func (w *BindingWrapper) Released() *BindingWrapper {
	w.Labels = nil
	return w
}

// SpecObj returns a copy of the binding's spec.
func (w *BindingWrapper) SpecObj() *workv1alpha2.ResourceBindingSpec { return w.Spec.DeepCopy() }

// Resource sets spec.resource's apiVersion and kind.
func (w *BindingWrapper) Resource(apiVersion, kind string) *BindingWrapper {
	w.Spec.Resource.APIVersion, w.Spec.Resource.Kind = apiVersion, kind
	return w
}

// Replicas sets spec.replicas.
func (w *BindingWrapper) Replicas(n int32) *BindingWrapper { w.Spec.Replicas = n; return w }

// CPU sets a per-replica CPU request.
func (w *BindingWrapper) CPU(cpu string) *BindingWrapper {
	w.Spec.ReplicaRequirements = &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	return w
}

// Placement sets spec.placement.
func (w *BindingWrapper) Placement(p *policyv1alpha1.Placement) *BindingWrapper {
	w.Spec.Placement = p
	return w
}

// Cluster adds a spec.clusters entry.
func (w *BindingWrapper) Cluster(name string, replicas int32) *BindingWrapper {
	w.Spec.Clusters = append(w.Spec.Clusters, workv1alpha2.TargetCluster{Name: name, Replicas: replicas})
	return w
}

// EvictionTask adds a graceful eviction task from cluster.
func (w *BindingWrapper) EvictionTask(cluster string) *BindingWrapper {
	w.Spec.GracefulEvictionTasks = append(w.Spec.GracefulEvictionTasks, workv1alpha2.GracefulEvictionTask{
		FromCluster: cluster, Reason: workv1alpha2.EvictionReasonApplicationFailure, Producer: workv1alpha2.EvictionProducerRBApplicationFailover,
	})
	return w
}

// SchedulerName sets spec.schedulerName.
func (w *BindingWrapper) SchedulerName(n string) *BindingWrapper { w.Spec.SchedulerName = n; return w }

// Generation sets metadata.generation.
func (w *BindingWrapper) Generation(g int64) *BindingWrapper { w.ObjectMeta.Generation = g; return w }

// Annotation sets an annotation.
func (w *BindingWrapper) Annotation(k, v string) *BindingWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

// RescheduleTriggeredAt sets spec.rescheduleTriggeredAt.
func (w *BindingWrapper) RescheduleTriggeredAt(t metav1.Time) *BindingWrapper {
	w.Spec.RescheduleTriggeredAt = &t
	return w
}

// SchedulerStatus sets the scheduler's status fields.
func (w *BindingWrapper) SchedulerStatus(observedGeneration int64, lastScheduled *metav1.Time, affinityName string) *BindingWrapper {
	w.ResourceBinding.Status.SchedulerObservedGeneration = observedGeneration
	w.ResourceBinding.Status.LastScheduledTime = lastScheduled
	w.ResourceBinding.Status.SchedulerObservedAffinityName = affinityName
	return w
}

// Condition sets a status condition, replacing one of the same type.
func (w *BindingWrapper) Condition(c metav1.Condition) *BindingWrapper {
	for i := range w.ResourceBinding.Status.Conditions {
		if w.ResourceBinding.Status.Conditions[i].Type == c.Type {
			w.ResourceBinding.Status.Conditions[i] = c
			return w
		}
	}
	w.ResourceBinding.Status.Conditions = append(w.ResourceBinding.Status.Conditions, c)
	return w
}
