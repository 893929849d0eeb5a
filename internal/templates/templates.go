// Package templates holds and reads resource templates for the detector and
// for the controllers that build Works from them and write their status.
//
// Cache holds every template of the kinds the detector's policies select,
// one informer per kind, each template packed (see package packed) at about
// a third of the memory of a decoded one. The detector reads and watches
// templates through it; it passes every other read to the manager's cache.
//
// Reading a template from the API server is a quorum read from etcd: on a
// busy control plane about 30 ms of the API server's and etcd's time, and
// the binding and binding-status controllers read one or more templates per
// propagated object. Reader reads the kinds Cache holds from there. Any
// other kind (the ConfigMaps and Secrets of propagateDeps, for example) is
// read from the API server: reading it through a cache would start an
// informer holding every object of that kind.
//
// A cached copy can lag behind the API server. Reader.GetAt returns the
// cached copy only when it is the version the caller asks for, or one that
// differs from it only by status writes of this process (Statuses),
// and Reader.Get serves callers that write with the copy's resourceVersion,
// so that a stale copy makes the write fail with a conflict instead of
// overwriting anything.
package templates

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kinds is the set of template kinds a Cache holds and has listed. The
// zero value is empty; a nil *Kinds holds nothing.
type Kinds struct {
	mu    sync.RWMutex
	kinds map[schema.GroupVersionKind]bool
}

// Add records that the cache holds gvk.
func (k *Kinds) Add(gvk schema.GroupVersionKind) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kinds == nil {
		k.kinds = map[schema.GroupVersionKind]bool{}
	}
	k.kinds[gvk] = true
}

// Has reports whether the cache holds gvk.
func (k *Kinds) Has(gvk schema.GroupVersionKind) bool {
	if k == nil {
		return false
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.kinds[gvk]
}

// Reader reads templates from Cache for the kinds in Kinds, and from Live
// otherwise. A Reader with only Live set always reads from Live.
type Reader struct {
	// Cache is the manager's cache (the detector's informers).
	Cache client.Reader
	// Kinds are the kinds Cache holds.
	Kinds *Kinds
	// Live reads from the API server.
	Live client.Reader
	// Statuses are the template versions this process made by writing
	// only their status (nil: none are remembered). Readers that share it
	// see each other's writes.
	Statuses *Statuses
}

// Statuses remembers, per template UID, a chain of versions that differ
// only by status writes of this process: a status subresource write
// changes the resourceVersion and nothing but the status, and it was made
// on the version before it (the write carries that resourceVersion as its
// precondition). The zero value is empty.
type Statuses struct {
	mu     sync.Mutex
	chains map[types.UID]chain
}

type chain struct{ base, latest string }

// maxChains bounds the memory of Statuses: past it, the chains are
// forgotten (which only costs reads from the API server).
const maxChains = 100000

// Written records that writing the status of template uid at version from
// produced version to.
func (s *Statuses) Written(uid types.UID, from, to string) {
	if s == nil || from == "" || to == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chains == nil || len(s.chains) >= maxChains {
		s.chains = map[types.UID]chain{}
	}
	c, ok := s.chains[uid]
	if !ok || c.latest != from {
		c.base = from
	}
	c.latest = to
	s.chains[uid] = c
}

// SameButStatus reports whether version to of template uid differs from
// version from only by status writes recorded here.
func (s *Statuses) SameButStatus(uid types.UID, from, to string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.chains[uid]
	return ok && c.base == from && c.latest == to
}

// Ref names a template.
type Ref struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return fmt.Sprintf("%s %s", r.GVK.Kind, r.Name)
	}
	return fmt.Sprintf("%s %s/%s", r.GVK.Kind, r.Namespace, r.Name)
}

// Get reads the template, from the cache when it holds the kind. The copy
// may lag behind the API server: write with its resourceVersion.
func (r *Reader) Get(ctx context.Context, ref Ref) (*unstructured.Unstructured, error) {
	if r.cached(ref.GVK) {
		return r.get(ctx, r.Cache, ref)
	}
	return r.get(ctx, r.Live, ref)
}

// GetLive reads the template from the API server.
func (r *Reader) GetLive(ctx context.Context, ref Ref) (*unstructured.Unstructured, error) {
	return r.get(ctx, r.Live, ref)
}

// GetAt reads the template as of resourceVersion rv: the cached copy when
// it has that version, or one that differs from it only by status writes
// recorded in Statuses; else the API server's current one. An empty rv
// always reads from the API server.
func (r *Reader) GetAt(ctx context.Context, ref Ref, rv string) (*unstructured.Unstructured, error) {
	if rv != "" && r.cached(ref.GVK) {
		obj, err := r.get(ctx, r.Cache, ref)
		if err == nil && (obj.GetResourceVersion() == rv || r.Statuses.SameButStatus(obj.GetUID(), rv, obj.GetResourceVersion())) {
			return obj, nil
		}
	}
	return r.get(ctx, r.Live, ref)
}

func (r *Reader) cached(gvk schema.GroupVersionKind) bool {
	return r.Cache != nil && r.Kinds.Has(gvk)
}

func (r *Reader) get(ctx context.Context, from client.Reader, ref Ref) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(ref.GVK)
	if err := from.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		return nil, fmt.Errorf("reading resource template %s: %w", ref, err)
	}
	return obj, nil
}
