//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	"github.com/lifeboat-dev/lifeboat/internal/localenv/components"
)

// TestHostChartRenderedAndApplied: the chart installed and upgraded the way
// Argo CD or Kustomize do it, by rendering it without the cluster and
// applying the rendering. The credentials are made once from the chart's
// own secrets.yaml; with credentials.generate=false every rendering of the
// same values is the same and holds no Secret, the control plane comes up
// from it (the init Job completes, every Deployment is Ready), applying the
// same rendering again changes nothing, and a rendering with a new image
// names a new init Job, which completes; applied with pruning by the
// release's label, it removes the old Job and leaves the credentials as made.
// That control plane writes the API server's audit log with the chart's
// default policy (assertAuditLog).
func TestHostChartRenderedAndApplied(t *testing.T) {
	needsHost(t)
	ctx := context.Background()
	cs, err := hostClientset(host.env)
	if err != nil {
		t.Fatal(err)
	}
	const release, ns = "rendered", "lifeboat-rendered"
	kubeconfig := host.env.KubeconfigPath()
	hostCtl := func(args ...string) string {
		return kubectl(t, kubeconfig, append([]string{"--context", localenv.HostClusterName, "-n", ns}, args...)...)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	})
	// The suite's values but a ClusterIP Service (the suite's release has
	// the node port), and the API server's audit log.
	values := func(imageRef string, extra ...string) []string {
		return hostValues(imageRef, append([]string{"apiServer.service.type=ClusterIP", "apiServer.service.nodePort=0", "apiServer.audit.enabled=true"}, extra...)...)
	}
	render := func(imageRef string, extra ...string) string {
		t.Helper()
		args := append([]string{"template", release, chartDir(), "--namespace", ns, "--kube-version", components.KubernetesVersion}, values(imageRef, extra...)...)
		out, err := helmCmd(ctx, host.env, host.helm, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	write := func(name, content string) string {
		f := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}

	// Once: the credentials, from the chart's own template.
	credsArgs := append([]string{"template", release, chartDir(), "--namespace", ns, "--kube-version", components.KubernetesVersion,
		"--show-only", "templates/secrets.yaml"}, values(host.imageRef)...)
	creds, err := helmCmd(ctx, host.env, host.helm, credsArgs...)
	if err != nil {
		t.Fatal(err)
	}
	hostCtl("create", "-f", write("credentials.yaml", creds))
	pki, err := cs.CoreV1().Secrets(ns).Get(ctx, release+"-lifeboat-pki", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Every time: the rest, rendered without the cluster.
	first := render(host.imageRef, "credentials.generate=false")
	if again := render(host.imageRef, "credentials.generate=false"); again != first {
		t.Fatalf("two renderings of the same values differ:\n%s\n---\n%s", first, again)
	}
	if regexp.MustCompile(`(?m)^kind: Secret$`).MatchString(first) {
		t.Fatalf("the rendering with credentials.generate=false holds a Secret:\n%s", first)
	}
	job := initJobName(t, first)
	start := time.Now()
	rendered := write("rendered.yaml", first)
	hostCtl("apply", "-f", rendered)
	waitRenderedControlPlane(t, cs, ns, job, host.imageRef)
	t.Logf("applied rendering until the init Job completed and every Deployment was Ready: %s", time.Since(start).Round(100*time.Millisecond))
	assertAuditLog(t, cs, ns)

	// Applied again, as a tool that syncs does: no object changes. (kubectl
	// says "configured" for some that it patches with what they hold, a
	// PodDisruptionBudget's selector, a StatefulSet's claim templates, and
	// the API server keeps them as they are.)
	versions := func() string {
		return hostCtl("get", "-f", rendered, "-o", `jsonpath={range .items[*]}{.kind}/{.metadata.name} generation {.metadata.generation} version {.metadata.resourceVersion}{"\n"}{end}`)
	}
	before := versions()
	hostCtl("apply", "-f", rendered)
	if after := versions(); !sameSpecs(before, after) {
		t.Errorf("applying the same rendering again changed objects:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// A new image: a new init Job, which completes; the credentials stay.
	newRef := loadRetagged(t, "e2e-rendered")
	next := render(newRef, "credentials.generate=false")
	newJob := initJobName(t, next)
	if newJob == job {
		t.Fatalf("the rendering with image %s names the same init Job %s", newRef, job)
	}
	// Applied with pruning by the release's label, as docs/install.md
	// suggests: the old Job goes, the credentials, applied by hand and in
	// no rendering, stay.
	start = time.Now()
	hostCtl("apply", "-f", write("rendered-next.yaml", next), "--prune", "-l", "app.kubernetes.io/instance="+release)
	waitRenderedControlPlane(t, cs, ns, newJob, newRef)
	t.Logf("applied the new image's rendering until its init Job completed and every Deployment was Ready: %s", time.Since(start).Round(100*time.Millisecond))
	after, err := cs.CoreV1().Secrets(ns).Get(ctx, pki.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the credentials after an apply that prunes: %v", err)
	}
	if after.ResourceVersion != pki.ResourceVersion {
		t.Errorf("secret %s changed (resourceVersion %s, made as %s): the renderings must leave the credentials alone", pki.Name, after.ResourceVersion, pki.ResourceVersion)
	}
	secrets, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "lifeboat.dev/credentials-of=" + release})
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 6 {
		t.Errorf("%d credential Secrets after an apply that prunes, want the 6 made", len(secrets.Items))
	}
	eventually(t, time.Minute, "the old init Job "+job+" pruned", func(ctx context.Context) (bool, string, error) {
		_, err := cs.BatchV1().Jobs(ns).Get(ctx, job, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", err
	})
}

// assertAuditLog checks the audit log of the API server in ns, written
// with the chart's default policy: the init Job's writes of the CRDs are
// there, with their user, and so are the controller manager's requests;
// no event holds a request's or response's body; the controller manager's
// renewals of its Lease, every few seconds, are not there.
func assertAuditLog(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	type auditEvent struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Level      string `json:"level"`
		Stage      string `json:"stage"`
		Verb       string `json:"verb"`
		User       struct {
			Username string `json:"username"`
		} `json:"user"`
		ObjectRef *struct {
			Resource string `json:"resource"`
			Name     string `json:"name"`
		} `json:"objectRef"`
		RequestObject  json.RawMessage `json:"requestObject"`
		ResponseObject json.RawMessage `json:"responseObject"`
	}
	eventually(t, 2*time.Minute, "the API server's audit log with the CRDs' writes and the controller manager's requests", func(ctx context.Context) (bool, string, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=apiserver"})
		if err != nil || len(pods.Items) == 0 {
			return false, "no API server pod", err
		}
		var events, crdWrites, cmRequests, leaseRenewals, bodies int
		var lines []string
		for _, p := range pods.Items {
			logs, err := cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil {
				return false, "", err
			}
			for _, line := range strings.Split(string(logs), "\n") {
				var e auditEvent
				if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.APIVersion != "audit.k8s.io/v1" || e.Kind != "Event" {
					continue
				}
				events++
				if e.Level != "Metadata" || e.Stage == "RequestReceived" || len(e.RequestObject) > 0 || len(e.ResponseObject) > 0 {
					bodies++
					lines = append(lines, line)
				}
				resource := ""
				if e.ObjectRef != nil {
					resource = e.ObjectRef.Resource
				}
				switch {
				case resource == "customresourcedefinitions" && e.Verb != "get" && e.Verb != "list" && e.Verb != "watch" && e.User.Username != "":
					crdWrites++
				case resource == "leases" && (e.Verb == "update" || e.Verb == "patch"):
					leaseRenewals++
					lines = append(lines, line)
				}
				if e.User.Username == "system:lifeboat:controller-manager" {
					cmRequests++
				}
			}
		}
		seen := fmt.Sprintf("%d audit events: %d writes of CRDs, %d requests of the controller manager, %d Lease renewals, %d not at Metadata level when complete", events, crdWrites, cmRequests, leaseRenewals, bodies)
		if leaseRenewals > 0 || bodies > 0 {
			t.Fatalf("%s; the default policy must leave out Lease renewals and every body:\n%s", seen, strings.Join(lines[:min(len(lines), 5)], "\n"))
		}
		return crdWrites > 0 && cmRequests > 0, seen, nil
	})
}

// sameSpecs compares lines "KIND/NAME generation G version V": an object
// with a generation by it (its status may change meanwhile), one without by
// its resourceVersion.
func sameSpecs(before, after string) bool {
	key := func(line string) string {
		f := strings.Fields(line)
		if len(f) == 5 && f[2] != "" && f[2] != "0" {
			return f[0] + " " + f[2]
		}
		return line
	}
	b, a := strings.Split(strings.TrimSpace(before), "\n"), strings.Split(strings.TrimSpace(after), "\n")
	if len(a) != len(b) {
		return false
	}
	for i := range b {
		if key(b[i]) != key(a[i]) {
			return false
		}
	}
	return true
}

// initJobName is the init Job's name in a rendering.
func initJobName(t *testing.T, rendering string) string {
	t.Helper()
	for _, doc := range strings.Split(rendering, "\n---\n") {
		if !strings.Contains(doc, "\nkind: Job\n") {
			continue
		}
		if m := regexp.MustCompile(`(?m)^  name: (\S+-init-[0-9a-f]{8})$`).FindStringSubmatch(doc); m != nil {
			return m[1]
		}
	}
	t.Fatalf("no init Job named NAME-init-HASH in the rendering:\n%s", rendering)
	return ""
}

// waitRenderedControlPlane waits until the init Job named job has
// completed and every Deployment in ns is Ready with all its replicas
// updated, the controller manager's running image.
func waitRenderedControlPlane(t *testing.T, cs kubernetes.Interface, ns, job, image string) {
	t.Helper()
	eventually(t, 5*time.Minute, "the init Job "+job+" complete and every Deployment Ready on "+image, func(ctx context.Context) (bool, string, error) {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, job, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		complete := false
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				complete = true
			}
		}
		deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		ready := len(deps.Items) > 0
		seen := []string{fmt.Sprintf("job %s complete %t (failed %d)", job, complete, j.Status.Failed)}
		for _, d := range deps.Items {
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			ok := d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == want && d.Status.ReadyReplicas == want && d.Status.Replicas == want
			if d.Spec.Template.Labels["app.kubernetes.io/component"] == "controller-manager" && d.Spec.Template.Spec.Containers[0].Image != image {
				ok = false
			}
			ready = ready && ok
			seen = append(seen, fmt.Sprintf("%s %d/%d ready, %d updated", d.Name, d.Status.ReadyReplicas, want, d.Status.UpdatedReplicas))
		}
		return complete && ready, strings.Join(seen, "; "), nil
	})
}
