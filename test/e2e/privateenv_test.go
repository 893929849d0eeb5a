//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

// privateEnv is an environment of one test's own, for scenarios that stop
// members or the control plane, unjoin members, or run the controller
// manager with other flags: none of that may happen to the suite's shared
// one. It is torn down when the test ends.
type privateEnv struct {
	dir        string
	kubeconfig string
	state      *localenv.State
	// cp reads and writes the control plane; cs is its clientset.
	cp client.Client
	cs kubernetes.Interface
	// members are the member clusters' clientsets, by name.
	members map[string]kubernetes.Interface
}

// envOptions say how startPrivateEnv brings an environment up.
type envOptions struct {
	// members is the number of member clusters.
	members int
	// controllerManagerArgs are the controller manager's flags (none: the
	// defaults).
	controllerManagerArgs []string
	// upFlags are more flags for `lifeboat up`.
	upFlags []string
}

// startPrivateEnv brings up an environment as o says, torn down when the
// test ends. It does not wait for the Clusters to be Ready.
func startPrivateEnv(t *testing.T, o envOptions) *privateEnv {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "env")
	args := []string{"up", "--members", strconv.Itoa(o.members), "--state-dir", dir, "--cache-dir", suite.cacheDir}
	for _, a := range o.controllerManagerArgs {
		args = append(args, "--controller-manager-arg="+a)
	}
	args = append(args, o.upFlags...)
	out, err := lifeboat(t, args...)
	t.Cleanup(func() {
		keepLogs(t, dir)
		if _, err := os.Stat(dir); err == nil {
			if out, err := lifeboat(t, "down", "--state-dir", dir); err != nil {
				t.Logf("lifeboat down: %v\n%s", err, out)
			}
		}
	})
	if err != nil {
		t.Fatalf("lifeboat up: %v\n%s", err, out)
	}
	s, err := localenv.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := &privateEnv{
		dir:        dir,
		kubeconfig: s.KubeconfigPath(),
		state:      s,
		cp:         clientFor(t, clusterConfig(t, s, localenv.ControlPlaneName)),
		cs:         clientsetFor(t, clusterConfig(t, s, localenv.ControlPlaneName)),
		members:    map[string]kubernetes.Interface{},
	}
	for _, m := range s.Members() {
		e.members[m] = clientsetFor(t, clusterConfig(t, s, m))
	}
	return e
}

// component returns the recorded component name, read afresh.
func (e *privateEnv) component(t *testing.T, name string) localenv.Component {
	t.Helper()
	s, err := localenv.Load(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Components {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no component %s", name)
	return localenv.Component{}
}

// run runs lifeboat with args and returns its output; a failure ends the
// test.
func (e *privateEnv) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := lifeboat(t, args...)
	if err != nil {
		t.Fatalf("lifeboat %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// namespace creates a namespace in the control plane (never deleted: the
// environment goes away with the test).
func (e *privateEnv) namespace(t *testing.T, prefix string) string {
	t.Helper()
	name := prefix + "-" + rand.String(5)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := e.cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// apply applies manifest text to the control plane in ns ("" for
// cluster-scoped objects).
func (e *privateEnv) apply(t *testing.T, ns, manifest string) {
	t.Helper()
	applyManifest(t, e.kubeconfig, ns, manifest)
}

// restartMemberComponents restarts member's own controller manager,
// scheduler and kwok after its API server came back. They kept running
// through the outage, and their informers would wait out client-go's
// back-off (up to a minute after a long outage) before they list again, so
// new Deployments there would not get pods for that long. That is the
// member's business, not Lifeboat's: restarting them makes the member whole
// at once.
func (e *privateEnv) restartMemberComponents(t *testing.T, member string) {
	t.Helper()
	for _, c := range []string{"controller-manager", "scheduler", "kwok"} {
		e.run(t, "env", "restart", member+"-"+c, "--state-dir", e.dir)
	}
}

// cluster reads the Cluster name.
func (e *privateEnv) cluster(ctx context.Context, name string) (*clusterv1alpha1.Cluster, error) {
	var c clusterv1alpha1.Cluster
	if err := e.cp.Get(ctx, types.NamespacedName{Name: name}, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// clusterConditionIs is a condition: the Cluster member has a condition typ
// with status want. last, unless nil, receives the condition each time it
// is read.
func (e *privateEnv) clusterConditionIs(member, typ string, want metav1.ConditionStatus, last *metav1.Condition) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		c, err := e.cluster(ctx, member)
		if err != nil {
			return false, "", err
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, typ)
		if cond == nil {
			return false, "no " + typ + " condition", nil
		}
		if last != nil {
			*last = *cond
		}
		return cond.Status == want, fmt.Sprintf("%s %s: %s", cond.Status, cond.Reason, cond.Message), nil
	}
}

// keepLogs copies the logs of a failed test's own environment in dir to
// $LIFEBOAT_E2E_LOGS/<test name>/ before the environment goes away; without
// that variable, or when the test passed, it does nothing.
func keepLogs(t *testing.T, dir string) {
	root := os.Getenv("LIFEBOAT_E2E_LOGS")
	if root == "" || !t.Failed() {
		return
	}
	dst := filepath.Join(root, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(dir, "logs"))); err != nil {
		t.Logf("keeping the environment's logs: %v", err)
		return
	}
	t.Logf("the environment's logs are in %s", dst)
}
