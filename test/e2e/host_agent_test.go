//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/components"
)

// TestHostAgentChart joins the host cluster itself to the control plane
// installed in it, in pull mode, as a platform team would join an edge
// cluster: a bootstrap token from the control plane, `lifeboat register`
// with only the token and the CA's hash, the agent's kubeconfig in a
// Secret, and charts/lifeboat-agent. The agent, a pod with its own
// ServiceAccount, reports the cluster Ready, serves /metrics only to tokens
// of the cluster allowed to get it (metrics.secure), renews its certificate
// into that Secret, and runs a Deployment the control plane propagates to
// it on the real node; deleting the template deletes it there; unjoin
// revokes the agent.
func TestHostAgentChart(t *testing.T) {
	needsHost(t)
	ctx := context.Background()
	const (
		cluster   = "host-pull"
		agentNS   = "lifeboat-agent"
		release   = "lifeboat-agent"
		agentFile = "agent.kubeconfig"
	)
	cpKubeconfig := suite.state.KubeconfigPath()
	cp := clientFor(t, controlPlaneConfig(t))
	cs, err := hostClientset(host.env)
	if err != nil {
		t.Fatal(err)
	}

	out, err := lifeboat(t, "token", "create", "--cluster", cluster, "--kubeconfig", cpKubeconfig, "--context", localenv.ControlPlaneName)
	if err != nil {
		t.Fatalf("lifeboat token create: %v\n%s", err, out)
	}
	// The suite's kubeconfig trusts a bundle (the environment's CA and
	// the chart's): one hash is printed for each, as the register command
	// to run.
	token, hashes := tokenPattern.FindString(out), caHashPattern.FindAllString(out, -1)
	if token == "" || len(hashes) == 0 {
		t.Fatalf("lifeboat token create printed no token or CA hash:\n%s", out)
	}
	cpServer, _ := suite.state.Cluster(localenv.ControlPlaneName)
	kubeconfigPath := filepath.Join(t.TempDir(), agentFile)
	register := []string{"register", cpServer.Server, "--token", token, "--cluster-name", cluster, "--agent-kubeconfig", kubeconfigPath,
		"--certificate-duration", pullCertificateDuration.String()}
	for _, h := range slices.Compact(hashes) {
		register = append(register, "--discovery-token-ca-cert-hash", h)
	}
	if out, err := lifeboat(t, register...); err != nil {
		t.Fatalf("lifeboat register: %v\n%s", err, out)
	}
	agentKubeconfig, err := os.ReadFile(kubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		if out, err := helmCmd(context.Background(), host.env, host.helm, "uninstall", release, "--namespace", agentNS, "--wait"); err != nil {
			t.Logf("helm uninstall %s: %v\n%s", release, err, out)
		}
		if err := cs.CoreV1().Namespaces().Delete(context.Background(), agentNS, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting namespace %s: %v", agentNS, err)
		}
	})
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "lifeboat-agent-kubeconfig", Namespace: agentNS},
		Data: map[string][]byte{"kubeconfig": agentKubeconfig}}
	if _, err := cs.CoreV1().Secrets(agentNS).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	registry, rest, _ := strings.Cut(host.imageRef, "/")
	repo, tag, _ := strings.Cut(rest, ":")
	wd, _ := os.Getwd()
	start := time.Now()
	if out, err := helmCmd(ctx, host.env, host.helm, "install", release, filepath.Join(wd, "..", "..", "charts", "lifeboat-agent"),
		"--namespace", agentNS, "--wait", "--timeout", "3m", "--set", "clusterName="+cluster,
		"--set", "image.registry="+registry, "--set", "image.repository="+repo, "--set-string", "image.tag="+tag,
		"--set", "image.pullPolicy=Never", "--set", "metrics.secure=true", "--set", "extraArgs={"+strings.Join(pullCertificateArgs, ",")+"}"); err != nil {
		t.Fatalf("helm install the agent: %v\n%s", err, out)
	}
	eventually(t, 2*time.Minute, describe("Cluster %s Ready, reported by its agent", cluster), func(ctx context.Context) (bool, string, error) {
		var c clusterv1alpha1.Cluster
		if err := cp.Get(ctx, client.ObjectKey{Name: cluster}, &c); err != nil {
			return false, "", err
		}
		ready := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
		if ready == nil {
			return false, "no Ready condition", nil
		}
		return ready.Status == metav1.ConditionTrue && c.Status.KubernetesVersion != "", fmt.Sprintf("Ready=%s (%s), version %q", ready.Status, ready.Message, c.Status.KubernetesVersion), nil
	})
	t.Logf("helm install of the agent to the cluster Ready: %s", time.Since(start).Round(100*time.Millisecond))
	assertAgentMetricsSecured(t, ctx, cs, agentNS)

	// The chart's Role lets the agent record its renewals in its namespace,
	// for a restart while the control plane does not answer.
	eventually(t, time.Minute, describe("the agent's renewals recorded in Lease %s/lifeboat-agent-%s", agentNS, cluster), func(ctx context.Context) (bool, string, error) {
		l, err := cs.CoordinationV1().Leases(agentNS).Get(ctx, "lifeboat-agent-"+cluster, metav1.GetOptions{})
		if err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		return l.Spec.RenewTime != nil && time.Since(l.Spec.RenewTime.Time) < time.Minute, fmt.Sprintf("%+v", l.Spec), nil
	})

	// The agent, registered with a ten-minute certificate, renews it and
	// keeps the new one in the Secret its kubeconfig is mounted from, which
	// the chart's Role lets it update.
	registered, err := kubeconfigCertificate(agentKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "the agent's renewed certificate kept in its Secret", func(ctx context.Context) (bool, string, error) {
		s, err := cs.CoreV1().Secrets(agentNS).Get(ctx, secret.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		kept, err := kubeconfigCertificate(s.Data["kubeconfig"])
		if err != nil {
			return false, "", err
		}
		return kept.SerialNumber.Cmp(registered.SerialNumber) != 0 && kept.NotAfter.After(registered.NotAfter),
			fmt.Sprintf("serial %s until %s (registered: %s until %s)", kept.SerialNumber, kept.NotAfter, registered.SerialNumber, registered.NotAfter), nil
	})

	// A workload on the real node, through the agent.
	ns := createNamespace(t, controlPlaneConfig(t), "host-pull")
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	applyManifest(t, cpKubeconfig, ns, fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: pause, labels: {app: pause}}
spec:
  replicas: 1
  selector: {matchLabels: {app: pause}}
  template:
    metadata: {labels: {app: pause}}
    spec:
      containers:
        - {name: pause, image: %q, imagePullPolicy: Never}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: pause}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: pause}]
  placement: {clusterAffinity: {clusterNames: [%s]}}
`, components.PauseImage, cluster))
	eventually(t, 2*time.Minute, "the pause Deployment Healthy on the pull cluster, running on the node", func(ctx context.Context) (bool, string, error) {
		var rb workv1alpha2.ResourceBinding
		if err := cp.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pause-deployment"}, &rb); err != nil {
			return false, "no binding yet", client.IgnoreNotFound(err)
		}
		item := aggregatedItem(&rb, cluster)
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "pause", metav1.GetOptions{})
		if err != nil {
			return false, fmt.Sprintf("aggregated %+v; Deployment in the host cluster: %v", item, err), client.IgnoreNotFound(err)
		}
		return item != nil && item.Health == workv1alpha2.ResourceHealthy && d.Status.AvailableReplicas == 1,
			fmt.Sprintf("aggregated %+v; available %d", item, d.Status.AvailableReplicas), nil
	})

	kubectl(t, cpKubeconfig, "--context", localenv.ControlPlaneName, "-n", ns, "delete", "deployment", "pause")
	eventually(t, time.Minute, "the pause Deployment deleted from the host cluster by the agent", func(ctx context.Context) (bool, string, error) {
		_, err := cs.AppsV1().Deployments(ns).Get(ctx, "pause", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", err
	})

	// Unjoin revokes the agent: its certificate no longer reads anything.
	if out, err := lifeboat(t, "unjoin", cluster, "--kubeconfig", cpKubeconfig, "--context", localenv.ControlPlaneName); err != nil {
		t.Fatalf("lifeboat unjoin %s: %v\n%s", cluster, err, out)
	}
	cmd := exec.Command(suite.bins.Path(components.Kubectl), "--kubeconfig", kubeconfigPath, "get", "cluster", cluster)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "Forbidden") && !strings.Contains(string(out), "forbidden") {
		t.Errorf("the agent's certificate after unjoin: err %v, output %s; want Forbidden", err, out)
	}
}

// assertAgentMetricsSecured scrapes the agent's /metrics at its pod's
// address: refused without a token (401) and with a token of the cluster
// whose user may not get /metrics (403), served to one that may.
func assertAgentMetricsSecured(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=lifeboat-agent"})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.PodIP == "" {
		t.Fatalf("the agent's pod: %v, %d pods", err, len(pods.Items))
	}
	url := "https://" + net.JoinHostPort(pods.Items[0].Status.PodIP, "10359") + "/metrics"
	token := func(name string, allowed bool) string {
		t.Helper()
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if allowed {
			role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-agent-metrics-reader"},
				Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
			if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
			if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
				_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
			})
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	reader, stranger := token("e2e-metrics-reader", true), token("e2e-stranger", false)
	for _, tc := range []struct {
		who, token string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token whose user may not get /metrics", stranger, http.StatusForbidden},
		{"a token whose user may get /metrics", reader, http.StatusOK},
	} {
		// A permission just granted may be refused for the few seconds a
		// refusal is remembered.
		eventually(t, 30*time.Second, fmt.Sprintf("the agent's /metrics answering %d to %s", tc.want, tc.who), func(ctx context.Context) (bool, string, error) {
			code, body, err := scrapeMetrics(ctx, url, tc.token)
			if err != nil {
				return false, "", err
			}
			ok := code == tc.want && (code != http.StatusOK || strings.Contains(body, "lifeboat_agent_client_certificate_expiration_timestamp_seconds"))
			return ok, fmt.Sprintf("%d: %.200s", code, body), nil
		})
	}
}
