//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

// TestControllerManagerOperations runs the controller manager as a cluster
// would, on an environment of its own: /metrics served with
// --metrics-secure answers only to tokens the control plane's API server
// authorizes, and a controller manager that lost its leader lease while
// the control plane's API server was down is started again by the
// environment's supervisor and goes on propagating.
func TestControllerManagerOperations(t *testing.T) {
	t.Parallel()
	e := startPrivateEnv(t, envOptions{members: 1, controllerManagerArgs: []string{"--metrics-secure"}})
	t.Run("secure metrics answer only authorized tokens", func(t *testing.T) { testSecureMetrics(t, e) })
	t.Run("the controller manager comes back after the control plane's API server does", func(t *testing.T) { testControlPlaneOutage(t, e) })
}

func testSecureMetrics(t *testing.T, e *privateEnv) {
	ctx := context.Background()
	addr := componentFlag(t, e.state, localenv.ControllerManagerComponent, "--metrics-bind-address=")
	ns := createNamespace(t, clusterConfig(t, e.state, localenv.ControlPlaneName), "metrics")

	// scraper may get /metrics; stranger is a valid identity without that
	// right.
	for _, sa := range []string{"scraper", "stranger"} {
		if _, err := e.cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	if _, err := e.cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns}},
	}
	if _, err := e.cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		t.Helper()
		tr, err := e.cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for %s: %v", sa, err)
		}
		return tr.Status.Token
	}
	scraper, stranger := token("scraper"), token("stranger")

	get := scrapeMetrics
	url := "https://" + addr + "/metrics"
	for _, tc := range []struct {
		who, token string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token the API server does not accept", "forged", http.StatusUnauthorized},
		{"a service account without the right to get /metrics", stranger, http.StatusForbidden},
	} {
		code, body, err := get(ctx, url, tc.token)
		if err != nil {
			t.Fatalf("%s: %v", tc.who, err)
		}
		if code != tc.want || strings.Contains(body, "controller_runtime_reconcile_total") {
			t.Errorf("%s: %d %.120q, want %d and no metrics", tc.who, code, body, tc.want)
		}
	}
	// RBAC reaches the API server's authorizer within moments; a denial
	// seen before it did is remembered for metricsauth.DenyTTL.
	eventually(t, 60*time.Second, "metrics served to the scraper", func(ctx context.Context) (bool, string, error) {
		code, body, err := get(ctx, url, scraper)
		if err != nil {
			return false, "", err
		}
		return code == http.StatusOK && strings.Contains(body, "controller_runtime_reconcile_total"),
			fmt.Sprintf("%d %.120q", code, body), nil
	})
	if code, _, err := get(ctx, "http://"+addr+"/metrics", scraper); err == nil && code == http.StatusOK {
		t.Error("plain HTTP was served")
	}
}

func testControlPlaneOutage(t *testing.T, e *privateEnv) {
	apiserver := localenv.ControlPlaneName + "-apiserver"
	before := e.component(t, localenv.ControllerManagerComponent)
	logOffset := int64(0)
	if fi, err := os.Stat(before.Log); err == nil {
		logOffset = fi.Size()
	}
	stoppedAt := time.Now()
	if out, err := lifeboat(t, "env", "stop", localenv.ControlPlaneName, "--state-dir", e.dir); err != nil {
		t.Fatalf("lifeboat env stop %s: %v\n%s", localenv.ControlPlaneName, err, out)
	}
	down := e.component(t, apiserver).Process
	if down.Alive() {
		t.Fatalf("the control plane's API server (pid %d) still runs after env stop", down.PID)
	}

	// Without its API server the controller manager cannot renew its lease:
	// it exits, and the supervisor starts it again (while the API server is
	// down, each new one fails at once to set up its controllers and is
	// started again after a growing back-off). All the while the API
	// server, stopped on purpose, stays down.
	eventually(t, 2*time.Minute, "the controller manager exited on its lost lease and was started again", func(context.Context) (bool, string, error) {
		if a := e.component(t, apiserver); a.Process != down || a.Process.Alive() || !a.Stopped {
			t.Fatalf("the supervisor undid env stop: the API server is now %+v, stopped %t (stopped: pid %d)", a.Process, a.Stopped, down.PID)
		}
		data, err := os.ReadFile(before.Log)
		if err != nil {
			return false, "", err
		}
		lost := strings.Contains(string(data[min(logOffset, int64(len(data))):]), "Error: running manager: leader election lost")
		cm := e.component(t, localenv.ControllerManagerComponent)
		return lost && cm.Restarts > before.Restarts,
			fmt.Sprintf("leader election lost logged: %t; restarts %d (before %d), last exit %+v", lost, cm.Restarts, before.Restarts, cm.LastExit), nil
	})
	cm := e.component(t, localenv.ControllerManagerComponent)
	t.Logf("%s after env stop: %d restarts, last exit %q", time.Since(stoppedAt).Round(time.Second), cm.Restarts, cm.LastExit.Reason)

	if out, err := lifeboat(t, "env", "start", localenv.ControlPlaneName, "--state-dir", e.dir); err != nil {
		t.Fatalf("lifeboat env start %s: %v\n%s", localenv.ControlPlaneName, err, out)
	}
	t.Logf("the control plane's API server was down for %s", time.Since(stoppedAt).Round(time.Second))

	// lifeboat status: everything healthy, the restart counted and explained.
	eventually(t, 2*time.Minute, "lifeboat status: every component healthy, the restart reported", func(context.Context) (bool, string, error) {
		out, err := lifeboat(t, "status", "--state-dir", e.dir)
		if err != nil {
			return false, out, nil
		}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) >= 5 && f[0] == localenv.ControllerManagerComponent {
				return f[2] == "Healthy" && f[3] != "0" && strings.Contains(line, "last exit"), out, nil
			}
		}
		return false, out, nil
	})

	// And it propagates: a new Deployment with a policy reaches member1.
	ns := createNamespace(t, clusterConfig(t, e.state, localenv.ControlPlaneName), "after-outage")
	e.apply(t, ns, cfDeployment("after-outage", 2)+"---"+pinnedTo("after-outage", "member1"))
	eventually(t, 2*time.Minute, "the Deployment ready in member1", func(ctx context.Context) (bool, string, error) {
		d, err := e.members["member1"].AppsV1().Deployments(ns).Get(ctx, "after-outage", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return deploymentReady(d, 2), fmt.Sprintf("ready %d/%d", d.Status.ReadyReplicas, ptr.Deref(d.Spec.Replicas, 0)), nil
	})

	// Every process the environment runs is still one it recorded.
	s, err := localenv.Load(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Components {
		if !c.Process.Alive() {
			t.Errorf("%s (pid %d) is not running after the outage", c.Name, c.Process.PID)
		}
	}
}

// scrapeMetrics gets url with token as its bearer token ("" for none) and
// returns the status and body. The certificate is not verified: the
// metrics servers here are self-signed (no --metrics-cert-dir), and what
// is checked is who gets an answer.
func scrapeMetrics(ctx context.Context, url, token string) (int, string, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed metrics certificate
	}}
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
