package membercluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/packed"
)

// ManagedLabel marks a member object as managed by Lifeboat. Informers only
// list objects carrying it (value ManagedLabelValue), and an existing object
// without it is not overwritten unless the manifest asks for it. The key is
// Karmada's (api/ does not define it).
const (
	ManagedLabel      = "karmada.io/managed"
	ManagedLabelValue = "true"
)

// EventType is the kind of change an informer saw.
type EventType string

// Event types.
const (
	Added   EventType = "Added"
	Updated EventType = "Updated"
	Deleted EventType = "Deleted"
)

// Event is one change of a managed object in a member cluster.
type Event struct {
	// Cluster is the member cluster's name.
	Cluster string
	Type    EventType
	// Object is the object after the change (the last known state for
	// Deleted). It is shared with the informer: never modify it.
	Object *packed.Object
	// Old is the object before the change; only set for Updated.
	Old *packed.Object
}

// Handler receives events of one member and resource. OnEvent must be quick
// and must not block (enqueue and return). Name identifies the handler:
// Watch is idempotent per (cluster, resource, Name).
type Handler struct {
	Name    string
	OnEvent func(Event)
}

// ResettableRESTMapper is a RESTMapper whose discovery data can be dropped.
type ResettableRESTMapper interface {
	meta.RESTMapper
	Reset()
}

// Clients are the clients of one member cluster.
type Clients struct {
	Dynamic dynamic.Interface
	// Metadata lists objects' metadata only (List), in protobuf where the
	// member serves it: a sweep of every kind reads no spec or status.
	Metadata metadata.Interface
	Mapper   ResettableRESTMapper
	// Discovery answers afresh on every call (no cache): Resources uses it
	// where a kind missed would be an object missed.
	Discovery discovery.DiscoveryInterface
}

// Options tune the cache. Zero values take the defaults of DefaultOptions.
type Options struct {
	// QPS and Burst limit the requests to each member (one shared limiter
	// per member for every client and informer).
	QPS   float32
	Burst int
	// RequestTimeout bounds each request to a member (watches excluded).
	RequestTimeout time.Duration
	// InitialBackoff and MaxBackoff bound how long a member that failed to
	// answer is left alone before the next attempt.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// MapperResetInterval is the shortest time between two discovery
	// refreshes of a member triggered by an unknown kind.
	MapperResetInterval time.Duration
	// ResyncPeriod of the member informers; 0 disables resyncs.
	ResyncPeriod time.Duration
	// NewClients builds the clients of a member from its configuration;
	// tests replace it with fakes.
	NewClients func(cfg *rest.Config, requestTimeout time.Duration) (*Clients, error)
	// Clock drives the back-off; tests use a fake clock.
	Clock clock.PassiveClock
	// Config builds a member's client configuration; nil reads the
	// Cluster's credentials Secret (SecretConfig).
	Config ConfigSource
}

// DefaultOptions are sized for thousands of objects over a few members.
func DefaultOptions() Options {
	return Options{
		QPS:                 300,
		Burst:               600,
		RequestTimeout:      15 * time.Second,
		InitialBackoff:      2 * time.Second,
		MaxBackoff:          2 * time.Minute,
		MapperResetInterval: 10 * time.Second,
		NewClients:          NewClients,
		Clock:               clock.RealClock{},
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.QPS <= 0 {
		o.QPS = d.QPS
	}
	if o.Burst <= 0 {
		o.Burst = d.Burst
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = d.RequestTimeout
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = d.InitialBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = d.MaxBackoff
	}
	if o.MapperResetInterval <= 0 {
		o.MapperResetInterval = d.MapperResetInterval
	}
	if o.NewClients == nil {
		o.NewClients = d.NewClients
	}
	if o.Clock == nil {
		o.Clock = d.Clock
	}
	return o
}

// NewClients builds a dynamic client, a metadata client and a lazy,
// discovery-backed RESTMapper sharing one HTTP transport. Discovery calls take no context, so
// they get requestTimeout on their own transport; watches must not be cut, so
// the dynamic client has none (each request carries a context deadline).
// The member's API warnings (a deprecated kind listed by every sweep) are
// logged once per message, through the logger of the request's context.
func NewClients(cfg *rest.Config, requestTimeout time.Duration) (*Clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = nil
	cfg.WarningHandlerWithContext = crlog.NewKubeAPIWarningLogger(crlog.KubeAPIWarningLoggerOptions{Deduplicate: true})
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building HTTP client: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building dynamic client: %w", err)
	}
	md, err := metadata.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building metadata client: %w", err)
	}
	discoCfg := rest.CopyConfig(cfg)
	discoCfg.Timeout = requestTimeout
	disco, err := discovery.NewDiscoveryClientForConfig(discoCfg)
	if err != nil {
		return nil, fmt.Errorf("building discovery client: %w", err)
	}
	return &Clients{
		Dynamic:   dyn,
		Metadata:  md,
		Mapper:    restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)),
		Discovery: disco,
	}, nil
}

// Cache is the one door to member clusters. Per member it owns the client
// configuration, a dynamic client, a lazy RESTMapper and one informer per
// resource in use (listing only objects labelled ManagedLabel=true, held as
// compact Objects without managedFields), with the handlers controllers
// registered through Watch.
//
// Members are connected lazily on first use, reconnected when their Cluster's
// endpoint or credentials change and torn down when the Cluster is deleted
// (see Reconcile). A member that does not answer is left alone for a growing
// back-off, during which calls fail at once with an UnreachableError, so one
// dead member never ties up the callers of the others. No lock is held
// across a network call.
type Cache struct {
	reader client.Reader
	opts   Options

	// ctx bounds every informer; Stop cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	members map[string]*member
	// watches survive reconnects: cluster -> resource -> handler name.
	watches map[string]map[schema.GroupVersionResource]map[string]Handler
}

// New returns a cache that reads Clusters and their Secrets through reader
// (the manager's client).
func New(reader client.Reader, opts Options) *Cache {
	ctx, cancel := context.WithCancel(context.Background())
	return &Cache{
		reader:  reader,
		opts:    opts.withDefaults(),
		ctx:     ctx,
		cancel:  cancel,
		members: map[string]*member{},
		watches: map[string]map[schema.GroupVersionResource]map[string]Handler{},
	}
}

// Start makes the cache a manager Runnable: it blocks until ctx is done and
// then stops every informer.
func (c *Cache) Start(ctx context.Context) error {
	<-ctx.Done()
	c.Stop()
	return nil
}

// NeedLeaderElection is false: the cache is passive and serves whichever
// controllers run.
func (c *Cache) NeedLeaderElection() bool { return false }

// Stop tears down every member.
func (c *Cache) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, m := range c.members {
		m.cancel()
		delete(c.members, name)
	}
	c.cancel()
}

// member is the connection to one member cluster.
type member struct {
	name string
	// connectedAt is when the clients and informers were built.
	connectedAt time.Time
	fingerprint string
	clients     *Clients
	ctx         context.Context
	cancel      context.CancelFunc

	mu        sync.Mutex
	informers map[schema.GroupVersionResource]*resourceInformer
	// Back-off state: failures in a row, when the next attempt is allowed,
	// whether one caller is already probing, and the last failure.
	failures    int
	retryAt     time.Time
	lastFailure time.Time
	probing     bool
	lastErr     error
	lastReset   time.Time
	hasResetYet bool
}

type resourceInformer struct {
	informer toolscache.SharedIndexInformer
	handlers map[string]bool
}

// connectionFingerprint identifies everything that the member's clients were
// built from; a change means reconnect.
func connectionFingerprint(cluster *clusterv1alpha1.Cluster, secretResourceVersion string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "endpoint=%s;insecure=%t;proxy=%s;", cluster.Spec.APIEndpoint, cluster.Spec.InsecureSkipTLSVerification, cluster.Spec.ProxyURL)
	if ref := cluster.Spec.SecretRef; ref != nil {
		fmt.Fprintf(&b, "secret=%s/%s@%s;", ref.Namespace, ref.Name, secretResourceVersion)
	}
	keys := make([]string, 0, len(cluster.Spec.ProxyHeader))
	for k := range cluster.Spec.ProxyHeader {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "header:%s=%s;", k, cluster.Spec.ProxyHeader[k])
	}
	return b.String()
}

// fingerprint reads the Cluster's Secret (through the reader, normally an
// informer cache) for its resourceVersion.
func (c *Cache) fingerprint(ctx context.Context, cluster *clusterv1alpha1.Cluster) (string, error) {
	rv := ""
	if ref := cluster.Spec.SecretRef; ref != nil {
		var secret corev1.Secret
		if err := c.reader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &secret); err != nil {
			return "", fmt.Errorf("reading credentials %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		rv = secret.ResourceVersion
	}
	return connectionFingerprint(cluster, rv), nil
}

// connect builds the clients of a member. It reads the control plane only
// (no member I/O): discovery and informers are lazy. A Cluster being deleted
// is still connected: the Works of an unjoined, reachable member delete what
// they created there before the Cluster goes.
func (c *Cache) connect(ctx context.Context, name string) (*member, error) {
	var cluster clusterv1alpha1.Cluster
	if err := c.reader.Get(ctx, types.NamespacedName{Name: name}, &cluster); err != nil {
		return nil, fmt.Errorf("reading Cluster %s: %w", name, err)
	}
	fp, err := c.fingerprint(ctx, &cluster)
	if err != nil {
		return nil, err
	}
	cfg, err := c.config(ctx, &cluster)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = c.opts.QPS, c.opts.Burst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.opts.QPS, c.opts.Burst)
	cfg.UserAgent = "lifeboat/" + name
	clients, err := c.opts.NewClients(cfg, c.opts.RequestTimeout)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	mctx, cancel := context.WithCancel(c.ctx)
	return &member{
		name:        name,
		connectedAt: c.opts.Clock.Now(),
		fingerprint: fp,
		clients:     clients,
		ctx:         mctx,
		cancel:      cancel,
		informers:   map[schema.GroupVersionResource]*resourceInformer{},
	}, nil
}

func (c *Cache) config(ctx context.Context, cluster *clusterv1alpha1.Cluster) (*rest.Config, error) {
	if c.opts.Config != nil {
		return c.opts.Config(ctx, cluster)
	}
	return ConfigFor(ctx, c.reader, cluster)
}

// memberFor returns the connected member, connecting it on first use.
func (c *Cache) memberFor(ctx context.Context, name string) (*member, error) {
	c.mu.Lock()
	m := c.members[name]
	c.mu.Unlock()
	if m != nil {
		return m, nil
	}
	m, err := c.connect(ctx, name)
	if err != nil {
		return nil, &NotConnectedError{Cluster: name, Err: err}
	}
	c.mu.Lock()
	if existing := c.members[name]; existing != nil {
		c.mu.Unlock()
		m.cancel()
		return existing, nil
	}
	c.members[name] = m
	restore := c.watchesOfLocked(name)
	c.mu.Unlock()
	for gvr, handlers := range restore {
		for _, h := range handlers {
			c.register(m, gvr, h)
		}
	}
	return m, nil
}

func (c *Cache) watchesOfLocked(name string) map[schema.GroupVersionResource][]Handler {
	out := map[schema.GroupVersionResource][]Handler{}
	for gvr, hs := range c.watches[name] {
		for _, h := range hs {
			out[gvr] = append(out[gvr], h)
		}
	}
	return out
}

// Reconnect rebuilds a member's clients and informers when the connection
// settings of its Cluster changed, or when the Cluster became Ready again
// after the member was connected (see readyAgainSince), and forgets the
// member when the Cluster is gone. Registered watches are carried over. A
// member never used is left unconnected.
func (c *Cache) Reconnect(ctx context.Context, name string) error {
	var cluster clusterv1alpha1.Cluster
	err := c.reader.Get(ctx, types.NamespacedName{Name: name}, &cluster)
	if apierrors.IsNotFound(err) {
		c.Forget(name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Cluster %s: %w", name, err)
	}
	c.mu.Lock()
	old := c.members[name]
	c.mu.Unlock()
	if old == nil {
		return nil
	}
	fp, err := c.fingerprint(ctx, &cluster)
	if err != nil {
		return err
	}
	if fp == old.fingerprint && !readyAgainSince(&cluster, old.connectedAt) {
		return nil
	}
	fresh, err := c.connect(ctx, name)
	if err != nil {
		return &NotConnectedError{Cluster: name, Err: err}
	}
	c.mu.Lock()
	if c.members[name] != old {
		// Someone else reconnected or forgot meanwhile; their view wins.
		c.mu.Unlock()
		fresh.cancel()
		return nil
	}
	c.members[name] = fresh
	restore := c.watchesOfLocked(name)
	c.mu.Unlock()
	old.cancel()
	for gvr, handlers := range restore {
		for _, h := range handlers {
			c.register(fresh, gvr, h)
		}
	}
	return nil
}

// readyAgainSince reports whether the Cluster's Ready condition turned True
// after connectedAt: the member was unreachable while connected. Its
// informers then wait out client-go's growing back-off (up to a minute
// after a long outage) before they list again, so the statuses of the
// member's objects would stay stale for that long; fresh informers list at
// once (their Added events also re-queue everything of the member), and the
// request back-off starts over.
func readyAgainSince(cluster *clusterv1alpha1.Cluster, connectedAt time.Time) bool {
	cond := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	return cond != nil && cond.Status == metav1.ConditionTrue && cond.LastTransitionTime.Time.After(connectedAt)
}

// Forget tears down a member: its informers stop and its watches are
// dropped. The next use connects afresh.
func (c *Cache) Forget(name string) {
	c.mu.Lock()
	m := c.members[name]
	delete(c.members, name)
	delete(c.watches, name)
	c.mu.Unlock()
	if m != nil {
		m.cancel()
	}
}

// Connected reports whether the cache holds clients for a member.
func (c *Cache) Connected(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[name] != nil
}

// Watch makes sure the member runs an informer for gvr (managed objects
// only) and that h receives its events. The first registration of a handler
// replays the objects already listed as Added events. Watch does no network
// I/O itself; the informer lists and watches in the background.
func (c *Cache) Watch(ctx context.Context, cluster string, gvr schema.GroupVersionResource, h Handler) error {
	if h.Name == "" || h.OnEvent == nil {
		return fmt.Errorf("watching %s in cluster %s: handler needs a name and a function", gvr, cluster)
	}
	m, err := c.memberFor(ctx, cluster)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if cur := c.members[cluster]; cur != m {
		m = cur
	}
	if m == nil {
		c.mu.Unlock()
		return &NotConnectedError{Cluster: cluster, Err: fmt.Errorf("member was disconnected")}
	}
	byGVR := c.watches[cluster]
	if byGVR == nil {
		byGVR = map[schema.GroupVersionResource]map[string]Handler{}
		c.watches[cluster] = byGVR
	}
	if byGVR[gvr] == nil {
		byGVR[gvr] = map[string]Handler{}
	}
	byGVR[gvr][h.Name] = h
	c.mu.Unlock()
	c.register(m, gvr, h)
	return nil
}

// register starts the informer for gvr if needed and adds h once.
func (c *Cache) register(m *member, gvr schema.GroupVersionResource, h Handler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ri := m.informers[gvr]
	if ri == nil {
		inf := dynamicinformer.NewFilteredDynamicInformer(m.clients.Dynamic, gvr, metav1.NamespaceAll, c.opts.ResyncPeriod,
			toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
			func(o *metav1.ListOptions) { o.LabelSelector = ManagedLabel + "=" + ManagedLabelValue },
		).Informer()
		// Cannot fail: the informer has not started.
		_ = inf.SetTransform(packed.Transform)
		ri = &resourceInformer{informer: inf, handlers: map[string]bool{}}
		m.informers[gvr] = ri
		go inf.Run(m.ctx.Done())
	}
	if ri.handlers[h.Name] {
		return
	}
	ri.handlers[h.Name] = true
	cluster := m.name
	// AddEventHandler only fails on a stopped informer, which happens
	// only when the member is being torn down.
	_, _ = ri.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if u, ok := obj.(*packed.Object); ok {
				h.OnEvent(Event{Cluster: cluster, Type: Added, Object: u})
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, ok1 := oldObj.(*packed.Object)
			n, ok2 := newObj.(*packed.Object)
			if ok1 && ok2 {
				h.OnEvent(Event{Cluster: cluster, Type: Updated, Object: n, Old: o})
			}
		},
		DeleteFunc: func(obj interface{}) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if u, ok := obj.(*packed.Object); ok {
				h.OnEvent(Event{Cluster: cluster, Type: Deleted, Object: u})
			}
		},
	})
}

// Cached returns a managed object from the member's informer, without any
// network I/O. synced is false when no informer for gvr has listed yet (ask
// Watch first); obj is nil when the informer does not hold the object (absent
// or not managed). The object is a copy.
func (c *Cache) Cached(cluster string, gvr schema.GroupVersionResource, namespace, name string) (obj *unstructured.Unstructured, synced bool) {
	c.mu.Lock()
	m := c.members[cluster]
	c.mu.Unlock()
	if m == nil {
		return nil, false
	}
	return m.cached(gvr, namespace, name)
}

func (m *member) cached(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, bool) {
	m.mu.Lock()
	ri := m.informers[gvr]
	m.mu.Unlock()
	if ri == nil || !ri.informer.HasSynced() {
		return nil, false
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	item, exists, err := ri.informer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil, true
	}
	o, ok := item.(*packed.Object)
	if !ok {
		return nil, true
	}
	u, err := o.Unstructured()
	if err != nil {
		// Cannot happen: the JSON was encoded from a decoded object. Not
		// "absent", which would make callers re-create it: as if the
		// informer had not listed yet.
		return nil, false
	}
	return u, true
}

// EachCached calls fn with every object the member's informer for gvr
// holds (managed objects only), without network I/O, until fn returns
// false. held is false, and fn is not called, when no informer for gvr has
// listed yet. The objects are shared with the informer: never modify them.
// An informer can lag behind the member: an object created a moment ago
// may be missing and one deleted a moment ago still there.
func (c *Cache) EachCached(cluster string, gvr schema.GroupVersionResource, fn func(*packed.Object) bool) (held bool) {
	c.mu.Lock()
	m := c.members[cluster]
	c.mu.Unlock()
	if m == nil {
		return false
	}
	m.mu.Lock()
	ri := m.informers[gvr]
	m.mu.Unlock()
	if ri == nil || !ri.informer.HasSynced() {
		return false
	}
	for _, item := range ri.informer.GetStore().List() {
		if o, ok := item.(*packed.Object); ok && !fn(o) {
			break
		}
	}
	return true
}

// Get returns an object of the member: from the informer when it holds it
// (managed objects), else from the API server (absent or unmanaged objects),
// in which case a NotFound API error means absent.
func (c *Cache) Get(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	m, err := c.memberFor(ctx, cluster)
	if err != nil {
		return nil, err
	}
	if obj, _ := m.cached(gvr, namespace, name); obj != nil {
		return obj, nil
	}
	return c.read(ctx, m, gvr, namespace, name)
}

// Read returns an object of the member from its API server, never from the
// informer: for decisions the informer's copy may be too old for. A
// NotFound API error means absent.
func (c *Cache) Read(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	m, err := c.memberFor(ctx, cluster)
	if err != nil {
		return nil, err
	}
	return c.read(ctx, m, gvr, namespace, name)
}

func (c *Cache) read(ctx context.Context, m *member, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	err := c.call(ctx, m, func(ctx context.Context) error {
		var err error
		out, err = resourceClient(m, gvr, namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	return out, err
}

// Apply server-side applies obj with the given field manager, forcing
// ownership of the fields it sets.
func (c *Cache) Apply(ctx context.Context, cluster string, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	m, err := c.memberFor(ctx, cluster)
	if err != nil {
		return nil, err
	}
	var out *unstructured.Unstructured
	err = c.call(ctx, m, func(ctx context.Context) error {
		var err error
		out, err = resourceClient(m, gvr, obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		return err
	})
	return out, err
}

// Create creates obj in the member.
func (c *Cache) Create(ctx context.Context, cluster string, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	m, err := c.memberFor(ctx, cluster)
	if err != nil {
		return nil, err
	}
	var out *unstructured.Unstructured
	err = c.call(ctx, m, func(ctx context.Context) error {
		var err error
		out, err = resourceClient(m, gvr, obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
		return err
	})
	return out, err
}

// Patch patches an object of the member.
func (c *Cache) Patch(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string, pt types.PatchType, data []byte) (*unstructured.Unstructured, error) {
	m, err := c.memberFor(ctx, cluster)
	if err != nil {
		return nil, err
	}
	var out *unstructured.Unstructured
	err = c.call(ctx, m, func(ctx context.Context) error {
		var err error
		out, err = resourceClient(m, gvr, namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{})
		return err
	})
	return out, err
}

// Delete deletes an object of the member.
func (c *Cache) Delete(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string, opts metav1.DeleteOptions) error {
	m, err := c.memberFor(ctx, cluster)
	if err != nil {
		return err
	}
	return c.call(ctx, m, func(ctx context.Context) error {
		return resourceClient(m, gvr, namespace).Delete(ctx, name, opts)
	})
}

// RESTMapping maps a kind to its resource in the member. Discovery is lazy
// and cached; an unknown kind refreshes it (at most once per
// MapperResetInterval), so CRDs installed later are found.
func (c *Cache) RESTMapping(ctx context.Context, cluster string, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := c.memberFor(ctx, cluster)
	if err != nil {
		return nil, err
	}
	mapping, err := c.mapping(ctx, m, gvk)
	if meta.IsNoMatchError(err) && m.mayResetMapper(c.opts.Clock.Now(), c.opts.MapperResetInterval) {
		m.clients.Mapper.Reset()
		mapping, err = c.mapping(ctx, m, gvk)
	}
	if err != nil {
		return nil, fmt.Errorf("mapping %s in cluster %s: %w", gvk, cluster, err)
	}
	return mapping, nil
}

// mapping asks the mapper, which answers from memory once discovery ran, so
// it does not wait for the back-off; only discovery failures count as
// failures of the member.
func (c *Cache) mapping(ctx context.Context, m *member, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	mapping, err := m.clients.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if isConnectionFailure(ctx, err) {
		wait := m.recordFailure(c.opts.Clock.Now(), err, c.opts.InitialBackoff, c.opts.MaxBackoff)
		return nil, &UnreachableError{Cluster: m.name, RetryAfter: wait, Err: err}
	}
	return mapping, err
}

func (m *member) mayResetMapper(now time.Time, interval time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hasResetYet && now.Sub(m.lastReset) < interval {
		return false
	}
	m.hasResetYet, m.lastReset = true, now
	return true
}

func resourceClient(m *member, gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	if namespace == "" {
		return m.clients.Dynamic.Resource(gvr)
	}
	return m.clients.Dynamic.Resource(gvr).Namespace(namespace)
}

// call runs one request against a member under the request timeout and the
// member's back-off: while the member is backing off, it fails at once.
func (c *Cache) call(ctx context.Context, m *member, fn func(context.Context) error) error {
	now := c.opts.Clock.Now()
	if wait, ok := m.admit(now, c.opts.InitialBackoff, c.readySince(ctx, m)); !ok {
		return &UnreachableError{Cluster: m.name, RetryAfter: wait, Err: m.lastError()}
	}
	rctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	err := fn(rctx)
	if isConnectionFailure(ctx, err) {
		wait := m.recordFailure(c.opts.Clock.Now(), err, c.opts.InitialBackoff, c.opts.MaxBackoff)
		return &UnreachableError{Cluster: m.name, RetryAfter: wait, Err: err}
	}
	if ctx.Err() == nil {
		m.recordSuccess()
	}
	return err
}

// readySince is when the member's Cluster last became Ready, as the
// cluster-status controller's own probe saw it; the zero time when it is
// not Ready, or while the member has no failure to cut short (the common
// case: no read at all).
func (c *Cache) readySince(ctx context.Context, m *member) time.Time {
	m.mu.Lock()
	failing := m.failures > 0
	m.mu.Unlock()
	if !failing {
		return time.Time{}
	}
	var cluster clusterv1alpha1.Cluster
	if err := c.reader.Get(ctx, types.NamespacedName{Name: m.name}, &cluster); err != nil {
		return time.Time{}
	}
	cond := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return time.Time{}
	}
	return cond.LastTransitionTime.Time
}

// admit says whether a request may go to the member now. After failures,
// requests wait for retryAt; then exactly one caller probes while the others
// keep failing fast until the probe answers. A Cluster that became Ready
// after the last failure (readySince, second precision like every
// condition time) ends the back-off at once: after a long outage the
// back-off has grown to minutes, and the member's Ready transition is what
// re-queues the work waiting for it (deleting stale copies, applying
// changes), so waiting out the back-off would delay that work for nothing.
func (m *member) admit(now time.Time, probeWait time.Duration, readySince time.Time) (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failures == 0 {
		return 0, true
	}
	backOnline := !readySince.IsZero() && !readySince.Before(m.lastFailure.Truncate(time.Second))
	if now.Before(m.retryAt) && !backOnline {
		return m.retryAt.Sub(now), false
	}
	if m.probing {
		return probeWait, false
	}
	m.probing = true
	return 0, true
}

// recordFailure counts a failure and returns the back-off before the next
// attempt: initial, doubled per failure in a row, capped at max.
func (m *member) recordFailure(now time.Time, err error, initial, max time.Duration) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failures++
	m.probing = false
	m.lastErr = err
	m.lastFailure = now
	wait := backoff(m.failures, initial, max)
	m.retryAt = now.Add(wait)
	return wait
}

func (m *member) recordSuccess() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failures, m.probing, m.lastErr = 0, false, nil
}

func (m *member) lastError() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastErr == nil {
		return fmt.Errorf("a probe is in flight")
	}
	return m.lastErr
}

// backoff is initial * 2^(failures-1), capped at max.
func backoff(failures int, initial, max time.Duration) time.Duration {
	wait := initial
	for i := 1; i < failures && wait < max; i++ {
		wait *= 2
	}
	if wait > max {
		wait = max
	}
	return wait
}
