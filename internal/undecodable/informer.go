package undecodable

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// NewInformer is a cache.Options NewInformer (the signature of client-go's
// NewSharedIndexInformer). For a typed object of the Guard's groups, it
// builds the informer on a ListerWatcher that marks its requests for the
// transport and handles the stand-ins they bring back (see decide); for
// anything else, the plain informer.
func (g *Guard) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	gvk, ok := g.guarded(obj)
	if !ok {
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
	w := &listWatch{inner: toolscache.ToListerWatcherWithContext(lw), semantics: lw, gvk: gvk, g: g, tracked: map[string]struct{}{}}
	inf := toolscache.NewSharedIndexInformer(w, obj, resync, indexers)
	w.store = inf.GetStore()
	return inf
}

// guarded returns obj's kind when its informer is guarded: a typed object
// (unstructured and metadata-only objects always decode) of the groups.
func (g *Guard) guarded(obj runtime.Object) (schema.GroupVersionKind, bool) {
	switch obj.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata:
		return schema.GroupVersionKind{}, false
	}
	gvks, _, err := g.scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 || !g.groups.Has(gvks[0].Group) {
		return schema.GroupVersionKind{}, false
	}
	return gvks[0], true
}

// listWatch is the ListerWatcher of a guarded informer.
type listWatch struct {
	inner toolscache.ListerWatcherWithContext
	// semantics is the ListerWatcher controller-runtime built, asked
	// whether it supports streaming lists (watch-list).
	semantics any
	gvk       schema.GroupVersionKind
	g         *Guard
	// store is the informer's: the last decodable version of each object.
	store toolscache.Store

	mu sync.Mutex
	// tracked are the keys of the objects this informer last saw
	// undecodable; the gauge counts them.
	tracked map[string]struct{}
	// snapshot collects those keys during a list or a watch's initial
	// events, which replace tracked when they are complete; nil otherwise.
	snapshot map[string]struct{}
}

// IsWatchListSemanticsUnSupported keeps the reflector's choice between a
// paginated list and a streaming one what it would be without the guard.
func (w *listWatch) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(w.semantics)
}

func (w *listWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return w.ListWithContext(context.Background(), opts)
}

func (w *listWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return w.WatchWithContext(context.Background(), opts)
}

// ListWithContext lists one page; the first page starts a snapshot of the
// undecodable keys, the last one completes it.
func (w *listWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	r := &request{gvk: w.gvk}
	list, err := w.inner.ListWithContext(withRequest(ctx, r), opts)
	if err != nil {
		return list, err
	}
	if opts.Continue == "" {
		w.startSnapshot()
	}
	if r.standIns.Load() > 0 {
		if err := w.replaceStandIns(list); err != nil {
			return nil, fmt.Errorf("listing %s: %w", w.gvk.Kind, err)
		}
	}
	if lm, err := meta.ListAccessor(list); err == nil && lm.GetContinue() == "" {
		w.endSnapshot()
	}
	return list, nil
}

// replaceStandIns puts the cached version of each stand-in in its place
// in list, or leaves it out.
func (w *listWatch) replaceStandIns(list runtime.Object) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil || !w.isStandIn(m) {
			kept = append(kept, item)
			continue
		}
		key := objectKey(m)
		w.snapshotAdd(key)
		cached, cachedMeta := w.cached(key)
		out := decide(listItem, m, cachedMeta)
		w.g.reports.skipped(w.gvk, item, m, w.decodeError(m), listItem, out, sameObject(m, cachedMeta))
		if out == deliverCached {
			kept = append(kept, cached.DeepCopyObject())
		}
	}
	return meta.SetList(list, kept)
}

// WatchWithContext starts a watch; with initial events (a streaming list)
// they make a snapshot, complete at the bookmark that ends them.
func (w *listWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	inner, err := w.inner.WatchWithContext(withRequest(ctx, &request{gvk: w.gvk}), opts)
	if err != nil {
		return nil, err
	}
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if initial {
		w.startSnapshot()
	}
	return newFilteredWatch(inner, func(ev watch.Event) (watch.Event, bool) {
		return w.event(ev, &initial)
	}), nil
}

// event returns what the informer receives for ev, and whether it
// receives anything.
func (w *listWatch) event(ev watch.Event, initial *bool) (watch.Event, bool) {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
	case watch.Bookmark:
		if *initial && initialEventsEnd(ev.Object) {
			w.endSnapshot()
			*initial = false
		}
		return ev, true
	default:
		return ev, true
	}
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return ev, true
	}
	key := objectKey(m)
	if !w.isStandIn(m) {
		if !*initial {
			w.untrack(key) // decodable again, or deleted
		}
		return ev, true
	}
	switch {
	case *initial:
		w.snapshotAdd(key)
	case ev.Type == watch.Deleted:
		w.untrack(key)
	default:
		w.track(key)
	}
	cached, cachedMeta := w.cached(key)
	out := decide(ev.Type, m, cachedMeta)
	w.g.reports.skipped(w.gvk, ev.Object, m, w.decodeError(m), ev.Type, out, sameObject(m, cachedMeta))
	switch out {
	case deliverCached:
		return watch.Event{Type: ev.Type, Object: cached.DeepCopyObject()}, true
	case deliverDeleting:
		obj := cached.DeepCopyObject()
		if err := withMetadataOf(obj, m, w.g.check.marker); err != nil {
			return ev, false
		}
		return watch.Event{Type: watch.Modified, Object: obj}, true
	case deliverDeleted:
		obj := cached.DeepCopyObject()
		if om, err := meta.Accessor(obj); err == nil {
			// The deletion's resourceVersion: the reflector resumes
			// from it, never from an older one.
			om.SetResourceVersion(m.GetResourceVersion())
		}
		return watch.Event{Type: watch.Deleted, Object: obj}, true
	}
	return ev, false
}

// cached returns the store's object under key, or nils.
func (w *listWatch) cached(key string) (runtime.Object, metav1.Object) {
	item, ok, err := w.store.GetByKey(key)
	if err != nil || !ok {
		return nil, nil
	}
	obj, ok := item.(runtime.Object)
	if !ok {
		return nil, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	return obj, m
}

func (w *listWatch) track(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.tracked[key]; !ok {
		w.tracked[key] = struct{}{}
		w.g.metrics.add(w.gvk.GroupKind(), 1)
	}
}

func (w *listWatch) untrack(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.tracked[key]; ok {
		delete(w.tracked, key)
		w.g.metrics.add(w.gvk.GroupKind(), -1)
		w.g.reports.forget(w.reportKey(key))
	}
}

func (w *listWatch) startSnapshot() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.snapshot = map[string]struct{}{}
}

func (w *listWatch) snapshotAdd(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.snapshot == nil {
		w.snapshot = map[string]struct{}{}
	}
	w.snapshot[key] = struct{}{}
}

func (w *listWatch) endSnapshot() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.snapshot == nil {
		return
	}
	for key := range w.tracked {
		if _, ok := w.snapshot[key]; !ok {
			w.g.reports.forget(w.reportKey(key))
		}
	}
	w.g.metrics.add(w.gvk.GroupKind(), len(w.snapshot)-len(w.tracked))
	w.tracked, w.snapshot = w.snapshot, nil
}

func (w *listWatch) reportKey(key string) reportKey {
	ns, name, _ := toolscache.SplitMetaNamespaceKey(key)
	return reportKey{gk: w.gvk.GroupKind(), namespace: ns, name: name}
}

func (w *listWatch) isStandIn(m metav1.Object) bool {
	_, ok := m.GetAnnotations()[w.g.check.marker]
	return ok
}

func (w *listWatch) decodeError(m metav1.Object) string {
	return m.GetAnnotations()[w.g.check.marker]
}

// objectKey is the store's key of m (namespace/name, or name).
func objectKey(m metav1.Object) string {
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// sameObject returns cached when it is standIn's object (same UID).
func sameObject(standIn, cached metav1.Object) metav1.Object {
	if cached == nil || cached.GetUID() != standIn.GetUID() {
		return nil
	}
	return cached
}

func initialEventsEnd(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

// withMetadataOf gives obj the metadata of the stand-in m, without the
// stand-in's marker annotation.
func withMetadataOf(obj runtime.Object, m metav1.Object, marker string) error {
	dst, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return fmt.Errorf("%T has no ObjectMeta", obj)
	}
	src, ok := m.(metav1.ObjectMetaAccessor)
	if !ok {
		return fmt.Errorf("%T has no ObjectMeta", m)
	}
	d, ok1 := dst.GetObjectMeta().(*metav1.ObjectMeta)
	s, ok2 := src.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok1 || !ok2 {
		return fmt.Errorf("%T: metadata is not an ObjectMeta", obj)
	}
	*d = *s.DeepCopy()
	delete(d.Annotations, marker)
	if len(d.Annotations) == 0 {
		d.Annotations = nil
	}
	return nil
}

// filteredWatch passes each event of a watch through a function, as
// watch.Filter does, and stops sending once stopped, so that its goroutine
// never waits for a reader that left.
type filteredWatch struct {
	inner  watch.Interface
	result chan watch.Event
	done   chan struct{}
	once   sync.Once
}

func newFilteredWatch(inner watch.Interface, f func(watch.Event) (watch.Event, bool)) *filteredWatch {
	fw := &filteredWatch{inner: inner, result: make(chan watch.Event), done: make(chan struct{})}
	go func() {
		defer close(fw.result)
		for ev := range inner.ResultChan() {
			out, keep := f(ev)
			if !keep {
				continue
			}
			select {
			case fw.result <- out:
			case <-fw.done:
				return
			}
		}
	}()
	return fw
}

func (fw *filteredWatch) ResultChan() <-chan watch.Event { return fw.result }

func (fw *filteredWatch) Stop() {
	fw.once.Do(func() { close(fw.done) })
	fw.inner.Stop()
}
