package simulate

import (
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
)

// Totals sum up the fleet.
type Totals struct {
	// Bindings counts the bindings the scenario touches, and each result.
	Bindings   int `json:"bindings"`
	Evicted    int `json:"evicted"`
	Stays      int `json:"stays"`
	Tolerated  int `json:"tolerated"`
	Held       int `json:"held"`
	NotEvicted int `json:"notEvicted"`
	// Clusters are the clusters that receive replicas.
	Clusters []ClusterLoad `json:"clusters,omitempty"`
	// Guard is the storm guard's verdict per cluster group with evictions.
	Guard []GroupVerdict `json:"stormGuard,omitempty"`
	// AllEvicted is when the last eviction is written; AllHealthy when the
	// last new copy is expected Healthy.
	AllEvicted *Seconds `json:"allEvicted,omitempty"`
	AllHealthy *Seconds `json:"allHealthy,omitempty"`
	// Warnings are what an operator should look at.
	Warnings []string `json:"warnings,omitempty"`
}

// ClusterLoad is what a cluster receives.
type ClusterLoad struct {
	Cluster string `json:"cluster"`
	// Replicas added, and their CPU and memory requests.
	Replicas int64             `json:"replicas"`
	CPU      resource.Quantity `json:"cpu"`
	Memory   resource.Quantity `json:"memory"`
	// FreeCPU and FreeMemory are allocatable − allocated − allocating from
	// the cluster's resourceSummary; nil when it reports none.
	FreeCPU    *resource.Quantity `json:"freeCPU,omitempty"`
	FreeMemory *resource.Quantity `json:"freeMemory,omitempty"`
	// FreePods is the room for pods, counted against Replicas (one pod a
	// replica); nil when the summary reports no pods.
	FreePods *resource.Quantity `json:"freePods,omitempty"`
	// Fits is false when the requests exceed what is free.
	Fits bool `json:"fits"`
}

// GroupVerdict is the storm guard's verdict on one cluster group.
type GroupVerdict struct {
	// Group is the region; "" for clusters without one.
	Group string `json:"group"`
	State string `json:"state"`
	// Rate is evictions per second; 0 when the guard halts.
	Rate float64 `json:"rate"`
	// Evictions from the group's hit clusters, and the time from the first
	// to the last one.
	Evictions int     `json:"evictions"`
	Span      Seconds `json:"span"`
	// Halts says why nothing is evicted, when nothing is.
	Halts string `json:"halts,omitempty"`
}

func (s *sim) totals(outcomes []Outcome) Totals {
	t := Totals{Bindings: len(outcomes)}
	added := map[string]*ClusterLoad{}
	var lastEvicted, lastHealthy *Seconds
	for i := range outcomes {
		o := &outcomes[i]
		switch o.Result {
		case ResultEvicted:
			t.Evicted++
		case ResultStays:
			t.Stays++
			t.Warnings = append(t.Warnings, fmt.Sprintf("%s %s stays on its failed cluster: %s", o.Kind, o.Key(), o.Reason))
		case ResultTolerated:
			t.Tolerated++
		case ResultHeld:
			t.Held++
		case ResultNotEvicted:
			t.NotEvicted++
		}
		for _, e := range o.Evictions {
			if e.At != nil {
				lastEvicted = later(lastEvicted, e.At)
			}
			for _, p := range e.StateProblems {
				t.Warnings = append(t.Warnings, fmt.Sprintf("%s %s, evicted from %s, would carry no state for %s", o.Kind, o.Key(), e.Cluster, p))
			}
		}
		if o.HealthyAt != nil {
			lastHealthy = later(lastHealthy, o.HealthyAt)
		}
		if o.Result != ResultEvicted {
			continue
		}
		before := map[string]int32{}
		for _, c := range o.Before {
			before[c.Name] = c.Replicas
		}
		for _, c := range o.After {
			n := int64(c.Replicas) - int64(before[c.Name])
			if n <= 0 && before[c.Name] != 0 {
				continue
			}
			l := added[c.Name]
			if l == nil {
				l = &ClusterLoad{Cluster: c.Name}
				added[c.Name] = l
			}
			if n <= 0 {
				continue
			}
			l.Replicas += n
			if req := o.binding.Spec.ReplicaRequirements; req != nil {
				addTimes(&l.CPU, req.ResourceRequest, corev1.ResourceCPU, n)
				addTimes(&l.Memory, req.ResourceRequest, corev1.ResourceMemory, n)
			}
		}
	}
	// The last eviction of a paced group comes at its last token, whichever
	// binding gets it.
	for _, g := range s.paced {
		lastEvicted = later(lastEvicted, &Seconds{Min: seconds(s.snap.Now, g.earlyLast), Max: seconds(s.snap.Now, g.lateLast)})
	}
	t.AllEvicted, t.AllHealthy = lastEvicted, lastHealthy
	if lastHealthy != nil && lastEvicted != nil {
		startup := s.sc.StartupTime.Seconds()
		t.AllHealthy = later(lastHealthy, &Seconds{Min: lastEvicted.Min + startup, Max: lastEvicted.Max + startup})
	}
	for name, l := range added {
		l.Fits = true
		if c := s.byName[name]; c != nil && c.Status.ResourceSummary != nil {
			l.FreeCPU = freeOf(c.Status.ResourceSummary, corev1.ResourceCPU)
			l.FreeMemory = freeOf(c.Status.ResourceSummary, corev1.ResourceMemory)
			if l.FreeCPU != nil && l.CPU.Cmp(*l.FreeCPU) > 0 {
				l.Fits = false
				t.Warnings = append(t.Warnings, fmt.Sprintf("%s: the new copies request %s CPU, %s is free", name, l.CPU.String(), l.FreeCPU.String()))
			}
			l.FreePods = freeOf(c.Status.ResourceSummary, corev1.ResourcePods)
			if l.FreePods != nil && l.FreePods.CmpInt64(l.Replicas) < 0 {
				l.Fits = false
				t.Warnings = append(t.Warnings, fmt.Sprintf("%s: the new copies need %d pods, room for %s is left", name, l.Replicas, l.FreePods.String()))
			}
			if l.FreeMemory != nil && l.Memory.Cmp(*l.FreeMemory) > 0 {
				l.Fits = false
				t.Warnings = append(t.Warnings, fmt.Sprintf("%s: the new copies request %s memory, %s is free", name, l.Memory.String(), l.FreeMemory.String()))
			}
		}
		t.Clusters = append(t.Clusters, *l)
	}
	sort.Slice(t.Clusters, func(i, j int) bool { return t.Clusters[i].Cluster < t.Clusters[j].Cluster })
	t.Guard = s.guardVerdicts(outcomes)
	for _, g := range t.Guard {
		if g.Halts != "" {
			t.Warnings = append(t.Warnings, fmt.Sprintf("the storm guard halts evictions from %s: %s", groupLabel(g.Group), g.Halts))
		}
	}
	return t
}

// guardVerdicts is the storm guard's verdict for each group of a hit
// cluster.
func (s *sim) guardVerdicts(outcomes []Outcome) []GroupVerdict {
	if len(s.hit) == 0 {
		return nil
	}
	status := failover.ComputeStormGuard(s.early, s.snap.Settings.StormGuardConfig())
	verdicts := map[string]*GroupVerdict{}
	groupOf := map[string]string{}
	for name := range s.hit {
		c := s.byName[name]
		groupOf[name] = c.Spec.Region
		if _, ok := verdicts[c.Spec.Region]; ok {
			continue
		}
		gs, _ := status.Group(c.Spec.Region)
		v := &GroupVerdict{Group: gs.Name, State: gs.State.String(), Rate: gs.Rate}
		if gs.Rate <= 0 {
			h := failover.StormGuardHold(s.early, name, s.snap.Settings.StormGuardConfig(), s.snap.Now)
			v.Halts = h.Reason
		}
		verdicts[c.Spec.Region] = v
	}
	for i := range outcomes {
		for _, e := range outcomes[i].Evictions {
			if e.At != nil {
				verdicts[groupOf[e.Cluster]].Evictions++
			}
		}
	}
	out := make([]GroupVerdict, 0, len(verdicts))
	for g, v := range verdicts {
		if p := s.paced[g]; p != nil {
			v.Span = Seconds{Min: round(p.earlyLast.Sub(p.earlyFirst).Seconds()), Max: round(p.lateLast.Sub(p.lateFirst).Seconds())}
		}
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

func groupLabel(g string) string {
	if g == "" {
		return "the clusters without a region"
	}
	return "region " + g
}

func later(a, b *Seconds) *Seconds {
	if a == nil {
		c := *b
		return &c
	}
	return &Seconds{Min: max(a.Min, b.Min), Max: max(a.Max, b.Max)}
}

func round(f float64) float64 {
	return float64(int64(f*10+0.5)) / 10
}

// addTimes adds n times list[name] to q (CPU in millicores, the rest in
// units), saturating far below what an int64 holds.
func addTimes(q *resource.Quantity, list corev1.ResourceList, name corev1.ResourceName, n int64) {
	per, ok := list[name]
	if !ok {
		return
	}
	if name == corev1.ResourceCPU {
		milli := min(per.AsApproximateFloat64()*1000*float64(n)+float64(q.MilliValue()), float64(math.MaxInt64/2))
		*q = *resource.NewMilliQuantity(int64(milli), per.Format)
		return
	}
	units := min(per.AsApproximateFloat64()*float64(n)+float64(q.Value()), float64(math.MaxInt64/2))
	*q = *resource.NewQuantity(int64(units), per.Format)
}

// freeOf is allocatable − allocated − allocating of one resource, nil when
// the summary has no allocatable amount of it.
func freeOf(s *clusterv1alpha1.ResourceSummary, name corev1.ResourceName) *resource.Quantity {
	a, ok := s.Allocatable[name]
	if !ok {
		return nil
	}
	f := a.DeepCopy()
	if v, ok := s.Allocated[name]; ok {
		f.Sub(v)
	}
	if v, ok := s.Allocating[name]; ok {
		f.Sub(v)
	}
	return &f
}
