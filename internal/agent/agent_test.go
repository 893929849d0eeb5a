package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
		"defaults":              {func(*Options) {}, ""},
		"no cluster name":       {func(o *Options) { o.ClusterName = "" }, "--cluster-name is required"},
		"cluster name not DNS":  {func(o *Options) { o.ClusterName = "Member_3" }, `--cluster-name "Member_3"`},
		"lease under a second":  {func(o *Options) { o.LeaseDuration = 500 * time.Millisecond }, "--cluster-lease-duration"},
		"fraction of one":       {func(o *Options) { o.LeaseRenewFraction = 1 }, "--cluster-lease-renew-interval-fraction"},
		"fraction zero":         {func(o *Options) { o.LeaseRenewFraction = 0 }, "--cluster-lease-renew-interval-fraction"},
		"renewed every 10ms":    {func(o *Options) { o.LeaseDuration, o.LeaseRenewFraction = time.Second, 0.01 }, "renews every 10ms: want at least 100ms"},
		"renewed every 100ms":   {func(o *Options) { o.LeaseDuration, o.LeaseRenewFraction = time.Second, 0.1 }, ""},
		"no member namespace":   {func(o *Options) { o.MemberLeaseNamespace = "" }, "--member-lease-namespace \"\""},
		"member namespace Kube": {func(o *Options) { o.MemberLeaseNamespace = "Kube_System" }, "--member-lease-namespace \"Kube_System\""},
		"no probe period":       {func(o *Options) { o.StatusUpdateFrequency = 0 }, "--cluster-status-update-frequency"},
		"negative threshold":    {func(o *Options) { o.FailureThreshold = -time.Second }, "--cluster-failure-threshold"},
		"no workers":            {func(o *Options) { o.Concurrency = 0 }, "--concurrency"},
		"no qps":                {func(o *Options) { o.QPS = 0 }, "--kube-api-qps"},
		"zero collect interval": {func(o *Options) { o.CollectInterval = 0 }, "--cluster-status-collect-interval"},
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
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	pull := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "edge1"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}
	push := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pull, push).Build()
	unreachable := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("dial tcp 127.0.0.1:6443: i/o timeout")
		},
	}).Build()
	cases := map[string]struct {
		c         client.Reader
		name      string
		wantFinal bool
		wantErr   string
	}{
		"pull":        {c, "edge1", true, ""},
		"push":        {c, "member1", true, "joined in Push mode"},
		"missing":     {c, "edge2", true, "does not exist in the control plane"},
		"unreachable": {unreachable, "edge1", false, "i/o timeout"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			final, err := checkCluster(context.Background(), tc.c, tc.name)
			if final != tc.wantFinal || (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("checkCluster = %t, %v; want %t and an error containing %q", final, err, tc.wantFinal, tc.wantErr)
			}
		})
	}
}

// The agent's stop is bounded, and its caches ask only for its own Works
// and Cluster.
func TestManagerOptions(t *testing.T) {
	o := NewOptions()
	o.ClusterName = "member3"
	got := managerOptions(o, nil)
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
