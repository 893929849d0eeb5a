package localenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/lifeboat-dev/lifeboat/internal/localenv/components"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/hostnode"
)

// HostClusterName is the kubeconfig context of the host cluster: a
// Kubernetes cluster with one real node (containerd, runc, the CNI bridge)
// that runs real containers, for installing Lifeboat's Helm chart.
const HostClusterName = "host"

// Names of the host node's components.
const (
	HostContainerdComponent = "host-containerd"
	HostKubeletComponent    = "host-kubelet"
	HostKubeProxyComponent  = "host-kube-proxy"
)

// hostRunDir holds containerd's socket and state: a short, fixed path (a
// Unix socket path is at most 107 bytes), one host cluster per machine.
const hostRunDir = "/run/lifeboat-host"

// HostInfo records what the host cluster changed on the machine, so that
// `lifeboat down` undoes it even after a failed start.
type HostInfo struct {
	// Paths are the node's files.
	Paths hostnode.Paths `json:"paths"`
	// Network is set once the machine's network was changed.
	Network bool `json:"network"`
	// Sysctls are the values of hostnode.ChangedSysctls before the node
	// started.
	Sysctls map[string]string `json:"sysctls,omitempty"`
	// NodeToken and ProxyToken authenticate the kubelet (as
	// system:node:NAME) and kube-proxy (as system:kube-proxy).
	NodeToken  string `json:"nodeToken"`
	ProxyToken string `json:"proxyToken"`
}

// hostTools are the programs the host node needs from the machine, with
// the Debian package that has each.
var hostTools = []struct{ path, pkg string }{
	{"/usr/bin/containerd", "containerd"},
	{"/usr/bin/ctr", "containerd"},
	{"/usr/sbin/runc", "runc"},
	{"/usr/lib/cni/bridge", "containernetworking-plugins"},
	{"/usr/lib/cni/host-local", "containernetworking-plugins"},
	{"/usr/sbin/iptables", "iptables"},
	{"/usr/sbin/conntrack", "conntrack"},
	{"/usr/sbin/ip", "iproute2"},
}

// HostDebianPackages are the Debian packages the host cluster needs.
var HostDebianPackages = []string{"containerd", "runc", "containernetworking-plugins", "iptables", "conntrack", "iproute2"}

// checkHostPrerequisites says what is missing for a host cluster.
func checkHostPrerequisites() error {
	if os.Geteuid() != 0 {
		return errors.New("the host cluster changes the machine's network and runs containers: run as root")
	}
	var missing []string
	for _, t := range hostTools {
		if _, err := os.Stat(t.path); err != nil {
			missing = append(missing, t.path+" (package "+t.pkg+")")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the host cluster needs %v: run `make host-deps` (apt-get install %v)", missing, HostDebianPackages)
	}
	return nil
}

// bindAddress is where the environment's API servers listen: loopback, or
// with a host cluster the node's address, which its pods can reach.
func (u *upper) bindAddress() string {
	if u.opts.Host {
		return hostnode.NodeIP
	}
	return "127.0.0.1"
}

// setUpHostNetwork records the host cluster and changes the machine's
// network; the record is saved first, so that `down` undoes a half-done
// set-up.
func (u *upper) setUpHostNetwork(ctx context.Context) error {
	h := &HostInfo{Paths: hostnode.Paths{Root: filepath.Join(u.state.Dir, HostClusterName), Run: hostRunDir}}
	var err error
	if h.NodeToken, err = newToken(); err != nil {
		return err
	}
	if h.ProxyToken, err = newToken(); err != nil {
		return err
	}
	if h.Sysctls, err = hostnode.ReadSysctls("/proc/sys", hostnode.ChangedSysctls); err != nil {
		return err
	}
	u.state.Host = h
	if err := u.state.save(); err != nil {
		return err
	}
	if err := hostnode.SetupNetwork(ctx, hostnode.ExecRunner{}); err != nil {
		return err
	}
	h.Network = true
	return u.state.save()
}

// hostAPIServerUsers are the host cluster's token users beyond the
// administrator: the kubelet and kube-proxy, each with its own identity.
func hostAPIServerUsers(h *HostInfo) string {
	node := "system:node:" + hostnode.NodeName
	return h.NodeToken + "," + node + "," + node + ",system:nodes\n" +
		h.ProxyToken + ",system:kube-proxy,system:kube-proxy\n"
}

// startHostCluster starts the host cluster's controllers and its node,
// once its API server runs: kube-controller-manager and kube-scheduler,
// containerd with the images imported, the kubelet, kube-proxy, then
// CoreDNS and the default StorageClass with its volumes.
func (u *upper) startHostCluster(ctx context.Context, c ClusterInfo) error {
	h := u.state.Host
	p := h.Paths
	for _, d := range []string{p.Root, p.Run, p.CNIConfDir(), p.CNIDataDir(), p.KubeletRoot(), p.PodLogs(), p.Volumes()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	dir := filepath.Join(u.state.Dir, c.Name)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeSingleKubeconfig(kubeconfig, c, u.pki.CACert); err != nil {
		return err
	}
	kcmPort, err := freePort()
	if err != nil {
		return err
	}
	kcm := u.kubeControllerManager(c, kubeconfig, kcmPort, c.Name+"-controller-manager", []string{"*"})
	kcm.Args = append(kcm.Args, hostnode.ControllerManagerArgs()...)
	if err := u.start(ctx, kcm, healthCheck{insecure: true}, 60*time.Second); err != nil {
		return err
	}
	if err := u.startScheduler(ctx, c, kubeconfig); err != nil {
		return err
	}
	if err := u.startContainerd(ctx, p); err != nil {
		return err
	}
	if err := u.startNode(ctx, c, p); err != nil {
		return err
	}
	return u.installHostAddons(ctx, p)
}

// startContainerd writes containerd's configuration, starts it, waits for
// its CRI service, and imports the images.
func (u *upper) startContainerd(ctx context.Context, p hostnode.Paths) error {
	files := map[string]string{
		p.ContainerdConfig(): hostnode.ContainerdTOML(p, components.PauseImage, "/usr/lib/cni"),
		filepath.Join(p.CNIConfDir(), "10-lifeboat.conflist"): hostnode.CNIConfList(p),
		p.ResolvConf(): hostnode.ResolvConfContent,
	}
	for _, reg := range hostnode.BlockedRegistries {
		files[filepath.Join(p.RegistryConfigDir(), reg, "hosts.toml")] = hostnode.RegistryHostsTOML
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	comp := Component{
		Name: HostContainerdComponent, Cluster: HostClusterName,
		Binary: "/usr/bin/containerd",
		Args:   []string{"--config=" + p.ContainerdConfig()},
	}
	if err := u.start(ctx, comp, healthCheck{}, 0); err != nil {
		return err
	}
	var seen error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, seen = hostnode.Images(ctx, p.ContainerdSocket())
		return seen == nil, nil
	})
	if err != nil {
		return fmt.Errorf("containerd's CRI service did not answer: %v\n--- last lines of its log ---\n%s", seen, logTail(filepath.Join(u.state.Dir, "logs", HostContainerdComponent+".log"), 25))
	}
	tarballs := []string{filepath.Join(p.Root, "component-images.tar")}
	start := time.Now()
	if err := components.WriteHostImages(u.bins, tarballs[0], u.state.Created); err != nil {
		return fmt.Errorf("building the host cluster's images: %w", err)
	}
	tarballs = append(tarballs, u.opts.HostImages...)
	if err := ImportImages(ctx, p, tarballs...); err != nil {
		return err
	}
	fmt.Fprintf(u.opts.Out, "✓ host: containerd, %d image archives imported in %s\n", len(tarballs), time.Since(start).Round(100*time.Millisecond))
	return nil
}

// ImportImages imports image archives (docker save, OCI) into the host
// node's containerd, where the kubelet finds them.
func ImportImages(ctx context.Context, p hostnode.Paths, tarballs ...string) error {
	for _, t := range tarballs {
		cmd := exec.CommandContext(ctx, "/usr/bin/ctr", "--address", p.ContainerdSocket(), "--namespace", "k8s.io", "images", "import", t)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("importing %s into the host node: %w: %s", t, err, out)
		}
	}
	return nil
}

// startScheduler starts a kube-scheduler for cluster c.
func (u *upper) startScheduler(ctx context.Context, c ClusterInfo, kubeconfig string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	return u.start(ctx, u.scheduler(c, kubeconfig, port), healthCheck{insecure: true}, 60*time.Second)
}

// startNode starts the kubelet and kube-proxy, each with its own
// identity, and waits until the node is Ready.
func (u *upper) startNode(ctx context.Context, c ClusterInfo, p hostnode.Paths) error {
	h := u.state.Host
	nodeKubeconfig := filepath.Join(p.Root, "kubelet.kubeconfig")
	if err := writeKubeconfigFile(nodeKubeconfig, c.Name, c.Server, h.NodeToken, u.pki.CACert); err != nil {
		return err
	}
	proxyKubeconfig := filepath.Join(p.Root, "kube-proxy.kubeconfig")
	if err := writeKubeconfigFile(proxyKubeconfig, c.Name, c.Server, h.ProxyToken, u.pki.CACert); err != nil {
		return err
	}
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	kubeletPort, kubeletHealth, proxyHealth, proxyMetrics := ports[0], ports[1], ports[2], ports[3]
	files := map[string]string{
		p.KubeletConfig():   hostnode.KubeletConfiguration(p, hostnode.KubeletPorts{Port: kubeletPort, Healthz: kubeletHealth}),
		p.KubeProxyConfig(): hostnode.KubeProxyConfiguration(proxyKubeconfig, hostnode.KubeProxyPorts{Healthz: proxyHealth, Metrics: proxyMetrics}),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err := hostnode.PrepareVolumes(p); err != nil {
		return err
	}
	kubelet := Component{
		Name: HostKubeletComponent, Cluster: HostClusterName,
		Binary: u.bins.Path(components.Kubelet),
		Args:   hostnode.KubeletArgs(p, nodeKubeconfig),
		Health: "http://127.0.0.1:" + strconv.Itoa(kubeletHealth) + "/healthz",
	}
	if err := u.start(ctx, kubelet, healthCheck{}, 60*time.Second); err != nil {
		return err
	}
	proxy := Component{
		Name: HostKubeProxyComponent, Cluster: HostClusterName,
		Binary: u.bins.Path(components.KubeProxy),
		Args:   []string{"--config=" + p.KubeProxyConfig()},
		Health: "http://127.0.0.1:" + strconv.Itoa(proxyHealth) + "/healthz",
	}
	if err := u.start(ctx, proxy, healthCheck{}, 60*time.Second); err != nil {
		return err
	}
	cs, err := u.hostClient()
	if err != nil {
		return err
	}
	var seen string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, hostnode.NodeName, metav1.GetOptions{})
		if err != nil {
			seen = err.Error()
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				seen = fmt.Sprintf("Ready=%s (%s)", cond.Status, cond.Message)
				return cond.Status == corev1.ConditionTrue && len(n.Spec.Taints) == 0, nil
			}
		}
		seen = "no Ready condition yet"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("the host node %s did not become Ready: %s: %w\n--- last lines of the kubelet's log ---\n%s", hostnode.NodeName, seen, err, logTail(filepath.Join(u.state.Dir, "logs", HostKubeletComponent+".log"), 25))
	}
	fmt.Fprintf(u.opts.Out, "✓ host: node %s Ready (%s, kubelet, kube-proxy)\n", hostnode.NodeName, hostnode.NodeIP)
	return nil
}

func (u *upper) hostClient() (kubernetes.Interface, error) {
	cfg, err := u.state.RESTConfig(HostClusterName)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// installHostAddons creates CoreDNS and the default StorageClass with its
// volumes, and waits until CoreDNS is Ready.
func (u *upper) installHostAddons(ctx context.Context, p hostnode.Paths) error {
	cs, err := u.hostClient()
	if err != nil {
		return err
	}
	if err := hostnode.CreateAddons(ctx, cs, hostnode.Addons(p, components.CoreDNSImage)); err != nil {
		return err
	}
	var seen string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 120*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			seen = err.Error()
			return false, nil
		}
		seen = fmt.Sprintf("%d of %d replicas ready", d.Status.ReadyReplicas, *d.Spec.Replicas)
		return d.Status.ReadyReplicas == *d.Spec.Replicas, nil
	})
	if err != nil {
		return fmt.Errorf("CoreDNS in the host cluster did not become Ready: %s: %w", seen, err)
	}
	fmt.Fprintf(u.opts.Out, "✓ host: CoreDNS at %s, StorageClass %s (default) with %d volumes\n", hostnode.DNSServiceIP, hostnode.StorageClassName, hostnode.VolumeCount)
	return nil
}

// tearDownHostPods removes every pod of the host node through containerd,
// once the kubelet is stopped: called by Down before it stops containerd.
func tearDownHostPods(s *State, out func(string)) error {
	if s.Host == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := hostnode.RemovePods(ctx, s.Host.Paths.ContainerdSocket())
	if n > 0 {
		out(fmt.Sprintf("removed %d pods of the host node", n))
	}
	return err
}

// tearDownHost undoes what the host cluster changed on the machine, once
// every process is stopped: kube-proxy's rules, the network, the mounts
// left under the node's folders, and the kernel settings. It returns an
// error, and Down keeps the state directory, when a mount is still there:
// removing the directory would reach into it.
func tearDownHost(s *State, kubeProxy string) error {
	if s.Host == nil {
		return nil
	}
	h := s.Host
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	if h.Network {
		if kubeProxy != "" {
			if out, err := exec.CommandContext(ctx, kubeProxy, "--cleanup").CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("kube-proxy --cleanup: %w: %s", err, out))
			}
		}
		if err := hostnode.TeardownNetwork(ctx, hostnode.ExecRunner{}); err != nil {
			errs = append(errs, err)
		}
	}
	if err := hostnode.UnmountUnder(h.Paths.Root, h.Paths.Run); err != nil {
		return errors.Join(append(errs, err)...)
	}
	if len(h.Sysctls) > 0 {
		if err := hostnode.WriteSysctls("/proc/sys", h.Sysctls); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(h.Paths.Run); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// LoadHostImages imports image archives into the host node of the
// environment in dir.
func LoadHostImages(ctx context.Context, dir string, tarballs ...string) error {
	s, err := Load(dir)
	if err != nil {
		return err
	}
	if s.Host == nil {
		return fmt.Errorf("the environment in %s has no host cluster (start it with lifeboat up --host)", s.Dir)
	}
	for _, t := range tarballs {
		if _, err := os.Stat(t); err != nil {
			return fmt.Errorf("image archive: %w", err)
		}
	}
	return ImportImages(ctx, s.Host.Paths, tarballs...)
}
