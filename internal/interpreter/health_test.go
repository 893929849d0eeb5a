package interpreter

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
)

const (
	healthy   = workv1alpha1.ResourceHealthy
	unhealthy = workv1alpha1.ResourceUnhealthy
)

// deployment is a member Deployment at generation gen wanting replicas.
func deployment(gen int64, replicas int, status map[string]any) *unstructured.Unstructured {
	w := makeObj(deploymentGVK, "web").generation(gen).set("spec.replicas", replicas)
	if status != nil {
		w.status(status)
	}
	return w.obj()
}

func TestInterpretHealth(t *testing.T) {
	ready := []any{map[string]any{"type": "Ready", "status": "True"}}
	notReady := []any{map[string]any{"type": "Ready", "status": "False"}}
	tests := map[string]struct {
		obj  *unstructured.Unstructured
		want workv1alpha1.ResourceHealth
	}{
		"deployment fully available": {
			obj:  deployment(2, 2, map[string]any{"observedGeneration": 2, "updatedReplicas": 2, "availableReplicas": 2}),
			want: healthy,
		},
		"deployment whose pods cannot become ready (0/2 available, generation observed)": {
			obj:  deployment(2, 2, map[string]any{"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "unavailableReplicas": 2}),
			want: unhealthy,
		},
		"deployment not yet observed at its generation": {
			obj:  deployment(3, 2, map[string]any{"observedGeneration": 2, "updatedReplicas": 2, "availableReplicas": 2}),
			want: unhealthy,
		},
		"deployment without status": {
			obj:  deployment(1, 2, nil),
			want: unhealthy,
		},
		"deployment mid-rollout": {
			obj:  deployment(2, 3, map[string]any{"observedGeneration": 2, "updatedReplicas": 1, "availableReplicas": 3}),
			want: unhealthy,
		},
		"deployment scaled to zero": {
			obj:  deployment(2, 0, map[string]any{"observedGeneration": 2}),
			want: healthy,
		},
		"statefulset ready": {
			obj: makeObj(statefulSetGVK, "db").generation(1).set("spec.replicas", 3).
				status(map[string]any{"observedGeneration": 1, "updatedReplicas": 3, "availableReplicas": 3}).obj(),
			want: healthy,
		},
		"statefulset with an unavailable pod": {
			obj: makeObj(statefulSetGVK, "db").generation(1).set("spec.replicas", 3).
				status(map[string]any{"observedGeneration": 1, "updatedReplicas": 3, "availableReplicas": 2}).obj(),
			want: unhealthy,
		},
		"statefulset generation lag": {
			obj: makeObj(statefulSetGVK, "db").generation(2).set("spec.replicas", 1).
				status(map[string]any{"observedGeneration": 1, "updatedReplicas": 1, "availableReplicas": 1}).obj(),
			want: unhealthy,
		},
		"replicaset available": {
			obj:  makeObj(replicaSetGVK, "rs").generation(1).set("spec.replicas", 2).status(map[string]any{"observedGeneration": 1, "availableReplicas": 2}).obj(),
			want: healthy,
		},
		"replicaset short of replicas": {
			obj:  makeObj(replicaSetGVK, "rs").generation(1).set("spec.replicas", 2).status(map[string]any{"observedGeneration": 1, "availableReplicas": 1}).obj(),
			want: unhealthy,
		},
		"replicaset without replicas wants one": {
			obj:  makeObj(replicaSetGVK, "rs").generation(1).status(map[string]any{"observedGeneration": 1}).obj(),
			want: unhealthy,
		},
		"daemonset up to date": {
			obj: makeObj(daemonSetGVK, "ds").generation(1).status(map[string]any{
				"observedGeneration": 1, "desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberAvailable": 3}).obj(),
			want: healthy,
		},
		"daemonset rolling": {
			obj: makeObj(daemonSetGVK, "ds").generation(1).status(map[string]any{
				"observedGeneration": 1, "desiredNumberScheduled": 3, "updatedNumberScheduled": 2, "numberAvailable": 3}).obj(),
			want: unhealthy,
		},
		"daemonset generation lag": {
			obj:  makeObj(daemonSetGVK, "ds").generation(2).status(map[string]any{"observedGeneration": 1}).obj(),
			want: unhealthy,
		},
		"job complete": {
			obj:  makeObj(jobGVK, "batch").status(map[string]any{"succeeded": 1, "conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}).obj(),
			want: healthy,
		},
		"job failed": {
			obj: makeObj(jobGVK, "batch").status(map[string]any{"failed": 7, "conditions": []any{
				map[string]any{"type": "FailureTarget", "status": "True"}, map[string]any{"type": "Failed", "status": "True"}}}).obj(),
			want: unhealthy,
		},
		"job about to fail": {
			obj:  makeObj(jobGVK, "batch").status(map[string]any{"active": 1, "ready": 1, "conditions": []any{map[string]any{"type": "FailureTarget", "status": "True"}}}).obj(),
			want: unhealthy,
		},
		"job running with ready pods": {
			obj:  makeObj(jobGVK, "batch").status(map[string]any{"active": 2, "ready": 1, "failed": 1}).obj(),
			want: healthy,
		},
		"job whose pods cannot start": {
			obj:  makeObj(jobGVK, "batch").status(map[string]any{"active": 1, "ready": 0}).obj(),
			want: unhealthy,
		},
		"job on a member that does not report ready pods": {
			obj:  makeObj(jobGVK, "batch").status(map[string]any{"active": 1}).obj(),
			want: healthy,
		},
		"job not started (suspended or no status)": {
			obj:  makeObj(jobGVK, "batch").obj(),
			want: healthy,
		},
		"pod running and ready": {
			obj:  makeObj(podGVK, "p").status(map[string]any{"phase": "Running", "conditions": ready}).obj(),
			want: healthy,
		},
		"pod running, not ready": {
			obj:  makeObj(podGVK, "p").status(map[string]any{"phase": "Running", "conditions": notReady}).obj(),
			want: unhealthy,
		},
		"pod succeeded": {
			obj:  makeObj(podGVK, "p").status(map[string]any{"phase": "Succeeded"}).obj(),
			want: healthy,
		},
		"pod pending": {
			obj:  makeObj(podGVK, "p").status(map[string]any{"phase": "Pending"}).obj(),
			want: unhealthy,
		},
		"pod failed": {
			obj:  makeObj(podGVK, "p").status(map[string]any{"phase": "Failed"}).obj(),
			want: unhealthy,
		},
		"pvc bound": {
			obj:  makeObj(pvcGVK, "data").status(map[string]any{"phase": "Bound"}).obj(),
			want: healthy,
		},
		"pvc pending": {
			obj:  makeObj(pvcGVK, "data").status(map[string]any{"phase": "Pending"}).obj(),
			want: unhealthy,
		},
		"clusterIP service": {
			obj:  makeObj(serviceGVK, "svc").obj(),
			want: healthy,
		},
		"load balancer with an address": {
			obj: makeObj(serviceGVK, "svc").set("spec.type", "LoadBalancer").
				status(map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "1.2.3.4"}}}}).obj(),
			want: healthy,
		},
		"load balancer waiting for an address": {
			obj:  makeObj(serviceGVK, "svc").set("spec.type", "LoadBalancer").obj(),
			want: unhealthy,
		},
		"load balancer with an empty ingress entry": {
			obj: makeObj(serviceGVK, "svc").set("spec.type", "LoadBalancer").
				status(map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ports": []any{}}}}}).obj(),
			want: unhealthy,
		},
		"ingress with a hostname": {
			obj:  makeObj(ingressGVK, "ing").status(map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"hostname": "lb"}}}}).obj(),
			want: healthy,
		},
		"ingress without an address": {
			obj:  makeObj(ingressGVK, "ing").obj(),
			want: unhealthy,
		},
		"pdb satisfied": {
			obj:  makeObj(pdbGVK, "pdb").status(map[string]any{"currentHealthy": 2, "desiredHealthy": 2}).obj(),
			want: healthy,
		},
		"pdb short of healthy pods": {
			obj:  makeObj(pdbGVK, "pdb").status(map[string]any{"currentHealthy": 1, "desiredHealthy": 2}).obj(),
			want: unhealthy,
		},
		"configmap is healthy once it exists": {
			obj:  makeObj(configMapGVK, "cfg").obj(),
			want: healthy,
		},
		"unknown custom kind is healthy once it exists": {
			obj:  makeObj(schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Widget"}, "w").status(map[string]any{"phase": "Broken"}).obj(),
			want: healthy,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := NewDefault().InterpretHealth(tc.obj)
			if err != nil {
				t.Fatalf("InterpretHealth: %v", err)
			}
			if got != tc.want {
				t.Errorf("InterpretHealth = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestInterpretHealthOfMalformedObjectIsUnknown(t *testing.T) {
	obj := makeObj(deploymentGVK, "web").set("status.availableReplicas", "many").obj()
	got, err := NewDefault().InterpretHealth(obj)
	if err == nil || got != workv1alpha1.ResourceUnknown {
		t.Errorf("InterpretHealth = %s, %v; want Unknown and an error", got, err)
	}
}
