package core

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// Reasons a cluster is filtered out; they end up in FitError messages.
const (
	ReasonDeleting         = "cluster(s) is being deleted"
	ReasonEvicting         = "cluster(s) is in the process of eviction"
	ReasonAffinityMismatch = "cluster(s) did not match the placement cluster affinity constraint"
	ReasonAPIMissing       = "cluster(s) did not have the API resource"
	reasonTaintFormat      = "cluster(s) had untolerated taint {%s: %s}"
	reasonNoFieldFormat    = "cluster(s) did not have %s property"
)

// filterCluster returns "" when the cluster can take the binding under the
// given affinity, or why it cannot. The checks run in a fixed order and the
// first failing one is the reason.
func filterCluster(cluster *clusterv1alpha1.Cluster, spec *workv1alpha2.ResourceBindingSpec, affinity *policyv1alpha1.ClusterAffinity) string {
	placement := placementOf(spec)
	scheduled := isScheduledOn(spec, cluster.Name)
	switch {
	case cluster.DeletionTimestamp != nil:
		return ReasonDeleting
	case slices.ContainsFunc(spec.GracefulEvictionTasks, func(t workv1alpha2.GracefulEvictionTask) bool { return t.FromCluster == cluster.Name }):
		// Keeps a failed-over workload from going back to the cluster it is
		// being evicted from, for as long as the task exists.
		return ReasonEvicting
	case !ClusterMatches(cluster, affinity):
		return ReasonAffinityMismatch
	}
	// Clusters already scheduled keep the binding whatever their taints:
	// taints only block new placements, eviction is the failover
	// controllers' job.
	if !scheduled {
		if taint, ok := untoleratedTaint(cluster.Spec.Taints, placement.ClusterTolerations); ok {
			return fmt.Sprintf(reasonTaintFormat, taint.Key, taint.Value)
		}
		if !servesAPI(cluster, spec.Resource.APIVersion, spec.Resource.Kind) {
			return ReasonAPIMissing
		}
	}
	for _, sc := range placement.SpreadConstraints {
		switch sc.SpreadByField {
		case policyv1alpha1.SpreadByFieldProvider:
			if cluster.Spec.Provider == "" {
				return fmt.Sprintf(reasonNoFieldFormat, "provider")
			}
		case policyv1alpha1.SpreadByFieldRegion:
			if cluster.Spec.Region == "" {
				return fmt.Sprintf(reasonNoFieldFormat, "region")
			}
		case policyv1alpha1.SpreadByFieldZone:
			if len(clusterZones(cluster)) == 0 {
				return fmt.Sprintf(reasonNoFieldFormat, "zones")
			}
		}
	}
	return ""
}

// servesAPI says whether the cluster serves apiVersion/kind according to
// status.apiEnablements. The rule:
//   - the kind is listed under its group version: yes;
//   - the list is empty (status not collected yet): yes, we do not know
//     better and the member will report an apply error if it is wrong;
//   - the CompleteAPIEnablements condition is False (discovery was
//     partial): yes, an unlisted kind is unknown rather than absent;
//   - otherwise (the list is complete, or says nothing about completeness):
//     no.
func servesAPI(cluster *clusterv1alpha1.Cluster, apiVersion, kind string) bool {
	enablements := cluster.Status.APIEnablements
	if len(enablements) == 0 {
		return true
	}
	for _, e := range enablements {
		if e.GroupVersion != apiVersion {
			continue
		}
		if slices.ContainsFunc(e.Resources, func(r clusterv1alpha1.APIResource) bool { return r.Kind == kind }) {
			return true
		}
	}
	return meta.IsStatusConditionPresentAndEqual(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionCompleteAPIEnablements, metav1.ConditionFalse)
}

// placementOf returns the binding's placement, or an empty one.
func placementOf(spec *workv1alpha2.ResourceBindingSpec) *policyv1alpha1.Placement {
	if spec.Placement == nil {
		return &policyv1alpha1.Placement{}
	}
	return spec.Placement
}

func isScheduledOn(spec *workv1alpha2.ResourceBindingSpec, cluster string) bool {
	return slices.ContainsFunc(spec.Clusters, func(t workv1alpha2.TargetCluster) bool { return t.Name == cluster })
}
