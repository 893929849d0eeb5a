package localenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/lifeboat-dev/lifeboat/examples"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/components"
)

// KyvernoNamespace is where each member's Kyverno keeps its configuration,
// certificates and leader-election lease.
const KyvernoNamespace = "kyverno"

// Names of the Secrets in which Kyverno keeps its own CA and serving
// certificate (it creates them itself; the names are Kyverno's defaults).
const (
	kyvernoService       = "kyverno-svc"
	kyvernoCASecret      = kyvernoService + "." + KyvernoNamespace + ".svc.kyverno-tls-ca"
	kyvernoTLSSecret     = kyvernoService + "." + KyvernoNamespace + ".svc.kyverno-tls-pair"
	kyvernoResourceHooks = "kyverno-resource-mutating-webhook-cfg"
	kyvernoConfigMap     = "kyverno"
)

// KyvernoComponent is the name of member's Kyverno component.
func KyvernoComponent(member string) string { return member + "-kyverno" }

// clusterPolicyGVR is Kyverno's ClusterPolicy resource.
var clusterPolicyGVR = schema.GroupVersionResource{Group: "kyverno.io", Version: "v1", Resource: "clusterpolicies"}

// kyvernoArgs are the flags of one member's Kyverno admission controller,
// run outside the cluster: its webhooks are registered with URLs on
// loopback (serverIP), and everything the Flink restore policy does not
// need is off, to keep three of them light on a 2-core machine.
func kyvernoArgs(kubeconfig string, port int) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		// Out of a cluster: the API server calls https://serverIP/... and
		// Kyverno's self-signed certificate carries that IP.
		"--serverIP=127.0.0.1:" + strconv.Itoa(port),
		"--webhookServerHost=127.0.0.1",
		"--webhookServerPort=" + strconv.Itoa(port),
		"--caSecretName=" + kyvernoCASecret,
		"--tlsSecretName=" + kyvernoTLSSecret,
		// Off: admission reports, ValidatingAdmissionPolicy generation,
		// the image verification cache, PolicyExceptions, the metrics
		// exporters and their servers, and the Events for policies skipped
		// by a precondition. PolicyApplied Events stay: they show who
		// mutated an object. (Background scans and reports belong to
		// Kyverno's other controllers, which do not run here.)
		"--admissionReports=false",
		"--generateValidatingAdmissionPolicy=false",
		"--imageVerifyCacheEnabled=false",
		"--enablePolicyException=false",
		"--disableMetrics=true",
		"--otelConfig=none",
		"--controllerRuntimeMetricsAddress=0",
		"--omitEvents=PolicySkipped",
		"--maxAuditWorkers=1",
		"--disableLogColor",
		"--v=1",
	}
}

// kyvernoEnv names the namespace, Service, Deployment, Pod and service
// account Kyverno believes it runs as (it refuses to start without them;
// none exists but the namespace) and its two configuration ConfigMaps (the
// metrics one is absent: Kyverno's defaults apply).
func kyvernoEnv(member string) []string {
	return []string{
		"KYVERNO_NAMESPACE=" + KyvernoNamespace,
		"KYVERNO_SVC=" + kyvernoService,
		"KYVERNO_DEPLOYMENT=kyverno",
		"KYVERNO_POD_NAME=" + KyvernoComponent(member),
		"KYVERNO_SERVICEACCOUNT_NAME=kyverno",
		"INIT_CONFIG=" + kyvernoConfigMap,
		"METRICS_CONFIG=kyverno-metrics",
	}
}

// startKyverno runs Kyverno's admission controller against member c and
// installs the shipped Flink restore ClusterPolicy there:
//  1. crds, Kyverno's and the FlinkDeployment CRD (the policy's kind must
//     exist for Kyverno to accept it), applied server-side;
//  2. the namespace kyverno and Kyverno's configuration ConfigMap;
//  3. the kyverno process, recorded like every component, until its
//     readiness endpoint answers;
//  4. the ClusterPolicy, until Kyverno reports it Ready and its mutating
//     webhook for FlinkDeployments is registered.
func (u *upper) startKyverno(ctx context.Context, c ClusterInfo, crds []*apiextensionsv1.CustomResourceDefinition) error {
	if err := applyCRDs(ctx, u.state, c.Name, crds); err != nil {
		return err
	}
	cfg, err := u.state.RESTConfig(c.Name)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KyvernoNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s in %s: %w", KyvernoNamespace, c.Name, err)
	}
	// Kyverno's configuration (INIT_CONFIG): its defaults, plus an Event
	// on every object it mutates, so that a user (and the e2e suite) can
	// see that Kyverno, and nothing else, changed it.
	config := corev1ac.ConfigMap(kyvernoConfigMap, KyvernoNamespace).WithData(map[string]string{
		"generateSuccessEvents": "true",
		"successEventActions":   "Resource Mutated",
	})
	if _, err := cs.CoreV1().ConfigMaps(KyvernoNamespace).Apply(ctx, config, metav1.ApplyOptions{FieldManager: "lifeboat", Force: true}); err != nil {
		return fmt.Errorf("applying ConfigMap %s/%s in %s: %w", KyvernoNamespace, kyvernoConfigMap, c.Name, err)
	}

	port, err := freePort()
	if err != nil {
		return err
	}
	comp := Component{
		Name:    KyvernoComponent(c.Name),
		Cluster: c.Name,
		Binary:  u.bins.Path(components.Kyverno),
		Args:    kyvernoArgs(filepath.Join(u.state.Dir, c.Name, "kubeconfig"), port),
		Env:     kyvernoEnv(c.Name),
		// Ready once its serving certificate is issued and valid.
		Health: "https://127.0.0.1:" + strconv.Itoa(port) + "/health/readiness",
	}
	if err := u.start(ctx, comp, healthCheck{insecure: true}, 3*time.Minute); err != nil {
		return err
	}

	// Applying a kyverno.io/v1 ClusterPolicy draws a deprecation warning
	// (see the policy file's comment); it is no news at every start.
	quiet := rest.CopyConfig(cfg)
	quiet.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(quiet)
	if err != nil {
		return err
	}
	name, err := applyClusterPolicy(ctx, dyn, examples.FlinkKyvernoClusterPolicy)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	log := filepath.Join(u.state.Dir, "logs", comp.Name+".log")
	if err := waitPolicyServed(ctx, cs, dyn, name, "flinkdeployments", 2*time.Minute); err != nil {
		return fmt.Errorf("%s: %w\n--- last lines of %s ---\n%s", comp.Name, err, log, logTail(log, 25))
	}
	return nil
}

// startKyvernos runs startKyverno for every member at once.
func (u *upper) startKyvernos(ctx context.Context, members []ClusterInfo) error {
	crds, err := kyvernoCRDs(u.bins.Path(components.KyvernoCRDs))
	if err != nil {
		return err
	}
	flink := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(examples.FlinkDeploymentCRD, flink); err != nil {
		return fmt.Errorf("parsing the FlinkDeployment CRD: %w", err)
	}
	crds = append(crds, flink)
	return u.parallel(members, func(c ClusterInfo) error { return u.startKyverno(ctx, c, crds) })
}

// kyvernoCRDs reads every CRD manifest under dir (Kyverno's config/crds).
func kyvernoCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing Kyverno's CRDs: %w", err)
	}
	sort.Strings(files)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading Kyverno CRD: %w", err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			if len(bytes.TrimSpace(bytes.TrimPrefix(doc, []byte("---")))) == 0 {
				continue
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(doc, crd); err != nil {
				return nil, fmt.Errorf("parsing %s: %w", f, err)
			}
			if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
				continue
			}
			crds = append(crds, crd)
		}
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CRDs found under %s", dir)
	}
	return crds, nil
}

// applyClusterPolicy server-side applies the ClusterPolicy manifest and
// returns its name.
func applyClusterPolicy(ctx context.Context, dyn dynamic.Interface, manifest []byte) (string, error) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(manifest, &obj.Object); err != nil {
		return "", fmt.Errorf("parsing the ClusterPolicy: %w", err)
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return "", err
	}
	force := true
	// Kyverno validates policies in a webhook of its own; right after it
	// starts, a create can still meet that webhook before it is served.
	var last error
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = dyn.Resource(clusterPolicyGVR).Patch(ctx, obj.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: "lifeboat", Force: &force})
		if apierrors.IsInvalid(last) || apierrors.IsBadRequest(last) {
			return false, last // the policy itself is wrong: retrying cannot help
		}
		return last == nil, nil
	})
	if err != nil {
		return "", fmt.Errorf("applying ClusterPolicy %s: %w", obj.GetName(), errors.Join(err, last))
	}
	return obj.GetName(), nil
}

// waitPolicyServed waits until Kyverno reports the ClusterPolicy Ready and
// its resource mutating webhook names resource, so that the next admission
// of that resource is mutated.
func waitPolicyServed(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, name, resource string, timeout time.Duration) error {
	var seen string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := dyn.Resource(clusterPolicyGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			seen = err.Error()
			return false, nil
		}
		if ok, why := policyReady(p); !ok {
			seen = "ClusterPolicy " + name + " not Ready: " + why
			return false, nil
		}
		hooks, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, kyvernoResourceHooks, metav1.GetOptions{})
		if err != nil {
			seen = "mutating webhook configuration " + kyvernoResourceHooks + ": " + err.Error()
			return false, nil
		}
		if !webhooksName(hooks.Webhooks, resource) {
			seen = "mutating webhook configuration " + kyvernoResourceHooks + " has no rule for " + resource + " yet"
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("ClusterPolicy %s is not served: %s: %w", name, seen, err)
	}
	return nil
}

// policyReady reads a Kyverno policy's Ready condition.
func policyReady(p *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		msg, _ := m["message"].(string)
		return m["status"] == string(metav1.ConditionTrue), fmt.Sprintf("%v: %s", m["reason"], msg)
	}
	return false, "no Ready condition yet"
}

func webhooksName(hooks []admissionregistrationv1.MutatingWebhook, resource string) bool {
	for _, h := range hooks {
		for _, r := range h.Rules {
			for _, res := range r.Resources {
				if res == resource || strings.HasPrefix(res, resource+"/") {
					return true
				}
			}
		}
	}
	return false
}

// HasKyverno reports whether the environment was started with Kyverno.
func (s *State) HasKyverno() bool {
	for _, m := range s.Members() {
		for _, c := range s.Components {
			if c.Name == KyvernoComponent(m) {
				return true
			}
		}
	}
	return false
}
