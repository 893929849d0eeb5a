package interpreter

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

var widgetGVK = schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Widget"}

// A customization layer overriding one operation of one kind answers that
// operation; everything else falls through to the native rules.
func TestChainLayering(t *testing.T) {
	custom := RuleSet{
		deploymentGVK: {Health: func(*unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
			return workv1alpha1.ResourceHealthy, nil
		}},
		widgetGVK: {Replicas: func(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error) {
			n, _, err := unstructured.NestedInt64(obj.Object, "spec", "size")
			return int32(n), nil, err
		}},
	}
	chain := NewChain(custom, Native())
	notReady := deployment(1, 2, map[string]any{"observedGeneration": 1, "updatedReplicas": 2})

	if got, _ := chain.InterpretHealth(notReady); got != workv1alpha1.ResourceHealthy {
		t.Errorf("customized Deployment health = %s, want Healthy (customization first)", got)
	}
	if got, _ := NewDefault().InterpretHealth(notReady); got != workv1alpha1.ResourceUnhealthy {
		t.Errorf("native Deployment health = %s, want Unhealthy", got)
	}
	if replicas, _, ok, _ := chain.GetReplicas(notReady); !ok || replicas != 2 {
		t.Errorf("Deployment replicas = %d, %v; want native answer 2, true", replicas, ok)
	}
	widget := makeObj(widgetGVK, "w").set("spec.size", 4).obj()
	if replicas, _, ok, _ := chain.GetReplicas(widget); !ok || replicas != 4 {
		t.Errorf("Widget replicas = %d, %v; want 4, true from the customization", replicas, ok)
	}
	if got, _ := chain.InterpretHealth(widget); got != workv1alpha1.ResourceHealthy {
		t.Errorf("Widget health = %s, want the default Healthy", got)
	}
}

func TestChainWrapsRuleErrors(t *testing.T) {
	boom := errors.New("boom")
	chain := NewChain(RuleSet{widgetGVK: {
		Health: func(*unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
			return workv1alpha1.ResourceHealthy, boom
		},
	}})
	got, err := chain.InterpretHealth(makeObj(widgetGVK, "w").obj())
	if !errors.Is(err, boom) || got != workv1alpha1.ResourceUnknown {
		t.Errorf("InterpretHealth = %s, %v; want Unknown and the rule's error", got, err)
	}
}

// No operation may change its arguments, whatever the kind.
func TestOperationsDoNotModifyTheirInput(t *testing.T) {
	spec := everything()
	spec.Containers[0].Resources.Requests = resources("cpu=1")
	spec.NodeSelector = map[string]string{"a": "b"}
	objects := map[string]*unstructured.Unstructured{
		"deployment":  memberDeployment(1, 1, 1, 2, 1),
		"statefulset": makeObj(statefulSetGVK, "db").set("spec.replicas", 2).podSpec(spec).status(map[string]any{"replicas": 2}).obj(),
		"replicaset":  makeObj(replicaSetGVK, "rs").set("spec.replicas", 2).podSpec(spec).obj(),
		"daemonset":   makeObj(daemonSetGVK, "ds").podSpec(spec).obj(),
		"job": makeObj(jobGVK, "batch").set("spec.parallelism", 2).podSpec(spec).
			set("spec.template.metadata.labels", map[string]any{"a": "b"}).status(map[string]any{"active": 1}).obj(),
		"cronjob":        makeObj(cronJobGVK, "cron").podSpec(spec).obj(),
		"pod":            makeObj(podGVK, "p").podSpec(spec).status(map[string]any{"phase": "Running"}).obj(),
		"service":        makeObj(serviceGVK, "svc").set("spec.type", "NodePort").set("spec.clusterIP", "10.0.0.1").set("spec.ports", []any{map[string]any{"port": 80, "nodePort": 30000}}).obj(),
		"sa":             makeObj(serviceAcctGVK, "sa").set("secrets", []any{map[string]any{"name": "t"}}).obj(),
		"pvc":            makeObj(pvcGVK, "data").set("spec.volumeName", "pv").status(map[string]any{"phase": "Bound"}).obj(),
		"ingress":        makeObj(ingressGVK, "ing").set("spec.tls", []any{map[string]any{"secretName": "tls"}}).obj(),
		"pdb":            makeObj(pdbGVK, "pdb").status(map[string]any{"currentHealthy": 1}).obj(),
		"hpa":            makeObj(hpaGVK, "hpa").status(map[string]any{"currentReplicas": 1}).obj(),
		"custom":         makeObj(widgetGVK, "w").status(map[string]any{"phase": "x"}).obj(),
		"empty pod spec": makeObj(deploymentGVK, "web").podSpec(corev1.PodSpec{}).obj(),
	}
	in := NewDefault()
	for name, obj := range objects {
		t.Run(name, func(t *testing.T) {
			observed := obj.DeepCopy()
			before, beforeObserved := obj.DeepCopy(), observed.DeepCopy()
			items := []workv1alpha2.AggregatedStatusItem{reflected(t, "member1", observed)}
			beforeItems := items[0].Status.DeepCopy()

			_, _, _, _ = in.GetReplicas(obj)
			_, _ = in.ReviseReplica(obj, 7)
			_, _ = in.Retain(obj, observed)
			_, _ = in.ReflectStatus(obj)
			_, _ = in.InterpretHealth(obj)
			_, _ = in.AggregateStatus(obj, items)
			_, _ = in.GetDependencies(obj)

			if diff := cmp.Diff(before.Object, obj.Object); diff != "" {
				t.Errorf("input changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(beforeObserved.Object, observed.Object); diff != "" {
				t.Errorf("observed changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(beforeItems, items[0].Status); diff != "" {
				t.Errorf("status item changed (-before +after):\n%s", diff)
			}
		})
	}
}
