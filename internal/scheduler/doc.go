// Package scheduler places ResourceBindings and ClusterResourceBindings on
// member clusters. The placement decision itself is the pure package core;
// this package is the controller around it: observe the binding and the
// Clusters (from the manager's cache), decide whether to schedule (decide:
// placement changed against the policy.karmada.io/applied-placement
// annotation, not yet scheduled, replicas changed, a manual reschedule via
// spec.rescheduleTriggeredAt, Duplicated or non-workload bindings, a
// scheduled cluster gone, deleting or with an eviction task), run
// core.Schedule, and write only what changed.
//
// Bindings handled: spec.placement set (attached dependency bindings have
// none), spec.schedulerName empty or the configured name
// ("default-scheduler"), spec.suspension.scheduling not true, not deleting.
//
// Fields written, and nothing else:
//   - spec.clusters and metadata.annotations["policy.karmada.io/applied-placement"]
//     (merge patch with optimistic lock). A schedule that fails keeps the
//     current spec.clusters (minus clusters that are gone or being
//     deleted): a workload never loses its running copy because a new
//     placement fits nowhere;
//   - spec.gracefulEvictionTasks, only in the write of a fresh schedule
//     (spec.rescheduleTriggeredAt consumed), or of a schedule that switches
//     the clusterAffinities term of a placed workload, that moves the
//     workload away from a cluster: that cluster gets a task with reason
//     Rebalance (Failback when the failback controller asked;
//     gracefulPlacement), so its copy stays until the new placement is
//     Healthy. Existing tasks are never changed;
//   - status.conditions[type=Scheduled] (reasons Success, NoClusterFit,
//     Unschedulable, SchedulerError), status.schedulerObservedGeneration,
//     status.schedulerObservingAffinityName and status.lastScheduledTime
//     (merge patch of the status subresource with optimistic lock).
//
// Events ScheduleBindingSucceed / ScheduleBindingFailed are recorded on the
// binding and on the resource template in spec.resource whenever the
// scheduler wrote something. Past a burst, ScheduleBindingSucceed is counted
// in a summary instead (eventbudget): on the Cluster of the binding's newest
// eviction task, or without a task on the policy that claims the workload.
//
// Triggers: binding creation and generation changes; Cluster creation,
// deletion and changes of labels, spec, deletion, Ready, or API enablements
// enqueue every handled binding of the kind; a change of only
// status.resourceSummary enqueues the bindings whose Scheduled condition is
// not True (field index IndexScheduled). Bindings that failed for lack of
// capacity are retried every UnschedulableRetry.
package scheduler
