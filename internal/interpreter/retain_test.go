package interpreter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRetain(t *testing.T) {
	tests := map[string]struct {
		desired, observed, want *unstructured.Unstructured
	}{
		"deployment keeps its own replicas": {
			desired:  makeObj(deploymentGVK, "web").set("spec.replicas", 2).obj(),
			observed: makeObj(deploymentGVK, "web").set("spec.replicas", 7).obj(),
			want:     makeObj(deploymentGVK, "web").set("spec.replicas", 2).obj(),
		},
		"deployment with retain-replicas keeps the member's": {
			desired:  makeObj(deploymentGVK, "web").label(RetainReplicasLabel, "true").set("spec.replicas", 2).obj(),
			observed: makeObj(deploymentGVK, "web").set("spec.replicas", 7).obj(),
			want:     makeObj(deploymentGVK, "web").label(RetainReplicasLabel, "true").set("spec.replicas", 7).obj(),
		},
		"service keeps allocated IPs, health check port and node ports of ports that remain": {
			desired: makeObj(serviceGVK, "svc").set("spec.type", "LoadBalancer").set("spec.ports", []any{
				map[string]any{"name": "http", "port": 80},
				map[string]any{"name": "admin", "port": 9000, "protocol": "TCP", "nodePort": 31000},
				map[string]any{"name": "new", "port": 8443},
			}).obj(),
			observed: makeObj(serviceGVK, "svc").
				set("spec.clusterIP", "10.0.0.5").set("spec.clusterIPs", []any{"10.0.0.5"}).set("spec.healthCheckNodePort", 32000).
				set("spec.ports", []any{
					map[string]any{"name": "http", "port": 80, "protocol": "TCP", "nodePort": 30080},
					map[string]any{"name": "admin", "port": 9000, "protocol": "TCP", "nodePort": 30900},
					map[string]any{"name": "old", "port": 8443, "protocol": "TCP", "nodePort": 30443},
				}).obj(),
			want: makeObj(serviceGVK, "svc").set("spec.type", "LoadBalancer").
				set("spec.clusterIP", "10.0.0.5").set("spec.clusterIPs", []any{"10.0.0.5"}).set("spec.healthCheckNodePort", 32000).
				set("spec.ports", []any{
					map[string]any{"name": "http", "port": 80, "nodePort": 30080},
					map[string]any{"name": "admin", "port": 9000, "protocol": "TCP", "nodePort": 31000},
					map[string]any{"name": "new", "port": 8443},
				}).obj(),
		},
		"clusterIP service keeps its IP but no node ports": {
			desired: makeObj(serviceGVK, "svc").set("spec.ports", []any{map[string]any{"port": 80}}).obj(),
			observed: makeObj(serviceGVK, "svc").set("spec.clusterIP", "10.0.0.5").
				set("spec.ports", []any{map[string]any{"port": 80, "protocol": "TCP", "nodePort": 30080}}).obj(),
			want: makeObj(serviceGVK, "svc").set("spec.clusterIP", "10.0.0.5").set("spec.ports", []any{map[string]any{"port": 80}}).obj(),
		},
		"headless service stays headless": {
			desired:  makeObj(serviceGVK, "svc").set("spec.clusterIP", "None").obj(),
			observed: makeObj(serviceGVK, "svc").set("spec.clusterIP", "None").obj(),
			want:     makeObj(serviceGVK, "svc").set("spec.clusterIP", "None").obj(),
		},
		"service account keeps member token secrets": {
			desired: makeObj(serviceAcctGVK, "sa").set("secrets", []any{map[string]any{"name": "mine"}}).obj(),
			observed: makeObj(serviceAcctGVK, "sa").set("secrets", []any{
				map[string]any{"name": "sa-token-x"}, map[string]any{"name": "mine"},
			}).obj(),
			want: makeObj(serviceAcctGVK, "sa").set("secrets", []any{
				map[string]any{"name": "mine"}, map[string]any{"name": "sa-token-x"},
			}).obj(),
		},
		"service account without secrets anywhere": {
			desired:  makeObj(serviceAcctGVK, "sa").obj(),
			observed: makeObj(serviceAcctGVK, "sa").obj(),
			want:     makeObj(serviceAcctGVK, "sa").obj(),
		},
		"service account token secret keeps its data": {
			desired:  makeObj(secretGVK, "tok").set("type", "kubernetes.io/service-account-token").obj(),
			observed: makeObj(secretGVK, "tok").set("type", "kubernetes.io/service-account-token").set("data.token", "abc").obj(),
			want:     makeObj(secretGVK, "tok").set("type", "kubernetes.io/service-account-token").set("data.token", "abc").obj(),
		},
		"opaque secret takes the template's data": {
			desired:  makeObj(secretGVK, "s").set("data.k", "new").obj(),
			observed: makeObj(secretGVK, "s").set("data.k", "old").obj(),
			want:     makeObj(secretGVK, "s").set("data.k", "new").obj(),
		},
		"pvc keeps its volume and default storage class": {
			desired:  makeObj(pvcGVK, "data").set("spec.accessModes", []any{"ReadWriteOnce"}).obj(),
			observed: makeObj(pvcGVK, "data").set("spec.volumeName", "pv-1").set("spec.storageClassName", "standard").obj(),
			want: makeObj(pvcGVK, "data").set("spec.accessModes", []any{"ReadWriteOnce"}).
				set("spec.volumeName", "pv-1").set("spec.storageClassName", "standard").obj(),
		},
		"pvc with its own storage class keeps it": {
			desired:  makeObj(pvcGVK, "data").set("spec.storageClassName", "fast").obj(),
			observed: makeObj(pvcGVK, "data").set("spec.storageClassName", "standard").obj(),
			want:     makeObj(pvcGVK, "data").set("spec.storageClassName", "fast").obj(),
		},
		"unbound pvc": {
			desired:  makeObj(pvcGVK, "data").obj(),
			observed: makeObj(pvcGVK, "data").obj(),
			want:     makeObj(pvcGVK, "data").obj(),
		},
		"pv keeps its claim": {
			desired:  makeObj(pvGVK, "pv").obj(),
			observed: makeObj(pvGVK, "pv").set("spec.claimRef", map[string]any{"name": "data", "namespace": "default"}).obj(),
			want:     makeObj(pvGVK, "pv").set("spec.claimRef", map[string]any{"name": "data", "namespace": "default"}).obj(),
		},
		"job keeps generated selector and template labels": {
			desired: makeObj(jobGVK, "batch").set("spec.template.metadata.labels", map[string]any{"app": "batch"}).obj(),
			observed: makeObj(jobGVK, "batch").
				set("spec.selector", map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": "u1"}}).
				set("spec.template.metadata.labels", map[string]any{
					"app": "batch", "batch.kubernetes.io/controller-uid": "u1", "controller-uid": "u1",
					"batch.kubernetes.io/job-name": "batch", "job-name": "batch",
				}).obj(),
			want: makeObj(jobGVK, "batch").
				set("spec.selector", map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": "u1"}}).
				set("spec.template.metadata.labels", map[string]any{
					"app": "batch", "batch.kubernetes.io/controller-uid": "u1", "controller-uid": "u1",
					"batch.kubernetes.io/job-name": "batch", "job-name": "batch",
				}).obj(),
		},
		"job not yet seen by the member controller": {
			desired:  makeObj(jobGVK, "batch").set("spec.template.metadata.labels", map[string]any{"app": "batch"}).obj(),
			observed: makeObj(jobGVK, "batch").obj(),
			want:     makeObj(jobGVK, "batch").set("spec.template.metadata.labels", map[string]any{"app": "batch"}).obj(),
		},
		"pod keeps node, service account, volumes and mounts by container name": {
			desired: makeObj(podGVK, "p").set("spec.containers", []any{
				map[string]any{"name": "app", "image": "nginx:2"},
				map[string]any{"name": "new", "image": "busybox"},
			}).set("spec.initContainers", []any{map[string]any{"name": "init"}}).obj(),
			observed: makeObj(podGVK, "p").
				set("spec.nodeName", "node-1").set("spec.serviceAccountName", "default").
				set("spec.volumes", []any{map[string]any{"name": "kube-api-access", "projected": map[string]any{}}}).
				set("spec.containers", []any{map[string]any{"name": "app", "image": "nginx:1",
					"volumeMounts": []any{map[string]any{"name": "kube-api-access", "mountPath": "/var/run"}}}}).
				set("spec.initContainers", []any{map[string]any{"name": "init",
					"volumeMounts": []any{map[string]any{"name": "kube-api-access", "mountPath": "/var/run"}}}}).obj(),
			want: makeObj(podGVK, "p").
				set("spec.nodeName", "node-1").set("spec.serviceAccountName", "default").
				set("spec.volumes", []any{map[string]any{"name": "kube-api-access", "projected": map[string]any{}}}).
				set("spec.containers", []any{
					map[string]any{"name": "app", "image": "nginx:2",
						"volumeMounts": []any{map[string]any{"name": "kube-api-access", "mountPath": "/var/run"}}},
					map[string]any{"name": "new", "image": "busybox"},
				}).
				set("spec.initContainers", []any{map[string]any{"name": "init",
					"volumeMounts": []any{map[string]any{"name": "kube-api-access", "mountPath": "/var/run"}}}}).obj(),
		},
		"configmap has no member-owned fields": {
			desired:  makeObj(configMapGVK, "cfg").set("data.k", "new").obj(),
			observed: makeObj(configMapGVK, "cfg").set("data.k", "old").obj(),
			want:     makeObj(configMapGVK, "cfg").set("data.k", "new").obj(),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := NewDefault().Retain(tc.desired, tc.observed)
			if err != nil {
				t.Fatalf("Retain: %v", err)
			}
			if diff := cmp.Diff(tc.want.Object, got.Object); diff != "" {
				t.Errorf("Retain (-want +got):\n%s", diff)
			}
		})
	}
}

// The result must not share values with observed: a later change to it
// would otherwise corrupt the member cache.
func TestRetainDoesNotAliasObserved(t *testing.T) {
	desired := makeObj(jobGVK, "batch").obj()
	observed := makeObj(jobGVK, "batch").set("spec.selector", map[string]any{"matchLabels": map[string]any{"a": "b"}}).obj()
	before := observed.DeepCopy()

	got, err := NewDefault().Retain(desired, observed)
	if err != nil {
		t.Fatalf("Retain: %v", err)
	}
	if err := unstructured.SetNestedField(got.Object, "changed", "spec", "selector", "matchLabels", "a"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before.Object, observed.Object); diff != "" {
		t.Errorf("changing the result changed observed (-before +after):\n%s", diff)
	}
}

func TestRetainWithoutObservedCopiesDesired(t *testing.T) {
	desired := makeObj(serviceGVK, "svc").set("spec.type", "NodePort").obj()
	got, err := NewDefault().Retain(desired, nil)
	if err != nil {
		t.Fatalf("Retain: %v", err)
	}
	if diff := cmp.Diff(desired.Object, got.Object); diff != "" || got == desired {
		t.Errorf("Retain(desired, nil) should be a copy of desired; diff:\n%s", diff)
	}
}
