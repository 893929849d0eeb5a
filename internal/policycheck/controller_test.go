package policycheck

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/clienttest"
	"github.com/lifeboat-dev/lifeboat/internal/eventstest"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
	"github.com/lifeboat-dev/lifeboat/internal/served"
)

// testEnv is the reconciler on a fake client that counts writes, a fake
// recorder, and a served view whose kinds a test changes.
type testEnv struct {
	r     *Reconciler
	c     client.Client
	rec   *record.FakeRecorder
	clock *clocktesting.FakeClock

	mu        sync.Mutex
	resources []*metav1.APIResourceList
	listErr   error

	statusWrites atomic.Int32
	otherWrites  atomic.Int32
	// conflicts is how many status writes fail with a Conflict.
	conflicts atomic.Int32
}

func newTestEnv(t *testing.T, objs ...client.Object) *testEnv {
	t.Helper()
	s, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{rec: record.NewFakeRecorder(100), clock: clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)), resources: controlPlane()}
	// Every write counts as another write, except status patches, which
	// are counted apart and fail while conflicts lasts.
	writes := clienttest.CountWrites(func(string, client.Object) { e.otherWrites.Add(1) })
	writes.SubResourcePatch = func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
		e.statusWrites.Add(1)
		if e.conflicts.Load() > 0 {
			e.conflicts.Add(-1)
			return apierrors.NewConflict(policyv1alpha1.Resource("propagationpolicies"), obj.GetName(), errors.New("the object has been modified"))
		}
		return c.SubResource(sub).Patch(ctx, obj, p, opts...)
	}
	e.c = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&policyv1alpha1.PropagationPolicy{}, &policyv1alpha1.ClusterPropagationPolicy{},
			&policyv1alpha1.OverridePolicy{}, &policyv1alpha1.ClusterOverridePolicy{}).
		WithInterceptorFuncs(writes).Build()
	kinds := served.New(func() ([]*metav1.APIResourceList, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.resources, e.listErr
	}, nil, 0)
	e.r = &Reconciler{Client: e.c, Recorder: e.rec, Kinds: kinds, Types: s, Clock: e.clock}
	e.r.setDefaults()
	return e
}

// serve replaces what the control plane serves and runs a discovery round.
func (e *testEnv) serve(t *testing.T, resources []*metav1.APIResourceList) {
	t.Helper()
	e.mu.Lock()
	e.resources = resources
	e.mu.Unlock()
	if err := e.r.Kinds.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func reconcileOnce[T client.Object](t *testing.T, e *testEnv, k policyKind[T], namespace, name string) ctrl.Result {
	t.Helper()
	res, err := reconcilePolicy(context.Background(), e.r, k, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}})
	if err != nil {
		t.Fatalf("reconcile %s %s/%s: %v", k.name, namespace, name, err)
	}
	return res
}

// accepted reads the stored Accepted condition of a PropagationPolicy.
func (e *testEnv) accepted(t *testing.T, namespace, name string) (*metav1.Condition, *policyv1alpha1.PropagationPolicy) {
	t.Helper()
	var p policyv1alpha1.PropagationPolicy
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(p.Status.Conditions, policyv1alpha1.PolicyConditionAccepted), &p
}

// expectWrites checks the writes since the last call and resets the
// counters: status writes as given, never any other.
func (e *testEnv) expectWrites(t *testing.T, status int32) {
	t.Helper()
	if got := e.statusWrites.Swap(0); got != status {
		t.Errorf("%d status writes, want %d", got, status)
	}
	if got := e.otherWrites.Swap(0); got != 0 {
		t.Errorf("%d writes other than the status", got)
	}
}

// expectEvents checks the Events since the last call: one per entry, each
// containing the entry's parts.
func (e *testEnv) expectEvents(t *testing.T, want ...[]string) {
	t.Helper()
	got := eventstest.Drain(e.rec)
	if len(got) != len(want) {
		t.Fatalf("events %q, want %d", got, len(want))
	}
	for i, parts := range want {
		for _, p := range parts {
			if !strings.Contains(got[i], p) {
				t.Errorf("event %q does not contain %q", got[i], p)
			}
		}
	}
}

func typoPolicy(generation int64) *policyv1alpha1.PropagationPolicy {
	return &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", Generation: generation},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{
			{APIVersion: "v1", Kind: "ConfigMap"},
			{APIVersion: "apps/v1", Kind: "Deploymnt"},
		}},
	}
}

// TestReportsOnceAndClearsWhenFixed: an invalid policy gets its condition
// and Warning once; passes with nothing new write nothing; the fix clears
// the condition with one Normal Event.
func TestReportsOnceAndClearsWhenFixed(t *testing.T) {
	e := newTestEnv(t, typoPolicy(1))

	reconcileOnce(t, e, propagationPolicies, "apps", "web")
	e.expectWrites(t, 1)
	e.expectEvents(t, []string{corev1.EventTypeWarning, policyv1alpha1.PolicyReasonUnknownKind, `spec.resourceSelectors[1]: no kind "Deploymnt" in apps/v1`})
	cond, p := e.accepted(t, "apps", "web")
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != policyv1alpha1.PolicyReasonUnknownKind ||
		cond.ObservedGeneration != 1 || !cond.LastTransitionTime.Time.Equal(e.clock.Now()) {
		t.Fatalf("condition = %+v", cond)
	}
	if len(p.Spec.ResourceSelectors) != 2 || p.Spec.ResourceSelectors[1].Kind != "Deploymnt" {
		t.Errorf("the spec changed: %+v", p.Spec.ResourceSelectors)
	}

	for range 2 {
		reconcileOnce(t, e, propagationPolicies, "apps", "web")
	}
	e.expectWrites(t, 0)
	e.expectEvents(t)

	// The user fixes the kind.
	p.Spec.ResourceSelectors[1].Kind = "Deployment"
	p.Generation = 2
	if err := e.c.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	e.otherWrites.Store(0)
	e.clock.Step(time.Minute)
	reconcileOnce(t, e, propagationPolicies, "apps", "web")
	e.expectWrites(t, 1)
	e.expectEvents(t, []string{corev1.EventTypeNormal, ReasonAccepted})
	cond, _ = e.accepted(t, "apps", "web")
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != policyv1alpha1.PolicyReasonValid ||
		cond.ObservedGeneration != 2 || !cond.LastTransitionTime.Time.Equal(e.clock.Now()) {
		t.Fatalf("condition after the fix = %+v", cond)
	}

	reconcileOnce(t, e, propagationPolicies, "apps", "web")
	e.expectWrites(t, 0)
	e.expectEvents(t)
}

// TestValidFromTheStartIsQuiet: a valid policy gets Accepted=True once,
// without an Event.
func TestValidFromTheStartIsQuiet(t *testing.T) {
	p := typoPolicy(1)
	p.Spec.ResourceSelectors[1].Kind = "Deployment"
	e := newTestEnv(t, p)
	reconcileOnce(t, e, propagationPolicies, "apps", "web")
	e.expectWrites(t, 1)
	e.expectEvents(t)
	if cond, _ := e.accepted(t, "apps", "web"); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("condition = %+v", cond)
	}
	reconcileOnce(t, e, propagationPolicies, "apps", "web")
	e.expectWrites(t, 0)
}

// TestKindInstalledLaterClearsTheCondition: a policy selecting a kind that
// is not served yet is reported; when discovery finds the kind, every
// policy is looked at again and the condition clears; when the kind goes
// away it comes back.
func TestKindInstalledLaterClearsTheCondition(t *testing.T) {
	widgets := &policyv1alpha1.ClusterPropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets", Generation: 1},
		Spec:       policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "example.io/v1", Kind: "Widget"}}},
	}
	e := newTestEnv(t, widgets)
	recheck := make(chan event.GenericEvent, 10)
	recheckOnChange(e.r, clusterPropagationPolicies, recheck)
	e.serve(t, controlPlane())
	drain(recheck)

	reconcileOnce(t, e, clusterPropagationPolicies, "", "widgets")
	e.expectWrites(t, 1)
	e.expectEvents(t, []string{corev1.EventTypeWarning, policyv1alpha1.PolicyReasonUnknownKind, `no kind "Widget" in example.io/v1`})

	withWidget := append(controlPlane(), &metav1.APIResourceList{GroupVersion: "example.io/v1", APIResources: []metav1.APIResource{
		{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: listWatch},
	}})
	e.serve(t, withWidget)
	if got := drain(recheck); len(got) != 1 || got[0] != "widgets" {
		t.Fatalf("rechecked %v after the kind appeared, want [widgets]", got)
	}
	reconcileOnce(t, e, clusterPropagationPolicies, "", "widgets")
	e.expectWrites(t, 1)
	e.expectEvents(t, []string{corev1.EventTypeNormal, ReasonAccepted})

	e.serve(t, controlPlane())
	if got := drain(recheck); len(got) != 1 {
		t.Fatalf("rechecked %v after the kind went away, want [widgets]", got)
	}
	reconcileOnce(t, e, clusterPropagationPolicies, "", "widgets")
	e.expectWrites(t, 1)
	e.expectEvents(t, []string{corev1.EventTypeWarning, policyv1alpha1.PolicyReasonUnknownKind})

	// A discovery round that changes nothing asks for nothing.
	e.serve(t, controlPlane())
	if got := drain(recheck); len(got) != 0 {
		t.Errorf("rechecked %v after an unchanged round", got)
	}
}

func drain(ch chan event.GenericEvent) []string {
	var out []string
	for {
		select {
		case ev := <-ch:
			out = append(out, ev.Object.GetName())
		default:
			return out
		}
	}
}

// TestConflictIsRetriedQuietly: a status write that loses a race is
// neither an error nor an Event; the next pass writes once.
func TestConflictIsRetriedQuietly(t *testing.T) {
	e := newTestEnv(t, typoPolicy(1))
	e.conflicts.Store(1)
	res := reconcileOnce(t, e, propagationPolicies, "apps", "web")
	if res.RequeueAfter <= 0 {
		t.Errorf("result %+v, want a requeue", res)
	}
	e.expectWrites(t, 1)
	e.expectEvents(t)
	if cond, _ := e.accepted(t, "apps", "web"); cond != nil {
		t.Fatalf("condition %+v written despite the conflict", cond)
	}
	reconcileOnce(t, e, propagationPolicies, "apps", "web")
	e.expectWrites(t, 1)
	e.expectEvents(t, []string{corev1.EventTypeWarning, policyv1alpha1.PolicyReasonUnknownKind})
}

// TestNothingWrittenWhenItCannotCheck: must not write. A policy being
// deleted is left alone, and without a view of the served kinds nothing is
// written (Accepted=True would be a guess).
func TestNothingWrittenWhenItCannotCheck(t *testing.T) {
	deleting := typoPolicy(1)
	deleting.Finalizers = []string{policyv1alpha1.PropagationPolicyControllerFinalizer}
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	e := newTestEnv(t, deleting)
	reconcileOnce(t, e, propagationPolicies, "apps", "web")
	e.expectWrites(t, 0)
	e.expectEvents(t)

	valid := typoPolicy(1)
	valid.Spec.ResourceSelectors[1].Kind = "Deployment"
	e = newTestEnv(t, valid)
	e.listErr = errors.New("connection refused")
	e.resources = nil
	if _, err := reconcilePolicy(context.Background(), e.r, propagationPolicies, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "apps", Name: "web"}}); err == nil {
		t.Error("no error without a view of the served kinds")
	}
	e.expectWrites(t, 0)
	e.expectEvents(t)

	// Gone: nothing to do.
	reconcileOnce(t, e, overridePolicies, "apps", "missing")
	e.expectWrites(t, 0)
}

// TestEveryKindGetsItsCondition: the four kinds are wired to their own
// check and status.
func TestEveryKindGetsItsCondition(t *testing.T) {
	badReplicas := policyv1alpha1.OverrideSpec{
		ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
		OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
			{Path: "/spec/replicas", Operator: policyv1alpha1.OverriderOpReplace, Value: rawJSON(`"three"`)},
		}}}},
	}
	clusterRole := policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{
		{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Namespace: "apps"},
	}}
	e := newTestEnv(t,
		&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "p"}, Spec: clusterRole},
		&policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: clusterRole},
		&policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "p"}, Spec: badReplicas},
		&policyv1alpha1.ClusterOverridePolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: badReplicas},
	)
	reconcileOnce(t, e, propagationPolicies, "apps", "p")
	var pp policyv1alpha1.PropagationPolicy
	mustGet(t, e.c, "apps", "p", &pp)
	checkReason(t, "PropagationPolicy", pp.Status.Conditions, policyv1alpha1.PolicyReasonScopeMismatch)

	reconcileOnce(t, e, clusterPropagationPolicies, "", "p")
	var cpp policyv1alpha1.ClusterPropagationPolicy
	mustGet(t, e.c, "", "p", &cpp)
	checkReason(t, "ClusterPropagationPolicy", cpp.Status.Conditions, policyv1alpha1.PolicyReasonScopeMismatch)

	reconcileOnce(t, e, overridePolicies, "apps", "p")
	var op policyv1alpha1.OverridePolicy
	mustGet(t, e.c, "apps", "p", &op)
	checkReason(t, "OverridePolicy", op.Status.Conditions, policyv1alpha1.PolicyReasonInvalidOverride)

	reconcileOnce(t, e, clusterOverridePolicies, "", "p")
	var cop policyv1alpha1.ClusterOverridePolicy
	mustGet(t, e.c, "", "p", &cop)
	checkReason(t, "ClusterOverridePolicy", cop.Status.Conditions, policyv1alpha1.PolicyReasonInvalidOverride)

	e.expectWrites(t, 4)
	if evs := eventstest.Drain(e.rec); len(evs) != 4 {
		t.Errorf("events %q, want one per policy", evs)
	}
}

func mustGet(t *testing.T, c client.Client, namespace, name string, obj client.Object) {
	t.Helper()
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
}

func checkReason(t *testing.T, kind string, conds []metav1.Condition, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(conds, policyv1alpha1.PolicyConditionAccepted)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason {
		t.Errorf("%s: condition %+v, want False %s", kind, c, reason)
	}
}
