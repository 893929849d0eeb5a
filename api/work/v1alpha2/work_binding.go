package v1alpha2

import (
	"slices"
	"strconv"
	"strings"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// BindingOfWorkAnnotations reads which binding a Work belongs to from the
// annotations the binding controller puts on every Work. namespace is empty
// for a ClusterResourceBinding; ok is false when the annotations name no
// binding, or a ResourceBinding without its namespace.
func BindingOfWorkAnnotations(annotations map[string]string) (namespace, name string, cluster, ok bool) {
	if name := annotations[ResourceBindingNameAnnotationKey]; name != "" {
		ns := annotations[ResourceBindingNamespaceAnnotationKey]
		return ns, name, false, ns != ""
	}
	if name := annotations[ClusterResourceBindingAnnotationKey]; name != "" {
		return "", name, true, true
	}
	return "", "", false, false
}

// IsPlacementHealthy reports whether every cluster of clusters has a
// Healthy item in items; false for an empty placement.
func IsPlacementHealthy(clusters []TargetCluster, items []AggregatedStatusItem) bool {
	if len(clusters) == 0 {
		return false
	}
	for _, c := range clusters {
		healthy := false
		for i := range items {
			if items[i].ClusterName == c.Name {
				healthy = items[i].Health == ResourceHealthy
				break
			}
		}
		if !healthy {
			return false
		}
	}
	return true
}

// PlacementHealthyMessage is the message of a True PlacementHealthy
// condition for clusters. It names each cluster with its replicas, so that
// a reader of the binding can tell whether the condition, and the
// aggregatedStatus written with it, describes the placement in
// spec.clusters now or one the scheduler has since changed.
func PlacementHealthyMessage(clusters []TargetCluster) string {
	return "Every cluster of the placement reports Healthy: " + DescribePlacement(clusters) + "."
}

// DescribePlacement names the clusters of a placement, sorted, each with
// its replicas when it has any: "member1 (2 replicas), member2 (1 replica)".
func DescribePlacement(clusters []TargetCluster) string {
	names := make([]string, 0, len(clusters))
	for _, c := range clusters {
		switch c.Replicas {
		case 0:
			names = append(names, c.Name)
		case 1:
			names = append(names, c.Name+" (1 replica)")
		default:
			names = append(names, c.Name+" ("+strconv.FormatInt(int64(c.Replicas), 10)+" replicas)")
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// IsClaimed says whether a binding with these labels is managed: a
// PropagationPolicy or ClusterPropagationPolicy claims it (its permanent-id
// label), or another controller manages it (BindingManagedByLabel). A
// binding whose policy was deleted, or no longer selects its template, is
// not: it stays where it is, with its Works and member copies, and neither
// scheduling nor failover moves it.
func IsClaimed(labels map[string]string) bool {
	return labels[policyv1alpha1.PropagationPolicyPermanentIDLabel] != "" ||
		labels[policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel] != "" ||
		labels[BindingManagedByLabel] != ""
}
