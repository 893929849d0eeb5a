//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

// TestLocalEnvironmentLifecycle brings up a second, two-member environment
// with the CLI, runs the seeds' walkthrough commands against it, and proves
// that `lifeboat down` leaves no process and no state behind.
func TestLocalEnvironmentLifecycle(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "env")
	out, err := lifeboat(t, "up", "--members", "2", "--state-dir", dir, "--cache-dir", suite.cacheDir)
	if err != nil {
		t.Fatalf("lifeboat up: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if _, err := os.Stat(dir); err == nil {
			_, _ = lifeboat(t, "down", "--state-dir", dir)
		}
	})
	if !strings.Contains(out, "export KUBECONFIG=") {
		t.Errorf("up did not print what to do next:\n%s", out)
	}
	s, err := localenv.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := s.KubeconfigPath()
	ctx := context.Background()

	// Both members are registered as Clusters in the control plane.
	cp := clientFor(t, clusterConfig(t, s, localenv.ControlPlaneName))
	var clusters clusterv1alpha1.ClusterList
	if err := cp.List(ctx, &clusters); err != nil {
		t.Fatalf("listing clusters: %v", err)
	}
	var names []string
	for _, c := range clusters.Items {
		names = append(names, c.Name)
		if c.Spec.APIEndpoint == "" || c.Spec.SecretRef == nil {
			t.Errorf("cluster %s lacks endpoint or credentials: %+v", c.Name, c.Spec)
		}
	}
	if strings.Join(names, ",") != "member1,member2" {
		t.Fatalf("clusters = %v, want member1,member2", names)
	}

	// The kubeconfig has the contexts the seeds use; lifeboat is current.
	if got := strings.TrimSpace(kubectl(t, kubeconfig, "config", "current-context")); got != localenv.ControlPlaneName {
		t.Errorf("current context = %q, want %q", got, localenv.ControlPlaneName)
	}

	// A Deployment created directly in a member reaches 2/2 ready.
	member := clientsetFor(t, clusterConfig(t, s, "member2"))
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx", Namespace: "default", Labels: map[string]string{"app": "nginx"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}},
			},
		},
	}
	if _, err := member.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating deployment in member2: %v", err)
	}
	readyReplicas := func(want int32) func(context.Context) (bool, string, error) {
		return func(ctx context.Context) (bool, string, error) {
			d, err := member.AppsV1().Deployments("default").Get(ctx, "nginx", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			st := describe("ready %d/%d, available %d", d.Status.ReadyReplicas, *d.Spec.Replicas, d.Status.AvailableReplicas)
			return d.Status.ReadyReplicas == want && d.Status.AvailableReplicas == want && d.Status.ObservedGeneration == d.Generation, st, nil
		}
	}
	eventually(t, 90*time.Second, "deployment 2/2 ready in member2", readyReplicas(2))

	// The seeds' walkthrough, as written: cordon the node, delete the pods.
	kubectl(t, kubeconfig, "--context", "member2", "cordon", "member2-control-plane")
	kubectl(t, kubeconfig, "--context", "member2", "delete", "pod", "-l", "app=nginx")
	eventually(t, 60*time.Second, "deployment 0/2 after cordon and pod deletion", func(ctx context.Context) (bool, string, error) {
		ok, st, err := readyReplicas(0)(ctx)
		if err != nil || !ok {
			return ok, st, err
		}
		pods, err := member.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=nginx"})
		if err != nil {
			return false, "", err
		}
		pending := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodPending && p.Spec.NodeName == "" {
				pending++
			}
		}
		return pending == 2, describe("%s; %d of %d pods pending unscheduled", st, pending, len(pods.Items)), nil
	})

	// status reports every component healthy.
	if out, err := lifeboat(t, "status", "--state-dir", dir); err != nil {
		t.Fatalf("lifeboat status: %v\n%s", err, out)
	} else if strings.Contains(out, "Unhealthy") || !strings.Contains(out, "member2-apiserver") {
		t.Fatalf("lifeboat status:\n%s", out)
	}

	// unjoin and join again, with the CLI; the member's kubeconfig is the
	// environment's, context member2.
	cpFlags := []string{"--control-plane-kubeconfig", kubeconfig, "--control-plane-context", localenv.ControlPlaneName}
	if out, err := lifeboat(t, append([]string{"unjoin", "member2"}, cpFlags...)...); err != nil {
		t.Fatalf("lifeboat unjoin: %v\n%s", err, out)
	}
	var gone clusterv1alpha1.Cluster
	if err := cp.Get(ctx, types.NamespacedName{Name: "member2"}, &gone); !apierrors.IsNotFound(err) {
		t.Fatalf("Cluster member2 after unjoin: %v", err)
	}
	if out, err := lifeboat(t, append([]string{"join", "member2", "--cluster-kubeconfig", kubeconfig, "--cluster-context", "member2"}, cpFlags...)...); err != nil {
		t.Fatalf("lifeboat join: %v\n%s", err, out)
	}
	if out, err := lifeboat(t, append([]string{"join", "member2", "--cluster-kubeconfig", kubeconfig, "--cluster-context", "member2"}, cpFlags...)...); err == nil {
		t.Fatalf("joining member2 twice succeeded:\n%s", out)
	}
	eventually(t, 60*time.Second, "re-joined member2 Ready", func(ctx context.Context) (bool, string, error) {
		var c clusterv1alpha1.Cluster
		if err := cp.Get(ctx, types.NamespacedName{Name: "member2"}, &c); err != nil {
			return false, "", err
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == clusterv1alpha1.ClusterConditionReady {
				return cond.Status == metav1.ConditionTrue, cond.Reason + ": " + cond.Message, nil
			}
		}
		return false, "no Ready condition yet", nil
	})

	// Fault injection: a member's API server stops and comes back.
	if out, err := lifeboat(t, "env", "stop", "member2", "--state-dir", dir); err != nil {
		t.Fatalf("lifeboat env stop: %v\n%s", err, out)
	}
	if out, err := lifeboat(t, "status", "--state-dir", dir); err == nil || !strings.Contains(out, "not running") {
		t.Fatalf("status should report the stopped API server and fail: err=%v\n%s", err, out)
	}
	if _, err := member.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
		t.Fatal("member2's API server still answers after env stop")
	}
	if out, err := lifeboat(t, "env", "start", "member2", "--state-dir", dir); err != nil {
		t.Fatalf("lifeboat env start: %v\n%s", err, out)
	}
	if _, err := member.AppsV1().Deployments("default").Get(ctx, "nginx", metav1.GetOptions{}); err != nil {
		t.Fatalf("member2 lost its data across env stop/start: %v", err)
	}
	eventually(t, 60*time.Second, "every component healthy after env start", func(ctx context.Context) (bool, string, error) {
		out, err := lifeboat(t, "status", "--state-dir", dir)
		return err == nil, out, nil
	})
	s, err = localenv.Load(dir) // the restarted API server has a new PID
	if err != nil {
		t.Fatal(err)
	}

	// up again: says so, changes nothing.
	out, err = lifeboat(t, "up", "--members", "2", "--state-dir", dir, "--cache-dir", suite.cacheDir)
	if err != nil || !strings.Contains(out, "already up") {
		t.Fatalf("second up: err=%v\n%s", err, out)
	}
	again, err := localenv.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Components) != len(s.Components) {
		t.Fatalf("second up changed the components: %d → %d", len(s.Components), len(again.Components))
	}
	for i := range s.Components {
		if again.Components[i].Process != s.Components[i].Process {
			t.Errorf("second up changed %s: %+v → %+v", s.Components[i].Name, s.Components[i].Process, again.Components[i].Process)
		}
	}

	// down: every recorded process is gone and so is the state.
	if out, err := lifeboat(t, "down", "--state-dir", dir); err != nil {
		t.Fatalf("lifeboat down: %v\n%s", err, out)
	}
	for _, c := range s.Components {
		if c.Process.Alive() {
			t.Errorf("%s (pid %d) still running after down", c.Name, c.Process.PID)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("state directory %s still exists after down (stat: %v)", dir, err)
	}
}
