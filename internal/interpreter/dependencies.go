package interpreter

import (
	"cmp"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// podSpecDependencies lists what a pod template needs in its namespace
// (pipeline reference §7.3): ConfigMaps, Secrets, PersistentVolumeClaims and
// a ServiceAccount other than "default". A StatefulSet's own claims (named
// like one of its volumeClaimTemplates) are created by the member and left
// out.
func podSpecDependencies(obj *unstructured.Unstructured) ([]Dependency, error) {
	spec, err := podSpecOf(obj)
	if err != nil {
		return nil, err
	}
	ownClaims := map[string]bool{}
	if obj.GroupVersionKind() == statefulSetGVK {
		sts := &appsv1.StatefulSet{}
		if err := decode(obj, sts); err != nil {
			return nil, err
		}
		for _, t := range sts.Spec.VolumeClaimTemplates {
			ownClaims[t.Name] = true
		}
	}
	deps := newDependencySet(obj.GetNamespace())
	visitPodSpec(spec, deps, ownClaims)
	return deps.sorted(), nil
}

// ingressDependencies: the TLS Secrets.
func ingressDependencies(obj *unstructured.Unstructured) ([]Dependency, error) {
	ing := &networkingv1.Ingress{}
	if err := decode(obj, ing); err != nil {
		return nil, err
	}
	deps := newDependencySet(obj.GetNamespace())
	for _, tls := range ing.Spec.TLS {
		deps.add("Secret", tls.SecretName)
	}
	return deps.sorted(), nil
}

// visitPodSpec adds every object the pod spec references.
func visitPodSpec(spec *corev1.PodSpec, deps *dependencySet, ownClaims map[string]bool) {
	if sa := spec.ServiceAccountName; sa != "default" {
		deps.add("ServiceAccount", sa)
	}
	for _, s := range spec.ImagePullSecrets {
		deps.add("Secret", s.Name)
	}
	for i := range spec.InitContainers {
		visitEnv(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom, deps)
	}
	for i := range spec.Containers {
		visitEnv(spec.Containers[i].Env, spec.Containers[i].EnvFrom, deps)
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i].EphemeralContainerCommon
		visitEnv(c.Env, c.EnvFrom, deps)
	}
	for i := range spec.Volumes {
		visitVolume(&spec.Volumes[i].VolumeSource, deps, ownClaims)
	}
}

func visitEnv(env []corev1.EnvVar, envFrom []corev1.EnvFromSource, deps *dependencySet) {
	for _, from := range envFrom {
		if from.ConfigMapRef != nil {
			deps.add("ConfigMap", from.ConfigMapRef.Name)
		}
		if from.SecretRef != nil {
			deps.add("Secret", from.SecretRef.Name)
		}
	}
	for _, e := range env {
		if e.ValueFrom == nil {
			continue
		}
		if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
			deps.add("ConfigMap", ref.Name)
		}
		if ref := e.ValueFrom.SecretKeyRef; ref != nil {
			deps.add("Secret", ref.Name)
		}
	}
}

// visitVolume adds the ConfigMaps, Secrets and claims a volume uses,
// including the credentials Secrets of the volume plugins that take one.
func visitVolume(v *corev1.VolumeSource, deps *dependencySet, ownClaims map[string]bool) {
	secretRef := func(ref *corev1.LocalObjectReference) {
		if ref != nil {
			deps.add("Secret", ref.Name)
		}
	}
	switch {
	case v.ConfigMap != nil:
		deps.add("ConfigMap", v.ConfigMap.Name)
	case v.Secret != nil:
		deps.add("Secret", v.Secret.SecretName)
	case v.PersistentVolumeClaim != nil:
		if !ownClaims[v.PersistentVolumeClaim.ClaimName] {
			deps.add("PersistentVolumeClaim", v.PersistentVolumeClaim.ClaimName)
		}
	case v.Projected != nil:
		for _, src := range v.Projected.Sources {
			if src.ConfigMap != nil {
				deps.add("ConfigMap", src.ConfigMap.Name)
			}
			if src.Secret != nil {
				deps.add("Secret", src.Secret.Name)
			}
		}
	case v.AzureFile != nil:
		deps.add("Secret", v.AzureFile.SecretName)
	case v.CephFS != nil:
		secretRef(v.CephFS.SecretRef)
	case v.Cinder != nil:
		secretRef(v.Cinder.SecretRef)
	case v.FlexVolume != nil:
		secretRef(v.FlexVolume.SecretRef)
	case v.RBD != nil:
		secretRef(v.RBD.SecretRef)
	case v.ScaleIO != nil:
		secretRef(v.ScaleIO.SecretRef)
	case v.ISCSI != nil:
		secretRef(v.ISCSI.SecretRef)
	case v.StorageOS != nil:
		secretRef(v.StorageOS.SecretRef)
	case v.CSI != nil:
		secretRef(v.CSI.NodePublishSecretRef)
	}
}

// dependencySet collects v1 dependencies in one namespace without
// duplicates.
type dependencySet struct {
	namespace string
	seen      map[Dependency]bool
}

func newDependencySet(namespace string) *dependencySet {
	return &dependencySet{namespace: namespace, seen: map[Dependency]bool{}}
}

func (s *dependencySet) add(kind, name string) {
	if name == "" {
		return
	}
	s.seen[Dependency{APIVersion: "v1", Kind: kind, Namespace: s.namespace, Name: name}] = true
}

// sorted returns the dependencies ordered by kind then name (all share
// apiVersion and namespace); nil when there are none.
func (s *dependencySet) sorted() []Dependency {
	if len(s.seen) == 0 {
		return nil
	}
	out := make([]Dependency, 0, len(s.seen))
	for d := range s.seen {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Dependency) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return out
}
