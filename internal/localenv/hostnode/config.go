package hostnode

import (
	"fmt"
	"path/filepath"
)

// NodeName is the host cluster's node.
const NodeName = "lifeboat-host"

// ClusterDomain is the host cluster's DNS domain.
const ClusterDomain = "cluster.local"

// Paths are where the node's parts keep their files. Root is under the
// environment's state directory; Run holds containerd's socket and state,
// which must be short paths (a Unix socket path is at most 107 bytes).
type Paths struct {
	Root string // e.g. STATE/host
	Run  string // e.g. /run/lifeboat-host
}

// ContainerdConfig is containerd's configuration file.
func (p Paths) ContainerdConfig() string { return filepath.Join(p.Root, "containerd.toml") }

// ContainerdRoot is containerd's persistent root (images, snapshots).
func (p Paths) ContainerdRoot() string { return filepath.Join(p.Root, "containerd") }

// ContainerdState is containerd's runtime state.
func (p Paths) ContainerdState() string { return filepath.Join(p.Run, "containerd") }

// ContainerdSocket is containerd's gRPC socket.
func (p Paths) ContainerdSocket() string { return filepath.Join(p.Run, "containerd.sock") }

// CNIConfDir holds the CNI network list.
func (p Paths) CNIConfDir() string { return filepath.Join(p.Root, "cni") }

// CNIDataDir is host-local IPAM's record of given addresses.
func (p Paths) CNIDataDir() string { return filepath.Join(p.Root, "cni-ipam") }

// RegistryConfigDir holds containerd's per-registry hosts.toml files.
func (p Paths) RegistryConfigDir() string { return filepath.Join(p.Root, "registries") }

// KubeletRoot is the kubelet's --root-dir (pods' volumes).
func (p Paths) KubeletRoot() string { return filepath.Join(p.Root, "kubelet") }

// KubeletConfig is the kubelet's KubeletConfiguration.
func (p Paths) KubeletConfig() string { return filepath.Join(p.Root, "kubelet.yaml") }

// KubeProxyConfig is kube-proxy's KubeProxyConfiguration.
func (p Paths) KubeProxyConfig() string { return filepath.Join(p.Root, "kube-proxy.yaml") }

// ResolvConf is the resolv.conf the kubelet gives pods with dnsPolicy
// Default: only loopback, so no pod is handed the machine's nameserver.
func (p Paths) ResolvConf() string { return filepath.Join(p.Root, "resolv.conf") }

// PodLogs is the kubelet's podLogsDir.
func (p Paths) PodLogs() string { return filepath.Join(p.Root, "pod-logs") }

// Volumes holds the PersistentVolumes' directories.
func (p Paths) Volumes() string { return filepath.Join(p.Root, "volumes") }

// BlockedRegistries are the registries containerd is pointed away from, to
// a closed loopback port: an image that was not imported fails at once
// instead of being fetched from outside the machine.
var BlockedRegistries = []string{"_default", "registry.k8s.io", "ghcr.io", "docker.io", "quay.io", "gcr.io"}

// RegistryHostsTOML is the hosts.toml of a blocked registry.
const RegistryHostsTOML = `server = "https://127.0.0.1:1"

[host."https://127.0.0.1:1"]
  capabilities = ["pull", "resolve"]
`

// ContainerdTOML is containerd's configuration: its own root, state and
// socket, runc without systemd, the CNI bridge of CNIConfList, and the
// sandbox image imported with the others.
func ContainerdTOML(p Paths, sandboxImage, cniBinDir string) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q

[grpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  # Lowering oom_score_adj is not permitted in this machine's sandbox.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
`, p.ContainerdRoot(), p.ContainerdState(), p.ContainerdSocket(), sandboxImage, cniBinDir, p.CNIConfDir(), p.RegistryConfigDir())
}

// CNIConfList is the pods' network: the bridge PodBridge with PodCIDR,
// the bridge's address as gateway, no masquerading (nothing is meant to
// leave the machine) and hairpin mode, so that a pod reaches itself
// through its Service.
func CNIConfList(p Paths) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "lifeboat-host",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": %q,
        "ranges": [[{"subnet": %q, "gateway": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
`, PodBridge, p.CNIDataDir(), PodCIDR, PodGateway)
}

// KubeletPorts are the kubelet's ports: Port serves the API server (logs,
// exec) on NodeIP, Healthz serves /healthz on loopback.
type KubeletPorts struct {
	Port, Healthz int
}

// KubeletConfiguration is the kubelet's configuration file.
func KubeletConfiguration(p Paths, ports KubeletPorts) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
clusterDNS: [%s]
clusterDomain: %s
resolvConf: %s
podLogsDir: %s
# The API server reaches the kubelet for logs and exec; the kubelet listens
# on the node's address only, which nothing outside this machine reaches.
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
evictionHard:
  memory.available: 200Mi
  nodefs.available: 2%%
  imagefs.available: 2%%
# The images are imported, not pulled: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 110
`, NodeIP, ports.Port, ports.Healthz, p.ContainerdSocket(), DNSServiceIP, ClusterDomain, p.ResolvConf(), p.PodLogs())
}

// KubeletArgs are the kubelet's flags.
func KubeletArgs(p Paths, kubeconfig string) []string {
	return []string{
		"--config=" + p.KubeletConfig(),
		"--kubeconfig=" + kubeconfig,
		"--root-dir=" + p.KubeletRoot(),
		"--cert-dir=" + filepath.Join(p.KubeletRoot(), "pki"),
		"--hostname-override=" + NodeName,
		"--node-ip=" + NodeIP,
		"--v=1",
	}
}

// KubeProxyPorts are kube-proxy's loopback ports.
type KubeProxyPorts struct {
	Healthz, Metrics int
}

// KubeProxyConfiguration is kube-proxy's configuration file: iptables
// mode, NodePorts on the node's address only (route_localnet stays as it
// is), and no conntrack sysctl written.
func KubeProxyConfiguration(kubeconfig string, ports KubeProxyPorts) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
mode: iptables
bindAddress: %s
clusterCIDR: %s
hostnameOverride: %s
nodePortAddresses: [%s/32]
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, kubeconfig, NodeIP, PodCIDR, NodeName, NodeIP, ports.Healthz, ports.Metrics)
}

// ResolvConfContent points at loopback, where nothing answers DNS.
const ResolvConfContent = "nameserver 127.0.0.1\n"

// APIServerAuthorization is the host cluster's --authorization-mode: the
// kubelet is authorised as its node.
const APIServerAuthorization = "Node,RBAC"

// APIServerArgs are the flags the host cluster's kube-apiserver adds to
// those every API server of the environment has (its service range is
// ServiceCIDR).
func APIServerArgs() []string {
	return []string{
		// Otherwise it looks the node's name up in the machine's DNS.
		"--kubelet-preferred-address-types=InternalIP",
		"--enable-admission-plugins=NodeRestriction",
	}
}

// ControllerManagerArgs are the host cluster's kube-controller-manager
// flags beyond its kubeconfig, ports and controllers (all of them: node
// lifecycle lifts the new node's not-ready taint).
func ControllerManagerArgs() []string {
	return []string{
		"--allocate-node-cidrs=false",
		"--cluster-cidr=" + PodCIDR,
		"--service-cluster-ip-range=" + ServiceCIDR,
	}
}
