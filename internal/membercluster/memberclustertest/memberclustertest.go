// Package memberclustertest builds a membercluster.Cache whose members are
// fake dynamic clients, for the unit tests of the controllers that talk to
// member clusters. Server-side apply is emulated as create-or-replace (the
// fake tracker cannot create through apply); status is kept on replace.
package memberclustertest

import (
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
)

// Well-known resources of the fake members.
var (
	Deployments     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	ReplicaSets     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	ConfigMaps      = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	Namespaces      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	Services        = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	Endpoints       = schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}
	Secrets         = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	ServiceAccounts = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	Pods            = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	Events          = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	ClusterRoles    = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
)

// resources are the fake members' kinds: discovery serves them, the mapper
// maps them and the dynamic client lists them.
var resources = []struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
}{
	{Deployments, "Deployment", true},
	{ReplicaSets, "ReplicaSet", true},
	{ConfigMaps, "ConfigMap", true},
	{Namespaces, "Namespace", false},
	{Services, "Service", true},
	{Endpoints, "Endpoints", true},
	{Secrets, "Secret", true},
	{ServiceAccounts, "ServiceAccount", true},
	{Pods, "Pod", true},
	{Events, "Event", true},
	{ClusterRoles, "ClusterRole", false},
}

var listKinds = func() map[schema.GroupVersionResource]string {
	out := map[schema.GroupVersionResource]string{}
	for _, r := range resources {
		out[r.gvr] = r.kind + "List"
	}
	return out
}()

// apiResourceLists is what the fake members' discovery serves.
func apiResourceLists() []*metav1.APIResourceList {
	byGV := map[schema.GroupVersion]*metav1.APIResourceList{}
	var out []*metav1.APIResourceList
	for _, r := range resources {
		gv := r.gvr.GroupVersion()
		l := byGV[gv]
		if l == nil {
			l = &metav1.APIResourceList{GroupVersion: gv.String()}
			byGV[gv] = l
			out = append(out, l)
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name: r.gvr.Resource, Kind: r.kind, Namespaced: r.namespaced,
			Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"},
		})
	}
	return out
}

// Mapper is a static RESTMapper that counts resets.
type Mapper struct {
	meta.RESTMapper
	mu     sync.Mutex
	resets int
}

// Reset counts the call.
func (m *Mapper) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resets++
}

// Resets returns how often Reset was called.
func (m *Mapper) Resets() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.resets
}

// NewMapper maps the well-known resources.
func NewMapper() *Mapper {
	rm := meta.NewDefaultRESTMapper(nil)
	for _, r := range resources {
		scope := meta.RESTScopeRoot
		if r.namespaced {
			scope = meta.RESTScopeNamespace
		}
		gvk := r.gvr.GroupVersion().WithKind(r.kind)
		rm.AddSpecific(gvk, r.gvr, r.gvr.GroupVersion().WithResource(strings.ToLower(r.kind)), scope)
	}
	return &Mapper{RESTMapper: rm}
}

// Env is a Cache over fake members.
type Env struct {
	Cache *membercluster.Cache
	Clock *clocktesting.FakeClock

	mu        sync.Mutex
	members   map[string]*fakedynamic.FakeDynamicClient
	discovery map[string]*fakediscovery.FakeDiscovery
	mappers   map[string]*Mapper
	connects  map[string]int
	watching  map[string]chan struct{}
	down      map[string]bool
	// RequireNamespaces makes apply and create of namespaced objects fail
	// with NotFound (namespaces) until the namespace exists, as a real API
	// server does.
	RequireNamespaces bool
}

// ClusterObjects returns a push-mode Cluster and its Secret, for the
// control-plane fake client.
func ClusterObjects(name string) []client.Object {
	return []client.Object{
		&clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1alpha1.ClusterSpec{
				SyncMode:    clusterv1alpha1.Push,
				APIEndpoint: "https://" + name + ".example:6443",
				SecretRef:   &clusterv1alpha1.LocalSecretReference{Namespace: "karmada-cluster", Name: name},
			},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-cluster", Name: name, ResourceVersion: "1"},
			Data:       map[string][]byte{clusterv1alpha1.SecretTokenKey: []byte("token-" + name)},
		},
	}
}

// New returns a Cache reading Clusters and Secrets from reader, whose
// members are fake dynamic clients created on connect (one per cluster
// name, kept across reconnects so their objects survive).
func New(reader client.Reader) *Env {
	e := &Env{
		Clock:     clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)),
		members:   map[string]*fakedynamic.FakeDynamicClient{},
		discovery: map[string]*fakediscovery.FakeDiscovery{},
		mappers:   map[string]*Mapper{},
		connects:  map[string]int{},
		watching:  map[string]chan struct{}{},
		down:      map[string]bool{},
	}
	opts := membercluster.DefaultOptions()
	opts.Clock = e.Clock
	opts.RequestTimeout = 5 * time.Second
	opts.NewClients = func(cfg *rest.Config, _ time.Duration) (*membercluster.Clients, error) {
		// The user agent is lifeboat/<cluster>.
		name := cfg.UserAgent[len("lifeboat/"):]
		e.mu.Lock()
		defer e.mu.Unlock()
		e.connects[name]++
		dyn := e.memberLocked(name)
		return &membercluster.Clients{Dynamic: dyn, Metadata: metadataOf{dyn}, Mapper: e.mapperLocked(name), Discovery: e.discoveryLocked(name)}, nil
	}
	e.Cache = membercluster.New(reader, opts)
	return e
}

// Connects returns how often the cache built clients for cluster.
func (e *Env) Connects(cluster string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.connects[cluster]
}

// Member returns the fake dynamic client of cluster.
func (e *Env) Member(cluster string) *fakedynamic.FakeDynamicClient {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.memberLocked(cluster)
}

// Mapper returns the mapper of cluster.
func (e *Env) Mapper(cluster string) *Mapper {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.mapperLocked(cluster)
}

// Discovery returns the fake discovery client of cluster; tests may edit
// its Resources or prepend reactors.
func (e *Env) Discovery(cluster string) *fakediscovery.FakeDiscovery {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.discoveryLocked(cluster)
}

func (e *Env) discoveryLocked(cluster string) *fakediscovery.FakeDiscovery {
	if d := e.discovery[cluster]; d != nil {
		return d
	}
	d := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: apiResourceLists()}}
	d.AddReactor("*", "*", e.refusedWhileDown(cluster))
	e.discovery[cluster] = d
	return d
}

func (e *Env) mapperLocked(cluster string) *Mapper {
	if m := e.mappers[cluster]; m != nil {
		return m
	}
	m := NewMapper()
	e.mappers[cluster] = m
	return m
}

// WatchStarted returns a channel closed once an informer of cluster opened
// its watch for gvr: objects created after that reach the handlers (the
// fake does not replay changes made between list and watch).
func (e *Env) WatchStarted(cluster string, gvr schema.GroupVersionResource) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.watchChanLocked(cluster + "|" + gvr.String())
}

func (e *Env) watchChanLocked(key string) chan struct{} {
	ch := e.watching[key]
	if ch == nil {
		ch = make(chan struct{})
		e.watching[key] = ch
	}
	return ch
}

// refusedWhileDown fails every request to cluster as a refused connection
// while SetReachable(cluster, false) holds, and passes it on otherwise.
func (e *Env) refusedWhileDown(cluster string) k8stesting.ReactionFunc {
	return func(k8stesting.Action) (bool, runtime.Object, error) {
		e.mu.Lock()
		down := e.down[cluster]
		e.mu.Unlock()
		if down {
			return true, nil, fmt.Errorf("dial tcp 10.0.0.1:6443: connect: connection refused")
		}
		return false, nil, nil
	}
}

func (e *Env) memberLocked(cluster string) *fakedynamic.FakeDynamicClient {
	if f := e.members[cluster]; f != nil {
		return f
	}
	f := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	tracker := f.Tracker()
	f.PrependWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		gvr := action.GetResource()
		w, err := tracker.Watch(gvr, action.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		e.mu.Lock()
		ch := e.watchChanLocked(cluster + "|" + gvr.String())
		select {
		case <-ch:
		default:
			close(ch)
		}
		e.mu.Unlock()
		return true, w, nil
	})
	f.PrependReactor("patch", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pa, ok := action.(k8stesting.PatchAction)
		if !ok || pa.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(pa.GetPatch()); err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		obj.SetName(pa.GetName())
		out, err := e.upsert(tracker, pa.GetResource(), pa.GetNamespace(), obj)
		return true, out, err
	})
	f.PrependReactor("create", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		ca := action.(k8stesting.CreateAction)
		if err := e.checkNamespace(tracker, ca.GetNamespace()); err != nil {
			return true, nil, err
		}
		return false, nil, nil
	})
	// A delete honours its preconditions, as an API server does.
	f.PrependReactor("delete", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		da, ok := action.(k8stesting.DeleteActionImpl)
		if !ok || da.DeleteOptions.Preconditions == nil {
			return false, nil, nil
		}
		existing, err := tracker.Get(da.GetResource(), da.GetNamespace(), da.GetName())
		if err != nil {
			return false, nil, nil
		}
		obj := existing.(metav1.Object)
		p := da.DeleteOptions.Preconditions
		if (p.UID != nil && *p.UID != obj.GetUID()) || (p.ResourceVersion != nil && *p.ResourceVersion != obj.GetResourceVersion()) {
			return true, nil, apierrors.NewConflict(da.GetResource().GroupResource(), da.GetName(), fmt.Errorf("the precondition of the delete does not hold"))
		}
		return false, nil, nil
	})
	// Prepended last so that it runs first.
	f.PrependReactor("*", "*", e.refusedWhileDown(cluster))
	e.members[cluster] = f
	return f
}

func (e *Env) checkNamespace(tracker k8stesting.ObjectTracker, ns string) error {
	e.mu.Lock()
	require := e.RequireNamespaces
	e.mu.Unlock()
	if !require || ns == "" {
		return nil
	}
	if _, err := tracker.Get(Namespaces, "", ns); apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, ns)
	}
	return nil
}

// upsert creates obj, or replaces the existing object keeping its status
// and bumping a fake resourceVersion.
func (e *Env) upsert(tracker k8stesting.ObjectTracker, gvr schema.GroupVersionResource, ns string, obj *unstructured.Unstructured) (runtime.Object, error) {
	existing, err := tracker.Get(gvr, ns, obj.GetName())
	if apierrors.IsNotFound(err) {
		if err := e.checkNamespace(tracker, ns); err != nil {
			return nil, err
		}
		obj.SetResourceVersion("1")
		obj.SetGeneration(1)
		if err := tracker.Create(gvr, obj, ns); err != nil {
			return nil, err
		}
		return obj, nil
	}
	if err != nil {
		return nil, err
	}
	old := existing.(*unstructured.Unstructured)
	if status, ok := old.Object["status"]; ok {
		obj.Object["status"] = status
	}
	rv := 0
	_, _ = fmt.Sscanf(old.GetResourceVersion(), "%d", &rv)
	obj.SetResourceVersion(fmt.Sprint(rv + 1))
	obj.SetGeneration(old.GetGeneration() + 1)
	obj.SetUID(old.GetUID())
	if err := tracker.Update(gvr, obj, ns); err != nil {
		return nil, err
	}
	return obj, nil
}

// Put stores obj in cluster as is (for objects that exist before a test).
func (e *Env) Put(cluster string, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
	f := e.Member(cluster)
	if err := f.Tracker().Create(gvr, obj.DeepCopy(), obj.GetNamespace()); err != nil {
		panic(fmt.Sprintf("putting %s %s/%s: %v", gvr.Resource, obj.GetNamespace(), obj.GetName(), err))
	}
}

// Lookup returns the object stored in cluster, or nil.
func (e *Env) Lookup(cluster string, gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	obj, err := e.Member(cluster).Tracker().Get(gvr, namespace, name)
	if err != nil {
		return nil
	}
	return obj.(*unstructured.Unstructured).DeepCopy()
}

// SetReachable makes every request to cluster fail as a refused
// connection (false) or go through again (true).
func (e *Env) SetReachable(cluster string, reachable bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.down[cluster] = !reachable
}
