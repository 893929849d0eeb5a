package detector

import (
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// ReplicaInfo is what the interpreter says about a template's replicas.
type ReplicaInfo struct {
	Replicas     int32
	Requirements *workv1alpha2.ReplicaRequirements
}

// newBindingObject returns an empty ResourceBinding for a namespaced
// template, an empty ClusterResourceBinding for a cluster-scoped one.
func newBindingObject(namespaced bool) client.Object {
	if namespaced {
		return &workv1alpha2.ResourceBinding{}
	}
	return &workv1alpha2.ClusterResourceBinding{}
}

// BindingSpec returns the spec of a ResourceBinding or ClusterResourceBinding.
func BindingSpec(obj client.Object) *workv1alpha2.ResourceBindingSpec {
	switch b := obj.(type) {
	case *workv1alpha2.ResourceBinding:
		return &b.Spec
	case *workv1alpha2.ClusterResourceBinding:
		return &b.Spec
	default:
		return nil
	}
}

func bindingIDLabel(obj client.Object) string {
	if _, ok := obj.(*workv1alpha2.ClusterResourceBinding); ok {
		return workv1alpha2.ClusterResourceBindingPermanentIDLabel
	}
	return workv1alpha2.ResourceBindingPermanentIDLabel
}

func bindingFinalizer(obj client.Object) string {
	if _, ok := obj.(*workv1alpha2.ClusterResourceBinding); ok {
		return workv1alpha2.ClusterResourceBindingControllerFinalizer
	}
	return workv1alpha2.BindingControllerFinalizer
}

// templateOwnerRef is the controller reference of a binding to its template.
func templateOwnerRef(tmpl *unstructured.Unstructured) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         tmpl.GetAPIVersion(),
		Kind:               tmpl.GetKind(),
		Name:               tmpl.GetName(),
		UID:                tmpl.GetUID(),
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// effectivePropagateDeps is the binding's spec.propagateDeps. Lifeboat rule:
// application failover implies dependency propagation (a workload moved to a
// new cluster needs its ConfigMaps and Secrets there), even when the policy
// leaves propagateDeps false as the seeds' stateful example does. The
// deprecated spec.association counts too.
func effectivePropagateDeps(spec *policyv1alpha1.PropagationSpec) bool {
	return spec.PropagateDeps || spec.Association ||
		(spec.Failover != nil && spec.Failover.Application != nil)
}

// BuildBinding returns the binding the detector wants for tmpl claimed by p
// (Karmada's BuildResourceBinding): a ResourceBinding in the template's
// namespace for a namespaced template, a ClusterResourceBinding otherwise,
// named BindingName(kind, name), owned by the template, carrying the claim
// metadata and permanent ID id, with its spec copied from the policy.
func BuildBinding(tmpl *unstructured.Unstructured, p PolicyRef, r ReplicaInfo, id string) client.Object {
	b := newBindingObject(tmpl.GetNamespace() != "")
	b.SetName(BindingName(tmpl.GetKind(), tmpl.GetName()))
	b.SetNamespace(tmpl.GetNamespace())
	MergeBinding(b, tmpl, p, r, id)
	return b
}

// MergeBinding brings the detector's fields of binding b (an existing one,
// already deep-copied, or a new one) up to date with tmpl and p and reports
// whether anything changed. It writes claim labels and annotations, the
// binding's permanent ID when missing, its controller finalizer, the
// controller owner reference, and spec.resource, replicas,
// replicaRequirements, propagateDeps, schedulerName, placement, failover,
// conflictResolution, preserveResourcesOnDeletion and suspension (whose
// scheduling part is kept). It never touches spec.clusters,
// gracefulEvictionTasks, requiredBy, rescheduleTriggeredAt or
// schedulePriority.
func MergeBinding(b client.Object, tmpl *unstructured.Unstructured, p PolicyRef, r ReplicaInfo, id string) bool {
	before := b.DeepCopyObject()

	setClaim(b, p)
	if idLabel := bindingIDLabel(b); b.GetLabels()[idLabel] == "" && id != "" {
		l := copyMap(b.GetLabels())
		l[idLabel] = id
		b.SetLabels(l)
	}
	controllerutil.AddFinalizer(b, bindingFinalizer(b))
	b.SetOwnerReferences(withControllerRef(b.GetOwnerReferences(), templateOwnerRef(tmpl)))

	spec := BindingSpec(b)
	spec.Resource = workv1alpha2.ObjectReference{
		APIVersion:      tmpl.GetAPIVersion(),
		Kind:            tmpl.GetKind(),
		Namespace:       tmpl.GetNamespace(),
		Name:            tmpl.GetName(),
		UID:             tmpl.GetUID(),
		ResourceVersion: tmpl.GetResourceVersion(),
	}
	spec.Replicas = r.Replicas
	spec.ReplicaRequirements = r.Requirements.DeepCopy()
	ps := p.Spec
	spec.PropagateDeps = effectivePropagateDeps(ps)
	spec.SchedulerName = ps.SchedulerName
	spec.Placement = ps.Placement.DeepCopy()
	spec.Failover = ps.Failover.DeepCopy()
	spec.ConflictResolution = ps.ConflictResolution
	spec.PreserveResourcesOnDeletion = ps.PreserveResourcesOnDeletion
	spec.Suspension = mergeSuspension(spec.Suspension, ps.Suspension)

	return !equality.Semantic.DeepEqual(before, b)
}

// mergeSuspension puts the policy's dispatching suspension into the binding's
// suspension and keeps the binding's own scheduling suspension.
func mergeSuspension(existing *workv1alpha2.Suspension, fromPolicy *policyv1alpha1.Suspension) *workv1alpha2.Suspension {
	var scheduling *bool
	if existing != nil {
		scheduling = existing.Scheduling
	}
	if fromPolicy == nil && scheduling == nil {
		return nil
	}
	out := &workv1alpha2.Suspension{Scheduling: scheduling}
	if fromPolicy != nil {
		out.Suspension = *fromPolicy.DeepCopy()
	}
	return out
}

// withControllerRef replaces the controller reference in refs with ref and
// keeps the other references.
func withControllerRef(refs []metav1.OwnerReference, ref metav1.OwnerReference) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, 0, len(refs)+1)
	out = append(out, ref)
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			continue
		}
		if r.UID == ref.UID {
			continue
		}
		out = append(out, r)
	}
	return out
}
