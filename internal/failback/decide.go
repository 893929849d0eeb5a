package failback

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler/core"
)

// Verdict is what Decide says to do with a binding.
type Verdict string

// Verdicts.
const (
	// Move: move the workload back to Decision.Cluster now (if the fleet's
	// cap and rate admit it).
	Move Verdict = "Move"
	// Wait: look again at Decision.At (a stabilization window ends).
	Wait Verdict = "Wait"
	// Stay: nothing moves back; only a change of the binding or a cluster
	// can change that, so no timed look is needed.
	Stay Verdict = "Stay"
)

// Decision is Decide's answer.
type Decision struct {
	Verdict Verdict
	// Cluster is the cluster to move back to (Move), or the one waited
	// for (Wait).
	Cluster string
	// At is when to look again (Wait).
	At time.Time
	// ReadySince is when Cluster became Ready (Move): the start of the
	// time the workload takes to come back.
	ReadySince time.Time
	// Reason says why, for logs.
	Reason string
}

// Input is what Decide reads.
type Input struct {
	Spec   *workv1alpha2.ResourceBindingSpec
	Status *workv1alpha2.ResourceBindingStatus
	// Clusters are all Cluster objects.
	Clusters []*clusterv1alpha1.Cluster
	// InFlight: a failback of this binding was asked for and has not
	// finished (its FailbackAnnotation is set).
	InFlight bool
	// Released: no policy claims the binding any more (scheduler.Claimed
	// is false for its labels); the scheduler leaves it where it is.
	Released bool
	// SchedulerName is the spec.schedulerName of the scheduler that takes
	// the request; empty means scheduler.DefaultSchedulerName.
	SchedulerName string
	Now           time.Time
}

// Decide says whether a binding moves back, and where:
//
//  1. The binding has spec.failover.failback, a policy claims it, and the
//     scheduler takes the request (scheduler.HandlesSpec: spec.schedulerName
//     is its own and scheduling is not suspended); a request no scheduler
//     takes would stay open for good.
//  2. Nothing is in flight: no eviction task is open, no failback of it
//     is unfinished, and no requested schedule is pending
//     (spec.rescheduleTriggeredAt after status.lastScheduledTime).
//  3. Candidates are the clusters X it failed over away from
//     (failedOverFrom): the newest history entry from X, leaving out
//     FailbackAbandoned, has reason TaintUntolerated (or
//     ApplicationFailure with afterApplicationFailover), and X is not in
//     spec.clusters.
//  4. No failback to X was abandoned within the last stabilization
//     window; otherwise wait until the window after it ends.
//  5. X exists, is not deleting, is Ready, has no NoExecute taint and no
//     flapping taint, and has been Ready for the whole window (Ready's
//     lastTransitionTime at most now − stabilizationSeconds; a flap
//     restarts the window), its last NoExecute taint was removed at
//     least a window ago (AnnotationNoExecuteCleared: a taint taken off
//     is a recovery too), and the workload left it at least a window ago
//     (after an application failover X stayed Ready: the window then
//     gives the application's fault time to be fixed); otherwise wait
//     until the window ends.
//  6. A fresh schedule (core.Schedule with Fresh) on the current clusters
//     places the workload on X.
//
// The first candidate (by name) that passes every rule is a Move; else the
// earliest Wait; else Stay. The fleet's cap and rate are not decided here
// (see Gate).
func Decide(in Input) Decision {
	// 1.
	if in.Spec.Failover == nil || in.Spec.Failover.Failback == nil {
		return stay("failback is not configured")
	}
	if in.Released {
		return stay("no policy claims it any more (its policy was deleted, or no longer selects the template): the scheduler leaves it where it is")
	}
	if why := scheduler.WhyNotScheduled(in.Spec, in.SchedulerName); why != "" {
		return stay(why)
	}
	fb := in.Spec.Failover.Failback
	window := time.Duration(fb.EffectiveStabilizationSeconds()) * time.Second
	// 2.
	switch {
	case len(in.Spec.GracefulEvictionTasks) > 0:
		return stay("an eviction is in flight")
	case in.InFlight:
		return stay("a failback is in flight")
	case reschedulePending(in.Spec, in.Status):
		return stay("a requested schedule is pending")
	}
	// 3.
	candidates := failedOverFrom(in.Spec, in.Status, fb.AfterApplicationFailover)
	if len(candidates) == 0 {
		if app := failedOverFrom(in.Spec, in.Status, true); len(app) > 0 {
			return stay(fmt.Sprintf("it left %s after an application failure, and failback.afterApplicationFailover is off",
				strings.Join(app, ", ")))
		}
		return stay("no cluster it failed over away from is waiting")
	}
	byName := make(map[string]*clusterv1alpha1.Cluster, len(in.Clusters))
	for _, c := range in.Clusters {
		byName[c.Name] = c
	}
	var wait *Decision
	var why []string
	for _, x := range candidates {
		d := decideCluster(in, x, byName[x], window)
		switch d.Verdict {
		case Move:
			return d
		case Wait:
			if wait == nil || d.At.Before(wait.At) {
				wait = &d
			}
		default:
			why = append(why, d.Reason)
		}
	}
	if wait != nil {
		return *wait
	}
	return stay(strings.Join(why, "; "))
}

func decideCluster(in Input, x string, c *clusterv1alpha1.Cluster, window time.Duration) Decision {
	// 4.
	if t, ok := lastAbandoned(in.Status, x); ok && in.Now.Before(t.Add(window)) {
		return Decision{Verdict: Wait, Cluster: x, At: t.Add(window),
			Reason: fmt.Sprintf("a failback to %s was abandoned at %s", x, t.UTC().Format(time.RFC3339))}
	}
	// 5.
	if c == nil || c.DeletionTimestamp != nil {
		return stay(fmt.Sprintf("cluster %s is gone", x))
	}
	ready := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		return stay(fmt.Sprintf("cluster %s is not Ready", x))
	}
	for _, t := range c.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			return stay(fmt.Sprintf("cluster %s has the NoExecute taint %s", x, t.Key))
		}
		if t.Key == clusterv1alpha1.TaintClusterFlapping {
			return stay(fmt.Sprintf("cluster %s is flapping", x))
		}
	}
	since := ready.LastTransitionTime.Time
	if end := since.Add(window); in.Now.Before(end) {
		return Decision{Verdict: Wait, Cluster: x, At: end, ReadySince: since,
			Reason: fmt.Sprintf("cluster %s has been Ready only since %s", x, since.UTC().Format(time.RFC3339))}
	}
	if cleared := noExecuteCleared(c, in.Now); in.Now.Before(cleared.Add(window)) {
		return Decision{Verdict: Wait, Cluster: x, At: cleared.Add(window), ReadySince: since,
			Reason: fmt.Sprintf("cluster %s's last NoExecute taint was removed only at %s", x, cleared.UTC().Format(time.RFC3339))}
	}
	if left := leftAt(in.Status, x); in.Now.Before(left.Add(window)) {
		return Decision{Verdict: Wait, Cluster: x, At: left.Add(window), ReadySince: since,
			Reason: fmt.Sprintf("it left %s only at %s", x, left.UTC().Format(time.RFC3339))}
	}
	// 6.
	res, err := core.Schedule(core.Problem{
		Spec:                 in.Spec,
		ObservedAffinityName: in.Status.SchedulerObservedAffinityName,
		Fresh:                true,
		Clusters:             in.Clusters,
	})
	if err != nil {
		return stay(fmt.Sprintf("a fresh schedule fits nowhere: %v", err))
	}
	if !slices.ContainsFunc(res.Clusters, func(t workv1alpha2.TargetCluster) bool { return t.Name == x }) {
		return stay(fmt.Sprintf("a fresh schedule would not place it on %s", x))
	}
	return Decision{Verdict: Move, Cluster: x, ReadySince: since,
		Reason: fmt.Sprintf("cluster %s has been Ready since %s and a fresh schedule places it there", x, since.UTC().Format(time.RFC3339))}
}

// noExecuteCleared is when cluster c's last NoExecute taint was removed,
// from its no-execute-cleared annotation (the zero time when it never had
// one, or the annotation does not parse). A removal the cluster-taint
// controller has not recorded yet (the annotation still pending) counts as
// now.
func noExecuteCleared(c *clusterv1alpha1.Cluster, now time.Time) time.Time {
	v := c.Annotations[clusterv1alpha1.AnnotationNoExecuteCleared]
	if v == clusterv1alpha1.NoExecutePending {
		return now
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil || t.After(now) {
		return time.Time{}
	}
	return t
}

// mayMove is the part of Decide that needs no Cluster: rules 1 to 3. A
// binding it refuses is Stay whatever the clusters.
func mayMove(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, schedulerName string) bool {
	return spec.Failover != nil && spec.Failover.Failback != nil && scheduler.WhyNotScheduled(spec, schedulerName) == "" &&
		len(spec.GracefulEvictionTasks) == 0 && !reschedulePending(spec, status) &&
		len(failedOverFrom(spec, status, spec.Failover.Failback.AfterApplicationFailover)) > 0
}

// failbackTaskOpen says whether the binding has a Failback eviction task.
func failbackTaskOpen(spec *workv1alpha2.ResourceBindingSpec) bool {
	return slices.ContainsFunc(spec.GracefulEvictionTasks, func(t workv1alpha2.GracefulEvictionTask) bool {
		return t.Reason == workv1alpha2.EvictionReasonFailback
	})
}

func stay(reason string) Decision { return Decision{Verdict: Stay, Reason: reason} }

// reschedulePending: a requested fresh schedule was not taken yet (as the
// scheduler tells it).
func reschedulePending(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) bool {
	if spec.RescheduleTriggeredAt == nil {
		return false
	}
	return status.LastScheduledTime == nil || spec.RescheduleTriggeredAt.After(status.LastScheduledTime.Time)
}

// failbackReasons are the history reasons a failback undoes.
func failbackReason(reason string, afterApplicationFailover bool) bool {
	return reason == workv1alpha2.EvictionReasonTaintUntolerated ||
		(afterApplicationFailover && reason == workv1alpha2.EvictionReasonApplicationFailure)
}

// failedOverFrom returns, sorted, the clusters the binding failed over
// away from and does not run on (rule 3).
func failedOverFrom(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, afterApplicationFailover bool) []string {
	newest := map[string]workv1alpha2.FailoverHistoryItem{}
	for _, h := range status.FailoverHistory {
		if h.Reason == workv1alpha2.EvictionReasonFailbackAbandoned {
			continue
		}
		if n, ok := newest[h.FromCluster]; !ok || !h.Time.Before(&n.Time) {
			newest[h.FromCluster] = h
		}
	}
	var out []string
	for x, h := range newest {
		if !failbackReason(h.Reason, afterApplicationFailover) {
			continue
		}
		if slices.ContainsFunc(spec.Clusters, func(t workv1alpha2.TargetCluster) bool { return t.Name == x }) {
			continue
		}
		out = append(out, x)
	}
	sort.Strings(out)
	return out
}

// FailedOverFrom is the index function's view of rule 3 with every
// failure reason: the clusters a binding may fail back to.
func FailedOverFrom(spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) []string {
	return failedOverFrom(spec, status, true)
}

// leftAt is the time of the newest history entry from x other than
// FailbackAbandoned: when the workload left x.
func leftAt(status *workv1alpha2.ResourceBindingStatus, x string) time.Time {
	var t time.Time
	for _, h := range status.FailoverHistory {
		if h.Reason != workv1alpha2.EvictionReasonFailbackAbandoned && h.FromCluster == x && h.Time.After(t) {
			t = h.Time.Time
		}
	}
	return t
}

// lastAbandoned is the time of the newest FailbackAbandoned entry for x.
func lastAbandoned(status *workv1alpha2.ResourceBindingStatus, x string) (time.Time, bool) {
	var t time.Time
	found := false
	for _, h := range status.FailoverHistory {
		if h.Reason == workv1alpha2.EvictionReasonFailbackAbandoned && h.FromCluster == x && (!found || h.Time.After(t)) {
			t, found = h.Time.Time, true
		}
	}
	return t, found
}
