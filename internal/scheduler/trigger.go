package scheduler

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// Why a binding is (re)scheduled; used in logs.
const (
	triggerPlacementChanged = "PlacementChanged"
	triggerNotScheduled     = "NotScheduled"
	triggerReplicasChanged  = "ReplicasChanged"
	triggerReschedule       = "RescheduleTriggered"
	triggerAlways           = "DuplicatedOrNonWorkload"
	triggerClusterGone      = "ScheduledClusterUnusable"
)

// decision says whether to run the placement algorithm, and how.
type decision struct {
	// trigger is why; empty means there is nothing to schedule.
	trigger string
	// fresh: a manual reschedule is pending (spec.rescheduleTriggeredAt is
	// later than status.lastScheduledTime).
	fresh bool
}

// decide is Karmada's doScheduleBinding check, in its order, plus two
// Lifeboat additions (a binding whose last attempt failed is always retried,
// and so is one scheduled on a cluster that is gone or has an eviction task
// for it). clusters maps name to Cluster.
func decide(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, annotations map[string]string, clusters map[string]*clusterv1alpha1.Cluster) decision {
	d := decision{fresh: rescheduleRequested(spec, status)}
	switch {
	case placementChanged(spec.Placement, annotations[workv1alpha2.AppliedPlacementAnnotation], status.SchedulerObservedAffinityName):
		d.trigger = triggerPlacementChanged
	case !meta.IsStatusConditionTrue(status.Conditions, workv1alpha2.Scheduled):
		d.trigger = triggerNotScheduled
	case replicasChanged(spec):
		d.trigger = triggerReplicasChanged
	case d.fresh:
		d.trigger = triggerReschedule
	case isDuplicated(spec.Placement) || !isWorkload(spec):
		// Cheap and idempotent: the result only changes when the clusters
		// did, and then it should.
		d.trigger = triggerAlways
	case scheduledClusterUnusable(spec, clusters):
		d.trigger = triggerClusterGone
	}
	return d
}

// placementChanged compares the placement with the one recorded by the last
// schedule. With clusterAffinities an unrecorded term in use counts as a
// change.
func placementChanged(placement *policyv1alpha1.Placement, applied, observedAffinity string) bool {
	if applied == "" {
		return true
	}
	var last policyv1alpha1.Placement
	if err := json.Unmarshal([]byte(applied), &last); err != nil {
		return true
	}
	current := policyv1alpha1.Placement{}
	if placement != nil {
		current = *placement
	}
	if len(current.ClusterAffinities) > 0 && observedAffinity == "" {
		return true
	}
	return !equality.Semantic.DeepEqual(current, last)
}

// replicasChanged: Duplicated clusters must each have spec.replicas,
// Divided clusters must add up to it. An eviction removes a cluster from
// spec.clusters, so this is what reschedules a failed-over workload.
func replicasChanged(spec *workv1alpha2.ResourceBindingSpec) bool {
	if spec.Placement == nil || spec.Placement.ReplicaScheduling == nil {
		return false
	}
	if isDuplicated(spec.Placement) {
		for _, t := range spec.Clusters {
			if t.Replicas != spec.Replicas {
				return true
			}
		}
		return false
	}
	var sum int64
	for _, t := range spec.Clusters {
		sum += int64(t.Replicas)
	}
	return sum != int64(spec.Replicas)
}

func rescheduleRequested(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) bool {
	if spec.RescheduleTriggeredAt == nil {
		return false
	}
	return status.LastScheduledTime == nil || spec.RescheduleTriggeredAt.After(status.LastScheduledTime.Time)
}

// scheduledClusterUnusable: a scheduled cluster is gone, being deleted, or
// has an eviction task for this binding.
func scheduledClusterUnusable(spec *workv1alpha2.ResourceBindingSpec, clusters map[string]*clusterv1alpha1.Cluster) bool {
	evicting := map[string]bool{}
	for _, t := range spec.GracefulEvictionTasks {
		evicting[t.FromCluster] = true
	}
	for _, t := range spec.Clusters {
		c, ok := clusters[t.Name]
		if !ok || c.DeletionTimestamp != nil || evicting[t.Name] {
			return true
		}
	}
	return false
}

func isDuplicated(p *policyv1alpha1.Placement) bool {
	return p == nil || p.ReplicaScheduling == nil || p.ReplicaScheduling.ReplicaSchedulingType != policyv1alpha1.ReplicaSchedulingTypeDivided
}

func isWorkload(spec *workv1alpha2.ResourceBindingSpec) bool {
	return spec.Replicas > 0 || spec.ReplicaRequirements != nil
}

// lastScheduledTime is now, but never before a pending reschedule request,
// so that a request stamped by a clock ahead of ours is still consumed.
func lastScheduledTime(now metav1.Time, spec *workv1alpha2.ResourceBindingSpec) metav1.Time {
	if t := spec.RescheduleTriggeredAt; t != nil && t.After(now.Time) {
		return *t
	}
	return now
}
