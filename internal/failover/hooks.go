package failover

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/features"
)

// Hooks are the failover decisions the binding controller asks while it
// renders Works. They are pure functions of the binding.
type Hooks struct {
	// Gates turns label injection on or off (StatefulFailoverInjection).
	Gates *features.Gates
}

// NewHooks returns the hooks for the given gates.
func NewHooks(gates *features.Gates) Hooks { return Hooks{Gates: gates} }

// KeepWorkFor reports whether the Work of cluster, which is not in
// spec.clusters, must be kept instead of deleted as an orphan: true while
// an eviction task for cluster keeps the old copy (Gracefully, Never, or
// any mode while there is no cluster to fail over to), false otherwise
// (Directly deletes the old copy first; a user-confirmed task deletes it).
func (Hooks) KeepWorkFor(spec *workv1alpha2.ResourceBindingSpec, cluster string) bool {
	return KeepsOldCopy(spec, cluster)
}

// KeepsOldCopy is KeepWorkFor's rule, for whatever else must stay in
// cluster as long as the copy an eviction task keeps there (the ConfigMaps,
// Secrets and claims an attached binding propagates beside it).
func KeepsOldCopy(spec *workv1alpha2.ResourceBindingSpec, cluster string) bool {
	task := findTask(spec, cluster)
	if task == nil {
		return false
	}
	if task.SuppressDeletion != nil {
		return *task.SuppressDeletion
	}
	if policyv1alpha1.NormalizePurgeMode(task.PurgeMode) == policyv1alpha1.PurgeModeDirectly {
		// Never lose the last copy: with nothing to fail over to, even
		// Directly keeps the old copy until a target is placed; so does a
		// Divided share that is not placed anywhere yet (the clusters that
		// stay run fewer replicas than the workload has).
		return len(spec.Clusters) == 0 || unplacedShare(spec)
	}
	return true
}

// unplacedShare says whether a Divided workload's spec.clusters holds fewer
// replicas than spec.replicas: an evicted share is not placed yet (the
// scheduler has not answered, or could not place it).
func unplacedShare(spec *workv1alpha2.ResourceBindingSpec) bool {
	p := spec.Placement
	if p == nil || p.ReplicaScheduling == nil || p.ReplicaScheduling.ReplicaSchedulingType != policyv1alpha1.ReplicaSchedulingTypeDivided {
		return false
	}
	var placed int64
	for _, c := range spec.Clusters {
		placed += int64(c.Replicas)
	}
	return placed < int64(spec.Replicas)
}

// RenderKeptCopy reports whether the copy an eviction task keeps in
// cluster follows the template, and with how many replicas (KeptReplicas):
// while nothing is placed instead (spec.clusters is empty, or the
// scheduler failed to place the binding's current generation:
// schedulingFailed) that copy is the workload, or its share of it, so a
// fix, a new image or a scale must reach it. With a replacement placed the
// old copy is left as it is until it goes.
func (Hooks) RenderKeptCopy(generation int64, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, cluster string) (int32, bool) {
	task := findTask(spec, cluster)
	if task == nil || (len(spec.Clusters) > 0 && !schedulingFailed(generation, status)) {
		return 0, false
	}
	return KeptReplicas(spec, task), true
}

// HoldNewWorks reports whether some Works must not be created yet: a
// Directly eviction is open, and its old copy must be deleted before the
// new one is created. BlockedClusters says which.
func (h Hooks) HoldNewWorks(spec *workv1alpha2.ResourceBindingSpec) bool {
	return len(h.BlockedClusters(spec)) > 0
}

// BlockedClusters returns, sorted, the clusters of spec.clusters whose Work
// must not be created while a Directly eviction is open: those that were
// not scheduled before the eviction (all of them when the task does not
// record the placement before). Works that already exist may be updated.
// The graceful-eviction controller closes the task once the old copy is
// gone, or after the grace period when the old cluster is unreachable.
func (Hooks) BlockedClusters(spec *workv1alpha2.ResourceBindingSpec) []string {
	blocked := map[string]bool{}
	for _, t := range spec.GracefulEvictionTasks {
		if policyv1alpha1.NormalizePurgeMode(t.PurgeMode) != policyv1alpha1.PurgeModeDirectly {
			continue
		}
		if t.SuppressDeletion != nil {
			continue // kept by a user, or confirmed for deletion: no barrier
		}
		for _, c := range spec.Clusters {
			if !contains(t.ClustersBeforeFailover, c.Name) {
				blocked[c.Name] = true
			}
		}
	}
	if len(blocked) == 0 {
		return nil
	}
	out := make([]string, 0, len(blocked))
	for c := range blocked {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// LabelsToInject returns the preserved state to add as labels to the copy
// in cluster, or nil. Labels are injected, with the gate
// StatefulFailoverInjection on, into a cluster placed as the replacement
// of an eviction that preserved state: the newest eviction (open task or
// history entry) after which the cluster was scheduled and before which it
// was not. That eviction must be Directly (Immediately), as the seed
// restricts failover injection, or a failback: a workload moved back
// carries the state captured from the copy it leaves at the moment it
// moved, with the policy's statePreservation rules, so that a job restarts
// where it was instead of where it was before the outage. Unlike Karmada
// the labels stay after the task is closed, until a later eviction
// replaces them, because the history keeps the state.
func (h Hooks) LabelsToInject(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, cluster string) map[string]string {
	if !h.Gates.Enabled(features.StatefulFailoverInjection) {
		return nil
	}
	r, ok := placedBy(failoverRecords(spec, status), cluster)
	if !ok || len(r.state) == 0 {
		return nil
	}
	if r.purgeMode != policyv1alpha1.PurgeModeDirectly && r.reason != workv1alpha2.EvictionReasonFailback {
		return nil
	}
	out := make(map[string]string, len(r.state))
	for k, v := range r.state {
		out[k] = v
	}
	return out
}

// InjectLabels is the binding controller's state-injection hook: it adds
// LabelsToInject to the manifest rendered for cluster.
func (h Hooks) InjectLabels(obj client.Object, spec *workv1alpha2.ResourceBindingSpec, cluster string, manifest *unstructured.Unstructured) error {
	var status *workv1alpha2.ResourceBindingStatus
	switch b := obj.(type) {
	case *workv1alpha2.ResourceBinding:
		status = &b.Status
	case *workv1alpha2.ClusterResourceBinding:
		status = &b.Status
	}
	add := h.LabelsToInject(spec, status, cluster)
	if len(add) == 0 {
		return nil
	}
	labels := manifest.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range add {
		labels[k] = v
	}
	manifest.SetLabels(labels)
	return nil
}
