// Package scheme builds the runtime.Scheme that knows Kubernetes' built-in
// types and every Lifeboat (Karmada-compatible) API group.
package scheme

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	appsv1alpha1 "github.com/lifeboat-dev/lifeboat/api/apps/v1alpha1"
	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	configv1alpha1 "github.com/lifeboat-dev/lifeboat/api/config/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// New returns a fresh scheme; callers own it.
func New() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		clusterv1alpha1.AddToScheme,
		policyv1alpha1.AddToScheme,
		workv1alpha1.AddToScheme,
		workv1alpha2.AddToScheme,
		configv1alpha1.AddToScheme,
		appsv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return s, nil
}

// OwnGroups are the API groups of Lifeboat's own (Karmada-compatible)
// types, served by CustomResourceDefinitions.
func OwnGroups() []string {
	return []string{
		clusterv1alpha1.GroupName,
		policyv1alpha1.GroupName,
		workv1alpha2.GroupName,
		configv1alpha1.GroupName,
		appsv1alpha1.GroupName,
	}
}
