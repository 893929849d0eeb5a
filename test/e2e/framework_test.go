//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// controlPlaneConfig is the admin configuration of the shared control plane.
func controlPlaneConfig(t *testing.T) *rest.Config {
	t.Helper()
	return clusterConfig(t, suite.state, localenv.ControlPlaneName)
}

// memberConfig is the admin configuration of a shared member cluster.
func memberConfig(t *testing.T, member string) *rest.Config {
	t.Helper()
	return clusterConfig(t, suite.state, member)
}

func clusterConfig(t *testing.T, s *localenv.State, name string) *rest.Config {
	t.Helper()
	cfg, err := s.RESTConfig(name)
	if err != nil {
		t.Fatalf("config for %s: %v", name, err)
	}
	return cfg
}

// clientFor returns a controller-runtime client that knows every Lifeboat type.
func clientFor(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("client for %s: %v", cfg.Host, err)
	}
	return c
}

func clientsetFor(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// newNamespace creates a fresh namespace in the shared control plane, deleted
// when the test ends.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	return createNamespace(t, controlPlaneConfig(t), prefix)
}

func createNamespace(t *testing.T, cfg *rest.Config, prefix string) string {
	t.Helper()
	cs := clientsetFor(t, cfg)
	name := prefix + "-" + rand.String(5)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// eventually polls cond every 250ms until it returns true or the timeout
// passes; on timeout the test fails with what cond last reported.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	// seen is the last real observation, lastErr the last error after it:
	// a poll cut off near the deadline (a client's rate limiter says so
	// before the deadline passes) must not hide what was seen.
	var seen, lastErr string
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, s, err := cond(ctx)
		if err != nil {
			lastErr = err.Error()
			return false, nil
		}
		seen, lastErr = s, ""
		return ok, nil
	})
	if err != nil {
		switch {
		case seen == "":
			t.Fatalf("%s: not reached within %s; last seen: error: %s", what, timeout, lastErr)
		case lastErr != "":
			t.Fatalf("%s: not reached within %s; last seen: %s (then an error: %s)", what, timeout, seen, lastErr)
		default:
			t.Fatalf("%s: not reached within %s; last seen: %s", what, timeout, seen)
		}
	}
}

// kubectl runs the suite's kubectl with the given kubeconfig and returns its
// combined output; failures end the test.
func kubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := kubectlE(kubeconfig, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func kubectlE(kubeconfig string, args ...string) (string, error) {
	cmd := exec.Command(suite.bins.Path("kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

// lifeboat runs the binary under test.
func lifeboat(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(suite.lifeboat, args...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

func describe(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// containsAll reports whether s contains every part.
func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// lineHas reports whether one line of out contains every part.
func lineHas(out string, parts ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		if containsAll(line, parts...) {
			return true
		}
	}
	return false
}
