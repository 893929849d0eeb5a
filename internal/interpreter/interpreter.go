// Package interpreter answers the questions the pipeline asks about a resource
// of any kind: how many replicas it wants and what each needs, how to set its
// replicas for one cluster, which of a member's fields to keep, what status to
// reflect, whether it is healthy, how to aggregate member statuses into the
// template, and what it depends on.
//
// Built-in rules cover Kubernetes' own kinds (see native.go). Customizations
// (ResourceInterpreterCustomization, Lua) and shipped third-party rules will be
// layered in front of them; callers only ever see the Interpreter interface.
package interpreter

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// Interpreter is the pipeline's view of resource semantics. Every method takes
// the object as stored (unstructured) and must not modify its argument.
type Interpreter interface {
	// GetReplicas returns the replicas the object asks for and the resources
	// one replica needs. ok is false for kinds without replicas (ConfigMap,
	// Service...), which are propagated whole to every target cluster.
	GetReplicas(obj *unstructured.Unstructured) (replicas int32, requirements *workv1alpha2.ReplicaRequirements, ok bool, err error)

	// ReviseReplica returns a copy of obj that asks for replicas (a cluster's
	// share of a Divided workload). Kinds without replicas are returned as a
	// copy, unchanged.
	ReviseReplica(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error)

	// Retain returns a copy of desired carrying the fields of observed (the
	// object as it is in the member) that the member owns, such as a
	// Service's clusterIP or a Job's generated selector, so that applying
	// desired does not fight the member's controllers.
	Retain(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error)

	// ReflectStatus returns the part of a member object's status that is
	// recorded in Work.status.manifestStatuses (nil when there is none).
	ReflectStatus(obj *unstructured.Unstructured) (*runtime.RawExtension, error)

	// InterpretHealth says whether a member object is healthy. Kinds with no
	// rule are Healthy once they exist; a rule that cannot decide yet (for
	// example a status not observed for the current generation) says Unknown
	// only when it truly cannot tell, never Healthy.
	InterpretHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error)

	// AggregateStatus returns a copy of the template whose status sums up
	// the members' reflected statuses (for a Deployment: replicas,
	// readyReplicas, availableReplicas, updatedReplicas and a correct
	// observedGeneration). Kinds with no rule are returned unchanged.
	AggregateStatus(template *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error)

	// GetDependencies lists the objects the resource needs in the same
	// cluster (ConfigMaps, Secrets, PersistentVolumeClaims, ServiceAccounts
	// referenced by a pod template), for propagateDeps.
	GetDependencies(obj *unstructured.Unstructured) ([]Dependency, error)
}

// Dependency names one object a resource depends on. Namespace is the
// dependent's namespace for namespaced kinds.
type Dependency struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}
