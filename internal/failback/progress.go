package failback

import (
	"fmt"
	"slices"
	"strings"
	"time"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// FailbackAnnotation marks a binding whose failback was asked for and has
// not finished: "<cluster>,<RFC 3339 time the cluster became Ready>". The
// failback controller sets it with spec.rescheduleTriggeredAt and removes
// it when the failback completed, was given up or did not move anything.
// Open failbacks are the bindings that carry it.
const FailbackAnnotation = "failover.lifeboat.dev/failback"

// inFlight is what FailbackAnnotation says.
type inFlight struct {
	cluster    string
	readySince time.Time
}

func (f inFlight) String() string {
	return f.cluster + "," + f.readySince.UTC().Format(time.RFC3339)
}

func parseInFlight(v string) (inFlight, error) {
	cluster, since, ok := strings.Cut(v, ",")
	if !ok || cluster == "" {
		return inFlight{}, fmt.Errorf("annotation %s: want <cluster>,<time>, got %q", FailbackAnnotation, v)
	}
	t, err := time.Parse(time.RFC3339, since)
	if err != nil {
		return inFlight{}, fmt.Errorf("annotation %s: %w", FailbackAnnotation, err)
	}
	return inFlight{cluster: cluster, readySince: t}, nil
}

// Outcome is where an asked-for failback stands.
type Outcome string

// Outcomes.
const (
	// Open: the scheduler has not moved it yet, or the copy moved back is
	// not Healthy yet.
	Open Outcome = "Open"
	// Completed: the copy moved back is Healthy and the task is closed.
	Completed Outcome = "Completed"
	// Abandoned: the graceful-eviction controller gave it up.
	Abandoned Outcome = "Abandoned"
	// NotMoved: the scheduler took the request and did not move the
	// workload (the clusters changed meanwhile).
	NotMoved Outcome = "NotMoved"
	// Incomplete: the scheduler took the request and moved the workload,
	// the task it wrote is closed, yet the failback neither completed nor
	// was abandoned: the cluster failed again (before the scheduler took
	// the request, which then placed the workload elsewhere, or before the
	// copy there was Healthy), the placement changed, or the new placement
	// was kept although not all of it was Healthy. Nothing is left to
	// wait for.
	Incomplete Outcome = "Incomplete"
)

// stampSlack allows for the second-precision of the times compared: the
// scheduler's task may be stamped within the second before the request.
const stampSlack = 2 * time.Second

// progress says where the failback to f.cluster asked for at
// spec.rescheduleTriggeredAt stands, from the history and the tasks:
//
//  1. a FailbackAbandoned entry for the cluster since the request:
//     Abandoned;
//  2. a Failback entry since the request that moved to the cluster, with
//     a replacementHealthyTime, no Failback task open, and the cluster in
//     spec.clusters: Completed (and when the copy moved back became
//     Healthy). A cluster that failed again before its copy was Healthy
//     left spec.clusters, however Healthy the copy kept elsewhere is;
//  3. no request pending and no Failback task open: the failback is over,
//     whatever the clusters are now: NotMoved without a Failback entry
//     since the request, else Incomplete;
//  4. otherwise Open.
func progress(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, f inFlight) (Outcome, time.Time) {
	var since time.Time
	if spec.RescheduleTriggeredAt != nil {
		since = spec.RescheduleTriggeredAt.Add(-stampSlack)
	}
	taskOpen := failbackTaskOpen(spec)
	placed := slices.ContainsFunc(spec.Clusters, func(t workv1alpha2.TargetCluster) bool { return t.Name == f.cluster })
	moved := false
	for _, h := range status.FailoverHistory {
		if h.Time.Time.Before(since) {
			continue
		}
		switch h.Reason {
		case workv1alpha2.EvictionReasonFailbackAbandoned:
			// 1.
			if h.FromCluster == f.cluster {
				return Abandoned, time.Time{}
			}
		case workv1alpha2.EvictionReasonFailback:
			moved = true
			// 2.
			if slices.Contains(h.ClustersAfter, f.cluster) && h.ReplacementHealthyTime != nil && !taskOpen && placed {
				return Completed, h.ReplacementHealthyTime.Time
			}
		}
	}
	// 3.
	switch {
	case taskOpen || reschedulePending(spec, status):
		return Open, time.Time{}
	case moved:
		return Incomplete, time.Time{}
	}
	return NotMoved, time.Time{}
}
