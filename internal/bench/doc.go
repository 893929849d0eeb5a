// Package bench measures a Karmada-compatible control plane: how fast
// Deployments propagate, how long application and cluster failover take,
// and how much memory and CPU the controllers use. It backs `lifeboat bench`.
//
// It speaks only the Karmada API (PropagationPolicy, ResourceBinding,
// Cluster) and plain Kubernetes, so the same scenarios run against Lifeboat
// or Karmada. Every timestamp is the moment a watch event reached this
// process (time taken in the informer's event handler), never a polled
// `kubectl` answer, and no Lifeboat-only field (failoverHistory,
// unhealthyClusters) is read: a binding is Healthy when its
// status.aggregatedStatus item for a scheduled cluster says so, an eviction
// is an entry of spec.gracefulEvictionTasks.
//
// The parts, in the order data flows through them:
//   - marks.go: pure functions turning an observed object into "marks"
//     (healthy:member2, evicting:member1, ready:false, ...).
//   - tracker.go: records when each mark first appeared on each object.
//   - watch.go: informers on the control plane and every member feeding the
//     tracker.
//   - propagation.go, appfailover.go, clusterfailover.go, footprint.go: the
//     scenarios. Each creates its objects in a fresh namespace and removes
//     them (and undoes any cordon or member stop) when it ends, even on
//     failure.
//   - stats.go, report.go: percentiles and the JSON and Markdown report.
//
// Objects written: Namespaces, PropagationPolicies and Deployments in the
// control plane (created and deleted per run); spec.unschedulable of member
// Nodes (app-failover cordons and uncordons); Pods in members (deleted by
// app-failover). Members are stopped and started through a MemberControl.
package bench
