package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories={karmada-io,lifeboat}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.syncMode`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Insecure-Skip-TLS",type=boolean,JSONPath=`.spec.insecureSkipTLSVerification`,priority=1
// +kubebuilder:printcolumn:name="API-Endpoint",type=string,JSONPath=`.spec.apiEndpoint`,priority=1
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 48 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS label of at most 48 characters (lowercase alphanumerics and '-'): the cluster's execution namespace karmada-es-<name> must be a valid namespace name"

// Cluster is one member cluster: its spec says how to reach it and how it may
// be used, its status holds what the control plane last observed about it.
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the member cluster.
	// +required
	Spec ClusterSpec `json:"spec"`

	// Status is the most recently observed state of the member cluster.
	// +optional
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterSyncMode says who drives the member cluster.
type ClusterSyncMode string

const (
	// Push means the control plane connects to the member and applies
	// workloads and collects status itself.
	Push ClusterSyncMode = "Push"
	// Pull means an agent inside the member pulls its work from the control
	// plane.
	Pull ClusterSyncMode = "Pull"
)

// ClusterSpec is the desired state of a member cluster.
type ClusterSpec struct {
	// ID uniquely identifies the member cluster. It usually is the UID of
	// the member's kube-system namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	ID string `json:"id,omitempty"`

	// SyncMode is how the member cluster is driven: Push or Pull.
	// +required
	// +kubebuilder:validation:Enum=Push;Pull
	SyncMode ClusterSyncMode `json:"syncMode"`

	// APIEndpoint is the URL of the member's API server.
	// +optional
	APIEndpoint string `json:"apiEndpoint,omitempty"`

	// SecretRef names the Secret in the control plane that holds the
	// credentials for the member: keys "token" and "caBundle".
	// +optional
	SecretRef *LocalSecretReference `json:"secretRef,omitempty"`

	// ImpersonatorSecretRef names the Secret holding the token used to
	// impersonate users in the member (for the cluster proxy).
	// +optional
	ImpersonatorSecretRef *LocalSecretReference `json:"impersonatorSecretRef,omitempty"`

	// InsecureSkipTLSVerification disables verification of the member API
	// server's certificate. Only for tests.
	// +optional
	InsecureSkipTLSVerification bool `json:"insecureSkipTLSVerification,omitempty"`

	// ProxyURL is an http, https or socks5 proxy used to reach the member.
	// +optional
	ProxyURL string `json:"proxyURL,omitempty"`

	// ProxyHeader holds extra HTTP headers sent to the proxy.
	// +optional
	ProxyHeader map[string]string `json:"proxyHeader,omitempty"`

	// Provider is the name of the cloud provider of the member.
	// +optional
	Provider string `json:"provider,omitempty"`

	// Region is the region the member runs in.
	// +optional
	Region string `json:"region,omitempty"`

	// Zone is the zone the member runs in.
	// Deprecated: use Zones.
	// +optional
	Zone string `json:"zone,omitempty"`

	// Zones are the zones the member spans.
	// +optional
	Zones []string `json:"zones,omitempty"`

	// Taints keep workloads away from the cluster (NoSchedule) or evict them
	// (NoExecute) unless a policy tolerates them. Only NoSchedule and
	// NoExecute are valid effects, a (key, effect) pair may appear once, keys
	// are label keys and values label values (hack/crdschema adds the key
	// length and the value format, which corev1.Taint cannot carry as
	// markers).
	// +optional
	// +listType=map
	// +listMapKey=key
	// +listMapKey=effect
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect == 'NoSchedule' || t.effect == 'NoExecute')",message="spec.taints[].effect must be NoSchedule or NoExecute"
	// +kubebuilder:validation:items:XValidation:rule="!format.qualifiedName().validate(self.key).hasValue()",message="taints[].key must be a valid label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (alphanumerics, '-', '_' or '.') that starts and ends with an alphanumeric",fieldPath=".key"
	Taints []corev1.Taint `json:"taints,omitempty"`

	// ResourceModels describe the grades of node sizes in the cluster, used
	// to estimate how many replicas fit.
	// +optional
	ResourceModels []ResourceModel `json:"resourceModels,omitempty"`
}

// LocalSecretReference names a Secret in the control plane.
type LocalSecretReference struct {
	// Namespace of the Secret.
	// +required
	Namespace string `json:"namespace"`
	// Name of the Secret.
	// +required
	Name string `json:"name"`
}

// ResourceModel is one grade of node size.
type ResourceModel struct {
	// Grade is the index of this model; higher grades are bigger nodes.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Grade int32 `json:"grade"`

	// Ranges bound each resource for nodes of this grade.
	// +required
	Ranges []ResourceModelRange `json:"ranges"`
}

// ResourceModelRange is the half-open interval [Min, Max) of one resource.
type ResourceModelRange struct {
	// Name of the resource: cpu, memory, storage or ephemeral-storage.
	// +required
	Name corev1.ResourceName `json:"name"`
	// Min is the inclusive lower bound.
	// +required
	Min resource.Quantity `json:"min"`
	// Max is the exclusive upper bound.
	// +required
	Max resource.Quantity `json:"max"`
}

// ClusterStatus is the observed state of a member cluster.
type ClusterStatus struct {
	// KubernetesVersion is the version reported by the member.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// APIEnablements lists the resources the member serves.
	// +optional
	APIEnablements []APIEnablement `json:"apiEnablements,omitempty"`

	// Conditions are the latest observations of the member's state: Ready,
	// CompleteAPIEnablements and any condition written by other tools.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// NodeSummary counts the member's nodes.
	// +optional
	NodeSummary *NodeSummary `json:"nodeSummary,omitempty"`

	// ResourceSummary sums the member's node resources.
	// +optional
	ResourceSummary *ResourceSummary `json:"resourceSummary,omitempty"`

	// RemedyActions are the remedy actions currently wanted for the member.
	// +optional
	RemedyActions []string `json:"remedyActions,omitempty"`
}

// APIEnablement lists the resources of one group/version.
type APIEnablement struct {
	// GroupVersion is the group and version, e.g. "apps/v1".
	// +required
	GroupVersion string `json:"groupVersion"`
	// Resources served under GroupVersion.
	// +optional
	Resources []APIResource `json:"resources,omitempty"`
}

// APIResource names one served resource.
type APIResource struct {
	// Name is the plural resource name, e.g. "deployments".
	// +required
	Name string `json:"name"`
	// Kind is the kind of the resource, e.g. "Deployment".
	// +required
	Kind string `json:"kind"`
}

// NodeSummary counts nodes.
type NodeSummary struct {
	// TotalNum is the number of nodes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	TotalNum int32 `json:"totalNum,omitempty"`
	// ReadyNum is the number of Ready nodes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	ReadyNum int32 `json:"readyNum,omitempty"`
}

// ResourceSummary sums node resources.
type ResourceSummary struct {
	// Allocatable is the sum of the nodes' allocatable resources.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Allocating is the sum of requests of pods not yet bound to a node.
	// +optional
	Allocating corev1.ResourceList `json:"allocating,omitempty"`
	// Allocated is the sum of requests of pods bound to a node.
	// +optional
	Allocated corev1.ResourceList `json:"allocated,omitempty"`
	// AllocatableModelings counts, per resource-model grade, how many nodes
	// have that much free.
	// +optional
	AllocatableModelings []AllocatableModeling `json:"allocatableModelings,omitempty"`
}

// AllocatableModeling is the node count of one grade.
type AllocatableModeling struct {
	// Grade is the ResourceModel grade.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Grade int32 `json:"grade"`
	// Count is the number of nodes of that grade.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Count int32 `json:"count"`
}

// +kubebuilder:object:root=true

// ClusterList is a list of Clusters.
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}
