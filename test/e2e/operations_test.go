//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/components"
)

// The cluster status controller collects what the scheduler and users rely
// on: Ready, the Kubernetes version, API enablements, node and resource
// summaries.
func TestClusterStatusIsCollected(t *testing.T) {
	t.Parallel()
	cp := clientFor(t, controlPlaneConfig(t))
	eventually(t, 60*time.Second, "member1's status collected", func(ctx context.Context) (bool, string, error) {
		var c clusterv1alpha1.Cluster
		if err := cp.Get(ctx, types.NamespacedName{Name: "member1"}, &c); err != nil {
			return false, "", err
		}
		st := c.Status
		var problems []string
		if cond := condition(st.Conditions, clusterv1alpha1.ClusterConditionReady); cond == nil || cond.Status != "True" {
			problems = append(problems, fmt.Sprintf("Ready=%v", cond))
		}
		if st.KubernetesVersion != components.KubernetesVersion {
			problems = append(problems, "kubernetesVersion="+st.KubernetesVersion)
		}
		if st.NodeSummary == nil || st.NodeSummary.TotalNum != 1 || st.NodeSummary.ReadyNum != 1 {
			problems = append(problems, fmt.Sprintf("nodeSummary=%+v", st.NodeSummary))
		}
		if st.ResourceSummary == nil || st.ResourceSummary.Allocatable.Cpu().Value() != 64 {
			problems = append(problems, fmt.Sprintf("resourceSummary=%+v", st.ResourceSummary))
		}
		servesDeployments := false
		for _, e := range st.APIEnablements {
			for _, r := range e.Resources {
				if e.GroupVersion == "apps/v1" && r.Kind == "Deployment" {
					servesDeployments = true
				}
			}
		}
		if !servesDeployments {
			problems = append(problems, fmt.Sprintf("apiEnablements lack apps/v1 Deployment (%d groups)", len(st.APIEnablements)))
		}
		return len(problems) == 0, strings.Join(problems, "; "), nil
	})
}

// The controller manager serves Prometheus metrics: reconcile counts and
// work queue figures per controller, and Lifeboat's failover metrics.
func TestMetricsAreServed(t *testing.T) {
	t.Parallel()
	addr := componentFlag(t, suite.state, "lifeboat-controller-manager", "--metrics-bind-address=")
	eventually(t, 30*time.Second, "metrics served", func(ctx context.Context) (bool, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
		if err != nil {
			return false, "", err
		}
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			return false, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, "", err
		}
		var missing []string
		for _, want := range []string{
			`controller_runtime_reconcile_total{controller="scheduler-resourcebinding"`,
			`controller_runtime_reconcile_total{controller="binding"`,
			`controller_runtime_reconcile_time_seconds_bucket{controller="cluster-status"`,
			// The work queues' metrics, recorded by internal/queue.
			`workqueue_adds_total{controller="binding",name="binding"}`,
			`workqueue_queue_duration_seconds_count{controller="scheduler-resourcebinding",name="scheduler-resourcebinding"}`,
			`workqueue_work_duration_seconds_count{controller="cluster-status",name="cluster-status"}`,
			`workqueue_depth{controller="binding",name="binding",priority=`,
			`workqueue_unfinished_work_seconds{controller="cluster-status",name="cluster-status"}`,
			`workqueue_longest_running_processor_seconds{controller="detector-template",name="detector-template"}`,
			"lifeboat_eviction_tasks_open",
			"lifeboat_storm_guard_state",
		} {
			if !strings.Contains(string(body), want) {
				missing = append(missing, want)
			}
		}
		return len(missing) == 0, "missing: " + strings.Join(missing, ", "), nil
	})
}

// A second controller manager against the same control plane stays a
// follower: leader election lets two replicas run safely.
func TestSecondReplicaWaitsForLeadership(t *testing.T) {
	t.Parallel()
	port := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	}
	logFile := filepath.Join(t.TempDir(), "second.log")
	log, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(suite.lifeboat, "controller-manager",
		"--kubeconfig", suite.state.KubeconfigPath(), "--context", localenv.ControlPlaneName,
		"--health-probe-bind-address=127.0.0.1:"+port(), "--metrics-bind-address=127.0.0.1:"+port())
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	eventually(t, 30*time.Second, "second replica tries to acquire the lease", func(context.Context) (bool, string, error) {
		data, _ := os.ReadFile(logFile)
		return strings.Contains(strings.ToLower(string(data)), "attempting to acquire leader lease"), lastLines(string(data), 5), nil
	})
	// Within a few renew periods (2 s) it must not have taken over from the
	// running leader.
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(logFile)
		if strings.Contains(strings.ToLower(string(data)), "successfully acquired lease") {
			t.Fatalf("second replica took the lease from a live leader:\n%s", lastLines(string(data), 10))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// componentFlag returns the value of a flag the component was started with.
func componentFlag(t *testing.T, s *localenv.State, component, prefix string) string {
	t.Helper()
	for _, c := range s.Components {
		if c.Name != component {
			continue
		}
		for _, a := range c.Args {
			if strings.HasPrefix(a, prefix) {
				return strings.TrimPrefix(a, prefix)
			}
		}
	}
	t.Fatalf("%s has no flag %s", component, prefix)
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// `lifeboat history` names a template as kubectl does: any spelling of its
// type (short name, plural with group, Kind, version and group), TYPE/NAME
// or TYPE NAME, cluster-scoped kinds included, with the control plane from
// --kubeconfig, its other name --control-plane-kubeconfig, or $KUBECONFIG.
func TestHistoryNamesTemplatesAsKubectlDoes(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "history-types")
	cp := clientFor(t, controlPlaneConfig(t))
	kubeconfig := suite.state.KubeconfigPath()
	applyFile(t, ns, "seeds/000-nginx.yaml")
	role := "lifeboat-e2e-history-" + rand.String(5)
	t.Cleanup(func() {
		_, _ = kubectlE(kubeconfig, "--context", localenv.ControlPlaneName, "delete", "clusterrole,clusterpropagationpolicy", role, "--ignore-not-found")
	})
	applyYAML(t, ns, emptyClusterRoleTo(role, "member1"))
	eventually(t, propagationTimeout, "bindings nginx-deployment and "+role+"-clusterrole exist", func(ctx context.Context) (bool, string, error) {
		var missing []string
		if err := cp.Get(ctx, types.NamespacedName{Namespace: ns, Name: "nginx-deployment"}, &workv1alpha2.ResourceBinding{}); err != nil {
			missing = append(missing, err.Error())
		}
		if err := cp.Get(ctx, types.NamespacedName{Name: role + "-clusterrole"}, &workv1alpha2.ClusterResourceBinding{}); err != nil {
			missing = append(missing, err.Error())
		}
		return len(missing) == 0, strings.Join(missing, "; "), nil
	})

	nginx := fmt.Sprintf("Deployment %s/nginx (ResourceBinding %s/nginx-deployment)", ns, ns)
	clusterRole := fmt.Sprintf("ClusterRole %s (ClusterResourceBinding %s-clusterrole)", role, role)
	for _, tc := range []struct {
		args []string
		env  []string
		want string
	}{
		{args: []string{"deploy/nginx", "-n", ns, "--kubeconfig", kubeconfig}, want: nginx},
		{args: []string{"deployments.apps/nginx", "-n", ns, "--kubeconfig", kubeconfig}, want: nginx},
		{args: []string{"deployment", "nginx", "-n", ns, "--kubeconfig", kubeconfig}, want: nginx},
		{args: []string{"Deployment/nginx", "-n", ns, "--kubeconfig", kubeconfig, "--context", localenv.ControlPlaneName}, want: nginx},
		{args: []string{"deployment.v1.apps/nginx", "-n", ns, "--control-plane-kubeconfig", kubeconfig}, want: nginx},
		{args: []string{"clusterrole", role, "--kubeconfig", kubeconfig}, want: clusterRole},
		{args: []string{"clusterroles.rbac.authorization.k8s.io/" + role, "-n", ns}, env: []string{"KUBECONFIG=" + kubeconfig}, want: clusterRole},
	} {
		cmd := exec.Command(suite.lifeboat, append([]string{"history"}, tc.args...)...)
		cmd.Env = append(os.Environ(), tc.env...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "Warning") {
			t.Errorf("%s lifeboat history %s: err %v, want %q and no warning:\n%s", strings.Join(tc.env, " "), strings.Join(tc.args, " "), err, tc.want, out)
		}
	}

	out, err := lifeboat(t, "history", "deplo/nginx", "-n", ns, "--kubeconfig", kubeconfig)
	if want := `the server doesn't have a resource type "deplo"`; err == nil || !strings.Contains(out, want) {
		t.Errorf("lifeboat history deplo/nginx: err %v, want %q:\n%s", err, want, out)
	}
}
