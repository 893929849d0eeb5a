package simulate

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler/core"
)

// Binding kinds.
const (
	KindResourceBinding        = "ResourceBinding"
	KindClusterResourceBinding = "ClusterResourceBinding"
)

// Binding is one ResourceBinding or ClusterResourceBinding of the snapshot.
type Binding struct {
	Kind      string
	Namespace string
	Name      string
	Spec      workv1alpha2.ResourceBindingSpec
	Status    workv1alpha2.ResourceBindingStatus
	// Released: no policy claims the binding (workv1alpha2.IsClaimed is
	// false for its labels): no failover evicts it, no scheduler places it.
	Released bool
}

// Key names the binding as the report does: namespace/name for a
// ResourceBinding, name for a ClusterResourceBinding.
func (b *Binding) Key() string {
	if b.Namespace == "" {
		return b.Name
	}
	return b.Namespace + "/" + b.Name
}

// Snapshot is the control plane's state the simulation starts from.
type Snapshot struct {
	Clusters      []clusterv1alpha1.Cluster
	TaintPolicies []policyv1alpha1.ClusterTaintPolicy
	Bindings      []Binding
	// Settings are the controller manager's failover flags.
	Settings failover.Settings
	// Now is when the failure happens.
	Now time.Time
}

// Scenario is the hypothetical failure.
type Scenario struct {
	// FailClusters stop answering.
	FailClusters []string
	// Taints are added to clusters, in `lifeboat taint` syntax
	// (KEY[=VALUE]:EFFECT), by cluster name.
	Taints map[string][]string
	// Unhealthy is one application reported Unhealthy in one cluster.
	Unhealthy *Unhealthy
	// StartupTime is how long a new copy is assumed to take to be Healthy
	// once created; the snapshot cannot tell.
	StartupTime time.Duration
}

// Unhealthy names an application failure: the binding (its Key and kind)
// and the cluster where the application is Unhealthy.
type Unhealthy struct {
	Kind    string
	Binding string
	Cluster string
}

// Outcome results, one per binding the scenario touches.
const (
	// ResultEvicted: evicted and placed elsewhere.
	ResultEvicted = "Evicted"
	// ResultStays: evicted, but no other cluster fits: the old copy stays
	// where it is, and the eviction waits for a target.
	ResultStays = "Stays"
	// ResultTolerated: the placement tolerates the taints for good.
	ResultTolerated = "Tolerated"
	// ResultHeld: the storm guard holds the eviction for as long as the
	// clusters stay as they are.
	ResultHeld = "Held"
	// ResultNotEvicted: no failover applies (disabled, no application
	// failover in the policy).
	ResultNotEvicted = "NotEvicted"
)

// Seconds is a span of time in seconds after the failure, as an earliest
// and a latest bound.
type Seconds struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

func (s Seconds) String() string {
	if s.Min == s.Max {
		return formatSeconds(s.Min)
	}
	if s.Max < 120 {
		return fmt.Sprintf("%g–%gs", s.Min, s.Max)
	}
	return formatSeconds(s.Min) + "–" + formatSeconds(s.Max)
}

// formatSeconds prints seconds as 45s, or as a duration past two minutes
// (5m30s, 596523h14m7s).
func formatSeconds(f float64) string {
	if f < 120 {
		return fmt.Sprintf("%gs", f)
	}
	const maxSeconds = float64(1<<63-1) / float64(time.Second)
	if f >= maxSeconds {
		return "forever"
	}
	return (time.Duration(f) * time.Second).Round(time.Second).String()
}

// Eviction is the predicted eviction of a binding from one cluster.
type Eviction struct {
	Cluster string `json:"cluster"`
	// Toleration is how the placement tolerates the cluster's NoExecute
	// taints: "untolerated", "tolerated for Ns" or "tolerated forever".
	Toleration string `json:"toleration"`
	// At is when the eviction is written, after the failure (nil when it
	// is not).
	At *Seconds `json:"at,omitempty"`
	// PurgeMode is the eviction task's purge mode.
	PurgeMode policyv1alpha1.PurgeMode `json:"purgeMode,omitempty"`
	// GracePeriodSeconds is how long the old copy is kept at most
	// (Gracefully), or how long a Directly eviction waits for an
	// unreachable cluster.
	GracePeriodSeconds int64 `json:"gracePeriodSeconds,omitempty"`
	// State is the preserved state the new copy would be given.
	State map[string]string `json:"state,omitempty"`
	// StateProblems are the statePreservation rules that would capture
	// nothing from the status the failed copy last reported.
	StateProblems []string `json:"stateProblems,omitempty"`
	// Held is the storm guard's reason when it holds the eviction.
	Held string `json:"held,omitempty"`
}

// Outcome is what happens to one binding.
type Outcome struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Resource is the template: apiVersion, kind, namespace/name.
	Resource string `json:"resource"`
	// Before and After are spec.clusters now and once the failover is done.
	Before []workv1alpha2.TargetCluster `json:"before"`
	After  []workv1alpha2.TargetCluster `json:"after"`
	// Result is ResultEvicted, ResultStays, ResultTolerated, ResultHeld or
	// ResultNotEvicted.
	Result string `json:"result"`
	// Reason says why, for Stays, Held and NotEvicted.
	Reason    string     `json:"reason,omitempty"`
	Evictions []Eviction `json:"evictions,omitempty"`
	// HealthyAt is when the new copies are expected Healthy (evicted, plus
	// the assumed start-up time).
	HealthyAt *Seconds `json:"healthyAt,omitempty"`
	// Steps are the decision steps, for --explain.
	Steps []string `json:"steps,omitempty"`

	binding *Binding
}

// Key is the binding's namespace/name (name for a cluster-scoped one).
func (o *Outcome) Key() string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

func (o *Outcome) step(format string, args ...any) {
	o.Steps = append(o.Steps, fmt.Sprintf(format, args...))
}

// Report is the simulation's answer.
type Report struct {
	// Failed, Tainted and Unhealthy repeat the scenario.
	Failed    []string            `json:"failedClusters,omitempty"`
	Tainted   map[string][]string `json:"taintedClusters,omitempty"`
	Unhealthy *Unhealthy          `json:"unhealthy,omitempty"`
	// Settings are the flags the decisions were made with, and where they
	// came from.
	Settings       failover.Settings `json:"settings"`
	SettingsSource string            `json:"settingsSource"`
	// StartupTime is the assumed start-up time of a new copy.
	StartupTime metav1.Duration `json:"startupTime"`
	// Outcomes are the bindings the scenario touches, sorted by kind,
	// namespace and name.
	Outcomes []Outcome `json:"bindings"`
	Totals   Totals    `json:"totals"`
}

// Run simulates sc on snap.
func Run(snap Snapshot, sc Scenario) (*Report, error) {
	sc.FailClusters = dedupe(sc.FailClusters)
	s := &sim{snap: snap, sc: sc}
	if err := s.validate(); err != nil {
		return nil, err
	}
	if err := s.buildViews(); err != nil {
		return nil, err
	}
	r := &Report{
		Failed:      append([]string(nil), sc.FailClusters...),
		Tainted:     sc.Taints,
		Unhealthy:   sc.Unhealthy,
		Settings:    snap.Settings,
		StartupTime: metav1.Duration{Duration: sc.StartupTime},
	}
	if sc.Unhealthy != nil {
		o, err := s.applicationFailover()
		if err != nil {
			return nil, err
		}
		r.Outcomes = append(r.Outcomes, o)
	} else {
		r.Outcomes = s.clusterFailover()
	}
	if r.Outcomes == nil {
		r.Outcomes = []Outcome{}
	}
	sort.SliceStable(r.Outcomes, func(i, j int) bool {
		a, b := r.Outcomes[i], r.Outcomes[j]
		if a.Kind != b.Kind {
			return a.Kind > b.Kind // ResourceBindings first
		}
		return a.Key() < b.Key()
	})
	r.Totals = s.totals(r.Outcomes)
	return r, nil
}

// sim is one simulation.
type sim struct {
	snap Snapshot
	sc   Scenario
	// early and late are the Clusters after the failure, as early and as
	// late as the controllers can notice it (see failureTimes).
	early, late []clusterv1alpha1.Cluster
	byName      map[string]*clusterv1alpha1.Cluster
	// hit are the clusters the scenario fails or taints.
	hit map[string]bool
	// paced are each group's first and last paced evictions.
	paced map[string]*groupTimes
}

// groupTimes are the first and last evictions of a group, as early and as
// late as they can come.
type groupTimes struct {
	earlyFirst, earlyLast, lateFirst, lateLast time.Time
}

func (s *sim) validate() error {
	s.byName = map[string]*clusterv1alpha1.Cluster{}
	for i := range s.snap.Clusters {
		s.byName[s.snap.Clusters[i].Name] = &s.snap.Clusters[i]
	}
	s.hit = map[string]bool{}
	check := func(name, what string) error {
		if _, ok := s.byName[name]; !ok {
			return fmt.Errorf("%s: no cluster %q; the clusters are: %s", what, name, strings.Join(s.clusterNames(), ", "))
		}
		return nil
	}
	for _, c := range s.sc.FailClusters {
		if err := check(c, "--fail-cluster"); err != nil {
			return err
		}
		s.hit[c] = true
	}
	for c := range s.sc.Taints {
		if err := check(c, "--taint"); err != nil {
			return err
		}
		s.hit[c] = true
	}
	if u := s.sc.Unhealthy; u != nil {
		if err := check(u.Cluster, "--cluster"); err != nil {
			return err
		}
	}
	if len(s.hit) == 0 && s.sc.Unhealthy == nil {
		return fmt.Errorf("nothing to simulate: give --fail-cluster, --taint or --unhealthy")
	}
	return nil
}

func (s *sim) clusterNames() []string {
	names := make([]string, 0, len(s.byName))
	for n := range s.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// failureTimes are when the controllers notice a failure at t0, at the
// earliest and at the latest (docs/cluster-failover.md, "How long"):
//
//   - earliest: the member refuses connections, the broken watch probes it
//     at once and the probe fails at once; Ready turns False F later;
//   - latest: the member goes silent; the next probe starts up to P later
//     and times out after T; Ready turns False F + T after it started.
func (s *sim) failureTimes() (early, late cluster.Failure) {
	t0 := s.snap.Now
	p, f, t := s.snap.Settings.ProbePeriod.Duration, s.snap.Settings.FailureThreshold.Duration, s.snap.Settings.ProbeTimeout.Duration
	early = cluster.Failure{ProbesFailingSince: t0, NotReadyAt: t0.Add(f)}
	late = cluster.Failure{ProbesFailingSince: t0.Add(p), NotReadyAt: t0.Add(p + f + t)}
	return early, late
}

// buildViews computes the Clusters as the controllers would leave them.
func (s *sim) buildViews() error {
	early, late := s.failureTimes()
	for _, f := range []struct {
		failure cluster.Failure
		out     *[]clusterv1alpha1.Cluster
	}{{early, &s.early}, {late, &s.late}} {
		for i := range s.snap.Clusters {
			c := &s.snap.Clusters[i]
			view := c.DeepCopy()
			if contains(s.sc.FailClusters, c.Name) {
				view = cluster.AsFailed(c, s.snap.TaintPolicies, f.failure)
			}
			if specs, ok := s.sc.Taints[c.Name]; ok {
				var err error
				if view, err = cluster.WithTaints(view, s.snap.TaintPolicies, specs, s.snap.Now); err != nil {
					return fmt.Errorf("--taint %s: %w", c.Name, err)
				}
			}
			*f.out = append(*f.out, *view)
		}
	}
	return nil
}

// view returns the named cluster of views.
func view(views []clusterv1alpha1.Cluster, name string) *clusterv1alpha1.Cluster {
	for i := range views {
		if views[i].Name == name {
			return &views[i]
		}
	}
	return nil
}

// dedupe returns list without repeated names, in order.
func dedupe(list []string) []string {
	var out []string
	for _, s := range list {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// pendingEviction is one binding's eviction from one cluster, due at early
// (and late) before pacing.
type pendingEviction struct {
	outcome     int
	cluster     string
	message     string
	early, late time.Time
	// at is the paced time, early and late.
	atEarly, atLate time.Time
	group           string
	rate            float64
}

// clusterFailover is the taint manager's part: every binding scheduled on
// a hit cluster.
func (s *sim) clusterFailover() []Outcome {
	cfg := s.snap.Settings.StormGuardConfig()
	var outcomes []Outcome
	var pending []pendingEviction
	for i := range s.snap.Bindings {
		b := &s.snap.Bindings[i]
		var hits []string
		for _, t := range b.Spec.Clusters {
			if s.hit[t.Name] {
				hits = append(hits, t.Name)
			}
		}
		if len(hits) == 0 {
			continue
		}
		o := newOutcome(b)
		idx := len(outcomes)
		if !s.snap.Settings.TaintEviction || b.Released {
			o.Result = ResultNotEvicted
			o.Reason = "cluster failover is off in the controller manager (the Failover gate, --enable-no-execute-taint-eviction or the taint-manager controller)"
			if b.Released {
				o.Reason = notClaimedReason
			}
			o.step("%s", o.Reason)
			outcomes = append(outcomes, o)
			continue
		}
		var tolerations []corev1.Toleration
		if b.Spec.Placement != nil {
			tolerations = b.Spec.Placement.ClusterTolerations
		}
		evicting := false
		for _, c := range hits {
			ev := Eviction{Cluster: c}
			e, l := view(s.early, c), view(s.late, c)
			o.step("%s: taints after the failure: %s", c, formatTaints(e.Spec.Taints))
			de := failover.NoExecuteDeadline(e.Spec.Taints, tolerations, s.snap.Now)
			dl := failover.NoExecuteDeadline(l.Spec.Taints, tolerations, s.snap.Now)
			switch {
			case de.Never && len(failover.NoExecuteTaints(e.Spec.Taints)) == 0:
				ev.Toleration = "no NoExecute taint"
				o.step("%s: no NoExecute taint (no ClusterTaintPolicy adds one for this failure): not evicted", c)
				o.Evictions = append(o.Evictions, ev)
				continue
			case de.Never:
				ev.Toleration = "tolerated forever"
				o.step("%s: every NoExecute taint is tolerated without tolerationSeconds: not evicted", c)
				o.Evictions = append(o.Evictions, ev)
				continue
			case de.At.IsZero():
				ev.Toleration = "untolerated"
				o.step("%s: the taint %s is not tolerated: evicted as soon as it is there", c, formatTaint(de.Taint))
			default:
				ev.Toleration = fmt.Sprintf("tolerated for %ds", de.Seconds)
				o.step("%s: the taint %s is tolerated for %ds", c, formatTaint(de.Taint), de.Seconds)
			}
			evicting = true
			// An eviction already due (a cluster that failed before now,
			// a toleration that ran out) is written now, not in the past.
			due := []time.Time{maxTime(dueTime(de, e), s.snap.Now), maxTime(dueTime(dl, l), s.snap.Now)}
			msgs, _ := failover.PlanTaintEvictions([]workv1alpha2.TargetCluster{{Name: c}}, map[string][]corev1.Taint{c: e.Spec.Taints}, tolerations, due[0])
			msg := ""
			if len(msgs) > 0 {
				msg = msgs[0].Message
			}
			pe := pendingEviction{outcome: idx, cluster: c, message: msg, early: due[0], late: due[1]}
			// The storm guard, as it decides when the eviction is due.
			he := failover.StormGuardHold(s.early, c, cfg, pe.early)
			hl := failover.StormGuardHold(s.late, c, cfg, pe.late)
			pe.group, pe.rate = he.Group.Name, he.Group.Rate
			if he.Halted || hl.Halted {
				reason := he.Reason
				if reason == "" {
					reason = hl.Reason
				}
				ev.Held = reason
				o.step("%s: the storm guard holds the eviction: %s", c, reason)
				o.Evictions = append(o.Evictions, ev)
				continue
			}
			if !he.Until.IsZero() {
				o.step("%s: the storm guard's settling window holds the eviction until %s", c, since(s.snap.Now, he.Until))
				pe.early = he.Until
			}
			if !hl.Until.IsZero() {
				pe.late = hl.Until
			}
			o.Evictions = append(o.Evictions, ev)
			pending = append(pending, pe)
		}
		if !evicting {
			o.Result = ResultTolerated
		}
		outcomes = append(outcomes, o)
	}
	s.pace(pending)
	s.evictAndSchedule(outcomes, pending)
	return outcomes
}

// dueTime is when an eviction with deadline d from the cluster view c is
// due: at once (when the taint is there) or at the deadline.
func dueTime(d failover.EvictionDeadline, c *clusterv1alpha1.Cluster) time.Time {
	if !d.At.IsZero() {
		return d.At
	}
	if d.Taint.TimeAdded != nil {
		return d.Taint.TimeAdded.Time
	}
	if ready := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady); ready != nil {
		return ready.LastTransitionTime.Time
	}
	return time.Time{}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// pace gives each pending eviction its time from its group's token bucket:
// the earliest it can get (early), and the latest (late).
func (s *sim) pace(pending []pendingEviction) {
	byGroup := map[string][]int{}
	for i := range pending {
		byGroup[pending[i].group] = append(byGroup[pending[i].group], i)
	}
	s.paced = map[string]*groupTimes{}
	for group, idx := range byGroup {
		gt := &groupTimes{}
		s.paced[group] = gt
		for _, late := range []bool{false, true} {
			due := func(i int) time.Time {
				if late {
					return pending[i].late
				}
				return pending[i].early
			}
			sort.SliceStable(idx, func(a, b int) bool { return due(idx[a]).Before(due(idx[b])) })
			times := make([]time.Time, len(idx))
			for k, i := range idx {
				times[k] = due(i)
			}
			paced := failover.PaceEvictions(pending[idx[0]].rate, times)
			if late {
				gt.lateFirst, gt.lateLast = paced[0], paced[len(paced)-1]
			} else {
				gt.earlyFirst, gt.earlyLast = paced[0], paced[len(paced)-1]
			}
			// Evictions due at the same moment take their tokens in
			// whatever order the taint manager reaches them: each may get
			// the first token of its tie or the last.
			for start := 0; start < len(idx); {
				end := start + 1
				for end < len(idx) && times[end].Equal(times[start]) {
					end++
				}
				for _, i := range idx[start:end] {
					if late {
						pending[i].atLate = paced[end-1]
					} else {
						pending[i].atEarly = paced[start]
					}
				}
				start = end
			}
		}
	}
}

// evictAndSchedule writes each binding's evictions in order (those due at
// the same moment in one write, as the taint manager does) and schedules
// it after each, as the scheduler does.
func (s *sim) evictAndSchedule(outcomes []Outcome, pending []pendingEviction) {
	byOutcome := map[int][]pendingEviction{}
	for _, p := range pending {
		byOutcome[p.outcome] = append(byOutcome[p.outcome], p)
	}
	for i := range outcomes {
		ps := byOutcome[i]
		o := &outcomes[i]
		if len(ps) == 0 {
			if o.Result == "" {
				o.Result = ResultHeld
				for _, e := range o.Evictions {
					if e.Held != "" {
						o.Reason = e.Held
						break
					}
				}
			}
			continue
		}
		b := o.binding
		sort.SliceStable(ps, func(a, c int) bool { return ps[a].atEarly.Before(ps[c].atEarly) })
		spec, status := b.Spec.DeepCopy(), b.Status.DeepCopy()
		var scheduleErr error
		for start := 0; start < len(ps); {
			end := start + 1
			for end < len(ps) && ps[end].atEarly.Equal(ps[start].atEarly) {
				end++
			}
			batch := ps[start:end]
			var evs []failover.TaintEviction
			for _, p := range batch {
				evs = append(evs, failover.TaintEviction{Cluster: p.cluster, Message: p.message})
			}
			plan := failover.PlanTaintEviction(spec, status, evs, s.snap.Settings.DefaultPurgeMode, s.snap.Settings.Gates(), batch[0].atEarly)
			for _, p := range batch {
				ev := o.eviction(p.cluster)
				ev.At = &Seconds{Min: seconds(s.snap.Now, p.atEarly), Max: seconds(s.snap.Now, p.atLate)}
				ev.PurgeMode = plan.Mode
				ev.GracePeriodSeconds = int64(s.snap.Settings.GracefulEvictionTimeout.Seconds())
				if task := findTask(plan.Spec, p.cluster); task != nil {
					ev.State = task.PreservedLabelState
					if task.GracePeriodSeconds != nil {
						ev.GracePeriodSeconds = int64(*task.GracePeriodSeconds)
					}
				}
				ev.StateProblems = problemStrings(plan.StateProblems(p.cluster))
				o.step("%s: evicted %s after the failure, purge mode %s", p.cluster, ev.At, plan.Mode)
			}
			spec = plan.Spec
			spec, scheduleErr = s.schedule(o, spec, status, s.early)
			start = end
		}
		o.After = spec.Clusters
		if scheduleErr != nil {
			o.Result = ResultStays
			o.Reason = "no other cluster fits: " + scheduleErr.Error()
			var ns notScheduled
			if errors.As(scheduleErr, &ns) {
				o.Reason = ns.Error()
			}
			continue
		}
		o.Result = ResultEvicted
		var last Seconds
		for _, e := range o.Evictions {
			if e.At != nil {
				last.Min = max(last.Min, e.At.Min)
				last.Max = max(last.Max, e.At.Max)
			}
		}
		startup := s.sc.StartupTime.Seconds()
		o.HealthyAt = &Seconds{Min: last.Min + startup, Max: last.Max + startup}
	}
}

// schedule runs the scheduler on spec with the clusters views, as the
// scheduler controller does after an eviction: the new placement, or, when
// nothing fits, the current one kept (minus clusters gone or deleting).
func (s *sim) schedule(o *Outcome, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus, views []clusterv1alpha1.Cluster) (*workv1alpha2.ResourceBindingSpec, error) {
	if why := scheduler.WhyNotScheduled(spec, ""); why != "" {
		o.step("scheduler: not scheduled (%s); spec.clusters stays %s", why, core.FormatTargets(spec.Clusters))
		return spec.DeepCopy(), notScheduled(why)
	}
	clusters := make([]*clusterv1alpha1.Cluster, len(views))
	for i := range views {
		clusters[i] = &views[i]
	}
	res, err := core.Schedule(core.Problem{
		Spec:                 spec,
		ObservedAffinityName: status.SchedulerObservedAffinityName,
		Clusters:             clusters,
	})
	out := spec.DeepCopy()
	if err != nil {
		o.step("scheduler: %v; the current placement %s is kept", err, core.FormatTargets(spec.Clusters))
		return out, err
	}
	out.Clusters = res.Clusters
	if res.AffinityName != "" {
		status.SchedulerObservedAffinityName = res.AffinityName
		o.step("scheduler: %s (clusterAffinities term %q)", core.FormatTargets(res.Clusters), res.AffinityName)
	} else {
		o.step("scheduler: %s", core.FormatTargets(res.Clusters))
	}
	return out, nil
}

func (o *Outcome) eviction(cluster string) *Eviction {
	for i := range o.Evictions {
		if o.Evictions[i].Cluster == cluster {
			return &o.Evictions[i]
		}
	}
	o.Evictions = append(o.Evictions, Eviction{Cluster: cluster})
	return &o.Evictions[len(o.Evictions)-1]
}

func findTask(spec *workv1alpha2.ResourceBindingSpec, cluster string) *workv1alpha2.GracefulEvictionTask {
	for i := range spec.GracefulEvictionTasks {
		if spec.GracefulEvictionTasks[i].FromCluster == cluster {
			return &spec.GracefulEvictionTasks[i]
		}
	}
	return nil
}

func newOutcome(b *Binding) Outcome {
	r := b.Spec.Resource
	res := r.APIVersion + " " + r.Kind + " "
	if r.Namespace != "" {
		res += r.Namespace + "/"
	}
	res += r.Name
	return Outcome{
		Kind:      b.Kind,
		Namespace: b.Namespace,
		Name:      b.Name,
		Resource:  res,
		Before:    append([]workv1alpha2.TargetCluster(nil), b.Spec.Clusters...),
		After:     append([]workv1alpha2.TargetCluster(nil), b.Spec.Clusters...),
		binding:   b,
	}
}

// applicationFailover is application failover's part: one binding whose
// application is Unhealthy in one cluster.
func (s *sim) applicationFailover() (Outcome, error) {
	u := s.sc.Unhealthy
	var b *Binding
	for i := range s.snap.Bindings {
		c := &s.snap.Bindings[i]
		if c.Kind == u.Kind && c.Key() == u.Binding {
			b = c
			break
		}
	}
	if b == nil {
		return Outcome{}, fmt.Errorf("no %s %s", u.Kind, u.Binding)
	}
	o := newOutcome(b)
	scheduled := false
	for _, t := range b.Spec.Clusters {
		scheduled = scheduled || t.Name == u.Cluster
	}
	if !scheduled {
		return Outcome{}, fmt.Errorf("%s %s is not scheduled on %s; it is on %s", u.Kind, u.Binding, u.Cluster, core.FormatTargets(b.Spec.Clusters))
	}
	var app *policyv1alpha1.ApplicationFailoverBehavior
	if b.Spec.Failover != nil {
		app = b.Spec.Failover.Application
	}
	switch {
	case !s.snap.Settings.ApplicationFailover:
		o.Result, o.Reason = ResultNotEvicted, "application failover is off in the controller manager (the Failover gate or the application-failover controller)"
	case app == nil:
		o.Result, o.Reason = ResultNotEvicted, "its policy has no failover.application: an unhealthy application stays where it is"
	case b.Released:
		o.Result, o.Reason = ResultNotEvicted, notClaimedReason
	}
	if o.Result != "" {
		o.step("%s", o.Reason)
		return o, nil
	}
	// Application failover's timer starts now, unless one runs already
	// (status.unhealthyClusters): the deadline is then its start plus the
	// toleration, and one that has passed evicts at once.
	since := metav1.NewTime(s.snap.Now)
	for _, t := range b.Status.UnhealthyClusters {
		if t.ClusterName == u.Cluster {
			since = t.UnhealthySince
			o.step("%s: already Unhealthy since %s", u.Cluster, since.UTC().Format(time.RFC3339))
		}
	}
	at := maxTime(since.Add(time.Duration(app.EffectiveTolerationSeconds())*time.Second), s.snap.Now)
	o.step("%s: Unhealthy for tolerationSeconds %ds: evicted", u.Cluster, app.EffectiveTolerationSeconds())
	plan := failover.PlanApplicationEviction(&b.Spec, &b.Status, app, []string{u.Cluster},
		map[string]metav1.Time{u.Cluster: since}, "", s.snap.Settings.Gates(), at)
	ev := Eviction{Cluster: u.Cluster, Toleration: fmt.Sprintf("unhealthy for %ds", app.EffectiveTolerationSeconds()),
		At: &Seconds{Min: seconds(s.snap.Now, at), Max: seconds(s.snap.Now, at)}, PurgeMode: plan.Mode,
		GracePeriodSeconds: int64(s.snap.Settings.GracefulEvictionTimeout.Seconds())}
	if task := findTask(plan.Spec, u.Cluster); task != nil {
		ev.State = task.PreservedLabelState
		if task.GracePeriodSeconds != nil {
			ev.GracePeriodSeconds = int64(*task.GracePeriodSeconds)
		}
	}
	ev.StateProblems = problemStrings(plan.StateProblems(u.Cluster))
	o.Evictions = append(o.Evictions, ev)
	o.step("%s: purge mode %s", u.Cluster, plan.Mode)
	spec, err := s.schedule(&o, plan.Spec, b.Status.DeepCopy(), s.early)
	o.After = spec.Clusters
	if err != nil {
		o.Result, o.Reason = ResultStays, "no other cluster fits: "+err.Error()
		return o, nil
	}
	o.Result = ResultEvicted
	startup := s.sc.StartupTime.Seconds()
	o.HealthyAt = &Seconds{Min: ev.At.Min + startup, Max: ev.At.Max + startup}
	return o, nil
}

func problemStrings(ps []failover.StateProblem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

func seconds(t0, t time.Time) float64 {
	return t.Sub(t0).Round(100 * time.Millisecond).Seconds()
}

func since(t0, t time.Time) string {
	return fmt.Sprintf("%gs after the failure", seconds(t0, t))
}

func formatTaint(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

func formatTaints(ts []corev1.Taint) string {
	if len(ts) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		parts = append(parts, formatTaint(t))
	}
	return strings.Join(parts, ", ")
}

// notClaimedReason says why a binding no policy claims is not evicted.
const notClaimedReason = "no policy claims it any more (its policy was deleted, or no longer selects the template): it stays where it is, and no failover moves it"

// notScheduled is the answer of schedule for a binding no scheduler places.
type notScheduled string

func (n notScheduled) Error() string { return "no scheduler places it again: " + string(n) }
