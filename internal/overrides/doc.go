// Package overrides applies OverridePolicies and ClusterOverridePolicies to a
// resource template for one member cluster.
//
// It is pure: Apply takes the template, the target Cluster and the policies,
// and returns a changed copy plus the record of what was applied (the
// policy.karmada.io/applied-overrides and applied-cluster-overrides
// annotations of a Work). It reads nothing from the API and writes no object
// fields; the binding controller (internal/binding) calls it.
//
// Order, matching Karmada:
//  1. ClusterOverridePolicies, then OverridePolicies of the template's own
//     namespace (cluster-scoped templates get ClusterOverridePolicies only).
//  2. Within each kind, the policies whose resourceSelectors select the
//     template (or that have none), sorted by implicit selector priority
//     ascending (match-all, then label selector, then name) and then by
//     name, so that the more specific policy is applied last and wins.
//  3. Within a policy, its overrideRules in order (or the deprecated
//     targetCluster/overriders pair as one rule), keeping the rules whose
//     targetCluster is nil or selects the cluster.
//  4. Within one overriders block: imageOverrider, commandOverrider,
//     argsOverrider, labelsOverrider, annotationsOverrider, fieldOverrider,
//     plaintext. Each entry becomes RFC 6902 JSON-patch operations that are
//     applied at once, so later entries see the result of earlier ones.
//
// No rule may change the apiVersion, kind, metadata.namespace or
// metadata.name of the copy (IdentityChange): they say which object the
// Work creates in the member, and a policy of one namespace must not reach
// into another. Such a rule fails its policy like an overrider that cannot
// apply.
package overrides
