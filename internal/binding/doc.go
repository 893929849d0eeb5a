// Package binding turns ResourceBindings and ClusterResourceBindings into
// Works, one per target cluster, and writes what the members report back
// into the bindings and their resource templates.
//
// Reconciler (controller "binding") writes:
//   - Works in karmada-es-<cluster>: created, updated (labels, annotations
//     and finalizers merged, spec replaced) and deleted. A Work holds the
//     template with server-set metadata and status pruned, replicas revised
//     to the cluster's share, override policies applied and preserved state
//     injected (StateInjector hook), labelled and annotated so that the
//     Work, the member object and the binding find each other;
//   - the binding's metadata.finalizers (karmada.io/binding-controller or
//     karmada.io/cluster-resource-binding-controller): added, and removed
//     once the Works of a deleted binding are deleted.
//
// Target clusters are spec.clusters plus the clusters of spec.requiredBy.
// A Work in a cluster that is no longer targeted is deleted unless
// clustersToKeep (the eviction hook) keeps it: the fromCluster of a graceful
// eviction task keeps its old copy until the task is removed. While a
// replacement is placed the old copy is left as it is; while nothing is
// placed instead it is the workload, and its existing Work follows the
// template (keptTargets). A Work says which replica count it was rendered
// with (annotation work.lifeboat.dev/replicas).
//
// Work names are cut to 63 characters, so two templates can share one. A
// binding never takes over a Work that another existing binding's
// annotations name (mayAdoptWork): it records WorkNameConflict and is
// retried, and its template does not reach that cluster meanwhile.
//
// StatusReconciler (controller "binding-status") writes:
//   - the binding's status.aggregatedStatus (one item per Work of an
//     expected cluster, sorted by cluster; a health only from a report of
//     the Work's current generation and share, else Unknown) and its
//     FullyApplied and PlacementHealthy conditions;
//   - the template's status subresource, from Interpreter.AggregateStatus.
//     While the controller has a backlog (as many bindings ready as it has
//     workers), a binding's status is written first and its template's on a
//     later pass at low priority, once the bindings whose own status has
//     news are written; a template is put off once per change at most.
//
// Both write only when the value changes. Neither reads member clusters:
// Work status is written by the execution and work-status controllers.
package binding
