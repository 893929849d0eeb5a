package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=op,categories={karmada-io,lifeboat}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Accepted")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// OverridePolicy changes resources of its own namespace per target cluster
// before they are delivered.
type OverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the override policy.
	// +required
	Spec OverrideSpec `json:"spec"`

	// Status is a Lifeboat extension: the Accepted condition.
	// +optional
	Status PolicyStatus `json:"status,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cop,categories={karmada-io,lifeboat}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Accepted")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterOverridePolicy is an OverridePolicy for cluster-scoped resources
// and resources in any namespace. It is applied before OverridePolicies.
type ClusterOverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the override policy.
	// +required
	Spec OverrideSpec `json:"spec"`

	// Status is a Lifeboat extension: the Accepted condition.
	// +optional
	Status PolicyStatus `json:"status,omitempty"`
}

// OverrideSpec is shared by OverridePolicy and ClusterOverridePolicy.
// +kubebuilder:validation:XValidation:rule="!(has(self.overrideRules) && size(self.overrideRules) > 0 && has(self.targetCluster))",message="spec.overrideRules cannot be combined with the deprecated spec.targetCluster"
type OverrideSpec struct {
	// ResourceSelectors select the resources to change. Empty selects
	// every resource.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	ResourceSelectors []ResourceSelector `json:"resourceSelectors,omitempty"`

	// OverrideRules are applied in order; each to the clusters its
	// TargetCluster selects.
	// +optional
	// +kubebuilder:validation:MaxItems=128
	OverrideRules []RuleWithCluster `json:"overrideRules,omitempty"`

	// TargetCluster selects the clusters Overriders apply to.
	// Deprecated: use OverrideRules.
	// +optional
	TargetCluster *ClusterAffinity `json:"targetCluster,omitempty"`

	// Overriders are the changes for TargetCluster.
	// Deprecated: use OverrideRules.
	// +optional
	Overriders Overriders `json:"overriders,omitempty"`
}

// RuleWithCluster applies Overriders to the clusters TargetCluster
// selects; nil TargetCluster selects every cluster.
type RuleWithCluster struct {
	// TargetCluster selects the clusters.
	// +optional
	TargetCluster *ClusterAffinity `json:"targetCluster,omitempty"`

	// Overriders are the changes. Within one block they are applied in the
	// order imageOverrider, commandOverrider, argsOverrider, labelsOverrider,
	// annotationsOverrider, fieldOverrider, plaintext.
	// +required
	Overriders Overriders `json:"overriders"`
}

// Overriders are the changes applied to a resource.
type Overriders struct {
	// Plaintext are raw JSON-patch operations.
	// +optional
	Plaintext []PlaintextOverrider `json:"plaintext,omitempty"`

	// ImageOverrider rewrites container images.
	// +optional
	ImageOverrider []ImageOverrider `json:"imageOverrider,omitempty"`

	// CommandOverrider changes container commands.
	// +optional
	CommandOverrider []CommandArgsOverrider `json:"commandOverrider,omitempty"`

	// ArgsOverrider changes container args.
	// +optional
	ArgsOverrider []CommandArgsOverrider `json:"argsOverrider,omitempty"`

	// LabelsOverrider changes labels: keys are label keys, values label
	// values (checked by hack/crdschema: controller-gen has no marker for
	// the values of a map).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:XValidation:rule="!has(self.value) || self.value.all(k, !format.qualifiedName().validate(k).hasValue())",message="labelsOverrider[].value keys must be valid label keys: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (alphanumerics, '-', '_' or '.') that starts and ends with an alphanumeric",fieldPath=".value"
	LabelsOverrider []LabelAnnotationOverrider `json:"labelsOverrider,omitempty"`

	// AnnotationsOverrider changes annotations: keys are annotation keys
	// (label keys, with upper case allowed in the prefix).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:XValidation:rule="!has(self.value) || self.value.all(k, !format.qualifiedName().validate(k.lowerAscii()).hasValue())",message="annotationsOverrider[].value keys must be valid annotation keys: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (alphanumerics, '-', '_' or '.') that starts and ends with an alphanumeric",fieldPath=".value"
	AnnotationsOverrider []LabelAnnotationOverrider `json:"annotationsOverrider,omitempty"`

	// FieldOverrider patches JSON or YAML documents held in string fields,
	// e.g. a ConfigMap key.
	// +optional
	FieldOverrider []FieldOverrider `json:"fieldOverrider,omitempty"`
}

// OverriderOperator is a patch operation.
type OverriderOperator string

// Overrider operators.
const (
	OverriderOpAdd     OverriderOperator = "add"
	OverriderOpRemove  OverriderOperator = "remove"
	OverriderOpReplace OverriderOperator = "replace"
)

// PlaintextOverrider is one JSON-patch operation.
type PlaintextOverrider struct {
	// Path is a JSON pointer into the resource.
	// +required
	Path string `json:"path"`

	// Operator is add, remove or replace.
	// +required
	// +kubebuilder:validation:Enum=add;remove;replace
	Operator OverriderOperator `json:"operator"`

	// Value is any JSON value; required for add and replace.
	// +optional
	Value apiextensionsv1.JSON `json:"value,omitempty"`
}

// ImageComponent is a part of a container image reference.
type ImageComponent string

// Image components: [registry/]repository[:tag|@digest].
const (
	Registry   ImageComponent = "Registry"
	Repository ImageComponent = "Repository"
	Tag        ImageComponent = "Tag"
)

// ImageOverrider rewrites one part of container images.
type ImageOverrider struct {
	// Predicate selects a single image by path; nil rewrites every
	// container image of well-known workload kinds.
	// +optional
	Predicate *ImagePredicate `json:"predicate,omitempty"`

	// Component is the part of the image to change.
	// +required
	// +kubebuilder:validation:Enum=Registry;Repository;Tag
	Component ImageComponent `json:"component"`

	// Operator is add, remove or replace.
	// +required
	// +kubebuilder:validation:Enum=add;remove;replace
	Operator OverriderOperator `json:"operator"`

	// Value is the value to add or replace with.
	// +optional
	Value string `json:"value,omitempty"`
}

// ImagePredicate selects an image by path.
type ImagePredicate struct {
	// Path is a slash path to the image string, e.g.
	// "/spec/template/spec/containers/0/image".
	// +required
	Path string `json:"path"`
}

// CommandArgsOverrider changes a container's command or args.
type CommandArgsOverrider struct {
	// ContainerName selects the container.
	// +required
	ContainerName string `json:"containerName"`

	// Operator is add or remove.
	// +required
	// +kubebuilder:validation:Enum=add;remove
	Operator OverriderOperator `json:"operator"`

	// Value are the items appended (add) or removed (remove).
	// +optional
	Value []string `json:"value,omitempty"`
}

// LabelAnnotationOverrider changes labels or annotations.
type LabelAnnotationOverrider struct {
	// Operator is add, remove or replace.
	// +required
	// +kubebuilder:validation:Enum=add;remove;replace
	Operator OverriderOperator `json:"operator"`

	// Value maps keys to values.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Value map[string]string `json:"value,omitempty"`
}

// FieldOverrider patches a JSON or YAML document held in a string field.
// +kubebuilder:validation:XValidation:rule="has(self.json) != has(self.yaml)",message="fieldOverrider needs exactly one of json and yaml"
type FieldOverrider struct {
	// FieldPath is a JSON pointer to the string field, e.g.
	// "/data/config.yaml".
	// +required
	FieldPath string `json:"fieldPath"`

	// JSON are patch operations on the field parsed as JSON.
	// +optional
	JSON []JSONPatchOperation `json:"json,omitempty"`

	// YAML are patch operations on the field parsed as YAML.
	// +optional
	YAML []YAMLPatchOperation `json:"yaml,omitempty"`
}

// JSONPatchOperation is one operation inside a JSON document.
type JSONPatchOperation struct {
	// SubPath is a JSON pointer inside the document.
	// +required
	SubPath string `json:"subPath"`

	// Operator is add, remove or replace.
	// +required
	// +kubebuilder:validation:Enum=add;remove;replace
	Operator OverriderOperator `json:"operator"`

	// Value is any JSON value.
	// +optional
	Value apiextensionsv1.JSON `json:"value,omitempty"`
}

// YAMLPatchOperation is one operation inside a YAML document.
type YAMLPatchOperation struct {
	// SubPath is a JSON pointer inside the document.
	// +required
	SubPath string `json:"subPath"`

	// Operator is add, remove or replace.
	// +required
	// +kubebuilder:validation:Enum=add;remove;replace
	Operator OverriderOperator `json:"operator"`

	// Value is any JSON value.
	// +optional
	Value apiextensionsv1.JSON `json:"value,omitempty"`
}

// +kubebuilder:object:root=true

// OverridePolicyList is a list of OverridePolicies.
type OverridePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OverridePolicy `json:"items"`
}

// +kubebuilder:object:root=true

// ClusterOverridePolicyList is a list of ClusterOverridePolicies.
type ClusterOverridePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterOverridePolicy `json:"items"`
}
