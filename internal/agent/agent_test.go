package agent

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

func TestOptionsValidate(t *testing.T) {
	valid := func() *Options {
		o := NewOptions()
		o.ClusterName = "member3"
		return o
	}
	cases := map[string]struct {
		edit    func(*Options)
		wantErr string
	}{
		"defaults":                  {func(*Options) {}, ""},
		"metrics cert dir alone":    {func(o *Options) { o.MetricsCertDir = "/etc/metrics" }, "--metrics-cert-dir needs --metrics-secure"},
		"metrics cert dir empty":    {func(o *Options) { o.MetricsSecure, o.MetricsCertDir = true, "/nonexistent/metrics" }, "--metrics-cert-dir /nonexistent/metrics"},
		"metrics secure":            {func(o *Options) { o.MetricsSecure = true }, ""},
		"no cluster name":           {func(o *Options) { o.ClusterName = "" }, "--cluster-name is required"},
		"cluster name not DNS":      {func(o *Options) { o.ClusterName = "Member_3" }, `--cluster-name: invalid cluster name "Member_3"`},
		"cluster name of 48":        {func(o *Options) { o.ClusterName = strings.Repeat("a", 48) }, ""},
		"cluster name of 49":        {func(o *Options) { o.ClusterName = strings.Repeat("a", 49) }, `--cluster-name: cluster name "` + strings.Repeat("a", 49) + `" is longer than 48 characters`},
		"lease under a second":      {func(o *Options) { o.LeaseDuration = 500 * time.Millisecond }, "--cluster-lease-duration"},
		"lease past a day":          {func(o *Options) { o.LeaseDuration = 1193046*time.Hour + 28*time.Minute + 56*time.Second }, "want at most 24h0m0s"},
		"lease of a day":            {func(o *Options) { o.LeaseDuration = 24 * time.Hour }, ""},
		"lease of 1.5s":             {func(o *Options) { o.LeaseDuration = 1500 * time.Millisecond }, "want whole seconds"},
		"fraction of one":           {func(o *Options) { o.LeaseRenewFraction = 1 }, "--cluster-lease-renew-interval-fraction"},
		"fraction zero":             {func(o *Options) { o.LeaseRenewFraction = 0 }, "--cluster-lease-renew-interval-fraction"},
		"renewed every 10ms":        {func(o *Options) { o.LeaseDuration, o.LeaseRenewFraction = time.Second, 0.01 }, "renews every 10ms: want at least 100ms"},
		"renewed every 100ms":       {func(o *Options) { o.LeaseDuration, o.LeaseRenewFraction = time.Second, 0.1 }, ""},
		"no member namespace":       {func(o *Options) { o.MemberLeaseNamespace = "" }, "--member-lease-namespace \"\""},
		"member namespace Kube":     {func(o *Options) { o.MemberLeaseNamespace = "Kube_System" }, "--member-lease-namespace \"Kube_System\""},
		"no probe period":           {func(o *Options) { o.StatusUpdateFrequency = 0 }, "--cluster-status-update-frequency"},
		"negative threshold":        {func(o *Options) { o.FailureThreshold = -time.Second }, "--cluster-failure-threshold"},
		"no workers":                {func(o *Options) { o.Concurrency = 0 }, "--concurrency"},
		"no qps":                    {func(o *Options) { o.QPS = 0 }, "--kube-api-qps"},
		"zero collect interval":     {func(o *Options) { o.CollectInterval = 0 }, "--cluster-status-collect-interval"},
		"negative event burst":      {func(o *Options) { o.EventBurst = -1 }, "--failover-event-burst -1"},
		"every Event recorded":      {func(o *Options) { o.EventBurst = 0 }, ""},
		"fraction NaN":              {func(o *Options) { o.LeaseRenewFraction = math.NaN() }, "--cluster-lease-renew-interval-fraction NaN"},
		"qps NaN":                   {func(o *Options) { o.QPS = float32(math.NaN()) }, "--kube-api-qps NaN"},
		"qps +Inf":                  {func(o *Options) { o.QPS = float32(math.Inf(1)) }, "--kube-api-qps +Inf"},
		"renew fraction zero":       {func(o *Options) { o.CertificateRenewFraction = 0 }, "--certificate-renew-fraction 0"},
		"renew fraction 0.8":        {func(o *Options) { o.CertificateRenewFraction = 0.8 }, ""},
		"renew fraction 0.85":       {func(o *Options) { o.CertificateRenewFraction = 0.85 }, "at most 0.8"},
		"renew fraction NaN":        {func(o *Options) { o.CertificateRenewFraction = math.NaN() }, "--certificate-renew-fraction NaN"},
		"duration 10m":              {func(o *Options) { o.CertificateDuration = 10 * time.Minute }, ""},
		"duration 9m":               {func(o *Options) { o.CertificateDuration = 9 * time.Minute }, "--certificate-duration 9m0s: the API server accepts"},
		"duration past int32":       {func(o *Options) { o.CertificateDuration = (math.MaxInt32 + 1) * time.Second }, "--certificate-duration"},
		"negative duration":         {func(o *Options) { o.CertificateDuration = -time.Hour }, "--certificate-duration"},
		"secret ns/name":            {func(o *Options) { o.KubeconfigSecret = "lifeboat-system/lifeboat-agent-kubeconfig" }, ""},
		"secret without ns":         {func(o *Options) { o.KubeconfigSecret = "lifeboat-agent-kubeconfig" }, "want NAMESPACE/NAME"},
		"secret with two slashes":   {func(o *Options) { o.KubeconfigSecret = "a/b/c" }, "want NAMESPACE/NAME"},
		"secret with no name":       {func(o *Options) { o.KubeconfigSecret = "a/" }, "want NAMESPACE/NAME"},
		"metrics port past 65535":   {func(o *Options) { o.MetricsBindAddress = ":99999" }, `--metrics-bind-address ":99999": port "99999": want HOST:PORT with a port from 0 to 65535, or "0" to turn it off`},
		"metrics without a port":    {func(o *Options) { o.MetricsBindAddress = "127.0.0.1" }, `--metrics-bind-address "127.0.0.1": want HOST:PORT`},
		"metrics address empty":     {func(o *Options) { o.MetricsBindAddress = "" }, `--metrics-bind-address "": want HOST:PORT`},
		"metrics named port":        {func(o *Options) { o.MetricsBindAddress = "localhost:http" }, `port "http"`},
		"metrics negative port":     {func(o *Options) { o.MetricsBindAddress = ":-1" }, `port "-1"`},
		"metrics off":               {func(o *Options) { o.MetricsBindAddress = "0" }, ""},
		"metrics on every iface":    {func(o *Options) { o.MetricsBindAddress = ":10359" }, ""},
		"metrics on IPv6":           {func(o *Options) { o.MetricsBindAddress = "[::1]:10359" }, ""},
		"metrics on port 0":         {func(o *Options) { o.MetricsBindAddress = "127.0.0.1:0" }, ""},
		"metrics on port 65535":     {func(o *Options) { o.MetricsBindAddress = ":65535" }, ""},
		"health not an address":     {func(o *Options) { o.HealthProbeBindAddress = "bogus" }, `--health-probe-bind-address "bogus": want HOST:PORT`},
		"health port past 65535":    {func(o *Options) { o.HealthProbeBindAddress = ":65536" }, `--health-probe-bind-address ":65536": port "65536"`},
		"health address empty: off": {func(o *Options) { o.HealthProbeBindAddress = "" }, ""},
		"health off":                {func(o *Options) { o.HealthProbeBindAddress = "0" }, ""},
		"health on a host name":     {func(o *Options) { o.HealthProbeBindAddress = "localhost:10358" }, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := valid()
			tc.edit(o)
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestRenewInterval(t *testing.T) {
	o := NewOptions()
	if got, want := o.RenewInterval(), 10*time.Second; got != want {
		t.Errorf("RenewInterval() = %s, want %s (40s x 0.25, as Karmada's agent)", got, want)
	}
}

// A renewal moves renewTime and keeps the holder's acquire time; a new
// holder is a transition.
func TestRenewed(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var lease coordinationv1.Lease
	Renewed(&lease, "member3/a", 40*time.Second, t0)
	if got := *lease.Spec.HolderIdentity; got != "member3/a" {
		t.Errorf("holder = %q", got)
	}
	if got := *lease.Spec.LeaseDurationSeconds; got != 40 {
		t.Errorf("leaseDurationSeconds = %d, want 40", got)
	}
	if got := ptr.Deref(lease.Spec.LeaseTransitions, 0); got != 1 {
		t.Errorf("leaseTransitions = %d after the first holder, want 1", got)
	}

	t1 := t0.Add(10 * time.Second)
	Renewed(&lease, "member3/a", 40*time.Second, t1)
	if !lease.Spec.RenewTime.Time.Equal(t1) || !lease.Spec.AcquireTime.Time.Equal(t0) {
		t.Errorf("renewTime %v acquireTime %v, want %v and %v", lease.Spec.RenewTime, lease.Spec.AcquireTime, t1, t0)
	}
	if got := ptr.Deref(lease.Spec.LeaseTransitions, 0); got != 1 {
		t.Errorf("leaseTransitions = %d after a renewal by the same holder, want 1", got)
	}

	t2 := t1.Add(time.Second)
	Renewed(&lease, "member3/b", 1500*time.Millisecond, t2)
	if !lease.Spec.AcquireTime.Time.Equal(t2) || ptr.Deref(lease.Spec.LeaseTransitions, 0) != 2 {
		t.Errorf("a new holder: acquireTime %v transitions %d, want %v and 2", lease.Spec.AcquireTime, ptr.Deref(lease.Spec.LeaseTransitions, 0), t2)
	}
	if got := *lease.Spec.LeaseDurationSeconds; got != 1 {
		t.Errorf("leaseDurationSeconds = %d for 1.5s, want 1 (whole seconds, at least 1)", got)
	}
}

// The control plane's answers end the start; failing to get one does not.
func TestCheckCluster(t *testing.T) {
	c := clusterReader(t, nil)
	cases := map[string]struct {
		c       client.Reader
		name    string
		want    clusterAnswer
		wantErr string
	}{
		"pull":         {c, "edge1", clusterConfirmed, ""},
		"push":         {c, "member1", clusterRefused, "joined in Push mode"},
		"missing":      {c, "edge2", clusterRefused, "does not exist in the control plane"},
		"unreachable":  {clusterReader(t, errors.New("dial tcp 127.0.0.1:6443: i/o timeout")), "edge1", noAnswer, "i/o timeout"},
		"unauthorized": {clusterReader(t, apierrors.NewUnauthorized("certificate has expired")), "edge1", credentialsRefused, "refused the agent's credentials"},
		"forbidden":    {clusterReader(t, apierrors.NewForbidden(clusterv1alpha1.Resource("clusters"), "edge1", errors.New("no"))), "edge1", credentialsRefused, "may not read Cluster edge1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := checkCluster(context.Background(), tc.c, tc.name)
			if got != tc.want || (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("checkCluster = %d, %v; want %d and an error containing %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// clusterReader serves a Pull cluster edge1 and a Push cluster member1,
// or fails every read with err.
func clusterReader(t *testing.T, err error) client.Reader {
	t.Helper()
	scheme, serr := lbscheme.New()
	if serr != nil {
		t.Fatal(serr)
	}
	pull := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "edge1"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}
	push := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push}}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pull, push)
	if err != nil {
		b = b.WithInterceptorFuncs(interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return err
			},
		})
	}
	return b.Build()
}

// An agent whose credentials the control plane refuses exits when no
// renewal of its Lease is known (nothing can be due), and otherwise stays
// up fencing, saying why on /readyz; a control plane that does not answer
// starts the fencer too; a confirmed Pull cluster ends the wait.
func TestClusterWait(t *testing.T) {
	expired := apierrors.NewUnauthorized("certificate has expired")
	cases := map[string]struct {
		err            error
		renewed, tried bool
		wantReturn     string // "" nil, "-" keeps waiting (then nil once stopped)
		wantFence      bool
		wantWaiting    string
	}{
		"confirmed":                      {nil, true, true, "", false, ""},
		"refused, no renewal known":      {expired, false, true, "refused the agent's credentials", false, ""},
		"refused, a renewal known":       {expired, true, true, "-", true, "refused the credentials of the agent of Cluster edge1"},
		"refused, first renewal not yet": {expired, true, false, "-", false, ""},
		"no answer":                      {errors.New("i/o timeout"), false, false, "-", true, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			fenced, waiting := 0, ""
			w := &clusterWait{
				Reader:  clusterReader(t, tc.err),
				Name:    "edge1",
				Timeout: time.Second,
				Fence:   func() { mu.Lock(); fenced++; mu.Unlock() },
				Renewed: func() (bool, bool) { return tc.renewed, tc.tried },
				Waiting: func(why string) { mu.Lock(); waiting = why; mu.Unlock() },
				Retry:   10 * time.Millisecond, RefusedRetry: 10 * time.Millisecond,
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			err := w.Run(ctx)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case tc.wantReturn == "-" && (err != nil || ctx.Err() == nil):
				t.Errorf("Run = %v (context: %v), want it to keep waiting until the context ends, and then nil: a stop is no failure", err, ctx.Err())
			case tc.wantReturn == "" && err != nil:
				t.Errorf("Run = %v, want nil", err)
			case tc.wantReturn != "" && tc.wantReturn != "-" && (err == nil || !strings.Contains(err.Error(), tc.wantReturn)):
				t.Errorf("Run = %v, want an error containing %q", err, tc.wantReturn)
			}
			if (fenced > 0) != tc.wantFence {
				t.Errorf("fencer started %d times, want started: %t", fenced, tc.wantFence)
			}
			if !strings.Contains(waiting, tc.wantWaiting) || (tc.wantWaiting == "" && waiting != "") {
				t.Errorf("/readyz says %q, want %q", waiting, tc.wantWaiting)
			}
		})
	}
}

// The agent's stop is bounded, and its caches ask only for its own Works
// and Cluster.
func TestManagerOptions(t *testing.T) {
	o := NewOptions()
	o.ClusterName = "member3"
	got, err := managerOptions(o, nil, &rest.Config{Host: "https://member.example"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Metrics.SecureServing || got.Metrics.FilterProvider != nil {
		t.Errorf("metrics secured by default; loopback plain HTTP is the default")
	}
	if got.GracefulShutdownTimeout == nil || *got.GracefulShutdownTimeout <= 0 || *got.GracefulShutdownTimeout > ShutdownTimeout {
		t.Errorf("graceful shutdown timeout %v, want at most %s", got.GracefulShutdownTimeout, ShutdownTimeout)
	}
	if len(got.Cache.ByObject) != 2 {
		t.Fatalf("cache restricted for %d kinds, want Works and Clusters", len(got.Cache.ByObject))
	}
	for obj, by := range got.Cache.ByObject {
		switch obj.(type) {
		case *workv1alpha1.Work:
			if _, ok := by.Namespaces["karmada-es-member3"]; !ok || len(by.Namespaces) != 1 {
				t.Errorf("Works cached from %v, want karmada-es-member3 only", by.Namespaces)
			}
		case *clusterv1alpha1.Cluster:
			if by.Field == nil || by.Field.String() != "metadata.name=member3" {
				t.Errorf("Clusters cached with selector %v, want metadata.name=member3", by.Field)
			}
		default:
			t.Errorf("unexpected cache restriction for %T", obj)
		}
	}
}

// The agent's control-plane client maps the Lease and the Cluster without
// discovery.
func TestDirectMapper(t *testing.T) {
	m := directMapper()
	for _, tc := range []struct {
		gvk        schema.GroupVersionKind
		resource   string
		namespaced bool
	}{
		{coordinationv1.SchemeGroupVersion.WithKind("Lease"), "leases", true},
		{clusterv1alpha1.SchemeGroupVersion.WithKind("Cluster"), "clusters", false},
		{workv1alpha1.SchemeGroupVersion.WithKind("Work"), "works", true},
	} {
		mapping, err := m.RESTMapping(tc.gvk.GroupKind(), tc.gvk.Version)
		if err != nil {
			t.Fatalf("%s: %v", tc.gvk, err)
		}
		if mapping.Resource.Resource != tc.resource || (mapping.Scope.Name() == meta.RESTScopeNameNamespace) != tc.namespaced {
			t.Errorf("%s: resource %s, scope %s; want %s, namespaced %t", tc.gvk, mapping.Resource.Resource, mapping.Scope.Name(), tc.resource, tc.namespaced)
		}
	}
}
