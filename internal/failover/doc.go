// Package failover is Lifeboat's failover engine: it decides when a
// workload leaves a cluster, what it carries along, and when the copy left
// behind may go. It works on ResourceBindings and ClusterResourceBindings
// alike (their shared ResourceBindingSpec and ResourceBindingStatus).
//
// One mechanism, several triggers (application failover, the taint
// manager, and the scheduler's rebalance, reason Rebalance, when a
// requested fresh schedule or a switch of clusterAffinities term moves a
// workload): Evict moves a cluster from
// spec.clusters into spec.gracefulEvictionTasks, in one
// optimistic-concurrency write by the caller. The scheduler skips clusters
// with a task, the binding controller renders Works by asking the Hooks
// (KeepWorkFor, RenderKeptCopy, HoldNewWorks/BlockedClusters,
// LabelsToInject), and the graceful-eviction controller closes the task,
// or undoes the eviction (the task back into spec.clusters, one write)
// when its cluster recovered before anything was placed instead.
//
// Controllers and the fields they write:
//
//   - ApplicationFailoverReconciler (gate Failover; bindings with
//     spec.failover.application): status.unhealthyClusters (the persisted
//     unhealthy timers) and, at a deadline, spec.clusters and
//     spec.gracefulEvictionTasks (through Evict; the state captured by the
//     policy's statePreservation rules goes into the task).
//   - GracefulEvictionReconciler (bindings with tasks or open history):
//     spec.gracefulEvictionTasks (stamps creationTimestamp, removes done
//     tasks), spec.clusters (only to undo an eviction), status.failoverHistory
//     (one entry per task, then clustersAfter and replacementHealthyTime,
//     read from the PlacementHealthy condition), and the status condition
//     FailoverTargetAvailable (whose True transition starts the tasks'
//     grace periods).
//
// Both record Events on the binding and on its resource template. No
// failover state lives only in memory: timers, tasks, placement and health
// times and history are in the binding, so a restart or a leader change
// neither resets nor repeats anything (Wave only delays writes). The one
// exception is the storm guard (stormguard.go, settling.go), which paces
// the TaintManager's evictions: its token buckets and the last time every
// cluster was down live in memory, and a new guard errs towards holding
// (one settling window for the clusters that are failing); its settling
// window itself comes from the Clusters' conditions.
//
// Where Lifeboat differs from Karmada: the last copy is never deleted when
// nothing can take the workload (the task waits, the condition says why,
// the kept copy follows the template, and the eviction is undone when its
// cluster recovers first); grace periods count from the placement;
// only a Healthy observation resets an unhealthy timer; state capture
// never blocks a failover and survives chained failovers; injected labels
// outlive the task; a Directly eviction does not wait forever for an
// unreachable cluster.
package failover
