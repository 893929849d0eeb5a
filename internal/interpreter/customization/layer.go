package customization

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	configv1alpha1 "github.com/lifeboat-dev/lifeboat/api/config/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/lua"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/thirdparty"
)

// Event reasons on ResourceInterpreterCustomizations.
const (
	// ReasonScriptInvalid: a script does not compile or does not define
	// its function.
	ReasonScriptInvalid = "ScriptInvalid"
	// ReasonScriptFailed: a script failed while interpreting an object.
	ReasonScriptFailed = "ScriptFailed"
)

// ErrorEventInterval is how often the same run-time error of the same
// customization and operation is reported as an Event.
const ErrorEventInterval = time.Minute

// maxMessage bounds an Event message.
const maxMessage = 1024

// Layer serves the rules of the ResourceInterpreterCustomizations in the
// control plane as an interpreter.Layer. It is safe for concurrent use.
//
// Several customizations for one target are merged per operation in name
// order: the customization whose name sorts last wins, as in Karmada;
// for dependencyInterpretation every script runs and the results are
// de-duplicated and sorted.
type Layer struct {
	runtime  *lua.Runtime
	recorder record.EventRecorder // may be nil
	clock    clock.PassiveClock

	mu      sync.RWMutex
	entries map[string]*entry // by customization name
	rules   map[schema.GroupVersionKind]interpreter.Rules
	ready   chan struct{} // closed once the initial customizations are loaded

	reportMu sync.Mutex
	reported map[reportKey]time.Time

	subscribersMu sync.RWMutex
	subscribers   []func(context.Context, schema.GroupVersionKind)
}

type entry struct {
	ric     *configv1alpha1.ResourceInterpreterCustomization
	program *lua.Program
}

// reportKey identifies a run-time error for the Event rate limit: a hash
// of the message stands for it, so that long messages that differ per
// object are not kept for a minute each.
type reportKey struct {
	name string
	op   lua.Operation
	err  [16]byte // the start of the message's SHA-256
}

// maxReported bounds the errors the Event rate limit remembers; past it,
// the oldest is forgotten.
const maxReported = 1024

func newReportKey(name string, op lua.Operation, err error) reportKey {
	k := reportKey{name: name, op: op}
	sum := sha256.Sum256([]byte(err.Error()))
	copy(k.err[:], sum[:])
	return k
}

var _ interpreter.Layer = (*Layer)(nil)

// NewLayer returns an empty layer running scripts on rt. recorder (may be
// nil) receives the Warning Events of failing scripts.
func NewLayer(rt *lua.Runtime, recorder record.EventRecorder, clk clock.PassiveClock) *Layer {
	ready := make(chan struct{})
	close(ready)
	return &Layer{
		runtime:  rt,
		recorder: recorder,
		clock:    clk,
		entries:  map[string]*entry{},
		rules:    map[schema.GroupVersionKind]interpreter.Rules{},
		ready:    ready,
		reported: map[reportKey]time.Time{},
	}
}

// Runtime is the Lua runtime the layer's scripts run on.
func (l *Layer) Runtime() *lua.Runtime { return l.runtime }

// NewInterpreter returns the interpreter every controller should use:
// the users' customizations (layer), then Lifeboat's shipped third-party
// rules, then the native rules, asked in that order per operation.
func NewInterpreter(layer *Layer) (interpreter.Interpreter, error) {
	shipped, err := thirdparty.NewLayer(layer.runtime)
	if err != nil {
		return nil, fmt.Errorf("load shipped customizations: %w", err)
	}
	return interpreter.NewChain(layer, shipped, interpreter.Native()), nil
}

// RulesFor implements interpreter.Layer. Until the customizations present
// at start-up are loaded it waits, so that no template is interpreted
// without them.
func (l *Layer) RulesFor(gvk schema.GroupVersionKind) interpreter.Rules {
	l.mu.RLock()
	ready := l.ready
	l.mu.RUnlock()
	<-ready
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.rules[gvk]
}

// expectInitialLoad makes RulesFor wait until initialLoadDone.
func (l *Layer) expectInitialLoad() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.ready:
		l.ready = make(chan struct{})
	default:
	}
}

// initialLoadDone releases RulesFor.
func (l *Layer) initialLoadDone() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.ready:
	default:
		close(l.ready)
	}
}

// Set compiles ric and serves its rules. It returns the compiled program
// and whether anything changed (an unchanged spec is not recompiled).
func (l *Layer) Set(ric *configv1alpha1.ResourceInterpreterCustomization) (*lua.Program, bool) {
	l.mu.RLock()
	old := l.entries[ric.Name]
	l.mu.RUnlock()
	if old != nil && reflect.DeepEqual(old.ric.Spec, ric.Spec) {
		return old.program, false
	}
	ric = ric.DeepCopy()
	program := l.runtime.CompileCustomization(ric)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries[ric.Name] = &entry{ric: ric, program: program}
	l.rebuild()
	return program, true
}

// Delete stops serving the customization name.
func (l *Layer) Delete(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.entries[name]; !ok {
		return
	}
	delete(l.entries, name)
	l.rebuild()
}

// Target returns the kind the served customization name is for; false
// when name is not served.
func (l *Layer) Target(name string) (schema.GroupVersionKind, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, ok := l.entries[name]
	if !ok {
		return schema.GroupVersionKind{}, false
	}
	return e.program.Target, true
}

// OnKindChanged registers fn to be called (by the Reconciler, after the
// layer serves the new rules) whenever the rules of a kind change: a
// customization for it was created, changed or deleted, or moved to or
// from it. What was interpreted with the old rules should be interpreted
// again: the health and status of member objects are otherwise re-read
// only when a member object changes. fn must not block.
func (l *Layer) OnKindChanged(fn func(ctx context.Context, target schema.GroupVersionKind)) {
	l.subscribersMu.Lock()
	defer l.subscribersMu.Unlock()
	l.subscribers = append(l.subscribers, fn)
}

// kindChanged tells the subscribers that target's rules changed.
func (l *Layer) kindChanged(ctx context.Context, target schema.GroupVersionKind) {
	l.subscribersMu.RLock()
	defer l.subscribersMu.RUnlock()
	for _, fn := range l.subscribers {
		fn(ctx, target)
	}
}

// Names returns the customizations served, sorted.
func (l *Layer) Names() []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	names := make([]string, 0, len(l.entries))
	for n := range l.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// rebuild recomputes the merged rules; l.mu is held.
func (l *Layer) rebuild() {
	byTarget := map[schema.GroupVersionKind][]*entry{}
	for _, e := range l.entries {
		byTarget[e.program.Target] = append(byTarget[e.program.Target], e)
	}
	rules := make(map[schema.GroupVersionKind]interpreter.Rules, len(byTarget))
	for gvk, entries := range byTarget {
		slices.SortFunc(entries, func(a, b *entry) int { return cmp.Compare(a.ric.Name, b.ric.Name) })
		rules[gvk] = l.merge(entries)
	}
	l.rules = rules
}

// merge combines the rules of several customizations for one target,
// sorted by name: the last one defining an operation wins; dependency
// rules are all run.
func (l *Layer) merge(entries []*entry) interpreter.Rules {
	var out interpreter.Rules
	var deps []interpreter.DependencyRule
	for _, e := range entries {
		r := e.program.Rules(l.reporter(e.ric))
		if r.Replicas != nil {
			out.Replicas = r.Replicas
		}
		if r.ReviseReplica != nil {
			out.ReviseReplica = r.ReviseReplica
		}
		if r.Retain != nil {
			out.Retain = r.Retain
		}
		if r.ReflectStatus != nil {
			out.ReflectStatus = r.ReflectStatus
		}
		if r.Health != nil {
			out.Health = r.Health
		}
		if r.AggregateStatus != nil {
			out.AggregateStatus = r.AggregateStatus
		}
		if r.Dependencies != nil {
			deps = append(deps, r.Dependencies)
		}
	}
	switch len(deps) {
	case 0:
	case 1:
		out.Dependencies = deps[0]
	default:
		out.Dependencies = allDependencies(deps)
	}
	return out
}

// allDependencies runs every rule and returns the union, sorted.
func allDependencies(rules []interpreter.DependencyRule) interpreter.DependencyRule {
	return func(obj *unstructured.Unstructured) ([]interpreter.Dependency, error) {
		seen := map[interpreter.Dependency]bool{}
		var out []interpreter.Dependency
		for _, rule := range rules {
			deps, err := rule(obj)
			if err != nil {
				return nil, err
			}
			for _, d := range deps {
				if !seen[d] {
					seen[d] = true
					out = append(out, d)
				}
			}
		}
		slices.SortFunc(out, func(a, b interpreter.Dependency) int {
			return cmp.Or(cmp.Compare(a.APIVersion, b.APIVersion), cmp.Compare(a.Kind, b.Kind),
				cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
		return out, nil
	}
}

// reporter returns the run-time error callback of one customization: a
// Warning Event naming the operation and the error, at most once per
// ErrorEventInterval for the same error.
func (l *Layer) reporter(ric *configv1alpha1.ResourceInterpreterCustomization) func(lua.Operation, error) {
	return func(op lua.Operation, err error) {
		if l.recorder == nil || !l.shouldReport(newReportKey(ric.Name, op, err)) {
			return
		}
		l.recorder.Event(ric, corev1.EventTypeWarning, ReasonScriptFailed, truncate(err.Error()))
	}
}

// shouldReport rate-limits run-time error Events.
func (l *Layer) shouldReport(key reportKey) bool {
	now := l.clock.Now()
	l.reportMu.Lock()
	defer l.reportMu.Unlock()
	if last, ok := l.reported[key]; ok && now.Sub(last) < ErrorEventInterval {
		return false
	}
	if len(l.reported) >= maxReported {
		for k, t := range l.reported {
			if now.Sub(t) >= ErrorEventInterval {
				delete(l.reported, k)
			}
		}
	}
	if len(l.reported) >= maxReported {
		var oldest reportKey
		var at time.Time
		for k, t := range l.reported {
			if at.IsZero() || t.Before(at) {
				oldest, at = k, t
			}
		}
		delete(l.reported, oldest)
	}
	l.reported[key] = now
	return true
}

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage] + "..."
}
