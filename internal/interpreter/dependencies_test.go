package interpreter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func dep(kind, name string) Dependency {
	return Dependency{APIVersion: "v1", Kind: kind, Namespace: "default", Name: name}
}

// everything references each kind of dependency once, some twice.
func everything() corev1.PodSpec {
	env := []corev1.EnvVar{
		{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}}}},
		{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}}}},
		{Name: "C", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "D", Value: "plain"},
	}
	envFrom := []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "from-cm"}}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "from-secret"}}},
	}
	return corev1.PodSpec{
		ServiceAccountName: "app-sa",
		ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "registry"}},
		InitContainers:     []corev1.Container{{Name: "init", EnvFrom: envFrom[:1]}},
		Containers:         []corev1.Container{{Name: "app", Env: env, EnvFrom: envFrom}},
		Volumes: []corev1.Volume{
			{Name: "a", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
			{Name: "b", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "d", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}}},
			{Name: "e", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "x", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-secret"}}}},
			{Name: "f", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "g", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}}}},
		},
	}
}

var everythingDeps = []Dependency{
	dep("ConfigMap", "env-cm"), dep("ConfigMap", "from-cm"), dep("ConfigMap", "proj-cm"), dep("ConfigMap", "vol-cm"),
	dep("PersistentVolumeClaim", "data"),
	dep("Secret", "csi-secret"), dep("Secret", "env-secret"), dep("Secret", "from-secret"), dep("Secret", "proj-secret"),
	dep("Secret", "registry"), dep("Secret", "vol-secret"),
	dep("ServiceAccount", "app-sa"),
}

func TestGetDependencies(t *testing.T) {
	tests := map[string]struct {
		obj  *unstructured.Unstructured
		want []Dependency
	}{
		"deployment: every reference, sorted and deduplicated": {
			obj: makeObj(deploymentGVK, "web").podSpec(everything()).obj(), want: everythingDeps,
		},
		"replicaset": {obj: makeObj(replicaSetGVK, "rs").podSpec(everything()).obj(), want: everythingDeps},
		"daemonset":  {obj: makeObj(daemonSetGVK, "ds").podSpec(everything()).obj(), want: everythingDeps},
		"job":        {obj: makeObj(jobGVK, "batch").podSpec(everything()).obj(), want: everythingDeps},
		"cronjob":    {obj: makeObj(cronJobGVK, "cron").podSpec(everything()).obj(), want: everythingDeps},
		"pod":        {obj: makeObj(podGVK, "p").podSpec(everything()).obj(), want: everythingDeps},
		"statefulset leaves out its own claims": {
			obj: makeObj(statefulSetGVK, "db").podSpec(corev1.PodSpec{Volumes: []corev1.Volume{
				{Name: "own", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "shared", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "shared"}}},
			}}).set("spec.volumeClaimTemplates", []any{map[string]any{"metadata": map[string]any{"name": "data"}}}).obj(),
			want: []Dependency{dep("PersistentVolumeClaim", "shared")},
		},
		"default and empty service accounts are not dependencies": {
			obj: makeObj(deploymentGVK, "web").podSpec(corev1.PodSpec{ServiceAccountName: "default"}).obj(),
		},
		"template without references": {
			obj: makeObj(deploymentGVK, "web").podSpec(corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}).obj(),
		},
		"deployment without a template": {obj: makeObj(deploymentGVK, "web").obj()},
		"dependencies live in the workload's namespace": {
			obj: func() *unstructured.Unstructured {
				o := makeObj(podGVK, "p").podSpec(corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "reg"}}}).obj()
				o.SetNamespace("team-a")
				return o
			}(),
			want: []Dependency{{APIVersion: "v1", Kind: "Secret", Namespace: "team-a", Name: "reg"}},
		},
		"ingress needs its TLS secrets": {
			obj:  makeObj(ingressGVK, "ing").set("spec.tls", []any{map[string]any{"secretName": "tls-b"}, map[string]any{"secretName": "tls-a"}, map[string]any{"hosts": []any{"x"}}}).obj(),
			want: []Dependency{dep("Secret", "tls-a"), dep("Secret", "tls-b")},
		},
		"configmap has no dependencies": {obj: makeObj(configMapGVK, "cfg").obj()},
		"service has no dependencies":   {obj: makeObj(serviceGVK, "svc").obj()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := NewDefault().GetDependencies(tc.obj)
			if err != nil {
				t.Fatalf("GetDependencies: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GetDependencies (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGetDependenciesRejectsMalformedTemplate(t *testing.T) {
	obj := makeObj(deploymentGVK, "web").set("spec.template.spec.volumes", "data").obj()
	if _, err := NewDefault().GetDependencies(obj); err == nil {
		t.Error("GetDependencies succeeded, want an error")
	}
}
