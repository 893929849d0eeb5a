package cluster

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Options configure the cluster controllers. Flag names follow Karmada's
// controller-manager where it has one.
type Options struct {
	// StatusUpdateFrequency is how often each member is probed.
	StatusUpdateFrequency time.Duration
	// FailureThreshold is how long a not-True observation must persist
	// before Ready turns from True to False.
	FailureThreshold time.Duration
	// SuccessThreshold is how long a True observation must persist before
	// Ready turns True again.
	SuccessThreshold time.Duration
	// ProbeTimeout bounds each request of a probe; collecting the summaries
	// may take three times as long.
	ProbeTimeout time.Duration
	// CollectInterval is how often the version, API enablements and the
	// node and resource summaries of a Ready member are refreshed; the Ready
	// probe itself runs every StatusUpdateFrequency.
	CollectInterval time.Duration
	// EnableResourceModeling turns on nodeSummary and resourceSummary (it
	// watches the member's non-terminal pods, keeping only their requests;
	// the summaries are refreshed every CollectInterval).
	EnableResourceModeling bool
	// DeletionGracePeriod bounds how long a deleted Cluster waits for the
	// Works of its execution namespace to be cleaned up while its member is
	// Ready. An unready member is never waited for.
	DeletionGracePeriod time.Duration
	// ConcurrentSyncs is the number of Clusters each controller handles at
	// once. Probes of different clusters run in parallel up to this number.
	ConcurrentSyncs int
	// FlapDamping keeps a cluster whose Ready condition keeps failing out
	// of new placements for a while after it recovers.
	FlapDamping FlapDamping
	// MonitorPeriod is the longest time between two checks of a Pull
	// cluster's Lease by the lease monitor (a check also follows every
	// change of the Cluster or its Lease, and the end of a grace period).
	MonitorPeriod time.Duration
	// MonitorGracePeriod is how long the agent of a Pull cluster may go
	// without renewing its Lease before the cluster's Ready condition is
	// set to Unknown.
	MonitorGracePeriod time.Duration
	// StartupGracePeriod replaces MonitorGracePeriod for a Pull cluster
	// whose agent never renewed its Lease nor reported Ready, counted from
	// the cluster's creation (or its Lease's, when later).
	StartupGracePeriod time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		StatusUpdateFrequency:  10 * time.Second,
		FailureThreshold:       30 * time.Second,
		SuccessThreshold:       30 * time.Second,
		ProbeTimeout:           5 * time.Second,
		CollectInterval:        30 * time.Second,
		EnableResourceModeling: true,
		DeletionGracePeriod:    time.Minute,
		ConcurrentSyncs:        5,
		FlapDamping: FlapDamping{
			Window:  10 * time.Minute,
			Hold:    time.Minute,
			MaxHold: 10 * time.Minute,
		},
		MonitorPeriod:      5 * time.Second,
		MonitorGracePeriod: 40 * time.Second,
		StartupGracePeriod: time.Minute,
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.StatusUpdateFrequency, "cluster-status-update-frequency", o.StatusUpdateFrequency, "How often each member cluster's /readyz is probed and its status updated.")
	fs.DurationVar(&o.FailureThreshold, "cluster-failure-threshold", o.FailureThreshold, "How long a member must keep failing its probe before its Ready condition turns False.")
	fs.DurationVar(&o.SuccessThreshold, "cluster-success-threshold", o.SuccessThreshold, "How long a member must keep passing its probe before its Ready condition turns True again.")
	fs.DurationVar(&o.ProbeTimeout, "cluster-probe-timeout", o.ProbeTimeout, "Timeout of each health-probe request to a member cluster.")
	fs.DurationVar(&o.CollectInterval, "cluster-status-collect-interval", o.CollectInterval, "How often the version, API enablements, node and resource summaries of a Ready member are refreshed.")
	fs.BoolVar(&o.EnableResourceModeling, "enable-cluster-resource-modeling", o.EnableResourceModeling, "Collect nodeSummary and resourceSummary (watches the member's nodes and non-terminal pods, keeping only what the summaries read).")
	fs.DurationVar(&o.DeletionGracePeriod, "cluster-deletion-grace-period", o.DeletionGracePeriod, "How long a deleted Cluster waits for its Works to be cleaned up from a Ready member before its finalizer is removed anyway.")
	fs.IntVar(&o.ConcurrentSyncs, "concurrent-cluster-syncs", o.ConcurrentSyncs, "Number of Clusters each cluster controller reconciles concurrently (the status controller's probes run apart, one per Cluster).")
	fs.DurationVar(&o.FlapDamping.Window, "cluster-flap-window", o.FlapDamping.Window, "A member whose Ready condition turned False at least twice within this window is flapping: once Ready again, it gets the cluster.lifeboat.dev/flapping:NoSchedule taint for --cluster-flap-hold.")
	fs.DurationVar(&o.FlapDamping.Hold, "cluster-flap-hold", o.FlapDamping.Hold, "How long a flapping member stays out of new placements after it is Ready again; doubled for each further failure within --cluster-flap-window, up to --cluster-flap-max-hold. 0 turns flap damping off.")
	fs.DurationVar(&o.FlapDamping.MaxHold, "cluster-flap-max-hold", o.FlapDamping.MaxHold, "The longest a flapping member stays out of new placements after it is Ready again.")
	fs.DurationVar(&o.MonitorPeriod, "cluster-monitor-period", o.MonitorPeriod, "Pull clusters only: the longest time between two checks of a cluster's Lease (karmada-cluster/<cluster>, renewed by its agent); a check also follows every change of the Cluster or its Lease.")
	fs.DurationVar(&o.MonitorGracePeriod, "cluster-monitor-grace-period", o.MonitorGracePeriod, "Pull clusters only: how long a cluster's agent may go without renewing its Lease before the cluster's Ready condition is set to Unknown (reason ClusterStatusUnknown). Push clusters are probed instead (--cluster-status-update-frequency, --cluster-failure-threshold).")
	fs.DurationVar(&o.StartupGracePeriod, "cluster-startup-grace-period", o.StartupGracePeriod, "Pull clusters only: how long the agent of a new cluster has, from the cluster's (or its Lease's) creation, to first renew its Lease or report status before Ready is set to Unknown (reason ClusterStatusNeverUpdated).")
}

// Validate reports flag values that cannot work.
func (o *Options) Validate() error {
	switch {
	case o.StatusUpdateFrequency <= 0:
		return fmt.Errorf("--cluster-status-update-frequency must be positive, got %s", o.StatusUpdateFrequency)
	case o.FailureThreshold < 0 || o.SuccessThreshold < 0:
		return fmt.Errorf("--cluster-failure-threshold and --cluster-success-threshold must not be negative")
	case o.ProbeTimeout <= 0:
		return fmt.Errorf("--cluster-probe-timeout must be positive, got %s", o.ProbeTimeout)
	case o.CollectInterval < 0:
		return fmt.Errorf("--cluster-status-collect-interval must not be negative, got %s", o.CollectInterval)
	case o.DeletionGracePeriod < 0:
		// It would release a deleted Cluster at once, as 0 does.
		return fmt.Errorf("--cluster-deletion-grace-period must not be negative, got %s", o.DeletionGracePeriod)
	case o.ConcurrentSyncs < 1:
		return fmt.Errorf("--concurrent-cluster-syncs must be at least 1, got %d", o.ConcurrentSyncs)
	case o.FlapDamping.Window < 0 || o.FlapDamping.Hold < 0:
		return fmt.Errorf("--cluster-flap-window and --cluster-flap-hold must not be negative")
	case o.FlapDamping.MaxHold < o.FlapDamping.Hold:
		return fmt.Errorf("--cluster-flap-max-hold (%s) must not be shorter than --cluster-flap-hold (%s)", o.FlapDamping.MaxHold, o.FlapDamping.Hold)
	case o.MonitorPeriod <= 0:
		return fmt.Errorf("--cluster-monitor-period must be positive, got %s", o.MonitorPeriod)
	case o.MonitorGracePeriod <= 0 || o.StartupGracePeriod <= 0:
		return fmt.Errorf("--cluster-monitor-grace-period and --cluster-startup-grace-period must be positive, got %s and %s", o.MonitorGracePeriod, o.StartupGracePeriod)
	}
	return nil
}
