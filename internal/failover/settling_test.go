package failover

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
)

// probe sets the ProbeSucceeded condition, changed at the given second.
func (c *clusterWrapper) probe(s metav1.ConditionStatus, since int) *clusterWrapper {
	c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{
		Type: clusterv1alpha1.ClusterConditionProbeSucceeded, Status: s, Reason: "Test", LastTransitionTime: metav1.NewTime(at(since)),
	})
	return c
}

// readySince sets Ready, changed at the given second.
func (c *clusterWrapper) readySince(s metav1.ConditionStatus, since int) *clusterWrapper {
	c.ready(s)
	c.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at(since))
	return c
}

// healthy: Ready since long ago and passing its probes.
func healthy(name string) *clusterWrapper {
	return makeCluster(name).readySince(metav1.ConditionTrue, -3600).probe(metav1.ConditionTrue, -3600)
}

// suspect: Ready, but its probes fail since the given second.
func suspect(name string, since int) *clusterWrapper {
	return makeCluster(name).readySince(metav1.ConditionTrue, -3600).probe(metav1.ConditionFalse, since)
}

// failed: probes failing since the given second, Ready False since
// threshold seconds later.
func failed(name string, since, threshold int) *clusterWrapper {
	return makeCluster(name).readySince(metav1.ConditionFalse, since+threshold).probe(metav1.ConditionFalse, since)
}

func TestSettlingWindow(t *testing.T) {
	cases := map[string]struct {
		period, failure, timeout, want time.Duration
	}{
		"defaults: 10s + 30s + 5s":     {period: 10 * time.Second, failure: 30 * time.Second, timeout: 5 * time.Second, want: 45 * time.Second},
		"lifeboat up's test periods":   {period: time.Second, failure: 3 * time.Second, timeout: 5 * time.Second, want: 9 * time.Second},
		"a zero threshold still waits": {period: time.Second, timeout: time.Second, want: 2 * time.Second},
		"negative parts count as zero": {period: -time.Second, failure: -time.Second, timeout: time.Second, want: time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := SettlingWindow(tc.period, tc.failure, tc.timeout); got != tc.want {
				t.Errorf("SettlingWindow = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPullSettlingWindow(t *testing.T) {
	cases := map[string]struct {
		grace, period, want, renew time.Duration
	}{
		"defaults: 40s + 5s + 40s/4":             {grace: 40 * time.Second, period: 5 * time.Second, want: 55 * time.Second, renew: 10 * time.Second},
		"TestPullMode's periods: 6s + 1s + 1.5s": {grace: 6 * time.Second, period: time.Second, want: 8500 * time.Millisecond, renew: 1500 * time.Millisecond},
		"unknown (older settings): none":         {},
		"negative parts count as zero":           {grace: -time.Second, period: time.Second, want: time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := PullSettlingWindow(tc.grace, tc.period); got != tc.want {
				t.Errorf("PullSettlingWindow = %s, want %s", got, tc.want)
			}
			if got := PullRenewInterval(tc.grace); got != tc.renew {
				t.Errorf("PullRenewInterval = %s, want %s", got, tc.renew)
			}
		})
	}
}

// TestSettlingWindowsOf: a cluster's window is its lead plus the longest
// reach of the kinds of cluster seen (SettlingWindows).
func TestSettlingWindowsOf(t *testing.T) {
	s := time.Second
	defaults := NewSettlingWindows(10*s, 30*s, 5*s, 40*s, 5*s)
	shortProbes := NewSettlingWindows(s, 3*s, 5*s, 40*s, 5*s)
	pullMode := NewSettlingWindows(s, 3*s, 5*s, 6*s, s)
	pushOnly, pullOnly, both := clusterKinds{push: true}, clusterKinds{pull: true}, clusterKinds{push: true, pull: true}
	cases := map[string]struct {
		windows SettlingWindows
		pull    bool
		seen    clusterKinds
		want    time.Duration
	}{
		"defaults, only Push clusters: P + F + T":                     {windows: defaults, seen: pushOnly, want: 45 * s},
		"defaults, only Pull clusters: R + G + M":                     {windows: defaults, pull: true, seen: pullOnly, want: 55 * s},
		"defaults, a Push cluster among Pull ones":                    {windows: defaults, seen: both, want: 45 * s},
		"defaults, a Pull cluster among Push ones":                    {windows: defaults, pull: true, seen: both, want: 55 * s},
		"short probes, only Push clusters":                            {windows: shortProbes, seen: pushOnly, want: 9 * s},
		"short probes, a Push cluster waits for Pull ones":            {windows: shortProbes, seen: both, want: 45 * s},
		"short probes, a Pull cluster among Push ones":                {windows: shortProbes, pull: true, seen: both, want: 55 * s},
		"TestPullMode's periods, only Pull clusters":                  {windows: pullMode, pull: true, seen: pullOnly, want: 8500 * time.Millisecond},
		"TestPullMode's periods, a Pull cluster waits R + P+F+T":      {windows: pullMode, pull: true, seen: both, want: 10500 * time.Millisecond},
		"TestPullMode's periods, a Push cluster among Pull ones":      {windows: pullMode, seen: both, want: 9 * s},
		"settings without the lease monitor's flags: the Push window": {windows: SettlingWindows{Push: 45 * s}, pull: true, seen: both, want: 45 * s},
		"the zero windows wait for nothing":                           {pull: true, seen: both},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.windows.of(tc.pull, tc.seen); got != tc.want {
				t.Errorf("of = %s, want %s", got, tc.want)
			}
		})
	}
}

// failing is one cluster of a scenario of clusters failing, in times after
// t0. A Push cluster's first failed probe starts at start and is written
// at seen (start when the connection is refused, start + T when the probe
// times out), and Ready=False F later than both. A Pull cluster's last
// heartbeat is start, and the lease monitor writes Ready=Unknown at seen
// (G after it, G + M at the latest).
type failing struct {
	name        string
	pull        bool
	start, seen time.Duration
}

// view is the Cluster as the control plane has it at now.
func (f failing) view(now, failureThreshold time.Duration) clusterv1alpha1.Cluster {
	c := healthy(f.name)
	if f.pull {
		c.Spec.SyncMode = clusterv1alpha1.Pull
	}
	if now < f.seen {
		return *c.obj()
	}
	cond := func(typ string, s metav1.ConditionStatus, since time.Duration) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: "Test", LastTransitionTime: metav1.NewTime(t0.Add(since))}
	}
	ready := cond(clusterv1alpha1.ClusterConditionReady, metav1.ConditionTrue, -time.Hour)
	probe := cond(clusterv1alpha1.ClusterConditionProbeSucceeded, metav1.ConditionFalse, f.start)
	switch {
	case f.pull:
		ready = cond(clusterv1alpha1.ClusterConditionReady, metav1.ConditionUnknown, f.seen)
		probe = cond(clusterv1alpha1.ClusterConditionProbeSucceeded, metav1.ConditionUnknown, f.start)
	case now >= f.seen+failureThreshold:
		ready = cond(clusterv1alpha1.ClusterConditionReady, metav1.ConditionFalse, f.start+failureThreshold)
	}
	c.Status.Conditions = []metav1.Condition{ready, probe}
	return *c.obj()
}

// TestSettlingWindowSeesClustersFailingTogether plays clusters failing
// together at their worst timings, and asks the guard every 100ms about an
// eviction from each cluster seen failing: none may be allowed before
// they are all seen (then no cluster is Ready, and nothing is evicted),
// except where a case says.
func TestSettlingWindowSeesClustersFailingTogether(t *testing.T) {
	sec := func(x float64) time.Duration { return time.Duration(math.Round(x * float64(time.Second))) }
	type flags struct{ p, f, t, g, m float64 }
	defaults := flags{p: 10, f: 30, t: 5, g: 40, m: 5}
	cases := map[string]struct {
		flags    flags
		clusters []failing
		// evicts is the first eviction allowed ("cluster at time"); ""
		// for none.
		evicts string
	}{
		"Pull clusters, last heartbeats 9.9s, 4s and 0s before, the monitor late by M": {
			flags: defaults,
			clusters: []failing{
				{name: "a", pull: true, start: sec(-9.9), seen: sec(35.1)},
				{name: "b", pull: true, start: sec(-4), seen: sec(41)},
				{name: "c", pull: true, start: 0, seen: sec(45)},
			},
		},
		"Push clusters: refused at once, timed out a period later": {
			flags: defaults,
			clusters: []failing{
				{name: "a", start: 0, seen: 0},
				{name: "b", start: sec(10), seen: sec(15)},
				{name: "c", start: sec(9.9), seen: sec(14.9)},
			},
		},
		"Push clusters failing F apart, by timeouts and by a refused connection": {
			flags: defaults,
			clusters: []failing{
				{name: "a", start: 0, seen: sec(5)},
				{name: "b", start: sec(40), seen: sec(45)},
				{name: "c", start: sec(40), seen: sec(40)},
			},
		},
		"Push clusters failing once the first is seen Ready=False, by timeouts: outside the window": {
			flags: defaults,
			clusters: []failing{
				{name: "a", start: 0, seen: sec(5)},
				{name: "b", start: sec(45), seen: sec(50)},
				{name: "c", start: sec(45), seen: sec(50)},
			},
			evicts: "a at 45s",
		},
		"Push and Pull clusters, the defaults": {
			flags: defaults,
			clusters: []failing{
				{name: "a", start: 0, seen: 0},
				{name: "b", start: sec(10), seen: sec(15)},
				{name: "x", pull: true, start: 0, seen: sec(45)},
			},
		},
		"Push clusters probed every second wait for a Pull cluster with the default grace": {
			flags: flags{p: 1, f: 3, t: 5, g: 40, m: 5},
			clusters: []failing{
				{name: "a", start: 0, seen: 0},
				{name: "b", start: sec(1), seen: sec(6)},
				{name: "x", pull: true, start: 0, seen: sec(45)},
			},
		},
		"a Pull cluster waits for a Push cluster failing F later (TestPullMode's flags)": {
			flags: flags{p: 1, f: 3, t: 5, g: 6, m: 1},
			clusters: []failing{
				{name: "x", pull: true, start: sec(-1.4), seen: sec(5.6)},
				{name: "b", start: sec(1), seen: sec(1)},
				{name: "a", start: sec(4), seen: sec(9)},
			},
		},
		"a Pull cluster waits for a Push cluster's timed-out probe a long period later": {
			flags: flags{p: 10, f: 0, t: 5, g: 6, m: 1},
			clusters: []failing{
				{name: "x", pull: true, start: sec(-1.4), seen: sec(5.6)},
				{name: "b", start: 0, seen: 0},
				{name: "a", start: sec(10), seen: sec(15)},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := defaultGuardConfig
			fl := tc.flags
			cfg.Settling = NewSettlingWindows(sec(fl.p), sec(fl.f), sec(fl.t), sec(fl.g), sec(fl.m))
			from, until := tc.clusters[0].seen, tc.clusters[0].seen
			for _, c := range tc.clusters {
				from, until = min(from, c.seen), max(until, c.seen)
			}
			got := ""
		steps:
			for now := from; now <= until; now += 100 * time.Millisecond {
				var views []clusterv1alpha1.Cluster
				for _, c := range tc.clusters {
					views = append(views, c.view(now, sec(fl.f)))
				}
				for _, c := range tc.clusters {
					if now < c.seen {
						continue
					}
					if h := StormGuardHold(views, c.name, cfg, t0.Add(now)); !h.Halted && h.Until.IsZero() {
						got = fmt.Sprintf("%s at %s", c.name, now)
						break steps
					}
				}
			}
			if got != tc.evicts {
				t.Errorf("first eviction allowed: %q, want %q", got, tc.evicts)
			}
		})
	}
}

func TestObserveClusterSuspects(t *testing.T) {
	cases := map[string]struct {
		cluster *clusterv1alpha1.Cluster
		want    clusterHealth
	}{
		"healthy": {
			cluster: healthy("m1").obj(),
			want:    clusterHealth{name: "m1", observed: true, ready: true, readySince: at(-3600)},
		},
		"Ready but failing its probes: a suspect since the first failed probe": {
			cluster: suspect("m1", 5).obj(),
			want:    clusterHealth{name: "m1", observed: true, ready: true, suspect: true, since: at(5)},
		},
		"not Ready: failing since its probes started failing": {
			cluster: failed("m1", 5, 3).obj(),
			want:    clusterHealth{name: "m1", observed: true, since: at(5)},
		},
		"not Ready, probes passing again (coming back): answering since then": {
			cluster: makeCluster("m1").readySince(metav1.ConditionFalse, 8).probe(metav1.ConditionTrue, 20).obj(),
			want:    clusterHealth{name: "m1", observed: true, since: at(8), answering: at(20)},
		},
		"not Ready, probes failing again after passing for a while: since does not move": {
			cluster: makeCluster("m1").readySince(metav1.ConditionFalse, 8).probe(metav1.ConditionFalse, 30).obj(),
			want:    clusterHealth{name: "m1", observed: true, since: at(8)},
		},
		"not Ready without ProbeSucceeded (another writer): since Ready turned False": {
			cluster: makeCluster("m1").readySince(metav1.ConditionFalse, 8).obj(),
			want:    clusterHealth{name: "m1", observed: true, since: at(8)},
		},
		"a Pull cluster whose Lease ran out: failing since its last heartbeat": {
			cluster: func() *clusterv1alpha1.Cluster {
				c := makeCluster("m1").readySince(metav1.ConditionUnknown, 45).probe(metav1.ConditionUnknown, 5)
				c.Spec.SyncMode = clusterv1alpha1.Pull
				return c.obj()
			}(),
			want: clusterHealth{name: "m1", pull: true, observed: true, since: at(5)},
		},
		"never probed": {
			cluster: makeCluster("m1").noConditions().obj(),
			want:    clusterHealth{name: "m1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := observeCluster(tc.cluster); got != tc.want {
				t.Errorf("observeCluster = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestEvictionHold walks the guard's decision for one eviction through
// the ways clusters fail together or alone. The window is lifeboat up's
// test one: probes every 1s, 3s to Ready=False, 5s probe timeout: 9s.
func TestEvictionHold(t *testing.T) {
	cfg := defaultGuardConfig
	cfg.Settling = SettlingWindows{Push: SettlingWindow(time.Second, 3*time.Second, 5*time.Second)}
	type want struct {
		held  bool
		retry time.Duration
		in    string // a part of the reason
	}
	cases := map[string]struct {
		clusters     []*clusterv1alpha1.Cluster
		target       string
		now          int
		allDownEnded int // seconds; 0 means never
		want         want
	}{
		"simultaneous: the first Ready=False sees the others failing their probes, nothing Ready": {
			clusters: []*clusterv1alpha1.Cluster{failed("m1", 0, 3).obj(), suspect("m2", 0).obj(), suspect("m3", 1).obj()},
			target:   "m1", now: 3,
			want: want{held: true, retry: stormGuardHoldRecheck, in: "no cluster is Ready"},
		},
		"simultaneous, past the window: still nothing Ready, still held": {
			clusters: []*clusterv1alpha1.Cluster{failed("m1", 0, 3).obj(), failed("m2", 0, 3).obj(), failed("m3", 1, 3).obj()},
			target:   "m1", now: 60,
			want: want{held: true, retry: stormGuardHoldRecheck, in: "no cluster is Ready"},
		},
		"staggered: the first is not Ready, the last has not failed yet: the window holds": {
			clusters: []*clusterv1alpha1.Cluster{failed("m1", 0, 3).obj(), suspect("m2", 2).obj(), healthy("m3").obj()},
			target:   "m1", now: 3,
			want: want{held: true, retry: 6 * time.Second, in: "settling: m1 started failing"},
		},
		"staggered: the last fails within the first one's window: nothing Ready when it ends": {
			clusters: []*clusterv1alpha1.Cluster{failed("m1", 0, 3).obj(), failed("m2", 2, 3).obj(), suspect("m3", 5).obj()},
			target:   "m1", now: 9,
			want: want{held: true, retry: stormGuardHoldRecheck, in: "no cluster is Ready"},
		},
		"staggered: the second's own window counts from its own failure": {
			clusters: []*clusterv1alpha1.Cluster{failed("m1", 0, 3).obj(), failed("m2", 4, 3).obj(), healthy("m3").obj()},
			target:   "m2", now: 10,
			want: want{held: true, retry: 3 * time.Second, in: "settling: m2"},
		},
		"a single failure waits for the window": {
			clusters: []*clusterv1alpha1.Cluster{failed("m1", 0, 3).obj(), healthy("m2").obj(), healthy("m3").obj()},
			target:   "m1", now: 3,
			want: want{held: true, retry: 6 * time.Second, in: "settling"},
		},
		"a single failure is evicted once the window has passed": {
			clusters: []*clusterv1alpha1.Cluster{failed("m1", 0, 3).obj(), healthy("m2").obj(), healthy("m3").obj()},
			target:   "m1", now: 9,
			want: want{},
		},
		"a cluster recovering during the window: the other failure goes ahead at its end": {
			clusters: []*clusterv1alpha1.Cluster{failed("m1", 0, 3).obj(),
				makeCluster("m2").readySince(metav1.ConditionTrue, -3600).probe(metav1.ConditionTrue, 6).obj(), healthy("m3").obj()},
			target: "m1", now: 9,
			want: want{},
		},
		"a cluster recovering, Ready=False with probes passing again: still not Ready for the count": {
			clusters: []*clusterv1alpha1.Cluster{failed("m1", 0, 3).obj(),
				makeCluster("m2").readySince(metav1.ConditionFalse, 3).probe(metav1.ConditionTrue, 6).obj(), healthy("m3").obj()},
			target: "m1", now: 9,
			want: want{},
		},
		"a not-Ready cluster answering again is not evicted from: it is coming back": {
			clusters: []*clusterv1alpha1.Cluster{makeCluster("m1").readySince(metav1.ConditionFalse, 3).probe(metav1.ConditionTrue, 60).obj(),
				healthy("m2").obj(), healthy("m3").obj()},
			target: "m1", now: 61,
			want: want{held: true, retry: 8 * time.Second, in: "settling"},
		},
		"a not-Ready cluster answering for a whole window without turning Ready is evicted": {
			clusters: []*clusterv1alpha1.Cluster{makeCluster("m1").readySince(metav1.ConditionFalse, 3).probe(metav1.ConditionTrue, 60).obj(),
				healthy("m2").obj(), healthy("m3").obj()},
			target: "m1", now: 69,
			want: want{},
		},
		"probes flapping while not Ready do not restart the window": {
			clusters: []*clusterv1alpha1.Cluster{makeCluster("m1").readySince(metav1.ConditionFalse, 3).probe(metav1.ConditionFalse, 60).obj(),
				healthy("m2").obj(), healthy("m3").obj()},
			target: "m1", now: 61,
			want: want{},
		},
		"two of three down is an ordinary outage once the windows pass": {
			clusters: []*clusterv1alpha1.Cluster{failed("m1", 0, 3).obj(), failed("m2", 1, 3).obj(), healthy("m3").obj()},
			target:   "m2", now: 10,
			want: want{},
		},
		"a taint on a healthy cluster (a person's) waits for nothing": {
			clusters: []*clusterv1alpha1.Cluster{healthy("m1").obj(), failed("m2", 0, 3).obj(), healthy("m3").obj()},
			target:   "m1", now: 1,
			want: want{},
		},
		"a cluster Ready again whose outage taint is still there is not evicted from": {
			clusters: []*clusterv1alpha1.Cluster{makeCluster("m1").readySince(metav1.ConditionTrue, 60).probe(metav1.ConditionTrue, 58).obj(),
				failed("m2", 0, 3).obj(), failed("m3", 0, 3).obj()},
			target: "m1", now: 61,
			want: want{held: true, retry: 8 * time.Second, in: "Ready again"},
		},
		"regions: a region failing staggered waits for its window": {
			clusters: []*clusterv1alpha1.Cluster{failed("eu1", 0, 3).region("eu").obj(), suspect("eu2", 2).region("eu").obj(), healthy("us1").region("us").obj()},
			target:   "eu1", now: 3,
			want: want{held: true, retry: 6 * time.Second, in: "settling"},
		},
		"regions: a whole region down moves once its window has passed": {
			clusters: []*clusterv1alpha1.Cluster{failed("eu1", 0, 3).region("eu").obj(), failed("eu2", 2, 3).region("eu").obj(), healthy("us1").region("us").obj()},
			target:   "eu1", now: 9,
			want: want{},
		},
		"regions: the other region failing its probes too: nothing Ready anywhere": {
			clusters: []*clusterv1alpha1.Cluster{failed("eu1", 0, 3).region("eu").obj(), failed("eu2", 2, 3).region("eu").obj(), suspect("us1", 4).region("us").obj()},
			target:   "eu1", now: 9,
			want: want{held: true, retry: stormGuardHoldRecheck, in: "no cluster is Ready"},
		},
		"after every cluster was down, the ones still down get a fresh window": {
			clusters: []*clusterv1alpha1.Cluster{failed("m1", 0, 3).obj(), failed("m2", 0, 3).obj(), healthy("m3").obj()},
			target:   "m1", now: 64, allDownEnded: 60,
			want: want{held: true, retry: 5 * time.Second, in: "settling"},
		},
		"after every cluster was down, past the fresh window: evicted": {
			clusters: []*clusterv1alpha1.Cluster{failed("m1", 0, 3).obj(), failed("m2", 0, 3).obj(), healthy("m3").obj()},
			target:   "m1", now: 69, allDownEnded: 60,
			want: want{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var hs []clusterHealth
			var target clusterHealth
			for _, c := range tc.clusters {
				h := observeCluster(c)
				hs = append(hs, h)
				if h.name == tc.target {
					target = h
				}
			}
			status := computeStormGuard(hs, cfg)
			gs, _ := status.Group(target.group)
			var ended time.Time
			if tc.allDownEnded != 0 {
				ended = at(tc.allDownEnded)
			}
			got := evictionHold(status, gs, target, ended, at(tc.now), cfg, cfg.Settling.Push)
			if got.held != tc.want.held || got.retryAfter != tc.want.retry || !strings.Contains(got.reason, tc.want.in) {
				t.Errorf("evictionHold = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestStormGuardSettlesAfterEveryClusterWasDown: the guard remembers when
// it saw every cluster down end, and a new guard starts as if it had just
// seen it (a restart errs towards holding).
func TestStormGuardSettlesAfterEveryClusterWasDown(t *testing.T) {
	cfg := defaultGuardConfig
	cfg.Settling = SettlingWindows{Push: 9 * time.Second}
	e := newGuardEnv(t, cfg, failed("m1", -100, 3).obj(), failed("m2", -100, 3).obj(), failed("m3", -100, 3).obj())
	if a := e.admit("rb/x@m1", "m1"); a.Allowed || !strings.Contains(a.Reason, "no cluster is Ready") {
		t.Fatalf("every cluster down: %+v, want held", a)
	}
	e.clock.Step(30 * time.Second)
	back := healthy("m3").obj()
	var stored clusterv1alpha1.Cluster
	if err := e.client.Get(context.Background(), client.ObjectKey{Name: "m3"}, &stored); err != nil {
		t.Fatal(err)
	}
	stored.Status = back.Status
	if err := e.client.Status().Update(context.Background(), &stored); err != nil {
		t.Fatal(err)
	}
	a := e.admit("rb/x@m1", "m1")
	if a.Allowed || a.RetryAfter != 9*time.Second || !strings.Contains(a.Reason, "settling") {
		t.Fatalf("m3 back: %+v, want a fresh 9s window", a)
	}
	evs := e.events()
	if !containsEvent(evs, "Normal", EventReasonStormGuardSettling, "m1") {
		t.Errorf("events = %v, want StormGuardSettling on m1", evs)
	}
	// Asked again within the same window: no second Event.
	e.clock.Step(4 * time.Second)
	if a := e.admit("rb/x@m1", "m1"); a.Allowed || a.RetryAfter != 5*time.Second {
		t.Errorf("within the window: %+v, want held 5s more", a)
	}
	if evs := e.events(); containsEvent(evs, EventReasonStormGuardSettling) {
		t.Errorf("repeated settling Event: %v", evs)
	}
	e.clock.Step(5 * time.Second)
	if a := e.admit("rb/x@m1", "m1"); !a.Allowed {
		t.Errorf("after the window: %+v, want allowed", a)
	}

	// A new guard over the same clusters (a restart) holds for a window.
	restarted, err := NewStormGuard(e.client, nil, e.clock, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err = restarted.Admit(context.Background(), "rb/x@m2", "m2")
	if err != nil {
		t.Fatal(err)
	}
	if a.Allowed || a.RetryAfter != 9*time.Second {
		t.Errorf("after a restart: %+v, want held for a window", a)
	}
}

func TestDescribeStormGuardSuspects(t *testing.T) {
	e := newGuardEnv(t, defaultGuardConfig, failed("m1", 0, 3).obj(), suspect("m2", 1).obj(), healthy("m3").obj())
	got, err := DescribeStormGuard(context.Background(), e.client)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Normal: 2 of 3 clusters not Ready (1 of them still Ready but failing its probes); evicting at up to 50/s"; got != want {
		t.Errorf("DescribeStormGuard = %q, want %q", got, want)
	}
}

func TestReturnTracker(t *testing.T) {
	up := func(name string) clusterHealth { return clusterHealth{name: name, observed: true, ready: true} }
	down := func(name string) clusterHealth { return clusterHealth{name: name, observed: true} }
	type step struct {
		at       int
		clusters []clusterHealth
		allDown  bool
		ended    int // want; -1: zero
	}
	cases := map[string][]step{
		"a new guard starts as if one had just come back": {
			{at: 5, clusters: []clusterHealth{up("m1"), down("m2")}, ended: 5},
			{at: 20, clusters: []clusterHealth{up("m1"), down("m2")}, ended: 5},
		},
		"members returning one by one each give the others a fresh window, once": {
			{at: 0, clusters: []clusterHealth{up("m1"), up("m2"), up("m3")}, ended: 0},
			{at: 10, clusters: []clusterHealth{down("m1"), down("m2"), down("m3")}, allDown: true, ended: 0},
			{at: 40, clusters: []clusterHealth{up("m1"), down("m2"), down("m3")}, ended: 40},
			{at: 45, clusters: []clusterHealth{up("m1"), up("m2"), down("m3")}, ended: 45},
			{at: 46, clusters: []clusterHealth{down("m1"), up("m2"), down("m3")}, ended: 45},
			{at: 47, clusters: []clusterHealth{up("m1"), up("m2"), down("m3")}, ended: 45},
			{at: 52, clusters: []clusterHealth{up("m1"), up("m2"), up("m3")}, ended: 52},
		},
		"returns outside an every-cluster-down episode do not count": {
			{at: 0, clusters: []clusterHealth{up("m1"), up("m2")}, ended: 0},
			{at: 10, clusters: []clusterHealth{down("m1"), up("m2")}, ended: 0},
			{at: 30, clusters: []clusterHealth{up("m1"), up("m2")}, ended: 0},
		},
		"a suspect counts as down, and as back only once it passes its probes": {
			{at: 0, clusters: []clusterHealth{up("m1"), up("m2")}, ended: 0},
			{at: 10, clusters: []clusterHealth{down("m1"), {name: "m2", observed: true, ready: true, suspect: true}}, allDown: true, ended: 0},
			{at: 20, clusters: []clusterHealth{down("m1"), up("m2")}, ended: 20},
		},
		"a deleted cluster leaves the episode without ending it": {
			{at: 0, clusters: []clusterHealth{up("m1")}, ended: 0},
			{at: 10, clusters: []clusterHealth{down("m1"), down("m2")}, allDown: true, ended: 0},
			{at: 20, clusters: []clusterHealth{down("m1")}, allDown: true, ended: 0},
			{at: 30, clusters: []clusterHealth{up("m1"), up("m2")}, ended: 30},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			var r returnTracker
			for _, s := range steps {
				r.observe(s.clusters, s.allDown, at(s.at))
				if !r.ended.Equal(at(s.ended)) {
					t.Errorf("at +%ds: ended = %s, want +%ds", s.at, r.ended.Sub(t0), s.ended)
				}
			}
		})
	}
}

// TestTaintManagerWaitsForTheSettlingWindow: the taint manager asks again
// exactly when the window ends, and evicts then; before, it writes
// nothing.
func TestTaintManagerWaitsForTheSettlingWindow(t *testing.T) {
	e := newTaintManagerEnv(t, nil,
		failed("member1", -5, 3).notReadyNoExecute(-2).obj(), healthy("member2").obj(), healthy("member3").obj(),
		makeBinding("nginx").clusters("member1").obj())
	cfg := defaultGuardConfig
	cfg.Settling = SettlingWindows{Push: 9 * time.Second}
	guard, err := NewStormGuard(e.client, nil, e.clock, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.tm.Guard = guard
	// The guard has been running for a while (a new one holds for a
	// window: TestStormGuardSettlesAfterEveryClusterWasDown).
	e.clock.SetTime(at(-60))
	if _, err := guard.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.clock.SetTime(t0)
	if res := e.reconcile(resourceBindingKind, reqFor(nginx)); res.RequeueAfter != 4*time.Second || e.writes != 0 {
		t.Fatalf("within the window: requeue after %s with %d writes, want 4s and none", res.RequeueAfter, e.writes)
	}
	e.clock.Step(4 * time.Second)
	e.reconcile(resourceBindingKind, reqFor(nginx))
	if got := e.rb(nginx).Spec.Clusters; len(got) != 0 || e.writes == 0 {
		t.Errorf("at the end of the window: clusters %v after %d writes, want member1 evicted", got, e.writes)
	}
}

// TestStormGuardSettlesAPullCluster: the guard gives a Pull cluster its own
// window, from its last heartbeat, and says so in the Event.
func TestStormGuardSettlesAPullCluster(t *testing.T) {
	cfg := defaultGuardConfig
	cfg.Settling = NewSettlingWindows(10*time.Second, 30*time.Second, 5*time.Second, 40*time.Second, 5*time.Second)
	pull := makeCluster("m2").readySince(metav1.ConditionUnknown, 90).probe(metav1.ConditionUnknown, 50)
	pull.Spec.SyncMode = clusterv1alpha1.Pull
	e := newGuardEnv(t, cfg, healthy("m1").obj(), pull.obj(), healthy("m3").obj())
	if _, err := e.guard.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.clock.SetTime(at(100))
	if a := e.admit("rb/x@m2", "m2"); a.Allowed || a.RetryAfter != 5*time.Second || !strings.Contains(a.Reason, "settling: m2") {
		t.Fatalf("within the window: %+v, want held 5s (55s from the heartbeat at +50s)", a)
	}
	if evs := e.events(); !containsEvent(evs, EventReasonStormGuardSettling, "m2", "55s", "--cluster-monitor-grace-period") {
		t.Errorf("events = %v, want StormGuardSettling on m2 explaining its 55s window", evs)
	}
	e.clock.SetTime(at(105))
	if a := e.admit("rb/x@m2", "m2"); !a.Allowed {
		t.Errorf("at the end of the window: %+v, want allowed", a)
	}
}
