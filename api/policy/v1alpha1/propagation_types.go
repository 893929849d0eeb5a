package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=pp,categories={karmada-io,lifeboat}
// +kubebuilder:printcolumn:name="Conflict-Resolution",type=string,JSONPath=`.spec.conflictResolution`
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Accepted")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PropagationPolicy selects namespaced resources in its own namespace and
// says which member clusters they go to and how they fail over.
type PropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the propagation policy.
	// +required
	Spec PropagationSpec `json:"spec"`

	// Status is a Lifeboat extension: the Accepted condition.
	// +optional
	Status PolicyStatus `json:"status,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cpp,categories={karmada-io,lifeboat}
// +kubebuilder:printcolumn:name="Conflict-Resolution",type=string,JSONPath=`.spec.conflictResolution`
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Accepted")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterPropagationPolicy is a PropagationPolicy that may select
// cluster-scoped resources and namespaced resources in any namespace. A
// matching PropagationPolicy always wins over a ClusterPropagationPolicy.
type ClusterPropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the propagation policy.
	// +required
	Spec PropagationSpec `json:"spec"`

	// Status is a Lifeboat extension: the Accepted condition.
	// +optional
	Status PolicyStatus `json:"status,omitempty"`
}

// PropagationSpec is shared by PropagationPolicy and
// ClusterPropagationPolicy.
type PropagationSpec struct {
	// ResourceSelectors select the resource templates this policy applies
	// to. A template matches when any selector matches.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	ResourceSelectors []ResourceSelector `json:"resourceSelectors"`

	// Association is the old name of PropagateDeps.
	// Deprecated: use PropagateDeps.
	// +optional
	Association bool `json:"association,omitempty"`

	// PropagateDeps propagates the objects a workload references
	// (ConfigMaps, Secrets, PVCs, ServiceAccounts, ...) along with it; they
	// follow the workload when it fails over.
	// +optional
	PropagateDeps bool `json:"propagateDeps,omitempty"`

	// Placement says which clusters the resources may go to and how
	// replicas are spread.
	// +optional
	Placement Placement `json:"placement,omitempty"`

	// Priority decides between several policies matching one template:
	// the higher explicit priority wins. Only effective among policies of
	// the same kind.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Priority *int32 `json:"priority,omitempty"`

	// Preemption says whether this policy may take over templates already
	// claimed by a policy of lower priority.
	// +optional
	// +kubebuilder:default=Never
	// +kubebuilder:validation:Enum=Always;Never
	Preemption PreemptionBehavior `json:"preemption,omitempty"`

	// DependentOverrides lists OverridePolicies (ClusterOverridePolicies for
	// a ClusterPropagationPolicy) that must exist before the policy is
	// applied to a template.
	// +optional
	DependentOverrides []string `json:"dependentOverrides,omitempty"`

	// SchedulerName is the scheduler that places the resources.
	// +optional
	// +kubebuilder:default="default-scheduler"
	SchedulerName string `json:"schedulerName,omitempty"`

	// Failover says how the resources fail over when an application or a
	// cluster fails. Nil disables application failover.
	// +optional
	Failover *FailoverBehavior `json:"failover,omitempty"`

	// ConflictResolution says what to do when the resource already exists in
	// a member cluster and is not managed by the control plane: Abort
	// (default) or Overwrite.
	// +optional
	// +kubebuilder:default=Abort
	// +kubebuilder:validation:Enum=Abort;Overwrite
	ConflictResolution ConflictResolution `json:"conflictResolution,omitempty"`

	// ActivationPreference says when policy changes reach the resources.
	// Empty applies them at once; Lazy waits for the next change of the
	// template itself.
	// +optional
	// +kubebuilder:validation:Enum=Lazy
	ActivationPreference ActivationPreference `json:"activationPreference,omitempty"`

	// Suspension pauses dispatching of the resources to member clusters.
	// +optional
	Suspension *Suspension `json:"suspension,omitempty"`

	// PreserveResourcesOnDeletion keeps the member copies when the template
	// is deleted from the control plane.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`

	// SchedulePriority orders the scheduling queue.
	// +optional
	SchedulePriority *SchedulePriority `json:"schedulePriority,omitempty"`
}

// ResourceSelector selects resource templates of one kind.
type ResourceSelector struct {
	// APIVersion of the target resources, e.g. "apps/v1".
	// +required
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`

	// Kind of the target resources, e.g. "Deployment".
	// +required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// Namespace of the target resources. Empty means the policy's own
	// namespace for a PropagationPolicy and every namespace for a
	// ClusterPropagationPolicy.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the target resource. When set, LabelSelector is ignored.
	// +optional
	Name string `json:"name,omitempty"`

	// LabelSelector selects resources by label. Ignored when Name is set.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// Placement says where resources may go.
// +kubebuilder:validation:XValidation:rule="!(has(self.clusterAffinity) && has(self.clusterAffinities))",message="clusterAffinity and clusterAffinities cannot both be set"
type Placement struct {
	// ClusterAffinity restricts the candidate clusters. Mutually exclusive
	// with ClusterAffinities.
	// +optional
	ClusterAffinity *ClusterAffinity `json:"clusterAffinity,omitempty"`

	// ClusterAffinities are ordered groups of candidate clusters: the
	// scheduler uses the first group that fits and moves to the next one
	// when it no longer does. Mutually exclusive with ClusterAffinity.
	// +optional
	// +listType=map
	// +listMapKey=affinityName
	// +kubebuilder:validation:MaxItems=32
	ClusterAffinities []ClusterAffinityTerm `json:"clusterAffinities,omitempty"`

	// ClusterTolerations let the resources go to, or stay on, clusters with
	// matching taints. They are validated as Kubernetes validates pod
	// tolerations, except that the operator is Exists or Equal and the
	// effect NoSchedule, NoExecute or empty (both). hack/crdschema adds
	// what corev1.Toleration cannot carry as markers: tolerationSeconds
	// from 0 to 2147483647, the key length, and the value's label value
	// format.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:XValidation:rule="!has(self.operator) || self.operator in ['', 'Exists', 'Equal']",message="clusterTolerations[].operator must be Exists or Equal (Lt and Gt are not supported)",fieldPath=".operator"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.effect) || self.effect in ['', 'NoSchedule', 'NoExecute']",message="clusterTolerations[].effect must be NoSchedule, NoExecute, or empty to match both",fieldPath=".effect"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.key) || size(self.key) == 0 || !format.qualifiedName().validate(self.key).hasValue()",message="clusterTolerations[].key must be empty or a valid label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (alphanumerics, '-', '_' or '.') that starts and ends with an alphanumeric",fieldPath=".key"
	// +kubebuilder:validation:items:XValidation:rule="(has(self.key) && size(self.key) > 0) || (has(self.operator) && self.operator == 'Exists')",message="clusterTolerations[].operator must be Exists when the key is empty (an empty key with Exists tolerates every taint)",fieldPath=".operator"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.operator) || self.operator != 'Exists' || !has(self.value) || size(self.value) == 0",message="clusterTolerations[].value must be empty when the operator is Exists",fieldPath=".value"
	ClusterTolerations []corev1.Toleration `json:"clusterTolerations,omitempty"`

	// SpreadConstraints say how the selected clusters are spread over
	// clusters, regions, zones or providers.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	SpreadConstraints []SpreadConstraint `json:"spreadConstraints,omitempty"`

	// ReplicaScheduling says how replicas are assigned to the selected
	// clusters. Nil means Duplicated.
	// +optional
	ReplicaScheduling *ReplicaSchedulingStrategy `json:"replicaScheduling,omitempty"`
}

// ClusterAffinity selects clusters. A cluster matches when every set
// criterion matches.
type ClusterAffinity struct {
	// LabelSelector matches the labels of Cluster objects.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`

	// FieldSelector matches spec fields of Cluster objects (provider,
	// region, zone).
	// +optional
	FieldSelector *FieldSelector `json:"fieldSelector,omitempty"`

	// ClusterNames lists the clusters that may be selected.
	// +optional
	ClusterNames []string `json:"clusterNames,omitempty"`

	// Exclude lists clusters that are never selected.
	// +optional
	Exclude []string `json:"exclude,omitempty"`
}

// ClusterAffinityTerm is one named group of clusters in ClusterAffinities.
type ClusterAffinityTerm struct {
	// AffinityName names the group; unique within the placement.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	AffinityName string `json:"affinityName"`

	ClusterAffinity `json:",inline"`
}

// FieldSelector matches fields of Cluster objects.
type FieldSelector struct {
	// MatchExpressions are ANDed. Keys: provider, region, zone. Operators:
	// In and NotIn (with values), Exists and DoesNotExist (without).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:XValidation:rule="self.key in ['provider', 'region', 'zone']",message="fieldSelector.matchExpressions[].key must be provider, region or zone",fieldPath=".key"
	// +kubebuilder:validation:items:XValidation:rule="self.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist']",message="fieldSelector.matchExpressions[].operator must be In, NotIn, Exists or DoesNotExist",fieldPath=".operator"
	// +kubebuilder:validation:items:XValidation:rule="!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",message="fieldSelector.matchExpressions[].values must not be empty when the operator is In or NotIn",fieldPath=".values",reason="FieldValueRequired"
	// +kubebuilder:validation:items:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",message="fieldSelector.matchExpressions[].values must be empty when the operator is Exists or DoesNotExist",fieldPath=".values",reason="FieldValueForbidden"
	MatchExpressions []corev1.NodeSelectorRequirement `json:"matchExpressions,omitempty"`
}

// SpreadFieldValue is a Cluster field clusters can be grouped by.
type SpreadFieldValue string

// Fields a spread constraint can group by.
const (
	SpreadByFieldCluster  SpreadFieldValue = "cluster"
	SpreadByFieldRegion   SpreadFieldValue = "region"
	SpreadByFieldZone     SpreadFieldValue = "zone"
	SpreadByFieldProvider SpreadFieldValue = "provider"
)

// SpreadConstraint bounds how many groups of clusters the resources span.
// +kubebuilder:validation:XValidation:rule="!(has(self.spreadByField) && size(self.spreadByField) > 0 && has(self.spreadByLabel) && size(self.spreadByLabel) > 0)",message="spreadByField and spreadByLabel cannot both be set"
// +kubebuilder:validation:XValidation:rule="!has(self.maxGroups) || self.maxGroups == 0 || !has(self.minGroups) || self.minGroups <= self.maxGroups",message="minGroups must not exceed maxGroups"
type SpreadConstraint struct {
	// SpreadByField groups clusters by a Cluster field. Mutually exclusive
	// with SpreadByLabel.
	// +optional
	// +kubebuilder:validation:Enum=cluster;region;zone;provider
	SpreadByField SpreadFieldValue `json:"spreadByField,omitempty"`

	// SpreadByLabel groups clusters by the value of a Cluster label; a
	// label key. Mutually exclusive with SpreadByField.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !format.qualifiedName().validate(self).hasValue()",message="spreadByLabel must be a valid label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (alphanumerics, '-', '_' or '.') that starts and ends with an alphanumeric"
	SpreadByLabel string `json:"spreadByLabel,omitempty"`

	// MaxGroups is the most groups to select; 0 means no limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	MaxGroups int `json:"maxGroups,omitempty"`

	// MinGroups is the fewest groups to select.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	MinGroups int `json:"minGroups,omitempty"`
}

// ReplicaSchedulingType says whether replicas are copied or divided.
type ReplicaSchedulingType string

// Replica scheduling types.
const (
	// ReplicaSchedulingTypeDuplicated gives every selected cluster all
	// replicas.
	ReplicaSchedulingTypeDuplicated ReplicaSchedulingType = "Duplicated"
	// ReplicaSchedulingTypeDivided divides the replicas among the selected
	// clusters.
	ReplicaSchedulingTypeDivided ReplicaSchedulingType = "Divided"
)

// ReplicaDivisionPreference says how divided replicas are split.
type ReplicaDivisionPreference string

// Replica division preferences.
const (
	// ReplicaDivisionPreferenceAggregated packs replicas into as few
	// clusters as possible.
	ReplicaDivisionPreferenceAggregated ReplicaDivisionPreference = "Aggregated"
	// ReplicaDivisionPreferenceWeighted splits replicas by weight.
	ReplicaDivisionPreferenceWeighted ReplicaDivisionPreference = "Weighted"
)

// DynamicWeightFactor is where dynamic weights come from.
type DynamicWeightFactor string

// DynamicWeightByAvailableReplicas weighs clusters by how many replicas
// they can still run.
const DynamicWeightByAvailableReplicas DynamicWeightFactor = "AvailableReplicas"

// ReplicaSchedulingStrategy says how replicas are assigned.
type ReplicaSchedulingStrategy struct {
	// ReplicaSchedulingType is Duplicated or Divided.
	// +optional
	// +kubebuilder:default=Divided
	// +kubebuilder:validation:Enum=Duplicated;Divided
	ReplicaSchedulingType ReplicaSchedulingType `json:"replicaSchedulingType,omitempty"`

	// ReplicaDivisionPreference applies to Divided: Aggregated or Weighted.
	// +optional
	// +kubebuilder:validation:Enum=Aggregated;Weighted
	ReplicaDivisionPreference ReplicaDivisionPreference `json:"replicaDivisionPreference,omitempty"`

	// WeightPreference applies to Divided+Weighted.
	// +optional
	WeightPreference *ClusterPreferences `json:"weightPreference,omitempty"`
}

// ClusterPreferences give clusters weights.
type ClusterPreferences struct {
	// StaticWeightList gives fixed weights to clusters.
	// +optional
	// +kubebuilder:validation:MaxItems=128
	StaticWeightList []StaticClusterWeight `json:"staticWeightList,omitempty"`

	// DynamicWeight derives weights from the clusters' state. Takes
	// precedence over StaticWeightList.
	// +optional
	// +kubebuilder:validation:Enum=AvailableReplicas
	DynamicWeight DynamicWeightFactor `json:"dynamicWeight,omitempty"`
}

// StaticClusterWeight is the weight of the clusters matching TargetCluster.
type StaticClusterWeight struct {
	// TargetCluster selects the clusters.
	// +required
	TargetCluster ClusterAffinity `json:"targetCluster"`

	// Weight of the selected clusters, from 1 to 2147483647.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	Weight int64 `json:"weight"`
}

// PreemptionBehavior says whether a policy takes over claimed templates.
type PreemptionBehavior string

// Preemption behaviours.
const (
	PreemptAlways PreemptionBehavior = "Always"
	PreemptNever  PreemptionBehavior = "Never"
)

// ConflictResolution says what to do with an existing, unmanaged member
// resource.
type ConflictResolution string

// Conflict resolutions.
const (
	ConflictOverwrite ConflictResolution = "Overwrite"
	ConflictAbort     ConflictResolution = "Abort"
)

// ActivationPreference says when policy changes reach resources.
type ActivationPreference string

// LazyActivation applies policy changes only on the next template change.
const LazyActivation ActivationPreference = "Lazy"

// Suspension pauses work on the selected resources.
type Suspension struct {
	// Dispatching stops dispatching the resources to every member cluster.
	// +optional
	Dispatching *bool `json:"dispatching,omitempty"`

	// DispatchingOnClusters stops dispatching to the listed clusters.
	// +optional
	DispatchingOnClusters *SuspendClusters `json:"dispatchingOnClusters,omitempty"`
}

// SuspendClusters lists clusters.
type SuspendClusters struct {
	// ClusterNames lists the clusters.
	// +optional
	ClusterNames []string `json:"clusterNames,omitempty"`
}

// PriorityClassSource says where a scheduling priority comes from.
type PriorityClassSource string

// KubePriorityClass reads the value of a scheduling.k8s.io PriorityClass.
const KubePriorityClass PriorityClassSource = "KubePriorityClass"

// SchedulePriority names the priority class of the resources.
type SchedulePriority struct {
	// PriorityClassSource is where the priority class lives.
	// +required
	// +kubebuilder:validation:Enum=KubePriorityClass
	PriorityClassSource PriorityClassSource `json:"priorityClassSource"`

	// PriorityClassName names the priority class.
	// +required
	PriorityClassName string `json:"priorityClassName"`
}

// +kubebuilder:object:root=true

// PropagationPolicyList is a list of PropagationPolicies.
type PropagationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PropagationPolicy `json:"items"`
}

// +kubebuilder:object:root=true

// ClusterPropagationPolicyList is a list of ClusterPropagationPolicies.
type ClusterPropagationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPropagationPolicy `json:"items"`
}
