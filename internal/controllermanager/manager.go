// Package controllermanager runs Lifeboat's controllers in one process, with
// leader election so that two replicas can run safely, and serves /healthz,
// /readyz and Prometheus /metrics.
package controllermanager

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/apidiscovery"
	"github.com/lifeboat-dev/lifeboat/internal/bindaddr"
	"github.com/lifeboat-dev/lifeboat/internal/binding"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	"github.com/lifeboat-dev/lifeboat/internal/conflict"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/failback"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/features"
	"github.com/lifeboat-dev/lifeboat/internal/gcpace"
	"github.com/lifeboat-dev/lifeboat/internal/intern"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/customization"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/lua"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	"github.com/lifeboat-dev/lifeboat/internal/orphans"
	"github.com/lifeboat-dev/lifeboat/internal/packed"
	"github.com/lifeboat-dev/lifeboat/internal/rebalancer"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
	"github.com/lifeboat-dev/lifeboat/internal/served"
	"github.com/lifeboat-dev/lifeboat/internal/templates"
	"github.com/lifeboat-dev/lifeboat/internal/undecodable"
)

// Options are the controller manager's flags.
type Options struct {
	Kubeconfig             string
	Context                string
	HealthProbeBindAddress string
	MetricsBindAddress     string
	LeaderElect            bool
	LeaderElectionID       string
	LeaderElectionNS       string
	QPS                    float32
	Burst                  int
	// Controllers selects controllers: "*" all, "foo" enable, "-foo" disable.
	Controllers []string
	// Concurrency is the number of parallel reconciles per controller.
	Concurrency int
	// Cluster configures cluster health and status collection.
	Cluster *cluster.Options
	// FeatureGates are Karmada's gates (Failover, GracefulEviction, ...).
	FeatureGates *features.Gates
	// ClusterFailover configures the taint manager and the storm guard.
	ClusterFailover *failover.ClusterFailoverOptions
	// Orphans configures the clean-up of what Lifeboat left in members.
	Orphans *orphans.Options
	// Failback bounds how much moves back at once.
	Failback *failback.Options
	// Rebalance bounds how much WorkloadRebalancers move at once.
	Rebalance *rebalancer.Options
	// LeaseDuration, RenewDeadline and RetryPeriod time leader election:
	// how long a lease lasts without renewal, how long the leader keeps
	// trying to renew before it gives up (and exits), and how long
	// candidates and the leader wait between tries.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// PprofBindAddress serves net/http/pprof; empty disables it.
	PprofBindAddress string
	// CRDWait is how long to wait at start for Lifeboat's CRDs to be
	// served; 0 does not wait.
	CRDWait time.Duration
	// MemoryLimit is the Go runtime's soft memory limit as a quantity
	// ("180Mi"); empty leaves GOMEMLIMIT's (none by default).
	MemoryLimit string
	// GCPercent is the Go garbage collector's target percentage (as
	// GOGC); 0 leaves the GOGC environment variable, or Go's 100, in force.
	GCPercent int
	// GCPacer, with a positive GCPercent, starts collections from a soft
	// memory limit kept at GCPercent's heap goal instead of from GOGC
	// (package gcpace).
	GCPacer bool
	// MetricsSecure serves /metrics over HTTPS to authenticated and
	// authorized clients only (serving.go).
	MetricsSecure bool
	// MetricsCertDir holds the metrics serving certificate (tls.crt,
	// tls.key); empty means a self-signed one.
	MetricsCertDir string
}

// gcPercentDefault is --gc-percent's default: at 5,000 bindings it keeps
// RSS under 200 MiB (Go's 100 lets it reach 238–245 MiB), for more
// collections while the process allocates (a rollout of 5,000 took 8 min
// against 7 min 22 s, one run each) and none more at idle. See
// docs/performance.md, round 8.
const gcPercentDefault = 50

// gcPaceInterval is how often the pacer sets the memory limit again
// between collections.
const gcPaceInterval = 5 * time.Second

// defaultGCPercent is gcPercentDefault, or 0 when the GOGC environment
// variable is set: whoever set it chose for this process.
func defaultGCPercent(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		return 0
	}
	return gcPercentDefault
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		HealthProbeBindAddress: defaultHealthProbeBindAddress,
		MetricsBindAddress:     defaultMetricsBindAddress,
		LeaderElect:            true,
		GCPacer:                true,
		LeaderElectionID:       "lifeboat-controller-manager",
		LeaderElectionNS:       "kube-system",
		LeaseDuration:          15 * time.Second,
		RenewDeadline:          10 * time.Second,
		RetryPeriod:            2 * time.Second,
		QPS:                    1000,
		Burst:                  2000,
		Controllers:            []string{"*"},
		Concurrency:            10,
		GCPercent:              defaultGCPercent(os.Getenv),
		Cluster:                cluster.NewOptions(),
		FeatureGates:           features.New(),
		ClusterFailover:        failover.NewClusterFailoverOptions(),
		Orphans:                orphans.NewOptions(),
		Failback:               failback.NewOptions(),
		Rebalance:              rebalancer.NewOptions(),
		CRDWait:                2 * time.Minute,
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig of the Lifeboat control plane the controllers run against (default: $KUBECONFIG, else ~/.kube/config, else, in a pod, its service account).")
	fs.StringVar(&o.Context, "context", o.Context, "Context of the Lifeboat control plane in that kubeconfig (default: its current context).")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address serving /healthz and /readyz, unauthenticated; loopback by default (in a Pod, :10357 lets the kubelet probe it); empty or \"0\" disables them.")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address serving Prometheus /metrics; loopback by default; \"0\" disables it. Without --metrics-secure anyone who reaches it can read it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "Serve /metrics over HTTPS, only to bearer tokens the control plane's API server authenticates (TokenReview) for a user allowed to get the non-resource URL /metrics (SubjectAccessReview); others get 401 or 403. The controller manager then needs to create tokenreviews and subjectaccessreviews.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir, "Directory with the metrics serving certificate and key (tls.crt, tls.key; reloaded when they change), with --metrics-secure; empty (the default) uses a self-signed certificate made at start.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader so that only one replica reconciles at a time.")
	fs.StringVar(&o.LeaderElectionID, "leader-elect-resource-name", o.LeaderElectionID, "Name of the Lease used for leader election.")
	fs.StringVar(&o.LeaderElectionNS, "leader-elect-resource-namespace", o.LeaderElectionNS, "Namespace of the Lease used for leader election, and of the failover settings the controller manager publishes (ConfigMap lifeboat-failover-settings, read by lifeboat simulate).")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a standby replica waits after the leader's last renewal before it takes the lease: the longest the controllers stand still when the leader dies.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader keeps trying to renew its lease before it gives up and exits; must be shorter than --leader-elect-lease-duration. An API server too busy to answer a renewal within it costs a restart of the controllers.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "Time between two tries to take or renew the lease; --leader-elect-renew-deadline must be more than 1.2 times it.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Client-side queries per second to the control plane.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Client-side burst to the control plane.")
	fs.StringSliceVar(&o.Controllers, "controllers", o.Controllers, fmt.Sprintf("Controllers to run: '*' runs all, 'foo' enables foo, '-foo' disables foo. All: %s.", strings.Join(controllerNames(), ", ")))
	fs.IntVar(&o.Concurrency, "concurrent-syncs", o.Concurrency, "Parallel reconciles per controller.")
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress, "Address serving Go's /debug/pprof profiles; empty (the default) or \"0\" disables it.")
	fs.DurationVar(&o.CRDWait, "wait-for-crds", o.CRDWait, "How long to wait at start until the control plane serves Lifeboat's CRDs (installed by \"lifeboat init\", or the Helm chart's init Job) before giving up; 0 does not wait.")
	fs.IntVar(&o.GCPercent, "gc-percent", o.GCPercent, fmt.Sprintf("How far the Go heap may grow past its live data before the garbage collector runs, in percent (as GOGC): lower uses less memory and more CPU. 0 leaves the GOGC environment variable in force, or Go's 100. The default is %d, or 0 when GOGC is set. See docs/performance.md.", gcPercentDefault))
	fs.BoolVar(&o.GCPacer, "gc-pacer", o.GCPacer, "Start garbage collections from a soft memory limit that is kept, after each collection and every 5 s, where --gc-percent puts the next one, instead of from GOGC: the same heap goal, without the collection Go forces every two minutes on a process that allocates little. Applies when --gc-percent is above 0; false leaves the collections to GOGC. See docs/performance.md.")
	fs.StringVar(&o.MemoryLimit, "memory-limit", o.MemoryLimit, "Soft limit of the process's memory, as a quantity (for example 180Mi): the Go garbage collector runs more often as the heap nears it, trading CPU for memory. Empty (the default) leaves the GOMEMLIMIT environment variable in force, or no limit. See docs/performance.md.")
	o.Cluster.AddFlags(fs)
	o.FeatureGates.AddFlag(fs)
	o.ClusterFailover.AddFlags(fs)
	o.Orphans.AddFlags(fs)
	o.Failback.AddFlags(fs)
	o.Rebalance.AddFlags(fs)
}

// setupError wraps the failure to set up a controller; a kind the control
// plane does not serve means Lifeboat's CRDs are missing or old, and says how
// to install them.
func setupError(controller string, err error) error {
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("setting up controller %s: %w: the control plane lacks Lifeboat's CRDs, or has those of an older Lifeboat; install them with `lifeboat init` (an administrator's kubeconfig)", controller, err)
	}
	return fmt.Errorf("setting up controller %s: %w", controller, err)
}

// checkGCPercent accepts a --gc-percent of 0 (Go's default) up to what the
// runtime holds (an int32; more would wrap to a negative, "off"). GOGC's
// "off" (a negative percentage) is refused: without a memory limit the heap
// would grow until the process is killed.
func checkGCPercent(n int) error {
	if n < 0 || n > math.MaxInt32 {
		return fmt.Errorf("--gc-percent %d: want a positive percentage up to %d, or 0 for Go's default", n, math.MaxInt32)
	}
	return nil
}

// checkLeaderElection checks the leader-election timing the way client-go
// will when the manager starts, so that a bad combination is refused with
// the flags' names before anything runs: every duration positive, the
// lease longer than the renew deadline, and the renew deadline longer than
// the retry period with client-go's jitter (1.2).
func checkLeaderElection(lease, renew, retry time.Duration) error {
	switch {
	case lease <= 0 || renew <= 0 || retry <= 0:
		return fmt.Errorf("--leader-elect-lease-duration %s, --leader-elect-renew-deadline %s, --leader-elect-retry-period %s: each must be positive", lease, renew, retry)
	case lease <= renew:
		return fmt.Errorf("--leader-elect-lease-duration %s must be longer than --leader-elect-renew-deadline %s", lease, renew)
	case float64(renew) <= leaderelection.JitterFactor*float64(retry):
		return fmt.Errorf("--leader-elect-renew-deadline %s must be longer than %g times --leader-elect-retry-period %s", renew, leaderelection.JitterFactor, retry)
	}
	return nil
}

// memoryLimit parses --memory-limit: 0 for empty, else a positive number
// of bytes.
func memoryLimit(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("--memory-limit %q: %w", s, err)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return 0, fmt.Errorf("--memory-limit %q: want a positive number of bytes, such as 180Mi", s)
	}
	return n, nil
}

// checkClientFlags refuses a client rate, burst or worker count that cannot
// work: a rate that is not a positive, finite number, a burst or a count
// below 1.
func checkClientFlags(qps float32, burst, concurrency int) error {
	switch {
	case !(qps > 0) || math.IsInf(float64(qps), 0): // NaN too
		return fmt.Errorf("--kube-api-qps must be a positive, finite number, got %g", qps)
	case burst < 1:
		return fmt.Errorf("--kube-api-burst must be at least 1, got %d", burst)
	case concurrency < 1:
		return fmt.Errorf("--concurrent-syncs must be at least 1, got %d", concurrency)
	}
	return nil
}

func (o *Options) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading control-plane kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	return cfg, nil
}

// Validate reports flag values that cannot work, contacting nothing: Run
// calls it before it reads the kubeconfig or waits for the control plane,
// so that a mistake is refused at once rather than after the CRD wait, or
// once leader election or the endpoints start.
func (o *Options) Validate() error {
	if err := checkClientFlags(o.QPS, o.Burst, o.Concurrency); err != nil {
		return err
	}
	if _, err := enabledControllers(o.Controllers, controllerNames()); err != nil {
		return err
	}
	if err := o.Cluster.Validate(); err != nil {
		return err
	}
	if err := o.ClusterFailover.Validate(); err != nil {
		return err
	}
	if err := o.Orphans.Validate(); err != nil {
		return err
	}
	if err := o.Failback.Validate(); err != nil {
		return err
	}
	if err := o.Rebalance.Validate(); err != nil {
		return err
	}
	if _, err := memoryLimit(o.MemoryLimit); err != nil {
		return err
	}
	if err := checkGCPercent(o.GCPercent); err != nil {
		return err
	}
	if o.LeaderElect {
		if err := checkLeaderElection(o.LeaseDuration, o.RenewDeadline, o.RetryPeriod); err != nil {
			return err
		}
		switch msgs := validation.IsDNS1123Subdomain(o.LeaderElectionID); {
		case o.LeaderElectionID == "":
			return fmt.Errorf("--leader-elect-resource-name is empty: it names the Lease of leader election")
		case len(msgs) > 0:
			return fmt.Errorf("--leader-elect-resource-name %q: %s", o.LeaderElectionID, msgs[0])
		}
	}
	// The failover settings are published in this namespace with or
	// without leader election.
	switch msgs := validation.IsDNS1123Label(o.LeaderElectionNS); {
	case o.LeaderElectionNS == "":
		return fmt.Errorf("--leader-elect-resource-namespace is empty: it names the namespace of the leader election's Lease and of the published failover settings")
	case len(msgs) > 0:
		return fmt.Errorf("--leader-elect-resource-namespace %q: %s", o.LeaderElectionNS, msgs[0])
	}
	// 0 does not wait; a negative value is a mistake, not a request for it.
	if o.CRDWait < 0 {
		return fmt.Errorf("--wait-for-crds %s must not be negative (0 does not wait)", o.CRDWait)
	}
	for _, a := range []struct {
		flag, addr string
		off        []string // the values that turn the endpoint off
	}{
		{"--health-probe-bind-address", o.HealthProbeBindAddress, []string{"", "0"}},
		{"--metrics-bind-address", o.MetricsBindAddress, []string{"0"}},
		{"--pprof-bind-address", o.PprofBindAddress, []string{"", "0"}},
	} {
		if err := bindaddr.Check(a.flag, a.addr, a.off...); err != nil {
			return err
		}
	}
	return nil
}

// Run starts the manager and blocks until ctx is done.
func Run(ctx context.Context, o *Options) error {
	// Before anything reads the kubeconfig or waits for the control plane:
	// a misspelt controller, say, is refused at once, not after the CRD
	// wait.
	if err := o.Validate(); err != nil {
		return err
	}
	for _, w := range o.ClusterFailover.Warnings() {
		ctrl.Log.WithName("setup").Info("warning: a flag weakens a safety promise", "detail", w)
	}
	enabled, err := enabledControllers(o.Controllers, controllerNames())
	if err != nil {
		return err
	}
	limit, err := memoryLimit(o.MemoryLimit)
	if err != nil {
		return err
	}
	if o.GCPercent > 0 {
		debug.SetGCPercent(o.GCPercent)
		ctrl.Log.WithName("setup").Info("garbage collector target set", "percent", o.GCPercent)
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
		ctrl.Log.WithName("setup").Info("soft memory limit set", "bytes", limit)
	}
	if o.GCPacer && o.GCPercent > 0 {
		// The limit in force (--memory-limit, or GOMEMLIMIT) stays the
		// ceiling the pacer never goes above.
		ceiling := debug.SetMemoryLimit(-1)
		if ceiling == math.MaxInt64 {
			ceiling = 0
		}
		pacer := &gcpace.Pacer{Percent: o.GCPercent, Ceiling: ceiling, Interval: gcPaceInterval, Log: ctrl.Log.WithName("gcpace")}
		go pacer.Run(ctx)
	}
	cfg, err := o.restConfig()
	if err != nil {
		return err
	}
	if err := waitForCRDs(ctx, cfg, o.CRDWait); err != nil {
		return err
	}
	scheme, err := lbscheme.New()
	if err != nil {
		return err
	}
	// One stored object of Lifeboat's kinds that does not decode into its
	// Go type (a number past int32, written before the schema bounded it)
	// must not stop the informer of its whole kind: the guard leaves it
	// out of the caches, keeps its last decodable version, and reports it.
	// It needs both hooks: the transport sees the bytes, the informers
	// their stores.
	//
	// Bindings and Works (work.karmada.io) are not guarded: Lifeboat's own
	// controllers write them through these Go types, so they decode by
	// construction, and they are the kinds whose events are most frequent
	// (every status report), where a second decode costs the most.
	guard, err := undecodable.New(scheme, undecodable.Options{
		Groups:     peopleWrite(lbscheme.OwnGroups()),
		Registerer: ctrlmetrics.Registry,
		Log:        ctrl.Log.WithName("undecodable"),
	})
	if err != nil {
		return err
	}
	cfg.Wrap(guard.WrapTransport)
	metricsServing, err := o.metricsServerOptions()
	if err != nil {
		return err
	}
	leaseDuration, renewDeadline, retryPeriod := o.LeaseDuration, o.RenewDeadline, o.RetryPeriod
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// managedFields are about half of a cached object and nothing here
		// reads them; writes without them leave the server's untouched.
		// The strings thousands of bindings and Works repeat share one copy,
		// and Works keep their manifests deflated.
		Cache:                         cache.Options{DefaultTransform: cacheTransform, NewInformer: guard.NewInformer},
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		PprofBindAddress:              o.PprofBindAddress,
		Metrics:                       metricsServing,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &leaseDuration,
		RenewDeadline:                 &renewDeadline,
		RetryPeriod:                   &retryPeriod,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	guard.RecordEventsWith(mgr.GetEventRecorder("lifeboat-controller-manager"))
	metrics, err := failover.NewMetrics(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("registering failover metrics: %w", err)
	}
	clusterMetrics, err := cluster.NewMetrics(ctrlmetrics.Registry)
	if err != nil {
		return err
	}
	orphanMetrics, err := orphans.NewMetrics(ctrlmetrics.Registry)
	if err != nil {
		return err
	}
	// Resource semantics: users' ResourceInterpreterCustomizations (Lua)
	// first, then the shipped third-party rules, then the built-in ones.
	ricLayer := customization.NewLayer(lua.New(lua.DefaultOptions()),
		recorder(mgr, "resource-interpreter-customization"), clock.RealClock{})
	interp, err := customization.NewInterpreter(ricLayer)
	if err != nil {
		return fmt.Errorf("building the interpreter: %w", err)
	}
	templateCache, err := templates.NewCacheForManager(mgr)
	if err != nil {
		return err
	}
	dc, err := apidiscovery.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	servedKinds := served.New(served.FromLister(dc), nil, 0)
	if err := servedKinds.SetupWithManager(mgr); err != nil {
		return err
	}
	events, err := eventbudget.ForProcess(mgr.GetConfig(), mgr.GetScheme(), mgr.GetClient(), o.ClusterFailover.FailoverEventBurst, ctrlmetrics.Registry)
	if err != nil {
		return err
	}
	if events != nil {
		if err := mgr.Add(events); err != nil {
			return fmt.Errorf("adding the per-workload Events' budget: %w", err)
		}
	}
	d := deps{
		events:      events,
		interpreter: interp,
		ricLayer:    ricLayer,
		clock:       clock.RealClock{},
		opts:        o,
		hooks:       failover.NewHooks(o.FeatureGates),
		metrics:     metrics,
		members:     membercluster.New(mgr.GetClient(), membercluster.DefaultOptions()),

		clusterMetrics: clusterMetrics,
		orphanMetrics:  orphanMetrics,
		namespaces:     &orphans.NamespaceReconciler{},

		templateCache:    templateCache,
		templateStatuses: &templates.Statuses{},
		workIndex:        &binding.WorkIndex{},
		guard:            guard,
		served:           servedKinds,
		versions:         conflict.NewVersions(nil),
	}
	log := ctrl.LoggerFrom(ctx)
	for _, c := range allControllers() {
		if !enabled[c.name] {
			log.Info("controller disabled", "controller", c.name)
			continue
		}
		if err := c.setup(mgr, d); err != nil {
			return setupError(c.name, err)
		}
	}
	settings := failover.NewSettings(o.Cluster.StatusUpdateFrequency, o.Cluster.FailureThreshold, o.Cluster.ProbeTimeout,
		o.ClusterFailover, o.FeatureGates, enabled["taint-manager"], enabled["application-failover"]).
		WithLeaseMonitor(o.Cluster.MonitorGracePeriod, o.Cluster.MonitorPeriod)
	if err := mgr.Add(settingsPublisher(mgr.GetClient(), o.LeaderElectionNS, settings)); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	log.Info("starting controller manager", "leaderElection", o.LeaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// peopleWrite returns the groups of groups whose objects people and other
// tools write (policies, Clusters, interpreter customizations): all but
// work.karmada.io.
func peopleWrite(groups []string) []string {
	out := make([]string, 0, len(groups))
	for _, g := range groups {
		if g != workv1alpha2.GroupName {
			out = append(out, g)
		}
	}
	return out
}

// settingsPublisher publishes the failover settings once this replica leads
// (a runnable that needs leader election), retrying until it succeeds or
// the manager stops; a failure only costs dry runs their accuracy.
func settingsPublisher(c client.Client, namespace string, s failover.Settings) manager.RunnableFunc {
	return func(ctx context.Context) error {
		log := ctrl.LoggerFrom(ctx).WithName("settings")
		backoff := time.Second
		for {
			err := failover.PublishSettings(ctx, c, namespace, s)
			if err == nil {
				log.V(1).Info("failover settings published", "namespace", namespace, "configMap", failover.SettingsConfigMap)
				return nil
			}
			log.Error(err, "publishing the failover settings; retrying", "retryAfter", backoff)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Minute)
		}
	}
}

// cacheTransform is the cache's transform: intern.Transform, then
// packed.WorkTransform.
func cacheTransform(obj any) (any, error) {
	obj, err := intern.Transform(obj)
	if err != nil {
		return nil, err
	}
	return packed.WorkTransform(obj)
}
