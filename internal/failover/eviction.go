package failover

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
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
	// fencedAt tells from when the copy in an evicted cluster counts as
	// stopped by fencing; nil or false: never.
	fencedAt func(cluster string) (time.Time, bool)
	// defaultGrace applies to tasks without gracePeriodSeconds.
	defaultGrace time.Duration
	// clusters are the Cluster objects of the evicted clusters, by name,
	// to tell whether one is healthy again (recovered) or can take the
	// workload back (unusable). The controller reads every evicted
	// cluster while nothing is placed instead, otherwise only the
	// clusters failbacks left. nil: unknown, no eviction is cancelled.
	clusters map[string]*clusterv1alpha1.Cluster
}

func (o observed) gone(cluster string) bool {
	if o.oldCopyGone != nil {
		return o.oldCopyGone(cluster)
	}
	return aggregatedItem(o.status, cluster) == nil
}

// fenced is from when the copy in cluster counts as stopped by fencing.
func (o observed) fenced(cluster string) (time.Time, bool) {
	if o.fencedAt == nil {
		return time.Time{}, false
	}
	return o.fencedAt(cluster)
}

// graceStart is when a task's grace period starts: when its replacement
// was placed, never before the task was created. Until a replacement is
// placed nothing runs out, so a workload that found no target for longer
// than its grace period is not deleted the moment one appears. The
// FailoverTargetAvailable=True condition keeps that moment across
// restarts (its lastTransitionTime); before it is written, the
// scheduler's lastScheduledTime stands in.
func graceStart(task *workv1alpha2.GracefulEvictionTask, o observed, now time.Time) time.Time {
	start := task.CreationTimestamp.Time
	if placed := placedSince(o, now); placed.After(start) {
		start = placed
	}
	return start
}

// placedSince is when the current placement, the evicted workloads'
// target, was placed (see graceStart): the lastTransitionTime of
// FailoverTargetAvailable=True, else the scheduler's lastScheduledTime,
// but now when the binding last said that nothing could take the workload
// and the scheduler's stamp is not newer than that, or when the scheduler
// failed to place the binding's current generation (schedulingFailed).
// An eviction newer than the True condition took a cluster out of the
// placement it timestamps (member1 evicted to member2, then member2 to
// member3, without the controller seeing the placement empty between):
// the placement counts from the newest eviction or the scheduler's stamp,
// whichever is later, once the scheduler has placed the generation that
// eviction wrote, and from now until it has. The zero time when unknown.
func placedSince(o observed, now time.Time) time.Time {
	if schedulingFailed(o.generation, o.status) {
		return now
	}
	var placed time.Time
	if o.status.LastScheduledTime != nil && scheduled(o.generation, o.status) {
		placed = o.status.LastScheduledTime.Time
	}
	c := meta.FindStatusCondition(o.status.Conditions, ConditionFailoverTargetAvailable)
	if c != nil && c.Status == metav1.ConditionTrue {
		evicted := newestEviction(o.spec)
		if !c.LastTransitionTime.Time.Before(evicted) {
			return c.LastTransitionTime.Time
		}
		if !scheduled(o.generation, o.status) {
			return now
		}
		if placed.Before(evicted) {
			placed = evicted
		}
		return placed
	}
	if c != nil && c.Status == metav1.ConditionFalse && !placed.After(c.LastTransitionTime.Time) {
		return now
	}
	return placed
}

// newestEviction is when the newest of the binding's eviction tasks was
// made; the zero time when there is none.
func newestEviction(spec *workv1alpha2.ResourceBindingSpec) time.Time {
	var newest time.Time
	for i := range spec.GracefulEvictionTasks {
		if t := spec.GracefulEvictionTasks[i].CreationTimestamp; t != nil && t.Time.After(newest) {
			newest = t.Time
		}
	}
	return newest
}

// schedulingFailed reports whether the scheduler's last attempt failed
// (Scheduled=False) on a generation it has not placed. spec.clusters then
// holds what was there before, not a placement of what was evicted: a
// Divided workload evicted from one of two clusters keeps its share on the
// other while the evicted share fits nowhere. Nothing replaced the evicted
// copy, so no grace period runs.
func schedulingFailed(generation int64, status *workv1alpha2.ResourceBindingStatus) bool {
	return meta.IsStatusConditionFalse(status.Conditions, workv1alpha2.Scheduled) && !scheduled(generation, status)
}

// taskDeadline is when a task times out; false when it never does (no
// creation time yet, or its deletion is suppressed). It counts from
// graceStart.
func taskDeadline(task *workv1alpha2.GracefulEvictionTask, o observed, now time.Time) (time.Time, bool) {
	if task.CreationTimestamp == nil || (task.SuppressDeletion != nil && *task.SuppressDeletion) {
		return time.Time{}, false
	}
	if task.SuppressDeletion == nil && policyv1alpha1.NormalizePurgeMode(task.PurgeMode) == policyv1alpha1.PurgeModeNever {
		return time.Time{}, false
	}
	return graceStart(task, o, now).Add(gracePeriod(task, o.defaultGrace)), true
}

// gracePeriod is the task's gracePeriodSeconds, or defaultGrace.
func gracePeriod(task *workv1alpha2.GracefulEvictionTask, defaultGrace time.Duration) time.Duration {
	if task.GracePeriodSeconds != nil && *task.GracePeriodSeconds > 0 {
		return time.Duration(*task.GracePeriodSeconds) * time.Second
	}
	return defaultGrace
}

// recovered reports whether the cluster a task evicts the workload from
// is healthy again, so that the eviction can be undone while nothing has
// been placed instead (see planTasks):
// The Cluster must exist, not be deleting and be Ready, and then:
//   - TaintUntolerated: the taint manager would not evict the workload from
//     it (no NoExecute taint that the placement does not tolerate for good);
//   - ApplicationFailure: the copy left there reports Healthy;
//   - Rebalance and Failback: as TaintUntolerated. The cluster was healthy when a
//     rebalance moved the workload away; if the new placement is lost
//     before the task closes (its cluster failed and was evicted in turn),
//     the copy the rebalance kept is the workload again instead of
//     waiting, excluded from scheduling, for a grace period that never
//     starts.
//
// Evictions for other reasons (written by users or other tools) are never
// undone.
func recovered(task *workv1alpha2.GracefulEvictionTask, o observed, now time.Time) bool {
	// Whatever the reason, the cluster must be there and Ready: a copy's
	// last report outlives its cluster's reachability.
	c := o.clusters[task.FromCluster]
	if c == nil || c.DeletionTimestamp != nil || !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
		return false
	}
	switch task.Reason {
	case workv1alpha2.EvictionReasonTaintUntolerated, workv1alpha2.EvictionReasonRebalance, workv1alpha2.EvictionReasonFailback:
		return unusable(c, task.FromCluster, o.spec, now) == ""
	case workv1alpha2.EvictionReasonApplicationFailure:
		item := aggregatedItem(o.status, task.FromCluster)
		return item != nil && item.Health == workv1alpha2.ResourceHealthy
	}
	return false
}

// unusable says why cluster c (named name; nil when it was not found)
// cannot run the workload: it is gone, being deleted, not Ready, or has a
// NoExecute taint that the placement does not tolerate for good (the taint
// manager would evict the workload from it); "" when it can.
func unusable(c *clusterv1alpha1.Cluster, name string, spec *workv1alpha2.ResourceBindingSpec, now time.Time) string {
	switch {
	case c == nil:
		return fmt.Sprintf("cluster %s was not found", name)
	case c.DeletionTimestamp != nil:
		return fmt.Sprintf("cluster %s is being deleted", name)
	case !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady):
		return fmt.Sprintf("cluster %s is not Ready", name)
	}
	var tolerations []corev1.Toleration
	if spec.Placement != nil {
		tolerations = spec.Placement.ClusterTolerations
	}
	if d := NoExecuteDeadline(c.Spec.Taints, tolerations, now); !d.Never {
		return fmt.Sprintf("cluster %s has the NoExecute taint %s, which the placement does not tolerate for good", name, d.Taint.Key)
	}
	return ""
}

// restoredTarget is the cluster an undone eviction puts back into
// spec.clusters, with the replicas its kept copy runs (KeptReplicas).
func restoredTarget(spec *workv1alpha2.ResourceBindingSpec, task *workv1alpha2.GracefulEvictionTask) workv1alpha2.TargetCluster {
	return workv1alpha2.TargetCluster{Name: task.FromCluster, Replicas: KeptReplicas(spec, task)}
}

// KeptReplicas is how many replicas the copy an eviction task keeps runs
// while nothing has been placed instead: as a Duplicated workload it runs
// spec.replicas, as a Divided one its share at the eviction.
func KeptReplicas(spec *workv1alpha2.ResourceBindingSpec, task *workv1alpha2.GracefulEvictionTask) int32 {
	p := spec.Placement
	if p != nil && p.ReplicaScheduling != nil && p.ReplicaScheduling.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingTypeDivided && task.Replicas != nil {
		return *task.Replicas
	}
	return spec.Replicas
}

// taskDone decides whether an eviction task is finished, so the task can
// be removed (which lets the binding controller delete the old copy, if it
// still exists), and says why, or why not.
//
//  1. suppressDeletion false: a user confirmed; done whatever the mode.
//  2. suppressDeletion true, or Never: kept until a user confirms.
//  3. No cluster to fail over to (spec.clusters empty): never done, even
//     after the grace period. Lifeboat never deletes the last copy.
//  4. Directly: done once the old copy is gone from the member, once its
//     agent fenced it (a Pull cluster; see internal/fencing), or when the
//     grace period has passed (the old cluster may be unreachable; the
//     binding controller then creates the new copy and keeps the old Work
//     for clean-up).
//  5. Gracefully: done when the scheduler has placed the replacement and
//     every scheduled cluster is Healthy, or when the grace period passed.
//     At the deadline, a copy that is the only Healthy one, in a cluster
//     usable again, is kept (keptPastGrace): the task closes once the
//     replacement is Healthy, or the cluster is not usable any more.
//  6. Failback: done only when the copy moved back is Healthy (5); a
//     grace period that passes abandons the failback (failbackAbandoned)
//     instead of deleting the copy that runs.
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
	deadline, timed := taskDeadline(task, o, now)
	expired := timed && !now.Before(deadline)
	grace := gracePeriod(task, o.defaultGrace)
	if mode == policyv1alpha1.PurgeModeDirectly {
		switch {
		case schedulingFailed(o.generation, o.status) && KeepsOldCopy(o.spec, task.FromCluster):
			// A Divided share that is not placed (unplacedShare): its copy is
			// kept, and the task with it, which can undo the eviction.
			return false, fmt.Sprintf("what was evicted from %s is not placed anywhere else; the copy there is kept until it is", task.FromCluster)
		case o.gone(task.FromCluster):
			return true, fmt.Sprintf("the old copy in %s was deleted", task.FromCluster)
		case fencedDone(task, o, now):
			at, _ := o.fenced(task.FromCluster)
			return true, fmt.Sprintf("the old copy in %s was fenced by its agent, which could not renew the cluster's Lease (stopped by %s); the new copy goes ahead", task.FromCluster, at.UTC().Format(time.RFC3339))
		case expired:
			return true, fmt.Sprintf("the old copy in %s was not confirmed deleted within %s; the new copy goes ahead", task.FromCluster, grace)
		default:
			return false, fmt.Sprintf("waiting for the old copy in %s to be deleted", task.FromCluster)
		}
	}
	switch {
	case scheduled(o.generation, o.status) && placementHealthy(o.spec, o.status):
		return true, fmt.Sprintf("the replacement on %v is healthy", clusterNames(o.spec.Clusters))
	case task.Reason == workv1alpha2.EvictionReasonFailback:
		return false, fmt.Sprintf("waiting for the copy moved back to %v to be healthy", clusterNames(o.spec.Clusters))
	case expired && keptPastGrace(task, o, now):
		return false, keptPastGraceReason(task, o, grace)
	case expired:
		return true, fmt.Sprintf("the grace period of %s passed before the replacement was healthy", grace)
	default:
		return false, "waiting for the replacement to be healthy"
	}
}

// keptPastGrace says whether a Gracefully task whose grace period passed
// keeps its copy: the evicted cluster is usable again (Ready, no
// untolerated NoExecute taint; known only from o.clusters), its copy
// reports Healthy, and no cluster in spec.clusters does. Deleting it would
// leave the workload with no Healthy copy.
func keptPastGrace(task *workv1alpha2.GracefulEvictionTask, o observed, now time.Time) bool {
	if o.clusters == nil || unusable(o.clusters[task.FromCluster], task.FromCluster, o.spec, now) != "" {
		return false
	}
	if item := aggregatedItem(o.status, task.FromCluster); item == nil || item.Health != workv1alpha2.ResourceHealthy {
		return false
	}
	for _, c := range o.spec.Clusters {
		if item := aggregatedItem(o.status, c.Name); item != nil && item.Health == workv1alpha2.ResourceHealthy {
			return false
		}
	}
	return true
}

// keptPastGraceReason says why keptPastGrace keeps a copy, for the
// binding's condition, Events and logs.
func keptPastGraceReason(task *workv1alpha2.GracefulEvictionTask, o observed, grace time.Duration) string {
	return fmt.Sprintf("the grace period of %s passed, but %s is usable again and its copy is the only Healthy one: it is kept until the replacement on %s is Healthy",
		grace, task.FromCluster, strings.Join(clusterNames(o.spec.Clusters), ","))
}

// overdueHealthy says whether a task's grace period passed while the copy
// it keeps reports Healthy: whether keptPastGrace needs its cluster.
func overdueHealthy(task *workv1alpha2.GracefulEvictionTask, o observed, now time.Time) bool {
	if policyv1alpha1.NormalizePurgeMode(task.PurgeMode) != policyv1alpha1.PurgeModeGracefully || task.Reason == workv1alpha2.EvictionReasonFailback {
		return false
	}
	deadline, timed := taskDeadline(task, o, now)
	if !timed || now.Before(deadline) {
		return false
	}
	item := aggregatedItem(o.status, task.FromCluster)
	return item != nil && item.Health == workv1alpha2.ResourceHealthy
}

// fencedDone says whether a Directly task's old copy counts as stopped by
// fencing at now.
func fencedDone(task *workv1alpha2.GracefulEvictionTask, o observed, now time.Time) bool {
	at, ok := o.fenced(task.FromCluster)
	return ok && !now.Before(at)
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
	// cancelled are the tasks whose eviction is undone: their cluster goes
	// back into spec.clusters (restored), in the same write that removes
	// them.
	cancelled []removedTask
	restored  []workv1alpha2.TargetCluster
	// abandoned are the failbacks given up: their task goes and its
	// cluster returns to spec.clusters (restored) while the clusters the
	// workload was moved back to (dropped) leave it, in one write.
	abandoned []abandonedFailback
	dropped   []string
	// held are the open tasks whose grace period passed but whose copy
	// is kept (keptPastGrace), and why.
	held []removedTask
	// changed: spec must be written (tasks removed, cancelled or stamped).
	changed bool
	// stamped: a task got its creation time.
	stamped bool
	// requeueAfter is the time to the next deadline, 0 for none.
	requeueAfter time.Duration
}

// planTasks decides every task, stamping a creation time on tasks that
// have none (tasks written by other tools) first:
//
//  1. while nothing is placed instead (spec.clusters is empty, or the
//     scheduler failed to place the binding: schedulingFailed), an
//     eviction whose cluster is healthy again (recovered) is undone: the task goes
//     and its cluster returns to spec.clusters, in one write, so the copy
//     that never stopped running is the workload again and receives
//     template changes; the cluster is no longer excluded by the
//     scheduler;
//  2. a Failback task whose grace period passed before the placement it
//     moved to became Healthy is ended (failbackOverdue): given up, the
//     copy it left is the workload again and the copies moved back that
//     are not Healthy go; or, when the copy it left cannot be the
//     workload again while one moved back is Healthy, closed with the
//     new placement kept. No copy that reports Healthy goes unless
//     another one stays;
//  3. otherwise taskDone decides.
func planTasks(o observed, now time.Time) taskPlan {
	var p taskPlan
	noTarget := len(o.spec.Clusters) == 0
	// A placement the scheduler failed to make leaves the evicted copies
	// as unreplaced as an empty one: their clusters may take them back.
	unreplaced := noTarget || schedulingFailed(o.generation, o.status)
	for i := range o.spec.GracefulEvictionTasks {
		task := *o.spec.GracefulEvictionTasks[i].DeepCopy()
		if task.CreationTimestamp == nil {
			task.CreationTimestamp = ptr.To(metav1.NewTime(now).Rfc3339Copy())
			p.changed, p.stamped = true, true
		}
		if unreplaced && recovered(&task, o, now) {
			p.cancelled = append(p.cancelled, removedTask{task: task, reason: recoveredReason(&task)})
			// Two tasks from one cluster go together; it comes back once.
			if !slices.ContainsFunc(p.restored, func(t workv1alpha2.TargetCluster) bool { return t.Name == task.FromCluster }) {
				p.restored = append(p.restored, restoredTarget(o.spec, &task))
			}
			p.changed = true
			continue
		}
		if end, ok := failbackOverdue(&task, o, now); ok {
			if end.abandoned == nil {
				p.removed = append(p.removed, removedTask{task: task, reason: end.kept})
				p.changed = true
				continue
			}
			a := *end.abandoned
			p.abandoned = append(p.abandoned, a)
			if !slices.ContainsFunc(p.restored, func(t workv1alpha2.TargetCluster) bool { return t.Name == task.FromCluster }) {
				p.restored = append(p.restored, restoredTarget(o.spec, &task))
			}
			for _, c := range a.dropped {
				if !slices.Contains(p.dropped, c) {
					p.dropped = append(p.dropped, c)
				}
			}
			p.changed = true
			continue
		}
		if done, why := taskDone(&task, o, now); done {
			p.removed = append(p.removed, removedTask{task: task, reason: why})
			p.changed = true
			continue
		}
		p.kept = append(p.kept, task)
		if deadline, ok := taskDeadline(&task, o, now); ok && !unreplaced && !now.Before(deadline) && keptPastGrace(&task, o, now) {
			p.held = append(p.held, removedTask{task: task, reason: keptPastGraceReason(&task, o, gracePeriod(&task, o.defaultGrace))})
		}
		// Time-outs matter only while there is a target: without one the
		// task waits for the scheduler, which changes the binding.
		if deadline, ok := taskDeadline(&task, o, now); ok && !unreplaced {
			if d := deadline.Sub(now); d > 0 && (p.requeueAfter == 0 || d < p.requeueAfter) {
				p.requeueAfter = d
			}
		}
		if at, ok := o.fenced(task.FromCluster); ok && !noTarget && policyv1alpha1.NormalizePurgeMode(task.PurgeMode) == policyv1alpha1.PurgeModeDirectly {
			if d := at.Sub(now); d > 0 && (p.requeueAfter == 0 || d < p.requeueAfter) {
				p.requeueAfter = d
			}
		}
	}
	return p
}

// recoveredReason says why an eviction is undone, for Events and logs.
func recoveredReason(task *workv1alpha2.GracefulEvictionTask) string {
	switch task.Reason {
	case workv1alpha2.EvictionReasonRebalance:
		return fmt.Sprintf("the workload rebalanced away from %s lost its new placement while %s is Ready; it stays in %s", task.FromCluster, task.FromCluster, task.FromCluster)
	case workv1alpha2.EvictionReasonApplicationFailure:
		return fmt.Sprintf("the application in %s is healthy again and no other cluster took the workload; it stays in %s", task.FromCluster, task.FromCluster)
	}
	return fmt.Sprintf("%s is Ready again without an untolerated NoExecute taint and no other cluster took the workload; it stays in %s", task.FromCluster, task.FromCluster)
}

// abandonedFailback is a failback given up.
type abandonedFailback struct {
	task workv1alpha2.GracefulEvictionTask
	// dropped are the clusters the workload was moved back to (in
	// spec.clusters now and not before the failback) whose copy is not
	// Healthy.
	dropped []string
	// kept are the clusters the workload was moved back to whose copy is
	// Healthy: they stay.
	kept []string
	// at is when the failback was given up: the task's deadline, so that
	// its history entry is the same however often it is derived.
	at time.Time
}

// failbackEnd is what becomes of a failback whose grace period passed:
// given up (abandoned), or, when abandoned is nil, closed with its new
// placement kept, for the reason kept.
type failbackEnd struct {
	abandoned *abandonedFailback
	kept      string
}

// failbackOverdue decides what becomes of a failback whose task has
// reason Failback and whose grace period (counted as for any task, see
// taskDeadline) passed while the placement it moved to is not Healthy;
// false for any other task. A user's suppressDeletion is left to
// taskDone. The clusters it moved to (moved) are those in spec.clusters
// that were not before the failback; a copy there that reports Healthy
// never leaves spec.clusters:
//
//  1. Every copy moved is Healthy (a cluster that stayed is not): the
//     failback did its part; it ends there and its task closes.
//  2. Some copy moved is Healthy, not all: given up only if the copy it
//     left reports Healthy and its cluster can take the workload back
//     (unusable says it cannot): that cluster returns to spec.clusters,
//     the copies moved that are not Healthy leave, the Healthy ones stay.
//     Otherwise it ends on its new placement and its task closes: the
//     copy it left goes, a Healthy one stays.
//  3. No copy moved is Healthy: given up if the cluster it left can take
//     the workload back, or if its copy there reports Healthy (the only
//     Healthy copy is the workload again, wherever it runs; a failover
//     moves it on from a cluster that failed as from any other).
//     Otherwise (nothing is Healthy, and the cluster it left cannot run
//     it) it ends on its new placement and its task closes.
//
// A task closes this way only once the scheduler placed the current
// generation (spec.clusters may be about to change before that); until
// then the failback is given up. Whether the cluster it left can take the
// workload back is known only from o.clusters; without it (nil) the
// cluster counts as able to, and the copies decide alone.
func failbackOverdue(task *workv1alpha2.GracefulEvictionTask, o observed, now time.Time) (failbackEnd, bool) {
	if task.Reason != workv1alpha2.EvictionReasonFailback || task.SuppressDeletion != nil || len(o.spec.Clusters) == 0 {
		return failbackEnd{}, false
	}
	deadline, timed := taskDeadline(task, o, now)
	if !timed || now.Before(deadline) {
		return failbackEnd{}, false
	}
	placed := scheduled(o.generation, o.status)
	if placed && placementHealthy(o.spec, o.status) {
		return failbackEnd{}, false
	}
	isHealthy := func(cluster string) bool {
		item := aggregatedItem(o.status, cluster)
		return item != nil && item.Health == workv1alpha2.ResourceHealthy
	}
	a := abandonedFailback{task: *task, at: deadline}
	var moved []string
	for _, c := range o.spec.Clusters {
		if c.Name == task.FromCluster || contains(task.ClustersBeforeFailover, c.Name) {
			continue
		}
		moved = append(moved, c.Name)
		if isHealthy(c.Name) {
			a.kept = append(a.kept, c.Name)
		} else {
			a.dropped = append(a.dropped, c.Name)
		}
	}
	leftHealthy := isHealthy(task.FromCluster)
	cannot := ""
	if o.clusters != nil {
		cannot = unusable(o.clusters[task.FromCluster], task.FromCluster, o.spec, now)
	}
	grace := gracePeriod(task, o.defaultGrace)
	stays := strings.Join(clusterNames(o.spec.Clusters), ",")
	var why string
	switch {
	case len(moved) > 0 && len(a.dropped) == 0:
		why = fmt.Sprintf("the failback's grace period of %s passed; every copy moved back (to %s) is Healthy, so it ends there and the copy in %s goes",
			grace, strings.Join(moved, ","), task.FromCluster)
	case len(a.kept) > 0 && (cannot != "" || !leftHealthy):
		if cannot == "" {
			cannot = fmt.Sprintf("the copy in %s is not Healthy", task.FromCluster)
		}
		why = fmt.Sprintf("the failback's grace period of %s passed with the copy moved back to %s Healthy and the one moved back to %s not, and %s: the workload stays on %s instead of going back, and the copy in %s goes",
			grace, strings.Join(a.kept, ","), strings.Join(a.dropped, ","), cannot, stays, task.FromCluster)
	case len(a.kept) == 0 && cannot != "" && !leftHealthy:
		why = fmt.Sprintf("the failback's grace period of %s passed before a copy moved back was Healthy, but %s and its copy there is not Healthy either: the workload stays on %s instead of going back, and the copy in %s goes",
			grace, cannot, stays, task.FromCluster)
	}
	if why == "" || !placed {
		return failbackEnd{abandoned: &a}, true
	}
	return failbackEnd{kept: why}, true
}

// afterAbandon is spec.clusters once the plan's abandoned failbacks are
// undone: without the dropped clusters (whose copies are not Healthy),
// with the restored ones.
func afterAbandon(clusters []workv1alpha2.TargetCluster, p taskPlan) []workv1alpha2.TargetCluster {
	out := make([]workv1alpha2.TargetCluster, 0, len(clusters)+len(p.restored))
	for _, c := range clusters {
		if !slices.Contains(p.dropped, c.Name) {
			out = append(out, c)
		}
	}
	return append(out, p.restored...)
}

// abandonedHistory returns history with one FailbackAbandoned entry per
// cluster an abandoned failback dropped (fromCluster is that cluster,
// clustersBefore the failback's placement, clustersAfter the placement
// restored), unless an entry for it at that time exists already.
func abandonedHistory(history []workv1alpha2.FailoverHistoryItem, abandoned []abandonedFailback, before, after []string) []workv1alpha2.FailoverHistoryItem {
	out := history
	for _, a := range abandoned {
		stamp := metav1.NewTime(a.at).Rfc3339Copy()
		for _, c := range a.dropped {
			if slices.ContainsFunc(out, func(h workv1alpha2.FailoverHistoryItem) bool {
				return h.FromCluster == c && h.Reason == workv1alpha2.EvictionReasonFailbackAbandoned && h.Time.Unix() == stamp.Unix()
			}) {
				continue
			}
			out = append(out, workv1alpha2.FailoverHistoryItem{
				Time:                   stamp,
				Reason:                 workv1alpha2.EvictionReasonFailbackAbandoned,
				Producer:               workv1alpha2.EvictionProducerGracefulEviction,
				FromCluster:            c,
				PurgeMode:              policyv1alpha1.PurgeModeGracefully,
				ClustersBefore:         append([]string(nil), before...),
				ClustersAfter:          append([]string(nil), after...),
				ReplacementHealthyTime: stamp.DeepCopy(),
				Message: fmt.Sprintf("the copy moved back to %s was not healthy within the grace period; the workload stays in %s",
					c, strings.Join(append([]string{a.task.FromCluster}, a.kept...), ",")),
			})
		}
	}
	if extra := len(out) - workv1alpha2.MaxFailoverHistoryItems; extra > 0 {
		out = out[extra:]
	}
	return out
}
