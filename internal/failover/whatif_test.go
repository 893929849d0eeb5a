package failover

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/clienttest"
	"github.com/lifeboat-dev/lifeboat/internal/features"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

func TestPaceEvictions(t *testing.T) {
	secs := func(ss ...float64) []time.Time {
		out := make([]time.Time, 0, len(ss))
		for _, s := range ss {
			out = append(out, t0.Add(time.Duration(s*float64(time.Second))))
		}
		return out
	}
	repeat := func(n int, s float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	cases := map[string]struct {
		rate float64
		due  []time.Time
		want []time.Time
	}{
		"none":                 {rate: 50, due: nil, want: []time.Time{}},
		"within the burst":     {rate: 3, due: secs(0, 0, 0), want: secs(0, 0, 0)},
		"past the burst":       {rate: 2, due: secs(0, 0, 0, 0, 0), want: secs(0, 0, 0.5, 1, 1.5)},
		"a rate below 1":       {rate: 0.5, due: secs(0, 0, 0), want: secs(0, 2, 4)},
		"a fractional burst":   {rate: 2.5, due: secs(0, 0, 0, 0), want: secs(0, 0, 0.4, 0.8)},
		"spread out: no wait":  {rate: 1, due: secs(0, 1, 2, 3), want: secs(0, 1, 2, 3)},
		"the bucket refills":   {rate: 2, due: secs(0, 0, 0, 10, 10, 10), want: secs(0, 0, 0.5, 10, 10, 10.5)},
		"late ones catch up":   {rate: 1, due: secs(0, 0, 0, 1.5), want: secs(0, 1, 2, 3)},
		"50/s, 120 at once":    {rate: 50, due: secs(repeat(120, 45)...)},
		"one at a large delay": {rate: 50, due: secs(1e6), want: secs(1e6)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := PaceEvictions(tc.rate, tc.due)
			if len(got) != len(tc.due) {
				t.Fatalf("got %d times for %d evictions", len(got), len(tc.due))
			}
			if tc.want == nil {
				// 120 at once at 50/s: 50 at once, then one every 20ms.
				for k, at := range got {
					want := 45 + max(0, float64(k+1-50))/50
					if d := at.Sub(t0).Seconds() - want; d < -1e-6 || d > 1e-3 {
						t.Errorf("eviction %d at %gs, want %gs", k, at.Sub(t0).Seconds(), want)
					}
				}
				return
			}
			for k := range got {
				if d := got[k].Sub(tc.want[k]); d < -time.Microsecond || d > time.Millisecond {
					t.Errorf("eviction %d at %s, want %s", k, got[k].Sub(t0), tc.want[k].Sub(t0))
				}
			}
		})
	}
}

func TestStormGuardHold(t *testing.T) {
	cfg := defaultGuardConfig
	cfg.Settling = SettlingWindows{Push: SettlingWindow(10*time.Second, 30*time.Second, 5*time.Second)}
	objs := func(ws ...*clusterWrapper) []clusterv1alpha1.Cluster {
		var out []clusterv1alpha1.Cluster
		for _, w := range ws {
			out = append(out, *w.obj())
		}
		return out
	}
	cases := map[string]struct {
		clusters []clusterv1alpha1.Cluster
		cluster  string
		cfg      *StormGuardConfig
		now      int
		halted   bool
		until    time.Time
		reason   string
		group    string
		rate     float64
	}{
		"failing, within the settling window": {
			clusters: objs(healthy("m1"), failed("m2", 0, 30), healthy("m3")), cluster: "m2", now: 30,
			until: at(45), reason: "settling: m2 started failing", rate: 50,
		},
		"failing, past the settling window": {
			clusters: objs(healthy("m1"), failed("m2", 0, 30), healthy("m3")), cluster: "m2", now: 45, rate: 50,
		},
		"a suspect is held too": {
			clusters: objs(healthy("m1"), suspect("m2", 0), healthy("m3")), cluster: "m2", now: 5,
			until: at(45), reason: "settling: m2 started failing", rate: 50,
		},
		"healthy: a person's taint waits for nothing": {
			clusters: objs(healthy("m1"), healthy("m2"), healthy("m3")), cluster: "m2", now: 0, rate: 50,
		},
		"every cluster down: halted": {
			clusters: objs(failed("m1", 0, 30), failed("m2", 0, 30), failed("m3", 0, 30)), cluster: "m2", now: 100,
			halted: true, reason: "no cluster is Ready", rate: 0,
		},
		"a small group in partial disruption: halted": {
			clusters: objs(failed("m1", 0, 30), failed("m2", 0, 30), failed("m3", 0, 30), healthy("m4")), cluster: "m2", now: 100,
			halted: true, reason: "3 of 4 clusters not Ready in a group of 10 or fewer clusters, evictions stop", rate: 0,
		},
		"one cluster per region, all regions but one down: halted by the whole control plane's state": {
			clusters: objs(failed("m1", 0, 30).region("eu"), failed("m2", 0, 30).region("us"), failed("m3", 0, 30).region("ap"), healthy("m4").region("sa")), cluster: "m2", now: 100,
			group: "us", halted: true, reason: "3 of 4 clusters not Ready in the whole control plane: with 10 clusters or fewer, evictions stop everywhere", rate: 0,
		},
		"rate 0: halted": {
			clusters: objs(healthy("m1"), failed("m2", 0, 30), healthy("m3")), cluster: "m2", now: 100,
			cfg: &StormGuardConfig{Rate: 0, Settling: cfg.Settling}, halted: true, reason: "the eviction rate is 0",
		},
		"the cluster's region": {
			clusters: objs(healthy("m1").region("eu"), failed("m2", 0, 30).region("eu"), healthy("m3").region("us")), cluster: "m2", now: 100,
			group: "eu", rate: 50,
		},
		"an unknown cluster: the regionless group, no settling": {
			clusters: objs(healthy("m1"), healthy("m3")), cluster: "gone", now: 0, rate: 50,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := cfg
			if tc.cfg != nil {
				c = *tc.cfg
			}
			h := StormGuardHold(tc.clusters, tc.cluster, c, at(tc.now))
			if h.Halted != tc.halted || !h.Until.Equal(tc.until) || h.Group.Name != tc.group || h.Group.Rate != tc.rate {
				t.Errorf("hold = %+v, want halted %v, until %s, group %q at rate %g", h, tc.halted, tc.until, tc.group, tc.rate)
			}
			if tc.reason == "" && h.Reason != "" || !strings.Contains(h.Reason, tc.reason) {
				t.Errorf("reason = %q, want %q", h.Reason, tc.reason)
			}
			if (h.Halted || !h.Until.IsZero()) && h.Reason == "" {
				t.Errorf("held without a reason: %+v", h)
			}
		})
	}
}

func TestNewSettings(t *testing.T) {
	gates := func(kv string) *features.Gates {
		g := features.New()
		if kv != "" {
			if err := g.Set(kv); err != nil {
				t.Fatal(err)
			}
		}
		return g
	}
	cases := map[string]struct {
		gates                     string
		opts                      func(*ClusterFailoverOptions)
		taintManager, appFailover bool
		wantTaint, wantApp        bool
		wantMode                  policyv1alpha1.PurgeMode
	}{
		"defaults":                  {taintManager: true, appFailover: true, wantTaint: true, wantApp: true, wantMode: policyv1alpha1.PurgeModeGracefully},
		"the Failover gate off":     {gates: "Failover=false", taintManager: true, appFailover: true, wantMode: policyv1alpha1.PurgeModeGracefully},
		"no NoExecute eviction":     {opts: func(o *ClusterFailoverOptions) { o.EnableNoExecuteTaintEviction = false }, taintManager: true, appFailover: true, wantApp: true, wantMode: policyv1alpha1.PurgeModeGracefully},
		"no taint-manager":          {appFailover: true, wantApp: true, wantMode: policyv1alpha1.PurgeModeGracefully},
		"no application failover":   {taintManager: true, wantTaint: true, wantMode: policyv1alpha1.PurgeModeGracefully},
		"Directly by default":       {opts: func(o *ClusterFailoverOptions) { o.NoExecuteTaintEvictionPurgeMode = "Directly" }, taintManager: true, appFailover: true, wantTaint: true, wantApp: true, wantMode: policyv1alpha1.PurgeModeDirectly},
		"the old spelling Directly": {opts: func(o *ClusterFailoverOptions) { o.NoExecuteTaintEvictionPurgeMode = "Immediately" }, taintManager: true, appFailover: true, wantTaint: true, wantApp: true, wantMode: policyv1alpha1.PurgeModeDirectly},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewClusterFailoverOptions()
			if tc.opts != nil {
				tc.opts(o)
			}
			s := NewSettings(10*time.Second, 30*time.Second, 5*time.Second, o, gates(tc.gates), tc.taintManager, tc.appFailover)
			if s.TaintEviction != tc.wantTaint || s.ApplicationFailover != tc.wantApp || s.DefaultPurgeMode != tc.wantMode {
				t.Errorf("settings = %+v, want taint eviction %v, application failover %v, purge mode %s", s, tc.wantTaint, tc.wantApp, tc.wantMode)
			}
			if got := s.StormGuardConfig(); got.Settling != (SettlingWindows{Push: 45 * time.Second}) || got.Rate != o.ResourceEvictionRate || got.SecondaryRate != o.SecondaryResourceEvictionRate {
				t.Errorf("storm guard config = %+v, want the options' rates and a 45s settling window", got)
			}
		})
	}
}

func TestSettingsJSONRoundTrip(t *testing.T) {
	g := features.New()
	if err := g.Set("StatefulFailoverInjection=false"); err != nil {
		t.Fatal(err)
	}
	o := NewClusterFailoverOptions()
	o.ResourceEvictionRate = 0.5
	s := NewSettings(time.Second, 3*time.Second, 2*time.Second, o, g, true, false).WithLeaseMonitor(6*time.Second, time.Second)
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"clusterStatusUpdateFrequency":"1s"`, `"clusterMonitorGracePeriod":"6s"`, `"clusterMonitorPeriod":"1s"`, `"resourceEvictionRate":0.5`, `"StatefulFailoverInjection":false`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("%s does not hold %s", data, key)
		}
	}
	var back Settings
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if back.Gates().Enabled(features.StatefulFailoverInjection) || !back.Gates().Enabled(features.Failover) {
		t.Errorf("gates = %v, want StatefulFailoverInjection off and Failover on", back.FeatureGates)
	}
	// An unknown gate from a newer controller manager is left out.
	back.FeatureGates["SomethingNew"] = true
	if !back.Gates().Enabled(features.Failover) {
		t.Errorf("an unknown gate changed the known ones")
	}
}

// TestSettingsWindows: the published settings give a dry run the settling
// windows the controller manager uses, and settings published before Pull
// clusters had a window of their own give them the Push window, as that
// controller manager did.
func TestSettingsWindows(t *testing.T) {
	o := NewClusterFailoverOptions()
	s := NewSettings(10*time.Second, 30*time.Second, 5*time.Second, o, features.New(), true, true).
		WithLeaseMonitor(40*time.Second, 5*time.Second)
	want := SettlingWindows{Push: 45 * time.Second, Pull: 55 * time.Second, PullRenewInterval: 10 * time.Second}
	if got := s.StormGuardConfig().Settling; got != want {
		t.Errorf("settling windows = %+v, want %+v", got, want)
	}

	older := `{"clusterStatusUpdateFrequency":"10s","clusterFailureThreshold":"30s","clusterProbeTimeout":"5s","taintEviction":true,` +
		`"resourceEvictionRate":0.5,"secondaryResourceEvictionRate":0.1,"unhealthyClusterThreshold":0.55,"largeClusterNumThreshold":10}`
	var decoded Settings
	if err := json.Unmarshal([]byte(older), &decoded); err != nil {
		t.Fatal(err)
	}
	cfg := decoded.StormGuardConfig()
	if got := cfg.Settling.of(true, clusterKinds{pull: true}); got != 45*time.Second {
		t.Errorf("older settings: a Pull cluster's window %s, want the Push window 45s", got)
	}
	pull := makeCluster("m2").readySince(metav1.ConditionUnknown, 40).probe(metav1.ConditionUnknown, 0)
	pull.Spec.SyncMode = clusterv1alpha1.Pull
	clusters := []clusterv1alpha1.Cluster{*healthy("m1").obj(), *pull.obj(), *healthy("m3").obj()}
	if h := StormGuardHold(clusters, "m2", cfg, at(41)); !h.Until.Equal(at(45)) {
		t.Errorf("older settings: held until %s, want %s", h.Until, at(45))
	}
	if h := StormGuardHold(clusters, "m2", s.StormGuardConfig(), at(41)); !h.Until.Equal(at(55)) {
		t.Errorf("settings with the lease monitor's flags: held until %s, want %s", h.Until, at(55))
	}
}

func TestPublishAndReadSettings(t *testing.T) {
	const ns = "lifeboat-system"
	key := types.NamespacedName{Namespace: ns, Name: SettingsConfigMap}
	s := NewSettings(10*time.Second, 30*time.Second, 5*time.Second, NewClusterFailoverOptions(), features.New(), true, true)
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	writes := map[string]int{}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithInterceptorFuncs(clienttest.CountWrites(func(verb string, _ client.Object) { writes[verb]++ })).Build()

	if _, found, err := ReadSettings(ctx, c, ns); err != nil || found {
		t.Fatalf("before publishing: found %v, err %v; want not found", found, err)
	}
	if err := PublishSettings(ctx, c, ns, s); err != nil {
		t.Fatalf("publishing: %v", err)
	}
	got, found, err := ReadSettings(ctx, c, ns)
	if err != nil || !found {
		t.Fatalf("reading: found %v, err %v", found, err)
	}
	if diff := cmp.Diff(s, got); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
	// The same settings again: no write.
	if err := PublishSettings(ctx, c, ns, s); err != nil {
		t.Fatal(err)
	}
	// Other settings: an update.
	s.EvictionRate = 5
	if err := PublishSettings(ctx, c, ns, s); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"create": 1, "update": 1}, writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if got, _, _ := ReadSettings(ctx, c, ns); got.EvictionRate != 5 {
		t.Errorf("rate after the update = %g, want 5", got.EvictionRate)
	}

	// A ConfigMap someone emptied gets its key back; one with a broken or
	// missing key is an error for the reader.
	var cm corev1.ConfigMap
	if err := c.Get(ctx, key, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data = nil
	if err := c.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadSettings(ctx, c, ns); err == nil || !strings.Contains(err.Error(), "has no settings.json") {
		t.Errorf("reading an emptied ConfigMap: err = %v", err)
	}
	if err := PublishSettings(ctx, c, ns, s); err != nil {
		t.Fatalf("publishing into an emptied ConfigMap: %v", err)
	}
	if got, found, err := ReadSettings(ctx, c, ns); err != nil || !found || got.EvictionRate != 5 {
		t.Errorf("after republishing: %+v, %v, %v", got, found, err)
	}
	if err := c.Get(ctx, key, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data[SettingsKey] = "{not json"
	if err := c.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadSettings(ctx, c, ns); err == nil || !strings.Contains(err.Error(), "decoding settings.json") {
		t.Errorf("reading broken JSON: err = %v", err)
	}
	// In another namespace: not found.
	if _, found, err := ReadSettings(ctx, c, "elsewhere"); err != nil || found {
		t.Errorf("another namespace: found %v, err %v", found, err)
	}
}

func TestPublishAndReadSettingsErrors(t *testing.T) {
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, SettingsConfigMap, boom)
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return forbidden
		},
	}).Build()
	ctx := context.Background()
	if err := PublishSettings(ctx, c, "ns", Settings{}); !errors.Is(err, forbidden) && !apierrors.IsForbidden(errors.Unwrap(err)) {
		t.Errorf("publish: err = %v, want the Forbidden error", err)
	}
	if _, found, err := ReadSettings(ctx, c, "ns"); err == nil || found || !apierrors.IsForbidden(errors.Unwrap(err)) {
		t.Errorf("read: found %v, err = %v, want the Forbidden error", found, err)
	}
}
