//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
)

// undecodableGauge is the series of the gauge for PropagationPolicies.
const undecodableGauge = `lifeboat_undecodable_objects{group="policy.karmada.io",kind="PropagationPolicy"}`

// A PropagationPolicy whose spec.priority is past int32 cannot be decoded
// by the controllers. Stored as one written before the schema bounded it
// would be (straight into etcd), it must not stop propagation in other
// namespaces; it is reported (log line, Warning Event, gauge); a policy
// that becomes undecodable keeps its last version in force and its
// deletion, finalizer included, goes through; deleting the objects clears
// the gauge.
func TestUndecodablePolicyIsSkippedAndReported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cp := clientFor(t, controlPlaneConfig(t))
	ms := members(t)
	store := etcdOf(t, suite.state)
	base := undecodableCount(t)

	// 1. A new undecodable policy: served by the API server, never seen by
	// the controllers.
	badNS := newNamespace(t, "undecodable")
	store.put(t, policyKey(badNS, "too-high"), fmt.Sprintf(`{"apiVersion":"policy.karmada.io/v1alpha1","kind":"PropagationPolicy",`+
		`"metadata":{"name":"too-high","namespace":%q,"uid":%q,"creationTimestamp":%q,"generation":1},`+
		`"spec":{"priority":3000000000,"resourceSelectors":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web"}]}}`,
		badNS, uuid.NewUUID(), time.Now().UTC().Format(time.RFC3339)))
	if out := kubectl(t, suite.state.KubeconfigPath(), "-n", badNS, "get", "propagationpolicy", "too-high", "-o", "jsonpath={.spec.priority}"); out != "3000000000" {
		t.Fatalf("the API server serves too-high with priority %q, want 3000000000", out)
	}

	// 2. Propagation goes on elsewhere.
	okNS := newNamespace(t, "decodable")
	applyYAML(t, okNS, pinnedPolicyAndDeployment("web", "web"))
	waitInMember(t, ms, okNS, "web")

	// 3. too-high is reported.
	waitUndecodableCount(t, base+1)
	waitEvent(t, badNS, "PropagationPolicy", "too-high", corev1.EventTypeWarning, "DecodeFailed", "3000000000", "they see nothing of it")
	waitLogLine(t, `"msg":"object cannot be decoded; skipped"`, `"namespace":"`+badNS+`"`, `"name":"too-high"`, "3000000000")

	// 4. A policy that was decodable and is no longer: the controllers
	// keep acting on its last version, and its deletion goes through.
	laterNS := newNamespace(t, "undecodable-later")
	applyYAML(t, laterNS, pinnedPolicyAndDeployment("later", "kept"))
	waitInMember(t, ms, laterNS, "kept")
	eventually(t, 30*time.Second, "the detector's finalizer on policy later", func(ctx context.Context) (bool, string, error) {
		var pp policyv1alpha1.PropagationPolicy
		if err := cp.Get(ctx, types.NamespacedName{Namespace: laterNS, Name: "later"}, &pp); err != nil {
			return false, "", err
		}
		return len(pp.Finalizers) > 0, fmt.Sprintf("finalizers %v", pp.Finalizers), nil
	})
	store.update(t, policyKey(laterNS, "later"), func(obj map[string]any) {
		obj["spec"].(map[string]any)["priority"] = json.Number("3000000000")
	})
	waitUndecodableCount(t, base+2)
	waitEvent(t, laterNS, "PropagationPolicy", "later", corev1.EventTypeWarning, "DecodeFailed", "3000000000", "they see its last decodable version")

	deletePolicy(t, cp, laterNS, "later")
	waitPolicyGone(t, cp, laterNS, "later")
	// Deleting a policy releases its templates and keeps what they
	// propagated.
	ds, err := memberDeployments(ctx, ms, laterNS, "kept")
	if err != nil {
		t.Fatal(err)
	}
	if ds["member1"] == nil {
		t.Errorf("kept is gone from member1 after its policy was deleted: %s", summarizeDeployments(ds))
	}
	waitUndecodableCount(t, base+1)

	// 5. Deleting the never-seen policy works and clears the gauge.
	deletePolicy(t, cp, badNS, "too-high")
	waitPolicyGone(t, cp, badNS, "too-high")
	waitUndecodableCount(t, base)
}

// pinnedPolicyAndDeployment is a policy that places Deployment deploy on
// member1, and that Deployment.
func pinnedPolicyAndDeployment(policy, deploy string) string {
	return pinnedPolicy(policy, deploy, "member1", "") + fmt.Sprintf(`---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers: [{name: %[1]s, image: nginx}]
`, deploy)
}

func waitInMember(t *testing.T, ms map[string]kubernetes.Interface, ns, name string) {
	t.Helper()
	eventually(t, propagationTimeout, describe("Deployment %s/%s in member1", ns, name), func(ctx context.Context) (bool, string, error) {
		ds, err := memberDeployments(ctx, ms, ns, name)
		if err != nil {
			return false, "", err
		}
		return ds["member1"] != nil, summarizeDeployments(ds), nil
	})
}

// deletePolicy deletes a PropagationPolicy as kubectl would, without
// decoding it into its Go type (the answer holds the object).
func deletePolicy(t *testing.T, cp client.Client, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(policyv1alpha1.SchemeGroupVersion.WithKind("PropagationPolicy"))
	u.SetNamespace(ns)
	u.SetName(name)
	if err := cp.Delete(context.Background(), u); err != nil {
		t.Fatalf("deleting PropagationPolicy %s/%s: %v", ns, name, err)
	}
}

func waitPolicyGone(t *testing.T, cp client.Client, ns, name string) {
	t.Helper()
	eventually(t, 60*time.Second, describe("PropagationPolicy %s/%s gone", ns, name), func(ctx context.Context) (bool, string, error) {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(policyv1alpha1.SchemeGroupVersion.WithKind("PropagationPolicy"))
		err := cp.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, m)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, fmt.Sprintf("still there: deletionTimestamp %v, finalizers %v", m.DeletionTimestamp, m.Finalizers), nil
	})
}

// waitLogLine waits for a line of the controller manager's log holding
// every part.
func waitLogLine(t *testing.T, parts ...string) {
	t.Helper()
	eventually(t, 30*time.Second, describe("a controller manager log line with %q", parts), func(context.Context) (bool, string, error) {
		data, err := os.ReadFile(controllerLog(suite.state))
		if err != nil {
			return false, "", err
		}
		return lineHas(string(data), parts...), "no such line", nil
	})
}

// undecodableCount reads the gauge from the controller manager's metrics
// (0 while it has no series).
func undecodableCount(t *testing.T) float64 {
	t.Helper()
	n, err := readUndecodableCount(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func waitUndecodableCount(t *testing.T, want float64) {
	t.Helper()
	eventually(t, 30*time.Second, describe("%s = %v", undecodableGauge, want), func(ctx context.Context) (bool, string, error) {
		n, err := readUndecodableCount(ctx)
		if err != nil {
			return false, "", err
		}
		return n == want, fmt.Sprintf("%v", n), nil
	})
}

func readUndecodableCount(ctx context.Context) (float64, error) {
	addr := ""
	for _, c := range suite.state.Components {
		if c.Name != "lifeboat-controller-manager" {
			continue
		}
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--metrics-bind-address="); ok {
				addr = v
			}
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, undecodableGauge+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, nil
}

// policyKey is where the control plane's API server keeps a
// PropagationPolicy in etcd: <prefix>/<group>/<resource>/<namespace>/<name>.
func policyKey(ns, name string) string {
	return "/" + localenv.ControlPlaneName + "/policy.karmada.io/propagationpolicies/" + ns + "/" + name
}

// etcdKV reads and writes the environment's etcd through its JSON gateway
// (plain HTTP on loopback, no authentication, as `lifeboat up` runs it).
type etcdKV struct{ url string }

func etcdOf(t *testing.T, s *localenv.State) etcdKV {
	t.Helper()
	for _, c := range s.Components {
		if c.Name != "etcd" {
			continue
		}
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--listen-client-urls="); ok {
				return etcdKV{url: v}
			}
		}
	}
	t.Fatal("the environment has no etcd with --listen-client-urls")
	return etcdKV{}
}

func (e etcdKV) call(t *testing.T, path string, req, resp any) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r, err := (&http.Client{Timeout: 10 * time.Second}).Post(e.url+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("etcd %s: %v", path, err)
	}
	defer r.Body.Close()
	out, err := io.ReadAll(r.Body)
	if err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("etcd %s: %s %v: %s", path, r.Status, err, out)
	}
	if err := json.Unmarshal(out, resp); err != nil {
		t.Fatalf("etcd %s: %v: %s", path, err, out)
	}
}

func (e etcdKV) put(t *testing.T, key, value string) {
	t.Helper()
	var resp map[string]any
	e.call(t, "/v3/kv/put", map[string]string{
		"key":   base64.StdEncoding.EncodeToString([]byte(key)),
		"value": base64.StdEncoding.EncodeToString([]byte(value)),
	}, &resp)
}

// update rewrites the JSON object stored under key; numbers keep their
// exact value.
func (e etcdKV) update(t *testing.T, key string, change func(map[string]any)) {
	t.Helper()
	var resp struct {
		KVs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	e.call(t, "/v3/kv/range", map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))}, &resp)
	if len(resp.KVs) != 1 {
		t.Fatalf("etcd has no key %s", key)
	}
	raw, err := base64.StdEncoding.DecodeString(resp.KVs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		t.Fatalf("the value of %s is not JSON (%v): %q", key, err, raw)
	}
	change(obj)
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	e.put(t, key, string(out))
}
