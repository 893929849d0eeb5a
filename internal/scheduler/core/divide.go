package core

import (
	"hash/fnv"
	"math/big"
	"math/bits"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// divide assigns spec.replicas (> 0) to the selected clusters.
func divide(selected []*candidate, spec *workv1alpha2.ResourceBindingSpec, fresh bool) ([]workv1alpha2.TargetCluster, error) {
	placement := placementOf(spec)
	switch s := strategyOf(placement); s {
	case duplicated:
		out := make([]workv1alpha2.TargetCluster, 0, len(selected))
		for _, c := range selected {
			out = append(out, workv1alpha2.TargetCluster{Name: c.name(), Replicas: spec.Replicas})
		}
		sortTargets(out)
		return out, nil
	case staticWeight:
		return divideStatic(selected, spec), nil
	default:
		return divideDynamic(selected, spec, fresh, s == aggregated)
	}
}

// divideStatic splits the replicas by the static weight list. A cluster's
// weight is the largest weight among the entries whose targetCluster matches
// it; clusters no entry matches get nothing. When no cluster has a weight
// (or there is no list) every cluster weighs 1. Previous results do not
// matter.
func divideStatic(selected []*candidate, spec *workv1alpha2.ResourceBindingSpec) []workv1alpha2.TargetCluster {
	var list []party
	total := int64(0)
	if wp := placementOf(spec).ReplicaScheduling.WeightPreference; wp != nil {
		for _, c := range selected {
			weight, matched := staticWeightOf(c, wp)
			if matched && weight > 0 {
				list = append(list, party{name: c.name(), votes: weight})
				total += weight
			}
		}
	}
	if total == 0 {
		list = list[:0]
		for _, c := range selected {
			list = append(list, party{name: c.name(), votes: 1})
		}
	}
	return toTargets(webster(list, spec.Replicas, descendingTies(spec.Resource.UID)))
}

// staticWeightOf is a cluster's static weight: the largest weight among the
// entries whose targetCluster matches it; matched is false when none does.
func staticWeightOf(c *candidate, wp *policyv1alpha1.ClusterPreferences) (weight int64, matched bool) {
	if wp == nil {
		return 0, false
	}
	for _, entry := range wp.StaticWeightList {
		if ClusterMatches(c.cluster, &entry.TargetCluster) && (!matched || entry.Weight > weight) {
			weight, matched = entry.Weight, true
		}
	}
	return weight, matched
}

// divideDynamic divides by available replicas. Normally (steady mode) it
// moves as little as possible:
//   - more replicas assigned than wanted (scale down): the wanted replicas
//     are re-divided among the clusters that have some, weighted by what
//     they have (Aggregated first keeps the largest until the target is
//     covered);
//   - fewer (scale up, first schedule, a cluster was evicted or filtered
//     out): only the missing replicas are divided, weighted by free
//     capacity (Aggregated uses as few clusters as possible, those with
//     replicas first), and added to the current assignment;
//   - as many: the assignment stays.
//
// With fresh (manual reschedule) every replica is divided again, weighted by
// free capacity plus current replicas.
func divideDynamic(selected []*candidate, spec *workv1alpha2.ResourceBindingSpec, fresh, aggregate bool) ([]workv1alpha2.TargetCluster, error) {
	desired := int64(spec.Replicas)
	descTies := descendingTies(spec.Resource.UID)
	assigned := map[string]int64{}
	var sum int64
	for _, c := range selected {
		if c.assigned > 0 {
			assigned[c.name()] = int64(c.assigned)
			sum += int64(c.assigned)
		}
	}

	switch {
	case fresh:
		pool := poolByCapacity(selected, desired, func(c *candidate) int64 { return int64(c.available) }, aggregate, false)
		if pool == nil {
			return nil, notEnough(selected, func(c *candidate) int64 { return int64(c.available) })
		}
		return toTargets(webster(pool, int32(desired), descTies)), nil

	case sum > desired:
		var keep []*candidate
		for _, c := range selected {
			if c.assigned > 0 {
				keep = append(keep, c)
			}
		}
		pool := poolByCapacity(keep, desired, func(c *candidate) int64 { return int64(c.assigned) }, aggregate, false)
		return toTargets(webster(pool, int32(desired), descTies)), nil

	case sum < desired:
		missing := desired - sum
		pool := poolByCapacity(selected, missing, func(c *candidate) int64 { return int64(c.allocatable) }, aggregate, true)
		if pool == nil {
			return nil, notEnough(selected, func(c *candidate) int64 { return int64(c.allocatable) })
		}
		for name, n := range webster(pool, int32(missing), descTies) {
			assigned[name] += int64(n)
		}
		fallthrough

	default:
		out := make([]workv1alpha2.TargetCluster, 0, len(assigned))
		for name, n := range assigned {
			if n > 0 {
				out = append(out, workv1alpha2.TargetCluster{Name: name, Replicas: int32(n)})
			}
		}
		sortTargets(out)
		return out, nil
	}
}

// poolByCapacity returns the clusters to divide want replicas among, as
// Webster parties weighted by weight, or nil when their total weight cannot
// cover want. aggregate keeps only the shortest prefix that covers want,
// ordered by weight (clusters with replicas first when preferScheduled).
func poolByCapacity(cs []*candidate, want int64, weight func(*candidate) int64, aggregate, preferScheduled bool) []party {
	ordered := slices.Clone(cs)
	slices.SortStableFunc(ordered, func(a, b *candidate) int {
		if preferScheduled && (a.assigned > 0) != (b.assigned > 0) {
			if a.assigned > 0 {
				return -1
			}
			return 1
		}
		if d := cmpDesc(weight(a), weight(b)); d != 0 {
			return d
		}
		return strings.Compare(a.name(), b.name())
	})
	var pool []party
	var total int64
	for _, c := range ordered {
		if aggregate && total >= want {
			break
		}
		if w := weight(c); w > 0 {
			pool = append(pool, party{name: c.name(), votes: w})
			total += w
		}
	}
	if total < want {
		return nil
	}
	return pool
}

func notEnough(cs []*candidate, weight func(*candidate) int64) error {
	var total int64
	for _, c := range cs {
		total += weight(c)
	}
	return unschedulable("Clusters available replicas %d are not enough to schedule.", total)
}

func toTargets(seats map[string]int32) []workv1alpha2.TargetCluster {
	out := make([]workv1alpha2.TargetCluster, 0, len(seats))
	for name, n := range seats {
		if n > 0 {
			out = append(out, workv1alpha2.TargetCluster{Name: name, Replicas: n})
		}
	}
	sortTargets(out)
	return out
}

// party is one cluster in a Webster division.
type party struct {
	name  string
	votes int64
}

// descendingTies says whether Webster ties go to later names: Karmada
// spreads tie-breaking across bindings by the parity of the FNV-32a hash of
// the template's UID (odd: descending; no UID: ascending).
func descendingTies(uid types.UID) bool {
	if uid == "" {
		return false
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	return h.Sum32()%2 == 1
}

// webster hands out seats one at a time to the party with the highest
// votes/(2*seats+1) (Sainte-Laguë). Ties go to the party with fewer seats,
// then by name (descending when descTies). Parties without votes get no
// seats unless every party is without votes.
//
// Handing out every seat one by one takes seats × parties steps: minutes
// for 2147483647 replicas. So each party first gets websterFloor, seats it
// gets in any case, and only the rest (at most 3 for every 2 parties) is
// handed out one by one. The result is the same: one by one, the seats go
// to the best quotients in the order above (a party's quotients only fall
// as it gets seats), and starting from seats each party would have got
// anyway leaves the same best quotients to hand out.
func webster(parties []party, seats int32, descTies bool) map[string]int32 {
	out := make(map[string]int32, len(parties))
	if len(parties) == 0 {
		return out
	}
	for name, n := range websterFloor(parties, seats) {
		out[name] += n
		seats -= n
	}
	for range seats {
		best := -1
		for i, p := range parties {
			if best < 0 || websterBefore(p, out[p.name], parties[best], out[parties[best].name], descTies) {
				best = i
			}
		}
		out[parties[best].name]++
	}
	return out
}

// websterFloor is, for each party with votes v, floor(v*(2S-n)/(2T)) seats
// of S (seats) among n parties with T votes in all: no more than webster
// gives it. Let λ be the quotient of the last seat handed out. A party with
// s seats lost its next one: v/(s+1/2) <= λ. Every seat a party got came
// before the last: v/(s-1/2) >= λ, so summing, S - n/2 <= T/λ. Hence
// s >= v/λ - 1/2 >= v(2S-n)/(2T) - 1/2, and s, a whole number, is at least
// the floor. The floors leave at most 3n/2 seats. Computed exactly, without
// overflow, whatever the votes.
func websterFloor(parties []party, seats int32) map[string]int32 {
	n := int64(len(parties))
	if 2*int64(seats) <= n {
		return nil
	}
	total := new(big.Int)
	for _, p := range parties {
		total.Add(total, big.NewInt(max(p.votes, 0)))
	}
	if total.Sign() == 0 {
		return nil
	}
	den := new(big.Int).Lsh(total, 1)
	factor := big.NewInt(2*int64(seats) - n)
	out := make(map[string]int32, len(parties))
	q := new(big.Int)
	for _, p := range parties {
		q.Mul(big.NewInt(max(p.votes, 0)), factor)
		q.Quo(q, den)
		if q.Sign() > 0 {
			// q <= v*S/T <= S: an int32.
			out[p.name] += int32(q.Int64())
		}
	}
	return out
}

// websterBefore says whether party a (with sa seats) gets the next seat
// before party b (with sb seats). a.votes/(2sa+1) > b.votes/(2sb+1) is
// compared as a.votes*(2sb+1) > b.votes*(2sa+1) in 128 bits.
func websterBefore(a party, sa int32, b party, sb int32, descTies bool) bool {
	ahi, alo := bits.Mul64(uint64(max(a.votes, 0)), uint64(2*int64(sb)+1))
	bhi, blo := bits.Mul64(uint64(max(b.votes, 0)), uint64(2*int64(sa)+1))
	if ahi != bhi {
		return ahi > bhi
	}
	if alo != blo {
		return alo > blo
	}
	if sa != sb {
		return sa < sb
	}
	if descTies {
		return a.name > b.name
	}
	return a.name < b.name
}
