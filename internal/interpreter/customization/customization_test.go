package customization

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/lifeboat-dev/lifeboat/api/config/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/lua"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// ric builds a customization for apiVersion/kind with the given scripts.
type ricBuilder struct {
	ric *configv1alpha1.ResourceInterpreterCustomization
}

func makeRIC(name, apiVersion, kind string) *ricBuilder {
	return &ricBuilder{&configv1alpha1.ResourceInterpreterCustomization{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
			Target: configv1alpha1.CustomizationTarget{APIVersion: apiVersion, Kind: kind},
		},
	}}
}

func (b *ricBuilder) Health(src string) *ricBuilder {
	b.ric.Spec.Customizations.HealthInterpretation = &configv1alpha1.HealthInterpretation{LuaScript: src}
	return b
}

func (b *ricBuilder) Replicas(src string) *ricBuilder {
	b.ric.Spec.Customizations.ReplicaResource = &configv1alpha1.ReplicaResourceRequirement{LuaScript: src}
	return b
}

func (b *ricBuilder) Dependencies(src string) *ricBuilder {
	b.ric.Spec.Customizations.DependencyInterpretation = &configv1alpha1.DependencyInterpretation{LuaScript: src}
	return b
}

func (b *ricBuilder) Obj() *configv1alpha1.ResourceInterpreterCustomization { return b.ric }

func object(apiVersion, kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "x", "namespace": "ns"},
		"spec":     map[string]any{"replicas": int64(3)},
	}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u
}

func newTestLayer() (*Layer, *record.FakeRecorder, *clocktesting.FakeClock) {
	rec := record.NewFakeRecorder(100)
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	return NewLayer(lua.New(lua.Options{MaxInstructions: 100_000}), rec, clk), rec, clk
}

func events(rec *record.FakeRecorder) []string {
	return eventstest.Drain(rec)
}

func TestPrecedence(t *testing.T) {
	layer, _, _ := newTestLayer()
	in, err := NewInterpreter(layer)
	if err != nil {
		t.Fatal(err)
	}
	flink := object("flink.apache.org/v1beta1", "FlinkDeployment")
	deploy := object("apps/v1", "Deployment")

	// Shipped Flink rule: no status, unhealthy. Native Deployment rule.
	if h, _ := in.InterpretHealth(flink); h != workv1alpha1.ResourceUnhealthy {
		t.Errorf("flink before customization: %s", h)
	}
	if n, _, _, _ := in.GetReplicas(deploy); n != 3 {
		t.Errorf("deployment replicas before customization: %d", n)
	}

	layer.Set(makeRIC("flink", "flink.apache.org/v1beta1", "FlinkDeployment").Health(`function InterpretHealth(o) return true end`).Obj())
	layer.Set(makeRIC("deploy", "apps/v1", "Deployment").Replicas(`function GetReplicas(o) return 7, nil end`).Obj())
	if h, _ := in.InterpretHealth(flink); h != workv1alpha1.ResourceHealthy {
		t.Errorf("flink with customization: %s", h)
	}
	if n, _, _, _ := in.GetReplicas(deploy); n != 7 {
		t.Errorf("deployment replicas with customization: %d", n)
	}
	// Operations the customization does not script still come from below.
	if _, err := in.ReviseReplica(deploy, 2); err != nil {
		t.Errorf("revise: %v", err)
	}
	if got, _ := in.ReviseReplica(deploy, 2); got.Object["spec"].(map[string]any)["replicas"] != int64(2) {
		t.Errorf("native revise not used: %v", got.Object["spec"])
	}

	layer.Delete("deploy")
	if n, _, _, _ := in.GetReplicas(deploy); n != 3 {
		t.Errorf("deployment replicas after delete: %d", n)
	}
}

func TestMergeInNameOrder(t *testing.T) {
	layer, _, _ := newTestLayer()
	const av, kind = "example.io/v1", "Thing"
	layer.Set(makeRIC("b", av, kind).Health(`function InterpretHealth(o) return false end`).
		Dependencies(`function GetDependencies(o) return {{apiVersion = "v1", kind = "Secret", namespace = "ns", name = "s"}, {apiVersion = "v1", kind = "ConfigMap", namespace = "ns", name = "c"}} end`).Obj())
	layer.Set(makeRIC("a", av, kind).Health(`function InterpretHealth(o) return true end`).
		Dependencies(`function GetDependencies(o) return {{apiVersion = "v1", kind = "Secret", namespace = "ns", name = "s"}} end`).Obj())
	in := interpreter.NewChain(layer)
	o := object(av, kind)
	if h, _ := in.InterpretHealth(o); h != workv1alpha1.ResourceUnhealthy {
		t.Errorf("health %s: the last name (b) should win", h)
	}
	deps, err := in.GetDependencies(o)
	if err != nil {
		t.Fatal(err)
	}
	want := []interpreter.Dependency{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "c"},
		{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "s"},
	}
	if diff := cmp.Diff(want, deps); diff != "" {
		t.Errorf("dependencies (-want +got):\n%s", diff)
	}
}

func TestFailingScriptIsUnknownAndReportedOncePerMinute(t *testing.T) {
	layer, rec, clk := newTestLayer()
	in, err := NewInterpreter(layer)
	if err != nil {
		t.Fatal(err)
	}
	const av, kind = "example.io/v1", "Thing"
	layer.Set(makeRIC("loop", av, kind).Health(`function InterpretHealth(o) while true do end end`).Obj())
	o := object(av, kind)
	for range 3 {
		h, err := in.InterpretHealth(o)
		if err == nil || h != workv1alpha1.ResourceUnknown {
			t.Fatalf("health %s, %v; want Unknown and an error", h, err)
		}
	}
	got := events(rec)
	if len(got) != 1 || !strings.Contains(got[0], ReasonScriptFailed) || !strings.Contains(got[0], "InterpretHealth") {
		t.Fatalf("events %q, want one ScriptFailed naming InterpretHealth", got)
	}
	clk.Step(ErrorEventInterval)
	_, _ = in.InterpretHealth(o)
	if got := events(rec); len(got) != 1 {
		t.Fatalf("after a minute: events %q, want one more", got)
	}
}

func TestBrokenScriptIsUnknownNotNative(t *testing.T) {
	layer, _, _ := newTestLayer()
	in, err := NewInterpreter(layer)
	if err != nil {
		t.Fatal(err)
	}
	prog, _ := layer.Set(makeRIC("broken", "apps/v1", "Deployment").Health(`function InterpretHealth(o) return true`).Obj())
	if prog.Errors[lua.InterpretHealth] == nil {
		t.Fatal("syntax error not recorded")
	}
	if h, err := in.InterpretHealth(object("apps/v1", "Deployment")); err == nil || h != workv1alpha1.ResourceUnknown {
		t.Errorf("health %s, %v; want Unknown and an error", h, err)
	}
}

func TestReconcile(t *testing.T) {
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	good := makeRIC("good", "example.io/v1", "Thing").Health(`function InterpretHealth(o) return true end`).Obj()
	bad := makeRIC("bad", "example.io/v1", "Other").Health(`function Misspelt(o) return true end`).Obj()
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(good, bad).Build()
	layer, rec, _ := newTestLayer()
	r := &Reconciler{Client: c, Recorder: rec, Layer: layer}
	ctx := context.Background()

	for _, name := range []string{"good", "bad"} {
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"bad", "good"}, layer.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	got := events(rec)
	if len(got) != 1 || !strings.Contains(got[0], ReasonScriptInvalid) || !strings.Contains(got[0], "InterpretHealth") {
		t.Errorf("events %q, want one ScriptInvalid", got)
	}

	// Nothing changed: no recompile, no event.
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: "bad"}}); err != nil {
		t.Fatal(err)
	}
	if got := events(rec); len(got) != 0 {
		t.Errorf("unchanged customization reported again: %q", got)
	}

	if err := c.Delete(ctx, good); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: "good"}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"bad"}, layer.Names()); diff != "" {
		t.Errorf("names after delete (-want +got):\n%s", diff)
	}
}

func TestInitialLoadGatesRules(t *testing.T) {
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	good := makeRIC("good", "example.io/v1", "Thing").Health(`function InterpretHealth(o) return false end`).Obj()
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(good).Build()
	layer, rec, _ := newTestLayer()
	r := &Reconciler{Client: c, Recorder: rec, Layer: layer}
	layer.expectInitialLoad()

	got := make(chan interpreter.Rules, 1)
	go func() { got <- layer.RulesFor(object("example.io/v1", "Thing").GroupVersionKind()) }()
	select {
	case <-got:
		t.Fatal("rules served before the initial load")
	default:
	}
	if err := r.initialLoad(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rules := <-got; rules.Health == nil {
		t.Error("rules after the initial load lack the customization")
	}
}

func TestReconcileReportsChangedKinds(t *testing.T) {
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	thing := schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Thing"}
	other := schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Other"}
	ric := makeRIC("health", "example.io/v1", "Thing").Health(`function InterpretHealth(o) return true end`).Obj()
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ric).Build()
	layer, rec, _ := newTestLayer()
	var changed []schema.GroupVersionKind
	layer.OnKindChanged(func(_ context.Context, gvk schema.GroupVersionKind) { changed = append(changed, gvk) })
	r := &Reconciler{Client: c, Recorder: rec, Layer: layer}
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: types.NamespacedName{Name: "health"}}
	reconcile := func() []schema.GroupVersionKind {
		t.Helper()
		changed = nil
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		return changed
	}
	update := func(mutate func(*configv1alpha1.ResourceInterpreterCustomization)) {
		t.Helper()
		cur := &configv1alpha1.ResourceInterpreterCustomization{}
		if err := c.Get(ctx, req.NamespacedName, cur); err != nil {
			t.Fatal(err)
		}
		mutate(cur)
		if err := c.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
	}

	steps := []struct {
		name   string
		before func()
		want   []schema.GroupVersionKind
	}{
		{"created", func() {}, []schema.GroupVersionKind{thing}},
		{"unchanged", func() {}, nil},
		{"script changed", func() {
			update(func(r *configv1alpha1.ResourceInterpreterCustomization) {
				r.Spec.Customizations.HealthInterpretation.LuaScript = `function InterpretHealth(o) return false end`
			})
		}, []schema.GroupVersionKind{thing}},
		{"moved to another kind", func() {
			update(func(r *configv1alpha1.ResourceInterpreterCustomization) { r.Spec.Target.Kind = "Other" })
		}, []schema.GroupVersionKind{other, thing}},
		{"deleted", func() {
			if err := c.Delete(ctx, ric); err != nil {
				t.Fatal(err)
			}
		}, []schema.GroupVersionKind{other}},
		{"deleted again", func() {}, nil},
	}
	for _, s := range steps {
		s.before()
		if diff := cmp.Diff(s.want, reconcile()); diff != "" {
			t.Errorf("%s: changed kinds (-want +got):\n%s", s.name, diff)
		}
	}
}

// TestErrorReportLimitIsBounded: the Event rate limit remembers errors by
// a short hash, and at most maxReported of them, the oldest forgotten
// first, however many long errors that differ per object scripts raise
// within a minute.
func TestErrorReportLimitIsBounded(t *testing.T) {
	layer, _, clk := newTestLayer()
	long := strings.Repeat("x", 4<<10)
	key := func(i int) reportKey {
		return newReportKey("c", lua.InterpretHealth, fmt.Errorf("object %d: %s", i, long))
	}
	if k := key(0); k != key(0) || k == key(1) || strings.Contains(fmt.Sprint(k), "xxxx") {
		t.Fatalf("key %v: want one per message, without the message", k)
	}
	const n = 3 * maxReported
	for i := range n {
		if !layer.shouldReport(key(i)) {
			t.Fatalf("error %d not reported", i)
		}
		clk.Step(time.Millisecond) // all within ErrorEventInterval
	}
	if got := len(layer.reported); got > maxReported {
		t.Errorf("the rate limit remembers %d errors, want at most %d", got, maxReported)
	}
	if layer.shouldReport(key(n - 1)) {
		t.Errorf("the latest error reported again within %s", ErrorEventInterval)
	}
	if !layer.shouldReport(key(0)) {
		t.Errorf("the oldest error still remembered")
	}
}
