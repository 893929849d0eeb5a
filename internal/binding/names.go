package binding

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/names"
)

// maxWorkNameLength keeps Work names usable as label values.
const maxWorkNameLength = 63

// WorkName is the name of the Works of one resource template; it is the
// same in every execution namespace. It follows Karmada: the lower-cased
// template name (":" replaced by "."), "-", and the safe-encoded FNV-32a
// hash of "<namespace>-<name>-<kind>" (without the namespace for a
// cluster-scoped template). default/nginx Deployment gives nginx-687f7fb96f.
//
// Unlike Karmada the name is kept within 63 characters: a long template
// name is cut, while the hash still covers the full key. A template name
// with characters no Work's name may have (an RBAC object's) has them
// turned into '-' (names.Clean).
func WorkName(kind, name, namespace string) string {
	base := strings.ReplaceAll(strings.ToLower(name), ":", ".")
	key := base + "-" + kind
	if namespace != "" {
		key = namespace + "-" + key
	}
	suffix := names.Hash(strings.ToLower(key))
	work := names.Join(base, suffix, maxWorkNameLength)
	if len(validation.IsDNS1123Subdomain(work)) != 0 {
		work = names.Join(names.Clean(base), suffix, maxWorkNameLength)
	}
	return work
}

// ExecutionNamespace is the namespace of a cluster's Works.
func ExecutionNamespace(cluster string) string {
	return clusterv1alpha1.ExecutionSpacePrefix + cluster
}

// ClusterOfNamespace returns the cluster of an execution namespace; ok is
// false for other namespaces.
func ClusterOfNamespace(namespace string) (string, bool) {
	cluster, ok := strings.CutPrefix(namespace, clusterv1alpha1.ExecutionSpacePrefix)
	return cluster, ok && cluster != ""
}

// conflictRequeue is how soon a reconcile that lost a write race runs again.
const conflictRequeue = 200 * time.Millisecond
