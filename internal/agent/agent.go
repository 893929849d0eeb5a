package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/bindaddr"
	"github.com/lifeboat-dev/lifeboat/internal/bootstrap"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	"github.com/lifeboat-dev/lifeboat/internal/eventbudget"
	"github.com/lifeboat-dev/lifeboat/internal/execution"
	"github.com/lifeboat-dev/lifeboat/internal/fencing"
	"github.com/lifeboat-dev/lifeboat/internal/intern"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/customization"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/lua"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
	"github.com/lifeboat-dev/lifeboat/internal/metricsauth"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
	"github.com/lifeboat-dev/lifeboat/internal/workstatus"
)

// Options are the agent's flags.
type Options struct {
	// ClusterName is the Pull cluster the agent serves.
	ClusterName string
	// ControlPlaneKubeconfig and ControlPlaneContext hold the agent's own
	// credentials in the control plane (written by `lifeboat register`);
	// an empty path means $KUBECONFIG, else ~/.kube/config.
	ControlPlaneKubeconfig string
	ControlPlaneContext    string
	// MemberKubeconfig and MemberContext reach the member the agent runs
	// in; an empty path means the pod's service account.
	MemberKubeconfig string
	MemberContext    string

	// LeaseDuration is written into the cluster's Lease, which is renewed
	// every LeaseDuration * LeaseRenewFraction. The control plane's
	// --cluster-monitor-grace-period decides how long it waits for a
	// renewal.
	LeaseDuration      time.Duration
	LeaseRenewFraction float64
	// MemberLeaseNamespace holds, in the member, the record of the last
	// renewal (see RenewalRecord).
	MemberLeaseNamespace string

	// StatusUpdateFrequency, FailureThreshold, SuccessThreshold,
	// ProbeTimeout and CollectInterval drive the cluster's status, as the
	// controller manager's flags of the same names do for Push clusters.
	StatusUpdateFrequency  time.Duration
	FailureThreshold       time.Duration
	SuccessThreshold       time.Duration
	ProbeTimeout           time.Duration
	CollectInterval        time.Duration
	EnableResourceModeling bool

	// Concurrency is the number of Works applied and reported at once.
	Concurrency int
	// QPS and Burst limit the agent's requests to the control plane.
	QPS   float32
	Burst int
	// EventBurst is how many Events of one reason about the Works applied
	// to or cleaned up from the member are recorded at once; past it they
	// are counted in an Event on the Cluster (0: every Event recorded).
	EventBurst int

	// RotateCertificates renews the agent's client certificate for the
	// control plane before it expires (see Rotator).
	RotateCertificates bool
	// CertificateRenewFraction is the share of a certificate's validity
	// after which it is renewed, give or take a tenth.
	CertificateRenewFraction float64
	// CertificateDuration is the validity a renewal asks for; 0 asks for
	// the current certificate's.
	CertificateDuration time.Duration
	// KubeconfigSecret, NAMESPACE/NAME in the member, is the Secret that
	// holds the agent's kubeconfig (key KubeconfigSecretKey): renewed
	// certificates are kept there instead of in ControlPlaneKubeconfig.
	KubeconfigSecret string

	HealthProbeBindAddress string
	MetricsBindAddress     string
	// MetricsSecure serves /metrics over HTTPS to bearer tokens the
	// member's API server accepts for a user allowed to get /metrics.
	MetricsSecure bool
	// MetricsCertDir holds the metrics serving certificate (tls.crt,
	// tls.key); empty makes a self-signed one.
	MetricsCertDir string
}

// NewOptions returns the defaults, Karmada's agent's where it has them.
func NewOptions() *Options {
	c := cluster.NewOptions()
	return &Options{
		LeaseDuration:            40 * time.Second,
		LeaseRenewFraction:       0.25,
		MemberLeaseNamespace:     metav1.NamespaceSystem,
		StatusUpdateFrequency:    c.StatusUpdateFrequency,
		FailureThreshold:         c.FailureThreshold,
		SuccessThreshold:         c.SuccessThreshold,
		ProbeTimeout:             c.ProbeTimeout,
		CollectInterval:          c.CollectInterval,
		EnableResourceModeling:   c.EnableResourceModeling,
		Concurrency:              10,
		QPS:                      200,
		Burst:                    400,
		EventBurst:               eventbudget.DefaultBurst,
		RotateCertificates:       true,
		CertificateRenewFraction: DefaultRenewFraction,
		HealthProbeBindAddress:   "127.0.0.1:10358",
		MetricsBindAddress:       "127.0.0.1:10359",
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ClusterName, "cluster-name", o.ClusterName, "Name of the Pull cluster this agent serves (its Cluster object in the control plane). Required.")
	fs.DurationVar(&o.LeaseDuration, "cluster-lease-duration", o.LeaseDuration, "Lease duration the agent writes into the cluster's Lease in the control plane.")
	fs.Float64Var(&o.LeaseRenewFraction, "cluster-lease-renew-interval-fraction", o.LeaseRenewFraction, "The Lease is renewed every --cluster-lease-duration times this fraction (at least 100ms).")
	fs.StringVar(&o.MemberLeaseNamespace, "member-lease-namespace", o.MemberLeaseNamespace, "Namespace of the member where the agent records its last Lease renewal (a Lease named lifeboat-agent-<cluster>), so that an agent restarted while the control plane does not answer fences its copies when due rather than at once.")
	fs.DurationVar(&o.StatusUpdateFrequency, "cluster-status-update-frequency", o.StatusUpdateFrequency, "How often the member's /readyz is probed and the Cluster's status updated.")
	fs.DurationVar(&o.FailureThreshold, "cluster-failure-threshold", o.FailureThreshold, "How long the member must keep failing its probe before its Ready condition turns False.")
	fs.DurationVar(&o.SuccessThreshold, "cluster-success-threshold", o.SuccessThreshold, "How long the member must keep passing its probe before its Ready condition turns True again.")
	fs.DurationVar(&o.ProbeTimeout, "cluster-probe-timeout", o.ProbeTimeout, "Timeout of each health-probe request to the member's API server.")
	fs.DurationVar(&o.CollectInterval, "cluster-status-collect-interval", o.CollectInterval, "How often the version, API enablements, node and resource summaries are refreshed.")
	fs.BoolVar(&o.EnableResourceModeling, "enable-cluster-resource-modeling", o.EnableResourceModeling, "Collect nodeSummary and resourceSummary (watches the member's nodes and non-terminal pods).")
	fs.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "Number of Works applied, and reported on, at once.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Client-side queries per second to the control plane (each Work's status report is one).")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Client-side burst to the control plane.")
	fs.IntVar(&o.EventBurst, "failover-event-burst", o.EventBurst,
		fmt.Sprintf("How many Events of one reason about this cluster's Works (applied to it, or their clean-up there waiting) are recorded on each Work at once, as the controller manager's flag of the same name does for Push clusters; past it one more every %s, and the rest are counted in an Event on the Cluster %s after the first one held back (later ones twice as far apart each time, at most 5 minutes), so that a mass failover into this cluster does not flood the control plane. 0 records every Event.",
			eventbudget.DefaultRefill, eventbudget.DefaultSummaryPeriod))
	fs.BoolVar(&o.RotateCertificates, "rotate-certificates", o.RotateCertificates,
		"Renew the agent's client certificate for the control plane before it expires: a request for a new key, authenticated by the current certificate, which the controller manager approves for the agent's own name. The new certificate is used at once (open connections are closed) and kept in --kubeconfig-secret, else in --kubeconfig. Without it the certificate lapses after the validity it was registered with, and the agent then fences its copies.")
	fs.Float64Var(&o.CertificateRenewFraction, "certificate-renew-fraction", o.CertificateRenewFraction,
		fmt.Sprintf("Share of the certificate's validity after which it is renewed, moved by up to a tenth of it either way so that agents registered together renew apart; more than 0, at most %g.", MaxRenewFraction))
	fs.DurationVar(&o.CertificateDuration, "certificate-duration", o.CertificateDuration,
		"Validity a renewal asks for, from 10m to 596523h (the control plane's signer may shorten it); 0 asks, at every renewal, for the validity of the certificate held at the first one since the agent started.")
	fs.StringVar(&o.KubeconfigSecret, "kubeconfig-secret", o.KubeconfigSecret,
		"NAMESPACE/NAME of a Secret in the member whose key \"kubeconfig\" holds --kubeconfig (mounted from it): with --rotate-certificates, renewed certificates are written there, and at start the agent uses the Secret's certificate when it expires later than the file's (a mounted Secret is updated with a delay) and is this agent's for the same control plane. Needs get and update on that Secret.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address serving /healthz and /readyz; empty or \"0\" disables them.")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address serving Prometheus /metrics; loopback by default; \"0\" disables it. Without --metrics-secure anyone who reaches it can read it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "Serve /metrics over HTTPS, only to bearer tokens the member's API server authenticates (TokenReview) for a user allowed to get the non-resource URL /metrics there (SubjectAccessReview); others get 401 or 403. The agent then needs to create tokenreviews and subjectaccessreviews in the member.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir, "Directory with the metrics serving certificate and key (tls.crt, tls.key; reloaded when they change), with --metrics-secure; empty (the default) uses a self-signed certificate made at start.")
}

// Validate reports flag values that cannot work.
func (o *Options) Validate() error {
	var errs []error
	if o.ClusterName == "" {
		errs = append(errs, errors.New("--cluster-name is required"))
	} else if err := cluster.ValidateClusterName(o.ClusterName); err != nil {
		// The rule, and the words, of every command that names a Cluster
		// (a DNS label of at most 48 characters, not 63): a name register
		// refuses is no cluster an agent can serve.
		errs = append(errs, fmt.Errorf("--cluster-name: %w", err))
	}
	if msgs := validation.IsDNS1123Label(o.MemberLeaseNamespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--member-lease-namespace %q: %s", o.MemberLeaseNamespace, msgs[0]))
	}
	switch {
	case o.LeaseDuration < time.Second:
		errs = append(errs, fmt.Errorf("--cluster-lease-duration %s: want at least 1s", o.LeaseDuration))
	case o.LeaseDuration > maxLeaseDuration:
		errs = append(errs, fmt.Errorf("--cluster-lease-duration %s: want at most %s", o.LeaseDuration, maxLeaseDuration))
	case o.LeaseDuration%time.Second != 0:
		// The Lease holds whole seconds: the control plane would count
		// with less than the agent fences by, and eat into the stop
		// margin.
		errs = append(errs, fmt.Errorf("--cluster-lease-duration %s: want whole seconds (the Lease holds seconds)", o.LeaseDuration))
	}
	if !(o.LeaseRenewFraction > 0 && o.LeaseRenewFraction < 1) { // NaN too
		errs = append(errs, fmt.Errorf("--cluster-lease-renew-interval-fraction %g: want a fraction between 0 and 1, such as 0.25", o.LeaseRenewFraction))
	} else if o.LeaseDuration >= time.Second && o.RenewInterval() < minRenewInterval {
		errs = append(errs, fmt.Errorf("--cluster-lease-duration %s x --cluster-lease-renew-interval-fraction %g renews every %s: want at least %s (each renewal gets one interval to be answered)",
			o.LeaseDuration, o.LeaseRenewFraction, o.RenewInterval(), minRenewInterval))
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--cluster-status-update-frequency", o.StatusUpdateFrequency},
		{"--cluster-probe-timeout", o.ProbeTimeout},
		{"--cluster-status-collect-interval", o.CollectInterval},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s %s: want a positive duration", d.flag, d.v))
		}
	}
	if o.FailureThreshold < 0 || o.SuccessThreshold < 0 {
		errs = append(errs, errors.New("--cluster-failure-threshold and --cluster-success-threshold must not be negative"))
	}
	if !(o.QPS > 0) || math.IsInf(float64(o.QPS), 0) || o.Burst < 1 { // NaN too
		errs = append(errs, fmt.Errorf("--kube-api-qps %g and --kube-api-burst %d: want positive, finite values", o.QPS, o.Burst))
	}
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("--concurrency %d: want at least 1", o.Concurrency))
	}
	if !(o.CertificateRenewFraction > 0 && o.CertificateRenewFraction <= MaxRenewFraction) { // NaN too
		errs = append(errs, fmt.Errorf("--certificate-renew-fraction %g: want more than 0 and at most %g", o.CertificateRenewFraction, MaxRenewFraction))
	}
	if o.CertificateDuration != 0 {
		if err := bootstrap.ValidateCertificateDuration(o.CertificateDuration); err != nil {
			errs = append(errs, fmt.Errorf("--certificate-duration %w", err))
		}
	}
	if o.KubeconfigSecret != "" {
		if _, _, err := splitSecretName(o.KubeconfigSecret); err != nil {
			errs = append(errs, err)
		}
	}
	if o.EventBurst < 0 {
		errs = append(errs, fmt.Errorf("--failover-event-burst %d: want 0 (every Event recorded) or more", o.EventBurst))
	}
	if err := o.metricsServing(nil).Validate(); err != nil {
		errs = append(errs, err)
	}
	// Checked here, before the Lease is renewed and fencing starts, not
	// when the endpoints are started.
	for _, a := range []struct {
		flag, addr string
		off        []string // the values that turn the endpoint off
	}{
		{"--health-probe-bind-address", o.HealthProbeBindAddress, []string{"", "0"}},
		{"--metrics-bind-address", o.MetricsBindAddress, []string{"0"}},
	} {
		if err := bindaddr.Check(a.flag, a.addr, a.off...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// metricsServing is how /metrics is served, its tokens reviewed at member.
func (o *Options) metricsServing(member *rest.Config) metricsauth.Serving {
	return metricsauth.Serving{
		BindAddress: o.MetricsBindAddress, Secure: o.MetricsSecure, CertDir: o.MetricsCertDir, ReviewAt: member,
		SecureFlag: "--metrics-secure", CertDirFlag: "--metrics-cert-dir",
	}
}

// splitSecretName parses --kubeconfig-secret's NAMESPACE/NAME.
func splitSecretName(s string) (namespace, name string, err error) {
	namespace, name, ok := strings.Cut(s, "/")
	if !ok || len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", "", fmt.Errorf("--kubeconfig-secret %q: want NAMESPACE/NAME of a Secret in the member", s)
	}
	return namespace, name, nil
}

// maxLeaseDuration bounds --cluster-lease-duration: the Lease holds the
// duration in seconds as an int32, and a day is longer than any control
// plane waits to fail a cluster over.
const maxLeaseDuration = 24 * time.Hour

// minRenewInterval is the shortest renew interval accepted: each renewal
// gets one interval to be answered, and a renewal that times out is
// followed by the next at once, so a shorter one would mostly time out and
// ask again without pause.
const minRenewInterval = 100 * time.Millisecond

// RenewInterval is how often the Lease is renewed.
func (o *Options) RenewInterval() time.Duration {
	return time.Duration(float64(o.LeaseDuration) * o.LeaseRenewFraction)
}

func loadConfig(path, context, what string) (*rest.Config, error) {
	if path == "" && what == "member" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --cluster-kubeconfig given and not running in a pod: %w", err)
		}
		return cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the %s kubeconfig: %w", what, err)
	}
	return cfg, nil
}

// Run runs the agent until ctx is done: it applies the Works of its
// cluster's execution namespace to the member and reports their status,
// reports the cluster's status, and renews the cluster's Lease.
func Run(ctx context.Context, o *Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", o.ClusterName)
	cpCfg, err := loadConfig(o.ControlPlaneKubeconfig, o.ControlPlaneContext, "control-plane")
	if err != nil {
		return err
	}
	cpCfg.UserAgent = "lifeboat-agent/" + o.ClusterName
	cpCfg.QPS, cpCfg.Burst = o.QPS, o.Burst
	memberCfg, err := loadConfig(o.MemberKubeconfig, o.MemberContext, "member")
	if err != nil {
		return err
	}
	rotator, err := o.certificates(ctx, cpCfg, memberCfg)
	if err != nil {
		return err
	}
	if rotator != nil {
		if cpCfg, err = rotator.Credentials.Config(cpCfg); err != nil {
			return err
		}
		if rotator.Client, err = kubernetes.NewForConfig(cpCfg); err != nil {
			return fmt.Errorf("building the certificate requests' client: %w", err)
		}
	}
	scheme, err := lbscheme.New()
	if err != nil {
		return err
	}
	direct, err := client.New(cpCfg, client.Options{Scheme: scheme, Mapper: directMapper()})
	if err != nil {
		return fmt.Errorf("building the control-plane client: %w", err)
	}
	clk := clock.RealClock{}
	quiet := &record.FakeRecorder{}
	ricLayer := customization.NewLayer(lua.New(lua.DefaultOptions()), quiet, clk)
	interp, err := customization.NewInterpreter(ricLayer)
	if err != nil {
		return fmt.Errorf("building the interpreter: %w", err)
	}
	// A fencing scan lists every kind of the member (about 60 requests):
	// at client-go's default of 5 requests a second it took 10 s, and
	// fenced copies that much later than due.
	fencingCfg := rest.CopyConfig(memberCfg)
	fencingCfg.QPS, fencingCfg.Burst = fencingQPS, 2*fencingQPS
	memberDynamic, err := dynamic.NewForConfig(fencingCfg)
	if err != nil {
		return fmt.Errorf("building the member's client: %w", err)
	}
	memberDiscovery, err := discovery.NewDiscoveryClientForConfig(fencingCfg)
	if err != nil {
		return fmt.Errorf("building the member's discovery client: %w", err)
	}
	memberLeases, err := coordinationclient.NewForConfig(memberCfg)
	if err != nil {
		return fmt.Errorf("building the member's Lease client: %w", err)
	}
	holder := holderIdentity(o.ClusterName)
	record := &RenewalRecord{
		Leases:    memberLeases,
		Namespace: o.MemberLeaseNamespace,
		Name:      RecordName(o.ClusterName),
		Holder:    holder,
		Duration:  o.LeaseDuration,
		Timeout:   max(o.RenewInterval(), time.Second),
		Clock:     clk,
	}
	renewer := &LeaseRenewer{
		Client:   direct,
		Cluster:  o.ClusterName,
		Holder:   holder,
		Duration: o.LeaseDuration,
		Interval: o.RenewInterval(),
		Clock:    clk,
		Record:   record,
	}
	fencer := &Fencer{
		Renewals:      renewer,
		LeaseDuration: o.LeaseDuration,
		Member:        memberDynamic,
		Discovery:     memberDiscovery,
		Replicas:      interp,
		Clock:         clk,
		Tick:          time.Second,
		Scan:          min(max(o.RenewInterval(), time.Second), fencing.MaxScan),
		Works:         direct,
	}

	// The renewer and the fencer run beside the manager, not in it: the
	// manager starts its runnables only once its caches have synced,
	// which never happens while the control plane cannot be reached, and
	// that is when fencing matters.
	// They stop when Run returns, not when ctx ends: the Lease is renewed
	// while the manager shuts down, so a restarted agent leaves only its
	// start-up time without a renewal.
	side, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	run := func(r interface{ Start(context.Context) error }) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = r.Start(side)
		}()
	}
	var fencing sync.Once
	startFencer := func() { fencing.Do(func() { run(fencer) }) }
	run(record)
	run(renewer)
	if rotator != nil {
		run(rotator)
	}
	// The Cluster must be this agent's: nothing is fenced or applied for
	// a cluster that does not exist, is Push, or is not this agent's to
	// read. A control plane that cannot be reached is not an answer: the
	// fencer starts (an agent restarted during a partition must fence),
	// and the check is tried again; refused credentials are not one
	// either once a renewal is known (see clusterWait.Run). Each check
	// gets one renew interval (1 s to 10 s), so that the fencer runs
	// before a copy is due.
	probes, err := serveWaitingProbes(o.HealthProbeBindAddress, o.ClusterName)
	if err != nil {
		return err
	}
	wait := &clusterWait{
		Reader:  direct,
		Name:    o.ClusterName,
		Timeout: min(max(o.RenewInterval(), time.Second), 10*time.Second),
		Fence:   startFencer,
		Renewed: func() (bool, bool) {
			return !renewer.LastRenewed().IsZero(), renewer.Attempted()
		},
		Waiting:      probes.Waiting,
		Retry:        2 * time.Second,
		RefusedRetry: 30 * time.Second,
	}
	err = wait.Run(ctx)
	if cerr := probes.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("handing the health probes to the manager: %w", cerr)
	}
	if err != nil {
		return err
	}
	startFencer()

	namespace := clusterv1alpha1.ExecutionSpacePrefix + o.ClusterName
	mgrOpts, err := managerOptions(o, scheme, memberCfg)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cpCfg, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := (&customization.Reconciler{Client: mgr.GetClient(), Recorder: quiet, Layer: ricLayer}).SetupWithManager(mgr); err != nil {
		return err
	}

	local := membercluster.LocalConfig(o.ClusterName, memberCfg)
	memberOpts := membercluster.DefaultOptions()
	memberOpts.Config = local
	members := membercluster.New(mgr.GetClient(), memberOpts)
	if err := mgr.Add(members); err != nil {
		return err
	}
	//lint:ignore SA1019 the core/v1 recorder, as the controller manager's
	workRecorder := mgr.GetEventRecorderFor("lifeboat-agent")
	// The summaries are read from the cache, which holds this agent's own
	// Cluster, and recorded in the namespace default, as its Ready
	// changes are.
	events, err := eventbudget.ForProcess(mgr.GetConfig(), mgr.GetScheme(), mgr.GetClient(), o.EventBurst, ctrlmetrics.Registry)
	if err != nil {
		return err
	}
	if events != nil {
		if err := mgr.Add(events); err != nil {
			return fmt.Errorf("adding the Works' Events' budget: %w", err)
		}
	}
	exec := &execution.Reconciler{
		Hold:                    fencer.Holds,
		Client:                  mgr.GetClient(),
		Recorder:                workRecorder,
		Events:                  events,
		Interpreter:             interp,
		Members:                 members,
		MaxConcurrentReconciles: o.Concurrency,
		Agent:                   true,
	}
	ws := &workstatus.Reconciler{
		Client:                  mgr.GetClient(),
		Recorder:                workRecorder,
		Interpreter:             interp,
		Members:                 members,
		MaxConcurrentReconciles: o.Concurrency,
		Agent:                   true,
	}
	if err := workstatus.SetupWithExecution(mgr, clk, exec, ws); err != nil {
		return err
	}
	ricLayer.OnKindChanged(ws.RequeueKind)

	if err := (&cluster.StatusReconciler{
		Client:                 mgr.GetClient(),
		Members:                cluster.NewMemberFactory(mgr.GetAPIReader(), o.ProbeTimeout, o.EnableResourceModeling).WithConfig(local),
		Recorder:               mgr.GetEventRecorder("lifeboat-agent"),
		Clock:                  clk,
		StatusUpdateFrequency:  o.StatusUpdateFrequency,
		FailureThreshold:       o.FailureThreshold,
		SuccessThreshold:       o.SuccessThreshold,
		ProbeTimeout:           o.ProbeTimeout,
		CollectInterval:        o.CollectInterval,
		EnableResourceModeling: o.EnableResourceModeling,
		ConcurrentSyncs:        1,
		Agent:                  true,
	}).SetupWithManager(mgr); err != nil {
		return err
	}

	fencer.SetOnUnfenced(func(ctx context.Context) { applyAgain(ctx, mgr.GetClient(), namespace, exec) })
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	log.Info("starting agent", "namespace", namespace, "leaseDuration", o.LeaseDuration, "renewInterval", o.RenewInterval())
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running agent: %w", err)
	}
	return nil
}

// certificates exports the expiry of the agent's client certificate for the
// control plane and, with --rotate-certificates, returns the Rotator that
// renews it (nil when the agent authenticates otherwise, or does not
// renew). With --kubeconfig-secret the Secret's certificate is used when it
// is this agent's, for the same control plane, and expires later than the
// file's.
func (o *Options) certificates(ctx context.Context, cpCfg, memberCfg *rest.Config) (*Rotator, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", o.ClusterName)
	certPEM, keyPEM, certified, err := CredentialsOf(cpCfg)
	if err != nil {
		return nil, fmt.Errorf("the control-plane kubeconfig: %w", err)
	}
	if !certified {
		return nil, nil
	}
	creds, err := NewCredentials(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("the control-plane kubeconfig: %w", err)
	}
	gauge, err := CertificateExpiryGauge(ctrlmetrics.Registry)
	if err != nil {
		return nil, fmt.Errorf("registering the certificate's expiry: %w", err)
	}
	plugin := cpCfg.ExecProvider != nil || cpCfg.AuthProvider != nil
	if !o.RotateCertificates || plugin {
		expiry := creds.Certificate().NotAfter
		gauge.Set(float64(expiry.Unix()))
		if plugin && o.RotateCertificates {
			log.Info("WARNING: the control-plane kubeconfig also names a credential plugin; its client certificate is not renewed")
		}
		if left := time.Until(expiry); left < CertificateWarning {
			log.Info("WARNING: the agent's client certificate expires soon and is not renewed; register again (lifeboat token create, lifeboat register) and restart the agent, or the control plane will refuse it and the agent will fence its copies",
				"expires", expiry.UTC().Format(time.RFC3339), "left", left.Round(time.Minute).String())
		}
		return nil, nil
	}
	var store CertificateStore
	switch {
	case o.KubeconfigSecret != "":
		namespace, name, _ := splitSecretName(o.KubeconfigSecret)
		secrets, err := kubernetes.NewForConfig(memberCfg)
		if err != nil {
			return nil, fmt.Errorf("building the member's Secret client: %w", err)
		}
		s := &KubeconfigSecret{Secrets: secrets.CoreV1(), Namespace: namespace, Name: name, Context: o.ControlPlaneContext}
		store = s
		read, cancel := context.WithTimeout(ctx, 10*time.Second)
		kept, err := s.Load(read)
		cancel()
		if err != nil {
			log.Error(err, "reading the agent's kubeconfig from its Secret failed; starting with --kubeconfig's certificate")
		} else if newer, why := laterCertificate(o.ClusterName, cpCfg, creds, kept, time.Now()); newer != nil {
			log.Info("starting with the Secret's certificate, which expires later than the mounted file's (not updated yet)", "secret", o.KubeconfigSecret)
			creds = newer
		} else if why != "" {
			log.Info("WARNING: the certificate in the agent's Secret is not used", "secret", o.KubeconfigSecret, "reason", why)
		}
	case o.ControlPlaneKubeconfig != "":
		f := &KubeconfigFile{Path: o.ControlPlaneKubeconfig, Context: o.ControlPlaneContext}
		if err := f.Writable(); err != nil {
			log.Info("WARNING: the agent's kubeconfig cannot be rewritten, so a renewed certificate is kept in memory only and a restarted agent starts with the previous one; with a kubeconfig mounted from a Secret, give --kubeconfig-secret", "kubeconfig", f.Path, "reason", err.Error())
		} else {
			store = f
		}
	default:
		log.Info("WARNING: " + errNoStore.Error())
	}
	gauge.Set(float64(creds.Certificate().NotAfter.Unix()))
	return &Rotator{
		Credentials: creds,
		Cluster:     o.ClusterName,
		Fraction:    o.CertificateRenewFraction,
		Duration:    o.CertificateDuration,
		Store:       store,
		Expiry:      gauge,
		Clock:       clock.RealClock{},
		Jitter:      rand.Float64,
		Timeout:     bootstrap.DefaultRegisterTimeout,
	}, nil
}

// laterCertificate returns the Credentials of kept, the kubeconfig kept in
// the agent's Secret, when they are better than creds, loaded from cpCfg:
// for the same server and CA, this cluster's agent, valid at now, and
// expiring later. Otherwise nil, with why not when kept is unusable ("" when
// it is merely not later).
func laterCertificate(clusterName string, cpCfg *rest.Config, creds *Credentials, kept *rest.Config, now time.Time) (*Credentials, string) {
	if kept.Host != cpCfg.Host || !bytes.Equal(kept.CAData, cpCfg.CAData) || kept.CAFile != cpCfg.CAFile {
		return nil, fmt.Sprintf("its kubeconfig names another control plane (%s) or CA than --kubeconfig (%s)", kept.Host, cpCfg.Host)
	}
	certPEM, keyPEM, ok, err := CredentialsOf(kept)
	if err != nil || !ok {
		return nil, fmt.Sprintf("its kubeconfig has no usable client certificate (%v)", err)
	}
	c, err := NewCredentials(certPEM, keyPEM)
	if err != nil {
		return nil, err.Error()
	}
	cert := c.Certificate()
	switch {
	case cert.Subject.CommonName != bootstrap.AgentUser(clusterName):
		return nil, fmt.Sprintf("its certificate is for %q, not %q", cert.Subject.CommonName, bootstrap.AgentUser(clusterName))
	case !now.Before(cert.NotAfter) || now.Before(cert.NotBefore):
		return nil, fmt.Sprintf("its certificate is valid from %s to %s only", cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339))
	case !cert.NotAfter.After(creds.Certificate().NotAfter):
		return nil, ""
	}
	return c, ""
}

// fencingQPS limits the fencer's requests to the member.
const fencingQPS = 100

// ShutdownTimeout bounds the agent's stop: the controllers' passes in
// progress and the caches get that long to end, so that a stop under load
// ends on its own instead of outlasting the grace its supervisor gives
// (controller-runtime waits 30 s by default).
const ShutdownTimeout = 5 * time.Second

// managerOptions are the agent's manager's options. The agent may read only
// its own Cluster and the Works of its execution namespace: the caches ask
// for nothing else.
func managerOptions(o *Options, scheme *runtime.Scheme, memberCfg *rest.Config) (ctrl.Options, error) {
	namespace := clusterv1alpha1.ExecutionSpacePrefix + o.ClusterName
	shutdown := ShutdownTimeout
	// A scraper runs in the member, with the member's credentials: its
	// token is reviewed there, not by the control plane.
	metrics, err := metricsauth.ServerOptions(o.metricsServing(memberCfg))
	if err != nil {
		return ctrl.Options{}, err
	}
	return ctrl.Options{
		Scheme: scheme,
		Cache: cache.Options{
			DefaultTransform: intern.Transform,
			ByObject: map[client.Object]cache.ByObject{
				&workv1alpha1.Work{}:       {Namespaces: map[string]cache.Config{namespace: {}}},
				&clusterv1alpha1.Cluster{}: {Field: fields.OneTermEqualSelector("metadata.name", o.ClusterName)},
			},
		},
		HealthProbeBindAddress:  o.HealthProbeBindAddress,
		Metrics:                 metrics,
		GracefulShutdownTimeout: &shutdown,
	}, nil
}

// applyAgain hands every Work of namespace to the execution controller,
// which applies those whose copies the fencer stopped (and that are still
// wanted) again.
func applyAgain(ctx context.Context, c client.Reader, namespace string, exec *execution.Reconciler) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var works workv1alpha1.WorkList
	if err := c.List(ctx, &works, client.InNamespace(namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the Works to apply again after fencing; they are applied at their next change")
		return
	}
	for i := range works.Items {
		exec.NotifyDrift(client.ObjectKeyFromObject(&works.Items[i]))
	}
}

// clusterWait waits until the control plane confirms the agent's
// Cluster, fencing meanwhile when it must.
type clusterWait struct {
	Reader client.Reader
	Name   string
	// Timeout bounds each check: a request into a partition can hang
	// until TCP gives up.
	Timeout time.Duration
	// Fence starts the fencer (it may be called more than once).
	Fence func()
	// Renewed says whether a renewal of the cluster's Lease is known,
	// this process's or the one recorded in the member; tried says
	// whether that can be told yet (the first renewal was tried).
	Renewed func() (renewed, tried bool)
	// Waiting tells the health probes what the agent waits for.
	Waiting func(why string)
	// Retry is the pause after a check the control plane did not
	// answer; RefusedRetry after one that refused the credentials.
	Retry, RefusedRetry time.Duration
}

// Run waits until checkCluster accepts the Cluster, returning its refusal
// when it has one. While the control plane does not answer, the fencer
// runs and the check is tried again.
//
// Credentials the control plane refuses (expired, revoked, or no longer
// allowed to read the Cluster) end the start only when no renewal of the
// Lease is known: then nothing of this cluster can be due. When one is
// known, the control plane counts the copies stopped from it, as after a
// partition, so the agent stays up and fences them when due instead of
// exiting (and being restarted, and exiting again, without ever fencing);
// /readyz says why it waits.
func (w *clusterWait) Run(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", w.Name)
	refusedLogged := false
	for {
		checkCtx, cancel := context.WithTimeout(ctx, w.Timeout)
		answer, err := checkCluster(checkCtx, w.Reader, w.Name)
		cancel()
		pause := w.Retry
		switch answer {
		case clusterConfirmed:
			return nil
		case clusterRefused:
			return err
		case credentialsRefused:
			renewed, tried := w.Renewed()
			if tried && !renewed {
				return err
			}
			if !tried {
				break
			}
			if !refusedLogged {
				log.Error(err, "the control plane refused the agent's credentials; the agent stays up to fence the copies when due, and tries again", "every", w.RefusedRetry)
				refusedLogged = true
			}
			w.Waiting(fmt.Sprintf("the control plane refused the credentials of the agent of Cluster %s; fencing the copies when due: %v", w.Name, err))
			w.Fence()
			pause = w.RefusedRetry
		default:
			log.Error(err, "cannot reach the control plane to check the Cluster; fencing runs meanwhile, trying again")
			w.Fence()
		}
		select {
		case <-ctx.Done():
			// A stop while waiting is the agent's stop, not a failure.
			return nil
		case <-time.After(pause):
		}
	}
}

// clusterAnswer is what the control plane said of the agent's Cluster.
type clusterAnswer int

const (
	// noAnswer: the control plane could not be asked; ask again.
	noAnswer clusterAnswer = iota
	// clusterConfirmed: the agent's Pull cluster.
	clusterConfirmed
	// clusterRefused: not a cluster this agent serves.
	clusterRefused
	// credentialsRefused: the control plane refused the credentials.
	credentialsRefused
)

// checkCluster refuses to start for a cluster that is not a Pull cluster of
// the control plane, before anything is applied.
func checkCluster(ctx context.Context, c client.Reader, name string) (clusterAnswer, error) {
	var cl clusterv1alpha1.Cluster
	err := c.Get(ctx, types.NamespacedName{Name: name}, &cl)
	switch {
	case apierrors.IsNotFound(err):
		return clusterRefused, fmt.Errorf("cluster %s does not exist in the control plane: register it with `lifeboat token create --cluster %s` and `lifeboat register`", name, name)
	case apierrors.IsForbidden(err):
		return credentialsRefused, fmt.Errorf("the control-plane credentials may not read Cluster %s (are they another cluster's agent's?): %w", name, err)
	case apierrors.IsUnauthorized(err):
		return credentialsRefused, fmt.Errorf("the control plane refused the agent's credentials (expired or revoked?); register the cluster again: %w", err)
	case err != nil:
		return noAnswer, fmt.Errorf("reading Cluster %s from the control plane: %w", name, err)
	}
	if cl.Spec.SyncMode != clusterv1alpha1.Pull {
		return clusterRefused, fmt.Errorf("cluster %s is joined in %s mode: an agent serves Pull clusters only (unjoin it first, or choose another name)", name, cl.Spec.SyncMode)
	}
	return clusterConfirmed, nil
}

// directMapper maps the kinds the agent reads and writes with its direct
// client, the Lease and the Cluster before its manager runs and the Works
// the fencer confirms, without asking the control plane: a
// mapper that asked discovery would make those requests wait out the
// transport's TLS handshake timeout behind a partition, whatever their
// context allows, and so hold back the first renewal's failure and the
// fencing that counts on it.
func directMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(coordinationv1.SchemeGroupVersion.WithKind("Lease"), meta.RESTScopeNamespace)
	m.Add(clusterv1alpha1.SchemeGroupVersion.WithKind("Cluster"), meta.RESTScopeRoot)
	m.Add(workv1alpha1.SchemeGroupVersion.WithKind("Work"), meta.RESTScopeNamespace)
	return m
}

// holderIdentity names this agent process in the Lease.
func holderIdentity(cluster string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return cluster
	}
	return cluster + "/" + host
}
