// Package failback moves workloads back to a cluster they failed over away
// from, once that cluster is stable again (a Lifeboat extension, opt-in per
// policy with spec.failover.failback).
//
// The failback controller decides (Decide, a pure function) and asks: it
// writes, on a ResourceBinding or ClusterResourceBinding,
//   - spec.rescheduleTriggeredAt, the request for a fresh schedule that a
//     WorkloadRebalancer writes too;
//   - the annotations workv1alpha2.RescheduleReasonAnnotation (Failback)
//     and FailbackAnnotation (the cluster moved back to and since when it
//     is Ready), and removes them once the failback finished.
//
// Everything else is done by the controllers that own the fields: the
// scheduler places the workload afresh and, because of the annotation,
// writes the eviction task of the cluster it leaves with reason Failback;
// the graceful-eviction controller keeps the copy there until the copy
// moved back is Healthy, or gives the failback up when the grace period
// passes first (the copy that runs is never deleted for a failback).
package failback
