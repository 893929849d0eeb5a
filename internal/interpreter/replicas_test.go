package interpreter

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

func TestGetReplicas(t *testing.T) {
	simple := corev1.PodSpec{Containers: []corev1.Container{container("app", "cpu=100m,memory=64Mi", "")}}
	simpleReq := &workv1alpha2.ReplicaRequirements{ResourceRequest: resources("cpu=100m,memory=64Mi")}
	affinity := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
	}}}
	toleration := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

	tests := map[string]struct {
		obj          *unstructured.Unstructured
		wantReplicas int32
		wantReq      *workv1alpha2.ReplicaRequirements
		wantOK       bool
	}{
		"deployment replicas and requests": {
			obj:          makeObj(deploymentGVK, "web").set("spec.replicas", 3).podSpec(simple).obj(),
			wantReplicas: 3, wantReq: simpleReq, wantOK: true,
		},
		"deployment without replicas counts 0 and without requests has no requirements": {
			obj:    makeObj(deploymentGVK, "web").podSpec(corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}).obj(),
			wantOK: true,
		},
		"deployment without a template": {
			obj:          makeObj(deploymentGVK, "web").set("spec.replicas", 2).obj(),
			wantReplicas: 2, wantOK: true,
		},
		"statefulset": {
			obj:          makeObj(statefulSetGVK, "db").set("spec.replicas", 5).podSpec(simple).obj(),
			wantReplicas: 5, wantReq: simpleReq, wantOK: true,
		},
		"replicaset": {
			obj:          makeObj(replicaSetGVK, "rs").set("spec.replicas", 1).podSpec(simple).obj(),
			wantReplicas: 1, wantReq: simpleReq, wantOK: true,
		},
		"job is capped by completions": {
			obj:          makeObj(jobGVK, "batch").set("spec.parallelism", 4).set("spec.completions", 2).podSpec(simple).obj(),
			wantReplicas: 2, wantReq: simpleReq, wantOK: true,
		},
		"job parallelism below completions": {
			obj:          makeObj(jobGVK, "batch").set("spec.parallelism", 3).set("spec.completions", 10).obj(),
			wantReplicas: 3, wantOK: true,
		},
		"job without completions runs parallelism pods": {
			obj:          makeObj(jobGVK, "batch").set("spec.parallelism", 3).obj(),
			wantReplicas: 3, wantOK: true,
		},
		"job without parallelism counts 0": {
			obj:    makeObj(jobGVK, "batch").set("spec.completions", 3).obj(),
			wantOK: true,
		},
		"deployment at the largest count": {
			obj:          makeObj(deploymentGVK, "web").set("spec.replicas", math.MaxInt32).obj(),
			wantReplicas: math.MaxInt32, wantOK: true,
		},
		"job with no completions left runs none": {
			obj:    makeObj(jobGVK, "batch").set("spec.parallelism", 3).set("spec.completions", 0).obj(),
			wantOK: true,
		},
		"job completions at the largest count leave parallelism": {
			obj:          makeObj(jobGVK, "batch").set("spec.parallelism", 3).set("spec.completions", math.MaxInt32).obj(),
			wantReplicas: 3, wantOK: true,
		},
		"pod is one replica": {
			obj:          makeObj(podGVK, "p").podSpec(simple).obj(),
			wantReplicas: 1, wantReq: simpleReq, wantOK: true,
		},
		"node claim from selector, tolerations and required affinity": {
			obj: makeObj(deploymentGVK, "web").set("spec.replicas", 1).podSpec(corev1.PodSpec{
				NodeSelector: map[string]string{"disk": "ssd"},
				Tolerations:  []corev1.Toleration{toleration},
				Affinity:     &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: affinity}},
				Containers:   []corev1.Container{{Name: "app"}},
			}).obj(),
			wantReplicas: 1, wantOK: true,
			wantReq: &workv1alpha2.ReplicaRequirements{NodeClaim: &workv1alpha2.NodeClaim{
				NodeSelector: map[string]string{"disk": "ssd"}, Tolerations: []corev1.Toleration{toleration}, HardNodeAffinity: affinity,
			}},
		},
		"preferred affinity alone is no node claim": {
			obj: makeObj(deploymentGVK, "web").set("spec.replicas", 1).podSpec(corev1.PodSpec{
				Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
					Weight: 1, Preference: affinity.NodeSelectorTerms[0],
				}}}},
				Containers: []corev1.Container{{Name: "app"}},
			}).obj(),
			wantReplicas: 1, wantOK: true,
		},
		"containers add up, limits fill missing requests, init containers count at their peak, plus overhead": {
			obj: makeObj(deploymentGVK, "web").set("spec.replicas", 1).podSpec(corev1.PodSpec{
				InitContainers: []corev1.Container{
					container("migrate", "cpu=2,memory=10Mi", ""),
					container("warm", "", "memory=500Mi"),
				},
				Containers: []corev1.Container{
					container("app", "cpu=500m", "cpu=1,memory=100Mi"),
					container("proxy", "cpu=100m,memory=50Mi", ""),
				},
				Overhead: resources("cpu=10m"),
			}).obj(),
			wantReplicas: 1, wantOK: true,
			// cpu: max(0.6, 2) + 0.01; memory: max(150Mi, 500Mi).
			wantReq: &workv1alpha2.ReplicaRequirements{ResourceRequest: resources("cpu=2010m,memory=500Mi")},
		},
		"sidecars run next to containers and later init containers": {
			obj: makeObj(deploymentGVK, "web").set("spec.replicas", 1).podSpec(corev1.PodSpec{
				InitContainers: []corev1.Container{
					func() corev1.Container {
						c := container("mesh", "cpu=100m", "")
						c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
						return c
					}(),
					container("setup", "cpu=1", ""),
				},
				Containers: []corev1.Container{container("app", "cpu=200m", "")},
			}).obj(),
			wantReplicas: 1, wantOK: true,
			// max(app 0.2 + mesh 0.1, setup 1 + mesh 0.1).
			wantReq: &workv1alpha2.ReplicaRequirements{ResourceRequest: resources("cpu=1100m")},
		},
		"configmap has no replicas":    {obj: makeObj(configMapGVK, "cfg").obj()},
		"service has no replicas":      {obj: makeObj(serviceGVK, "svc").obj()},
		"cronjob has no replicas":      {obj: makeObj(cronJobGVK, "cron").obj()},
		"daemonset has no replicas":    {obj: makeObj(daemonSetGVK, "ds").obj()},
		"apps/v1beta2 is another kind": {obj: makeObj(schema.GroupVersionKind{Group: "apps", Version: "v1beta2", Kind: "Deployment"}, "old").set("spec.replicas", 2).obj()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			replicas, req, ok, err := NewDefault().GetReplicas(tc.obj)
			if err != nil {
				t.Fatalf("GetReplicas: %v", err)
			}
			if replicas != tc.wantReplicas || ok != tc.wantOK {
				t.Errorf("GetReplicas = %d, %v; want %d, %v", replicas, ok, tc.wantReplicas, tc.wantOK)
			}
			if diff := cmp.Diff(tc.wantReq, req, quantityEqual); diff != "" {
				t.Errorf("requirements (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGetReplicasRejectsMalformedObjects(t *testing.T) {
	tests := map[string]*unstructured.Unstructured{
		"replicas is a string":  makeObj(deploymentGVK, "web").set("spec.replicas", "two").obj(),
		"pod spec is malformed": makeObj(deploymentGVK, "web").set("spec.template.spec.containers", "app").obj(),
	}
	for name, obj := range tests {
		t.Run(name, func(t *testing.T) {
			if _, _, _, err := NewDefault().GetReplicas(obj); err == nil {
				t.Error("GetReplicas succeeded, want an error")
			}
		})
	}
}

// Counts outside what the API server stores (an int32, not negative) are
// refused: converted, they would wrap to another count.
func TestGetReplicasRejectsOutOfRangeCounts(t *testing.T) {
	tests := map[string]struct {
		obj     *unstructured.Unstructured
		wantErr string
	}{
		"deployment replicas past int32": {
			obj:     makeObj(deploymentGVK, "web").set("spec.replicas", int64(3000000000)).obj(),
			wantErr: "spec.replicas is 3000000000, want a whole number from 0 to 2147483647",
		},
		"statefulset replicas just past int32": {
			obj:     makeObj(statefulSetGVK, "db").set("spec.replicas", int64(math.MaxInt32)+1).obj(),
			wantErr: "spec.replicas is 2147483648, want a whole number from 0 to 2147483647",
		},
		"negative replicaset replicas": {
			obj:     makeObj(replicaSetGVK, "rs").set("spec.replicas", -1).obj(),
			wantErr: "spec.replicas is -1, want a whole number from 0 to 2147483647",
		},
		"job completions that wrap to 1": {
			obj:     makeObj(jobGVK, "batch").set("spec.parallelism", 4).set("spec.completions", int64(4294967297)).obj(),
			wantErr: "spec.completions is 4294967297, want a whole number from 0 to 2147483647",
		},
		"negative job completions": {
			obj:     makeObj(jobGVK, "batch").set("spec.parallelism", 4).set("spec.completions", -3).obj(),
			wantErr: "spec.completions is -3, want a whole number from 0 to 2147483647",
		},
		"negative job parallelism": {
			obj:     makeObj(jobGVK, "batch").set("spec.parallelism", -2).obj(),
			wantErr: "spec.parallelism is -2, want a whole number from 0 to 2147483647",
		},
		"job parallelism past int32": {
			obj:     makeObj(jobGVK, "batch").set("spec.parallelism", int64(5000000000)).set("spec.completions", 2).obj(),
			wantErr: "spec.parallelism is 5000000000, want a whole number from 0 to 2147483647",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			replicas, _, _, err := NewDefault().GetReplicas(tc.obj)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("GetReplicas = %d, %v; want error %q", replicas, err, tc.wantErr)
			}
		})
	}
}

func TestReviseReplica(t *testing.T) {
	tests := map[string]struct {
		obj      *unstructured.Unstructured
		replicas int64
		want     *unstructured.Unstructured
	}{
		"deployment": {
			obj: makeObj(deploymentGVK, "web").set("spec.replicas", 5).obj(), replicas: 2,
			want: makeObj(deploymentGVK, "web").set("spec.replicas", 2).obj(),
		},
		"deployment without replicas": {
			obj: makeObj(deploymentGVK, "web").obj(), replicas: 3,
			want: makeObj(deploymentGVK, "web").set("spec.replicas", 3).obj(),
		},
		"statefulset": {
			obj: makeObj(statefulSetGVK, "db").set("spec.replicas", 5).obj(), replicas: 0,
			want: makeObj(statefulSetGVK, "db").set("spec.replicas", 0).obj(),
		},
		"replicaset": {
			obj: makeObj(replicaSetGVK, "rs").set("spec.replicas", 5).obj(), replicas: 1,
			want: makeObj(replicaSetGVK, "rs").set("spec.replicas", 1).obj(),
		},
		"job sets parallelism and leaves completions to the binding controller": {
			obj: makeObj(jobGVK, "batch").set("spec.parallelism", 4).set("spec.completions", 8).obj(), replicas: 1,
			want: makeObj(jobGVK, "batch").set("spec.parallelism", 1).set("spec.completions", 8).obj(),
		},
		"pod is never revised": {
			obj: makeObj(podGVK, "p").set("spec.nodeName", "n").obj(), replicas: 3,
			want: makeObj(podGVK, "p").set("spec.nodeName", "n").obj(),
		},
		"configmap is copied unchanged": {
			obj: makeObj(configMapGVK, "cfg").set("data.k", "v").obj(), replicas: 3,
			want: makeObj(configMapGVK, "cfg").set("data.k", "v").obj(),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := NewDefault().ReviseReplica(tc.obj, tc.replicas)
			if err != nil {
				t.Fatalf("ReviseReplica: %v", err)
			}
			if diff := cmp.Diff(tc.want.Object, got.Object); diff != "" {
				t.Errorf("ReviseReplica (-want +got):\n%s", diff)
			}
			if got == tc.obj {
				t.Error("ReviseReplica returned its argument, want a copy")
			}
		})
	}
}
