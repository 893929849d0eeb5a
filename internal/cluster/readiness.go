package cluster

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

// ProbeResult is what one health probe of a member saw.
type ProbeResult struct {
	// Online is false when the API server could not be reached at all
	// (transport error, timeout).
	Online bool
	// Healthy is true when /readyz (or /healthz) answered 200.
	Healthy bool
	// Path is the endpoint that gave the answer.
	Path string
	// StatusCode is the HTTP status of the answer when Online.
	StatusCode int
	// Err is the transport error when not Online. It is logged, never put
	// into the condition, whose message must stay stable between probes.
	Err error
}

// observedReadyCondition turns a probe (or a failure to build a client,
// clientErr) into the Ready condition it stands for, before smoothing.
func observedReadyCondition(probe ProbeResult, clientErr error) metav1.Condition {
	c := metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady}
	switch {
	case clientErr != nil:
		c.Status = metav1.ConditionFalse
		c.Reason = clusterv1alpha1.ClusterReasonStatusCollectionFail
		c.Message = fmt.Sprintf("cannot build a client for the cluster: %v", clientErr)
	case !probe.Online:
		c.Status = metav1.ConditionFalse
		c.Reason = clusterv1alpha1.ClusterReasonNotReachable
		c.Message = "cluster is not reachable"
	case !probe.Healthy:
		c.Status = metav1.ConditionFalse
		c.Reason = clusterv1alpha1.ClusterReasonNotReady
		c.Message = fmt.Sprintf("cluster is not healthy: %s returned HTTP %d", probe.Path, probe.StatusCode)
	default:
		c.Status = metav1.ConditionTrue
		c.Reason = clusterv1alpha1.ClusterReasonReady
		c.Message = "cluster is healthy and ready to accept workloads"
	}
	return c
}

// probeCondition is the ProbeSucceeded condition of an observation: its
// status, reason and message, unsmoothed.
func probeCondition(observed metav1.Condition) metav1.Condition {
	return metav1.Condition{
		Type:    clusterv1alpha1.ClusterConditionProbeSucceeded,
		Status:  observed.Status,
		Reason:  observed.Reason,
		Message: observed.Message,
	}
}

// readySince records since when the observations of a cluster have been
// True, or not True.
type readySince struct {
	isTrue bool
	since  time.Time
}

// thresholds are the smoothing windows of the Ready condition.
type thresholds struct {
	failure time.Duration // True -> not True
	success time.Duration // not True -> True
}

// adjustReady smooths an observed Ready condition against the stored one.
//
//  1. Track since when the observations have been True or not True. prev is
//     nil after a restart: then the stored conditions seed it. A stored
//     ProbeSucceeded agreeing with the observation says since when the
//     probes have given this result (its lastTransitionTime); otherwise the
//     stored Ready agreeing with the observation: since its
//     lastTransitionTime; neither: since now, because when the
//     disagreement began is unknown.
//  2. Without a stored condition (a cluster seen for the first time), the
//     observation is taken as it is.
//  3. A change between True and not True is held back (the stored condition
//     is kept) until it has persisted for the matching threshold. Changes
//     between False and Unknown, and of reason or message, pass at once.
func adjustReady(stored, storedProbe *metav1.Condition, observed metav1.Condition, prev *readySince, now time.Time, th thresholds) (metav1.Condition, readySince) {
	observedTrue := observed.Status == metav1.ConditionTrue
	next := readySince{isTrue: observedTrue, since: now}
	switch {
	case prev != nil && prev.isTrue == observedTrue:
		next = *prev
	case prev == nil && storedProbe != nil && (storedProbe.Status == metav1.ConditionTrue) == observedTrue && !storedProbe.LastTransitionTime.After(now):
		next.since = storedProbe.LastTransitionTime.Time
	case prev == nil && stored != nil && (stored.Status == metav1.ConditionTrue) == observedTrue:
		next.since = stored.LastTransitionTime.Time
	}
	if stored == nil {
		return observed, next
	}
	if (stored.Status == metav1.ConditionTrue) != observedTrue {
		threshold := th.failure
		if observedTrue {
			threshold = th.success
		}
		if now.Sub(next.since) < threshold {
			return *stored, next
		}
	}
	return observed, next
}

// heldUntil is when the observations since next.since will have lasted the
// threshold that holds back their change of the stored condition, or the
// zero time when nothing is held back (adjusted is what was observed).
func heldUntil(adjusted, observed metav1.Condition, next readySince, th thresholds) time.Time {
	if (adjusted.Status == metav1.ConditionTrue) == (observed.Status == metav1.ConditionTrue) {
		return time.Time{}
	}
	if next.isTrue {
		return next.since.Add(th.success)
	}
	return next.since.Add(th.failure)
}

// readyTracker keeps readySince per cluster, in memory only. It is safe for
// concurrent use by the reconcile workers.
type readyTracker struct {
	mu      sync.Mutex
	byName  map[string]readySince
	windows thresholds
}

func newReadyTracker(th thresholds) *readyTracker {
	return &readyTracker{byName: map[string]readySince{}, windows: th}
}

// adjust applies adjustReady for cluster and remembers the result. held is
// when a change held back by a threshold is due (zero when none is).
func (t *readyTracker) adjust(cluster *clusterv1alpha1.Cluster, observed metav1.Condition, now time.Time) (adjusted metav1.Condition, held time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var prev *readySince
	if p, ok := t.byName[cluster.Name]; ok {
		prev = &p
	}
	stored := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	storedProbe := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionProbeSucceeded)
	adjusted, next := adjustReady(stored, storedProbe, observed, prev, now, t.windows)
	t.byName[cluster.Name] = next
	return adjusted, heldUntil(adjusted, observed, next, t.windows)
}

// forget drops what is known about a deleted cluster.
func (t *readyTracker) forget(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byName, name)
}
