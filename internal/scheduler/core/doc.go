// Package core is the scheduler's placement decision: given a binding's
// placement, replicas and current result, and a snapshot of the Clusters, it
// says which clusters get the resource and how many replicas each. It is a set
// of plain functions with no client and no clock; the controller in the parent
// package observes, calls Schedule, and writes the result.
//
// The steps, in Karmada's order:
//
//  1. Filter: drop clusters that are being deleted, have an eviction task for
//     the binding, do not match the cluster affinity, carry an untolerated
//     NoSchedule/NoExecute taint (clusters already scheduled are exempt), do
//     not serve the resource's API, or lack a field a spread constraint
//     groups by. Nothing left is a *FitError that counts the reasons.
//  2. Score: 100 for clusters already in spec.clusters (stable placements),
//     0 otherwise.
//  3. Select: apply spread constraints (cluster and region selection).
//  4. Divide replicas: Duplicated, static weights (Webster), dynamic weights
//     or Aggregated by estimated available replicas.
//
// clusterAffinities are ordered groups: the terms are tried from the one in
// use (status.schedulerObservingAffinityName) onwards and the first one that
// schedules wins.
//
// Deliberate differences from Karmada, each for a user-visible reason:
//   - A cluster without status.resourceSummary has unknown capacity and is
//     estimated at spec.replicas (Karmada's general estimator says 0, which
//     makes dynamic division fail on clusters whose status is not collected
//     yet).
//   - status.apiEnablements: an empty list, or a list whose
//     CompleteAPIEnablements condition is False (Partial), does not reject a
//     cluster; only a complete list that lacks the resource's
//     apiVersion/kind does.
//   - A cluster spread constraint with maxGroups 0 means "no upper bound"
//     (Karmada selects nothing and fails).
//   - A cluster spread constraint's maxGroups is a hard cap, also with a
//     static weight list (Karmada then ignores spread constraints and may
//     use every weighted cluster): the clusters the list gives a weight are
//     kept first, then those already scheduled, then the heaviest weights. Other spread constraints still do
//     not select clusters for static weights.
//   - A workload with spec.replicas 0 keeps its selected clusters with 0
//     replicas (Karmada drops them, deleting the member objects, unless
//     --enable-empty-workload-propagation is set).
package core
