package core

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// EstimateCapacity returns how many more replicas with the given
// requirements fit in the cluster, from status.resourceSummary:
//
//   - no resource summary (or an empty allocatable): the capacity is unknown
//     and the answer is desired, i.e. as far as the scheduler knows the
//     cluster can hold the whole workload;
//   - otherwise the free pods (allocatable - allocated - allocating, when
//     allocatable lists pods) bound the answer, and so does, for each
//     requested resource, free / request (CPU in millicores); a requested
//     resource the cluster does not offer gives 0.
//
// The result is never negative and never above math.MaxInt32.
func EstimateCapacity(cluster *clusterv1alpha1.Cluster, req *workv1alpha2.ReplicaRequirements, desired int32) int32 {
	summary := cluster.Status.ResourceSummary
	if summary == nil || len(summary.Allocatable) == 0 {
		return desired
	}
	capacity := int64(math.MaxInt32)
	if _, ok := summary.Allocatable[corev1.ResourcePods]; ok {
		capacity = min(capacity, free(summary, corev1.ResourcePods))
	}
	if req != nil {
		for name := range req.ResourceRequest {
			per := amount(req.ResourceRequest, name)
			if per <= 0 {
				continue
			}
			if _, ok := summary.Allocatable[name]; !ok {
				return 0
			}
			capacity = min(capacity, free(summary, name)/per)
		}
	}
	return int32(max(capacity, 0))
}

// free is allocatable - allocated - allocating of one resource.
func free(summary *clusterv1alpha1.ResourceSummary, name corev1.ResourceName) int64 {
	return amount(summary.Allocatable, name) - amount(summary.Allocated, name) - amount(summary.Allocating, name)
}

// amount counts CPU in millicores and everything else in whole units.
func amount(list corev1.ResourceList, name corev1.ResourceName) int64 {
	q, ok := list[name]
	if !ok {
		return 0
	}
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}
