package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=rb,categories={karmada-io,lifeboat}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Scheduled",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].status`
// +kubebuilder:printcolumn:name="FullyApplied",type=string,JSONPath=`.status.conditions[?(@.type=="FullyApplied")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ResourceBinding joins a namespaced resource template with the policy
// that claimed it. The scheduler writes spec.clusters, failover moves
// clusters into spec.gracefulEvictionTasks, and the status aggregates what
// the members report.
type ResourceBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the binding.
	// +required
	Spec ResourceBindingSpec `json:"spec"`

	// Status is the observed state of the binding.
	// +optional
	Status ResourceBindingStatus `json:"status,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=crb,categories={karmada-io,lifeboat}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Scheduled",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].status`
// +kubebuilder:printcolumn:name="FullyApplied",type=string,JSONPath=`.status.conditions[?(@.type=="FullyApplied")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterResourceBinding is the ResourceBinding of a cluster-scoped
// resource template.
type ClusterResourceBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the binding.
	// +required
	Spec ResourceBindingSpec `json:"spec"`

	// Status is the observed state of the binding.
	// +optional
	Status ResourceBindingStatus `json:"status,omitempty"`
}

// ResourceBindingSpec is the desired state of a binding.
type ResourceBindingSpec struct {
	// Resource is the resource template.
	// +required
	Resource ObjectReference `json:"resource"`

	// PropagateDeps is copied from the policy.
	// +optional
	PropagateDeps bool `json:"propagateDeps,omitempty"`

	// ReplicaRequirements are the per-replica needs of the workload.
	// +optional
	ReplicaRequirements *ReplicaRequirements `json:"replicaRequirements,omitempty"`

	// Replicas is the desired replica count of the workload.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Replicas int32 `json:"replicas,omitempty"`

	// Clusters is the scheduling result: the clusters that get the resource
	// and their replicas. Written by the scheduler; failover removes
	// evicted clusters from it.
	// +optional
	Clusters []TargetCluster `json:"clusters,omitempty"`

	// Placement is copied from the policy.
	// +optional
	Placement *policyv1alpha1.Placement `json:"placement,omitempty"`

	// GracefulEvictionTasks are clusters being evicted: removed from
	// Clusters, their old copy kept or removed according to the task's
	// purge mode until the task is done. At most one task per cluster.
	// +optional
	GracefulEvictionTasks []GracefulEvictionTask `json:"gracefulEvictionTasks,omitempty"`

	// RequiredBy lists the bindings that depend on this one (dependency
	// propagation) and their clusters.
	// +optional
	RequiredBy []BindingSnapshot `json:"requiredBy,omitempty"`

	// SchedulerName is copied from the policy.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// Failover is copied from the policy.
	// +optional
	Failover *policyv1alpha1.FailoverBehavior `json:"failover,omitempty"`

	// ConflictResolution is copied from the policy.
	// +optional
	// +kubebuilder:default=Abort
	// +kubebuilder:validation:Enum=Abort;Overwrite
	ConflictResolution policyv1alpha1.ConflictResolution `json:"conflictResolution,omitempty"`

	// RescheduleTriggeredAt asks for a full reschedule when it is later
	// than status.lastScheduledTime.
	// +optional
	RescheduleTriggeredAt *metav1.Time `json:"rescheduleTriggeredAt,omitempty"`

	// Suspension pauses scheduling or dispatching.
	// +optional
	Suspension *Suspension `json:"suspension,omitempty"`

	// PreserveResourcesOnDeletion is copied from the policy.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`

	// SchedulePriority orders the scheduling queue.
	// +optional
	SchedulePriority *SchedulePriority `json:"schedulePriority,omitempty"`
}

// ObjectReference points at a resource template.
type ObjectReference struct {
	// APIVersion of the template.
	// +required
	APIVersion string `json:"apiVersion"`

	// Kind of the template.
	// +required
	Kind string `json:"kind"`

	// Namespace of the template; empty for cluster-scoped templates.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the template.
	// +required
	Name string `json:"name"`

	// UID of the template.
	// +optional
	UID types.UID `json:"uid,omitempty"`

	// ResourceVersion of the template the binding was built from.
	// +optional
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// ReplicaRequirements are the per-replica needs of a workload.
type ReplicaRequirements struct {
	// NodeClaim are the node constraints of a replica.
	// +optional
	NodeClaim *NodeClaim `json:"nodeClaim,omitempty"`

	// ResourceRequest is the resource request of one replica.
	// +optional
	ResourceRequest corev1.ResourceList `json:"resourceRequest,omitempty"`

	// Namespace of the workload.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// PriorityClassName of the workload's pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// NodeClaim are the node constraints of a replica.
type NodeClaim struct {
	// HardNodeAffinity is the required node affinity.
	// +optional
	HardNodeAffinity *corev1.NodeSelector `json:"hardNodeAffinity,omitempty"`

	// NodeSelector is the pod's node selector.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations are the pod's tolerations.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// TargetCluster is one scheduled cluster.
type TargetCluster struct {
	// Name of the cluster.
	// +required
	Name string `json:"name"`

	// Replicas assigned to the cluster.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Replicas int32 `json:"replicas,omitempty"`
}

// GracefulEvictionTask is one cluster being evicted from a binding.
type GracefulEvictionTask struct {
	// FromCluster is the cluster being evicted.
	// +required
	FromCluster string `json:"fromCluster"`

	// PurgeMode says how the old copy is removed; copied from the policy
	// or the controller's default. Both vocabularies are accepted.
	// +optional
	// +kubebuilder:validation:Enum=Directly;Gracefully;Never;Immediately;Graciously
	PurgeMode policyv1alpha1.PurgeMode `json:"purgeMode,omitempty"`

	// Replicas the cluster had when it was evicted. Informational.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Replicas *int32 `json:"replicas,omitempty"`

	// Reason is a CamelCase reason: TaintUntolerated or ApplicationFailure.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`
	Reason string `json:"reason"`

	// Message says more about the eviction.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// Producer is the controller that made the task.
	// +required
	Producer string `json:"producer"`

	// GracePeriodSeconds is how long the old copy may be kept waiting for
	// the replacement; nil (or 0) uses the controller's default.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	GracePeriodSeconds *int32 `json:"gracePeriodSeconds,omitempty"`

	// SuppressDeletion true keeps the old copy until a user sets it to
	// false, which removes it at once.
	// +optional
	SuppressDeletion *bool `json:"suppressDeletion,omitempty"`

	// PreservedLabelState maps the policy's aliasLabelName to the value
	// captured from the failed copy; injected as labels into the new copy.
	// +optional
	PreservedLabelState map[string]string `json:"preservedLabelState,omitempty"`

	// ClustersBeforeFailover are the scheduled clusters just before the
	// eviction; used to find the replacement cluster.
	// +optional
	ClustersBeforeFailover []string `json:"clustersBeforeFailover,omitempty"`

	// CreationTimestamp is when the task was first seen by the
	// graceful-eviction controller.
	// +optional
	CreationTimestamp *metav1.Time `json:"creationTimestamp,omitempty"`
}

// BindingSnapshot is a dependent binding and its clusters.
type BindingSnapshot struct {
	// Namespace of the binding.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the binding.
	// +required
	Name string `json:"name"`

	// Clusters of the binding.
	// +optional
	Clusters []TargetCluster `json:"clusters,omitempty"`
}

// Suspension pauses work on a binding.
type Suspension struct {
	policyv1alpha1.Suspension `json:",inline"`

	// Scheduling stops scheduling the binding.
	// +optional
	Scheduling *bool `json:"scheduling,omitempty"`
}

// SchedulePriority is the resolved scheduling priority of a binding.
type SchedulePriority struct {
	// Priority is the value of the priority class; higher is scheduled
	// first.
	// +optional
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Priority int32 `json:"priority,omitempty"`
}

// ResourceBindingStatus is the observed state of a binding.
type ResourceBindingStatus struct {
	// SchedulerObservedGeneration is the generation the scheduler last
	// handled; at most 2^53-1, the largest integer every JSON client
	// represents exactly.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=9007199254740991
	SchedulerObservedGeneration int64 `json:"schedulerObservedGeneration,omitempty"`

	// SchedulerObservedAffinityName is the clusterAffinities term in use.
	// The JSON name keeps Karmada's spelling.
	// +optional
	SchedulerObservedAffinityName string `json:"schedulerObservingAffinityName,omitempty"`

	// LastScheduledTime is when the binding was last scheduled.
	// +optional
	LastScheduledTime *metav1.Time `json:"lastScheduledTime,omitempty"`

	// Conditions: Scheduled, FullyApplied, and Lifeboat's own conditions.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// AggregatedStatus holds one item per member cluster with a Work,
	// sorted by cluster name; it includes clusters that are only in
	// eviction tasks.
	// +optional
	AggregatedStatus []AggregatedStatusItem `json:"aggregatedStatus,omitempty"`

	// FailoverHistory is a Lifeboat extension: one entry per eviction,
	// oldest first, at most MaxFailoverHistoryItems (the oldest are dropped
	// first). It outlives the eviction tasks.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	FailoverHistory []FailoverHistoryItem `json:"failoverHistory,omitempty"`

	// UnhealthyClusters is a Lifeboat extension: the application-failover
	// timers. A cluster is listed from the first Unhealthy observation of
	// the application there until a Healthy one (Unknown neither starts
	// nor resets a timer). Kept in the status so a controller restart or a
	// leader change neither resets nor doubles a toleration window.
	// +optional
	// +listType=map
	// +listMapKey=clusterName
	UnhealthyClusters []UnhealthyCluster `json:"unhealthyClusters,omitempty"`
}

// AggregatedStatusItem is the status of the resource in one member.
type AggregatedStatusItem struct {
	// ClusterName is the member cluster.
	// +required
	ClusterName string `json:"clusterName"`

	// Status is the reflected status of the member object.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Status *runtime.RawExtension `json:"status,omitempty"`

	// Applied says whether the manifest was applied to the member.
	// +optional
	Applied bool `json:"applied,omitempty"`

	// AppliedMessage explains a failed apply.
	// +optional
	AppliedMessage string `json:"appliedMessage,omitempty"`

	// Health is the interpreted health of the member object.
	// +optional
	// +kubebuilder:validation:Enum=Healthy;Unhealthy;Unknown
	Health ResourceHealth `json:"health,omitempty"`
}

// ResourceHealth is the interpreted health of an object in one member.
type ResourceHealth string

// Health values.
const (
	// ResourceHealthy: the interpreter says the object is healthy.
	ResourceHealthy ResourceHealth = "Healthy"
	// ResourceUnhealthy: the interpreter says the object is not healthy.
	ResourceUnhealthy ResourceHealth = "Unhealthy"
	// ResourceUnknown: health could not be interpreted or observed.
	// Unknown is not Healthy: it does not reset an unhealthy timer.
	ResourceUnknown ResourceHealth = "Unknown"
)

// FailoverHistoryItem records one eviction. Lifeboat extension.
type FailoverHistoryItem struct {
	// Time is when the cluster was evicted.
	// +required
	Time metav1.Time `json:"time"`

	// Reason is the eviction reason, as in GracefulEvictionTask.
	// +required
	// +kubebuilder:validation:MaxLength=32
	Reason string `json:"reason"`

	// Producer is the controller that evicted the cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Producer string `json:"producer,omitempty"`

	// FromCluster is the evicted cluster.
	// +required
	FromCluster string `json:"fromCluster"`

	// PurgeMode is how the old copy was to be removed.
	// +optional
	PurgeMode policyv1alpha1.PurgeMode `json:"purgeMode,omitempty"`

	// ClustersBefore are the scheduled clusters just before the eviction.
	// +optional
	ClustersBefore []string `json:"clustersBefore,omitempty"`

	// ClustersAfter are the scheduled clusters once the replacement was
	// placed; empty until then.
	// +optional
	ClustersAfter []string `json:"clustersAfter,omitempty"`

	// PreservedLabelState is the state carried to the replacement.
	// +optional
	PreservedLabelState map[string]string `json:"preservedLabelState,omitempty"`

	// Message says more, e.g. why state could not be captured.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// ReplacementHealthyTime is when the replacement first became Healthy.
	// +optional
	ReplacementHealthyTime *metav1.Time `json:"replacementHealthyTime,omitempty"`
}

// UnhealthyCluster is a running application-failover timer. Lifeboat
// extension.
type UnhealthyCluster struct {
	// ClusterName is the member cluster.
	// +required
	ClusterName string `json:"clusterName"`

	// UnhealthySince is the first Unhealthy observation not followed by a
	// Healthy one.
	// +required
	UnhealthySince metav1.Time `json:"unhealthySince"`
}

// +kubebuilder:object:root=true

// ResourceBindingList is a list of ResourceBindings.
type ResourceBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceBinding `json:"items"`
}

// +kubebuilder:object:root=true

// ClusterResourceBindingList is a list of ClusterResourceBindings.
type ClusterResourceBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterResourceBinding `json:"items"`
}
