package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
)

// placementWrite is what a schedule writes into spec: the new clusters and,
// for a rebalance, the eviction tasks that keep the copies it moves away
// from until the new placement is Healthy.
type placementWrite struct {
	clusters []workv1alpha2.TargetCluster
	// tasks is the new spec.gracefulEvictionTasks; nil leaves them as
	// they are.
	tasks []workv1alpha2.GracefulEvictionTask
	// rebalancedFrom names the clusters a rebalance moved away from.
	rebalancedFrom []string
}

// move says whether a successful schedule moves the workload the graceful
// way, and what the eviction tasks of the clusters it leaves say.
type move struct {
	// graceful: the clusters the schedule drops get eviction tasks.
	graceful bool
	// reason is the tasks' reason.
	reason string
	// message is the tasks' message.
	message string
	// state, when set, returns the state a task carries and a message
	// about it (a failback).
	state stateFunc
}

// moveOf decides the move of a pass over a binding with this spec, status
// and annotations:
//
//   - a fresh schedule (a consumed spec.rescheduleTriggeredAt) is one, with
//     reason rescheduleReason;
//   - so is, with reason Rebalance, a schedule that switches the
//     clusterAffinities term (status.schedulerObservedAffinityName) of a
//     workload that is placed: the term in use could not take a scale-up,
//     or its clusters no longer match. The workload leaves the old term's
//     clusters as after a WorkloadRebalancer, not by deleting its copies
//     there before any runs in the new term. A term switched because the
//     old term's clusters failed finds them already evicted by the
//     failover controllers (they are no longer in spec.clusters), and
//     those tasks are left as they are;
//   - any other schedule is not.
func moveOf(pass Pass, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, annotations map[string]string) move {
	switch {
	case pass.Fresh:
		return move{graceful: true, reason: rescheduleReason(annotations)}
	case pass.Err == nil && pass.Result.AffinityName != "" && pass.Result.AffinityName != status.SchedulerObservedAffinityName && len(spec.Clusters) > 0:
		return move{graceful: true, reason: workv1alpha2.EvictionReasonRebalance,
			message: fmt.Sprintf("the clusterAffinities term changed from %q to %q", status.SchedulerObservedAffinityName, pass.Result.AffinityName)}
	}
	return move{}
}

// gracefulPlacement decides how target replaces spec.clusters:
//
//  1. Only a successful schedule that is a graceful move (moveOf: fresh,
//     or switching the clusterAffinities term) and places the workload
//     somewhere is a rebalance. Any other schedule writes target as it is.
//  2. Every cluster of spec.clusters that target drops, and that still
//     exists and is not being deleted, is evicted as failover.Evict does
//     (the move's reason: Rebalance, or Failback when the failback
//     controller asked; producer Scheduler, purge mode Gracefully, its
//     replicas, the move's message): in the same write as the new
//     placement, so the binding controller keeps the copy there and the
//     graceful-eviction controller removes it once the new placement is
//     Healthy (or its grace period has passed). A cluster that is gone or
//     deleting is dropped at once.
//     With m.state set (a failback), each task carries the state it
//     returns for the cluster left, as a failover's task would.
//  3. A cluster that already has an eviction task keeps that task as it
//     is (a real failover's task is never overwritten or duplicated).
//  4. Clusters that stay, even with other replicas, are not evicted: the
//     same placement writes nothing.
func gracefulPlacement(spec *workv1alpha2.ResourceBindingSpec, target []workv1alpha2.TargetCluster, m move, succeeded bool,
	clusters map[string]*clusterv1alpha1.Cluster, now time.Time) placementWrite {
	w := placementWrite{clusters: target}
	if !m.graceful || !succeeded || len(target) == 0 {
		return w
	}
	staying := make(map[string]bool, len(target))
	for _, t := range target {
		staying[t.Name] = true
	}
	evicted := *spec
	evicted.Clusters = append([]workv1alpha2.TargetCluster(nil), spec.Clusters...)
	evicted.GracefulEvictionTasks = append([]workv1alpha2.GracefulEvictionTask(nil), spec.GracefulEvictionTasks...)
	before := make([]string, 0, len(spec.Clusters))
	for _, t := range spec.Clusters {
		before = append(before, t.Name)
	}
	for _, t := range spec.Clusters {
		c, ok := clusters[t.Name]
		if staying[t.Name] || !ok || c.DeletionTimestamp != nil {
			continue
		}
		opts := failover.EvictOptions{
			Reason:         m.reason,
			Producer:       workv1alpha2.EvictionProducerScheduler,
			PurgeMode:      policyv1alpha1.PurgeModeGracefully,
			Message:        m.message,
			ClustersBefore: before,
			Now:            now,
		}
		if m.state != nil {
			var note string
			opts.PreservedLabelState, note = m.state(t.Name)
			opts.Message = strings.Join(slices.DeleteFunc([]string{m.message, note}, func(s string) bool { return s == "" }), "; ")
		}
		failover.Evict(&evicted, t.Name, opts)
		w.rebalancedFrom = append(w.rebalancedFrom, t.Name)
	}
	if len(w.rebalancedFrom) > 0 {
		w.tasks = evicted.GracefulEvictionTasks
	}
	return w
}

// stateFunc returns the state an eviction task of cluster carries, and a
// message about it.
type stateFunc func(cluster string) (map[string]string, string)

// rescheduleReason is the reason of the eviction tasks a requested fresh
// schedule writes: Failback when the binding's RescheduleReasonAnnotation
// says so (the failback controller set spec.rescheduleTriggeredAt),
// Rebalance for everything else.
func rescheduleReason(annotations map[string]string) string {
	if annotations[workv1alpha2.RescheduleReasonAnnotation] == workv1alpha2.EvictionReasonFailback {
		return workv1alpha2.EvictionReasonFailback
	}
	return workv1alpha2.EvictionReasonRebalance
}
