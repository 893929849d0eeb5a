// Package rebalancer runs WorkloadRebalancers (apps.karmada.io/v1alpha1):
// it asks the scheduler for a fresh schedule of each named workload, once
// per generation of the rebalancer, and reports each workload's result.
//
// How a rebalancer is carried out (decide.go):
//
//  1. A new generation is observed first, in the status alone: the
//     workloads (spec.workloads, then the Lifeboat extensions
//     spec.workloadSelector and spec.failedOverFrom, resolved now),
//     status.observedGeneration and status.rescheduleTriggeredAt (now).
//     Workloads that already had a result keep it; the others are pending.
//  2. For each pending workload, its binding (ResourceBinding
//     <name>-<kind> in the workload's namespace, or ClusterResourceBinding)
//     gets spec.rescheduleTriggeredAt, unless it already holds a request at
//     least as late as status.rescheduleTriggeredAt: the rule that makes a
//     restart neither lose nor repeat a request.
//     With a Gate, a request is written only while fewer than its cap of
//     bindings are rebalancing fleet-wide (Moving: a request not made
//     yet, or a Rebalance task open), and only for a binding a scheduler
//     takes; the other workloads wait, counted in one RebalanceHeld Event
//     per generation, and are asked for as places free (a binding that
//     stops counting wakes the unfinished rebalancers). A conflict on one
//     binding does not hold back the others.
//  3. A workload is Successful once the scheduler consumed the request
//     (status.lastScheduledTime not before spec.rescheduleTriggeredAt),
//     Failed (ReferencedBindingNotFound) when it has no binding. One whose
//     binding no scheduler takes (scheduler.WhyNotTaken) waits, named in a
//     Warning Event.
//  4. status.finishTime is set when every workload has a result; the
//     rebalancer is deleted spec.ttlSecondsAfterFinished later.
//
// What moves, and how safely, is the scheduler's and the failover engine's
// business: a fresh schedule that moves a workload keeps the old copy in
// a graceful eviction task (reason Rebalance) until the new one is Healthy.
//
// Fields written, and nothing else: the WorkloadRebalancer's status (status
// subresource), its deletion after the TTL, and spec.rescheduleTriggeredAt
// of bindings (merge patch with optimistic lock).
package rebalancer
