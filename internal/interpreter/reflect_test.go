package interpreter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

func TestReflectStatus(t *testing.T) {
	tests := map[string]struct {
		obj  *unstructured.Unstructured
		want any // nil: nothing reflected
	}{
		"deployment: counters, observedGeneration and both generations": {
			obj: makeObj(deploymentGVK, "web").generation(4).templateGeneration(2).status(map[string]any{
				"observedGeneration": 4, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1,
				"availableReplicas": 1, "unavailableReplicas": 1,
				"conditions": []any{map[string]any{"type": "Available", "status": "False"}},
			}).obj(),
			want: map[string]any{
				"generation": 4, "resourceTemplateGeneration": 2, "observedGeneration": 4, "replicas": 2,
				"updatedReplicas": 2, "readyReplicas": 1, "availableReplicas": 1, "unavailableReplicas": 1,
			},
		},
		"deployment without status still carries its generations": {
			obj:  makeObj(deploymentGVK, "web").generation(1).templateGeneration(1).obj(),
			want: map[string]any{"generation": 1, "resourceTemplateGeneration": 1},
		},
		"statefulset": {
			obj: makeObj(statefulSetGVK, "db").generation(2).templateGeneration(3).status(map[string]any{
				"observedGeneration": 2, "replicas": 3, "readyReplicas": 3, "currentReplicas": 3,
				"updatedReplicas": 3, "availableReplicas": 3, "currentRevision": "db-1",
			}).obj(),
			want: map[string]any{
				"generation": 2, "resourceTemplateGeneration": 3, "observedGeneration": 2, "replicas": 3,
				"readyReplicas": 3, "currentReplicas": 3, "updatedReplicas": 3, "availableReplicas": 3,
			},
		},
		"daemonset": {
			obj: makeObj(daemonSetGVK, "ds").generation(1).status(map[string]any{
				"observedGeneration": 1, "currentNumberScheduled": 2, "desiredNumberScheduled": 2, "numberMisscheduled": 0,
				"numberReady": 2, "updatedNumberScheduled": 2, "numberAvailable": 2,
			}).obj(),
			want: map[string]any{
				"generation": 1, "observedGeneration": 1, "currentNumberScheduled": 2, "desiredNumberScheduled": 2,
				"numberMisscheduled": 0, "numberReady": 2, "updatedNumberScheduled": 2, "numberAvailable": 2,
			},
		},
		"replicaset": {
			obj: makeObj(replicaSetGVK, "rs").generation(1).status(map[string]any{
				"observedGeneration": 1, "replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 1,
			}).obj(),
			want: map[string]any{
				"generation": 1, "observedGeneration": 1, "replicas": 2, "fullyLabeledReplicas": 2,
				"readyReplicas": 2, "availableReplicas": 1,
			},
		},
		"job": {
			obj: makeObj(jobGVK, "batch").status(map[string]any{
				"active": 1, "succeeded": 2, "failed": 1, "ready": 1, "startTime": "2025-01-01T00:00:00Z",
				"conditions": []any{map[string]any{"type": "Suspended", "status": "False",
					"lastProbeTime": nil, "lastTransitionTime": "2025-01-01T00:00:00Z"}},
			}).obj(),
			want: map[string]any{
				"active": 1, "succeeded": 2, "failed": 1, "startTime": "2025-01-01T00:00:00Z",
				"conditions": []any{map[string]any{"type": "Suspended", "status": "False",
					"lastProbeTime": nil, "lastTransitionTime": "2025-01-01T00:00:00Z"}},
			},
		},
		"load balancer service": {
			obj: makeObj(serviceGVK, "svc").set("spec.type", "LoadBalancer").
				status(map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "1.2.3.4"}}}}).obj(),
			want: map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "1.2.3.4"}}}},
		},
		"clusterIP service reflects nothing": {
			obj: makeObj(serviceGVK, "svc").status(map[string]any{"loadBalancer": map[string]any{}}).obj(),
		},
		"ingress": {
			obj:  makeObj(ingressGVK, "ing").status(map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"hostname": "lb.example"}}}}).obj(),
			want: map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"hostname": "lb.example"}}}},
		},
		"ingress without status": {
			obj:  makeObj(ingressGVK, "ing").obj(),
			want: map[string]any{"loadBalancer": map[string]any{}},
		},
		"pod disruption budget": {
			obj: makeObj(pdbGVK, "pdb").status(map[string]any{
				"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3, "observedGeneration": 1,
			}).obj(),
			want: map[string]any{"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3},
		},
		"horizontal pod autoscaler": {
			obj:  makeObj(hpaGVK, "hpa").status(map[string]any{"currentReplicas": 2, "desiredReplicas": 4, "lastScaleTime": "2025-01-01T00:00:00Z"}).obj(),
			want: map[string]any{"currentReplicas": 2, "desiredReplicas": 4},
		},
		"other kinds reflect their whole status": {
			obj:  makeObj(schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Widget"}, "w").status(map[string]any{"phase": "Ready", "custom": map[string]any{"a": 1}}).obj(),
			want: map[string]any{"phase": "Ready", "custom": map[string]any{"a": 1}},
		},
		"other kinds without status reflect nothing": {
			obj: makeObj(configMapGVK, "cfg").set("data.k", "v").obj(),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			raw, err := NewDefault().ReflectStatus(tc.obj)
			if err != nil {
				t.Fatalf("ReflectStatus: %v", err)
			}
			if tc.want == nil {
				if raw != nil {
					t.Errorf("ReflectStatus = %s, want nil", raw.Raw)
				}
				return
			}
			if raw == nil {
				t.Fatalf("ReflectStatus = nil, want %v", tc.want)
			}
			var got any
			if err := utiljson.Unmarshal(raw.Raw, &got); err != nil {
				t.Fatalf("reflected status is not JSON: %v", err)
			}
			if diff := cmp.Diff(jsonValue(tc.want), got); diff != "" {
				t.Errorf("ReflectStatus (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReflectStatusRejectsBadTemplateGeneration(t *testing.T) {
	obj := makeObj(deploymentGVK, "web").annotation("resourcetemplate.karmada.io/generation", "x").obj()
	if _, err := NewDefault().ReflectStatus(obj); err == nil {
		t.Error("ReflectStatus succeeded, want an error for a non-numeric template generation")
	}
}
