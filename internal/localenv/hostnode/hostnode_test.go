package hostnode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSetupGuardsEveryRangeFirst: before any address, bridge or rule
// exists, every range the host cluster uses has an unreachable route, so
// no step that fails half-way lets a packet take the default route.
func TestSetupGuardsEveryRangeFirst(t *testing.T) {
	cmds := setupCommands()
	for i, r := range guardedRanges {
		c := strings.Join(cmds[i], " ")
		if !strings.HasPrefix(c, "ip route replace unreachable "+r+" ") {
			t.Errorf("step %d is %q, want the unreachable guard of %s", i, c, r)
		}
	}
	for _, want := range []string{PodCIDR, ServiceCIDR, NodeIP} {
		found := false
		for _, c := range guardedRanges {
			if c == want || (want == NodeIP && c == NodeRange) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s is not guarded", want)
		}
	}
	// The egress filter lets pods reach pods, ClusterIPs and the node only,
	// and drops the rest; it is hooked in last, once complete.
	var chain []string
	for _, c := range cmds {
		if slices.Contains(c, EgressChain) && slices.Contains(c, "-A") {
			chain = append(chain, strings.Join(c[5:], " "))
		}
	}
	want := []string{"-d " + PodCIDR + " -j RETURN", "-d " + ServiceCIDR + " -j RETURN", "-d " + NodeIP + "/32 -j RETURN", "-j DROP"}
	if !slices.Equal(chain, want) {
		t.Errorf("egress chain %q, want %q", chain, want)
	}
	if last := strings.Join(cmds[len(cmds)-1], " "); !strings.Contains(last, "PREROUTING") {
		t.Errorf("the last step is %q, want the jump into %s", last, EgressChain)
	}
}

// fakeRunner records commands and fails those that match failOn.
type fakeRunner struct {
	ran    []string
	failOn string
	outs   map[string]string
}

func (f *fakeRunner) Run(_ context.Context, name string, args ...string) (string, error) {
	c := strings.Join(append([]string{name}, args...), " ")
	f.ran = append(f.ran, c)
	if f.failOn != "" && strings.Contains(c, f.failOn) {
		return "", errors.New(c + ": failed")
	}
	return f.outs[c], nil
}

func TestSetupNetwork(t *testing.T) {
	for _, tc := range []struct {
		name         string
		failOn       string
		outs         map[string]string
		wantErr      string
		wantTornDown bool
	}{
		{name: "node address local", outs: map[string]string{"ip route get " + NodeIP: "local 10.99.0.1 dev lo table local src 10.99.0.1"}},
		{name: "node address not local: refuses and undoes", outs: map[string]string{"ip route get " + NodeIP: "unreachable 10.99.0.1"},
			wantErr: "is not local", wantTornDown: true},
		{name: "a step fails: undoes", failOn: "ip addr add", wantErr: "setting up the host network", wantTornDown: true},
		{name: "another host cluster runs", outs: map[string]string{"ip -o link show " + NodeBridge: "5: lbnode0: <BROADCAST>"},
			wantErr: "already runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRunner{failOn: tc.failOn, outs: tc.outs}
			err := SetupNetwork(context.Background(), r)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("SetupNetwork: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("SetupNetwork error %v, want one containing %q", err, tc.wantErr)
			}
			tornDown := slices.Contains(r.ran, "ip link del "+NodeBridge)
			if tornDown != tc.wantTornDown {
				t.Errorf("torn down = %v, want %v; ran %q", tornDown, tc.wantTornDown, r.ran)
			}
		})
	}
}

// TestTeardownRemovesGuardsLast: the guard routes stay until everything
// that could send to the ranges is gone.
func TestTeardownRemovesGuardsLast(t *testing.T) {
	cmds := teardownCommands()
	n := len(guardedRanges)
	for i, c := range cmds {
		isGuard := strings.Contains(strings.Join(c, " "), "unreachable")
		if isGuard != (i >= len(cmds)-n) {
			t.Errorf("step %d %q: guard steps must be the last %d", i, c, n)
		}
	}
}

func TestTeardownToleratesWhatIsGone(t *testing.T) {
	r := &fakeRunner{failOn: "ip link del " + PodBridge}
	// "failed" is not a "gone" message: reported.
	if err := TeardownNetwork(context.Background(), r); err == nil {
		t.Error("a failed step that is not 'already gone' must be reported")
	}
	if len(r.ran) != len(teardownCommands()) {
		t.Errorf("ran %d steps, want all %d even after a failure", len(r.ran), len(teardownCommands()))
	}
	if !gone(errors.New(`Cannot find device "cni0"`)) || !gone(errors.New("iptables: No chain/target/match by that name.")) {
		t.Error("missing objects must count as gone")
	}
}

func TestMountPointsUnder(t *testing.T) {
	const info = `22 1 8:1 / / rw - ext4 /dev/vda rw
100 22 0:50 / /tmp/env/host/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs rw - overlay overlay rw
101 22 0:51 / /run/lifeboat-host/containerd/io.containerd.grpc.v1.cri/sandboxes/x/shm rw - tmpfs shm rw
102 22 0:52 / /tmp/env/host/kubelet/pods/u/volumes/kubernetes.io~secret/with\040space rw - tmpfs tmpfs rw
103 22 0:53 / /tmp/env/host rw - tmpfs tmpfs rw
104 22 0:54 / /tmp/env/hostother rw - tmpfs tmpfs rw
105 22 0:55 / /var/lib/other rw - tmpfs tmpfs rw
`
	got, err := mountPointsUnder(strings.NewReader(info), []string{"/tmp/env/host/", "/run/lifeboat-host"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/tmp/env/host/kubelet/pods/u/volumes/kubernetes.io~secret/with space",
		"/tmp/env/host/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs",
		"/run/lifeboat-host/containerd/io.containerd.grpc.v1.cri/sandboxes/x/shm",
		"/tmp/env/host",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mount points\n got %q\nwant %q", got, want)
	}
}

func TestSysctlsRoundTrip(t *testing.T) {
	root := t.TempDir()
	for k, v := range map[string]string{"net.ipv4.ip_forward": "0", "kernel.panic": "1"} {
		p := sysctlPath(root, k)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before, err := ReadSysctls(root, ChangedSysctls)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 2 || before["net.ipv4.ip_forward"] != "0" {
		t.Fatalf("read %v; keys the kernel lacks are left out", before)
	}
	// The node changes them; they are put back.
	_ = os.WriteFile(sysctlPath(root, "net.ipv4.ip_forward"), []byte("1\n"), 0o644)
	_ = os.WriteFile(sysctlPath(root, "kernel.panic"), []byte("10\n"), 0o644)
	if err := WriteSysctls(root, before); err != nil {
		t.Fatal(err)
	}
	after, _ := ReadSysctls(root, ChangedSysctls)
	if after["net.ipv4.ip_forward"] != "0" || after["kernel.panic"] != "1" {
		t.Errorf("after restore: %v, want %v", after, before)
	}
}

// TestConfigurationKeepsTrafficLocal: the settings that keep the node from
// sending anything off the machine are in its configuration files.
func TestConfigurationKeepsTrafficLocal(t *testing.T) {
	p := Paths{Root: "/state/host", Run: "/run/lifeboat-host"}
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"containerd", ContainerdTOML(p, "registry.k8s.io/pause:3.10.1", "/usr/lib/cni"), []string{
			`address = "/run/lifeboat-host/containerd.sock"`, `config_path = "/state/host/registries"`,
			`sandbox_image = "registry.k8s.io/pause:3.10.1"`, "restrict_oom_score_adj = true", `stream_server_address = "127.0.0.1"`}},
		{"registry hosts", RegistryHostsTOML, []string{`server = "https://127.0.0.1:1"`}},
		{"cni", CNIConfList(p), []string{`"ipMasq": false`, `"subnet": "10.88.0.0/16"`, `"dataDir": "/state/host/cni-ipam"`}},
		{"kubelet", KubeletConfiguration(p, KubeletPorts{Port: 20250, Healthz: 20248}), []string{
			"address: 10.99.0.1", "healthzBindAddress: 127.0.0.1", "readOnlyPort: 0", "resolvConf: /state/host/resolv.conf",
			"clusterDNS: [10.97.0.10]", "nodefs.available: 2%"}},
		{"kube-proxy", KubeProxyConfiguration("/k", KubeProxyPorts{Healthz: 1, Metrics: 2}), []string{
			"nodePortAddresses: [10.99.0.1/32]", "healthzBindAddress: 127.0.0.1:1", "maxPerCore: 0"}},
		{"resolv.conf", ResolvConfContent, []string{"nameserver 127.0.0.1"}},
		{"Corefile", CoreDNSCorefile, []string{"kubernetes cluster.local"}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.text, w) {
				t.Errorf("%s lacks %q:\n%s", tc.name, w, tc.text)
			}
		}
	}
	if strings.Contains(CoreDNSCorefile, "forward") {
		t.Error("CoreDNS must not forward: the machine's nameserver is off the machine")
	}
	if len(p.ContainerdSocket()) > 107 {
		t.Errorf("containerd's socket path %q is too long for a Unix socket", p.ContainerdSocket())
	}
}

func TestAddonsVolumesAreLocalToTheNode(t *testing.T) {
	p := Paths{Root: "/state/host"}
	objs := Addons(p, "registry.k8s.io/coredns/coredns:v1.15.0")
	n := 0
	for _, o := range objs {
		if v, ok := o.(interface{ GetName() string }); ok && strings.HasPrefix(v.GetName(), "local-") {
			n++
		}
	}
	if n != VolumeCount {
		t.Errorf("%d volumes, want %d", n, VolumeCount)
	}
	v := Volume(p, 2)
	if v.Spec.Local == nil || v.Spec.Local.Path != "/state/host/volumes/local-2" || v.Spec.StorageClassName != StorageClassName {
		t.Errorf("volume 2: %+v", v.Spec)
	}
}
