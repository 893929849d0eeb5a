package controllermanager

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/binding"
	"github.com/lifeboat-dev/lifeboat/internal/bootstrap"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	"github.com/lifeboat-dev/lifeboat/internal/conflict"
	"github.com/lifeboat-dev/lifeboat/internal/dependencies"
	"github.com/lifeboat-dev/lifeboat/internal/detector"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/execution"
	"github.com/lifeboat-dev/lifeboat/internal/failback"
	"github.com/lifeboat-dev/lifeboat/internal/failover"
	"github.com/lifeboat-dev/lifeboat/internal/features"
	"github.com/lifeboat-dev/lifeboat/internal/fleetcap"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/customization"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	"github.com/lifeboat-dev/lifeboat/internal/orphans"
	"github.com/lifeboat-dev/lifeboat/internal/policycheck"
	"github.com/lifeboat-dev/lifeboat/internal/rebalancer"
	"github.com/lifeboat-dev/lifeboat/internal/scheduler"
	"github.com/lifeboat-dev/lifeboat/internal/served"
	"github.com/lifeboat-dev/lifeboat/internal/templates"
	"github.com/lifeboat-dev/lifeboat/internal/undecodable"
	"github.com/lifeboat-dev/lifeboat/internal/workstatus"
)

// deps are what the controllers share: built once per process and handed to
// each controller as explicit constructor arguments, never as a bag.
type deps struct {
	interpreter interpreter.Interpreter
	clock       clock.WithTicker
	opts        *Options
	hooks       failover.Hooks
	metrics     *failover.Metrics
	// clusterMetrics are the cluster controllers' (Ready transitions, flap
	// damping).
	clusterMetrics *cluster.Metrics
	members        *membercluster.Cache
	ricLayer       *customization.Layer
	// templateCache holds the templates of the kinds the detector watches
	// and reads everything else from the manager's cache.
	templateCache *templates.Cache
	// templateStatuses are the template versions the binding-status
	// controller made by writing their status.
	templateStatuses *templates.Statuses
	// workIndex is the Works' index the binding controllers share.
	workIndex *binding.WorkIndex
	// versions are the object versions the controllers' own writes
	// replaced (conflict.Versions).
	versions *conflict.Versions
	// events is the per-workload Events' budget the detector and the
	// graceful-eviction, scheduler and execution controllers share (nil:
	// every Event recorded).
	events *eventbudget.Budget
	// guard knows the stored objects the caches leave out because they
	// cannot be decoded.
	guard *undecodable.Guard
	// orphanMetrics are the member clean-up's metrics.
	orphanMetrics *orphans.Metrics
	// namespaces is the member-namespaces controller, which the
	// member-orphans controller hands namespaces to (a no-op when it is
	// disabled).
	namespaces *orphans.NamespaceReconciler
	// served is the view of the control plane's kinds the detector and
	// the policy checker share (one discovery loop per process).
	served *served.Kinds
}

// schedulerName is the spec.schedulerName the scheduler answers to; the
// failback controller asks for schedules only of the bindings it takes.
const schedulerName = scheduler.DefaultSchedulerName

// controller is one named controller the manager can run.
type controller struct {
	name  string
	setup func(mgr ctrl.Manager, d deps) error
}

// allControllers lists every controller in data-flow order.
func allControllers() []controller {
	return []controller{
		{"resource-interpreter-customization", func(mgr ctrl.Manager, d deps) error {
			return (&customization.Reconciler{
				Client:   mgr.GetClient(),
				Recorder: recorder(mgr, "resource-interpreter-customization"),
				Layer:    d.ricLayer,
			}).SetupWithManager(mgr)
		}},
		{"cluster", func(mgr ctrl.Manager, d deps) error {
			o := d.opts.Cluster
			return (&cluster.ClusterReconciler{
				Client:              mgr.GetClient(),
				APIReader:           mgr.GetAPIReader(),
				Recorder:            mgr.GetEventRecorder("cluster-controller"),
				Clock:               d.clock,
				DeletionGracePeriod: o.DeletionGracePeriod,
				ConcurrentSyncs:     o.ConcurrentSyncs,
			}).SetupWithManager(mgr)
		}},
		{"cluster-status", func(mgr ctrl.Manager, d deps) error {
			o := d.opts.Cluster
			// Members' credentials are read from the cache: its Secret
			// informer is the one membercluster.Cache already uses.
			return (&cluster.StatusReconciler{
				Client:                 mgr.GetClient(),
				Members:                cluster.NewMemberFactory(mgr.GetClient(), o.ProbeTimeout, o.EnableResourceModeling),
				Recorder:               mgr.GetEventRecorder("cluster-status-controller"),
				Clock:                  d.clock,
				StatusUpdateFrequency:  o.StatusUpdateFrequency,
				FailureThreshold:       o.FailureThreshold,
				SuccessThreshold:       o.SuccessThreshold,
				ProbeTimeout:           o.ProbeTimeout,
				CollectInterval:        o.CollectInterval,
				EnableResourceModeling: o.EnableResourceModeling,
				ConcurrentSyncs:        o.ConcurrentSyncs,
				Metrics:                d.clusterMetrics,
			}).SetupWithManager(mgr)
		}},
		{"cluster-lease-monitor", func(mgr ctrl.Manager, d deps) error {
			o := d.opts.Cluster
			return (&cluster.LeaseMonitor{
				Client:             mgr.GetClient(),
				Recorder:           mgr.GetEventRecorder("cluster-lease-monitor"),
				Clock:              d.clock,
				MonitorPeriod:      o.MonitorPeriod,
				GracePeriod:        o.MonitorGracePeriod,
				StartupGracePeriod: o.StartupGracePeriod,
				ConcurrentSyncs:    o.ConcurrentSyncs,
				Metrics:            d.clusterMetrics,
			}).SetupWithManager(mgr)
		}},
		{"cluster-taint", func(mgr ctrl.Manager, d deps) error {
			return (&cluster.TaintReconciler{
				Client:          mgr.GetClient(),
				Recorder:        mgr.GetEventRecorder("cluster-taint-controller"),
				Clock:           d.clock,
				ConcurrentSyncs: d.opts.Cluster.ConcurrentSyncs,
				FlapDamping:     d.opts.Cluster.FlapDamping,
				Metrics:         d.clusterMetrics,
			}).SetupWithManager(mgr)
		}},
		{"cluster-taint-policy", func(mgr ctrl.Manager, d deps) error {
			return (&cluster.TaintPolicyReconciler{
				Client:          mgr.GetClient(),
				Recorder:        mgr.GetEventRecorder("cluster-taint-policy-controller"),
				Clock:           d.clock,
				Gates:           d.opts.FeatureGates,
				ConcurrentSyncs: d.opts.Cluster.ConcurrentSyncs,
			}).SetupWithManager(mgr)
		}},
		{"agent-csr-approving", func(mgr ctrl.Manager, d deps) error {
			return (&bootstrap.ApproverReconciler{
				Client:    mgr.GetClient(),
				APIReader: mgr.GetAPIReader(),
				Recorder:  mgr.GetEventRecorder("agent-csr-approving-controller"),
				Clock:     d.clock,
			}).SetupWithManager(mgr)
		}},
		{"detector", func(mgr ctrl.Manager, d deps) error {
			return (&detector.Detector{
				Client:          mgr.GetClient(),
				Recorder:        recorder(mgr, "lifeboat-detector"),
				Events:          d.events,
				Interpreter:     d.interpreter,
				Templates:       d.templateCache,
				Statuses:        d.templateStatuses,
				Served:          d.served,
				TemplateWorkers: d.opts.Concurrency,
			}).SetupWithManager(mgr)
		}},
		{"policy-check", func(mgr ctrl.Manager, d deps) error {
			return (&policycheck.Reconciler{
				Client:                  watched(mgr, d),
				Recorder:                recorder(mgr, "policy-check-controller"),
				Kinds:                   d.served,
				Types:                   mgr.GetScheme(),
				Clock:                   d.clock,
				MaxConcurrentReconciles: d.opts.Concurrency,
			}).SetupWithManager(mgr)
		}},
		{"dependencies-distributor", func(mgr ctrl.Manager, d deps) error {
			return (&dependencies.Distributor{
				Client:                  mgr.GetClient(),
				Reader:                  d.templateCache,
				Recorder:                recorder(mgr, "lifeboat-dependencies-distributor"),
				Interpreter:             d.interpreter,
				MaxConcurrentReconciles: d.opts.Concurrency,
			}).SetupWithManager(mgr)
		}},
		{"scheduler", func(mgr ctrl.Manager, d deps) error {
			return (&scheduler.Reconciler{
				Client:                  watched(mgr, d),
				Recorder:                recorder(mgr, "lifeboat-scheduler"),
				Events:                  d.events,
				Clock:                   d.clock,
				SchedulerName:           schedulerName,
				MaxConcurrentReconciles: d.opts.Concurrency,
				Unreadable: func(name string) bool {
					return d.guard.Stored(clusterv1alpha1.SchemeGroupVersion.WithKind("Cluster").GroupKind(), "", name)
				},
				Gates: d.opts.FeatureGates,
			}).SetupWithManager(mgr)
		}},
		{"binding", func(mgr ctrl.Manager, d deps) error {
			return (&binding.Reconciler{
				Client:                  watched(mgr, d),
				Recorder:                recorder(mgr, "binding-controller"),
				Interpreter:             d.interpreter,
				Templates:               templateReader(mgr, d),
				InjectState:             d.hooks.InjectLabels,
				DefaultPurgeMode:        d.opts.ClusterFailover.PurgeMode(),
				Eviction:                d.hooks,
				MaxConcurrentReconciles: d.opts.Concurrency,
				WorkIndex:               d.workIndex,
			}).SetupWithManager(mgr)
		}},
		{"binding-status", func(mgr ctrl.Manager, d deps) error {
			return (&binding.StatusReconciler{
				DefaultPurgeMode:        d.opts.ClusterFailover.PurgeMode(),
				Client:                  watched(mgr, d),
				Templates:               templateReader(mgr, d),
				Recorder:                recorder(mgr, "binding-status-controller"),
				Interpreter:             d.interpreter,
				Eviction:                d.hooks,
				Clock:                   d.clock,
				MaxConcurrentReconciles: d.opts.Concurrency,
				WorkIndex:               d.workIndex,
			}).SetupWithManager(mgr)
		}},
		{"member-connections", func(mgr ctrl.Manager, d deps) error {
			return d.members.SetupWithManager(mgr)
		}},
		{"execution", func(mgr ctrl.Manager, d deps) error {
			live := mgr.GetAPIReader()
			exec := &execution.Reconciler{
				Client:                  watched(mgr, d),
				Recorder:                recorder(mgr, "execution-controller"),
				Events:                  d.events,
				Interpreter:             d.interpreter,
				Members:                 d.members,
				MaxConcurrentReconciles: d.opts.Concurrency,
				// Read live: the binding may want the cluster again since the
				// Work's deletion was decided on the cache.
				StillWanted: func(ctx context.Context, cluster string, w *workv1alpha1.Work) (bool, error) {
					return binding.WantsWork(ctx, live, d.hooks, cluster, w)
				},
			}
			ws := &workstatus.Reconciler{
				Client:                  watched(mgr, d),
				Recorder:                recorder(mgr, "work-status-controller"),
				Interpreter:             d.interpreter,
				Members:                 d.members,
				MaxConcurrentReconciles: d.opts.Concurrency,
			}
			if err := workstatus.SetupWithExecution(mgr, d.clock, exec, ws); err != nil {
				return err
			}
			d.ricLayer.OnKindChanged(ws.RequeueKind)
			return nil
		}},
		{"member-orphans", func(mgr ctrl.Manager, d deps) error {
			return (&orphans.ObjectReconciler{
				Client:     mgr.GetClient(),
				APIReader:  mgr.GetAPIReader(),
				Members:    d.members,
				Recorder:   mgr.GetEventRecorder("member-orphans-controller"),
				Clock:      d.clock,
				Metrics:    d.orphanMetrics,
				Namespaces: d.namespaces,
				Options:    *d.opts.Orphans,
			}).SetupWithManager(mgr)
		}},
		{"member-namespaces", func(mgr ctrl.Manager, d deps) error {
			n := d.namespaces
			n.Client = mgr.GetClient()
			n.Members = d.members
			n.Recorder = mgr.GetEventRecorder("member-namespaces-controller")
			n.Clock = d.clock
			n.Metrics = d.orphanMetrics
			return n.SetupWithManager(mgr)
		}},
		{"application-failover", func(mgr ctrl.Manager, d deps) error {
			return (&failover.ApplicationFailoverReconciler{
				Client:                  watched(mgr, d),
				Recorder:                recorder(mgr, "application-failover-controller"),
				Clock:                   d.clock,
				Gates:                   d.opts.FeatureGates,
				MaxConcurrentReconciles: d.opts.Concurrency,
			}).SetupWithManager(mgr)
		}},
		{"taint-manager", func(mgr ctrl.Manager, d deps) error {
			o := d.opts.ClusterFailover
			if !d.opts.FeatureGates.Enabled(features.Failover) || !o.EnableNoExecuteTaintEviction {
				return nil
			}
			rec := recorder(mgr, "taint-manager")
			cfg := o.StormGuardConfig()
			health := d.opts.Cluster
			cfg.Settling = failover.NewSettlingWindows(health.StatusUpdateFrequency, health.FailureThreshold, health.ProbeTimeout, health.MonitorGracePeriod, health.MonitorPeriod)
			guard, err := failover.NewStormGuard(mgr.GetClient(), rec, d.clock, cfg, ctrlmetrics.Registry)
			if err != nil {
				return err
			}
			if err := guard.SetupWithManager(mgr); err != nil {
				return err
			}
			return (&failover.TaintManager{
				Client:                  watched(mgr, d),
				Recorder:                rec,
				Clock:                   d.clock,
				Gates:                   d.opts.FeatureGates,
				Guard:                   guard,
				Enabled:                 o.EnableNoExecuteTaintEviction,
				DefaultPurgeMode:        o.PurgeMode(),
				MaxConcurrentReconciles: d.opts.Concurrency,
			}).SetupWithManager(mgr)
		}},
		{"workload-rebalancer", func(mgr ctrl.Manager, d deps) error {
			var gate *fleetcap.Gate
			if n := d.opts.Rebalance.MaxConcurrent; n > 0 {
				var err error
				if gate, err = fleetcap.NewGate("rebalances", n, 0, d.clock.Now()); err != nil {
					return err
				}
				gate.WithoutQueue()
			}
			return (&rebalancer.Reconciler{
				Gate:                    gate,
				Client:                  watched(mgr, d),
				Templates:               mgr.GetAPIReader(),
				Recorder:                recorder(mgr, "workload-rebalancer-controller"),
				Clock:                   d.clock,
				MaxConcurrentReconciles: d.opts.Concurrency,
				SchedulerName:           schedulerName,
			}).SetupWithManager(mgr)
		}},
		{"failback", func(mgr ctrl.Manager, d deps) error {
			o := d.opts.Failback
			gate, err := fleetcap.NewGate("failbacks", o.MaxConcurrent, o.Rate, d.clock.Now())
			if err != nil {
				return err
			}
			m, err := failback.NewMetrics(ctrlmetrics.Registry)
			if err != nil {
				return err
			}
			return (&failback.Reconciler{
				Client:                  watched(mgr, d),
				Recorder:                recorder(mgr, "failback-controller"),
				Clock:                   d.clock,
				Gate:                    gate,
				Metrics:                 m,
				MaxConcurrentReconciles: d.opts.Concurrency,
				SchedulerName:           schedulerName,
			}).SetupWithManager(mgr)
		}},
		{"graceful-eviction", func(mgr ctrl.Manager, d deps) error {
			return (&failover.GracefulEvictionReconciler{
				Client:                  watched(mgr, d),
				Recorder:                recorder(mgr, "graceful-eviction-controller"),
				Events:                  d.events,
				Clock:                   d.clock,
				Metrics:                 d.metrics,
				DefaultGracePeriod:      d.opts.ClusterFailover.GracefulEvictionTimeout,
				OldCopyExists:           failover.WorkExists(mgr.GetClient()),
				Fenced:                  failover.FencedBy(mgr.GetAPIReader(), d.opts.ClusterFailover.PurgeMode(), d.opts.ClusterFailover.FencingStopMargin),
				Wave:                    failover.NewWave(d.opts.ClusterFailover.GracefulEvictionHold),
				MaxConcurrentReconciles: d.opts.Concurrency,
			}).SetupWithManager(mgr)
		}},
	}
}

// watched is the manager's client for controllers wrapped by
// conflict.Retrying: a conflicting write makes them run again at once,
// reading from the API server. The versions their writes replaced are
// shared, so that a write made on a version another controller's write
// replaced is refused before it is sent.
func watched(mgr ctrl.Manager, d deps) client.Client {
	return conflict.Client(mgr.GetClient(), mgr.GetAPIReader(), d.versions)
}

// templateReader reads templates from the detector's informers where they
// hold the kind, and from the API server otherwise.
func templateReader(mgr ctrl.Manager, d deps) *templates.Reader {
	return &templates.Reader{Cache: d.templateCache, Kinds: d.templateCache.Kinds(), Live: mgr.GetAPIReader(), Statuses: d.templateStatuses}
}

// controllerNames returns every controller's name, sorted.
func controllerNames() []string {
	var names []string
	for _, c := range allControllers() {
		names = append(names, c.name)
	}
	sort.Strings(names)
	return names
}

// enabledControllers resolves the --controllers list the way Karmada and
// kube-controller-manager do: "*" enables every controller, "foo" enables
// foo, "-foo" disables foo. An unknown name is an error.
func enabledControllers(spec []string, known []string) (map[string]bool, error) {
	enabled := map[string]bool{}
	star := false
	for _, s := range spec {
		s = strings.TrimSpace(s)
		name := strings.TrimPrefix(s, "-")
		if s == "*" {
			star = true
			continue
		}
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("--controllers: unknown controller %q (known: %s)", name, strings.Join(known, ", "))
		}
	}
	for _, k := range known {
		enabled[k] = star
	}
	for _, s := range spec {
		s = strings.TrimSpace(s)
		switch {
		case s == "*":
		case strings.HasPrefix(s, "-"):
			enabled[strings.TrimPrefix(s, "-")] = false
		default:
			enabled[s] = true
		}
	}
	return enabled, nil
}

// recorder returns the manager's core/v1 Event recorder for a controller.
// Every controller records with client-go's record.EventRecorder (Events on
// bindings, templates, Works and Clusters that kubectl describe shows);
// moving them to the events.k8s.io recorder is a change of its own.
func recorder(mgr ctrl.Manager, name string) record.EventRecorder {
	//lint:ignore SA1019 see above: the core/v1 recorder on purpose
	return mgr.GetEventRecorderFor(name)
}
