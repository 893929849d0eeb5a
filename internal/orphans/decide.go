package orphans

import (
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/execution"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
)

// Verdict is what the orphan rule says of one member object.
type Verdict string

// Verdicts, in the order of the rules of Judge.
const (
	// NotCandidate: not an object Lifeboat applied for a Work (no managed
	// label, or no Work named), such as a namespace Lifeboat created.
	NotCandidate Verdict = "NotCandidate"
	// Foreign: it names a Work of another cluster's execution namespace
	// (the member was joined under another name, or to another control
	// plane); never touched.
	Foreign Verdict = "Foreign"
	// Owned: its Work exists.
	Owned Verdict = "Owned"
	// Deleting: it is being deleted already.
	Deleting Verdict = "Deleting"
	// KeptCascades: a Namespace or CustomResourceDefinition, whose deletion
	// would delete objects of others with it.
	KeptCascades Verdict = "KeptCascades"
	// KeptNotApplied: no field manager "lifeboat" ever wrote it (it carries
	// Karmada's marks but Karmada, or someone else, made it).
	KeptNotApplied Verdict = "KeptNotApplied"
	// KeptNoBinding: it names no binding, so whether a Work is about to be
	// made for it cannot be known.
	KeptNoBinding Verdict = "KeptNoBinding"
	// KeptPlaced: its binding places it on this cluster: the binding
	// controller is about to make its Work, which adopts it.
	KeptPlaced Verdict = "KeptPlaced"
	// KeptPreserved: its binding asks to preserve its member objects
	// (preserveResourcesOnDeletion): Lifeboat would only have released it.
	KeptPreserved Verdict = "KeptPreserved"
	// Orphan: nothing owns it or is about to; it is removed once it has
	// been an orphan for the grace period.
	Orphan Verdict = "Orphan"
)

// Kept says whether v is one of the Kept verdicts: Work gone, object kept.
func (v Verdict) Kept() bool {
	switch v {
	case KeptCascades, KeptNotApplied, KeptNoBinding, KeptPlaced, KeptPreserved:
		return true
	}
	return false
}

// Reason is the verdict in words, for Events.
func (v Verdict) Reason() string {
	switch v {
	case KeptCascades:
		return "deleting it would delete what others keep in it"
	case KeptNotApplied:
		return "not written by Lifeboat"
	case KeptNoBinding:
		return "names no binding"
	case KeptPlaced:
		return "its binding places it here; its Work is about to be made"
	case KeptPreserved:
		return "its binding asks to preserve its member objects (preserveResourcesOnDeletion)"
	case Foreign:
		return "names another cluster's Work"
	}
	return string(v)
}

// cascading are the kinds whose deletion deletes other objects, whoever
// owns them.
var cascading = map[schema.GroupKind]bool{
	{Kind: "Namespace"}: true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: true,
}

// Refs are the owners a member object names: its Work (annotations
// work.karmada.io/namespace and work.karmada.io/name) and the binding its
// Work was made from (resourcebinding.karmada.io/namespace and name, or
// clusterresourcebinding.karmada.io/name).
type Refs struct {
	Work types.NamespacedName
	// Binding is empty when the object names none; its Namespace is empty
	// for a ClusterResourceBinding.
	Binding types.NamespacedName
}

// HasBinding says whether the object names a binding.
func (r Refs) HasBinding() bool { return r.Binding.Name != "" }

// RefsOf reads the owners obj names; ok is false when it is not labelled
// managed or names no Work.
func RefsOf(obj metav1.Object) (Refs, bool) {
	if !execution.IsManaged(obj) {
		return Refs{}, false
	}
	ann := obj.GetAnnotations()
	r := Refs{Work: types.NamespacedName{Namespace: ann[workv1alpha1.WorkNamespaceAnnotation], Name: ann[workv1alpha1.WorkNameAnnotation]}}
	if r.Work.Name == "" || r.Work.Namespace == "" {
		return Refs{}, false
	}
	if ns, name, _, ok := workv1alpha2.BindingOfWorkAnnotations(ann); ok {
		r.Binding = types.NamespacedName{Namespace: ns, Name: name}
	}
	return r, true
}

// Observation is what is known of one member object of a cluster: the
// object, its kind, and what the control plane says of the owners it names.
type Observation struct {
	Cluster string
	Kind    schema.GroupKind
	Object  metav1.Object
	// WorkExists: the Work the object names exists (being deleted or not).
	WorkExists bool
	// BindingPlaces: the binding the object names exists, is not being
	// deleted, and places its resource on Cluster (see Places).
	BindingPlaces bool
	// BindingPreserves: the binding the object names exists (being
	// deleted or not) and asks to preserve its member objects.
	BindingPreserves bool
}

// Judge applies the orphan rule to one member object. The rules, in order:
//
//  1. an object without the managed label or without a Work name is not a
//     candidate;
//  2. one naming a Work outside karmada-es-<cluster> is Foreign;
//  3. one whose Work exists is Owned;
//  4. one being deleted is Deleting;
//  5. a Namespace or CustomResourceDefinition is kept: deleting it would
//     delete what others keep in it;
//  6. one that field manager "lifeboat" never wrote is kept (Karmada's
//     marks, not Lifeboat's object);
//  7. one naming no binding is kept: whether a Work is about to be made
//     for it cannot be known;
//  8. one whose binding places it on this cluster is kept: the binding
//     controller is about to make its Work, which adopts it;
//  9. one whose binding asks to preserve its member objects is kept: its
//     Work would only have released it;
//  10. anything else is an Orphan.
//
// An Orphan is removed only after it stayed one for the grace period
// (Sightings), and only if the Work and binding are still as judged when
// read again from the API server right before the delete, which is itself
// conditional on the object's UID and resourceVersion.
func Judge(o Observation) Verdict {
	refs, ok := RefsOf(o.Object)
	switch {
	case !ok:
		return NotCandidate
	case refs.Work.Namespace != clusterv1alpha1.ExecutionSpacePrefix+o.Cluster:
		return Foreign
	case o.WorkExists:
		return Owned
	case o.Object.GetDeletionTimestamp() != nil:
		return Deleting
	case cascading[o.Kind]:
		return KeptCascades
	case !AppliedByLifeboat(o.Object):
		return KeptNotApplied
	case !refs.HasBinding():
		return KeptNoBinding
	case o.BindingPlaces:
		return KeptPlaced
	case o.BindingPreserves:
		return KeptPreserved
	}
	return Orphan
}

// AppliedByLifeboat says whether field manager "lifeboat" (the execution
// controller's server-side apply) owns fields of obj.
func AppliedByLifeboat(obj metav1.Object) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == execution.FieldManager {
			return true
		}
	}
	return false
}

// Places says whether a binding's resource is, or is about to be, in
// cluster: the binding is not being deleted and names cluster in
// spec.clusters, in the clusters of a dependent binding (spec.requiredBy),
// or as the fromCluster of an eviction task (whose old copy is kept).
func Places(meta metav1.Object, spec *workv1alpha2.ResourceBindingSpec, cluster string) bool {
	if meta.GetDeletionTimestamp() != nil {
		return false
	}
	for _, c := range spec.Clusters {
		if c.Name == cluster {
			return true
		}
	}
	for _, r := range spec.RequiredBy {
		for _, c := range r.Clusters {
			if c.Name == cluster {
				return true
			}
		}
	}
	for _, t := range spec.GracefulEvictionTasks {
		if t.FromCluster == cluster {
			return true
		}
	}
	return false
}

// Sightings remembers, per cluster, when each orphan was first found, so
// that it is removed only once it has been one for the grace period. It is
// kept in memory only: a restart starts the periods over, which delays a
// removal and never hastens one.
type Sightings struct {
	mu    sync.Mutex
	first map[string]map[types.UID]time.Time
}

// Observe records the orphans found now in cluster and forgets the ones not
// found any more (adopted, removed, or no longer orphans). It returns, for
// each orphan, when it was first found.
func (s *Sightings) Observe(cluster string, orphans []types.UID, now time.Time) map[types.UID]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first == nil {
		s.first = map[string]map[types.UID]time.Time{}
	}
	prev := s.first[cluster]
	cur := make(map[types.UID]time.Time, len(orphans))
	for _, uid := range orphans {
		if t, ok := prev[uid]; ok {
			cur[uid] = t
		} else {
			cur[uid] = now
		}
	}
	if len(cur) == 0 {
		delete(s.first, cluster)
	} else {
		s.first[cluster] = cur
	}
	out := make(map[types.UID]time.Time, len(cur))
	for k, v := range cur {
		out[k] = v
	}
	return out
}

// Forget drops everything known of cluster.
func (s *Sightings) Forget(cluster string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.first, cluster)
}

// Due says whether an orphan first found at first may be removed at now,
// and otherwise how long is left. A first sighting in the future (a clock
// step back) is not due.
func Due(first, now time.Time, grace time.Duration) (bool, time.Duration) {
	if first.After(now) {
		return false, grace
	}
	left := first.Add(grace).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}

// NamespaceVerdict is what the namespace rule says of one member namespace.
type NamespaceVerdict string

// Namespace verdicts.
const (
	// NamespaceGone: absent or terminating already; nothing to do.
	NamespaceGone NamespaceVerdict = "Gone"
	// NamespaceNotCreated: Lifeboat did not create it; never removed.
	NamespaceNotCreated NamespaceVerdict = "NotCreatedByLifeboat"
	// NamespaceInUse: a Work of the cluster puts an object in it, or
	// propagates it (a v1 Namespace manifest).
	NamespaceInUse NamespaceVerdict = "InUse"
	// NamespaceHoldsLifeboatObjects: objects labelled managed are in it
	// (orphans, until they are removed).
	NamespaceHoldsLifeboatObjects NamespaceVerdict = "HoldsLifeboatObjects"
	// NamespaceHoldsOthersObjects: something Lifeboat did not put there is
	// in it; deleting the namespace would delete it. Never removed.
	NamespaceHoldsOthersObjects NamespaceVerdict = "HoldsOthersObjects"
	// NamespaceWait: what is left is going away (being deleted, or
	// dependents of deleted owners the garbage collector removes), or not
	// everything could be listed; look again shortly.
	NamespaceWait NamespaceVerdict = "Wait"
	// NamespaceRemovable: created by Lifeboat and empty of everything but
	// what every namespace holds.
	NamespaceRemovable NamespaceVerdict = "Removable"
)

// NamespaceGate is the first half of the namespace rule, before the
// namespace's contents are listed:
//
//  1. an absent or terminating namespace is Gone;
//  2. one without CreatedNamespaceAnnotation was not created by Lifeboat
//     and is never removed;
//  3. one a Work of the cluster puts an object in, or propagates, is InUse.
//
// proceed is true when the contents decide (JudgeContents).
func NamespaceGate(ns metav1.Object, inUse bool) (v NamespaceVerdict, proceed bool) {
	switch {
	case ns == nil || ns.GetDeletionTimestamp() != nil:
		return NamespaceGone, false
	case !execution.CreatedByLifeboat(ns):
		return NamespaceNotCreated, false
	case inUse:
		return NamespaceInUse, false
	}
	return "", true
}

// Content is one object found in a namespace.
type Content struct {
	Resource schema.GroupResource
	Object   *unstructured.Unstructured
}

func (c Content) String() string {
	return fmt.Sprintf("%s %s", c.Resource.String(), c.Object.GetName())
}

// JudgeContents is the second half of the namespace rule: whether a
// namespace Lifeboat created, that no Work uses, may be removed given what
// is in it. complete is false when some API groups of the member could not
// be listed. Each object is, in this order:
//
//  1. something every namespace holds (Events, the ConfigMap
//     kube-root-ca.crt, the ServiceAccount default and its token Secrets):
//     ignored;
//  2. being deleted: going;
//  3. labelled managed: Lifeboat's;
//  4. owned (ownerReferences) by an object in the namespace: ignored, its
//     owner decides; owned only by objects not there: going (the garbage
//     collector removes it);
//  5. Endpoints without owners: going (the endpoints controller removes
//     them with their Service, which is judged itself while it is there);
//  6. anything else: someone else's.
//
// Someone else's object keeps the namespace for good; then Lifeboat's
// objects keep it until they go; then an incomplete listing or going
// objects mean Wait; an empty namespace is Removable. first is the object
// that decided, for messages.
func JudgeContents(contents []Content, complete bool) (v NamespaceVerdict, first string) {
	present := map[types.UID]bool{}
	for _, c := range contents {
		present[c.Object.GetUID()] = true
	}
	var lifeboats, going string
	for _, c := range contents {
		o := c.Object
		switch {
		case everyNamespaceHolds(c):
		case o.GetDeletionTimestamp() != nil:
			going = firstOf(going, c.String())
		case execution.IsManaged(o):
			lifeboats = firstOf(lifeboats, c.String())
		case len(o.GetOwnerReferences()) > 0:
			if !anyOwnerPresent(o, present) {
				going = firstOf(going, c.String())
			}
		case c.Resource == (schema.GroupResource{Resource: "endpoints"}):
			going = firstOf(going, c.String())
		default:
			return NamespaceHoldsOthersObjects, c.String()
		}
	}
	switch {
	case lifeboats != "":
		return NamespaceHoldsLifeboatObjects, lifeboats
	case !complete:
		return NamespaceWait, "some API groups could not be listed"
	case going != "":
		return NamespaceWait, going
	}
	return NamespaceRemovable, ""
}

func firstOf(current, next string) string {
	if current != "" {
		return current
	}
	return next
}

func anyOwnerPresent(o metav1.Object, present map[types.UID]bool) bool {
	for _, ref := range o.GetOwnerReferences() {
		if present[ref.UID] {
			return true
		}
	}
	return false
}

// everyNamespaceHolds says whether c is something the member's own
// controllers put in every namespace, or an Event.
func everyNamespaceHolds(c Content) bool {
	name := c.Object.GetName()
	switch c.Resource {
	case schema.GroupResource{Resource: "events"}, schema.GroupResource{Group: "events.k8s.io", Resource: "events"}:
		return true
	case schema.GroupResource{Resource: "configmaps"}:
		return name == "kube-root-ca.crt"
	case schema.GroupResource{Resource: "serviceaccounts"}:
		return name == "default"
	case schema.GroupResource{Resource: "secrets"}:
		typ, _, _ := unstructured.NestedString(c.Object.Object, "type")
		return typ == "kubernetes.io/service-account-token" &&
			c.Object.GetAnnotations()["kubernetes.io/service-account.name"] == "default"
	}
	return false
}

// managedSelector lists only objects labelled managed.
var managedSelector = membercluster.ManagedLabel + "=" + membercluster.ManagedLabelValue
