//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/config/rbac"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/components"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/hostnode"
)

// needsHost skips a scenario outside the host suite.
func needsHost(t *testing.T) {
	t.Helper()
	if !hostMode() || host == nil {
		t.Skip("needs the host suite (make test-host)")
	}
}

// hostPods lists the chart's pods of one component in the host cluster.
func hostPods(t *testing.T, ctx context.Context, component string) []corev1.Pod {
	t.Helper()
	cs, err := hostClientset(host.env)
	if err != nil {
		t.Fatal(err)
	}
	sel := "app.kubernetes.io/instance=" + hostRelease
	if component != "" {
		sel += ",app.kubernetes.io/component=" + component
	}
	pods, err := cs.CoreV1().Pods(hostNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil
		}
	}
	return false
}

// TestHostChartRunsWithLeastPrivilege: after helm install, every pod of
// the chart runs the images the chart names by default (built here from
// the pinned binaries, tagged with their upstream names) and is Ready; the
// controller manager reaches the Lifeboat API server through its Service
// as system:lifeboat:controller-manager, which may not do what it does
// not need.
func TestHostChartRunsWithLeastPrivilege(t *testing.T) {
	needsHost(t)
	ctx := context.Background()
	wantImages := map[string]string{
		"etcd":                    components.EtcdImage,
		"apiserver":               components.KubeAPIServerImage,
		"kube-controller-manager": components.KubeControllerManagerImage,
		"controller-manager":      host.imageRef,
	}
	for component, image := range wantImages {
		pods := hostPods(t, ctx, component)
		if len(pods) == 0 {
			t.Errorf("no pod of %s in the host cluster", component)
		}
		for _, p := range pods {
			if !podReady(p) {
				t.Errorf("pod %s is not Ready: %+v", p.Name, p.Status.Conditions)
			}
			if got := p.Spec.Containers[0].Image; got != image {
				t.Errorf("pod %s runs %s, want %s", p.Name, got, image)
			}
		}
	}
	// Both controller managers wait at start instead of exiting: Lifeboat's
	// for its CRDs, kube-controller-manager for its lease until the API
	// server answers.
	for _, component := range []string{"controller-manager", "kube-controller-manager"} {
		for _, p := range hostPods(t, ctx, component) {
			for _, c := range p.Status.ContainerStatuses {
				if c.RestartCount > 0 {
					t.Errorf("pod %s restarted %d times during the install", p.Name, c.RestartCount)
				}
			}
		}
	}
	if n := len(hostPods(t, ctx, "controller-manager")); n != 2 {
		t.Errorf("%d controller manager pods, want 2 (the chart's default)", n)
	}

	cs, err := hostClientset(host.env)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := chartSecret(ctx, cs, hostRelease+"-controller-manager-kubeconfig", "kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	wantServer := fmt.Sprintf("server: https://%s-apiserver.%s.svc:443", hostRelease, hostNamespace)
	if !strings.Contains(string(raw), wantServer) {
		t.Errorf("the controller manager's kubeconfig does not name the API server's Service (%s):\n%s", wantServer, raw)
	}
	token, err := chartSecret(ctx, cs, hostRelease+"-pki", "controller-manager.token")
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(controlPlaneConfig(t))
	cfg.BearerToken = string(token)
	cm := clientFor(t, cfg)
	var crb rbacv1.ClusterRoleBinding
	if err := cm.Get(ctx, types.NamespacedName{Name: rbac.ControllerManagerRoleName}, &crb); err != nil {
		t.Fatalf("the controller manager's identity cannot read what its role allows: %v", err)
	}
	forbidden := []struct {
		what string
		obj  client.Object
	}{
		{"create a ClusterRoleBinding", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "lifeboat-e2e-escalate"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: rbac.ControllerManagerUser}}}},
		{"create a Secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "lifeboat-e2e", Namespace: "default"}}},
	}
	for _, f := range forbidden {
		if err := cm.Create(ctx, f.obj); !apierrors.IsForbidden(err) {
			t.Errorf("as %s, %s: got %v, want Forbidden", rbac.ControllerManagerUser, f.what, err)
		}
	}

	// Nothing the controller manager did was refused.
	for _, p := range hostPods(t, ctx, "controller-manager") {
		logs, err := cs.CoreV1().Pods(hostNamespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("logs of %s: %v", p.Name, err)
		}
		for _, line := range strings.Split(string(logs), "\n") {
			if strings.Contains(line, rbac.ControllerManagerUser) && strings.Contains(line, "cannot") || strings.Contains(line, "panic") {
				t.Errorf("%s logged: %s", p.Name, line)
			}
		}
	}
	t.Logf("helm install until every pod was Ready: %s", host.installed.Round(100*time.Millisecond))
}

// TestHostChartRefusesBadValues: helm install against the host cluster
// with a misspelled key or a negative replica count is refused by the
// chart's values.schema.json, naming the field, and creates nothing; so is
// credentials.generate=false without the credentials' Secrets, and on the
// release that made them, and an upgrade that would replace a lost
// encryption key.
func TestHostChartRefusesBadValues(t *testing.T) {
	needsHost(t)
	ctx := context.Background()
	bad := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(bad, []byte("controllerManager:\n  repliacs: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", bad}, "repliacs"},
		{[]string{"--set", "controllerManager.replicas=-1"}, "/controllerManager/replicas"},
		{[]string{"--set", "etcd.replicas=2"}, "/etcd/replicas"},
		{[]string{"--set", "credentials.generate=false"}, "has no Secret refused-lifeboat-pki"},
	} {
		args := append([]string{"install", "refused", chartDir(), "--namespace", "lifeboat-refused", "--create-namespace"}, tc.args...)
		out, err := helmCmd(ctx, host.env, host.helm, args...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("helm install %v: want a refusal naming %s, got %v:\n%s", tc.args, tc.want, err, out)
		}
	}
	cs, err := hostClientset(host.env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "lifeboat-refused", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused install created its namespace: %v", err)
	}

	// The key's Secret gone while the API server encrypts with it: a new
	// key would leave everything encrypted unreadable at the next restart,
	// so the upgrade is refused. The Secret is put back as it was.
	keyName := hostRelease + "-encryption"
	keySecret, err := cs.CoreV1().Secrets(hostNamespace).Get(ctx, keyName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restore := keySecret.DeepCopy()
	restore.ResourceVersion, restore.UID, restore.CreationTimestamp, restore.ManagedFields = "", "", metav1.Time{}, nil
	if err := cs.CoreV1().Secrets(hostNamespace).Delete(ctx, keyName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	restored := false
	putBack := func() {
		if restored {
			return
		}
		if _, err := cs.CoreV1().Secrets(hostNamespace).Create(context.Background(), restore, metav1.CreateOptions{}); err != nil {
			t.Errorf("putting back %s: %v", keyName, err)
		}
		restored = true
	}
	t.Cleanup(putBack)
	keyless := append([]string{"upgrade", hostRelease, chartDir(), "--namespace", hostNamespace, "--dry-run=server"}, hostValues(host.imageRef)...)
	if out, err := helmCmd(ctx, host.env, host.helm, keyless...); err == nil || !strings.Contains(out, "Secret "+keyName+", with the key the API server encrypts Secrets and Works in etcd with, is gone") {
		t.Errorf("helm upgrade without the encryption key's Secret: want a refusal naming it, got %v:\n%s", err, out)
	}
	putBack()

	// Turning generation off on the suite's release would make Helm delete
	// the credentials it made: refused before anything changes.
	upgrade := append([]string{"upgrade", hostRelease, chartDir(), "--namespace", hostNamespace, "--dry-run=server"},
		hostValues(host.imageRef, "credentials.generate=false")...)
	out, err := helmCmd(ctx, host.env, host.helm, upgrade...)
	// The release's name holds the chart's, so it is the names' prefix.
	if want := "this release made the Secrets " + hostRelease + "-pki"; err == nil || !strings.Contains(out, want) {
		t.Errorf("helm upgrade --set credentials.generate=false: want a refusal naming %q, got %v:\n%s", want, err, out)
	}
}

// TestHostControllerManagerFootprint: the controller manager runs with the
// chart's memory limit and a Go soft limit of 90% of it; what each replica
// uses (the kubelet's summary: RSS, working set, and CPU over 30 s with the
// members joined and nothing moving) is logged for docs/install.md.
func TestHostControllerManagerFootprint(t *testing.T) {
	needsHost(t)
	ctx := context.Background()
	cs, err := hostClientset(host.env)
	if err != nil {
		t.Fatal(err)
	}
	pods := hostPods(t, ctx, "controller-manager")
	for _, p := range pods {
		c := p.Spec.Containers[0]
		limit := c.Resources.Limits.Memory()
		if limit.IsZero() {
			t.Errorf("pod %s has no memory limit", p.Name)
			continue
		}
		want := fmt.Sprintf("--memory-limit=%dMi", limit.Value()*90/100/(1<<20))
		if !slices.Contains(c.Args, want) {
			t.Errorf("pod %s: limit %s, args %v; want %s", p.Name, limit, c.Args, want)
		}
	}
	first, err := cmUsage(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	const window = 30 * time.Second
	time.Sleep(window) // a measuring window, not a wait for a condition
	second, err := cmUsage(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for pod, u := range second {
		before, ok := first[pod]
		if !ok {
			continue
		}
		seen++
		t.Logf("%s: RSS %.1f MiB, working set %.1f MiB, CPU %.3f CPU-s per minute over %s", pod,
			float64(u.rss)/(1<<20), float64(u.workingSet)/(1<<20), (u.cpu-before.cpu)/window.Minutes(), window)
	}
	if seen == 0 {
		t.Errorf("the kubelet reported no usage of the controller manager's containers (%v, then %v)", first, second)
	}
}

// usage is one container's figures in the kubelet's summary.
type usage struct {
	rss, workingSet uint64
	cpu             float64 // CPU-seconds since the container started
}

// cmUsage reads the controller manager containers' usage from the host
// node's kubelet (stats summary), by pod.
func cmUsage(ctx context.Context, cs kubernetes.Interface) (map[string]usage, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", hostnode.NodeName, "proxy/stats/summary").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("the kubelet's stats summary: %w", err)
	}
	var summary struct {
		Pods []struct {
			PodRef struct {
				Name, Namespace string
			} `json:"podRef"`
			Containers []struct {
				Name string `json:"name"`
				CPU  struct {
					UsageCoreNanoSeconds *uint64 `json:"usageCoreNanoSeconds"`
				} `json:"cpu"`
				Memory struct {
					RSSBytes        *uint64 `json:"rssBytes"`
					WorkingSetBytes *uint64 `json:"workingSetBytes"`
				} `json:"memory"`
			} `json:"containers"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(raw, &summary); err != nil {
		return nil, fmt.Errorf("decoding the stats summary: %w", err)
	}
	out := map[string]usage{}
	for _, p := range summary.Pods {
		if p.PodRef.Namespace != hostNamespace || !strings.HasPrefix(p.PodRef.Name, hostRelease+"-controller-manager-") {
			continue
		}
		for _, c := range p.Containers {
			if c.Name != "controller-manager" || c.Memory.RSSBytes == nil || c.Memory.WorkingSetBytes == nil || c.CPU.UsageCoreNanoSeconds == nil {
				continue
			}
			out[p.PodRef.Name] = usage{rss: *c.Memory.RSSBytes, workingSet: *c.Memory.WorkingSetBytes, cpu: float64(*c.CPU.UsageCoreNanoSeconds) / 1e9}
		}
	}
	return out, nil
}

// leaderPod returns the controller manager pod that holds the leader
// Lease in the control plane, and the Lease's holder.
func leaderPod(ctx context.Context, cp client.Client) (string, error) {
	var lease coordinationv1.Lease
	if err := cp.Get(ctx, types.NamespacedName{Namespace: "kube-system", Name: "lifeboat-controller-manager"}, &lease); err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return "", nil
	}
	pod, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	return pod, nil
}

// TestHostLeaderPodDeletedDuringToleration: the leader's pod is deleted in
// the middle of an application's toleration window. The other replica
// takes the lease, and the workload is evicted once, at the deadline of
// the first Unhealthy report, and becomes Healthy elsewhere.
func TestHostLeaderPodDeletedDuringToleration(t *testing.T) {
	needsHost(t)
	ctx := context.Background()
	ns := newNamespace(t, "host-leader")
	cp := clientFor(t, controlPlaneConfig(t))
	pair := []string{"member1", "member2"}
	const name, toleration = "web", 20 * time.Second
	applyYAML(t, ns, onePolicy(name, pair, `
      decisionConditions:
        tolerationSeconds: 20
      purgeMode: Gracefully
`)+"---"+nginxDeployment(name, ""))
	x := waitPlacedHealthy(t, cp, ns, name, "")
	leader, err := leaderPod(ctx, cp)
	if err != nil || leader == "" {
		t.Fatalf("no leader of the controller manager: %q %v", leader, err)
	}
	applyYAML(t, ns, fakeRegistry(name, []string{x}, ""))

	since := waitUnhealthyTimer(t, cp, ns, name, x)
	deleteAt := since.Add(toleration * 4 / 10)
	eventually(t, toleration, "40% of the toleration window elapsed", func(context.Context) (bool, string, error) {
		return !time.Now().Before(deleteAt), "", nil
	})
	cs, err := hostClientset(host.env)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods(hostNamespace).Delete(ctx, leader, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the leader's pod %s: %v", leader, err)
	}
	var newLeader string
	eventually(t, toleration, "another replica takes the lease from "+leader, func(ctx context.Context) (bool, string, error) {
		l, err := leaderPod(ctx, cp)
		if err != nil {
			return false, "", err
		}
		newLeader = l
		return l != "" && l != leader, "holder " + l, nil
	})
	if time.Now().After(since.Add(toleration)) {
		t.Fatalf("the new leader (%s) took over after the deadline (%s); the scenario proves nothing", newLeader, since.Add(toleration).Format(time.RFC3339))
	}

	evicted := waitEvicted(t, cp, ns, name, x)
	d := evicted.Sub(since.Time)
	if d < toleration || d > toleration+5*time.Second {
		t.Errorf("evicted %s after the application became unhealthy (%s); want within [%s, %s]",
			d, since.Format(time.RFC3339), toleration, toleration+5*time.Second)
	}
	y := waitPlacedHealthy(t, cp, ns, name, x)
	assertFailoverRecorded(t, ns, name, x, y)
	rb, err := bindingOf(ctx, cp, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, h := range rb.Status.FailoverHistory {
		if h.FromCluster == x {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d failover history entries from %s, want exactly 1: %+v", n, x, rb.Status.FailoverHistory)
	}
	t.Logf("leader %s deleted %s after Unhealthy; %s led; evicted %s after Unhealthy", leader, deleteAt.Sub(since.Time).Round(100*time.Millisecond), newLeader, d.Round(100*time.Millisecond))
}

// TestHostChartUpgrade: helm upgrade to another tag of Lifeboat's image
// keeps every binding, Work and failover history entry and the key that
// encrypts Secrets in etcd (one written before reads after), runs the new image,
// and applies the CRDs the new version carries (the init Job runs before
// the upgrade): a CRD changed since the install is put back as the new
// version has it.
func TestHostChartUpgrade(t *testing.T) {
	needsHost(t)
	ctx := context.Background()
	cp := clientFor(t, controlPlaneConfig(t))

	// Something to keep: a workload that failed over, with its history.
	ns := newNamespace(t, "host-upgrade")
	pair := []string{"member1", "member2"}
	const name = "kept"
	applyYAML(t, ns, onePolicy(name, pair, `
      decisionConditions:
        tolerationSeconds: 1
      purgeMode: Directly
`)+"---"+nginxDeployment(name, ""))
	x := waitPlacedHealthy(t, cp, ns, name, "")
	applyYAML(t, ns, fakeRegistry(name, []string{x}, ""))
	y := waitPlacedHealthy(t, cp, ns, name, x)
	assertFailoverRecorded(t, ns, name, x, y)
	before := snapshotControlPlane(t, ctx, cp, ns)
	hostCS, err := hostClientset(host.env)
	if err != nil {
		t.Fatal(err)
	}
	encryptionKey, err := chartSecret(ctx, hostCS, hostRelease+"-encryption", "key")
	if err != nil {
		t.Fatal(err)
	}
	kept := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept-secret"}, StringData: map[string]string{"k": "v"}}
	if err := cp.Create(ctx, kept); err != nil {
		t.Fatal(err)
	}

	// The installed version's CRD as an older release could have left it.
	const crdName = "resourcebindings.work.karmada.io"
	var crd apiextensionsv1.CustomResourceDefinition
	if err := cp.Get(ctx, types.NamespacedName{Name: crdName}, &crd); err != nil {
		t.Fatal(err)
	}
	want := crd.Spec.Versions[len(crd.Spec.Versions)-1].AdditionalPrinterColumns
	if len(want) == 0 {
		t.Fatalf("%s has no printer columns to change", crdName)
	}
	patch := fmt.Sprintf(`[{"op":"remove","path":"/spec/versions/%d/additionalPrinterColumns"}]`, len(crd.Spec.Versions)-1)
	if err := cp.Patch(ctx, &crd, client.RawPatch(types.JSONPatchType, []byte(patch)), client.FieldOwner("lifeboat-e2e-older-release")); err != nil {
		t.Fatalf("changing %s: %v", crdName, err)
	}

	// The same build under another tag, as a new release would arrive.
	newRef := loadRetagged(t, "e2e-upgrade")
	start := time.Now()
	upgrade := append([]string{"upgrade", hostRelease, chartDir(), "--namespace", hostNamespace, "--wait", "--wait-for-jobs", "--timeout", "5m"}, hostValues(newRef)...)
	if _, err := helmCmd(ctx, host.env, host.helm, upgrade...); err != nil {
		t.Fatal(err)
	}
	t.Logf("helm upgrade until every pod was Ready: %s", time.Since(start).Round(100*time.Millisecond))

	for _, p := range hostPods(t, ctx, "controller-manager") {
		if got := p.Spec.Containers[0].Image; got != newRef && p.DeletionTimestamp == nil {
			t.Errorf("after the upgrade pod %s runs %s, want %s", p.Name, got, newRef)
		}
	}
	if err := cp.Get(ctx, types.NamespacedName{Name: crdName}, &crd); err != nil {
		t.Fatal(err)
	}
	if got := crd.Spec.Versions[len(crd.Spec.Versions)-1].AdditionalPrinterColumns; len(got) != len(want) {
		t.Errorf("after the upgrade %s has %d printer columns, want the new version's %d", crdName, len(got), len(want))
	}
	after := snapshotControlPlane(t, ctx, cp, ns)
	// The key the Secrets in etcd are encrypted with is the same, and a
	// Secret written before still reads.
	if got, err := chartSecret(ctx, hostCS, hostRelease+"-encryption", "key"); err != nil || !bytes.Equal(got, encryptionKey) {
		t.Errorf("the encryption key after the upgrade: %v, changed %t; want it kept", err, !bytes.Equal(got, encryptionKey))
	}
	// An API server started after the upgrade reads the key from the
	// Secret again, not from what the running one held.
	kubectl(t, host.env.KubeconfigPath(), "--context", localenv.HostClusterName, "-n", hostNamespace, "rollout", "restart", "deployment/"+hostRelease+"-apiserver")
	kubectl(t, host.env.KubeconfigPath(), "--context", localenv.HostClusterName, "-n", hostNamespace, "rollout", "status", "deployment/"+hostRelease+"-apiserver", "--timeout=3m")
	// The rollout is complete once the new pods are Ready, while the old
	// ones may still be stopping behind the Service: requests sent there
	// meanwhile are refused. The steps below, and the tests after this one,
	// need the restarted API servers only.
	eventually(t, 2*time.Minute, "only the restarted API server's pods, all Ready", func(ctx context.Context) (bool, string, error) {
		pods := hostPods(t, ctx, "apiserver")
		var seen []string
		ready := len(pods) > 0
		for _, p := range pods {
			seen = append(seen, fmt.Sprintf("%s ready=%t deleting=%t", p.Name, podReady(p), p.DeletionTimestamp != nil))
			ready = ready && podReady(p)
		}
		return ready, strings.Join(seen, "; "), nil
	})
	eventually(t, time.Minute, "a Secret written before the upgrade read through a restarted API server", func(ctx context.Context) (bool, string, error) {
		var readBack corev1.Secret
		if err := cp.Get(ctx, client.ObjectKeyFromObject(kept), &readBack); err != nil {
			return false, err.Error(), nil
		}
		return string(readBack.Data["k"]) == "v", fmt.Sprintf("%q", readBack.Data["k"]), nil
	})
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %s before the upgrade, %s after", k, v, after[k])
		}
	}
	// The upgraded controllers still work.
	applyYAML(t, ns, onePolicy("after", pair, `
      decisionConditions:
        tolerationSeconds: 30
`)+"---"+nginxDeployment("after", ""))
	waitPlacedHealthy(t, cp, ns, "after", "")
}

// snapshotControlPlane sums up what an upgrade must keep of namespace ns:
// each binding's placement and failover history, and their Works.
func snapshotControlPlane(t *testing.T, ctx context.Context, cp client.Client, ns string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	var rbs workv1alpha2.ResourceBindingList
	if err := cp.List(ctx, &rbs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, rb := range rbs.Items {
		key := "binding " + rb.Namespace + "/" + rb.Name
		snap[key] = fmt.Sprintf("uid %s clusters %v history %d", rb.UID, scheduledClusters(&rb), len(rb.Status.FailoverHistory))
	}
	var works workv1alpha1.WorkList
	if err := cp.List(ctx, &works); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, w := range works.Items {
		if w.Annotations[workv1alpha2.ResourceBindingNamespaceAnnotationKey] == ns {
			snap["work "+w.Namespace+"/"+w.Name] = string(w.UID)
			n++
		}
	}
	snap["works"] = fmt.Sprintf("%d", n)
	return snap
}

// loadRetagged loads the suite's image into the host node under another
// tag, as a new release would arrive, and returns its reference.
func loadRetagged(t *testing.T, tag string) string {
	t.Helper()
	ref := host.imageRef[:strings.LastIndex(host.imageRef, ":")] + ":" + tag
	archive := filepath.Join(t.TempDir(), "lifeboat-"+tag+".tar")
	retag(t, os.Getenv("LIFEBOAT_E2E_IMAGE"), host.imageRef, ref, archive)
	if out, err := lifeboat(t, "env", "load-image", "--state-dir", host.env.Dir, archive); err != nil {
		t.Fatalf("lifeboat env load-image: %v\n%s", err, out)
	}
	return ref
}

// retag writes the image of archive tagged from as a new archive tagged to.
func retag(t *testing.T, archive, from, to, out string) {
	t.Helper()
	src, err := name.NewTag(from)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(archive, &src)
	if err != nil {
		t.Fatalf("reading %s from %s: %v", from, archive, err)
	}
	dst, err := name.NewTag(to)
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(out, dst, img); err != nil {
		t.Fatalf("writing %s: %v", out, err)
	}
}
