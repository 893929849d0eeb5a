package rebalancer

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/lifeboat-dev/lifeboat/api/apps/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// observeGeneration returns the status of a newly observed generation:
// workloads (in order, without duplicates, at most MaxWorkloads), those
// that already had a result in status keeping it, the others pending;
// rescheduleTriggeredAt now; finishTime cleared unless every workload
// already has a result. It also reports how many workloads were left out
// for the bound.
func observeGeneration(status appsv1alpha1.WorkloadRebalancerStatus, generation int64, workloads []appsv1alpha1.ObjectReference, now time.Time) (appsv1alpha1.WorkloadRebalancerStatus, int) {
	known := map[appsv1alpha1.ObjectReference]appsv1alpha1.ObservedWorkload{}
	for _, w := range status.ObservedWorkloads {
		known[w.Workload] = w
	}
	out := appsv1alpha1.WorkloadRebalancerStatus{ObservedGeneration: generation}
	seen := map[appsv1alpha1.ObjectReference]bool{}
	dropped := 0
	for _, ref := range workloads {
		if seen[ref] {
			continue
		}
		seen[ref] = true
		if len(out.ObservedWorkloads) >= appsv1alpha1.MaxWorkloads {
			dropped++
			continue
		}
		w, ok := known[ref]
		if !ok || w.Result == "" {
			w = appsv1alpha1.ObservedWorkload{Workload: ref}
		}
		out.ObservedWorkloads = append(out.ObservedWorkloads, w)
	}
	stamp := metav1.NewTime(now).Rfc3339Copy()
	out.RescheduleTriggeredAt = &stamp
	if finished(out.ObservedWorkloads) {
		out.FinishTime = status.FinishTime
		if out.FinishTime == nil {
			out.FinishTime = stamp.DeepCopy()
		}
	}
	return out, dropped
}

// bindingView is what the decision reads of a workload's binding; nil
// pointers are unset fields.
type bindingView struct {
	rescheduleTriggeredAt *metav1.Time
	lastScheduledTime     *metav1.Time
}

// step is what to do for one pending workload.
type step struct {
	// trigger, if set, is the spec.rescheduleTriggeredAt to write.
	trigger *metav1.Time
	// result and reason, if set, finish the workload.
	result appsv1alpha1.RebalanceResult
	reason appsv1alpha1.RebalanceFailedReason
}

// decideWorkload decides one workload whose result is not known yet, given
// the rebalancer's request time requested and its binding (nil: none):
//
//  1. no binding: Failed, ReferencedBindingNotFound;
//  2. the binding holds no request at least as late as requested: write
//     one. It is requested, or one second after the binding's
//     lastScheduledTime when that is not before requested (times are kept
//     to the second, and the scheduler only takes a request later than its
//     last schedule as new);
//  3. the scheduler consumed the request (lastScheduledTime not before
//     rescheduleTriggeredAt): Successful;
//  4. otherwise wait for the scheduler.
func decideWorkload(requested metav1.Time, b *bindingView) step {
	if b == nil {
		return step{result: appsv1alpha1.RebalanceFailed, reason: appsv1alpha1.RebalanceObjectNotFound}
	}
	if b.rescheduleTriggeredAt == nil || b.rescheduleTriggeredAt.Before(&requested) {
		at := requested
		if b.lastScheduledTime != nil && !b.lastScheduledTime.Before(&requested) {
			at = metav1.NewTime(b.lastScheduledTime.Add(time.Second)).Rfc3339Copy()
		}
		return step{trigger: &at}
	}
	if b.lastScheduledTime != nil && !b.lastScheduledTime.Before(b.rescheduleTriggeredAt) {
		return step{result: appsv1alpha1.RebalanceSuccessful}
	}
	return step{}
}

// finished reports whether every workload has a result.
func finished(ws []appsv1alpha1.ObservedWorkload) bool {
	for _, w := range ws {
		if w.Result == "" {
			return false
		}
	}
	return true
}

// expiry says when a finished rebalancer is deleted: ok false when never
// (not finished, or no ttlSecondsAfterFinished).
func expiry(spec appsv1alpha1.WorkloadRebalancerSpec, status appsv1alpha1.WorkloadRebalancerStatus) (time.Time, bool) {
	if spec.TTLSecondsAfterFinished == nil || status.FinishTime == nil {
		return time.Time{}, false
	}
	return status.FinishTime.Add(time.Duration(*spec.TTLSecondsAfterFinished) * time.Second), true
}

// Moving reports whether a binding of this generation counts against the
// fleet-wide cap on rebalances (--rebalance-max-concurrent):
//
//   - it holds a request for a fresh schedule the scheduler has not made
//     yet (spec.rescheduleTriggeredAt after status.lastScheduledTime),
//     unless the request is a failback's (failback has a cap of its own),
//     no scheduler takes it (taken says so), or the scheduler tried this
//     generation and placed it nowhere (Scheduled False, observed at this
//     generation): those move nothing for now;
//   - or a Rebalance eviction task keeps an old copy while the new one
//     starts.
//
// A fresh schedule that gives the same clusters stops counting as soon as
// it is made.
func Moving(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, annotations map[string]string, generation int64, taken bool) bool {
	for _, t := range spec.GracefulEvictionTasks {
		if t.Reason == workv1alpha2.EvictionReasonRebalance {
			return true
		}
	}
	requested := spec.RescheduleTriggeredAt != nil &&
		(status.LastScheduledTime == nil || status.LastScheduledTime.Before(spec.RescheduleTriggeredAt))
	if !requested || !taken || annotations[workv1alpha2.RescheduleReasonAnnotation] == workv1alpha2.EvictionReasonFailback {
		return false
	}
	c := meta.FindStatusCondition(status.Conditions, workv1alpha2.Scheduled)
	return c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != generation
}
