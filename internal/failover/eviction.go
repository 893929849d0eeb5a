package failover

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// DefaultGracePeriod is how long a task without gracePeriodSeconds may
// keep the old copy (Karmada's --graceful-eviction-timeout). For Directly
// it bounds how long the new copy waits for the old one to be deleted, so
// an unreachable cluster cannot block a failover forever.
const DefaultGracePeriod = 10 * time.Minute

// observed is what the graceful-eviction decisions read of a binding.
type observed struct {
	generation int64
	spec       *workv1alpha2.ResourceBindingSpec
	status     *workv1alpha2.ResourceBindingStatus
	// oldCopyGone reports whether the copy in an evicted cluster is gone
	// from the member. nil: gone when status.aggregatedStatus has no item
	// for the cluster any more.
	oldCopyGone func(cluster string) bool
	// defaultGrace applies to tasks without gracePeriodSeconds.
	defaultGrace time.Duration
}

func (o observed) gone(cluster string) bool {
	if o.oldCopyGone != nil {
		return o.oldCopyGone(cluster)
	}
	return aggregatedItem(o.status, cluster) == nil
}

// taskDeadline is when a task times out; false when it never does (no
// creation time yet, or its deletion is suppressed).
func taskDeadline(task *workv1alpha2.GracefulEvictionTask, defaultGrace time.Duration) (time.Time, bool) {
	if task.CreationTimestamp == nil || (task.SuppressDeletion != nil && *task.SuppressDeletion) {
		return time.Time{}, false
	}
	if task.SuppressDeletion == nil && policyv1alpha1.NormalizePurgeMode(task.PurgeMode) == policyv1alpha1.PurgeModeNever {
		return time.Time{}, false
	}
	grace := defaultGrace
	if task.GracePeriodSeconds != nil && *task.GracePeriodSeconds > 0 {
		grace = time.Duration(*task.GracePeriodSeconds) * time.Second
	}
	return task.CreationTimestamp.Add(grace), true
}

// taskDone decides whether an eviction task is finished, so the task can
// be removed (which lets the binding controller delete the old copy, if it
// still exists), and says why, or why not.
//
//  1. suppressDeletion false: a user confirmed; done whatever the mode.
//  2. suppressDeletion true, or Never: kept until a user confirms.
//  3. No cluster to fail over to (spec.clusters empty): never done, even
//     after the grace period. Lifeboat never deletes the last copy.
//  4. Directly: done once the old copy is gone from the member, or when
//     the grace period has passed (the old cluster may be unreachable; the
//     binding controller then creates the new copy and keeps the old Work
//     for clean-up).
//  5. Gracefully: done when the scheduler has placed the replacement and
//     every scheduled cluster is Healthy, or when the grace period passed.
func taskDone(task *workv1alpha2.GracefulEvictionTask, o observed, now time.Time) (bool, string) {
	mode := policyv1alpha1.NormalizePurgeMode(task.PurgeMode)
	switch {
	case task.SuppressDeletion != nil && !*task.SuppressDeletion:
		return true, "a user confirmed the deletion (suppressDeletion: false)"
	case task.SuppressDeletion != nil && *task.SuppressDeletion,
		mode == policyv1alpha1.PurgeModeNever:
		return false, fmt.Sprintf("the copy in %s is kept until a user sets suppressDeletion to false", task.FromCluster)
	case task.CreationTimestamp == nil:
		return false, "the task has no creation time yet"
	case len(o.spec.Clusters) == 0:
		return false, fmt.Sprintf("no cluster to fail over to; the copy in %s is kept until one is available", task.FromCluster)
	}
	deadline, _ := taskDeadline(task, o.defaultGrace)
	expired := !now.Before(deadline)
	if mode == policyv1alpha1.PurgeModeDirectly {
		switch {
		case o.gone(task.FromCluster):
			return true, fmt.Sprintf("the old copy in %s was deleted", task.FromCluster)
		case expired:
			return true, fmt.Sprintf("the old copy in %s was not confirmed deleted within %s; the new copy goes ahead", task.FromCluster, deadline.Sub(task.CreationTimestamp.Time))
		default:
			return false, fmt.Sprintf("waiting for the old copy in %s to be deleted", task.FromCluster)
		}
	}
	switch {
	case scheduled(o.generation, o.status) && placementHealthy(o.spec, o.status):
		return true, fmt.Sprintf("the replacement on %v is healthy", clusterNames(o.spec.Clusters))
	case expired:
		return true, fmt.Sprintf("the grace period of %s passed before the replacement was healthy", deadline.Sub(task.CreationTimestamp.Time))
	default:
		return false, "waiting for the replacement to be healthy"
	}
}

// removedTask is a finished task and why.
type removedTask struct {
	task   workv1alpha2.GracefulEvictionTask
	reason string
}

// taskPlan is the new spec.gracefulEvictionTasks and what it takes.
type taskPlan struct {
	kept    []workv1alpha2.GracefulEvictionTask
	removed []removedTask
	// changed: spec must be written (tasks removed or stamped).
	changed bool
	// stamped: a task got its creation time.
	stamped bool
	// requeueAfter is the time to the next deadline, 0 for none.
	requeueAfter time.Duration
}

// planTasks applies taskDone to every task, stamping a creation time on
// tasks that have none (tasks written by other tools) first.
func planTasks(o observed, now time.Time) taskPlan {
	var p taskPlan
	for i := range o.spec.GracefulEvictionTasks {
		task := *o.spec.GracefulEvictionTasks[i].DeepCopy()
		if task.CreationTimestamp == nil {
			task.CreationTimestamp = ptr.To(metav1.NewTime(now).Rfc3339Copy())
			p.changed, p.stamped = true, true
		}
		if done, why := taskDone(&task, o, now); done {
			p.removed = append(p.removed, removedTask{task: task, reason: why})
			p.changed = true
			continue
		}
		p.kept = append(p.kept, task)
		// Time-outs matter only while there is a target: without one the
		// task waits for the scheduler, which changes the binding.
		if deadline, ok := taskDeadline(&task, o.defaultGrace); ok && len(o.spec.Clusters) > 0 {
			if d := deadline.Sub(now); d > 0 && (p.requeueAfter == 0 || d < p.requeueAfter) {
				p.requeueAfter = d
			}
		}
	}
	return p
}
