package failover

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// maxTaskMessage is the schema's maxLength of GracefulEvictionTask.message
// and FailoverHistoryItem.message.
const maxTaskMessage = 1024

// EvictOptions describe one eviction.
type EvictOptions struct {
	// Reason is the task's reason, e.g. ApplicationFailure.
	Reason string
	// Producer is the evicting controller.
	Producer string
	// PurgeMode is normalised; empty means Gracefully.
	PurgeMode policyv1alpha1.PurgeMode
	// GracePeriodSeconds bounds how long the old copy is kept; nil uses the
	// graceful-eviction controller's default.
	GracePeriodSeconds *int32
	// PreservedLabelState is the captured state, nil when none.
	PreservedLabelState map[string]string
	// Message says more (e.g. why some state could not be captured).
	Message string
	// ClustersBefore is the placement before the eviction; nil means the
	// spec's clusters at the time of the call. Pass it when evicting several
	// clusters in one write, so every task records the same placement.
	ClustersBefore []string
	// Now stamps the task.
	Now time.Time
}

// Evict moves cluster from spec.clusters into spec.gracefulEvictionTasks
// and reports whether spec changed. It is the one eviction used by every
// failover trigger. The caller writes spec in one Update with the
// resourceVersion it read, and on a conflict re-reads and decides again.
//
// Evict is idempotent: a cluster that is not in spec.clusters is a no-op,
// and a cluster that already has a task keeps that task unchanged (it is
// only removed from spec.clusters).
func Evict(spec *workv1alpha2.ResourceBindingSpec, cluster string, o EvictOptions) bool {
	idx := -1
	for i := range spec.Clusters {
		if spec.Clusters[i].Name == cluster {
			idx = i
			break
		}
	}
	if idx < 0 {
		return false
	}
	before := o.ClustersBefore
	if before == nil {
		before = clusterNames(spec.Clusters)
	}
	evicted := spec.Clusters[idx]
	spec.Clusters = append(spec.Clusters[:idx:idx], spec.Clusters[idx+1:]...)
	if len(spec.Clusters) == 0 {
		spec.Clusters = nil
	}
	if findTask(spec, cluster) != nil {
		return true
	}

	mode := policyv1alpha1.NormalizePurgeMode(o.PurgeMode)
	if mode == "" {
		mode = policyv1alpha1.DefaultPurgeMode
	}
	task := workv1alpha2.GracefulEvictionTask{
		FromCluster:            cluster,
		PurgeMode:              mode,
		Reason:                 o.Reason,
		Message:                truncate(o.Message, maxTaskMessage),
		Producer:               o.Producer,
		GracePeriodSeconds:     o.GracePeriodSeconds,
		ClustersBeforeFailover: append([]string(nil), before...),
		CreationTimestamp:      ptr.To(metav1.NewTime(o.Now).Rfc3339Copy()),
	}
	if evicted.Replicas > 0 {
		task.Replicas = ptr.To(evicted.Replicas)
	}
	if mode == policyv1alpha1.PurgeModeNever {
		task.SuppressDeletion = ptr.To(true)
	}
	if len(o.PreservedLabelState) > 0 {
		task.PreservedLabelState = make(map[string]string, len(o.PreservedLabelState))
		for k, v := range o.PreservedLabelState {
			task.PreservedLabelState[k] = v
		}
	}
	spec.GracefulEvictionTasks = append(spec.GracefulEvictionTasks, task)
	return true
}

func findTask(spec *workv1alpha2.ResourceBindingSpec, cluster string) *workv1alpha2.GracefulEvictionTask {
	for i := range spec.GracefulEvictionTasks {
		if spec.GracefulEvictionTasks[i].FromCluster == cluster {
			return &spec.GracefulEvictionTasks[i]
		}
	}
	return nil
}

func clusterNames(clusters []workv1alpha2.TargetCluster) []string {
	if len(clusters) == 0 {
		return nil
	}
	out := make([]string, 0, len(clusters))
	for _, c := range clusters {
		out = append(out, c.Name)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "..."
	return s[:n-len(ellipsis)] + ellipsis
}
