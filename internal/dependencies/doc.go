// Package dependencies is the dependencies distributor (Karmada's
// dependencies-distributor, pipeline reference §7.3): the objects a workload
// needs in its cluster (ConfigMaps, Secrets, PersistentVolumeClaims,
// ServiceAccounts, as Interpreter.GetDependencies lists them) follow the
// workload to wherever it is scheduled, and away from where it leaves.
//
// It handles ResourceBindings with spec.propagateDeps (the detector sets it
// from the policy, and also whenever the policy configures application
// failover; ClusterResourceBindings are not handled, as in Karmada). For
// each such "depending" binding and each of its dependencies that exists in
// the control plane (same namespace; the default ServiceAccount,
// kube-root-ca.crt and similar per-cluster objects are skipped) it keeps an
// "attached" ResourceBinding named like the detector names bindings
// ("<name>-<kind>", e.g. "my-config-configmap"), so a ConfigMap that also has
// its own policy shares one binding. The binding controller renders Works
// for spec.clusters ∪ spec.requiredBy[].clusters.
//
// Writes, per object:
//   - depending binding: the finalizer karmada.io/binding-dependencies-distributor
//     and the annotation resourcebinding.karmada.io/dependencies (JSON list of
//     {apiVersion, kind, namespace, name}) while it propagates dependencies;
//     both removed once it stops (propagateDeps false, or being deleted) and
//     its entries are released. Events SyncScheduleResultToDependenciesSucceed
//     / ...Failed and GetDependenciesFailed.
//   - attached binding: created with the binding permanent-id label, the
//     binding-controller finalizer, a controller owner reference to the
//     dependency (blockOwnerDeletion), spec.resource (with uid and
//     resourceVersion, refreshed when the dependency changes) and no
//     placement, so it is never scheduled. Per depending binding: the label
//     resourcebinding.karmada.io/depended-by-<hash of namespace/name> (value:
//     the depending binding's permanent ID) and a spec.requiredBy entry
//     {namespace, name, clusters}. An attached-only binding (no placement)
//     takes conflictResolution Overwrite and preserveResourcesOnDeletion true
//     when any depending binding has them (Event DependencyPolicyConflict on
//     disagreement). When nobody requires it any more and it has no placement
//     and no policy claim, it is deleted. Nothing else on a binding that a
//     policy also claims is touched.
//
// Lifeboat differences from Karmada:
//   - requiredBy[].clusters are the depending binding's spec.clusters plus
//     the clusters of its graceful eviction tasks whose old copy is kept, by
//     the very rule that keeps the workload's own Work there
//     (failover.KeepsOldCopy: Gracefully/Graciously and Never, suppressDeletion
//     true, and Directly too while nothing is placed instead, so the last
//     copy keeps its ConfigMaps, Secrets and claims): Karmada removes a
//     dependency from an evicted cluster at once, under the old copy it keeps
//     (failover reference §2.12).
//   - A dependency deleted and created again gets its attached binding
//     replaced (Karmada waits for the garbage collector; none runs here).
//
// Triggers: depending bindings (create, delete, generation change), deletion
// of attached bindings (the bindings they were required by rebuild them), and
// any change of a recorded dependency (metadata-only informers per dependency
// kind, mapped to bindings through a field index on the dependencies
// annotation).
package dependencies
