// Package cluster owns the control plane's view of member clusters: their
// execution namespaces, their health, the scheduling taints derived from it,
// and the registration operations behind `lifeboat join`, `unjoin`, `cordon`,
// `uncordon` and `taint`.
//
// Controllers and the fields they write:
//
//   - ClusterReconciler (cluster_controller.go): metadata.finalizers of a
//     Cluster (karmada.io/cluster-controller) and the execution namespace
//     karmada-es-<name>. On deletion it deletes that namespace and the Works
//     in it, waits (bounded) for the Works to go, then drops the finalizer.
//   - StatusReconciler (status_controller.go): Cluster status only:
//     conditions Ready, ProbeSucceeded (the latest probe's result, before
//     smoothing) and CompleteAPIEnablements, kubernetesVersion,
//     apiEnablements, nodeSummary and resourceSummary (allocatable,
//     allocating, allocated). Push clusters with a secretRef only; in
//     `lifeboat agent` (Agent set), the Pull cluster the agent runs in.
//   - LeaseMonitor (lease_monitor.go): Ready=Unknown, and ProbeSucceeded
//     Unknown since the last heartbeat, for a Pull cluster whose agent has
//     not renewed its Lease (karmada-cluster/<name>) for
//     --cluster-monitor-grace-period. It never writes Ready True or False:
//     only the agent does.
//   - TaintReconciler (taint_controller.go): the scheduling taints in
//     spec.taints, cluster.karmada.io/not-ready:NoSchedule and
//     cluster.karmada.io/unreachable:NoSchedule, following the Ready
//     condition, and cluster.lifeboat.dev/flapping:NoSchedule with its
//     record, the cluster.lifeboat.dev/ready-failures annotation (flap
//     damping, flapdamping.go); the timeAdded of NoExecute taints that
//     have none, never changing one that is set; and when the last
//     NoExecute taint was removed, in the cluster.lifeboat.dev/no-execute-
//     cleared annotation (failback's stabilization window counts from it).
//     It touches no other taint.
//
// The health probe and its smoothing (readiness.go): every
// --cluster-status-update-frequency the member's /readyz (or /healthz when
// /readyz is missing) is probed with a short timeout. A change of Ready
// between True and not-True is held back until the new observation has
// persisted for --cluster-failure-threshold (failing) or
// --cluster-success-threshold (recovering). How long an observation has
// persisted is kept in memory; after a restart it is seeded from the stored
// ProbeSucceeded condition, or Ready (see adjustReady), so a restart never
// flips Ready on a single probe and continues a failure window that was
// under way.
//
// What a probe costs: one GET /readyz per cluster every
// --cluster-status-update-frequency (10s); the credentials Secret comes from
// the informer cache. Only while Ready, and only every
// --cluster-status-collect-interval (30s; at once on recovery or when nothing
// was collected yet), the version and discovery (aggregated: two requests,
// answered 304 with no body while the member's APIs are unchanged) are read,
// and the nodes and non-terminal pods the member's inventory holds are
// summed. The status is written only when it
// differs from the stored one: the Ready message carries no error text or
// time, so an unchanged member costs no write at all.
//
// Registration (register.go, join.go) is plain functions over a controller-
// runtime client so that both the CLI and the local environment use it;
// SweepUnjoinedMember (sweep.go) applies package orphans' rules to the
// member of an unjoined cluster for `lifeboat unjoin --cleanup-member`.
package cluster
