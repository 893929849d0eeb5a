package failover

import (
	"fmt"
	"time"
)

// The storm guard's settling window. Clusters that fail together (a
// control plane cut off from its members, a power cut) are not seen to
// fail together: each Push cluster is probed on its own schedule, so their
// Ready conditions turn False up to a probe period (and a probe timeout)
// apart, and a Pull cluster is only seen failing once its Lease is a grace
// period old; a guard deciding on Ready alone would evict the first one's
// workloads onto clusters about to fail. So the guard
//
//   - counts a cluster that is still Ready but whose probes fail (its
//     ProbeSucceeded condition is not True: a "suspect") as not Ready, and
//   - evicts from a failing cluster only once its settling window has
//     passed since it started failing, by which time every cluster that
//     failed at about the same moment is seen failing too.
//
// Both come from the Cluster objects (conditions and their
// lastTransitionTime), so a restart changes nothing. So does the rule that
// a not-Ready cluster whose probes pass again is not evicted from for a
// window: it answers, and is coming back. The one thing kept in memory is
// the last time every cluster was down (returnTracker): each of those
// clusters that comes back gives the ones still down a fresh window, so
// that members returning one after another from a partition are not
// evicted onto the first to return. A new guard (a restart, a new leader)
// starts as if the failing clusters had been down together and one had
// just come back, erring towards holding.
//
// How long the window is depends on how each kind of cluster is seen
// failing (SettlingWindows). Times in the API are whole seconds, cut
// down, so a window may end up to a second before the bound it is made
// of; the bounds below are worst cases that leave more than that in
// practice (a Push cluster failing at the same moment as another is seen
// F before the end of its window; the lease monitor finds a Lease too old
// when its grace ends, not M later).

// SettlingWindow is the settling window of Push clusters, for the given
// cluster health flags: --cluster-status-update-frequency (P) +
// --cluster-failure-threshold (F) + --cluster-probe-timeout (T), counted
// from the start of the cluster's first failed probe (the
// lastTransitionTime of its ProbeSucceeded condition: the status
// controller takes the time before it probes, not when the probe fails).
// Every cluster failing up to F after it is seen failing its probes by the
// end of the window: such a cluster's first failed probe starts at most P
// after it failed (its probes start P apart) and fails at most T after it
// started (T when it times out, as in a network partition; at once when
// the connection is refused), so it is written at most F + P + T after
// the first cluster failed, and the first one's first failed probe started
// no earlier than that failure. How the first cluster's failure shows does
// not matter: a timeout delays when its failure is written, not the start
// its window counts from. F is counted from the failure, not from the
// first cluster's Ready=False: that is written F after its first failed
// probe started, plus T when that probe times out, so a cluster failing
// only once the first is seen Ready=False can fall outside the window
// when the failures show as timeouts. A single failure fails over at most
// P + T after its Ready turned False. Non-positive parts count as 0.
func SettlingWindow(probePeriod, failureThreshold, probeTimeout time.Duration) time.Duration {
	return max(probePeriod, 0) + max(failureThreshold, 0) + max(probeTimeout, 0)
}

// PullRenewInterval is the longest time the guard assumes between two
// renewals of a Pull cluster's Lease by its agent: a quarter of
// --cluster-monitor-grace-period, the ratio of Karmada's defaults (a 40 s
// Lease renewed every 40 s × 0.25 = 10 s, against a 40 s grace). Agents
// renewing less often make Pull clusters failing together look further
// apart than the settling window allows for.
func PullRenewInterval(monitorGracePeriod time.Duration) time.Duration {
	return max(monitorGracePeriod, 0) / 4
}

// PullSettlingWindow is the settling window of Pull clusters among Pull
// clusters only, for the lease monitor's flags:
// --cluster-monitor-grace-period (G) + --cluster-monitor-period (M) +
// PullRenewInterval (R = G/4), counted from the cluster's last heartbeat
// (the lastTransitionTime of the ProbeSucceeded=Unknown the lease monitor
// writes). A Pull cluster whose agent went silent shows no sign of failing
// until the monitor finds its Lease more than G old. Of the Pull clusters
// failing at the same moment t0, the first one's window counts from its
// last heartbeat, which is after t0 − R; the last one is seen by t0 + G +
// M (its last heartbeat is at most t0, and the monitor checks every Lease
// when its grace ends and at least every M). So R + G + M sees them all.
// Unlike the Push window it leaves no room on purpose for failures later
// than the first one's: Pull clusters failing apart are seen together only
// as far as the spread of their heartbeats and the monitor's promptness
// leave. A Pull cluster whose agent is up but whose member fails is
// reported by the agent's own probes, as a Push cluster is, within the
// agent's probe period and timeout: well within G + M with the defaults.
// Non-positive parts count as 0.
func PullSettlingWindow(monitorGracePeriod, monitorPeriod time.Duration) time.Duration {
	return max(monitorGracePeriod, 0) + max(monitorPeriod, 0) + PullRenewInterval(monitorGracePeriod)
}

// SettlingWindows are the settling windows of both kinds of cluster. A
// cluster's window must last from when it counts as failing until every
// cluster failing with it is seen failing. Each kind has a lead, how long
// before its failure a cluster's window may start (Push: 0, its first
// failed probe starts after the failure; Pull: R, from its last
// heartbeat), and a reach, how long after a failure at t0 every cluster of
// that kind failing with it is seen (Push: P + F + T, which sees Push
// clusters failing up to F later too; Pull: G + M). A cluster's window is
// its lead plus the longest reach of the kinds of cluster the guard sees
// (of):
//
//   - only Push clusters: P + F + T, the Push window;
//   - only Pull clusters: R + G + M, the Pull window;
//   - both: max(P + F + T, G + M) for a Push cluster, and R + max(P + F +
//     T, G + M) for a Pull cluster.
//
// Giving every cluster the longer of the two windows would not be enough:
// a Pull cluster's window starts up to R before the failure, so when P + F
// + T is longer than G + M it would end before Push clusters failing with
// it are all seen.
type SettlingWindows struct {
	// Push is the Push window, SettlingWindow.
	Push time.Duration
	// Pull is the Pull window, PullSettlingWindow. 0 when the lease
	// monitor's flags are unknown (the settings of a controller manager
	// without Pull clusters): Pull clusters then have the Push window.
	Pull time.Duration
	// PullRenewInterval is the part of Pull before the failure, the lead
	// of Pull clusters (PullRenewInterval).
	PullRenewInterval time.Duration
}

// NewSettlingWindows returns the settling windows for the cluster health
// flags: --cluster-status-update-frequency, --cluster-failure-threshold and
// --cluster-probe-timeout for Push clusters, --cluster-monitor-grace-period
// and --cluster-monitor-period for Pull clusters.
func NewSettlingWindows(probePeriod, failureThreshold, probeTimeout, monitorGracePeriod, monitorPeriod time.Duration) SettlingWindows {
	return SettlingWindows{
		Push:              SettlingWindow(probePeriod, failureThreshold, probeTimeout),
		Pull:              PullSettlingWindow(monitorGracePeriod, monitorPeriod),
		PullRenewInterval: PullRenewInterval(monitorGracePeriod),
	}
}

// clusterKinds says which kinds of cluster the guard sees.
type clusterKinds struct{ push, pull bool }

func kindsOf(clusters []clusterHealth) clusterKinds {
	var k clusterKinds
	for _, c := range clusters {
		if c.pull {
			k.pull = true
		} else {
			k.push = true
		}
	}
	return k
}

// of is the settling window of a cluster, a Pull one or not, among the
// kinds of cluster seen: its lead plus the longest reach of those kinds
// (see SettlingWindows).
func (w SettlingWindows) of(pull bool, seen clusterKinds) time.Duration {
	if w.Pull <= 0 {
		return w.Push
	}
	var reach time.Duration
	if seen.push || !pull {
		reach = w.Push
	}
	if seen.pull || pull {
		reach = max(reach, w.Pull-w.PullRenewInterval)
	}
	if pull {
		return w.PullRenewInterval + reach
	}
	return reach
}

// explain says how the window of a cluster follows from the flags, for
// the StormGuardSettling Event.
func (w SettlingWindows) explain(pull bool, seen clusterKinds) string {
	const push = "--cluster-status-update-frequency + --cluster-failure-threshold + --cluster-probe-timeout"
	const lease = "--cluster-monitor-grace-period + --cluster-monitor-period"
	const renew = "a quarter of --cluster-monitor-grace-period (its agent's longest assumed renew interval)"
	switch {
	case w.Pull <= 0 || !pull && !seen.pull:
		return push + " after its probes started failing"
	case !pull:
		return "the longer of " + push + " and, for the Pull clusters, " + lease + ", after its probes started failing"
	case !seen.push:
		return lease + " + " + renew + ", after its agent's last heartbeat"
	}
	return renew + " + the longer of " + lease + " and, for the Push clusters, " + push + ", after it started failing"
}

// settlingUntil is when evictions from the cluster c may start, or the
// zero time when they need not wait (now is past it, or nothing holds
// them):
//
//  1. a cluster that was never probed, or that is Ready and passing its
//     probes, is not failing: its NoExecute taints (a person's, a custom
//     policy's) are not about its health and wait for nothing; except for a
//     window after it turned Ready, while the taints of its outage are
//     being removed (an eviction decided in between would move workloads
//     off a cluster that is back);
//  2. a failing cluster (not Ready, or suspect) waits until window after it
//     started failing (clusterHealth.since);
//  3. a not-Ready cluster whose probes pass again waits until window after
//     they started passing: it is coming back (Ready turns True after
//     --cluster-success-threshold), and if its probes fail again before,
//     rule 2 applies with its unchanged since;
//  4. and every failing cluster waits until window after the last return
//     of a cluster that was down when every cluster was (allDownEnded;
//     zero when never).
func settlingUntil(c clusterHealth, allDownEnded, now time.Time, window time.Duration) time.Time {
	if window <= 0 || !c.observed {
		return time.Time{}
	}
	if c.ready && !c.suspect {
		if until := c.readySince.Add(window); now.Before(until) {
			return until
		}
		return time.Time{}
	}
	until := c.since.Add(window)
	for _, t := range []time.Time{c.answering, allDownEnded} {
		if !t.IsZero() && t.Add(window).After(until) {
			until = t.Add(window)
		}
	}
	if !now.Before(until) {
		return time.Time{}
	}
	return until
}

// hold is the guard's decision to hold one eviction, before pacing.
type hold struct {
	held       bool
	retryAfter time.Duration
	reason     string
	// settlingUntil is the end of the settling window when that is what
	// holds the eviction.
	settlingUntil time.Time
}

// evictionHold decides whether the guard holds an eviction from target, a
// cluster of the group gs, given every group's status:
//
//  1. the group's rate is 0 (no cluster Ready anywhere; a small group
//     partially disrupted; --resource-eviction-rate 0): held, and asked
//     again every stormGuardHoldRecheck (cluster health changes do not
//     enqueue the held bindings);
//  2. target is failing and its settling window, window (see
//     SettlingWindows.of), has not passed (settlingUntil): held until the
//     window ends;
//  3. otherwise not held: the group's token bucket paces it.
//
// Suspects count as not Ready in status (computeStormGuard), so a cluster
// that is still Ready but failing its probes already tips rule 1.
func evictionHold(status StormGuardStatus, gs GroupStatus, target clusterHealth, allDownEnded, now time.Time, cfg StormGuardConfig, window time.Duration) hold {
	if gs.Rate <= 0 {
		h := hold{held: true, retryAfter: stormGuardHoldRecheck}
		switch {
		case status.AllClustersDown:
			h.reason = "no cluster is Ready: the control plane may be the one cut off, so nothing is evicted"
		case gs.FleetCapped:
			h.reason = fmt.Sprintf("%s not Ready in the whole control plane: %s", countOf(status.NotReady, status.Total), fleetCapReason(gs, cfg))
		case gs.State == GroupPartialDisruption && cfg.Rate > 0:
			h.reason = fmt.Sprintf("%s: %s not Ready in a group of %d or fewer clusters, evictions stop", groupName(gs.Name), countOf(gs.NotReady, len(gs.Clusters)), cfg.LargeGroupThreshold)
		default:
			h.reason = "the eviction rate is 0"
		}
		return h
	}
	until := settlingUntil(target, allDownEnded, now, window)
	if until.IsZero() {
		return hold{}
	}
	reason := fmt.Sprintf("settling: %s started failing at %s; evictions from it wait until %s to see whether other clusters fail too",
		target.name, target.since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
	if target.ready && !target.suspect {
		reason = fmt.Sprintf("settling: %s is Ready again since %s; evictions from it wait until %s while the taints of its outage go",
			target.name, target.readySince.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
	}
	return hold{held: true, retryAfter: until.Sub(now), reason: reason, settlingUntil: until}
}

// returnTracker remembers the clusters that were down the last time no
// cluster was Ready, until each is back, and when the last of them came
// back. It is in memory: a new guard starts as if every failing cluster had
// been down with the others and one had just come back.
type returnTracker struct {
	seen bool
	// down are the clusters of the episode not back yet.
	down map[string]bool
	// ended is when the last of them came back (the first observation
	// counts as one); zero when never.
	ended time.Time
}

// observe updates the tracker with every cluster's health at now; allDown
// is that no cluster is Ready:
//
//  1. the first observation starts an episode with every failing cluster,
//     ended now;
//  2. while no cluster is Ready, every failing cluster joins the episode;
//  3. a cluster of the episode that is Ready and passing its probes again
//     leaves it, and ended becomes now; one that is gone leaves it too.
//
// Each cluster ends the episode at most once, so the windows it gives are
// bounded by one window per cluster.
func (r *returnTracker) observe(clusters []clusterHealth, allDown bool, now time.Time) {
	if r.down == nil {
		r.down = map[string]bool{}
	}
	if !r.seen || allDown {
		for _, c := range clusters {
			if c.observed && (!c.ready || c.suspect) {
				r.down[c.name] = true
			}
		}
	}
	if !r.seen {
		r.seen, r.ended = true, now
		return
	}
	present := make(map[string]bool, len(clusters))
	for _, c := range clusters {
		present[c.name] = true
		if r.down[c.name] && c.ready && !c.suspect {
			delete(r.down, c.name)
			r.ended = now
		}
	}
	for name := range r.down {
		if !present[name] {
			delete(r.down, name)
		}
	}
}
