package failover

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/queue"
)

// The storm guard keeps cluster failover from turning one bad minute into
// a mass eviction. It is Kubernetes' node-lifecycle zone logic with
// clusters for nodes and regions for zones:
//
//   - Clusters are grouped by spec.region; clusters without a region form
//     one group.
//   - Each group has a state (computeGroupState) and an eviction rate
//     (groupRate): Normal evicts at --resource-eviction-rate; a
//     PartialDisruption (at least 3 and at least --unhealthy-cluster-threshold
//     of the group not Ready) slows to --secondary-resource-eviction-rate,
//     or stops in a group of --large-cluster-num-threshold clusters or
//     fewer; a FullDisruption (no cluster of the group Ready) evicts at the
//     normal rate, because a whole region that is down is really down and
//     its workloads must move.
//   - When no cluster at all is Ready, the control plane assumes that it is
//     the one cut off from the members, and evicts nothing.
//   - When several groups are disrupted at once, the whole control plane
//     is judged as one more group whose rate caps every group's: a fleet of
//     one cluster per region with all but one region down is in
//     PartialDisruption as a whole, so its regions' full disruptions do not
//     evict at the normal rate. One region down among healthy ones still
//     moves at the normal rate, however large. (Kubernetes judges zones
//     only; its zones are rarely a single node.)
//   - A cluster that is still Ready but failing its probes counts as not
//     Ready, and evictions from a failing cluster wait for the settling
//     window (settling.go), so that clusters failing together are seen
//     together.
//
// Only the taint manager's evictions go through the guard. Application
// failover is decided per application from health the members reported:
// a partitioned control plane sees no new Unhealthy reports, though a copy
// last reported Unhealthy before the partition is still failed over when
// its toleration ends (its old copy kept until a replacement is placed).
// It is not rate limited.

// GroupState is the storm guard's state of a cluster group; the values are
// those of the lifeboat_storm_guard_state gauge.
type GroupState int

// Group states, as Kubernetes' zone states.
const (
	// GroupNormal: evictions at the normal rate.
	GroupNormal GroupState = 0
	// GroupPartialDisruption: many clusters of the group are not Ready;
	// evictions slow down, or stop in a small group.
	GroupPartialDisruption GroupState = 1
	// GroupFullDisruption: no cluster of the group is Ready.
	GroupFullDisruption GroupState = 2
)

func (s GroupState) String() string {
	switch s {
	case GroupNormal:
		return "Normal"
	case GroupPartialDisruption:
		return "PartialDisruption"
	case GroupFullDisruption:
		return "FullDisruption"
	}
	return fmt.Sprintf("GroupState(%d)", int(s))
}

// minNotReadyForPartialDisruption is Kubernetes' floor: a group is only
// partially disrupted when more than two of its clusters are not Ready, so
// that one or two failures in a small fleet still fail over.
const minNotReadyForPartialDisruption = 3

// stormGuardHoldRecheck is how often an eviction the guard holds is asked
// again (the guard's state changes with cluster health, which does not
// enqueue the held bindings).
const stormGuardHoldRecheck = 10 * time.Second

// StormGuardConfig are the guard's thresholds and rates.
type StormGuardConfig struct {
	// Rate is the evictions per second of a group in state Normal or
	// FullDisruption (--resource-eviction-rate). 0 evicts nothing.
	Rate float64
	// SecondaryRate is the evictions per second of a large group in state
	// PartialDisruption (--secondary-resource-eviction-rate).
	SecondaryRate float64
	// UnhealthyThreshold is the share of not-Ready clusters at which a group
	// is partially disrupted (--unhealthy-cluster-threshold).
	UnhealthyThreshold float64
	// LargeGroupThreshold: a partially disrupted group with at most this
	// many clusters stops evicting (--large-cluster-num-threshold).
	LargeGroupThreshold int
	// Settling are the settling windows: evictions from a failing cluster
	// wait its window after it started failing (see SettlingWindows); the
	// zero value waits for nothing.
	Settling SettlingWindows
}

// computeGroupState is Kubernetes' ComputeZoneState for a group with ready
// and notReady clusters:
//
//  1. no cluster Ready (and at least one not) -> FullDisruption;
//  2. at least minNotReadyForPartialDisruption not Ready, and that is at
//     least threshold of the group -> PartialDisruption;
//  3. otherwise Normal.
func computeGroupState(ready, notReady int, threshold float64) GroupState {
	switch {
	case ready == 0 && notReady > 0:
		return GroupFullDisruption
	case notReady >= minNotReadyForPartialDisruption && float64(notReady)/float64(ready+notReady) >= threshold:
		return GroupPartialDisruption
	default:
		return GroupNormal
	}
}

// groupRate is the evictions per second of a group of size clusters in
// state; allDown means no cluster of the whole control plane is Ready.
func groupRate(state GroupState, size int, allDown bool, cfg StormGuardConfig) float64 {
	switch {
	case allDown:
		return 0
	case state == GroupPartialDisruption && size <= cfg.LargeGroupThreshold:
		return 0
	case state == GroupPartialDisruption:
		return cfg.SecondaryRate
	default: // Normal, and FullDisruption of one group among healthy ones.
		return cfg.Rate
	}
}

// GroupStatus is the guard's view of one cluster group.
type GroupStatus struct {
	// Name is the group's region; "" for clusters without a region.
	Name string
	// Clusters lists the group's clusters, sorted.
	Clusters []string
	// NotReady counts the clusters whose Ready condition is not True, and
	// the suspects.
	NotReady int
	// Suspect counts the clusters still Ready whose probes fail.
	Suspect int
	// State is the group's state.
	State GroupState
	// Rate is the group's eviction rate per second; 0 means evictions are
	// held.
	Rate float64
	// FleetCapped: Rate is the whole control plane's (StormGuardStatus.Fleet),
	// lower than the group's own.
	FleetCapped bool
}

// StormGuardStatus is the guard's view of every cluster.
type StormGuardStatus struct {
	// Groups are sorted by name.
	Groups []GroupStatus
	// AllClustersDown: there are clusters and none is Ready. Nothing is
	// evicted.
	AllClustersDown bool
	// Fleet is the state of every cluster taken as one group; NotReady and
	// Total count them.
	Fleet           GroupState
	NotReady, Total int
}

// Group returns the status of the named group.
func (s StormGuardStatus) Group(name string) (GroupStatus, bool) {
	for _, g := range s.Groups {
		if g.Name == name {
			return g, true
		}
	}
	return GroupStatus{}, false
}

// clusterHealth is what the guard reads of a Cluster.
type clusterHealth struct {
	name  string
	group string
	// pull: a Pull cluster (spec.syncMode), seen failing through its
	// Lease rather than probes.
	pull bool
	// observed: the cluster has a Ready condition.
	observed bool
	ready    bool
	// suspect: Ready, but its probes fail (ProbeSucceeded False); the
	// guard counts it as not Ready.
	suspect bool
	// since is when a not-Ready or suspect cluster started failing: when
	// its probes started failing (for a Pull cluster whose agent went
	// silent, its last heartbeat: the lease monitor dates its
	// ProbeSucceeded=Unknown so), or without a failing ProbeSucceeded
	// condition, when Ready left True. It never moves while Ready stays
	// not True, whatever the probes do meanwhile.
	since time.Time
	// answering is when the probes of a not-Ready cluster started passing
	// again (it is coming back); zero otherwise.
	answering time.Time
	// readySince is when a Ready cluster (not a suspect) turned Ready.
	readySince time.Time
}

// observeCluster reads c for the guard: its group is spec.region, its
// kind spec.syncMode, and it is ready when its Ready condition is True
// (False and Unknown are not Ready). A cluster without a Ready condition
// has not been probed yet (it was just registered): it counts neither as
// Ready nor as not Ready, so that a fresh control plane is not mistaken
// for a partitioned one. No ClusterTaintPolicy condition matches a missing
// condition either. A Ready cluster whose ProbeSucceeded condition is not
// True is a suspect.
func observeCluster(c *clusterv1alpha1.Cluster) clusterHealth {
	cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	probe := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionProbeSucceeded)
	probeFailing := probe != nil && probe.Status != metav1.ConditionTrue
	h := clusterHealth{
		name:     c.Name,
		group:    c.Spec.Region,
		pull:     c.Spec.SyncMode == clusterv1alpha1.Pull,
		observed: cond != nil,
		ready:    cond != nil && cond.Status == metav1.ConditionTrue,
	}
	h.suspect = h.ready && probeFailing
	switch {
	case !h.observed:
	case h.ready && !h.suspect:
		h.readySince = cond.LastTransitionTime.Time
	case h.suspect:
		h.since = probe.LastTransitionTime.Time
	default:
		h.since = cond.LastTransitionTime.Time
		if probeFailing && probe.LastTransitionTime.Before(&cond.LastTransitionTime) {
			h.since = probe.LastTransitionTime.Time
		}
		if probe != nil && !probeFailing {
			h.answering = probe.LastTransitionTime.Time
		}
	}
	return h
}

// computeStormGuard computes every group's state and rate.
func computeStormGuard(clusters []clusterHealth, cfg StormGuardConfig) StormGuardStatus {
	byGroup := map[string]*GroupStatus{}
	ready := map[string]int{}
	readyTotal, notReadyTotal := 0, 0
	for _, c := range clusters {
		g := byGroup[c.group]
		if g == nil {
			g = &GroupStatus{Name: c.group}
			byGroup[c.group] = g
		}
		g.Clusters = append(g.Clusters, c.name)
		switch {
		case c.ready && !c.suspect:
			ready[c.group]++
			readyTotal++
		case c.observed:
			g.NotReady++
			notReadyTotal++
			if c.suspect {
				g.Suspect++
			}
		}
	}
	out := StormGuardStatus{
		AllClustersDown: notReadyTotal > 0 && readyTotal == 0,
		Fleet:           computeGroupState(readyTotal, notReadyTotal, cfg.UnhealthyThreshold),
		NotReady:        notReadyTotal,
		Total:           len(clusters),
	}
	disrupted := 0
	for _, g := range byGroup {
		sort.Strings(g.Clusters)
		g.State = computeGroupState(ready[g.Name], g.NotReady, cfg.UnhealthyThreshold)
		g.Rate = groupRate(g.State, len(g.Clusters), out.AllClustersDown, cfg)
		if g.State != GroupNormal {
			disrupted++
		}
	}
	// One disrupted group is an outage of its region, as Kubernetes takes a
	// zone's; several at once that make most of the fleet look down are
	// what the guard exists for.
	fleetRate := groupRate(out.Fleet, len(clusters), out.AllClustersDown, cfg)
	for _, g := range byGroup {
		if disrupted > 1 && out.Fleet == GroupPartialDisruption && fleetRate < g.Rate {
			g.Rate, g.FleetCapped = fleetRate, true
		}
		out.Groups = append(out.Groups, *g)
	}
	sort.Slice(out.Groups, func(i, j int) bool { return out.Groups[i].Name < out.Groups[j].Name })
	return out
}

// tokenBucket is a token bucket on an injected clock whose tokens may be
// taken ahead of time (reserved): the bucket goes into debt and the caller
// is told how long to wait for its token.
type tokenBucket struct {
	rate   float64 // tokens per second, > 0
	burst  float64
	tokens float64
	last   time.Time
}

// newTokenBucket returns a full bucket; its burst is one second of tokens
// (at least one).
func newTokenBucket(rate float64, now time.Time) *tokenBucket {
	burst := math.Max(1, math.Floor(rate))
	return &tokenBucket{rate: rate, burst: burst, tokens: burst, last: now}
}

func (b *tokenBucket) advance(now time.Time) {
	if now.After(b.last) {
		b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
}

// reserve takes one token and returns how long until it is earned (0: at
// once).
func (b *tokenBucket) reserve(now time.Time) time.Duration {
	b.advance(now)
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(math.Ceil(-b.tokens / b.rate * float64(time.Second)))
}

// reservation is a token taken ahead of time by one eviction.
type reservation struct {
	group string
	at    time.Time
}

// reservationTTL: a reservation not claimed this long after its time is
// dropped (the eviction was no longer needed).
const reservationTTL = time.Minute

// Admission is the guard's answer to one eviction.
type Admission struct {
	// Allowed: evict now.
	Allowed bool
	// RetryAfter is when to ask again when not allowed.
	RetryAfter time.Duration
	// Group and State are the cluster's group and its state.
	Group string
	State GroupState
	// Reason says, for logs, why the eviction waits.
	Reason string
}

// StormGuard rate-limits the taint manager's evictions per cluster group
// and holds them when the control plane looks partitioned. It reports its
// state in the lifeboat_storm_guard_state and
// lifeboat_storm_guard_eviction_rate gauges and in Events on the Clusters
// of a group whose state changed. Build it with NewStormGuard; it is safe
// for concurrent use.
//
// The group states are recomputed from the Clusters at every decision; only
// the token buckets, the reservations and the last reported states are in
// memory (after a restart a group starts with a full bucket, and a
// disrupted group is reported again).
type StormGuard struct {
	reader   client.Reader
	recorder record.EventRecorder
	clock    clock.PassiveClock
	cfg      StormGuardConfig
	metrics  *stormGuardMetrics

	mu           sync.Mutex
	reported     map[string]reportedState
	buckets      map[string]*tokenBucket
	reservations map[string]reservation
	lastSweep    time.Time
	// returns remembers the clusters of the last time every cluster was
	// down, and when the last of them came back (settling.go).
	returns returnTracker
	// settling remembers, per cluster, the end of the settling window
	// last announced in an Event.
	settling map[string]time.Time
}

// reportedState is what was last reported for a group.
type reportedState struct {
	state       GroupState
	allDown     bool
	rate        float64
	fleetCapped bool
}

// NewStormGuard returns a guard that reads Clusters through reader (the
// manager's cached client), records Events with recorder (may be nil) and
// registers its gauges on reg (in the controller manager:
// sigs.k8s.io/controller-runtime/pkg/metrics.Registry; nil registers
// none).
func NewStormGuard(reader client.Reader, recorder record.EventRecorder, clk clock.PassiveClock, cfg StormGuardConfig, reg prometheus.Registerer) (*StormGuard, error) {
	g := &StormGuard{
		reader:       reader,
		recorder:     recorder,
		clock:        clk,
		cfg:          cfg,
		reported:     map[string]reportedState{},
		buckets:      map[string]*tokenBucket{},
		reservations: map[string]reservation{},
		settling:     map[string]time.Time{},
	}
	if reg != nil {
		m, err := newStormGuardMetrics(reg)
		if err != nil {
			return nil, err
		}
		g.metrics = m
	}
	return g, nil
}

// Admit decides whether the eviction identified by key (unique per binding
// and cluster) may evict from cluster now. A held eviction must ask again
// after RetryAfter with the same key: its token is reserved meanwhile.
func (g *StormGuard) Admit(ctx context.Context, key, cluster string) (Admission, error) {
	clusters, err := listClusters(ctx, g.reader)
	if err != nil {
		return Admission{}, err
	}
	observed := observeAll(clusters)
	status := computeStormGuard(observed, g.cfg)
	gs, target := groupOf(status, clusters, cluster)
	group := gs.Name
	now := g.clock.Now()
	kinds := kindsOf(observed)

	g.mu.Lock()
	defer g.mu.Unlock()
	g.record(status, clusters, now)

	a := Admission{Group: group, State: gs.State}
	if h := evictionHold(status, gs, target, g.returns.ended, now, g.cfg, g.cfg.Settling.of(target.pull, kinds)); h.held {
		delete(g.reservations, key)
		a.RetryAfter, a.Reason = h.retryAfter, h.reason
		if !h.settlingUntil.IsZero() {
			g.announceSettling(clusters, target, kinds, h.settlingUntil)
		}
		return a, nil
	}
	if r, ok := g.reservations[key]; ok {
		if r.group == group && now.Before(r.at) {
			a.RetryAfter = r.at.Sub(now)
			a.Reason = "waiting for the eviction rate limit"
			return a, nil
		}
		delete(g.reservations, key)
		if r.group == group {
			a.Allowed = true
			return a, nil
		}
	}
	wait := g.buckets[group].reserve(now)
	if wait == 0 {
		a.Allowed = true
		return a, nil
	}
	g.reservations[key] = reservation{group: group, at: now.Add(wait)}
	a.RetryAfter = wait
	a.Reason = "waiting for the eviction rate limit"
	return a, nil
}

// groupOf returns the status of cluster's group and the guard's view of
// cluster (the zero view when it does not exist).
func groupOf(status StormGuardStatus, clusters []clusterv1alpha1.Cluster, cluster string) (GroupStatus, clusterHealth) {
	for i := range clusters {
		if clusters[i].Name == cluster {
			gs, _ := status.Group(clusters[i].Spec.Region)
			return gs, observeCluster(&clusters[i])
		}
	}
	gs, _ := status.Group("")
	return gs, clusterHealth{}
}

// ComputeStormGuard is the guard's view of the given Clusters: every
// group's state and rate.
func ComputeStormGuard(clusters []clusterv1alpha1.Cluster, cfg StormGuardConfig) StormGuardStatus {
	return computeStormGuard(observeAll(clusters), cfg)
}

// GuardHold is the storm guard's decision on the evictions from one
// cluster, before pacing.
type GuardHold struct {
	// Group is the cluster's group and its status.
	Group GroupStatus
	// Halted: the group's rate is 0, nothing is evicted while the Clusters
	// stay as they are.
	Halted bool
	// Until is the end of the settling window when that holds the
	// evictions; zero when nothing does.
	Until time.Time
	// Reason says why evictions wait; empty when they do not.
	Reason string
}

// StormGuardHold is what the guard decides at now on an eviction from
// cluster, given the Clusters, without the memory of a running guard: no
// token bucket (see PaceEvictions) and no record of an earlier moment when
// every cluster was down.
func StormGuardHold(clusters []clusterv1alpha1.Cluster, cluster string, cfg StormGuardConfig, now time.Time) GuardHold {
	observed := observeAll(clusters)
	status := computeStormGuard(observed, cfg)
	gs, target := groupOf(status, clusters, cluster)
	h := evictionHold(status, gs, target, time.Time{}, now, cfg, cfg.Settling.of(target.pull, kindsOf(observed)))
	return GuardHold{Group: gs, Halted: h.held && h.settlingUntil.IsZero(), Until: h.settlingUntil, Reason: h.reason}
}

// PaceEvictions returns when each eviction of one group gets its token
// from the guard's token bucket of rate (> 0), full at the first one's
// time; due are the times the evictions are asked for, in order.
func PaceEvictions(rate float64, due []time.Time) []time.Time {
	out := make([]time.Time, len(due))
	if len(due) == 0 {
		return out
	}
	b := newTokenBucket(rate, due[0])
	for i, t := range due {
		out[i] = t.Add(b.reserve(t))
	}
	return out
}

// Refresh recomputes the groups and reports changes (gauges, Events).
func (g *StormGuard) Refresh(ctx context.Context) (StormGuardStatus, error) {
	clusters, err := listClusters(ctx, g.reader)
	if err != nil {
		return StormGuardStatus{}, err
	}
	status := computeStormGuard(observeAll(clusters), g.cfg)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.record(status, clusters, g.clock.Now())
	return status, nil
}

// record brings buckets, gauges and reported states in step with status;
// g.mu is held. A group whose rate changed gets a fresh bucket at the new
// rate and loses its reservations (they were paced at the old rate).
func (g *StormGuard) record(status StormGuardStatus, clusters []clusterv1alpha1.Cluster, now time.Time) {
	g.returns.observe(observeAll(clusters), status.AllClustersDown, now)
	seen := map[string]bool{}
	for _, gs := range status.Groups {
		seen[gs.Name] = true
		prev, known := g.reported[gs.Name]
		if !known {
			prev = reportedState{state: GroupNormal, rate: g.cfg.Rate}
		}
		cur := reportedState{state: gs.State, allDown: status.AllClustersDown, rate: gs.Rate, fleetCapped: gs.FleetCapped}
		if b := g.buckets[gs.Name]; b == nil || b.rate != gs.Rate {
			g.resetBucket(gs.Name, gs.Rate, now)
		}
		g.metrics.set(gs)
		if cur != prev {
			g.announce(gs, status, clusters)
		}
		g.reported[gs.Name] = cur
	}
	for name, until := range g.settling {
		if !now.Before(until) {
			delete(g.settling, name)
		}
	}
	for name := range g.reported {
		if !seen[name] {
			delete(g.reported, name)
			delete(g.buckets, name)
			g.dropReservations(name)
			g.metrics.forget(name)
		}
	}
	if now.Sub(g.lastSweep) >= reservationTTL {
		for key, r := range g.reservations {
			if now.Sub(r.at) > reservationTTL {
				delete(g.reservations, key)
			}
		}
		g.lastSweep = now
	}
}

func (g *StormGuard) resetBucket(group string, rate float64, now time.Time) {
	g.dropReservations(group)
	if rate <= 0 {
		delete(g.buckets, group)
		return
	}
	b := newTokenBucket(rate, now)
	if old := g.buckets[group]; old != nil {
		old.advance(now)
		b.tokens = math.Max(0, math.Min(old.tokens, b.burst))
	}
	g.buckets[group] = b
}

func (g *StormGuard) dropReservations(group string) {
	for key, r := range g.reservations {
		if r.group == group {
			delete(g.reservations, key)
		}
	}
}

// Event reasons of the storm guard, on every Cluster of a group whose
// state changed.
const (
	// EventReasonStormGuardNormal (Normal): the group evicts at the normal
	// rate again.
	EventReasonStormGuardNormal = "StormGuardNormal"
	// EventReasonStormGuardPartialDisruption (Warning): many clusters of
	// the group are not Ready; evictions slow down or stop.
	EventReasonStormGuardPartialDisruption = "StormGuardPartialDisruption"
	// EventReasonStormGuardFullDisruption (Warning): no cluster of the
	// group is Ready; it is presumed down and its workloads move.
	EventReasonStormGuardFullDisruption = "StormGuardFullDisruption"
	// EventReasonStormGuardAllClustersDown (Warning): no cluster at all is
	// Ready; nothing is evicted.
	EventReasonStormGuardAllClustersDown = "StormGuardAllClustersDown"
	// EventReasonStormGuardSettling (Normal): evictions from a failing
	// cluster wait for the settling window, on that cluster.
	EventReasonStormGuardSettling = "StormGuardSettling"
)

// announceSettling records, once per window, an Event on the cluster
// target whose evictions wait for the settling window until until; kinds
// are the kinds of cluster seen; g.mu is held.
func (g *StormGuard) announceSettling(clusters []clusterv1alpha1.Cluster, target clusterHealth, kinds clusterKinds, until time.Time) {
	name := target.name
	if g.recorder == nil || g.settling[name].Equal(until) {
		return
	}
	g.settling[name] = until
	for i := range clusters {
		if clusters[i].Name == name {
			g.recorder.Event(&clusters[i], "Normal", EventReasonStormGuardSettling, fmt.Sprintf(
				"Storm guard: evictions from %s wait until %s, the end of the settling window (%s: %s), so that clusters failing at the same time are seen together.",
				name, until.UTC().Format(time.RFC3339), g.cfg.Settling.of(target.pull, kinds), g.cfg.Settling.explain(target.pull, kinds)))
			return
		}
	}
}

// announce records an Event on each Cluster of the group.
func (g *StormGuard) announce(gs GroupStatus, status StormGuardStatus, clusters []clusterv1alpha1.Cluster) {
	if g.recorder == nil {
		return
	}
	eventType, reason, msg := describeGroupChange(gs, status, g.cfg)
	members := map[string]bool{}
	for _, name := range gs.Clusters {
		members[name] = true
	}
	for i := range clusters {
		if members[clusters[i].Name] {
			g.recorder.Event(&clusters[i], eventType, reason, msg)
		}
	}
}

// describeGroupChange is the Event of a group entering its state in
// status.
func describeGroupChange(gs GroupStatus, status StormGuardStatus, cfg StormGuardConfig) (string, string, string) {
	counts := countOf(gs.NotReady, len(gs.Clusters))
	prefix := "Storm guard, " + groupName(gs.Name)
	switch {
	case status.AllClustersDown:
		return "Warning", EventReasonStormGuardAllClustersDown,
			fmt.Sprintf("Storm guard: no cluster is Ready (%d clusters): the control plane assumes that it is the one cut off and evicts nothing from tainted clusters until a cluster is Ready again. Application failover is not affected.", status.Total)
	case gs.FleetCapped:
		return "Warning", EventReasonStormGuardPartialDisruption,
			fmt.Sprintf("%s: %s, %s not Ready; but %s not Ready in the whole control plane (threshold %.0f%%): %s.", prefix, gs.State, counts, countOf(status.NotReady, status.Total), cfg.UnhealthyThreshold*100, fleetCapReason(gs, cfg))
	case gs.State == GroupFullDisruption:
		return "Warning", EventReasonStormGuardFullDisruption,
			fmt.Sprintf("%s: FullDisruption, no cluster of the group is Ready while other groups are; the group is presumed down and its workloads move at up to %s/s.", prefix, formatRate(gs.Rate))
	case gs.State == GroupPartialDisruption && gs.Rate == 0:
		return "Warning", EventReasonStormGuardPartialDisruption,
			fmt.Sprintf("%s: PartialDisruption, %s not Ready (threshold %.0f%%); the group has %d clusters or fewer, so evictions stop until more clusters are Ready.", prefix, counts, cfg.UnhealthyThreshold*100, cfg.LargeGroupThreshold)
	case gs.State == GroupPartialDisruption:
		return "Warning", EventReasonStormGuardPartialDisruption,
			fmt.Sprintf("%s: PartialDisruption, %s not Ready (threshold %.0f%%); evictions slow down to %s/s.", prefix, counts, cfg.UnhealthyThreshold*100, formatRate(gs.Rate))
	default:
		return "Normal", EventReasonStormGuardNormal,
			fmt.Sprintf("%s: Normal, %s not Ready; evicting at up to %s/s.", prefix, counts, formatRate(gs.Rate))
	}
}

// fleetCapReason says what the whole control plane's PartialDisruption
// does to a group's evictions.
func fleetCapReason(gs GroupStatus, cfg StormGuardConfig) string {
	if gs.Rate == 0 {
		return fmt.Sprintf("with %d clusters or fewer, evictions stop everywhere until more clusters are Ready", cfg.LargeGroupThreshold)
	}
	return fmt.Sprintf("evictions slow down to %s/s", formatRate(gs.Rate))
}

func countOf(notReady, size int) string {
	return fmt.Sprintf("%d of %d clusters", notReady, size)
}

// suspects says how many of the not-Ready clusters are still Ready but
// failing their probes ("" for none).
func suspects(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return " (1 of them still Ready but failing its probes)"
	}
	return fmt.Sprintf(" (%d of them still Ready but failing their probes)", n)
}

// groupName names a group for users.
func groupName(group string) string {
	if group == "" {
		return "clusters without a region"
	}
	return "region " + group
}

func formatRate(r float64) string {
	return fmt.Sprintf("%g", r)
}

// SetupWithManager registers a controller that refreshes the guard (gauges
// and Events) whenever a Cluster is added or removed or its Ready status
// or region changes, so the guard's state is visible even while nothing is
// being evicted. It writes nothing but Events.
func (g *StormGuard) SetupWithManager(mgr ctrl.Manager) error {
	only := reconcile.Request{NamespacedName: types.NamespacedName{Name: "storm-guard"}}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("storm-guard").
		Watches(&clusterv1alpha1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
				return []reconcile.Request{only}
			}),
			builder.WithPredicates(predicate.Funcs{
				UpdateFunc: func(e event.UpdateEvent) bool {
					o, ok1 := e.ObjectOld.(*clusterv1alpha1.Cluster)
					n, ok2 := e.ObjectNew.(*clusterv1alpha1.Cluster)
					return !ok1 || !ok2 || observeCluster(o) != observeCluster(n)
				},
			})).
		WithOptions(controller.Options{NewQueue: queue.New}).
		Complete(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			if _, err := g.Refresh(ctx); err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{}, nil
		}))
	if err != nil {
		return fmt.Errorf("setting up the storm-guard controller: %w", err)
	}
	return nil
}

// listClusters lists every Cluster; the items are shared with the cache
// and must not be modified.
func listClusters(ctx context.Context, reader client.Reader) ([]clusterv1alpha1.Cluster, error) {
	var list clusterv1alpha1.ClusterList
	if err := reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Clusters: %w", err)
	}
	return list.Items, nil
}

func observeAll(clusters []clusterv1alpha1.Cluster) []clusterHealth {
	out := make([]clusterHealth, 0, len(clusters))
	for i := range clusters {
		out = append(out, observeCluster(&clusters[i]))
	}
	return out
}

// DescribeStormGuard computes the storm guard's state from the Clusters
// with the default thresholds and rates, for `lifeboat status`.
func DescribeStormGuard(ctx context.Context, reader client.Reader) (string, error) {
	return DescribeStormGuardWith(ctx, reader, NewClusterFailoverOptions().StormGuardConfig())
}

// DescribeStormGuardWith is DescribeStormGuard with the given thresholds
// and rates.
func DescribeStormGuardWith(ctx context.Context, reader client.Reader, cfg StormGuardConfig) (string, error) {
	clusters, err := listClusters(ctx, reader)
	if err != nil {
		return "", err
	}
	return describeStormGuard(computeStormGuard(observeAll(clusters), cfg)), nil
}

// describeStormGuard prints the status: one summary line, then one line
// per group when there is more than one.
func describeStormGuard(s StormGuardStatus) string {
	if len(s.Groups) == 0 {
		return "Normal: no clusters"
	}
	total, notReady := 0, 0
	worst := GroupNormal
	for _, g := range s.Groups {
		total += len(g.Clusters)
		notReady += g.NotReady
		if g.State > worst {
			worst = g.State
		}
	}
	var b strings.Builder
	switch {
	case s.AllClustersDown:
		suspect := 0
		for _, g := range s.Groups {
			suspect += g.Suspect
		}
		fmt.Fprintf(&b, "HALTED: no cluster is Ready (%d of %d not Ready%s); evicting nothing, the control plane may be the one cut off", notReady, total, suspects(suspect))
		if len(s.Groups) == 1 {
			return b.String()
		}
	case len(s.Groups) == 1:
		g := s.Groups[0]
		fmt.Fprintf(&b, "%s: %s not Ready%s; %s", g.State, countOf(g.NotReady, len(g.Clusters)), suspects(g.Suspect), describeRate(g.Rate))
	default:
		fmt.Fprintf(&b, "%s: %d of %d clusters not Ready in %d regions", worst, notReady, total, len(s.Groups))
		if s.Fleet == GroupPartialDisruption {
			b.WriteString(" (PartialDisruption of the whole control plane: it caps every region's rate)")
		}
	}
	if len(s.Groups) > 1 {
		for _, g := range s.Groups {
			capped := ""
			if g.FleetCapped {
				capped = " (the whole control plane's rate)"
			}
			fmt.Fprintf(&b, "\n  %s: %s, %s not Ready%s; %s%s", groupName(g.Name), g.State, countOf(g.NotReady, len(g.Clusters)), suspects(g.Suspect), describeRate(g.Rate), capped)
		}
	}
	return b.String()
}

func describeRate(r float64) string {
	if r <= 0 {
		return "evictions held"
	}
	return fmt.Sprintf("evicting at up to %s/s", formatRate(r))
}

// stormGuardMetrics are the guard's gauges. A nil *stormGuardMetrics
// records nothing.
type stormGuardMetrics struct {
	state *prometheus.GaugeVec
	rate  *prometheus.GaugeVec
}

// metricGroup is the group label: the region, or "(none)".
func metricGroup(group string) string {
	if group == "" {
		return "(none)"
	}
	return group
}

func newStormGuardMetrics(reg prometheus.Registerer) (*stormGuardMetrics, error) {
	m := &stormGuardMetrics{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lifeboat_storm_guard_state",
			Help: "Storm-guard state of a cluster group (region; \"(none)\" for clusters without one): 0 Normal, 1 PartialDisruption, 2 FullDisruption.",
		}, []string{"group"}),
		rate: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lifeboat_storm_guard_eviction_rate",
			Help: "Evictions per second the storm guard allows from a cluster group's tainted clusters; 0 while evictions are held.",
		}, []string{"group"}),
	}
	for _, c := range []prometheus.Collector{m.state, m.rate} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering storm-guard metrics: %w", err)
		}
	}
	return m, nil
}

func (m *stormGuardMetrics) set(gs GroupStatus) {
	if m == nil {
		return
	}
	m.state.WithLabelValues(metricGroup(gs.Name)).Set(float64(gs.State))
	m.rate.WithLabelValues(metricGroup(gs.Name)).Set(gs.Rate)
}

func (m *stormGuardMetrics) forget(group string) {
	if m == nil {
		return
	}
	m.state.DeleteLabelValues(metricGroup(group))
	m.rate.DeleteLabelValues(metricGroup(group))
}
