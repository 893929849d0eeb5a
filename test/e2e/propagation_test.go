//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

const propagationTimeout = 90 * time.Second

// The seed's nginx policy and Deployment (application failover part
// included, unchanged) land on exactly one member, healthy, with status
// flowing back to the binding and the template.
func TestSeedNginxPropagates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t, "seed-nginx")
	cp := clientFor(t, controlPlaneConfig(t))
	ms := members(t)
	applyFile(t, ns, "seeds/000-nginx.yaml")

	var placed string
	eventually(t, propagationTimeout, "binding nginx-deployment scheduled to one member, applied and Healthy", func(ctx context.Context) (bool, string, error) {
		rb, err := getBinding(ctx, cp, ns, "nginx-deployment")
		if err != nil {
			return false, "", err
		}
		clusters := scheduledClusters(rb)
		if len(clusters) != 1 {
			return false, fmt.Sprintf("scheduled to %v", clusters), nil
		}
		placed = clusters[0]
		item := aggregatedItem(rb, placed)
		if item == nil {
			return false, fmt.Sprintf("scheduled to %s, no aggregated status yet", placed), nil
		}
		return item.Applied && item.Health == workv1alpha2.ResourceHealthy && reflectedInt(item, "readyReplicas") == 2,
			fmt.Sprintf("%s: applied=%v health=%s readyReplicas=%d", placed, item.Applied, item.Health, reflectedInt(item, "readyReplicas")), nil
	})
	if !slices.Contains(memberNames, placed) {
		t.Fatalf("placed on %q, not one of %v", placed, memberNames)
	}

	ds, err := memberDeployments(ctx, ms, ns, "nginx")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[placed] == nil {
		t.Fatalf("nginx should exist only in %s; found %s", placed, summarizeDeployments(ds))
	}
	if ds[placed].Labels["karmada.io/managed"] != "true" {
		t.Errorf("member copy not labelled karmada.io/managed=true: %v", ds[placed].Labels)
	}

	// What a user sees with kubectl, as the seed shows it.
	out := kubectl(t, suite.state.KubeconfigPath(), "-n", ns, "get", "rb", "nginx-deployment", "-o", "yaml")
	for _, want := range []string{"applied: true", "health: Healthy", "clusterName: " + placed} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get rb -o yaml lacks %q:\n%s", want, out)
		}
	}

	// The template in the control plane carries the aggregated replica counts.
	eventually(t, 30*time.Second, "template status aggregated", func(ctx context.Context) (bool, string, error) {
		var d appsv1.Deployment
		if err := cp.Get(ctx, types.NamespacedName{Namespace: ns, Name: "nginx"}, &d); err != nil {
			return false, "", err
		}
		s := d.Status
		return s.Replicas == 2 && s.ReadyReplicas == 2 && s.AvailableReplicas == 2 && s.UpdatedReplicas == 2 && s.ObservedGeneration == d.Generation,
			fmt.Sprintf("%+v generation=%d", s, d.Generation), nil
	})
}

// The seed 004 OverridePolicy rewrites the image only in member1; that copy
// cannot become ready and reports Unhealthy, the other stays Healthy.
func TestOverridePolicyTargetsOneCluster(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "override")
	cp := clientFor(t, controlPlaneConfig(t))
	ms := members(t)
	applyFile(t, ns, "seeds/004-op.yaml")
	applyYAML(t, ns, `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
  placement:
    clusterAffinity:
      clusterNames: [member1, member2]
`)
	applyFile(t, ns, "seeds/004-deploy.yaml")

	eventually(t, propagationTimeout, "image overridden in member1 only", func(ctx context.Context) (bool, string, error) {
		ds, err := memberDeployments(ctx, ms, ns, "nginx")
		if err != nil {
			return false, "", err
		}
		ok := len(ds) == 2 && ds["member1"] != nil && ds["member2"] != nil &&
			ds["member1"].Spec.Template.Spec.Containers[0].Image == "fake/nginx" &&
			ds["member2"].Spec.Template.Spec.Containers[0].Image == "nginx"
		return ok, summarizeDeployments(ds), nil
	})
	eventually(t, propagationTimeout, "member1 Unhealthy, member2 Healthy", func(ctx context.Context) (bool, string, error) {
		rb, err := getBinding(ctx, cp, ns, "nginx-deployment")
		if err != nil {
			return false, "", err
		}
		m1, m2 := aggregatedItem(rb, "member1"), aggregatedItem(rb, "member2")
		if m1 == nil || m2 == nil {
			return false, fmt.Sprintf("aggregated: %+v", rb.Status.AggregatedStatus), nil
		}
		return m1.Health == workv1alpha2.ResourceUnhealthy && m2.Health == workv1alpha2.ResourceHealthy,
			fmt.Sprintf("member1=%s member2=%s", m1.Health, m2.Health), nil
	})
}

// Divided with static weights 2:1 splits replicas; scaling the template
// reaches the members; a copy deleted by hand comes back; deleting the
// template removes every member copy.
func TestDividedStaticWeights(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t, "divided")
	cp := clientFor(t, controlPlaneConfig(t))
	ms := members(t)
	applyYAML(t, ns, `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: web
  placement:
    clusterAffinity:
      clusterNames: [member1, member2]
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - targetCluster: {clusterNames: [member1]}
            weight: 2
          - targetCluster: {clusterNames: [member2]}
            weight: 1
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
`)
	split := func(want1, want2 int32) func(context.Context) (bool, string, error) {
		return func(ctx context.Context) (bool, string, error) {
			ds, err := memberDeployments(ctx, ms, ns, "web")
			if err != nil {
				return false, "", err
			}
			ok := len(ds) == 2 && ds["member1"] != nil && ds["member2"] != nil &&
				*ds["member1"].Spec.Replicas == want1 && *ds["member2"].Spec.Replicas == want2
			return ok, summarizeDeployments(ds), nil
		}
	}
	eventually(t, propagationTimeout, "3 replicas split 2/1", split(2, 1))

	kubectl(t, suite.state.KubeconfigPath(), "-n", ns, "scale", "deployment", "web", "--replicas=6")
	eventually(t, propagationTimeout, "6 replicas split 4/2", split(4, 2))

	if err := ms["member2"].AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting member2's copy by hand: %v", err)
	}
	eventually(t, propagationTimeout, "member2's copy restored", split(4, 2))

	// A Work deleted by hand while its binding places the cluster: the Work
	// is made again and adopts the copy, which runs on untouched (the same
	// object: a copy deleted and created again would have another UID).
	before, err := ms["member1"].AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	work := workOfBinding(t, cp, "member1", ns, "web-deployment")
	if err := cp.Delete(ctx, work); err != nil {
		t.Fatalf("deleting member1's Work by hand: %v", err)
	}
	eventually(t, propagationTimeout, "member1's Work made again and applied", func(ctx context.Context) (bool, string, error) {
		var w workv1alpha1.Work
		if err := cp.Get(ctx, client.ObjectKeyFromObject(work), &w); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		applied := meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkApplied)
		return w.UID != work.UID && applied, fmt.Sprintf("uid %s (deleted %s), applied %t", w.UID, work.UID, applied), nil
	})
	after, err := ms["member1"].AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("member1's copy after its Work was made again: %v", err)
	}
	if after.UID != before.UID {
		t.Errorf("member1's copy was deleted and created again (UID %s, then %s) when its Work was deleted while placed", before.UID, after.UID)
	}
	eventually(t, propagationTimeout, "still split 4/2", split(4, 2))

	if err := cp.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, propagationTimeout, "every member copy removed", func(ctx context.Context) (bool, string, error) {
		ds, err := memberDeployments(ctx, ms, ns, "web")
		if err != nil {
			return false, "", err
		}
		return len(ds) == 0, summarizeDeployments(ds), nil
	})
}

// A Deployment mounting a ConfigMap, with propagateDeps, brings the
// ConfigMap to the same member.
func TestPropagateDepsBringsConfigMap(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "deps")
	ms := members(t)
	applyYAML(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
data:
  greeting: hello
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: app
spec:
  propagateDeps: true
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: app
  placement:
    clusterAffinity:
      clusterNames: [member3]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 1
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers: [{name: app, image: nginx}]
      volumes:
        - name: config
          configMap: {name: app-config}
`)
	eventually(t, propagationTimeout, "ConfigMap app-config follows the Deployment to member3", func(ctx context.Context) (bool, string, error) {
		cm, err := ms["member3"].CoreV1().ConfigMaps(ns).Get(ctx, "app-config", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		if cm.Data["greeting"] != "hello" {
			return false, fmt.Sprintf("data %v", cm.Data), nil
		}
		_, err = ms["member3"].AppsV1().Deployments(ns).Get(ctx, "app", metav1.GetOptions{})
		return err == nil, fmt.Sprintf("deployment: %v", err), nil
	})
	for _, other := range []string{"member1", "member2"} {
		_, err := ms[other].CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap should not be in %s: %v", other, err)
		}
	}
}

// Bad input never crash-loops: a policy for a kind that is not served gets a
// Warning Event, and a placement nothing satisfies gets a Scheduled=False
// condition and an Event that say why.
func TestBadInputIsReported(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "bad-input")
	cp := clientFor(t, controlPlaneConfig(t))
	cs := clientsetFor(t, controlPlaneConfig(t))
	applyYAML(t, ns, `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: no-such-kind
spec:
  resourceSelectors:
    - apiVersion: example.io/v1
      kind: Nope
  placement:
    clusterAffinity:
      clusterNames: [member1]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nowhere
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: lonely
  placement:
    clusterAffinity:
      clusterNames: [no-such-cluster]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: lonely
spec:
  replicas: 1
  selector: {matchLabels: {app: lonely}}
  template:
    metadata: {labels: {app: lonely}}
    spec:
      containers: [{name: app, image: nginx}]
`)
	eventually(t, propagationTimeout, "Warning Event on the policy selecting an unserved kind", func(ctx context.Context) (bool, string, error) {
		evs, err := eventsFor(ctx, cs, ns, "PropagationPolicy", "no-such-kind")
		if err != nil {
			return false, "", err
		}
		for _, e := range evs {
			if e.Type == "Warning" && strings.Contains(e.Message, "Nope") {
				return true, "", nil
			}
		}
		return false, summarizeEvents(evs), nil
	})
	eventually(t, propagationTimeout, "Scheduled=False with a reason, and an Event", func(ctx context.Context) (bool, string, error) {
		rb, err := getBinding(ctx, cp, ns, "lonely-deployment")
		if err != nil {
			return false, "", err
		}
		c := condition(rb.Status.Conditions, workv1alpha2.Scheduled)
		if c == nil || c.Status != metav1.ConditionFalse || c.Message == "" {
			return false, fmt.Sprintf("Scheduled condition: %+v", c), nil
		}
		evs, err := eventsFor(ctx, cs, ns, "ResourceBinding", "lonely-deployment")
		if err != nil {
			return false, "", err
		}
		for _, e := range evs {
			if e.Type == "Warning" {
				return true, "", nil
			}
		}
		return false, "condition ok; events: " + summarizeEvents(evs), nil
	})
	// The controller manager is still up: it did not crash on bad input.
	if out, err := lifeboat(t, "status", "--state-dir", suite.state.Dir); err != nil {
		t.Fatalf("lifeboat status after bad input: %v\n%s", err, out)
	}
}

// Many Deployments created and then scaled at once: the binding-status
// controller has a backlog, during which it writes each binding's status
// first and the template's on a later pass. Every template's status must
// still catch up with its copy, after the creation and after the change.
func TestManyTemplatesCatchUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 40
	ns := newNamespace(t, "many-templates")
	cp := clientFor(t, controlPlaneConfig(t))
	applyYAML(t, ns, `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: every-deployment
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
  placement:
    clusterAffinity:
      clusterNames: [member2]
`)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("web-%02d", i)
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names[i]},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": names[i]}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": names[i]}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
				},
			},
		}
		if err := cp.Create(ctx, d); err != nil {
			t.Fatalf("creating %s: %v", names[i], err)
		}
	}
	templatesShow := func(replicas int32) func(context.Context) (bool, string, error) {
		return func(ctx context.Context) (bool, string, error) {
			var list appsv1.DeploymentList
			if err := cp.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return false, "", err
			}
			var behind []string
			for _, d := range list.Items {
				s := d.Status
				if s.ObservedGeneration != d.Generation || s.Replicas != replicas || s.ReadyReplicas != replicas || s.AvailableReplicas != replicas {
					behind = append(behind, fmt.Sprintf("%s (generation %d: %+v)", d.Name, d.Generation, s))
				}
			}
			if len(list.Items) != n {
				return false, fmt.Sprintf("%d templates, want %d", len(list.Items), n), nil
			}
			if len(behind) > 0 {
				return false, fmt.Sprintf("%d of %d templates behind, first %s", len(behind), n, behind[0]), nil
			}
			return true, fmt.Sprintf("all %d templates show %d ready", n, replicas), nil
		}
	}
	eventually(t, 3*time.Minute, "every template's status shows its copy ready", templatesShow(1))

	for _, name := range names {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`))
		if err := cp.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, patch); err != nil {
			t.Fatalf("scaling %s: %v", name, err)
		}
	}
	eventually(t, 3*time.Minute, "every template's status shows its scaled copy ready", templatesShow(2))
}

// workOfBinding returns the Work of binding ns/name in cluster's execution
// namespace.
func workOfBinding(t *testing.T, cp client.Client, cluster, ns, name string) *workv1alpha1.Work {
	t.Helper()
	var works workv1alpha1.WorkList
	if err := cp.List(context.Background(), &works, client.InNamespace(clusterv1alpha1.ExecutionSpacePrefix+cluster)); err != nil {
		t.Fatal(err)
	}
	for i := range works.Items {
		a := works.Items[i].Annotations
		if a[workv1alpha2.ResourceBindingNamespaceAnnotationKey] == ns && a[workv1alpha2.ResourceBindingNameAnnotationKey] == name {
			return &works.Items[i]
		}
	}
	t.Fatalf("no Work of binding %s/%s in %s", ns, name, cluster)
	return nil
}
