package cluster

import (
	"math"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlapDamping configures how a cluster whose Ready condition keeps failing
// is kept out of new placements. A cluster that fails and recovers once is
// trusted again as soon as it is Ready; one that failed at least twice
// within Window is flapping, and after it recovers it stays out of new
// placements for Hold, doubled for each further failure within Window, at
// most MaxHold. Without it, every recovery of a flapping member would
// receive new copies (a Duplicated workload's, for one) that its next
// failure evicts again.
type FlapDamping struct {
	// Window is how far back failures count (--cluster-flap-window).
	Window time.Duration
	// Hold is the hold after the second failure within Window
	// (--cluster-flap-hold); 0 turns damping off.
	Hold time.Duration
	// MaxHold bounds the hold (--cluster-flap-max-hold).
	MaxHold time.Duration
}

// maxRecordedFailures bounds the failures kept in the
// cluster.lifeboat.dev/ready-failures annotation. The hold doubles per
// failure and reaches MaxHold after a few (six with the defaults), so
// older ones never change a decision; the bound only keeps the annotation
// small whatever the flags.
const maxRecordedFailures = 16

// parseFailures reads the ready-failures annotation: RFC 3339 times,
// comma-separated. Entries that do not parse are dropped (the annotation
// is user-editable); the result is sorted and without duplicates.
func parseFailures(s string) []time.Time {
	var out []time.Time
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, f)
		if err != nil {
			continue
		}
		out = append(out, t.UTC())
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return slices.CompactFunc(out, func(a, b time.Time) bool { return a.Equal(b) })
}

// formatFailures writes the ready-failures annotation ("" for none).
func formatFailures(failures []time.Time) string {
	parts := make([]string, 0, len(failures))
	for _, f := range failures {
		parts = append(parts, f.UTC().Format(time.RFC3339))
	}
	return strings.Join(parts, ",")
}

// flapDecision is what flap damping wants for one cluster.
type flapDecision struct {
	// failures is the record to keep in the annotation.
	failures []time.Time
	// damped: the cluster must carry the flapping NoSchedule taint.
	damped bool
	// recent is the number of failures within the window that decided.
	recent int
	// hold is the hold after recovery for that number of failures.
	hold time.Duration
	// until is when the damping ends; zero while the cluster is not Ready
	// (it ends hold after the recovery).
	until time.Time
}

// decideFlapDamping is the flap-damping rule for a cluster with the
// recorded failures and the Ready condition ready (nil when missing), at
// now. down says that Ready was already not True, with the other status,
// at the controller's last look (wasDown: the cluster carries the taint it
// keeps for that status):
//
//  1. With Hold 0 damping is off: nothing is recorded or damped.
//  2. A Ready condition that is not True is a failure at its
//     lastTransitionTime, recorded once (the annotation holds recorded
//     failures, so a restart neither loses nor doubles one), unless the
//     cluster was down already: False turning Unknown (an agent's report,
//     then its Lease running out) is the same outage, not a second one.
//  3. Failures after now (clock skew, a hand edit) are ignored, and
//     failures too old to matter (before now - Window - MaxHold) and all
//     but the latest maxRecordedFailures are dropped.
//  4. The failures that count are those within Window up to the latest
//     one (not Ready) or up to the recovery, Ready's lastTransitionTime
//     (Ready).
//  5. Fewer than two: not damped. Otherwise the hold is Hold doubled for
//     each failure past the second, at most MaxHold: a cluster that is not
//     Ready is damped (it will need the hold once it recovers), a Ready one
//     while now is before its recovery + the hold.
//  6. Without a Ready condition nothing is damped (a new cluster).
func decideFlapDamping(recorded []time.Time, ready *metav1.Condition, down bool, now time.Time, cfg FlapDamping) flapDecision {
	if cfg.Hold <= 0 {
		return flapDecision{failures: recorded}
	}
	failures := make([]time.Time, 0, len(recorded)+1)
	oldest := now.Add(-cfg.Window - cfg.MaxHold)
	for _, f := range recorded {
		if !f.After(now) && !f.Before(oldest) {
			failures = append(failures, f)
		}
	}
	if ready == nil {
		return flapDecision{failures: lastFailures(failures)}
	}
	at := ready.LastTransitionTime.Time.UTC().Truncate(time.Second)
	notReady := ready.Status != metav1.ConditionTrue
	if notReady && !down && !at.After(now) && !at.Before(oldest) && !slices.ContainsFunc(failures, at.Equal) {
		failures = append(failures, at)
		slices.SortFunc(failures, func(a, b time.Time) int { return a.Compare(b) })
	}
	failures = lastFailures(failures)

	end := at
	if notReady && len(failures) > 0 {
		end = failures[len(failures)-1]
	}
	recent := 0
	for _, f := range failures {
		if !f.After(end) && !f.Before(end.Add(-cfg.Window)) {
			recent++
		}
	}
	d := flapDecision{failures: failures, recent: recent}
	if recent < 2 {
		return d
	}
	d.hold = flapHold(recent, cfg)
	if notReady {
		d.damped = true
		return d
	}
	d.until = at.Add(d.hold)
	d.damped = now.Before(d.until)
	return d
}

// lastFailures keeps the latest maxRecordedFailures of sorted failures.
func lastFailures(failures []time.Time) []time.Time {
	if len(failures) > maxRecordedFailures {
		return failures[len(failures)-maxRecordedFailures:]
	}
	return failures
}

// flapHold is Hold doubled for each of n failures past the second, at
// most MaxHold (without overflowing, whatever the flags).
func flapHold(n int, cfg FlapDamping) time.Duration {
	h := cfg.Hold
	for i := 2; i < n && h < cfg.MaxHold; i++ {
		if h > math.MaxInt64/2 {
			return cfg.MaxHold
		}
		h *= 2
	}
	return min(h, cfg.MaxHold)
}
