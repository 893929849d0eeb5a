// Package simulate predicts what Lifeboat's failover would do if member
// clusters failed, were tainted, or one application turned unhealthy, from
// a snapshot of the control plane. It writes nothing.
//
// Every decision is made by the function the controllers run: the cluster
// controllers' conditions and taints (cluster.AsFailed), the taint
// manager's toleration rule (failover.NoExecuteDeadline) and eviction
// (failover.PlanTaintEviction), the storm guard (failover.StormGuardHold,
// failover.PaceEvictions), application failover's eviction
// (failover.PlanApplicationEviction) and the scheduler (core.Schedule).
// What the snapshot cannot tell (when exactly a member's probes notice a
// failure, how long a workload takes to start) is given as a range or an
// assumption, and the report says so.
package simulate
