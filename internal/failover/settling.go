package failover

import (
	"fmt"
	"time"
)

// The storm guard's settling window. Clusters that fail together (a
// control plane cut off from its members, a power cut) are not seen to
// fail together: each is probed on its own schedule, so their Ready
// conditions turn False up to a probe period (and a probe timeout) apart,
// and a guard deciding on Ready alone would evict the first one's
// workloads onto clusters about to fail. So the guard
//
//   - counts a cluster that is still Ready but whose probes fail (its
//     ProbeSucceeded condition is False: a "suspect") as not Ready, and
//   - evicts from a failing cluster only once the settling window has
//     passed since its probes started failing, by which time every cluster
//     that failed at about the same moment is failing its probes too.
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

// SettlingWindow is the settling window for the given cluster health
// flags: --cluster-status-update-frequency (P) + --cluster-failure-threshold
// (F) + --cluster-probe-timeout (T). A cluster failing at the same moment
// as another has its first failed probe at most P + T after that one's
// (it waits up to P for its next probe, which then times out), and F more
// lets clusters that fail up to F later be seen too; the window ends
// P + T after the first cluster's Ready turned False at the earliest, so a
// single failure fails over at most that much later. Non-positive parts
// count as 0.
func SettlingWindow(probePeriod, failureThreshold, probeTimeout time.Duration) time.Duration {
	return max(probePeriod, 0) + max(failureThreshold, 0) + max(probeTimeout, 0)
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
//  2. target is failing and its settling window has not passed
//     (settlingUntil): held until the window ends;
//  3. otherwise not held: the group's token bucket paces it.
//
// Suspects count as not Ready in status (computeStormGuard), so a cluster
// that is still Ready but failing its probes already tips rule 1.
func evictionHold(status StormGuardStatus, gs GroupStatus, target clusterHealth, allDownEnded, now time.Time, cfg StormGuardConfig) hold {
	if gs.Rate <= 0 {
		h := hold{held: true, retryAfter: stormGuardHoldRecheck}
		switch {
		case status.AllClustersDown:
			h.reason = "no cluster is Ready: the control plane may be the one cut off, so nothing is evicted"
		case gs.State == GroupPartialDisruption && cfg.Rate > 0:
			h.reason = fmt.Sprintf("%s: %s not Ready in a group of %d or fewer clusters, evictions stop", groupName(gs.Name), countOf(gs.NotReady, len(gs.Clusters)), cfg.LargeGroupThreshold)
		default:
			h.reason = "the eviction rate is 0"
		}
		return h
	}
	until := settlingUntil(target, allDownEnded, now, cfg.SettlingWindow)
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
