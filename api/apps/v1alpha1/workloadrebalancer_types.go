package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// MaxWorkloads bounds spec.workloads and status.observedWorkloads (the
// schema's maxItems): the workloads one rebalancer handles, however they
// are named.
const MaxWorkloads = 1024

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=workloadrebalancers,scope=Cluster,categories={karmada-io,lifeboat}
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Finished",type=date,JSONPath=`.status.finishTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// WorkloadRebalancer asks for a fresh schedule of the workloads it names,
// once: each binding's spec.rescheduleTriggeredAt is set, and the scheduler
// places the workload as if it were new (clusterAffinities from the first
// term). In Lifeboat a cluster the workload leaves keeps its copy until
// the new one is Healthy (a graceful eviction task with reason Rebalance).
type WorkloadRebalancer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the workloads to rebalance.
	// +required
	Spec WorkloadRebalancerSpec `json:"spec"`

	// Status says what happened to each workload.
	// +optional
	Status WorkloadRebalancerStatus `json:"status,omitempty"`
}

// WorkloadRebalancerSpec names the workloads to rebalance: the listed
// workloads, plus (Lifeboat) those a selector or failedOverFrom finds. At
// least one of the three is required.
// +kubebuilder:validation:XValidation:rule="has(self.workloads) || has(self.workloadSelector) || has(self.failedOverFrom)",message="spec needs at least one of workloads, workloadSelector (Lifeboat) or failedOverFrom (Lifeboat)"
type WorkloadRebalancerSpec struct {
	// Workloads are the resource templates to rebalance. Karmada requires
	// it; in Lifeboat it may be left out when workloadSelector or
	// failedOverFrom is set.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1024
	Workloads []ObjectReference `json:"workloads,omitempty"`

	// TTLSecondsAfterFinished deletes the rebalancer this many seconds
	// after status.finishTime; unset keeps it, 0 deletes it at once.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// WorkloadSelector (Lifeboat extension) adds the resource templates of
	// one kind whose labels match, when the spec is observed.
	// +optional
	WorkloadSelector *WorkloadSelector `json:"workloadSelector,omitempty"`

	// FailedOverFrom (Lifeboat extension) adds, when the spec is observed,
	// every workload that failed over away from this cluster and does not
	// run there now: its binding's status.failoverHistory has an entry
	// from this cluster, and the cluster is not in its spec.clusters.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	FailedOverFrom string `json:"failedOverFrom,omitempty"`
}

// ObjectReference names a resource template.
type ObjectReference struct {
	// APIVersion of the template, e.g. apps/v1.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	APIVersion string `json:"apiVersion"`

	// Kind of the template, e.g. Deployment.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// Name of the template.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the template; empty for a cluster-scoped kind.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// WorkloadSelector selects resource templates of one kind by label.
type WorkloadSelector struct {
	// APIVersion of the templates, e.g. apps/v1.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	APIVersion string `json:"apiVersion"`

	// Kind of the templates, e.g. Deployment.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// Namespace limits the selection to one namespace; empty selects in
	// every namespace (and is required for a cluster-scoped kind).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// LabelSelector the templates' labels must match. An empty selector
	// matches every template of the kind.
	// +required
	LabelSelector metav1.LabelSelector `json:"labelSelector"`
}

// WorkloadRebalancerStatus says what happened to each workload.
type WorkloadRebalancerStatus struct {
	// ObservedWorkloads are the workloads of observedGeneration, each with
	// its result once it has one.
	// +optional
	// +kubebuilder:validation:MaxItems=1024
	ObservedWorkloads []ObservedWorkload `json:"observedWorkloads,omitempty"`

	// ObservedGeneration is the generation whose workloads
	// observedWorkloads lists.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=9007199254740991
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// FinishTime is when every workload had a result.
	// +optional
	FinishTime *metav1.Time `json:"finishTime,omitempty"`

	// RescheduleTriggeredAt (Lifeboat extension) is the reschedule request
	// of observedGeneration: the bindings of its workloads without a
	// result get a spec.rescheduleTriggeredAt at least this late. It is
	// recorded before any binding is written, so a restart neither loses
	// nor repeats a request.
	// +optional
	RescheduleTriggeredAt *metav1.Time `json:"rescheduleTriggeredAt,omitempty"`
}

// ObservedWorkload is one workload and its result.
type ObservedWorkload struct {
	// Workload is the resource template.
	// +required
	Workload ObjectReference `json:"workload"`

	// Result is Successful once the scheduler placed the workload afresh,
	// Failed when it could not be rebalanced; empty while in progress.
	// +optional
	// +kubebuilder:validation:Enum=Successful;Failed
	Result RebalanceResult `json:"result,omitempty"`

	// Reason says why the result is Failed.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason RebalanceFailedReason `json:"reason,omitempty"`
}

// RebalanceResult is the result of one workload.
type RebalanceResult string

const (
	// RebalanceFailed: the workload could not be rebalanced.
	RebalanceFailed RebalanceResult = "Failed"
	// RebalanceSuccessful: the scheduler placed the workload afresh.
	RebalanceSuccessful RebalanceResult = "Successful"
)

// RebalanceFailedReason says why a workload could not be rebalanced.
type RebalanceFailedReason string

const (
	// RebalanceObjectNotFound: the workload has no binding (it does not
	// exist, or no policy propagates it).
	RebalanceObjectNotFound RebalanceFailedReason = "ReferencedBindingNotFound"
)

// +kubebuilder:object:root=true

// WorkloadRebalancerList is a list of WorkloadRebalancers.
type WorkloadRebalancerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the rebalancers.
	Items []WorkloadRebalancer `json:"items"`
}
