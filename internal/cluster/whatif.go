package cluster

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// Failure is a hypothetical failure of a member, for a dry run of what the
// controllers would do.
type Failure struct {
	// ProbesFailingSince is the start of the first failed probe.
	ProbesFailingSince time.Time
	// NotReadyAt is when the cluster-status controller turns Ready False
	// (ProbesFailingSince + --cluster-failure-threshold, at the earliest).
	NotReadyAt time.Time
}

// AsFailed returns a copy of c as the cluster controllers leave it once it
// has failed as f says, with the same functions they run:
//
//  1. the cluster-status controller's conditions for a member that does not
//     answer: Ready False (ClusterNotReachable) since f.NotReadyAt and
//     ProbeSucceeded False since f.ProbesFailingSince;
//  2. the cluster-taint controller's scheduling taints for that Ready
//     condition (not-ready:NoSchedule), stamped f.NotReadyAt;
//  3. the ClusterTaintPolicies' taints, added at f.NotReadyAt.
//
// A cluster that is already not Ready keeps its conditions.
func AsFailed(c *clusterv1alpha1.Cluster, policies []policyv1alpha1.ClusterTaintPolicy, f Failure) *clusterv1alpha1.Cluster {
	out := c.DeepCopy()
	if !meta.IsStatusConditionTrue(out.Status.Conditions, clusterv1alpha1.ClusterConditionReady) &&
		meta.FindStatusCondition(out.Status.Conditions, clusterv1alpha1.ClusterConditionReady) != nil {
		// Already failing: only the taints may be missing.
		f.NotReadyAt = meta.FindStatusCondition(out.Status.Conditions, clusterv1alpha1.ClusterConditionReady).LastTransitionTime.Time
	} else {
		observed := observedReadyCondition(ProbeResult{}, nil)
		ready := observed
		ready.LastTransitionTime = metav1.NewTime(f.NotReadyAt)
		probed := probeCondition(observed)
		probed.LastTransitionTime = metav1.NewTime(f.ProbesFailingSince)
		meta.SetStatusCondition(&out.Status.Conditions, ready)
		meta.SetStatusCondition(&out.Status.Conditions, probed)
	}
	ready := meta.FindStatusCondition(out.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	out.Spec.Taints, _ = schedulingTaints(out.Spec.Taints, ready, f.NotReadyAt)
	out.Spec.Taints, _ = applyTaintPolicies(out, policies, f.NotReadyAt)
	out.Spec.Taints, _ = stampTimeAdded(out.Spec.Taints, f.NotReadyAt)
	return out
}

// WithTaints returns a copy of c with the taints added as `lifeboat taint`
// adds them (timeAdded now, a taint with the same key and effect
// replaced), and the ClusterTaintPolicies applied to the result.
func WithTaints(c *clusterv1alpha1.Cluster, policies []policyv1alpha1.ClusterTaintPolicy, specs []string, now time.Time) (*clusterv1alpha1.Cluster, error) {
	edit, err := ParseTaintSpecs(specs)
	if err != nil {
		return nil, err
	}
	out := c.DeepCopy()
	out.Spec.Taints, _, err = applyTaintEdit(out.Spec.Taints, edit, true, now)
	if err != nil {
		return nil, err
	}
	out.Spec.Taints, _ = applyTaintPolicies(out, policies, now)
	return out, nil
}
