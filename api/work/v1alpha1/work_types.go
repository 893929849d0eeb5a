package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=wk,categories={karmada-io,lifeboat}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Workload-Kind",type=string,JSONPath=`.spec.workload.manifests[*].kind`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`
// +kubebuilder:printcolumn:name="Available",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Work holds the manifests to apply to one member cluster. Its namespace,
// karmada-es-<cluster>, names the cluster.
type Work struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the manifests.
	// +required
	Spec WorkSpec `json:"spec"`

	// Status is what was observed in the member cluster.
	// +optional
	Status WorkStatus `json:"status,omitempty"`
}

// WorkSpec is the desired state of a Work.
type WorkSpec struct {
	// Workload holds the manifests.
	// +optional
	Workload WorkloadTemplate `json:"workload,omitempty"`

	// SuspendDispatching stops applying the manifests to the member.
	// +optional
	SuspendDispatching *bool `json:"suspendDispatching,omitempty"`

	// PreserveResourcesOnDeletion keeps the member objects when the Work is
	// deleted.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`
}

// WorkloadTemplate holds the manifests of a Work.
type WorkloadTemplate struct {
	// Manifests are the objects to apply.
	// +optional
	Manifests []Manifest `json:"manifests,omitempty"`
}

// Manifest is one complete Kubernetes object.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:EmbeddedResource
type Manifest struct {
	runtime.RawExtension `json:",inline"`
}

// WorkStatus is the observed state of a Work.
type WorkStatus struct {
	// Conditions: Applied, Progressing, Available, Degraded, Dispatching.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ManifestStatuses hold the reflected status and health of each
	// manifest in the member.
	// +optional
	ManifestStatuses []ManifestStatus `json:"manifestStatuses,omitempty"`
}

// ManifestStatus is the status of one manifest in the member.
type ManifestStatus struct {
	// Identifier names the manifest.
	// +required
	Identifier ResourceIdentifier `json:"identifier"`

	// Status is the reflected status of the member object.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Status *runtime.RawExtension `json:"status,omitempty"`

	// Health is the interpreted health of the member object.
	// +optional
	// +kubebuilder:validation:Enum=Healthy;Unhealthy;Unknown
	Health ResourceHealth `json:"health,omitempty"`

	// ObservedGeneration is the Work's metadata.generation that the member
	// object had been applied from when Status and Health were read (a
	// Lifeboat field: Karmada's manifest status has none). A status for an
	// older generation describes an object that does not hold the Work's
	// current manifest yet.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=9007199254740991
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ResourceIdentifier names a manifest of a Work and the object it became.
type ResourceIdentifier struct {
	// Ordinal is the index of the manifest in spec.workload.manifests.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Ordinal int `json:"ordinal"`

	// Group of the object.
	// +optional
	Group string `json:"group,omitempty"`

	// Version of the object.
	// +required
	Version string `json:"version"`

	// Kind of the object.
	// +required
	Kind string `json:"kind"`

	// Resource is the plural resource name of the object.
	// +optional
	Resource string `json:"resource,omitempty"`

	// Namespace of the object; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the object.
	// +required
	Name string `json:"name"`
}

// ResourceHealth is the interpreted health of an object.
type ResourceHealth string

// Health values.
const (
	// ResourceHealthy: the interpreter says the object is healthy.
	ResourceHealthy ResourceHealth = "Healthy"
	// ResourceUnhealthy: the interpreter says the object is not healthy.
	ResourceUnhealthy ResourceHealth = "Unhealthy"
	// ResourceUnknown: health could not be interpreted (no rule, error, or
	// no observation). Unknown is not Healthy.
	ResourceUnknown ResourceHealth = "Unknown"
)

// Condition types of a Work.
const (
	WorkApplied     = "Applied"
	WorkProgressing = "Progressing"
	WorkAvailable   = "Available"
	WorkDegraded    = "Degraded"
	WorkDispatching = "Dispatching"
)

// Labels, annotations and finalizers on Works and the member objects they
// produce.
const (
	// WorkPermanentIDLabel is the UUID of a Work.
	WorkPermanentIDLabel = "work.karmada.io/permanent-id"
	// WorkNamespaceAnnotation and WorkNameAnnotation point from a member
	// object back to its Work.
	WorkNamespaceAnnotation = "work.karmada.io/namespace"
	WorkNameAnnotation      = "work.karmada.io/name"
	// ResourceConflictResolutionAnnotation is abort or overwrite.
	ResourceConflictResolutionAnnotation = "work.karmada.io/conflict-resolution"
	// ResourceTemplateUIDAnnotation is the UID of the resource template.
	ResourceTemplateUIDAnnotation = "resourcetemplate.karmada.io/uid"
	// ResourceTemplateGenerationAnnotationKey is the template's generation.
	ResourceTemplateGenerationAnnotationKey = "resourcetemplate.karmada.io/generation"
	// ManagedLabels and ManagedAnnotation list the label and annotation
	// keys the control plane manages on a member object.
	ManagedLabels     = "resourcetemplate.karmada.io/managed-labels"
	ManagedAnnotation = "resourcetemplate.karmada.io/managed-annotations"
	// WorkGenerationAnnotation on a member object is the generation of the
	// Work it was last applied from (Lifeboat), so that a status read from
	// the member says which version of the Work it describes.
	WorkGenerationAnnotation = "work.lifeboat.dev/generation"
	// WorkUIDAnnotation on a member object is the UID of the Work it was
	// last applied from (Lifeboat). A Work deleted and created again keeps
	// its name and starts again at generation 1, so the UID tells the old
	// Work's copy, which an informer may still hold, from the new one's.
	WorkUIDAnnotation = "work.lifeboat.dev/uid"
	// WorkReplicasAnnotation on a Work is the replica count its manifest
	// was rendered with for its cluster (Lifeboat), so that a health report
	// for a different share is not taken for the current one.
	WorkReplicasAnnotation = "work.lifeboat.dev/replicas"
	// ExecutionControllerFinalizer is set on every Work.
	ExecutionControllerFinalizer = "karmada.io/execution-controller"
)

// Values of ResourceConflictResolutionAnnotation.
const (
	ObjectOverwrite = "overwrite"
	ObjectAbort     = "abort"
)

// +kubebuilder:object:root=true

// WorkList is a list of Works.
type WorkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Work `json:"items"`
}
