package binding

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// target is a cluster that gets a Work.
type target struct {
	cluster  string
	replicas int32
	// scheduled is true for clusters of spec.clusters and kept copies that
	// follow the template. Clusters only listed by spec.requiredBy
	// (dependency propagation) get the template as is: their replicas are
	// not revised.
	scheduled bool
	// kept: the copy an eviction task keeps; its Work is updated, never
	// created.
	kept bool
}

// targetClusters returns the clusters that get a Work, sorted by name:
// spec.clusters, then every cluster of spec.requiredBy[] not already
// listed.
func targetClusters(spec *workv1alpha2.ResourceBindingSpec) []target {
	seen := sets.New[string]()
	var out []target
	for _, c := range spec.Clusters {
		if c.Name == "" || seen.Has(c.Name) {
			continue
		}
		seen.Insert(c.Name)
		out = append(out, target{cluster: c.Name, replicas: c.Replicas, scheduled: true})
	}
	for _, snap := range spec.RequiredBy {
		for _, c := range snap.Clusters {
			if c.Name == "" || seen.Has(c.Name) {
				continue
			}
			seen.Insert(c.Name)
			out = append(out, target{cluster: c.Name})
		}
	}
	slices.SortFunc(out, func(a, b target) int { return cmp.Compare(a.cluster, b.cluster) })
	return out
}

// clustersToKeep returns the clusters whose existing Work must survive
// although the cluster is no longer a target: the fromCluster of every
// graceful eviction task the hooks keep (all of them without hooks). The
// old copy stays until the graceful-eviction controller removes the task:
// when the replacement is healthy, the grace period has passed, or a user
// lifted suppressDeletion. While a replacement is placed it is left as it
// is; while nothing is placed instead it is the workload, and follows the
// template (keptTargets).
func clustersToKeep(spec *workv1alpha2.ResourceBindingSpec, eviction EvictionHooks) sets.Set[string] {
	keep := sets.New[string]()
	for _, task := range spec.GracefulEvictionTasks {
		if task.FromCluster == "" {
			continue
		}
		if eviction == nil || eviction.KeepWorkFor(spec, task.FromCluster) {
			keep.Insert(task.FromCluster)
		}
	}
	return keep
}

// keptTargets returns the kept copies (clustersToKeep) that follow the
// template, with their replicas, sorted by cluster: the hooks decide
// (RenderKeptCopy). Only existing Works are rendered again; a kept copy is
// never created.
func keptTargets(b bindingObject, eviction EvictionHooks) []target {
	if eviction == nil {
		return nil
	}
	var out []target
	for _, c := range sets.List(clustersToKeep(b.spec, eviction)) {
		if replicas, ok := eviction.RenderKeptCopy(b.obj.GetGeneration(), b.spec, b.status, c); ok {
			out = append(out, target{cluster: c, replicas: replicas, scheduled: true, kept: true})
		}
	}
	return out
}

// EvictionHooks are the failover decisions the binding controller follows
// (implemented by internal/failover):
//   - KeepWorkFor: whether the old copy in an evicted cluster stays (graceful
//     eviction, Never, or no failover target yet) or is deleted (Directly,
//     or a user confirmed the deletion);
//   - RenderKeptCopy: whether a kept copy follows the template, and with how
//     many replicas (while nothing is placed instead, or the scheduler
//     failed to place the binding);
//   - BlockedClusters: target clusters whose Work must not be created yet,
//     because a Directly eviction deletes the old copy first.
//
// Nil keeps every evicted cluster's Work as it is and blocks nothing.
type EvictionHooks interface {
	KeepWorkFor(spec *workv1alpha2.ResourceBindingSpec, cluster string) bool
	RenderKeptCopy(generation int64, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, cluster string) (replicas int32, render bool)
	BlockedClusters(spec *workv1alpha2.ResourceBindingSpec) []string
}

// expectedClusters are the clusters whose Works belong to the binding: the
// targets and the clusters to keep. The FullyApplied condition and
// status.aggregatedStatus are computed over this set.
func expectedClusters(spec *workv1alpha2.ResourceBindingSpec, eviction EvictionHooks) sets.Set[string] {
	expected := clustersToKeep(spec, eviction)
	for _, t := range targetClusters(spec) {
		expected.Insert(t.cluster)
	}
	return expected
}

// orphanWorks returns the Works to delete: those in an execution namespace
// whose cluster is not expected, that are not already being deleted.
func orphanWorks(works []workv1alpha1.Work, expected sets.Set[string]) []*workv1alpha1.Work {
	var out []*workv1alpha1.Work
	for i := range works {
		w := &works[i]
		cluster, ok := ClusterOfNamespace(w.Namespace)
		if !ok || expected.Has(cluster) || !w.DeletionTimestamp.IsZero() {
			continue
		}
		out = append(out, w)
	}
	return out
}

// mayAdoptWork says whether a binding (self) may take over an existing Work
// of its Work name that its index did not list, from the binding the Work's
// annotations name (owner; named is false when they name none):
//  1. a Work naming self is its own (the cache had not listed it yet);
//  2. a Work naming another binding that no longer exists was left by it
//     (a binding renamed or replaced): it is taken over;
//  3. a Work naming another binding that exists belongs to it: the two
//     templates' Work names collide (names are cut to 63 characters and
//     end in a 32-bit hash), and taking it would move the other template's
//     copies away;
//  4. a Work naming no binding was not written by this controller.
func mayAdoptWork(self, owner types.NamespacedName, named, ownerExists bool) bool {
	switch {
	case !named:
		return false
	case owner == self:
		return true
	default:
		return !ownerExists
	}
}
