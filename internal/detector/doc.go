// Package detector turns resource templates and PropagationPolicies /
// ClusterPropagationPolicies into ResourceBindings and
// ClusterResourceBindings (Karmada's resource detector, pipeline reference
// §1).
//
// What is watched. The served kinds come from the shared discovery view
// (internal/served: every 30 seconds and whenever a
// CustomResourceDefinition changes); when they change every policy is
// looked at again. A template kind is watched (one dynamic informer per
// kind and version, from the manager's cache) only once a policy selects
// it, so memory grows with the kinds in use, not with every kind the API
// server serves. Never propagated: Lifeboat's own groups
// (cluster/policy/work/config.karmada.io and Karmada's other groups), events,
// leases (coordination.k8s.io), Endpoints and EndpointSlices, objects in
// kube-*, karmada-system, karmada-cluster and karmada-es-* namespaces, the
// default ServiceAccount, the kube-root-ca.crt ConfigMap and
// service-account token Secrets. Template updates that only change status
// are ignored. Bindings are watched too (creation and deletion): a deleted
// binding is rebuilt and a binding whose template is gone is deleted.
//
// Matching (match.go). A selector matches on apiVersion and kind, then
// namespace (empty: the PropagationPolicy's own namespace, or every
// namespace for a ClusterPropagationPolicy), then name (which makes the
// label selector irrelevant) or label selector. Among candidates the highest
// spec.priority wins, then the implicit priority (name > label selector >
// whole kind), then the smallest policy name. A matching PropagationPolicy
// always beats any ClusterPropagationPolicy. A claim is sticky: a claimed
// template stays with its policy while that policy exists and selects it.
// spec.preemption is not supported yet (Karmada gates it off by default):
// a policy never takes a template over from another one.
//
// The decisions are plain functions of what they read, exported so that
// lifeboat simulate predicts a policy with the very same code, writing
// nothing: ChoosePolicy (which policy claims a template, through a
// PolicySource), SelectedTemplates, KindProblem, MissingOverrides,
// ReplicasOf, BuildBinding and MergeBinding.
//
// Writes, per object:
//   - template: claim labels and annotations
//     (propagationpolicy.karmada.io/permanent-id, .../namespace, .../name, or
//     clusterpropagationpolicy.karmada.io/permanent-id and .../name), added
//     when claimed and removed when the policy is deleted or stops selecting
//     it;
//   - PropagationPolicy / ClusterPropagationPolicy: the permanent-id label
//     and the karmada.io/(cluster-)propagation-policy-controller finalizer
//     when missing (Karmada's webhook adds them; Lifeboat has no webhook),
//     with a full update that leaves the status (the policy checker's
//     Accepted condition, a subresource) untouched; a write of the status
//     alone does not make the detector look at the policy again;
//     Warning Events ApplyPolicyFailed for selected kinds that are not
//     served ("no kind Foo is served for apiVersion example.io/v1"), retried
//     when discovery changes;
//   - ResourceBinding (namespaced template) / ClusterResourceBinding
//     (cluster-scoped template), named "<name>-<kind>": created with the
//     binding permanent-id label and the binding-controller finalizer,
//     a controller owner reference to the template (blockOwnerDeletion), the
//     claim metadata, and spec.resource (including uid and resourceVersion),
//     spec.replicas and spec.replicaRequirements (Interpreter.GetReplicas),
//     spec.propagateDeps, schedulerName, placement, failover,
//     conflictResolution, preserveResourcesOnDeletion and suspension
//     (dispatching from the policy; scheduling kept). spec.clusters,
//     gracefulEvictionTasks, requiredBy, rescheduleTriggeredAt and status
//     are never touched. A reconcile with nothing to change writes nothing.
//   - Events ApplyPolicySucceed / ApplyPolicyFailed on the template; past a
//     burst per policy, ApplyPolicySucceed is counted in a summary on the
//     policy instead (eventbudget).
//
// Lifeboat rule: when the policy sets spec.failover.application, the
// binding's spec.propagateDeps is true even if the policy leaves
// propagateDeps false (the seeds' Flink example omits it): a workload moved
// by application failover needs its ConfigMaps and Secrets in the new
// cluster.
//
// Deletion. The control plane runs no garbage collector, so the owner
// reference alone would leave bindings behind: the detector deletes a
// binding when its template is deleted (or was replaced by a new object of
// the same name). When a policy is deleted its claim is removed from its
// bindings first and then from its templates; bindings, Works and member
// objects stay (Karmada's behaviour), the scheduler leaves an unclaimed
// binding where it is (scheduler.Claimed), and the template's update lets
// another matching policy claim it.
//
// activationPreference: Lazy. A policy change is not copied into an existing
// binding until the template itself changes (its resourceVersion differs
// from the binding's spec.resource.resourceVersion).
package detector
