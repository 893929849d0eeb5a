package core

import (
	"fmt"
	"math"
	"slices"
	"strings"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// localityScore is the score of a cluster the binding is already scheduled
// on; other clusters score 0. It keeps placements stable.
const localityScore = 100

// Problem is everything a placement decision depends on.
type Problem struct {
	// Spec is the binding's spec: resource, replicas, requirements,
	// placement, current clusters and eviction tasks. Not modified.
	Spec *workv1alpha2.ResourceBindingSpec
	// ObservedAffinityName is status.schedulerObservingAffinityName, the
	// clusterAffinities term in use.
	ObservedAffinityName string
	// Fresh is set when a manual reschedule is pending
	// (spec.rescheduleTriggeredAt > status.lastScheduledTime): affinity
	// terms are tried from the first one and dynamic division redistributes
	// every replica instead of only the missing ones.
	Fresh bool
	// Clusters is the snapshot of all Cluster objects. Not modified.
	Clusters []*clusterv1alpha1.Cluster
}

// Result is a placement decision.
type Result struct {
	// Clusters is the new spec.clusters, sorted by name.
	Clusters []workv1alpha2.TargetCluster
	// AffinityName is the clusterAffinities term that produced Clusters
	// (the observed one again when every term failed); empty without
	// clusterAffinities.
	AffinityName string
}

// candidate is a cluster that passed the filters, with what selection and
// division need to know about it.
type candidate struct {
	cluster *clusterv1alpha1.Cluster
	score   int64
	// assigned is the cluster's replicas in the current spec.clusters.
	assigned int32
	// scheduled says the cluster is in the current spec.clusters.
	scheduled bool
	// allocatable is the estimated room for more replicas.
	allocatable int32
	// available is allocatable plus assigned: what the cluster could run.
	available int32
}

func (c *candidate) name() string { return c.cluster.Name }

// Schedule decides the binding's placement. Errors are *FitError (no
// cluster passed the filters), *UnschedulableError (the spread or capacity
// cannot be satisfied) or, with clusterAffinities, an *AffinitiesError that
// wraps one of those per term tried.
func Schedule(p Problem) (Result, error) {
	placement := placementOf(p.Spec)
	if len(placement.ClusterAffinities) == 0 {
		clusters, err := scheduleWith(p, placement.ClusterAffinity)
		return Result{Clusters: clusters}, err
	}

	// 1. Start at the term in use: the scheduler never moves back to an
	//    earlier group by itself, only a manual reschedule does.
	//    The term in use is the observed one, or the term the currently
	//    scheduled clusters belong to when that is later: the status write
	//    that records the term can lose a race after the spec was written,
	//    and starting from a stale, earlier term would move the workload
	//    back to the group it was just evicted from.
	start := 0
	if !p.Fresh {
		if i := slices.IndexFunc(placement.ClusterAffinities, func(t policyv1alpha1.ClusterAffinityTerm) bool {
			return t.AffinityName == p.ObservedAffinityName
		}); i >= 0 {
			start = i
		}
		if i := termOfScheduled(placement.ClusterAffinities, p.Spec.Clusters, p.Clusters); i > start {
			start = i
		}
	}
	// 2. The first term that schedules wins.
	failed := &AffinitiesError{}
	for _, term := range placement.ClusterAffinities[start:] {
		clusters, err := scheduleWith(p, &term.ClusterAffinity)
		if err == nil {
			return Result{Clusters: clusters, AffinityName: term.AffinityName}, nil
		}
		failed.Terms = append(failed.Terms, term.AffinityName)
		failed.Errs = append(failed.Errs, err)
	}
	// 3. Every term failed: keep the observed term.
	return Result{AffinityName: p.ObservedAffinityName}, failed
}

// AffinitiesError says that every clusterAffinities term tried failed.
type AffinitiesError struct {
	Terms []string
	Errs  []error
}

func (e *AffinitiesError) Error() string {
	parts := make([]string, len(e.Terms))
	for i := range e.Terms {
		parts[i] = fmt.Sprintf("clusterAffinities term %q: %v", e.Terms[i], e.Errs[i])
	}
	return strings.Join(parts, "; ")
}

// Unwrap lets errors.As find the per-term errors.
func (e *AffinitiesError) Unwrap() []error { return e.Errs }

// scheduleWith runs filter, score, select and divide with one cluster
// affinity.
func scheduleWith(p Problem, affinity *policyv1alpha1.ClusterAffinity) ([]workv1alpha2.TargetCluster, error) {
	spec := p.Spec
	workload := isWorkload(spec)

	// 1. Filter.
	fitErr := &FitError{NumClusters: len(p.Clusters), Reasons: map[string]int{}}
	var candidates []*candidate
	for _, cluster := range p.Clusters {
		if reason := filterCluster(cluster, spec, affinity); reason != "" {
			fitErr.Reasons[reason]++
			continue
		}
		c := &candidate{cluster: cluster}
		for _, t := range spec.Clusters {
			if t.Name == cluster.Name {
				c.scheduled, c.assigned = true, t.Replicas
			}
		}
		// 2. Score.
		if c.scheduled {
			c.score = localityScore
		}
		if workload {
			c.allocatable = EstimateCapacity(cluster, spec.ReplicaRequirements, spec.Replicas)
			c.available = int32(min(int64(c.allocatable)+int64(c.assigned), math.MaxInt32))
		}
		candidates = append(candidates, c)
	}
	if len(candidates) == 0 {
		return nil, fitErr
	}
	sortCandidates(candidates)

	// 3. Select.
	selected, err := selectClusters(candidates, spec)
	if err != nil {
		return nil, err
	}

	// 4. Divide.
	if !workload || spec.Replicas == 0 {
		return zeroReplicas(selected), nil
	}
	return divide(selected, spec, p.Fresh)
}

// isWorkload: a binding with replicas or per-replica requirements. Other
// kinds (ConfigMap, Service...) go whole to every selected cluster.
func isWorkload(spec *workv1alpha2.ResourceBindingSpec) bool {
	return spec.Replicas > 0 || spec.ReplicaRequirements != nil
}

// sortCandidates orders by score, then available replicas (both
// descending), then name.
func sortCandidates(cs []*candidate) {
	slices.SortStableFunc(cs, func(a, b *candidate) int {
		switch {
		case a.score != b.score:
			return cmpDesc(a.score, b.score)
		case a.available != b.available:
			return cmpDesc(int64(a.available), int64(b.available))
		default:
			return strings.Compare(a.name(), b.name())
		}
	})
}

func cmpDesc(a, b int64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

func zeroReplicas(cs []*candidate) []workv1alpha2.TargetCluster {
	out := make([]workv1alpha2.TargetCluster, 0, len(cs))
	for _, c := range cs {
		out = append(out, workv1alpha2.TargetCluster{Name: c.name()})
	}
	sortTargets(out)
	return out
}

func sortTargets(ts []workv1alpha2.TargetCluster) {
	slices.SortFunc(ts, func(a, b workv1alpha2.TargetCluster) int { return strings.Compare(a.Name, b.Name) })
}

// termOfScheduled returns the index of the first clusterAffinities term that
// selects every currently scheduled cluster, or -1 when nothing is scheduled
// or no term selects them all.
func termOfScheduled(terms []policyv1alpha1.ClusterAffinityTerm, scheduled []workv1alpha2.TargetCluster, clusters []*clusterv1alpha1.Cluster) int {
	if len(scheduled) == 0 {
		return -1
	}
	byName := make(map[string]*clusterv1alpha1.Cluster, len(clusters))
	for _, c := range clusters {
		byName[c.Name] = c
	}
	for i := range terms {
		all := true
		for _, tc := range scheduled {
			c, ok := byName[tc.Name]
			if !ok || !ClusterMatches(c, &terms[i].ClusterAffinity) {
				all = false
				break
			}
		}
		if all {
			return i
		}
	}
	return -1
}
