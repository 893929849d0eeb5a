package detector

import (
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/names"
)

// ClaimedByLabel on a template (set by another owner, e.g. a
// MultiClusterService controller) makes every policy ignore it. Karmada's key;
// not in api/ because no Lifeboat type carries it.
const ClaimedByLabel = "resourcetemplate.karmada.io/claimed-by"

// BindingName is the name of the (Cluster)ResourceBinding of a template (and
// of the attached binding of a dependency): lower("<name>-<kind>") with ':'
// in the name replaced by '.', e.g. "nginx-deployment". A ConfigMap selected
// by its own policy and needed by a workload therefore shares one binding.
//
// Where that is no valid object name (a name of 240 characters and more, or
// an RBAC object's name with characters other than letters, digits, '-',
// '.' and ':'), which Karmada would fail to create, the name is made valid:
// every other character becomes '-', it is cut to fit, and a hash of the
// kind and the name as written is added, e.g. "my-role-clusterrole-<hash>"
// for the ClusterRole my_role.
func BindingName(kind, name string) string {
	n := strings.ToLower(strings.ReplaceAll(name, ":", ".") + "-" + kind)
	if len(validation.IsDNS1123Subdomain(n)) == 0 {
		return n
	}
	return names.Hashed(n, validation.DNS1123SubdomainMaxLength, kind+"/"+name)
}

// BindsTemplate reports whether a binding whose spec.resource is ref is the
// binding of the template of group and kind gk, namespace ns ("" when
// cluster-scoped) and name: the version may differ, nothing else may.
func BindsTemplate(ref workv1alpha2.ObjectReference, gk schema.GroupKind, ns, name string) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == gk.Group && ref.Kind == gk.Kind && ref.Namespace == ns && ref.Name == name
}

// skippedGroups are never propagated: Lifeboat's (Karmada's) own groups and
// the groups of objects that belong to one cluster only.
var skippedGroups = map[string]bool{
	"cluster.karmada.io":     true,
	"policy.karmada.io":      true,
	"work.karmada.io":        true,
	"config.karmada.io":      true,
	"networking.karmada.io":  true,
	"autoscaling.karmada.io": true,
	"remedy.karmada.io":      true,
	"apps.karmada.io":        true,
	"search.karmada.io":      true,
	"events.k8s.io":          true,
	"coordination.k8s.io":    true,
}

// skippedKinds are kinds of groups that are otherwise propagated.
var skippedKinds = map[schema.GroupKind]bool{
	{Group: "", Kind: "Event"}:                         true,
	{Group: "", Kind: "Endpoints"}:                     true,
	{Group: "discovery.k8s.io", Kind: "EndpointSlice"}: true,
	{Group: "", Kind: "Binding"}:                       true,
	{Group: "", Kind: "ComponentStatus"}:               true,
}

// IsSkippedKind reports whether templates of gvk are never propagated.
func IsSkippedKind(gvk schema.GroupVersionKind) bool {
	return skippedGroups[gvk.Group] || skippedKinds[gvk.GroupKind()]
}

// kubeNamespace matches the default --skipped-propagating-namespaces of
// Karmada (kube-.*, anchored).
var kubeNamespace = regexp.MustCompile(`^kube-.*$`)

// IsSkippedNamespace reports whether objects in ns are never propagated:
// kube-*, karmada-system, karmada-cluster and the execution namespaces
// karmada-es-*.
func IsSkippedNamespace(ns string) bool {
	switch {
	case ns == "":
		return false
	case ns == "karmada-system", ns == "karmada-cluster":
		return true
	case strings.HasPrefix(ns, "karmada-es-"):
		return true
	default:
		return kubeNamespace.MatchString(ns)
	}
}

// IsSkippedObject reports whether one object is never propagated although
// its kind and namespace are: objects every cluster makes for itself (the
// default ServiceAccount, the kube-root-ca.crt ConfigMap, service-account
// token Secrets).
func IsSkippedObject(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	if IsSkippedKind(gvk) || IsSkippedNamespace(obj.GetNamespace()) {
		return true
	}
	return isSkippedCoreObject(gvk, obj.GetName(), func() string {
		t, _, _ := unstructured.NestedString(obj.Object, "type")
		return t
	})
}

// IsSkippedReference is IsSkippedObject for an object known by reference
// only (a dependency); a Secret's type is not known, so token Secrets are
// caught when their metadata is read.
func IsSkippedReference(apiVersion, kind, namespace, name string) bool {
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	if IsSkippedKind(gvk) || IsSkippedNamespace(namespace) {
		return true
	}
	return isSkippedCoreObject(gvk, name, func() string { return "" })
}

func isSkippedCoreObject(gvk schema.GroupVersionKind, name string, secretType func() string) bool {
	if gvk.Group != "" {
		return false
	}
	switch gvk.Kind {
	case "ServiceAccount":
		return name == "default"
	case "ConfigMap":
		return name == "kube-root-ca.crt"
	case "Secret":
		return secretType() == string(corev1.SecretTypeServiceAccountToken)
	}
	return false
}
