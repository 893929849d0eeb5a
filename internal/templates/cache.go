package templates

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeboat-dev/lifeboat/internal/packed"
)

// Cache holds the templates of the kinds the detector watches, one informer
// per kind, each template as a packed.Object: about a third of the memory
// of the decoded objects controller-runtime's cache would hold. At
// thousands of templates they were the largest part of the controller
// manager's heap.
//
// As a client.Reader, Cache answers Get and List of unstructured objects of
// a kind it holds from its informers, decoding a fresh copy per call, and
// passes every other read to its fallback (the manager's cache). A kind is
// held from the first Watch of it on; Kinds learns it once its informer
// has listed every template.
type Cache struct {
	dynamic  dynamic.Interface
	mapper   meta.RESTMapper
	fallback client.Reader
	kinds    *Kinds

	// ctx bounds every informer; Start cancels it when the manager stops.
	ctx    context.Context
	cancel context.CancelFunc

	// syncTimeout bounds how long a read or Watch waits for an informer's
	// first list, as controller-runtime's CacheSyncTimeout does.
	syncTimeout time.Duration

	mu   sync.Mutex
	held map[schema.GroupVersionKind]*kindInformer
}

// defaultSyncTimeout is controller-runtime's default CacheSyncTimeout.
const defaultSyncTimeout = 2 * time.Minute

type kindInformer struct {
	informer toolscache.SharedIndexInformer
	resource schema.GroupResource
}

// Handler is told about the templates of one kind: old is nil when a
// template appears and cur is nil when it is deleted. ctx ends when the
// cache stops.
type Handler func(ctx context.Context, old, cur *packed.Object)

// NewCache returns a cache that lists and watches through dyn, finds
// resources with mapper and reads everything it does not hold from
// fallback.
func NewCache(dyn dynamic.Interface, mapper meta.RESTMapper, fallback client.Reader) *Cache {
	ctx, cancel := context.WithCancel(context.Background())
	return &Cache{dynamic: dyn, mapper: mapper, fallback: fallback, kinds: &Kinds{},
		ctx: ctx, cancel: cancel, syncTimeout: defaultSyncTimeout, held: map[schema.GroupVersionKind]*kindInformer{}}
}

// NewCacheForManager returns a cache over mgr's configuration, RESTMapper
// and cache, added to mgr so that it stops with it.
func NewCacheForManager(mgr ctrl.Manager) (*Cache, error) {
	dyn, err := dynamic.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("creating dynamic client: %w", err)
	}
	c := NewCache(dyn, mgr.GetRESTMapper(), mgr.GetCache())
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the template cache: %w", err)
	}
	return c, nil
}

// Kinds are the kinds the cache holds and has listed: a Reader reads those
// from it.
func (c *Cache) Kinds() *Kinds { return c.kinds }

// Start makes the cache a manager Runnable: it blocks until ctx is done and
// then stops every informer.
func (c *Cache) Start(ctx context.Context) error {
	<-ctx.Done()
	c.cancel()
	return nil
}

// NeedLeaderElection is false: the cache is passive; informers start only
// when a controller watches a kind.
func (c *Cache) NeedLeaderElection() bool { return false }

// Watch holds the templates of gvk, starting their informer unless it runs,
// and tells h about each of them (first every template held, as added)
// and about every later change. It returns once the informer has listed
// the kind. When it cannot (ctx ends, or the list keeps failing for the
// sync timeout), h is removed again and Watch returns an error; the
// informer keeps trying.
func (c *Cache) Watch(ctx context.Context, gvk schema.GroupVersionKind, h Handler) error {
	ki, err := c.informerFor(gvk)
	if err != nil {
		return err
	}
	reg, err := ki.informer.AddEventHandler(c.adapt(h))
	if err != nil {
		return fmt.Errorf("watching %s: %w", gvk, err)
	}
	if err := c.wait(ctx, ki); err != nil {
		_ = ki.informer.RemoveEventHandler(reg)
		return fmt.Errorf("listing %s: %w", gvk, err)
	}
	c.kinds.Add(gvk)
	return nil
}

// informerFor returns the running informer of gvk, starting it first.
func (c *Cache) informerFor(gvk schema.GroupVersionKind) (*kindInformer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ki, ok := c.held[gvk]; ok {
		return ki, nil
	}
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("finding the resource of %s: %w", gvk, err)
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(c.dynamic, mapping.Resource, "", 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}, nil).Informer()
	if err := inf.SetTransform(packed.Transform); err != nil {
		return nil, fmt.Errorf("informer of %s: %w", gvk, err)
	}
	ki := &kindInformer{informer: inf, resource: mapping.Resource.GroupResource()}
	c.held[gvk] = ki
	go inf.Run(c.ctx.Done())
	return ki, nil
}

// heldFor returns the informer of gvk, or nil when the cache does not hold
// the kind.
func (c *Cache) heldFor(gvk schema.GroupVersionKind) *kindInformer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[gvk]
}

// wait waits until ki has listed its kind, for at most the sync timeout.
func (c *Cache) wait(ctx context.Context, ki *kindInformer) error {
	if ki.informer.HasSynced() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.syncTimeout)
	defer cancel()
	if !toolscache.WaitForCacheSync(ctx.Done(), ki.informer.HasSynced) {
		return fmt.Errorf("the informer of %s has not listed them: %w", ki.resource, context.Cause(ctx))
	}
	return nil
}

func (c *Cache) adapt(h Handler) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if p, ok := obj.(*packed.Object); ok {
				h(c.ctx, nil, p)
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, ok1 := oldObj.(*packed.Object)
			n, ok2 := newObj.(*packed.Object)
			if ok1 && ok2 {
				h(c.ctx, o, n)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*packed.Object); ok {
				h(c.ctx, p, nil)
			}
		},
	}
}

// Get reads an unstructured template of a kind the cache holds from its
// informer, and anything else from the fallback.
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return c.fallback.Get(ctx, key, obj, opts...)
	}
	ki := c.heldFor(u.GroupVersionKind())
	if ki == nil {
		return c.fallback.Get(ctx, key, obj, opts...)
	}
	if err := c.wait(ctx, ki); err != nil {
		return err
	}
	item, exists, err := ki.informer.GetIndexer().GetByKey(toolscache.NewObjectName(key.Namespace, key.Name).String())
	if err != nil {
		return fmt.Errorf("reading %s %s from the cache: %w", ki.resource, key, err)
	}
	if !exists {
		return apierrors.NewNotFound(ki.resource, key.Name)
	}
	got, err := item.(*packed.Object).Unstructured()
	if err != nil {
		return err
	}
	u.Object = got.Object
	return nil
}

// List lists unstructured templates of a kind the cache holds from its
// informer, by namespace and label selector, and anything else from the
// fallback.
func (c *Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	ul, ok := list.(*unstructured.UnstructuredList)
	if !ok {
		return c.fallback.List(ctx, list, opts...)
	}
	gvk := ul.GroupVersionKind()
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	ki := c.heldFor(gvk)
	if ki == nil {
		return c.fallback.List(ctx, list, opts...)
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if (lo.FieldSelector != nil && !lo.FieldSelector.Empty()) || lo.Continue != "" {
		return fmt.Errorf("listing %s from the cache: only namespace and label selectors are supported", ki.resource)
	}
	if err := c.wait(ctx, ki); err != nil {
		return err
	}
	var items []interface{}
	if lo.Namespace != "" {
		var err error
		if items, err = ki.informer.GetIndexer().ByIndex(toolscache.NamespaceIndex, lo.Namespace); err != nil {
			return fmt.Errorf("listing %s in %s from the cache: %w", ki.resource, lo.Namespace, err)
		}
	} else {
		items = ki.informer.GetIndexer().List()
	}
	out := make([]unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		p := item.(*packed.Object)
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(p.Labels()) {
			continue
		}
		got, err := p.Unstructured()
		if err != nil {
			return err
		}
		out = append(out, *got)
	}
	ul.Items = out
	ul.SetResourceVersion(ki.informer.LastSyncResourceVersion())
	return nil
}
