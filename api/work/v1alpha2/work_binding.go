package v1alpha2

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
