package core

import (
	"slices"
	"strings"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// strategy is how replicas are divided among the selected clusters.
type strategy int

const (
	duplicated strategy = iota
	staticWeight
	dynamicWeight
	aggregated
)

func strategyOf(p *policyv1alpha1.Placement) strategy {
	rs := p.ReplicaScheduling
	if rs == nil || rs.ReplicaSchedulingType != policyv1alpha1.ReplicaSchedulingTypeDivided {
		return duplicated
	}
	if rs.ReplicaDivisionPreference == policyv1alpha1.ReplicaDivisionPreferenceAggregated {
		return aggregated
	}
	// Weighted, also when the preference is empty (Karmada's webhook
	// defaults it to Weighted).
	if rs.WeightPreference != nil && rs.WeightPreference.DynamicWeight != "" {
		return dynamicWeight
	}
	return staticWeight
}

// staticWeightsOnly: a static weight list already says where replicas go,
// so, as in Karmada, spread constraints do not select clusters; only the
// cluster constraint's maxGroups still caps how many clusters are used
// (capStaticWeights). Without a list (every cluster weighs 1) the spread
// constraints select as for any other Divided workload.
func staticWeightsOnly(p *policyv1alpha1.Placement) bool {
	if strategyOf(p) != staticWeight {
		return false
	}
	wp := p.ReplicaScheduling.WeightPreference
	return wp != nil && len(wp.StaticWeightList) > 0
}

// spreadConstraints returns the cluster and region constraints with
// Karmada's defaults applied (no field and no label means cluster; minGroups
// at least 1), and whether any other constraint is present.
func spreadConstraints(p *policyv1alpha1.Placement) (cluster, region *policyv1alpha1.SpreadConstraint, others bool) {
	for _, sc := range p.SpreadConstraints {
		if sc.SpreadByField == "" && sc.SpreadByLabel == "" {
			sc.SpreadByField = policyv1alpha1.SpreadByFieldCluster
		}
		sc.MinGroups = max(sc.MinGroups, 1)
		switch sc.SpreadByField {
		case policyv1alpha1.SpreadByFieldCluster:
			cluster = &sc
		case policyv1alpha1.SpreadByFieldRegion:
			region = &sc
		default:
			others = true
		}
	}
	return cluster, region, others
}

// selectClusters applies the spread constraints to the sorted candidates.
// Only cluster and region constraints select; zone and provider constraints
// only filter (clusters must have the field).
func selectClusters(cs []*candidate, spec *workv1alpha2.ResourceBindingSpec) ([]*candidate, error) {
	placement := placementOf(spec)
	if len(placement.SpreadConstraints) == 0 {
		return cs, nil
	}
	clusterSC, regionSC, _ := spreadConstraints(placement)
	switch {
	case staticWeightsOnly(placement):
		return capStaticWeights(cs, placement, clusterSC), nil
	case regionSC != nil:
		return selectByRegion(cs, spec, regionSC, clusterSC)
	case clusterSC != nil:
		return selectByCluster(cs, spec, clusterSC)
	default:
		return nil, unschedulable("spread constraints can only select by cluster and region; add a spreadByField: cluster constraint")
	}
}

// selectByCluster takes the best maxGroups candidates (all when maxGroups is
// 0). For Divided workloads it then swaps the lowest-ranked ones for richer
// clusters until their available replicas cover spec.replicas.
func selectByCluster(cs []*candidate, spec *workv1alpha2.ResourceBindingSpec, sc *policyv1alpha1.SpreadConstraint) ([]*candidate, error) {
	if len(cs) < sc.MinGroups {
		return nil, unschedulable("%d feasible cluster(s), fewer than the spread constraint's minGroups %d", len(cs), sc.MinGroups)
	}
	n := len(cs)
	if sc.MaxGroups > 0 && sc.MaxGroups < n {
		n = sc.MaxGroups
	}
	selected := slices.Clone(cs[:n])
	if strategyOf(placementOf(spec)) == duplicated || !isWorkload(spec) {
		return selected, nil
	}
	return ensureCapacity(selected, cs[n:], spec.Replicas)
}

// capStaticWeights keeps at most the cluster constraint's maxGroups
// candidates (all without one): the clusters the weight list gives a
// weight first, then the clusters already scheduled, so a failover does not
// move the survivors, then the heaviest weights, then the candidates'
// order. A placement never uses more clusters than maxGroups.
//
// An unweighted cluster kept by its score alone would take every replica:
// with no weighted cluster among those kept, divideStatic weighs each of
// them 1.
func capStaticWeights(cs []*candidate, placement *policyv1alpha1.Placement, clusterSC *policyv1alpha1.SpreadConstraint) []*candidate {
	if clusterSC == nil || clusterSC.MaxGroups <= 0 || clusterSC.MaxGroups >= len(cs) {
		return cs
	}
	wp := placement.ReplicaScheduling.WeightPreference
	ranked := slices.Clone(cs)
	slices.SortStableFunc(ranked, func(a, b *candidate) int {
		wa, _ := staticWeightOf(a, wp)
		wb, _ := staticWeightOf(b, wp)
		if (wa > 0) != (wb > 0) {
			if wa > 0 {
				return -1
			}
			return 1
		}
		if a.score != b.score {
			return cmpDesc(a.score, b.score)
		}
		return cmpDesc(wa, wb)
	})
	selected := ranked[:clusterSC.MaxGroups]
	sortCandidates(selected)
	return selected
}

// ensureCapacity swaps selected clusters, lowest-ranked first, for richer
// ones from rest until the selection can run want replicas.
func ensureCapacity(selected, rest []*candidate, want int32) ([]*candidate, error) {
	total := int64(0)
	for _, c := range selected {
		total += int64(c.available)
	}
	rest = slices.Clone(rest)
	slices.SortStableFunc(rest, func(a, b *candidate) int { return cmpDesc(int64(a.available), int64(b.available)) })
	for i := len(selected) - 1; i >= 0 && total < int64(want) && len(rest) > 0; i-- {
		if rest[0].available > selected[i].available {
			total += int64(rest[0].available) - int64(selected[i].available)
			selected[i], rest[0] = rest[0], selected[i]
			slices.SortStableFunc(rest, func(a, b *candidate) int { return cmpDesc(int64(a.available), int64(b.available)) })
		}
	}
	if total < int64(want) {
		return nil, unschedulable("not enough resources in the %d selected cluster(s): %d replica(s) available, %d wanted", len(selected), total, want)
	}
	sortCandidates(selected)
	return selected, nil
}

// region is a group of candidates in one region, best first.
type region struct {
	name     string
	clusters []*candidate
	score    int64
}

// selectByRegion picks the best regions (between minGroups and maxGroups of
// them), takes the best cluster of each, then fills up to the cluster
// constraint's maxGroups from the rest of the chosen regions.
func selectByRegion(cs []*candidate, spec *workv1alpha2.ResourceBindingSpec, regionSC, clusterSC *policyv1alpha1.SpreadConstraint) ([]*candidate, error) {
	byName := map[string]*region{}
	var regions []*region
	for _, c := range cs {
		r := byName[c.cluster.Spec.Region]
		if r == nil {
			r = &region{name: c.cluster.Spec.Region}
			byName[r.name] = r
			regions = append(regions, r)
		}
		r.clusters = append(r.clusters, c)
	}
	if len(regions) < regionSC.MinGroups {
		return nil, unschedulable("%d feasible region(s), fewer than the spread constraint's minGroups %d", len(regions), regionSC.MinGroups)
	}
	clusterMin := 1
	if clusterSC != nil {
		clusterMin = clusterSC.MinGroups
	}
	for _, r := range regions {
		r.score = regionScore(r, spec, regionSC.MinGroups, clusterMin)
	}
	// Group scores are never negative, so the best set of k regions is the
	// k best regions and more regions never score less.
	slices.SortStableFunc(regions, func(a, b *region) int {
		if a.score != b.score {
			return cmpDesc(a.score, b.score)
		}
		return strings.Compare(a.name, b.name)
	})
	k := len(regions)
	if regionSC.MaxGroups > 0 && regionSC.MaxGroups < k {
		k = regionSC.MaxGroups
	}
	chosen := regions[:k]

	var selected, rest []*candidate
	for _, r := range chosen {
		selected = append(selected, r.clusters[0])
		rest = append(rest, r.clusters[1:]...)
	}
	if len(selected)+len(rest) < clusterMin {
		return nil, unschedulable("%d feasible cluster(s) in the chosen regions, fewer than the spread constraint's minGroups %d", len(selected)+len(rest), clusterMin)
	}
	sortCandidates(rest)
	limit := len(selected) + len(rest)
	if clusterSC != nil && clusterSC.MaxGroups > 0 {
		limit = min(limit, max(clusterSC.MaxGroups, len(selected)))
	}
	selected = append(selected, rest[:limit-len(selected)]...)
	sortCandidates(selected)
	return selected, nil
}

// regionScore ranks a region. Duplicated: 1000 per cluster that can run
// every replica, plus their average score. Divided: 1000 times the replicas
// the region's best clusters can run (counting at least minClusters of them,
// capped at its share ceil(replicas/minRegions)), plus their average score.
func regionScore(r *region, spec *workv1alpha2.ResourceBindingSpec, minRegions, minClusters int) int64 {
	var sum, n, points int64
	if strategyOf(placementOf(spec)) == duplicated || !isWorkload(spec) {
		for _, c := range r.clusters {
			if c.available >= spec.Replicas {
				points += 1000
				sum += c.score
				n++
			}
		}
	} else {
		target := (int64(spec.Replicas) + int64(minRegions) - 1) / int64(minRegions)
		var available int64
		for _, c := range r.clusters {
			if available >= target && n >= int64(minClusters) {
				break
			}
			available += int64(c.available)
			sum += c.score
			n++
		}
		points = 1000 * min(available, target)
	}
	if n == 0 {
		return points
	}
	return points + sum/n
}
