package failover

import (
	"fmt"

	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
)

// Event reasons. Karmada's names where Karmada has the event.
const (
	// EventReasonEvicted (Warning): a cluster was evicted from the
	// binding; on the binding and the resource template.
	EventReasonEvicted = "EvictWorkloadFromCluster"
	// EventReasonEvictionSucceed (Normal): an eviction task finished;
	// Karmada's name.
	EventReasonEvictionSucceed = "EvictWorkloadFromClusterSucceed"
	// EventReasonEvictionFailed (Warning): the eviction could not be
	// written; Karmada's name.
	EventReasonEvictionFailed = "EvictWorkloadFromClusterFailed"
	// EventReasonStatePreservationFailed (Warning): a statePreservation
	// rule produced no value; the failover went on without it.
	EventReasonStatePreservationFailed = "StatePreservationFailed"
	// EventReasonStateCarriedForward (Normal): a chained failover reused
	// the state of an earlier one.
	EventReasonStateCarriedForward = "StateCarriedForward"
	// EventReasonNoFailoverTarget (Warning): nothing can take an evicted
	// workload; the old copy is kept.
	EventReasonNoFailoverTarget = "NoFailoverTarget"
	// EventReasonReplacementHealthy (Normal): the replacement of an evicted
	// copy is healthy.
	EventReasonReplacementHealthy = "FailoverReplacementHealthy"
	// EventReasonEvictionCancelled (Normal): an eviction was undone because
	// its cluster recovered before another cluster took the workload.
	EventReasonEvictionCancelled = "EvictionCancelled"
	// EventReasonFailbackAbandoned (Warning): the copy a failback moved
	// back was not healthy within the grace period; the workload stays
	// where it ran.
	EventReasonFailbackAbandoned = "FailbackAbandoned"
	// EventReasonEvictedCopyKept (Warning): an eviction task's grace
	// period passed, but the copy it keeps is the only Healthy one and its
	// cluster is usable again: the copy is kept until the replacement is
	// Healthy.
	EventReasonEvictedCopyKept = "EvictedCopyKept"
)

// Condition of a binding written by the graceful-eviction controller while
// an eviction task is open.
const (
	// ConditionFailoverTargetAvailable is True when an evicted workload has
	// a cluster to go to, False (reason NoFailoverTarget) when nothing fits
	// and the old copy is kept. Removed when no task is open.
	ConditionFailoverTargetAvailable = "FailoverTargetAvailable"
	// ReasonNoFailoverTarget: the scheduler found no cluster.
	ReasonNoFailoverTarget = "NoFailoverTarget"
	// ReasonFailoverTargetPlaced: the workload has a new placement.
	ReasonFailoverTargetPlaced = "FailoverTargetPlaced"
)

// eventBoth records an event on the binding and on its resource template.
func eventBoth(rec record.EventRecorder, obj client.Object, spec *workv1alpha2.ResourceBindingSpec, eventType, reason, format string, args ...interface{}) {
	if rec == nil {
		return
	}
	eventbudget.RecordBoth(rec, obj, spec, eventType, reason, fmt.Sprintf(format, args...))
}

// eventFrom records an event on the binding and on its resource template,
// unless budget holds it back: a failover's Events about the workloads
// leaving one cluster are counted in a summary on that Cluster past the
// budget's burst (eventbudget).
func eventFrom(budget *eventbudget.Budget, cluster string, rec record.EventRecorder, obj client.Object, spec *workv1alpha2.ResourceBindingSpec, eventType, reason, format string, args ...any) {
	if rec == nil || !budget.Allow(eventbudget.Cluster(cluster), eventType, reason, eventbudget.Workload(obj, spec)) {
		return
	}
	eventBoth(rec, obj, spec, eventType, reason, format, args...)
}
