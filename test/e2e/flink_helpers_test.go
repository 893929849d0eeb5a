//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/flinkstandin"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

// Helpers of the Flink and customization scenarios (flink_test.go,
// flink_customization_test.go).

// flinkCRDFile is the FlinkDeployment CRD users install (examples/flink).
var flinkCRDFile = filepath.Join("..", "..", "examples", "flink", "crd.yaml")

// crdInstallMu serialises CRD installs of parallel tests.
var crdInstallMu sync.Mutex

// installCRD creates the CRD of file (or updates it to the file's spec) in
// the control plane and in every member, and waits until each serves it.
// CRDs are left installed: other tests of the process may use them.
func installCRD(t *testing.T, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, want); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	crdInstallMu.Lock()
	defer crdInstallMu.Unlock()
	for _, name := range append([]string{localenv.ControlPlaneName}, memberNames...) {
		cs, err := apiextensionsclient.NewForConfig(clusterConfig(t, suite.state, name))
		if err != nil {
			t.Fatal(err)
		}
		crds := cs.ApiextensionsV1().CustomResourceDefinitions()
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := crds.Get(context.Background(), want.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = crds.Create(context.Background(), want.DeepCopy(), metav1.CreateOptions{})
				return err
			}
			if err != nil || equality.Semantic.DeepEqual(cur.Spec, want.Spec) {
				return err
			}
			cur.Spec = want.Spec
			_, err = crds.Update(context.Background(), cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("installing CRD %s in %s: %v", want.Name, name, err)
		}
		eventually(t, 30*time.Second, describe("CRD %s Established in %s", want.Name, name), func(ctx context.Context) (bool, string, error) {
			cur, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			for _, c := range cur.Status.Conditions {
				if c.Type == apiextensionsv1.Established {
					return c.Status == apiextensionsv1.ConditionTrue, c.Reason + ": " + c.Message, nil
				}
			}
			return false, "no Established condition", nil
		})
	}
	return want
}

// standins are the Flink stand-in operators of this test process: one per
// member, shared by the tests that use them, acting only in their
// namespaces, stopped when the last of those tests ends.
var standins struct {
	mu         sync.Mutex
	users      int
	stop       context.CancelFunc
	stopped    sync.WaitGroup
	namespaces sync.Map
}

// useFlinkStandins makes the stand-in operators run FlinkDeployments in ns
// in every member until the test ends.
func useFlinkStandins(t *testing.T, ns string) {
	t.Helper()
	standins.mu.Lock()
	defer standins.mu.Unlock()
	standins.namespaces.Store(ns, true)
	if standins.users == 0 {
		ctx, cancel := context.WithCancel(context.Background())
		standins.stop = cancel
		for _, m := range memberNames {
			cfg := memberConfig(t, m)
			log := funcr.New(func(prefix, args string) {
				fmt.Printf("flink stand-in %s: %s %s\n", m, prefix, args)
			}, funcr.Options{})
			standins.stopped.Add(1)
			go func() {
				defer standins.stopped.Done()
				inNamespaces := func(ns string) bool { _, ok := standins.namespaces.Load(ns); return ok }
				if err := flinkstandin.Run(ctx, rest.CopyConfig(cfg), inNamespaces, log); err != nil && ctx.Err() == nil {
					fmt.Printf("flink stand-in %s stopped: %v\n", m, err)
				}
			}()
		}
	}
	standins.users++
	t.Cleanup(func() {
		standins.namespaces.Delete(ns)
		standins.mu.Lock()
		defer standins.mu.Unlock()
		standins.users--
		if standins.users == 0 {
			standins.stop()
			standins.stopped.Wait()
		}
	})
}

// dynamicFor returns a dynamic client of the cluster of cfg.
func dynamicFor(t *testing.T, cfg *rest.Config) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// memberDynamics returns a dynamic client per member.
func memberDynamics(t *testing.T) map[string]dynamic.Interface {
	t.Helper()
	out := map[string]dynamic.Interface{}
	for _, m := range memberNames {
		out[m] = dynamicFor(t, memberConfig(t, m))
	}
	return out
}

// flinkJobOf reads status.jobStatus {jobId, state} of a reflected status
// (a binding's aggregated item) or of a whole object's status.
func flinkJobOf(status map[string]any) (jobID, state string) {
	job, _ := status["jobStatus"].(map[string]any)
	jobID, _ = job["jobId"].(string)
	state, _ = job["state"].(string)
	return jobID, state
}

func reflectedStatus(item *workv1alpha2.AggregatedStatusItem) map[string]any {
	if item == nil || item.Status == nil {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(item.Status.Raw, &m)
	return m
}

// waitFlinkRunning waits until the binding of FlinkDeployment name is
// scheduled to one cluster (not not), applied, Healthy and reports a
// RUNNING job there; it returns the cluster and the job's ID.
func waitFlinkRunning(t *testing.T, c client.Client, ns, name, not string) (string, string) {
	t.Helper()
	var placed, jobID string
	eventually(t, failoverTimeout, describe("FlinkDeployment %s running on one member (not %q)", name, not), func(ctx context.Context) (bool, string, error) {
		rb, err := getBinding(ctx, c, ns, name+"-flinkdeployment")
		if err != nil {
			return false, "", err
		}
		cs := scheduledClusters(rb)
		if len(cs) != 1 || cs[0] == not {
			return false, fmt.Sprintf("scheduled to %v; tasks %s", cs, tasksSummary(rb)), nil
		}
		placed = cs[0]
		item := aggregatedItem(rb, placed)
		if item == nil {
			return false, "no aggregated status for " + placed, nil
		}
		id, state := flinkJobOf(reflectedStatus(item))
		jobID = id
		return item.Applied && item.Health == workv1alpha2.ResourceHealthy && state == flinkstandin.JobStateRunning && id != "",
			fmt.Sprintf("%s: applied=%v health=%s job %q %s", placed, item.Applied, item.Health, id, state), nil
	})
	return placed, jobID
}

// failFlinkIn is an OverridePolicy that moves FlinkDeployment name's
// spec.image to the registry "fake" in cluster, where the stand-in fails
// the job. A CRD's image is not where the overrider looks by default (pod
// templates of built-in kinds), so the predicate names it.
func failFlinkIn(name, cluster string) string {
	return fmt.Sprintf(`
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata:
  name: %[1]s-broken
spec:
  resourceSelectors:
    - apiVersion: flink.apache.org/v1beta1
      kind: FlinkDeployment
      name: %[1]s
  overrideRules:
    - targetCluster:
        clusterNames: [%[2]s]
      overriders:
        imageOverrider:
          - predicate:
              path: /spec/image
            component: Registry
            operator: replace
            value: fake
`, name, cluster)
}

// getObject reads ns/name of gvr; nil when it does not exist.
func getObject(ctx context.Context, d dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	u, err := d.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

// waitEvent waits for an Event of the given type and reason on kind/name
// in ns whose message contains every part, and returns its message.
func waitEvent(t *testing.T, ns, kind, name, typ, reason string, parts ...string) string {
	t.Helper()
	cs := clientsetFor(t, controlPlaneConfig(t))
	var msg string
	eventually(t, 30*time.Second, describe("%s Event %s on %s %s containing %q", typ, reason, kind, name, parts), func(ctx context.Context) (bool, string, error) {
		evs, err := eventsFor(ctx, cs, ns, kind, name)
		if err != nil {
			return false, "", err
		}
		for _, e := range evs {
			if e.Type == typ && e.Reason == reason && containsAll(e.Message, parts...) {
				msg = e.Message
				return true, "", nil
			}
		}
		return false, summarizeEvents(evs), nil
	})
	return msg
}

// flinkScenario is a FlinkDeployment foo placed by a policy in its own
// namespace, running on member x as job jobID, whose copy in x was then
// broken.
type flinkScenario struct {
	ns      string
	cp      client.Client
	members map[string]dynamic.Interface
	// x is where foo ran first; jobID the job it ran there.
	x, jobID string
}

// startFlinkScenario applies policyFile and the FlinkDeployment foo in a
// new namespace, waits until foo runs on some member x, then breaks foo in
// x (OverridePolicy failFlinkIn).
func startFlinkScenario(t *testing.T, prefix, policyFile string) *flinkScenario {
	t.Helper()
	f := runFlinkScenario(t, prefix, policyFile)
	f.breakCopy(t)
	return f
}

// runFlinkScenario applies policyFile and the FlinkDeployment foo in a new
// namespace and waits until foo runs on some member x.
func runFlinkScenario(t *testing.T, prefix, policyFile string) *flinkScenario {
	t.Helper()
	f := &flinkScenario{
		ns:      newNamespace(t, prefix),
		cp:      clientFor(t, controlPlaneConfig(t)),
		members: memberDynamics(t),
	}
	useFlinkStandins(t, f.ns)
	applyFile(t, f.ns, policyFile)
	applyFile(t, f.ns, "flink/foo.yaml")
	f.x, f.jobID = waitFlinkRunning(t, f.cp, f.ns, "foo", "")
	t.Logf("foo runs on %s as job %s", f.x, f.jobID)
	return f
}

// breakCopy makes the job of foo's copy in x fail (OverridePolicy failFlinkIn).
func (f *flinkScenario) breakCopy(t *testing.T) {
	t.Helper()
	applyYAML(t, f.ns, failFlinkIn("foo", f.x))
}

func statusOf(u *unstructured.Unstructured) map[string]any {
	s, _, _ := unstructured.NestedMap(u.Object, "status")
	return s
}

// waitNewCopy waits until foo exists in exactly one member other than x
// and that copy satisfies cond; it returns the member and the copy.
func (f *flinkScenario) waitNewCopy(t *testing.T, cond func(*unstructured.Unstructured) (bool, string)) (string, *unstructured.Unstructured) {
	t.Helper()
	var y string
	var found *unstructured.Unstructured
	eventually(t, failoverTimeout, "foo failed over from "+f.x, func(ctx context.Context) (bool, string, error) {
		var where []string
		for m, d := range f.members {
			if m == f.x {
				continue
			}
			u, err := getObject(ctx, d, flinkstandin.GVR, f.ns, "foo")
			if err != nil {
				return false, "", err
			}
			if u != nil {
				where, y, found = append(where, m), m, u
			}
		}
		if len(where) != 1 {
			return false, fmt.Sprintf("copies outside %s: %v", f.x, where), nil
		}
		ok, seen := cond(found)
		return ok, y + ": " + seen, nil
	})
	return y, found
}

// waitTemplateJob waits until the control plane's FlinkDeployment foo
// (status aggregated by the shipped rule) shows job jobID RUNNING.
func (f *flinkScenario) waitTemplateJob(t *testing.T, jobID string) {
	t.Helper()
	d := dynamicFor(t, controlPlaneConfig(t))
	eventually(t, failoverTimeout, "the template's status shows job "+jobID+" RUNNING", func(ctx context.Context) (bool, string, error) {
		u, err := getObject(ctx, d, flinkstandin.GVR, f.ns, "foo")
		if err != nil || u == nil {
			return false, "no template", err
		}
		id, state := flinkJobOf(statusOf(u))
		return id == jobID && state == flinkstandin.JobStateRunning, fmt.Sprintf("job %q %s", id, state), nil
	})
}

// waitGoneFrom waits until foo no longer exists in member.
func (f *flinkScenario) waitGoneFrom(t *testing.T, member string) {
	t.Helper()
	eventually(t, failoverTimeout, "foo deleted from "+member, func(ctx context.Context) (bool, string, error) {
		u, err := getObject(ctx, f.members[member], flinkstandin.GVR, f.ns, "foo")
		if err != nil {
			return false, "", err
		}
		if u == nil {
			return true, "", nil
		}
		id, state := flinkJobOf(statusOf(u))
		return false, fmt.Sprintf("still there: image %v, job %q %s", u.Object["spec"].(map[string]any)["image"], id, state), nil
	})
}

// waitHistory waits for the binding's history entry of the application
// failover from x.
func (f *flinkScenario) waitHistory(t *testing.T) workv1alpha2.FailoverHistoryItem {
	t.Helper()
	var entry workv1alpha2.FailoverHistoryItem
	eventually(t, failoverTimeout, "failover history of foo has the eviction from "+f.x, func(ctx context.Context) (bool, string, error) {
		rb, err := getBinding(ctx, f.cp, f.ns, "foo-flinkdeployment")
		if err != nil {
			return false, "", err
		}
		for _, h := range rb.Status.FailoverHistory {
			if h.FromCluster == f.x && h.Reason == workv1alpha2.EvictionReasonApplicationFailure {
				entry = h
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("history %+v", rb.Status.FailoverHistory), nil
	})
	return entry
}

// The member side of the Flink story: Kyverno in every member of the shared
// environment (lifeboat up --with-kyverno) runs the shipped ClusterPolicy.
const (
	// flinkRestorePolicy is the ClusterPolicy of
	// examples/flink/kyverno-clusterpolicy.yaml.
	flinkRestorePolicy = "flink-restore-after-failover"
	// checkpointsConfigMap maps job IDs to their latest checkpoints; the
	// policy reads it in the FlinkDeployment's namespace.
	checkpointsConfigMap = "flink-latest-checkpoints"
)

// requireKyverno ends the test when the shared environment runs no Kyverno
// (a reused LIFEBOAT_E2E_STATE_DIR started without --with-kyverno).
func requireKyverno(t *testing.T) {
	t.Helper()
	if !suite.state.HasKyverno() {
		t.Fatalf("the environment in %s runs no Kyverno; start it with lifeboat up --with-kyverno", suite.state.Dir)
	}
}

// checkpointFor is where a job's latest retained checkpoint is said to be.
func checkpointFor(jobID string, n int) string {
	return fmt.Sprintf("file:///flink-data/checkpoints/%s/chk-%d", jobID, n)
}

// latestCheckpoints is the ConfigMap flink-latest-checkpoints with entries
// (job ID → checkpoint) and, as the ClusterPolicy's comment recommends, a
// PropagationPolicy that sends it to every member.
func latestCheckpoints(entries map[string]string) string {
	var data strings.Builder
	for id, path := range entries {
		fmt.Fprintf(&data, "  %q: %q\n", id, path)
	}
	return fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: %[1]s
data:
%[2]s---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: %[1]s
spec:
  resourceSelectors:
    - apiVersion: v1
      kind: ConfigMap
      name: %[1]s
  placement:
    clusterAffinity:
      clusterNames: [member1, member2, member3]
`, checkpointsConfigMap, data.String())
}

// waitCheckpointsEverywhere waits until every member's copy of
// flink-latest-checkpoints in ns holds entries.
func waitCheckpointsEverywhere(t *testing.T, ns string, entries map[string]string) {
	t.Helper()
	for m, cs := range members(t) {
		eventually(t, 60*time.Second, describe("%s has %s/%s %v", m, ns, checkpointsConfigMap, entries), func(ctx context.Context) (bool, string, error) {
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, checkpointsConfigMap, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, "not there yet", nil
			}
			if err != nil {
				return false, "", err
			}
			for id, path := range entries {
				if cm.Data[id] != path {
					return false, fmt.Sprintf("data %v", cm.Data), nil
				}
			}
			return true, "", nil
		})
	}
}

// flinkJobSpec reads spec.job {initialSavepointPath, upgradeMode}.
func flinkJobSpec(u *unstructured.Unstructured) (savepoint, upgradeMode string) {
	savepoint, _, _ = unstructured.NestedString(u.Object, "spec", "job", "initialSavepointPath")
	upgradeMode, _, _ = unstructured.NestedString(u.Object, "spec", "job", "upgradeMode")
	return savepoint, upgradeMode
}

// restoredFrom is the savepoint the stand-in operator reports the job
// restored from (status.jobStatus.savepointInfo.lastSavepoint.location).
func restoredFrom(u *unstructured.Unstructured) string {
	loc, _, _ := unstructured.NestedString(u.Object, "status", "jobStatus", "savepointInfo", "lastSavepoint", "location")
	return loc
}

// waitKyvernoMutated waits for the Event with which member's Kyverno says
// that its policy mutated FlinkDeployment ns/name (success Events are on,
// see internal/localenv/kyverno.go; they are about the cluster-scoped
// ClusterPolicy, so they land in the namespace default).
func waitKyvernoMutated(t *testing.T, member, ns, name string) {
	t.Helper()
	cs := clientsetFor(t, memberConfig(t, member))
	want := fmt.Sprintf("FlinkDeployment %s/%s is successfully mutated", ns, name)
	eventually(t, 30*time.Second, describe("Kyverno's %q Event in %s", want, member), func(ctx context.Context) (bool, string, error) {
		evs, err := eventsFor(ctx, cs, metav1.NamespaceDefault, "ClusterPolicy", flinkRestorePolicy)
		if err != nil {
			return false, "", err
		}
		for _, e := range evs {
			if e.Reason == "PolicyApplied" && e.Message == want {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d Events about %s, none for %s/%s", len(evs), flinkRestorePolicy, ns, name), nil
	})
}
