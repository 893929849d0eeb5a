package failover

import (
	"fmt"
	"math"
	"time"

	"github.com/spf13/pflag"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/fencing"
)

// ClusterFailoverOptions are the flags of cluster failover: the taint
// manager and its storm guard. The names are Karmada's ("cluster failover"
// flag set) where Karmada has the flag; the storm-guard flags are
// Lifeboat's, named after kube-controller-manager's node-eviction flags.
//
// Defaults that differ from Karmada's:
//   - --enable-no-execute-taint-eviction is true (Karmada: false). NoExecute
//     taints still only come from a ClusterTaintPolicy or a user, and a
//     placement can tolerate them, so cluster failover remains opt-in per
//     cluster and per workload; the flag only removes one of Karmada's three
//     switches.
//   - --resource-eviction-rate is 50/s (Karmada: 0.5/s per worker), so that
//     hundreds of bindings leave a failed cluster in seconds, not minutes.
//     The storm guard is what protects against mass eviction: it slows or
//     stops evictions when many clusters look down at once.
type ClusterFailoverOptions struct {
	// EnableNoExecuteTaintEviction lets the taint manager evict workloads
	// from clusters with NoExecute taints they do not tolerate.
	EnableNoExecuteTaintEviction bool
	// NoExecuteTaintEvictionPurgeMode is the purge mode of bindings without
	// spec.failover.cluster: Gracefully or Directly (old spellings
	// accepted).
	NoExecuteTaintEvictionPurgeMode string
	// ResourceEvictionRate is the evictions per second from the tainted
	// clusters of a healthy cluster group.
	ResourceEvictionRate float64
	// SecondaryResourceEvictionRate is the evictions per second of a large
	// cluster group with many clusters not Ready.
	SecondaryResourceEvictionRate float64
	// UnhealthyClusterThreshold is the share of not-Ready clusters (at
	// least 3) at which a group is partially disrupted.
	UnhealthyClusterThreshold float64
	// LargeClusterNumThreshold: a partially disrupted group with at most
	// this many clusters stops evicting instead of slowing down.
	LargeClusterNumThreshold int
	// GracefulEvictionTimeout is the grace period of eviction tasks that set
	// none: how long a Gracefully task waits for a healthy replacement, and
	// how long a Directly task waits for an unreachable old cluster before
	// the new copy is created anyway.
	GracefulEvictionTimeout time.Duration
	// GracefulEvictionHold is how long the graceful-eviction controller may
	// hold back one binding's clean-up while other failovers are in flight
	// (see Wave); 0 holds nothing.
	GracefulEvictionHold time.Duration
	// FencingStopMargin is how long after its agent fenced it a copy in
	// a Pull cluster counts as stopped: the time the stop takes in the
	// member, and the clocks' disagreement (see internal/fencing).
	FencingStopMargin time.Duration
	// FailoverEventBurst is how many per-workload Events of one kind about
	// one cluster's workloads, or one policy's, are recorded at once before
	// the rest are summarised on the Cluster or the policy (eventbudget);
	// 0 records every Event.
	FailoverEventBurst int
}

// NewClusterFailoverOptions returns the defaults.
func NewClusterFailoverOptions() *ClusterFailoverOptions {
	return &ClusterFailoverOptions{
		EnableNoExecuteTaintEviction:    true,
		NoExecuteTaintEvictionPurgeMode: string(policyv1alpha1.PurgeModeGracefully),
		ResourceEvictionRate:            50,
		SecondaryResourceEvictionRate:   1,
		UnhealthyClusterThreshold:       0.55,
		LargeClusterNumThreshold:        10,
		GracefulEvictionTimeout:         DefaultGracePeriod,
		GracefulEvictionHold:            DefaultGracefulEvictionHold,
		FencingStopMargin:               DefaultFencingStopMargin,
		FailoverEventBurst:              eventbudget.DefaultBurst,
	}
}

// DefaultFencingStopMargin is --fencing-stop-margin's default: the longest
// a fenced copy takes to stop with default pod settings
// (fencing.StopWithin), and 15 s for the member's and the control plane's
// clocks to disagree.
const DefaultFencingStopMargin = fencing.StopWithin + 15*time.Second

// AddFlags registers the options on fs.
func (o *ClusterFailoverOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.EnableNoExecuteTaintEviction, "enable-no-execute-taint-eviction", o.EnableNoExecuteTaintEviction,
		"Evict workloads from clusters with NoExecute taints their placement does not tolerate (cluster failover). Lifeboat's default is true (Karmada's: false).")
	fs.StringVar(&o.NoExecuteTaintEvictionPurgeMode, "no-execute-taint-eviction-purge-mode", o.NoExecuteTaintEvictionPurgeMode,
		"Purge mode of a NoExecute eviction when the binding has no spec.failover.cluster: Gracefully or Directly.")
	fs.Float64Var(&o.ResourceEvictionRate, "resource-eviction-rate", o.ResourceEvictionRate,
		"Evictions per second from the tainted clusters of a cluster group (region) in state Normal; 0 evicts nothing. Karmada's default is 0.5.")
	fs.Float64Var(&o.SecondaryResourceEvictionRate, "secondary-resource-eviction-rate", o.SecondaryResourceEvictionRate,
		"Evictions per second of a cluster group with more than --large-cluster-num-threshold clusters in state PartialDisruption.")
	fs.Float64Var(&o.UnhealthyClusterThreshold, "unhealthy-cluster-threshold", o.UnhealthyClusterThreshold,
		"Share of not-Ready clusters (and at least 3) at which a cluster group is in state PartialDisruption and evictions slow down or stop.")
	fs.IntVar(&o.LargeClusterNumThreshold, "large-cluster-num-threshold", o.LargeClusterNumThreshold,
		"A cluster group in state PartialDisruption with at most this many clusters stops evicting instead of slowing down.")
	fs.DurationVar(&o.GracefulEvictionTimeout, "graceful-eviction-timeout", o.GracefulEvictionTimeout,
		"Grace period of eviction tasks that set no gracePeriodSeconds: how long a Gracefully eviction waits for a healthy replacement, and how long a Directly eviction waits for an unreachable old cluster before creating the new copy anyway (Karmada's flag, same default).")
	fs.DurationVar(&o.FencingStopMargin, "fencing-stop-margin", o.FencingStopMargin,
		"A copy in a Pull cluster that its agent fenced (scaled to zero or deleted, once it could not renew the cluster's Lease for the lease duration plus the copy's toleration) counts as stopped this long after that; a Directly failover then creates the new copy without waiting for the old one's deletion. Cover the time the stop takes in the member: up to 5 s for the agent's next search of the member, the 10 s it tries a failing ScaleToZero rule before it deletes the copy, the pods' termination (30 s by default), and the difference between the member's and the control plane's clocks; a margin under those 45 s is accepted with a warning in the log.")
	fs.IntVar(&o.FailoverEventBurst, "failover-event-burst", o.FailoverEventBurst,
		fmt.Sprintf("How many Events of one kind about one cluster's workloads, or one policy's, are recorded on each workload's objects at once (on bindings and templates: an eviction from the cluster, the new placement, the task closed, the eviction cancelled, the replacement healthy; on Works: applied to the cluster, or its clean-up there waiting; on templates: the policy applied, and with bindings a placement without an eviction task); past it one more every %s, and the rest are counted in an Event on the Cluster or the policy %s after the first one held back (later ones of the same kind twice as far apart each time, at most 5 minutes), so that a mass failover or rollout does not flood the API server or lose Events in the recorder's queue. 0 records every Event. Lifeboat's flag.",
			eventbudget.DefaultRefill, eventbudget.DefaultSummaryPeriod))
	fs.DurationVar(&o.GracefulEvictionHold, "graceful-eviction-hold", o.GracefulEvictionHold,
		"How long a workload's clean-up after a failover (its failover history, closing a Gracefully eviction task and so deleting the old copy) may wait while other evicted workloads still wait for their replacement, so that a mass failover places replacements first; 0.1 s longer for each eviction still waiting for the scheduler, up to ten times as long. 0 never waits. Lifeboat's flag.")
}

// Warnings are flag values that work but weaken a promise, each said in a
// sentence for the log.
func (o *ClusterFailoverOptions) Warnings() []string {
	var out []string
	if o.FencingStopMargin < fencing.StopWithin {
		out = append(out, fmt.Sprintf("--fencing-stop-margin %s is shorter than the %s a fenced copy may take to stop (the agent's next search of the member, %s; its %s retry of a failing ScaleToZero; a pod's default %s termination): "+
			"such a copy may still run when the control plane counts it stopped and starts its replacement", o.FencingStopMargin, fencing.StopWithin, fencing.MaxScan, fencing.ScaleRetry, fencing.PodTermination))
	}
	return out
}

// Validate reports flag values that cannot work.
func (o *ClusterFailoverOptions) Validate() error {
	switch policyv1alpha1.NormalizePurgeMode(policyv1alpha1.PurgeMode(o.NoExecuteTaintEvictionPurgeMode)) {
	case policyv1alpha1.PurgeModeGracefully, policyv1alpha1.PurgeModeDirectly:
	default:
		return fmt.Errorf("--no-execute-taint-eviction-purge-mode must be Gracefully or Directly, got %q", o.NoExecuteTaintEvictionPurgeMode)
	}
	switch {
	case o.GracefulEvictionTimeout <= 0:
		return fmt.Errorf("--graceful-eviction-timeout must be positive, got %s", o.GracefulEvictionTimeout)
	case o.FencingStopMargin < 0:
		return fmt.Errorf("--fencing-stop-margin must not be negative, got %s", o.FencingStopMargin)
	case o.GracefulEvictionHold < 0:
		return fmt.Errorf("--graceful-eviction-hold must not be negative, got %s", o.GracefulEvictionHold)
	case math.IsNaN(o.ResourceEvictionRate) || math.IsInf(o.ResourceEvictionRate, 0):
		return fmt.Errorf("--resource-eviction-rate must be a finite number, got %g", o.ResourceEvictionRate)
	case math.IsNaN(o.SecondaryResourceEvictionRate) || math.IsInf(o.SecondaryResourceEvictionRate, 0):
		return fmt.Errorf("--secondary-resource-eviction-rate must be a finite number, got %g", o.SecondaryResourceEvictionRate)
	case o.ResourceEvictionRate < 0:
		return fmt.Errorf("--resource-eviction-rate must not be negative, got %g", o.ResourceEvictionRate)
	case o.SecondaryResourceEvictionRate < 0:
		return fmt.Errorf("--secondary-resource-eviction-rate must not be negative, got %g", o.SecondaryResourceEvictionRate)
	case !(o.UnhealthyClusterThreshold > 0 && o.UnhealthyClusterThreshold <= 1): // NaN too
		return fmt.Errorf("--unhealthy-cluster-threshold must be in (0, 1], got %g", o.UnhealthyClusterThreshold)
	case o.FailoverEventBurst < 0:
		return fmt.Errorf("--failover-event-burst must not be negative, got %d", o.FailoverEventBurst)
	case o.LargeClusterNumThreshold < 0:
		return fmt.Errorf("--large-cluster-num-threshold must not be negative, got %d", o.LargeClusterNumThreshold)
	}
	return nil
}

// PurgeMode is the normalised default purge mode.
func (o *ClusterFailoverOptions) PurgeMode() policyv1alpha1.PurgeMode {
	return policyv1alpha1.NormalizePurgeMode(policyv1alpha1.PurgeMode(o.NoExecuteTaintEvictionPurgeMode))
}

// StormGuardConfig returns the storm guard's part of the options.
func (o *ClusterFailoverOptions) StormGuardConfig() StormGuardConfig {
	return StormGuardConfig{
		Rate:                o.ResourceEvictionRate,
		SecondaryRate:       o.SecondaryResourceEvictionRate,
		UnhealthyThreshold:  o.UnhealthyClusterThreshold,
		LargeGroupThreshold: o.LargeClusterNumThreshold,
	}
}
