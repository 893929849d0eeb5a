//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
