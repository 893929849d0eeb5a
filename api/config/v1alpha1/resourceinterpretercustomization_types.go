package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ric,categories={karmada-io,lifeboat}
// +kubebuilder:printcolumn:name="Target-API-Version",type=string,JSONPath=`.spec.target.apiVersion`
// +kubebuilder:printcolumn:name="Target-Kind",type=string,JSONPath=`.spec.target.kind`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ResourceInterpreterCustomization holds Lua scripts that interpret one
// kind of resource. Several customizations for one kind are merged in name
// order: for each operation the last one wins, except dependency
// interpretation, whose results are all combined.
type ResourceInterpreterCustomization struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the scripts.
	// +required
	Spec ResourceInterpreterCustomizationSpec `json:"spec"`
}

// ResourceInterpreterCustomizationSpec holds the target kind and scripts.
type ResourceInterpreterCustomizationSpec struct {
	// Target is the kind the scripts interpret.
	// +required
	Target CustomizationTarget `json:"target"`

	// Customizations are the scripts, one per operation.
	// +required
	Customizations CustomizationRules `json:"customizations"`
}

// CustomizationTarget names a kind.
type CustomizationTarget struct {
	// APIVersion of the kind, e.g. "flink.apache.org/v1beta1".
	// +required
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`

	// Kind, e.g. "FlinkDeployment".
	// +required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
}

// CustomizationRules are the scripts, one per operation; each optional.
type CustomizationRules struct {
	// Retention keeps member-side changes when the control plane updates
	// the object: function Retain(desiredObj, observedObj) returns the
	// object to apply.
	// +optional
	Retention *LocalValueRetention `json:"retention,omitempty"`

	// ReplicaResource reads replicas and per-replica requirements:
	// function GetReplicas(desiredObj) returns replica, requirement.
	// +optional
	ReplicaResource *ReplicaResourceRequirement `json:"replicaResource,omitempty"`

	// ComponentResource reads the components of a multi-template workload:
	// function GetComponents(desiredObj) returns a list of components.
	// +optional
	ComponentResource *ComponentResourceRequirement `json:"componentResource,omitempty"`

	// ReplicaRevision writes the replicas scheduled to one cluster:
	// function ReviseReplica(desiredObj, desiredReplica) returns the object.
	// +optional
	ReplicaRevision *ReplicaRevision `json:"replicaRevision,omitempty"`

	// StatusReflection picks the status to collect from a member object:
	// function ReflectStatus(observedObj) returns the status.
	// +optional
	StatusReflection *StatusReflection `json:"statusReflection,omitempty"`

	// StatusAggregation folds the member statuses into the template:
	// function AggregateStatus(desiredObj, statusItems) returns the object.
	// +optional
	StatusAggregation *StatusAggregation `json:"statusAggregation,omitempty"`

	// HealthInterpretation says whether a member object is healthy:
	// function InterpretHealth(observedObj) returns a boolean.
	// +optional
	HealthInterpretation *HealthInterpretation `json:"healthInterpretation,omitempty"`

	// DependencyInterpretation lists the objects a resource depends on:
	// function GetDependencies(desiredObj) returns a list of references.
	// +optional
	DependencyInterpretation *DependencyInterpretation `json:"dependencyInterpretation,omitempty"`
}

// LocalValueRetention holds the Retain script.
type LocalValueRetention struct {
	// LuaScript defines function Retain(desiredObj, observedObj).
	// +required
	// +kubebuilder:validation:MinLength=1
	LuaScript string `json:"luaScript"`
}

// ReplicaResourceRequirement holds the GetReplicas script.
type ReplicaResourceRequirement struct {
	// LuaScript defines function GetReplicas(desiredObj).
	// +required
	// +kubebuilder:validation:MinLength=1
	LuaScript string `json:"luaScript"`
}

// ComponentResourceRequirement holds the GetComponents script.
type ComponentResourceRequirement struct {
	// LuaScript defines function GetComponents(desiredObj).
	// +required
	// +kubebuilder:validation:MinLength=1
	LuaScript string `json:"luaScript"`
}

// ReplicaRevision holds the ReviseReplica script.
type ReplicaRevision struct {
	// LuaScript defines function ReviseReplica(desiredObj, desiredReplica).
	// +required
	// +kubebuilder:validation:MinLength=1
	LuaScript string `json:"luaScript"`
}

// StatusReflection holds the ReflectStatus script.
type StatusReflection struct {
	// LuaScript defines function ReflectStatus(observedObj).
	// +required
	// +kubebuilder:validation:MinLength=1
	LuaScript string `json:"luaScript"`
}

// StatusAggregation holds the AggregateStatus script.
type StatusAggregation struct {
	// LuaScript defines function AggregateStatus(desiredObj, statusItems).
	// +required
	// +kubebuilder:validation:MinLength=1
	LuaScript string `json:"luaScript"`
}

// HealthInterpretation holds the InterpretHealth script.
type HealthInterpretation struct {
	// LuaScript defines function InterpretHealth(observedObj).
	// +required
	// +kubebuilder:validation:MinLength=1
	LuaScript string `json:"luaScript"`
}

// DependencyInterpretation holds the GetDependencies script.
type DependencyInterpretation struct {
	// LuaScript defines function GetDependencies(desiredObj).
	// +required
	// +kubebuilder:validation:MinLength=1
	LuaScript string `json:"luaScript"`
}

// +kubebuilder:object:root=true

// ResourceInterpreterCustomizationList is a list of
// ResourceInterpreterCustomizations.
type ResourceInterpreterCustomizationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceInterpreterCustomization `json:"items"`
}
