package failover

import (
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// historyKey identifies the eviction behind a history entry: the evicted
// cluster and the task's creation time. The history is derived from the
// tasks with this key, so an entry is recorded exactly once however many
// times the derivation runs, and nothing is lost when a status write fails
// after the eviction's spec write.
type historyKey struct {
	cluster string
	time    int64
}

// historyChange is what syncHistory did, for Events and metrics.
type historyChange struct {
	// appended are the new entries.
	appended []workv1alpha2.FailoverHistoryItem
	// healed are the entries whose replacement just became Healthy.
	healed []workv1alpha2.FailoverHistoryItem
}

func (c historyChange) empty() bool { return len(c.appended) == 0 && len(c.healed) == 0 }

// scheduled reports whether the scheduler has handled the binding's
// current generation, i.e. spec.clusters is the placement after the last
// eviction.
func scheduled(generation int64, status *workv1alpha2.ResourceBindingStatus) bool {
	return status.SchedulerObservedGeneration >= generation
}

// placementHealthy reports whether every scheduled cluster reports
// Healthy for the placement in spec.clusters now; false for an empty
// placement. The aggregatedStatus the binding carries may have been written
// for the placement before the scheduler's last change (a cluster's share
// raised from 2 to 4 replicas, still Healthy at 2): it counts only when the
// PlacementHealthy condition written with it names this placement.
func placementHealthy(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) bool {
	if !workv1alpha2.IsPlacementHealthy(spec.Clusters, status.AggregatedStatus) {
		return false
	}
	c := meta.FindStatusCondition(status.Conditions, workv1alpha2.PlacementHealthy)
	return c != nil && c.Status == metav1.ConditionTrue && c.Message == workv1alpha2.PlacementHealthyMessage(spec.Clusters)
}

// healthySince is when the binding's placement became Healthy, as the
// binding status controller recorded it (the PlacementHealthy condition's
// lastTransitionTime), so that a history entry written after a hold or a
// restart records when the replacement became Healthy, not when this
// controller looked; now when the condition does not say (yet).
func healthySince(status *workv1alpha2.ResourceBindingStatus, now time.Time) time.Time {
	if c := meta.FindStatusCondition(status.Conditions, workv1alpha2.PlacementHealthy); c != nil && c.Status == metav1.ConditionTrue && c.LastTransitionTime.Time.Before(now) {
		return c.LastTransitionTime.Time
	}
	return now
}

// syncHistory returns status.failoverHistory brought up to date with the
// binding, and what changed:
//  1. every eviction task (with a creation time) has an entry;
//  2. entries without clustersAfter get the placement after their
//     eviction: the clustersBefore of the next, later eviction if there is
//     one (the current placement may be several failovers further on, e.g.
//     A→B→C before this controller saw B placed), else the current
//     placement once the scheduler has placed it (and it is not empty);
//  3. entries without replacementHealthyTime get now (healthySince, in the
//     controller), but never a time before their eviction, once every
//     cluster of the new placement is Healthy. A requested move (Failback
//     or Rebalance) records where the copy moved to became Healthy, not
//     that some copy runs: it gets one only while every cluster of its
//     clustersAfter is in spec.clusters, and never once a later entry
//     took the move back (undoneLater: the failback was abandoned, or a
//     cluster it moved to failed and the copy left behind is the
//     workload again);
//  4. at most MaxFailoverHistoryItems entries are kept, oldest dropped.
func syncHistory(generation int64, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, now time.Time) ([]workv1alpha2.FailoverHistoryItem, historyChange) {
	var change historyChange
	history := make([]workv1alpha2.FailoverHistoryItem, 0, len(status.FailoverHistory)+len(spec.GracefulEvictionTasks))
	for i := range status.FailoverHistory {
		history = append(history, *status.FailoverHistory[i].DeepCopy())
	}
	known := map[historyKey]bool{}
	for _, h := range history {
		known[historyKey{h.FromCluster, h.Time.Unix()}] = true
	}
	full := len(history) >= workv1alpha2.MaxFailoverHistoryItems

	// 1. One entry per task.
	for _, t := range spec.GracefulEvictionTasks {
		if t.CreationTimestamp == nil {
			continue // the graceful-eviction controller stamps it first
		}
		key := historyKey{t.FromCluster, t.CreationTimestamp.Unix()}
		if known[key] {
			continue
		}
		// A full history already dropped entries older than its oldest
		// one; re-adding them would only drop them again.
		if full && t.CreationTimestamp.Unix() < history[0].Time.Unix() {
			continue
		}
		known[key] = true
		item := workv1alpha2.FailoverHistoryItem{
			Time:           *t.CreationTimestamp.DeepCopy(),
			Reason:         t.Reason,
			Producer:       t.Producer,
			FromCluster:    t.FromCluster,
			PurgeMode:      policyv1alpha1.NormalizePurgeMode(t.PurgeMode),
			ClustersBefore: append([]string(nil), t.ClustersBeforeFailover...),
			Message:        t.Message,
		}
		if len(t.PreservedLabelState) > 0 {
			item.PreservedLabelState = make(map[string]string, len(t.PreservedLabelState))
			for k, v := range t.PreservedLabelState {
				item.PreservedLabelState[k] = v
			}
		}
		history = append(history, item)
		change.appended = append(change.appended, item)
	}
	sort.SliceStable(history, func(i, j int) bool { return history[i].Time.Before(&history[j].Time) })

	// 2 and 3. Placement and health of the replacement.
	placed := scheduled(generation, status) && len(spec.Clusters) > 0
	healthy := placed && placementHealthy(spec, status)
	for i := range history {
		h := &history[i]
		if len(h.ClustersAfter) == 0 {
			if next, ok := placementBeforeNext(history[i+1:], h.Time); ok {
				h.ClustersAfter = next
			} else if placed {
				h.ClustersAfter = clusterNames(spec.Clusters)
			}
		}
		if healthy && h.ReplacementHealthyTime == nil && len(h.ClustersAfter) > 0 && !undoneLater(history[i+1:], *h) &&
			(!requestedMove(h.Reason) || placedOn(spec, h.ClustersAfter)) {
			// A placement already Healthy before the eviction (the
			// survivors of a Duplicated workload) was Healthy at once.
			stamp := metav1.NewTime(now).Rfc3339Copy()
			if stamp.Before(&h.Time) {
				stamp = h.Time
			}
			h.ReplacementHealthyTime = stamp.DeepCopy()
			change.healed = append(change.healed, *h.DeepCopy())
		}
	}

	// 4. Bound.
	if extra := len(history) - workv1alpha2.MaxFailoverHistoryItems; extra > 0 {
		history = history[extra:]
	}
	if len(history) == 0 {
		history = nil
	}
	return history, change
}

// placementBeforeNext returns the clustersBefore of the first entry of
// later (sorted by time) that is strictly after t and records one: the
// placement right after the eviction at t.
func placementBeforeNext(later []workv1alpha2.FailoverHistoryItem, t metav1.Time) ([]string, bool) {
	for _, n := range later {
		if n.Time.Unix() > t.Unix() && len(n.ClustersBefore) > 0 {
			return append([]string(nil), n.ClustersBefore...), true
		}
	}
	return nil, false
}

// historyOpen reports whether syncHistory may still change an entry: the
// replacement was not placed or has not been Healthy yet.
func historyOpen(status *workv1alpha2.ResourceBindingStatus) bool {
	for i, h := range status.FailoverHistory {
		if undoneLater(status.FailoverHistory[i+1:], h) {
			continue
		}
		if len(h.ClustersAfter) == 0 || h.ReplacementHealthyTime == nil {
			return true
		}
	}
	return false
}

// requestedMove reports whether reason moves a healthy workload on
// request (a failback or a rebalance), as opposed to a failover.
func requestedMove(reason string) bool {
	return reason == workv1alpha2.EvictionReasonFailback || reason == workv1alpha2.EvictionReasonRebalance
}

// placedOn reports whether every cluster of names is in spec.clusters.
func placedOn(spec *workv1alpha2.ResourceBindingSpec, names []string) bool {
	for _, n := range names {
		if !slices.ContainsFunc(spec.Clusters, func(t workv1alpha2.TargetCluster) bool { return t.Name == n }) {
			return false
		}
	}
	return true
}

// undoneLater reports whether h is a requested move (Failback or
// Rebalance) that a later entry of later (sorted by time) took back: an
// entry from a cluster h moved to, whether the failback was given up
// there (FailbackAbandoned) or the cluster failed and was evicted in turn.
// The copy h placed there is gone; whatever runs later is not its
// replacement, so h never gets a replacementHealthyTime.
func undoneLater(later []workv1alpha2.FailoverHistoryItem, h workv1alpha2.FailoverHistoryItem) bool {
	if !requestedMove(h.Reason) {
		return false
	}
	for _, n := range later {
		if !n.Time.Before(&h.Time) && contains(h.ClustersAfter, n.FromCluster) {
			return true
		}
	}
	return false
}
