package dependencies

import (
	"encoding/json"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/detector"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/names"
)

// DependedByLabelKey is the label an attached binding carries for each
// binding that depends on it: the prefix
// resourcebinding.karmada.io/depended-by- and a short safe encoding of the
// FNV-32a hash of "<namespace>/<name>" of the depending binding. Its value is
// that binding's permanent ID.
func DependedByLabelKey(namespace, name string) string {
	return workv1alpha2.BindingDependedByLabelKeyPrefix + names.Hash(namespace+"/"+name)
}

// dependencyKey is the index value of one dependency.
func dependencyKey(apiVersion, kind, namespace, name string) string {
	return apiVersion + "|" + kind + "|" + namespace + "|" + name
}

// presentDependency is a dependency found in the control plane.
type presentDependency struct {
	interpreter.Dependency
	UID             types.UID
	ResourceVersion string
}

// parentSettings are the fields of a depending binding that attached-only
// bindings inherit.
type parentSettings struct {
	ConflictResolution          policyv1alpha1.ConflictResolution
	PreserveResourcesOnDeletion bool
}

func settingsOf(rb *workv1alpha2.ResourceBinding) parentSettings {
	return parentSettings{
		ConflictResolution:          rb.Spec.ConflictResolution,
		PreserveResourcesOnDeletion: ptr.Deref(rb.Spec.PreserveResourcesOnDeletion, false),
	}
}

// plan is what the distributor writes for one depending binding.
type plan struct {
	Create []*workv1alpha2.ResourceBinding
	Update []*workv1alpha2.ResourceBinding
	Delete []*workv1alpha2.ResourceBinding
	// Conflicts names attached bindings whose depending bindings disagree on
	// conflictResolution or preserveResourcesOnDeletion.
	Conflicts []string
	// Waiting names dependencies whose binding cannot be written yet: the
	// name is held by a binding being deleted, by the binding of a previous
	// object of that name, or by another object's binding.
	Waiting []string
}

func (p plan) empty() bool {
	return len(p.Create)+len(p.Update)+len(p.Delete) == 0
}

// requiredClusters are the clusters a depending binding needs its
// dependencies in: its scheduled clusters and, as a Lifeboat improvement over
// Karmada (failover reference §2.12), the clusters of its graceful eviction
// tasks whose old copy is kept (failover.KeepsOldCopy: Gracefully or Never,
// a task the user has not confirmed, and even Directly while nothing is
// placed instead), so the ConfigMaps, Secrets and claims of a copy that is
// kept are not removed under it. Sorted by name.
func requiredClusters(parent *workv1alpha2.ResourceBinding) []workv1alpha2.TargetCluster {
	seen := map[string]bool{}
	var out []workv1alpha2.TargetCluster
	for _, c := range parent.Spec.Clusters {
		if !seen[c.Name] {
			seen[c.Name] = true
			out = append(out, c)
		}
	}
	for _, t := range parent.Spec.GracefulEvictionTasks {
		if seen[t.FromCluster] || !failover.KeepsOldCopy(&parent.Spec, t.FromCluster) {
			continue
		}
		seen[t.FromCluster] = true
		out = append(out, workv1alpha2.TargetCluster{Name: t.FromCluster, Replicas: ptr.Deref(t.Replicas, 0)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// planAttached decides the attached bindings of one depending binding
// (parent). active says whether parent wants its dependencies propagated
// (propagateDeps and not being deleted); deps are its dependencies that exist;
// existing holds, by name, the bindings that carry parent's depended-by label
// or are named after one of deps; settings holds the settings of parent and
// of every binding named in existing bindings' requiredBy.
//
//  1. For each dependency: create its attached binding, or add parent's
//     requiredBy entry (with parent's clusters) and depended-by label to the
//     existing one, and refresh its spec.resource.
//  2. For each existing binding that is no longer a dependency: remove
//     parent's entry and label; delete it when nobody requires it any more
//     and it has no placement (no policy of its own).
//  3. Attached-only bindings (no placement) inherit conflictResolution
//     Overwrite and preserveResourcesOnDeletion true when any depending
//     binding has them.
func planAttached(parent *workv1alpha2.ResourceBinding, active bool, deps []presentDependency,
	existing map[string]*workv1alpha2.ResourceBinding, settings map[types.NamespacedName]parentSettings) plan {
	var out plan
	labelKey := DependedByLabelKey(parent.Namespace, parent.Name)
	parentID := parent.Labels[workv1alpha2.ResourceBindingPermanentIDLabel]
	snapshot := workv1alpha2.BindingSnapshot{Namespace: parent.Namespace, Name: parent.Name, Clusters: requiredClusters(parent)}

	want := map[string]presentDependency{}
	if active {
		for _, d := range deps {
			want[detector.BindingName(d.Kind, d.Name)] = d
		}
	}
	for _, name := range sortedKeys(want) {
		d := want[name]
		cur := existing[name]
		if cur == nil {
			b := newAttached(parent.Namespace, name, d)
			addRequirement(b, labelKey, parentID, snapshot)
			if deriveSettings(b, settings) {
				out.Conflicts = append(out.Conflicts, name)
			}
			out.Create = append(out.Create, b)
			continue
		}
		switch {
		case !cur.DeletionTimestamp.IsZero(), !refersTo(cur.Spec.Resource, d):
			out.Waiting = append(out.Waiting, name)
			continue
		case cur.Spec.Resource.UID != "" && cur.Spec.Resource.UID != d.UID:
			// The dependency was deleted and created again. An attached-only
			// binding is replaced; a policy's binding is replaced by the
			// detector.
			if cur.Spec.Placement == nil && !claimed(cur) {
				out.Delete = append(out.Delete, cur)
			}
			out.Waiting = append(out.Waiting, name)
			continue
		}
		b := cur.DeepCopy()
		b.Spec.Resource.UID = d.UID
		b.Spec.Resource.ResourceVersion = d.ResourceVersion
		addRequirement(b, labelKey, parentID, snapshot)
		if deriveSettings(b, settings) {
			out.Conflicts = append(out.Conflicts, name)
		}
		if !equality.Semantic.DeepEqual(cur, b) {
			out.Update = append(out.Update, b)
		}
	}
	for _, name := range sortedKeys(existing) {
		if _, ok := want[name]; ok {
			continue
		}
		cur := existing[name]
		b := cur.DeepCopy()
		if !removeRequirement(b, labelKey, parent.Namespace, parent.Name) {
			continue
		}
		if len(b.Spec.RequiredBy) == 0 && b.Spec.Placement == nil && !claimed(b) {
			if cur.DeletionTimestamp.IsZero() {
				out.Delete = append(out.Delete, cur)
			}
			continue
		}
		deriveSettings(b, settings)
		out.Update = append(out.Update, b)
	}
	return out
}

func newAttached(namespace, name string, d presentDependency) *workv1alpha2.ResourceBinding {
	return &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:  namespace,
			Name:       name,
			Finalizers: []string{workv1alpha2.BindingControllerFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         d.APIVersion,
				Kind:               d.Kind,
				Name:               d.Name,
				UID:                d.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{
				APIVersion:      d.APIVersion,
				Kind:            d.Kind,
				Namespace:       d.Namespace,
				Name:            d.Name,
				UID:             d.UID,
				ResourceVersion: d.ResourceVersion,
			},
			ConflictResolution: policyv1alpha1.ConflictAbort,
		},
	}
}

// refersTo reports whether a binding's resource is the dependency (same
// group, kind, namespace and name).
func refersTo(ref workv1alpha2.ObjectReference, d presentDependency) bool {
	a, errA := schema.ParseGroupVersion(ref.APIVersion)
	b, errB := schema.ParseGroupVersion(d.APIVersion)
	return errA == nil && errB == nil && a.Group == b.Group && ref.Kind == d.Kind &&
		ref.Namespace == d.Namespace && ref.Name == d.Name
}

func claimed(b *workv1alpha2.ResourceBinding) bool {
	return b.Labels[policyv1alpha1.PropagationPolicyPermanentIDLabel] != "" ||
		b.Labels[policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel] != ""
}

// addRequirement sets parent's depended-by label and requiredBy entry.
func addRequirement(b *workv1alpha2.ResourceBinding, labelKey, parentID string, s workv1alpha2.BindingSnapshot) {
	if b.Labels == nil {
		b.Labels = map[string]string{}
	}
	b.Labels[labelKey] = parentID
	replaced := false
	for i := range b.Spec.RequiredBy {
		if b.Spec.RequiredBy[i].Namespace == s.Namespace && b.Spec.RequiredBy[i].Name == s.Name {
			b.Spec.RequiredBy[i] = *s.DeepCopy()
			replaced = true
		}
	}
	if !replaced {
		b.Spec.RequiredBy = append(b.Spec.RequiredBy, *s.DeepCopy())
	}
	sort.Slice(b.Spec.RequiredBy, func(i, j int) bool {
		x, y := b.Spec.RequiredBy[i], b.Spec.RequiredBy[j]
		if x.Namespace != y.Namespace {
			return x.Namespace < y.Namespace
		}
		return x.Name < y.Name
	})
}

// removeRequirement removes parent's label and requiredBy entry and reports
// whether there was either.
func removeRequirement(b *workv1alpha2.ResourceBinding, labelKey, namespace, name string) bool {
	_, had := b.Labels[labelKey]
	delete(b.Labels, labelKey)
	kept := b.Spec.RequiredBy[:0:0]
	for _, s := range b.Spec.RequiredBy {
		if s.Namespace == namespace && s.Name == name {
			had = true
			continue
		}
		kept = append(kept, s)
	}
	if len(kept) == 0 {
		kept = nil
	}
	b.Spec.RequiredBy = kept
	return had
}

// deriveSettings sets conflictResolution and preserveResourcesOnDeletion of
// an attached-only binding from its depending bindings and reports whether
// they disagree. Bindings with a placement keep their policy's settings.
func deriveSettings(b *workv1alpha2.ResourceBinding, settings map[types.NamespacedName]parentSettings) (conflict bool) {
	if b.Spec.Placement != nil {
		return false
	}
	var overwrite, abort, preserve, discard bool
	known := false
	for _, s := range b.Spec.RequiredBy {
		ps, ok := settings[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}]
		if !ok {
			continue
		}
		known = true
		if ps.ConflictResolution == policyv1alpha1.ConflictOverwrite {
			overwrite = true
		} else {
			abort = true
		}
		if ps.PreserveResourcesOnDeletion {
			preserve = true
		} else {
			discard = true
		}
	}
	if !known {
		return false
	}
	b.Spec.ConflictResolution = policyv1alpha1.ConflictAbort
	if overwrite {
		b.Spec.ConflictResolution = policyv1alpha1.ConflictOverwrite
	}
	b.Spec.PreserveResourcesOnDeletion = ptr.To(preserve)
	return (overwrite && abort) || (preserve && discard)
}

// dependenciesAnnotation is the JSON recorded in the depending binding's
// resourcebinding.karmada.io/dependencies annotation.
func dependenciesAnnotation(deps []interpreter.Dependency) string {
	if len(deps) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(deps)
	return string(b)
}

// parseDependenciesAnnotation reads the annotation back; malformed JSON
// yields nothing.
func parseDependenciesAnnotation(v string) []interpreter.Dependency {
	var deps []interpreter.Dependency
	if v == "" || json.Unmarshal([]byte(v), &deps) != nil {
		return nil
	}
	return deps
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
