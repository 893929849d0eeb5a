package bench

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// Marks are short facts about an observed object; the tracker records when
// each first appeared. A mark with a cluster reads "kind:cluster".
const (
	MarkPresent   = "present"
	MarkAvailable = "available"
	// MarkUnavailable is a Deployment whose current status has fewer
	// available replicas than desired.
	MarkUnavailable = "unavailable"
	MarkReady       = "ready"
	MarkNotReady    = "notready"

	markScheduled = "scheduled:"
	markHealthy   = "healthy:"
	markUnhealthy = "unhealthy:"
	markEvicting  = "evicting:"
	markKept      = "kepthealthy:"
	markTaint     = "taint:"
)

// Scheduled is the mark of a binding scheduled to cluster (spec.clusters).
func Scheduled(cluster string) string { return markScheduled + cluster }

// Healthy is the mark of a binding whose status.aggregatedStatus item for
// cluster, a cluster it is scheduled to, has health Healthy.
func Healthy(cluster string) string { return markHealthy + cluster }

// Unhealthy is the mark of a binding whose aggregatedStatus item for
// cluster has health Unhealthy.
func Unhealthy(cluster string) string { return markUnhealthy + cluster }

// KeptHealthy is the mark of a binding whose aggregatedStatus item for
// cluster has health Healthy while cluster is not scheduled but has an
// eviction task: the copy a graceful eviction keeps until the replacement is
// Healthy.
func KeptHealthy(cluster string) string { return markKept + cluster }

// Evicting is the mark of a binding with a spec.gracefulEvictionTasks
// entry from cluster.
func Evicting(cluster string) string { return markEvicting + cluster }

// Tainted is the mark of a Cluster with a taint of key and effect.
func Tainted(key, effect string) string { return markTaint + key + ":" + effect }

// BindingMarks are the marks of a ResourceBinding: Karmada fields only.
func BindingMarks(rb *workv1alpha2.ResourceBinding) []string {
	marks := []string{MarkPresent}
	scheduled := map[string]bool{}
	for _, c := range rb.Spec.Clusters {
		scheduled[c.Name] = true
		marks = append(marks, Scheduled(c.Name))
	}
	evicting := map[string]bool{}
	for _, task := range rb.Spec.GracefulEvictionTasks {
		evicting[task.FromCluster] = true
	}
	for _, item := range rb.Status.AggregatedStatus {
		switch item.Health {
		case workv1alpha2.ResourceHealthy:
			switch {
			case scheduled[item.ClusterName]:
				marks = append(marks, Healthy(item.ClusterName))
			case evicting[item.ClusterName]:
				marks = append(marks, KeptHealthy(item.ClusterName))
			}
		case workv1alpha2.ResourceUnhealthy:
			marks = append(marks, Unhealthy(item.ClusterName))
		}
	}
	for _, task := range rb.Spec.GracefulEvictionTasks {
		marks = append(marks, Evicting(task.FromCluster))
	}
	return marks
}

// ClusterMarks are the marks of a Cluster: ready or notready (Ready
// condition not True, or missing), and one per taint.
func ClusterMarks(c *clusterv1alpha1.Cluster) []string {
	marks := []string{MarkPresent, MarkNotReady}
	for _, cond := range c.Status.Conditions {
		if cond.Type == clusterv1alpha1.ClusterConditionReady && cond.Status == metav1.ConditionTrue {
			marks[1] = MarkReady
		}
	}
	for _, t := range c.Spec.Taints {
		marks = append(marks, Tainted(t.Key, string(t.Effect)))
	}
	return marks
}

// DeploymentMarks are the marks of a Deployment: present; available once
// every desired replica of the current generation is available, and
// unavailable while its status of the current generation counts fewer
// available replicas than desired. A status of an older generation is
// neither.
func DeploymentMarks(d *appsv1.Deployment) []string {
	marks := []string{MarkPresent}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	switch {
	case d.Status.ObservedGeneration < d.Generation:
	case d.Status.AvailableReplicas >= want && d.Status.UpdatedReplicas >= want:
		marks = append(marks, MarkAvailable)
	case d.Status.AvailableReplicas < want:
		marks = append(marks, MarkUnavailable)
	}
	return marks
}

// clusterOf returns the cluster of a "kind:cluster" mark with the given
// prefix, or "" when mark has another kind.
func clusterOf(mark, prefix string) string {
	if c, ok := strings.CutPrefix(mark, prefix); ok {
		return c
	}
	return ""
}

// HealthyCluster returns the cluster of a Healthy mark, or "".
func HealthyCluster(mark string) string { return clusterOf(mark, markHealthy) }

// NoExecuteTaint reports whether mark is a NoExecute taint.
func NoExecuteTaint(mark string) bool {
	return strings.HasPrefix(mark, markTaint) && strings.HasSuffix(mark, ":"+string(corev1.TaintEffectNoExecute))
}
