package localenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lifeboat-dev/lifeboat/config/rbac"
	"github.com/lifeboat-dev/lifeboat/internal/cluster"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/components"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/hostnode"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/process"
)

// Options configure `up`.
type Options struct {
	// Dir is the state directory (default ".lifeboat").
	Dir string
	// Members is the number of member clusters, 1 to 20.
	Members int
	// CacheDir is where components are built (default components.DefaultCacheDir()).
	CacheDir string
	// LifeboatBinary runs the controller manager (default: this executable).
	LifeboatBinary string
	// ControllerManagerArgs are extra flags for `lifeboat controller-manager`.
	ControllerManagerArgs []string
	// WithKyverno also runs Kyverno's admission controller against every
	// member and installs the shipped Flink restore ClusterPolicy
	// (examples/flink/kyverno-clusterpolicy.yaml) there. Kyverno is built
	// on first use only.
	WithKyverno bool
	// MemberResources are kinds Lifeboat may write in every member on top
	// of cluster.DefaultMemberResources and LocalMemberResources (each
	// member is joined as `lifeboat join --propagate-resource` would).
	MemberResources []cluster.MemberResource
	// Host also starts the host cluster (host.go): a Kubernetes cluster
	// whose one node runs real containers, with Services, cluster DNS and
	// PersistentVolumes, for installing Lifeboat's Helm chart. Every API
	// server of the environment then listens on the node's address, so
	// that pods reach the members. It needs root and Debian's containerd,
	// runc and CNI plugins (`make host-deps`), and is built on first use.
	Host bool
	// Partitionable puts a proxy of the environment between the control
	// plane and each member (partition.go), so that `lifeboat env
	// partition` can cut the path while the member keeps running. Through
	// the proxy a stopped member's API server drops the control plane's
	// connections instead of refusing them, which clients retry for longer
	// before they give up: off by default, so that the other faults look
	// as they do without it.
	Partitionable bool
	// PullMembers are the members joined in Pull mode (pull.go): each runs
	// `lifeboat agent`, registered with a bootstrap token, instead of
	// being reached by the control plane.
	PullMembers []string
	// AgentArgs are extra flags for every `lifeboat agent`; they need
	// PullMembers.
	AgentArgs []string
	// HostImages are image archives imported into the host node besides
	// the Kubernetes components' (Lifeboat's image, for one).
	HostImages []string
	// ServerGCPercent is the Go garbage collector's target (GOGC) of etcd
	// and every kube-apiserver the environment starts; 0 leaves Go's 100
	// (or a GOGC of the calling environment). Those processes serve every
	// request of a mass failover, and collect their garbage often.
	ServerGCPercent int
	// Out receives progress for a person.
	Out io.Writer
}

// LocalMemberResources are the kinds the local environment lets Lifeboat
// write in its members beyond the default set: Flink's, for the stateful
// failover walkthrough.
func LocalMemberResources() []cluster.MemberResource {
	return []cluster.MemberResource{{Group: "flink.apache.org", Resource: "*"}}
}

func (o *Options) defaults() error {
	if o.Dir == "" {
		o.Dir = ".lifeboat"
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	o.Dir = abs
	// No default: 0 members is a mistake, not a request for the CLI's 3.
	if o.Members < 1 || o.Members > 20 {
		return fmt.Errorf("--members must be between 1 and 20, got %d", o.Members)
	}
	if err := checkPullMembers(o.PullMembers, o.Members); err != nil {
		return err
	}
	if len(o.AgentArgs) > 0 && len(o.PullMembers) == 0 {
		return errors.New("--agent-arg needs --pull-member: only a Pull member runs \"lifeboat agent\"")
	}
	// Go reads GOGC as a 32-bit number and takes 100 for one it cannot.
	if o.ServerGCPercent < 0 || o.ServerGCPercent > math.MaxInt32 {
		return fmt.Errorf("--server-gc-percent must be between 0 (Go's default) and %d, got %d", math.MaxInt32, o.ServerGCPercent)
	}
	if o.CacheDir == "" {
		o.CacheDir = components.DefaultCacheDir()
	}
	if o.LifeboatBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding the lifeboat binary: %w", err)
		}
		o.LifeboatBinary = exe
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	return nil
}

// ErrAlreadyUp says that a healthy environment already runs in the directory.
var ErrAlreadyUp = errors.New("the local environment is already up")

// Up builds the components if needed and starts the environment. When an
// environment already runs in the directory it returns its state and
// ErrAlreadyUp without changing anything. When any step fails, everything
// started so far is stopped and the state directory removed, and the error
// carries the tail of the failing component's log.
func Up(ctx context.Context, opts Options) (*State, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if existing, err := Load(opts.Dir); err == nil {
		if existing.Ready && allAlive(existing) {
			return existing, ErrAlreadyUp
		}
		return nil, fmt.Errorf("a local environment in %s is partly running or was not stopped cleanly; run `lifeboat down --state-dir %s` first", opts.Dir, opts.Dir)
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}

	var optional []string
	if opts.WithKyverno {
		optional = append(optional, components.Kyverno)
	}
	if opts.Host {
		if err := checkHostPrerequisites(); err != nil {
			return nil, err
		}
		for _, t := range opts.HostImages {
			if _, err := os.Stat(t); err != nil {
				return nil, fmt.Errorf("image archive for the host node: %w", err)
			}
		}
		optional = append(optional, components.HostModules()...)
	}
	bins, err := components.Ensure(ctx, opts.CacheDir, opts.Out, optional...)
	if err != nil {
		return nil, fmt.Errorf("building components: %w", err)
	}

	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating state directory: %w", err)
	}
	s := &State{Dir: opts.Dir, Created: time.Now()}
	u := &upper{opts: opts, bins: bins, state: s}
	start := time.Now()
	if err := u.run(ctx); err != nil {
		fmt.Fprintln(opts.Out, "Start failed; stopping what was started.")
		if derr := Down(s.Dir, io.Discard); derr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", derr))
		}
		return nil, err
	}
	s.Ready = true
	// Saved before the supervisor starts: from then on the state is
	// changed only under its lock, never overwritten from this copy.
	if err := s.save(); err != nil {
		return nil, err
	}
	if err := u.startSupervisor(ctx); err != nil {
		fmt.Fprintln(opts.Out, "Start failed; stopping what was started.")
		if derr := Down(s.Dir, io.Discard); derr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", derr))
		}
		return nil, err
	}
	fmt.Fprintf(opts.Out, "✓ %s: starts a component again when it exits (lifeboat status shows its restarts)\n", SupervisorComponent)
	fmt.Fprintf(opts.Out, "Local environment ready in %s.\n", time.Since(start).Round(100*time.Millisecond))
	return s, nil
}

// upper carries one `up` run.
type upper struct {
	opts  Options
	bins  components.Binaries
	state *State
	pki   pki
	mu    sync.Mutex // guards state.Components while members start in parallel
}

func (u *upper) run(ctx context.Context) error {
	s, out := u.state, u.opts.Out
	for _, d := range []string{"logs", "pki", "etcd"} {
		if err := os.MkdirAll(filepath.Join(s.Dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := s.save(); err != nil {
		return err
	}
	var err error
	if u.pki, err = writePKI(filepath.Join(s.Dir, "pki")); err != nil {
		return err
	}

	// 0. The host cluster's network first: the API servers listen on the
	// node's address.
	if u.opts.Host {
		if err := u.setUpHostNetwork(ctx); err != nil {
			return err
		}
		fmt.Fprintf(out, "✓ host: network (node %s, pods %s, Services %s), guarded so that nothing leaves the machine\n", hostnode.NodeIP, hostnode.PodCIDR, hostnode.ServiceCIDR)
	}

	// 1. etcd, shared by every API server under its own key prefix.
	etcdURL, err := u.startEtcd(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "✓ etcd")

	// 2. API servers, all at once.
	names := []string{ControlPlaneName}
	for i := 1; i <= u.opts.Members; i++ {
		names = append(names, "member"+strconv.Itoa(i))
	}
	if u.opts.Host {
		names = append(names, HostClusterName)
	}
	for _, n := range names {
		tok, err := newToken()
		if err != nil {
			return err
		}
		port, err := freePort()
		if err != nil {
			return err
		}
		c := ClusterInfo{Name: n, Server: "https://" + u.bindAddress() + ":" + strconv.Itoa(port), Token: tok,
			Member: n != ControlPlaneName && n != HostClusterName}
		if c.Member && u.opts.Partitionable {
			proxyPort, err := freePort()
			if err != nil {
				return err
			}
			c.Endpoint = u.endpointFor(proxyPort)
		}
		if c.Member && slices.Contains(u.opts.PullMembers, n) {
			if err := u.pullInfo(&c); err != nil {
				return err
			}
		}
		if !c.Member {
			if c.ControllerManagerToken, err = newToken(); err != nil {
				return err
			}
		}
		s.Clusters = append(s.Clusters, c)
	}
	if err := writeKubeconfig(s); err != nil {
		return err
	}
	if err := u.parallel(s.Clusters, func(c ClusterInfo) error { return u.startAPIServer(ctx, c, etcdURL) }); err != nil {
		return err
	}
	fmt.Fprintf(out, "✓ API servers: %s\n", strings.Join(names, ", "))

	// 3. Member components and each member's node; CRDs in the control
	// plane; the host cluster's node.
	members := s.memberInfos()
	var wg sync.WaitGroup
	var crdErr, hostErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		crdErr = installControlPlane(ctx, s)
		crdErr = errors.Join(crdErr, u.startControlPlaneControllers(ctx))
	}()
	if host, ok := s.Cluster(HostClusterName); ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hostErr = u.startHostCluster(ctx, host)
		}()
	}
	memberErr := u.parallel(members, func(c ClusterInfo) error { return u.startMember(ctx, c) })
	wg.Wait()
	if err := errors.Join(memberErr, crdErr, hostErr); err != nil {
		return err
	}
	fmt.Fprintln(out, "✓ CRDs, the controller manager's least-privilege ClusterRole and the default ClusterTaintPolicy installed in the control plane")
	fmt.Fprintf(out, "✓ members ready, one node each: %s\n", strings.Join(s.Members(), ", "))

	// 4. Kyverno in every member, when asked for, while the members are
	// registered and the controller manager starts. Every return below
	// waits for it first: a failed start stops all that was started, and
	// nothing may start after that.
	kyvernoCtx, cancelKyverno := context.WithCancel(ctx)
	defer cancelKyverno()
	kyvernoDone := make(chan error, 1)
	if u.opts.WithKyverno {
		go func() {
			kyvernoDone <- u.startKyvernos(kyvernoCtx, members)
		}()
	} else {
		kyvernoDone <- nil
	}
	if err := u.registerAndStartControllers(ctx); err != nil {
		cancelKyverno()
		return errors.Join(err, <-kyvernoDone)
	}
	if err := <-kyvernoDone; err != nil {
		return err
	}
	if u.opts.WithKyverno {
		fmt.Fprintln(out, "✓ Kyverno in every member, with the Flink restore ClusterPolicy (examples/flink/kyverno-clusterpolicy.yaml)")
	}
	return nil
}

// registerAndStartControllers registers the members as Clusters and starts
// the Lifeboat controller manager.
func (u *upper) registerAndStartControllers(ctx context.Context) error {
	s, out := u.state, u.opts.Out
	resources := append(LocalMemberResources(), u.opts.MemberResources...)
	var pull []ClusterInfo
	for _, c := range s.memberInfos() {
		if c.Pull {
			pull = append(pull, c)
			continue
		}
		if err := registerCluster(ctx, s, c, resources); err != nil {
			return fmt.Errorf("registering %s: %w", c.Name, err)
		}
	}
	fmt.Fprintln(out, "✓ members joined as Clusters, each with a least-privilege ServiceAccount")

	if err := u.startControllerManager(ctx); err != nil {
		return err
	}
	fmt.Fprintln(out, "✓ lifeboat controller-manager")
	if len(pull) == 0 {
		return nil
	}
	// The controller manager approves the agents' certificates: the pull
	// members register once it runs.
	if err := u.parallel(pull, func(c ClusterInfo) error { return u.startPullMember(ctx, c) }); err != nil {
		return err
	}
	names := make([]string, 0, len(pull))
	for _, c := range pull {
		names = append(names, c.Name)
	}
	fmt.Fprintf(out, "✓ pull members registered with bootstrap tokens, each running lifeboat agent: %s\n", strings.Join(names, ", "))
	return nil
}

// parallel runs f for each cluster at once and joins the errors.
func (u *upper) parallel(cs []ClusterInfo, f func(ClusterInfo) error) error {
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(c)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// start launches one component, records it in the state at once (so that a
// later failure can stop it), supervised, and waits until its health URL
// answers 200.
func (u *upper) start(ctx context.Context, c Component, h healthCheck, timeout time.Duration) error {
	c.Log = filepath.Join(u.state.Dir, "logs", c.Name+".log")
	rec, err := process.Start(c.Binary, c.Args, c.Env, c.Log)
	c.Process, c.Started, c.Supervised = rec, time.Now(), true
	if rec.PID > 0 {
		u.mu.Lock()
		u.state.Components = append(u.state.Components, c)
		serr := u.state.save()
		u.mu.Unlock()
		if serr != nil {
			return serr
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	if err := waitHealthy(ctx, c, h, timeout); err != nil {
		return fmt.Errorf("%s did not become healthy: %w\n--- last lines of %s ---\n%s", c.Name, err, c.Log, logTail(c.Log, 25))
	}
	return nil
}

func (u *upper) startEtcd(ctx context.Context) (string, error) {
	ports, err := freePorts(2)
	if err != nil {
		return "", err
	}
	client, peer := ports[0], ports[1]
	url := "http://127.0.0.1:" + strconv.Itoa(client)
	c := Component{
		Name:   etcdComponent,
		Binary: u.bins.Path(components.Etcd),
		Args: []string{
			"--name=lifeboat",
			"--data-dir=" + filepath.Join(u.state.Dir, "etcd"),
			"--listen-client-urls=" + url,
			"--advertise-client-urls=" + url,
			"--listen-peer-urls=http://127.0.0.1:" + strconv.Itoa(peer),
			"--initial-advertise-peer-urls=http://127.0.0.1:" + strconv.Itoa(peer),
			"--initial-cluster=lifeboat=http://127.0.0.1:" + strconv.Itoa(peer),
			// A throwaway local store: durability across power loss buys nothing
			// here and fsync dominates latency on small disks.
			"--unsafe-no-fsync",
			"--quota-backend-bytes=4294967296",
			"--log-level=warn",
		},
		Health: url + "/health",
		Env:    serverEnv(u.opts.ServerGCPercent),
	}
	return url, u.start(ctx, c, healthCheck{}, 60*time.Second)
}

func (u *upper) startAPIServer(ctx context.Context, c ClusterInfo, etcdURL string) error {
	dir := filepath.Join(u.state.Dir, c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	users := c.Token + ",admin,admin,system:masters\n"
	if c.ControllerManagerToken != "" {
		users += c.ControllerManagerToken + "," + rbac.ControllerManagerUser + "," + rbac.ControllerManagerUser + "\n"
	}
	serviceRange, authorization := "10.96.0.0/16", "RBAC"
	var extra []string
	if c.Name == HostClusterName {
		users += hostAPIServerUsers(u.state.Host)
		extra = hostnode.APIServerArgs()
		serviceRange, authorization = hostnode.ServiceCIDR, hostnode.APIServerAuthorization
	}
	if c.Name == ControlPlaneName {
		// Pull members register with bootstrap tokens (kube-system
		// Secrets made by `lifeboat token create`); members do not.
		extra = append(extra, "--enable-bootstrap-token-auth=true")
	}
	if err := os.WriteFile(tokens, []byte(users), 0o600); err != nil {
		return err
	}
	server, err := url.Parse(c.Server)
	if err != nil {
		return fmt.Errorf("parsing %s's address: %w", c.Name, err)
	}
	comp := Component{
		Name:    c.Name + "-apiserver",
		Cluster: c.Name,
		Binary:  u.bins.Path(components.KubeAPIServer),
		Args: []string{
			"--etcd-servers=" + etcdURL,
			"--etcd-prefix=/" + c.Name,
			"--bind-address=" + server.Hostname(),
			"--advertise-address=" + server.Hostname(),
			"--secure-port=" + server.Port(),
			"--tls-cert-file=" + u.pki.ServingCert,
			"--tls-private-key-file=" + u.pki.ServeKey,
			"--client-ca-file=" + u.pki.CACert,
			"--token-auth-file=" + tokens,
			"--authorization-mode=" + authorization,
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + u.pki.ServiceAccountKey,
			"--service-account-signing-key-file=" + u.pki.ServiceAccountKey,
			"--service-cluster-ip-range=" + serviceRange,
			"--allow-privileged=true",
			"--profiling=false",
			"--event-ttl=1h",
			"--cert-dir=" + filepath.Join(dir, "certs"),
		},
		Health: c.Server + "/readyz",
		Env:    serverEnv(u.opts.ServerGCPercent),
	}
	comp.Args = append(comp.Args, extra...)
	return u.start(ctx, comp, healthCheck{caFile: u.pki.CACert, token: c.Token}, 90*time.Second)
}

// serverEnv is the environment of etcd and the API servers: GOGC when
// gcPercent is set.
func serverEnv(gcPercent int) []string {
	if gcPercent == 0 {
		return nil
	}
	return []string{gogcPrefix + strconv.Itoa(gcPercent)}
}

// etcdComponent names the environment's one etcd; gogcPrefix starts the
// GOGC entry of a component's environment.
const (
	etcdComponent = "etcd"
	gogcPrefix    = "GOGC="
)

// memberControllers are the kube-controller-manager controllers a member runs:
// enough for workloads, namespaces and service accounts to behave as in a
// real cluster. Node lifecycle is left out: kwok owns the node.
var memberControllers = []string{
	"deployment-controller", "replicaset-controller", "statefulset-controller",
	"daemonset-controller", "job-controller", "cronjob-controller",
	"garbage-collector-controller", "namespace-controller", "serviceaccount-controller",
	"serviceaccount-token-controller", "endpointslice-controller", "disruption-controller",
	"ttl-after-finished-controller", "root-ca-certificate-publisher-controller",
	"persistentvolume-binder-controller", "persistentvolume-protection-controller",
	"persistentvolumeclaim-protection-controller", "resourcequota-controller",
	"pod-garbage-collector-controller",
}

func (u *upper) startMember(ctx context.Context, c ClusterInfo) error {
	dir := filepath.Join(u.state.Dir, c.Name)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeSingleKubeconfig(kubeconfig, c, u.pki.CACert); err != nil {
		return err
	}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	kcmPort, schedPort, kwokPort := ports[0], ports[1], ports[2]
	stages := filepath.Join(dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, kwokStages, 0o644); err != nil {
		return err
	}
	idx := strings.TrimPrefix(c.Name, "member")
	secure := healthCheck{insecure: true}
	comps := []struct {
		c Component
		h healthCheck
	}{
		{u.kubeControllerManager(c, kubeconfig, kcmPort, c.Name+"-controller-manager", memberControllers), secure},
		{u.scheduler(c, kubeconfig, schedPort), secure},
		{Component{
			Name: c.Name + "-kwok", Cluster: c.Name,
			Binary: u.bins.Path(components.Kwok),
			Args: []string{
				"--kubeconfig=" + kubeconfig,
				"--config=" + stages,
				"--manage-all-nodes=false",
				"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
				"--cidr=10.244." + idx + ".0/24",
				"--node-ip=127.0.0.1",
				"--server-address=127.0.0.1:" + strconv.Itoa(kwokPort),
			},
			Health: "http://127.0.0.1:" + strconv.Itoa(kwokPort) + "/healthz",
		}, healthCheck{}},
	}
	for _, x := range comps {
		if err := u.start(ctx, x.c, x.h, 60*time.Second); err != nil {
			return err
		}
	}
	if c.Endpoint != "" {
		if err := u.startProxy(ctx, c); err != nil {
			return err
		}
	}
	return prepareMember(ctx, u.state, c)
}

// scheduler describes the kube-scheduler of cluster c, serving its health
// on loopback port.
func (u *upper) scheduler(c ClusterInfo, kubeconfig string, port int) Component {
	return Component{
		Name: c.Name + "-scheduler", Cluster: c.Name,
		Binary: u.bins.Path(components.KubeScheduler),
		Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			"--kube-api-qps=200",
			"--kube-api-burst=400",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--cert-dir=" + filepath.Join(u.state.Dir, c.Name, "scheduler-certs"),
		},
		Health: "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz",
	}
}

// kubeControllerManager describes a kube-controller-manager for cluster c
// running the given controllers.
func (u *upper) kubeControllerManager(c ClusterInfo, kubeconfig string, port int, name string, controllers []string) Component {
	dir := filepath.Join(u.state.Dir, c.Name)
	return Component{
		Name: name, Cluster: c.Name,
		Binary: u.bins.Path(components.KubeControllerManager),
		Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			"--controllers=" + strings.Join(controllers, ","),
			"--service-account-private-key-file=" + u.pki.ServiceAccountKey,
			"--root-ca-file=" + u.pki.CACert,
			"--use-service-account-credentials=false",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--cert-dir=" + filepath.Join(dir, "kcm-certs"),
			// Members here create hundreds of pods at once (failover of many
			// workloads); the default 20 QPS would queue them for seconds.
			"--kube-api-qps=200",
			"--kube-api-burst=400",
			"--concurrent-deployment-syncs=10",
			"--concurrent-replicaset-syncs=10",
			"--concurrent-gc-syncs=20",
			"--concurrent-namespace-syncs=10",
		},
		Health: "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz",
	}
}

// controlPlaneControllers are what the control plane needs from
// kube-controller-manager, as in Karmada: namespaces that can finish
// terminating, and garbage collection of owned objects (a binding owned by its
// template, a Secret owned by its Cluster); for pull members, the signing of
// the client certificates their agents ask for (once Lifeboat's
// agent-csr-approving controller approved them) and the deletion of expired
// bootstrap tokens.
var controlPlaneControllers = []string{"namespace-controller", "garbage-collector-controller",
	"certificatesigningrequest-signing-controller", "token-cleaner-controller"}

// startControlPlaneControllers runs kube-controller-manager for the control plane.
func (u *upper) startControlPlaneControllers(ctx context.Context) error {
	c := u.state.Clusters[0]
	dir := filepath.Join(u.state.Dir, c.Name)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeSingleKubeconfig(kubeconfig, c, u.pki.CACert); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	comp := u.kubeControllerManager(c, kubeconfig, port, ControlPlaneName+"-kube-controller-manager", controlPlaneControllers)
	// The environment's CA signs the agents' client certificates: the API
	// server trusts it for clients already (--client-ca-file).
	comp.Args = append(comp.Args,
		"--cluster-signing-kube-apiserver-client-cert-file="+u.pki.CACert,
		"--cluster-signing-kube-apiserver-client-key-file="+u.pki.CAKey,
		"--cluster-signing-duration=8760h",
	)
	return u.start(ctx, comp, healthCheck{insecure: true}, 60*time.Second)
}

func (u *upper) startControllerManager(ctx context.Context) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	healthPort, metricsPort := ports[0], ports[1]
	cp := u.state.Clusters[0]
	kubeconfig := u.state.ControllerManagerKubeconfigPath()
	if err := writeKubeconfigFile(kubeconfig, cp.Name, cp.Server, cp.ControllerManagerToken, u.pki.CACert); err != nil {
		return err
	}
	args := []string{
		"controller-manager",
		"--kubeconfig=" + kubeconfig,
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(healthPort),
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metricsPort),
	}
	args = append(args, u.opts.ControllerManagerArgs...)
	c := Component{
		Name:    ControllerManagerComponent,
		Cluster: ControlPlaneName,
		Binary:  u.opts.LifeboatBinary,
		Args:    args,
		Health:  "http://127.0.0.1:" + strconv.Itoa(healthPort) + "/readyz",
	}
	return u.start(ctx, c, healthCheck{}, 60*time.Second)
}

// startSupervisor starts the environment's supervisor (`lifeboat env
// supervise`, supervisor.go) and records it in the same locked write, which
// the supervisor waits for before its first pass. It is not supervised
// itself: if it exits, lifeboat status shows it not running, and lifeboat
// env restart lifeboat-supervisor starts it again.
func (u *upper) startSupervisor(ctx context.Context) error {
	c := Component{
		Name:   SupervisorComponent,
		Binary: u.opts.LifeboatBinary,
		Args:   []string{"env", "supervise", "--state-dir", u.state.Dir},
		Log:    filepath.Join(u.state.Dir, "logs", SupervisorComponent+".log"),
	}
	err := withStateLock(u.state.Dir, func(s *State) error {
		rec, err := process.Start(c.Binary, c.Args, c.Env, c.Log)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		c.Process, c.Started = rec, time.Now()
		s.Components = append(s.Components, c)
		return nil
	})
	if err != nil {
		return err
	}
	u.state.Components = append(u.state.Components, c)
	if err := waitHealthy(ctx, c, healthCheck{}, 10*time.Second); err != nil {
		return fmt.Errorf("%s did not start: %w\n--- last lines of %s ---\n%s", c.Name, err, c.Log, logTail(c.Log, 25))
	}
	return nil
}

// freePorts asks the kernel for n free loopback ports.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	return ports, nil
}

func logTail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	parts := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
