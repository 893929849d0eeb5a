package undecodable

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

const tooBig = "3000000000" // past int32: Priority cannot hold it

// env is a controller-runtime cache of PropagationPolicies, built with a
// Guard as the controller manager builds it, against a fakeAPI.
type env struct {
	t        *testing.T
	api      *fakeAPI
	cache    cache.Cache
	registry *prometheus.Registry
	logs     *logLines
	events   *eventLog
	guard    *Guard

	mu      sync.Mutex
	deleted []string // "name=priority@resourceVersion" of each object the informer deleted
}

// modes are the two ways a reflector lists: a paginated LIST (the server
// refuses streaming lists) or a streaming list (initial watch events).
var modes = map[string]bool{"list": false, "watch-list": true}

func startEnv(t *testing.T, watchList bool, objects ...string) *env {
	t.Helper()
	e := &env{t: t, api: newFakeAPI(t, watchList, 2), registry: prometheus.NewRegistry(), logs: &logLines{}, events: &eventLog{}}
	for _, o := range objects {
		e.api.put(o)
	}
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(scheme, Options{Groups: []string{policyv1alpha1.GroupName}, Registerer: e.registry, Log: e.logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	g.RecordEventsWith(e.events)
	e.guard = g
	cfg := &rest.Config{Host: e.api.srv.URL}
	cfg.Wrap(g.WrapTransport)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(policyv1alpha1.SchemeGroupVersion.WithKind("PropagationPolicy"), meta.RESTScopeNamespace)
	e.cache, err = cache.New(cfg, cache.Options{Scheme: scheme, Mapper: mapper, NewInformer: g.NewInformer})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	inf, err := e.cache.GetInformer(ctx, &policyv1alpha1.PropagationPolicy{}, cache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: e.onDelete}); err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := e.cache.Start(ctx); err != nil {
			t.Errorf("cache: %v", err)
		}
	}()
	syncCtx, cancelSync := context.WithTimeout(ctx, 10*time.Second)
	defer cancelSync()
	if !e.cache.WaitForCacheSync(syncCtx) {
		t.Fatalf("cache not synced within 10s; server has %d objects; logs:\n%s", len(e.api.objects), e.logs)
	}
	return e
}

func (e *env) onDelete(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	p := obj.(*policyv1alpha1.PropagationPolicy)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.deleted = append(e.deleted, fmt.Sprintf("%s=%d@%s", p.Name, ptrValue(p.Spec.Priority), p.ResourceVersion))
}

func (e *env) deletions() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.deleted...)
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// get returns the cached policy, or nil.
func (e *env) get(name string) *policyv1alpha1.PropagationPolicy {
	e.t.Helper()
	var p policyv1alpha1.PropagationPolicy
	if err := e.cache.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &p); err != nil {
		return nil
	}
	return &p
}

// cached summarizes the cached policies: "name@resourceVersion=priority".
func (e *env) cached() string {
	e.t.Helper()
	var l policyv1alpha1.PropagationPolicyList
	if err := e.cache.List(context.Background(), &l); err != nil {
		e.t.Fatal(err)
	}
	var parts []string
	for _, p := range l.Items {
		parts = append(parts, fmt.Sprintf("%s@%s=%d", p.Name, p.ResourceVersion, ptrValue(p.Spec.Priority)))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// barrier changes the policy "barrier" and waits until the cache has the
// change: every event the server sent before it has been handled.
func (e *env) barrier() {
	e.t.Helper()
	rv := e.api.put(policy("ns", "barrier", "1"))
	e.waitFor(fmt.Sprintf("barrier at resourceVersion %d", rv), func() bool {
		p := e.get("barrier")
		return p != nil && p.ResourceVersion == fmt.Sprint(rv)
	})
}

// relist makes the reflector list again and waits until it has.
func (e *env) relist() {
	e.t.Helper()
	before := e.api.listsServed()
	e.api.expire()
	e.waitFor("a new list", func() bool { return e.api.listsServed() > before })
	e.barrier()
}

func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		e.t.Fatalf("%s: not reached within 10s; cache holds %s; logs:\n%s", what, e.cached(), e.logs)
	}
}

func (e *env) gauge() float64 {
	e.t.Helper()
	mfs, err := e.registry.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "lifeboat_undecodable_objects" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["group"] == "policy.karmada.io" && labels["kind"] == "PropagationPolicy" {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// wantStored checks what the guard says of whether ns/name is stored but
// undecodable.
func (e *env) wantStored(name string, want bool) {
	e.t.Helper()
	if got := e.guard.Stored(policyGVK.GroupKind(), "ns", name); got != want {
		e.t.Errorf("Stored(%s) = %t, want %t", name, got, want)
	}
}

func (e *env) wantGauge(want float64) {
	e.t.Helper()
	if got := e.gauge(); got != want {
		e.t.Errorf("lifeboat_undecodable_objects{group=policy.karmada.io,kind=PropagationPolicy} = %v, want %v", got, want)
	}
}

// logLines captures log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{})
}

// count returns how many lines contain every part.
func (l *logLines) count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
next:
	for _, line := range l.lines {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		n++
	}
	return n
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// eventLog is an events.EventRecorder that keeps "Type Reason kind/name:
// note" for each Event.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (r *eventLog) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	m, err := meta.Accessor(regarding)
	name := "?"
	if err == nil {
		name = m.GetNamespace() + "/" + m.GetName()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s %s %s: %s", eventtype, reason, name, fmt.Sprintf(note, args...)))
}

func (r *eventLog) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func TestInformerSyncsWithoutTheUndecodableObject(t *testing.T) {
	for mode, watchList := range modes {
		t.Run(mode, func(t *testing.T) {
			// Five objects, two pages of two and one of one in list mode:
			// the bad one is in the middle of the first page.
			// a carries an annotation that looks like the stand-ins'
			// marker: no stored object can pass for a stand-in.
			forged := `"annotations":{"` + markerPrefix + `0123456789abcdef":"forged"}`
			e := startEnv(t, watchList,
				policy("ns", "a", "1", forged), policy("ns", "b", tooBig), policy("ns", "c", "3"),
				policy("ns", "d", "4"), policy("ns", "e", "5"))
			if got, want := e.cached(), "a@101=1 c@103=3 d@104=4 e@105=5"; got != want {
				t.Errorf("cache holds %q, want %q", got, want)
			}
			if !watchList && e.api.continued() == 0 {
				t.Errorf("the list was not paginated; the test means to check a page with a continue token")
			}
			if watchList && e.api.streamedLists() == 0 {
				t.Errorf("the reflector did not stream its list; the test means to check initial watch events")
			}
			e.wantGauge(1)
			if n := e.logs.count(`"msg"="object cannot be decoded; skipped"`, `"name"="b"`, `"kind"="PropagationPolicy"`,
				`"namespace"="ns"`, "cannot unmarshal number 3000000000", `"controllersSee"="nothing of it"`); n != 1 {
				t.Errorf("%d error lines about b, want 1:\n%s", n, e.logs)
			}
			evs := e.events.all()
			if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning DecodeFailed ns/b: Lifeboat's controllers cannot decode this PropagationPolicy: ") ||
				!strings.Contains(evs[0], "3000000000") {
				t.Errorf("events = %q, want one Warning DecodeFailed on ns/b naming the value", evs)
			}
		})
	}
}

func TestInformerKeepsTheLastDecodableVersion(t *testing.T) {
	for mode, watchList := range modes {
		t.Run(mode, func(t *testing.T) {
			e := startEnv(t, watchList, policy("ns", "a", "1"), policy("ns", "c", "3"))
			e.api.put(policy("ns", "a", tooBig))
			e.barrier()
			if p := e.get("a"); p == nil || p.ResourceVersion != "101" || ptrValue(p.Spec.Priority) != 1 {
				t.Fatalf("after an undecodable update, cache holds %s; want a at its last decodable version 101", e.cached())
			}
			e.wantGauge(1)

			// A relist replaces the whole store: a must survive it too.
			e.relist()
			if p := e.get("a"); p == nil || p.ResourceVersion != "101" || ptrValue(p.Spec.Priority) != 1 {
				t.Fatalf("after a relist, cache holds %s; want a at its last decodable version 101", e.cached())
			}
			if d := e.deletions(); len(d) != 0 {
				t.Errorf("the informer deleted %q; an undecodable object must never look deleted", d)
			}
			e.wantGauge(1)
			if n := e.logs.count(`"msg"="object cannot be decoded; skipped"`, `"name"="a"`, `"controllersSee"="its last decodable version (resourceVersion 101)"`); n != 1 {
				t.Errorf("%d error lines about a, want 1 (its second sighting at the relist, unchanged, is not reported again):\n%s", n, e.logs)
			}

			// Decodable again: the controllers see the new version.
			rv := e.api.put(policy("ns", "a", "7"))
			e.waitFor("a decodable again", func() bool {
				p := e.get("a")
				return p != nil && p.ResourceVersion == fmt.Sprint(rv) && ptrValue(p.Spec.Priority) == 7
			})
			e.wantGauge(0)
			e.wantStored("a", false)
		})
	}
}

func TestInformerDeletesUndecodableObjects(t *testing.T) {
	for mode, watchList := range modes {
		t.Run(mode, func(t *testing.T) {
			e := startEnv(t, watchList, policy("ns", "a", "1"), policy("ns", "b", tooBig))
			e.api.put(policy("ns", "a", tooBig))
			e.barrier()
			e.wantGauge(2)

			rv := e.api.remove("ns", "a")
			e.waitFor("a deleted", func() bool { return e.get("a") == nil })
			// The last decodable version of a, at the deletion's
			// resourceVersion (the reflector resumes from there).
			deletedA := fmt.Sprintf("a=1@%d", rv)
			if got, want := e.deletions(), []string{deletedA}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("deletions = %q, want %q", got, want)
			}
			e.wantGauge(1)

			// Never seen, so nothing to delete; the gauge forgets it.
			e.wantStored("b", true)
			e.api.remove("ns", "b")
			e.barrier()
			e.wantStored("b", false)
			if got, want := e.deletions(), []string{deletedA}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("deletions = %q, want %q", got, want)
			}
			e.wantGauge(0)
			if n := e.logs.count(`"msg"="undecodable object deleted"`); n != 2 {
				t.Errorf("%d deletion lines, want 2:\n%s", n, e.logs)
			}
		})
	}
}

func TestInformerDoesNotSeeANewUndecodableObject(t *testing.T) {
	for mode, watchList := range modes {
		t.Run(mode, func(t *testing.T) {
			e := startEnv(t, watchList, policy("ns", "a", "1"))
			e.api.put(policy("ns", "new", tooBig))
			e.barrier()
			if e.get("new") != nil {
				t.Fatalf("cache holds %s; a new undecodable object must not be seen", e.cached())
			}
			e.wantGauge(1)
			e.wantStored("new", true)
			e.wantStored("a", false)
			e.relist()
			if e.get("new") != nil {
				t.Fatalf("after a relist, cache holds %s", e.cached())
			}
			e.wantGauge(1)
		})
	}
}

func TestInformerFinalizesAnUndecodableObject(t *testing.T) {
	for mode, watchList := range modes {
		t.Run(mode, func(t *testing.T) {
			fin := `"finalizers":["policy.karmada.io/propagation-policy-controller"]`
			e := startEnv(t, watchList, policy("ns", "a", "1", fin))
			e.api.put(policy("ns", "a", tooBig, fin))
			e.barrier()

			// kubectl delete: the server sets deletionTimestamp; the
			// controllers must see it to remove their finalizer.
			rv := e.api.put(policy("ns", "a", tooBig, fin, `"deletionTimestamp":"2030-01-01T00:00:00Z"`))
			e.waitFor("a being deleted", func() bool {
				p := e.get("a")
				return p != nil && p.DeletionTimestamp != nil
			})
			p := e.get("a")
			if p.ResourceVersion != fmt.Sprint(rv) || ptrValue(p.Spec.Priority) != 1 || len(p.Finalizers) != 1 {
				t.Errorf("a = resourceVersion %s priority %d finalizers %v; want the server's resourceVersion %d and finalizers with the last decodable spec (priority 1)",
					p.ResourceVersion, ptrValue(p.Spec.Priority), p.Finalizers, rv)
			}
			for k := range p.Annotations {
				if strings.HasPrefix(k, markerPrefix) {
					t.Errorf("the stand-in's annotation reached the cache: %v", p.Annotations)
				}
			}

			e.api.remove("ns", "a")
			e.waitFor("a deleted", func() bool { return e.get("a") == nil })
			e.wantGauge(0)
		})
	}
}
