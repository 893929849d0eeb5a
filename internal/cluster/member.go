package cluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/apidiscovery"
	"github.com/lifeboat-dev/lifeboat/internal/membercluster"
)

// Member is what the status controller asks of a member cluster.
type Member interface {
	// Probe checks /readyz, falling back to /healthz when /readyz is
	// missing (404).
	Probe(ctx context.Context) ProbeResult
	// Version is the member's Kubernetes version (gitVersion).
	Version(ctx context.Context) (string, error)
	// Discover returns the served resources; partial is true when some
	// groups failed to be discovered (then lists hold the others).
	Discover(ctx context.Context) (lists []*metav1.APIResourceList, partial bool, err error)
	// EachNode and EachPod visit the member's nodes and its non-terminal
	// pods.
	EachNode(ctx context.Context, fn func(*corev1.Node)) error
	EachPod(ctx context.Context, fn func(*PodUsage)) error
}

// MemberFactory returns the Member of a Cluster.
type MemberFactory interface {
	For(ctx context.Context, cluster *clusterv1alpha1.Cluster) (Member, error)
	// Forget drops what is cached for a cluster that was deleted.
	Forget(name string)
}

// NewMemberFactory returns a MemberFactory that builds clients with
// membercluster.ConfigFor (reading the credentials Secret through reader on
// every call: through an informer cache, rotated credentials are picked up
// at the next probe without a request per probe) and reuses a member's
// client while its configuration is unchanged.
//
// Each member gets an inventory: informers on its nodes and, with
// watchPods (resource modeling), its non-terminal pods. They run until the
// member is forgotten, its configuration changes, or Stop.
func NewMemberFactory(reader client.Reader, requestTimeout time.Duration, watchPods bool) *MemberClients {
	return &MemberClients{reader: reader, timeout: requestTimeout, watchPods: watchPods, byName: map[string]cachedMember{}}
}

// MemberClients is the MemberFactory of the controller manager.
type MemberClients struct {
	reader    client.Reader
	timeout   time.Duration
	watchPods bool

	// config overrides how a member's configuration is built (see
	// WithConfig).
	config membercluster.ConfigSource

	mu     sync.Mutex
	byName map[string]cachedMember
	lost   func(name string, first bool)
}

// WithConfig makes the factory build members' configurations with src
// instead of reading the Clusters' credentials Secrets: an agent uses its
// own configuration of the cluster it runs in.
func (f *MemberClients) WithConfig(src membercluster.ConfigSource) *MemberClients {
	f.config = src
	return f
}

// OnConnectionLost sets the function told the name of a member whose
// inventory could not reach the API server; first is true for the first
// failure since the inventory last reached it. Set it before the first For.
func (f *MemberClients) OnConnectionLost(fn func(name string, first bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lost = fn
}

// Stop ends every member's inventory.
func (f *MemberClients) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, c := range f.byName {
		c.member.inventory.stop()
		delete(f.byName, name)
	}
}

type cachedMember struct {
	fingerprint [sha256.Size]byte
	member      *restMember
}

func (f *MemberClients) For(ctx context.Context, cluster *clusterv1alpha1.Cluster) (Member, error) {
	src := f.config
	if src == nil {
		src = membercluster.SecretConfig(f.reader)
	}
	cfg, err := src(ctx, cluster)
	if err != nil {
		return nil, err
	}
	fp := configFingerprint(cfg, cluster)
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.byName[cluster.Name]; ok && c.fingerprint == fp {
		return c.member, nil
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "lifeboat-cluster-status"
	cfg.QPS, cfg.Burst = 10, 20
	// Protobuf: the inventory's pod and node lists and watches cost a
	// fraction of their JSON decoding on a large member.
	pcfg := rest.CopyConfig(cfg)
	pcfg.ContentType = runtime.ContentTypeProtobuf
	pcfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(pcfg)
	if err != nil {
		return nil, fmt.Errorf("building client of cluster %s: %w", cluster.Name, err)
	}
	// The discovery client takes no context: bound its requests with a
	// client-wide timeout instead.
	dcfg := rest.CopyConfig(cfg)
	dcfg.Timeout = 3 * f.timeout
	dc, err := apidiscovery.NewForConfig(dcfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster.Name, err)
	}
	if old, ok := f.byName[cluster.Name]; ok {
		old.member.inventory.stop()
	}
	var lost func(first bool)
	if f.lost != nil {
		name, report := cluster.Name, f.lost
		lost = func(first bool) { report(name, first) }
	}
	m := &restMember{clientset: cs, discovery: dc, timeout: f.timeout, inventory: startInventory(cs, f.watchPods, lost)}
	f.byName[cluster.Name] = cachedMember{fingerprint: fp, member: m}
	return m, nil
}

func (f *MemberClients) Forget(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.byName[name]; ok {
		c.member.inventory.stop()
		delete(f.byName, name)
	}
}

// configFingerprint identifies what a client was built from, without
// keeping the token itself around as a map key.
func configFingerprint(cfg *rest.Config, cluster *clusterv1alpha1.Cluster) [sha256.Size]byte {
	h := sha256.New()
	for _, s := range []string{cfg.Host, cfg.BearerToken, string(cfg.CAData), fmt.Sprint(cfg.Insecure), cluster.Spec.ProxyURL} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	var out [sha256.Size]byte
	copy(out[:], h.Sum(nil))
	return out
}

// restMember talks to a member through client-go. Every call carries its own
// deadline so that one slow member never holds a worker for long.
type restMember struct {
	clientset kubernetes.Interface
	discovery *apidiscovery.Lister
	timeout   time.Duration
	inventory *inventory
}

// Probe asks the member's readiness endpoint. An answer tells the
// inventory that the member can be reached again (see inventory.reached).
func (m *restMember) Probe(ctx context.Context) ProbeResult {
	res := m.probePath(ctx, "/readyz")
	if res.Online && res.StatusCode == http.StatusNotFound {
		res = m.probePath(ctx, "/healthz")
	}
	if res.Healthy {
		m.inventory.reached()
	}
	return res
}

func (m *restMember) probePath(ctx context.Context, path string) ProbeResult {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	var code int
	err := m.clientset.Discovery().RESTClient().Get().AbsPath(path).Do(ctx).StatusCode(&code).Error()
	if code == 0 {
		if err == nil {
			err = errors.New("no HTTP status in the answer")
		}
		return ProbeResult{Path: path, Err: err}
	}
	return ProbeResult{Online: true, Healthy: code == http.StatusOK, Path: path, StatusCode: code}
}

func (m *restMember) Version(_ context.Context) (string, error) {
	v, err := m.discovery.Discovery().ServerVersion()
	if err != nil {
		return "", fmt.Errorf("reading the server version: %w", err)
	}
	return v.GitVersion, nil
}

// Discover uses the aggregated discovery endpoints: on any recent member two
// requests, answered 304 with nothing to decode while the member's APIs stay
// the same (see package apidiscovery).
func (m *restMember) Discover(ctx context.Context) ([]*metav1.APIResourceList, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*m.timeout)
	defer cancel()
	lists, err := m.discovery.ServerResources(ctx)
	return discoveryResult(lists, err)
}

func discoveryResult(lists []*metav1.APIResourceList, err error) ([]*metav1.APIResourceList, bool, error) {
	if err == nil {
		return lists, false, nil
	}
	if discovery.IsGroupDiscoveryFailedError(err) && len(lists) > 0 {
		return lists, true, nil
	}
	return nil, false, fmt.Errorf("discovering API resources: %w", err)
}

// EachNode reads the inventory; it waits up to three request timeouts for
// its first sync.
func (m *restMember) EachNode(ctx context.Context, fn func(*corev1.Node)) error {
	ctx, cancel := context.WithTimeout(ctx, 3*m.timeout)
	defer cancel()
	return m.inventory.eachNode(ctx, fn)
}

// EachPod is EachNode for the non-terminal pods.
func (m *restMember) EachPod(ctx context.Context, fn func(*PodUsage)) error {
	ctx, cancel := context.WithTimeout(ctx, 3*m.timeout)
	defer cancel()
	return m.inventory.eachPod(ctx, fn)
}
