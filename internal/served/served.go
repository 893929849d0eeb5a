// Package served is the control plane's view of the kinds it serves, from
// discovery. One view per process is shared by the controllers that need to
// know whether a kind exists and whether it is namespaced: the detector
// (which kinds it can watch) and the policy checker (which selectors name a
// kind that does not exist).
//
// The view is refreshed every interval (30 seconds by default) and whenever
// a CustomResourceDefinition is added, changed or deleted, so that a kind
// installed after the policy that selects it is found within moments; an
// API served by an aggregated API server is found by the periodic round.
// When a refresh changes the set of served kinds, every function registered
// with OnChange runs. Only top-level resources that can be listed and
// watched count: a kind the detector cannot watch cannot be propagated.
//
// It writes nothing.
package served

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/lifeboat-dev/lifeboat/internal/apidiscovery"
)

// DefaultInterval is how often discovery runs when nothing else triggers it.
const DefaultInterval = 30 * time.Second

// Kind is what discovery says about one served kind.
type Kind struct {
	Resource   schema.GroupVersionResource
	Namespaced bool
}

// ListFunc lists the resources the control plane serves, as
// discovery.DiscoveryInterface.ServerGroupsAndResources does (its group
// list is ignored). A partial failure (discovery.ErrGroupDiscoveryFailed)
// still returns what was found.
type ListFunc func() ([]*metav1.APIResourceList, error)

// FromDiscovery adapts a discovery client.
func FromDiscovery(d discovery.DiscoveryInterface) ListFunc {
	return func() ([]*metav1.APIResourceList, error) {
		_, lists, err := d.ServerGroupsAndResources()
		return lists, err
	}
}

// listTimeout bounds one round of FromLister.
const listTimeout = 30 * time.Second

// FromLister adapts an apidiscovery.Lister: a round in which the served
// resources did not change costs two requests answered with no body.
func FromLister(l *apidiscovery.Lister) ListFunc {
	return func() ([]*metav1.APIResourceList, error) {
		ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
		defer cancel()
		return l.ServerResources(ctx)
	}
}

// Kinds is the view of the served kinds. Safe for concurrent use.
type Kinds struct {
	list     ListFunc
	clock    clock.WithTicker
	interval time.Duration
	// informers provide the CustomResourceDefinition events that trigger a
	// refresh; nil refreshes on the period only.
	informers cache.Informers

	mu    sync.RWMutex
	kinds map[schema.GroupVersionKind]Kind
	ready bool

	// refreshMu serialises discovery rounds and their notifications.
	refreshMu sync.Mutex

	subsMu sync.Mutex
	subs   []func(context.Context)
}

// New returns an empty view that lists with list. clk and interval drive
// the periodic refresh (nil and 0: the real clock and DefaultInterval).
func New(list ListFunc, clk clock.WithTicker, interval time.Duration) *Kinds {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Kinds{list: list, clock: clk, interval: interval}
}

// Lookup returns what is known about gvk; ok is false when it is not
// served (or when no discovery has succeeded yet: see Ready).
func (k *Kinds) Lookup(gvk schema.GroupVersionKind) (Kind, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	info, ok := k.kinds[gvk]
	return info, ok
}

// Ready reports whether a discovery round has succeeded: before that,
// Lookup knows no kind.
func (k *Kinds) Ready() bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.ready
}

// VersionsOf lists the served group/versions of a group and kind, sorted,
// for messages such as "served in: apps/v1".
func (k *Kinds) VersionsOf(gk schema.GroupKind) []string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	var out []string
	for gvk := range k.kinds {
		if gvk.GroupKind() == gk {
			out = append(out, gvk.GroupVersion().String())
		}
	}
	slices.Sort(out)
	return out
}

// OnChange registers fn to run after every refresh that changed the set of
// served kinds. Register before the view is started.
func (k *Kinds) OnChange(fn func(ctx context.Context)) {
	k.subsMu.Lock()
	defer k.subsMu.Unlock()
	k.subs = append(k.subs, fn)
}

// Refresh runs discovery once and, when the set of served kinds changed,
// runs the OnChange functions. On error the previous view is kept.
func (k *Kinds) Refresh(ctx context.Context) error {
	k.refreshMu.Lock()
	defer k.refreshMu.Unlock()
	kinds, err := Parse(k.list())
	if err != nil {
		return err
	}
	if !k.replace(kinds) {
		return nil
	}
	ctrl.LoggerFrom(ctx).V(1).Info("served kinds changed", "kinds", len(kinds))
	k.subsMu.Lock()
	subs := slices.Clone(k.subs)
	k.subsMu.Unlock()
	for _, fn := range subs {
		fn(ctx)
	}
	return nil
}

// EnsureReady runs discovery once if none has succeeded yet (a controller
// reconciling before the first round), without running the OnChange
// functions: the caller is about to look itself.
func (k *Kinds) EnsureReady() error {
	if k.Ready() {
		return nil
	}
	kinds, err := Parse(k.list())
	if err != nil {
		return err
	}
	k.refreshMu.Lock()
	defer k.refreshMu.Unlock()
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.ready {
		k.kinds, k.ready = kinds, true
	}
	return nil
}

// replace installs a new discovery result and reports whether the set of
// served kinds changed.
func (k *Kinds) replace(kinds map[schema.GroupVersionKind]Kind) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	changed := !k.ready || len(kinds) != len(k.kinds)
	if !changed {
		for gvk, info := range kinds {
			if old, ok := k.kinds[gvk]; !ok || old != info {
				changed = true
				break
			}
		}
	}
	k.kinds, k.ready = kinds, true
	return changed
}

// SetupWithManager runs the refresh loop in mgr (on the elected leader,
// like the controllers that read the view), triggered by the manager
// cache's CustomResourceDefinition events.
func (k *Kinds) SetupWithManager(mgr ctrl.Manager) error {
	k.informers = mgr.GetCache()
	if err := mgr.Add(k); err != nil {
		return fmt.Errorf("adding the served-kinds loop: %w", err)
	}
	return nil
}

// Start refreshes the view at once, then every interval and whenever a
// CustomResourceDefinition changes, until ctx is done. Errors are logged:
// the next round retries.
func (k *Kinds) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("served-kinds")
	ctx = ctrl.LoggerInto(ctx, log)
	poke := make(chan struct{}, 1)
	notify := func() {
		select {
		case poke <- struct{}{}:
		default:
		}
	}
	if k.informers != nil {
		crd := &metav1.PartialObjectMetadata{}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		if inf, err := k.informers.GetInformer(ctx, crd); err != nil {
			log.Error(err, "watching CustomResourceDefinitions; new kinds are found by periodic discovery only")
		} else if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(interface{}) { notify() },
			UpdateFunc: func(interface{}, interface{}) { notify() },
			DeleteFunc: func(interface{}) { notify() },
		}); err != nil {
			log.Error(err, "watching CustomResourceDefinitions; new kinds are found by periodic discovery only")
		}
	}
	ticker := k.clock.NewTicker(k.interval)
	defer ticker.Stop()
	for {
		if err := k.Refresh(ctx); err != nil {
			log.Error(err, "discovery failed; keeping the previous view")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		case <-poke:
		}
	}
}

// Parse turns discovery lists into the served-kind map, keeping top-level
// resources with the list and watch verbs. A partial discovery failure is
// tolerated; any other error is returned.
func Parse(lists []*metav1.APIResourceList, err error) (map[schema.GroupVersionKind]Kind, error) {
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discovering served resources: %w", err)
	}
	out := map[schema.GroupVersionKind]Kind{}
	for _, list := range lists {
		if list == nil {
			continue
		}
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
				continue
			}
			out[gv.WithKind(r.Kind)] = Kind{Resource: gv.WithResource(r.Name), Namespaced: r.Namespaced}
		}
	}
	return out, nil
}
