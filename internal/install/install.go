// Package install puts into a control plane what Lifeboat needs there before
// its controller manager starts: the CRDs, the controller manager's
// ClusterRole and binding (config/rbac), and the default ClusterTaintPolicy.
// Every step creates or brings up to date, so running it again, or with a
// newer Lifeboat (an upgrade), is safe.
package install

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/lifeboat-dev/lifeboat/config/crd"
	"github.com/lifeboat-dev/lifeboat/config/rbac"
	"github.com/lifeboat-dev/lifeboat/config/samples"
)

// FieldManager owns the fields Lifeboat applies.
const FieldManager = "lifeboat"

// ControlPlane applies the controller manager's RBAC, Lifeboat's CRDs (and
// waits until they are Established) and the default
// ClusterTaintPolicy to the API server cfg reaches, reporting each step to
// progress (may be nil). cfg needs to be allowed all of that: an
// administrator's.
func ControlPlane(ctx context.Context, cfg *rest.Config, progress func(string)) error {
	if progress == nil {
		progress = func(string) {}
	}
	// The controller manager's rights first: a controller manager that
	// waits for the CRDs starts as soon as they are served, and must not
	// find itself refused.
	if err := ControllerManagerRBAC(ctx, cfg); err != nil {
		return err
	}
	progress(fmt.Sprintf("ClusterRole and ClusterRoleBinding %s for user %s", rbac.ControllerManagerRoleName, rbac.ControllerManagerUser))
	crds, err := crd.All()
	if err != nil {
		return fmt.Errorf("loading CRDs: %w", err)
	}
	if err := CRDs(ctx, cfg, crds); err != nil {
		return err
	}
	progress(fmt.Sprintf("%d CRDs applied and Established", len(crds)))
	created, err := DefaultClusterTaintPolicy(ctx, cfg)
	if err != nil {
		return err
	}
	if created {
		progress("default ClusterTaintPolicy created")
	} else {
		progress("default ClusterTaintPolicy exists; left as it is")
	}
	return nil
}

// WaitForAPIServer polls the API server's /readyz every second until it
// answers ok or ctx ends, calling waiting with the last failure every ten
// seconds.
func WaitForAPIServer(ctx context.Context, cfg *rest.Config, waiting func(last error)) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var last error
	tries := 0
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		tries++
		if last != nil && tries%10 == 0 && waiting != nil {
			waiting(last)
		}
		return last == nil, nil
	})
	switch {
	case err == nil:
		return nil
	case last == nil:
		return fmt.Errorf("waiting for the API server at %s: %w", cfg.Host, err)
	}
	return fmt.Errorf("the API server at %s did not become ready: %v (last answer: %w)", cfg.Host, err, last)
}

// CRDs server-side applies crds and waits until every one is Established.
func CRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, c := range crds {
		// Server-side apply, so that a control plane installed by an older
		// Lifeboat gets the current schemas. A shallow copy: callers may
		// share crds between clusters applied in parallel.
		obj := *c
		obj.APIVersion, obj.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		data, err := json.Marshal(&obj)
		if err != nil {
			return err
		}
		force := true
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, c.Name, types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: FieldManager, Force: &force}); err != nil {
			return fmt.Errorf("applying CRD %s at %s: %w", c.Name, cfg.Host, err)
		}
	}
	for _, c := range crds {
		var last string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, c.Name, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
				if cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse {
					last = cond.Message
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not Established at %s: %s: %w", c.Name, cfg.Host, last, err)
		}
	}
	return nil
}

// ControllerManagerRBAC creates the controller manager's ClusterRole and its
// binding to the controller manager's user, or brings them up to date.
func ControllerManagerRBAC(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	role, err := rbac.ControllerManagerRole()
	if err != nil {
		return err
	}
	binding, err := rbac.ControllerManagerBinding()
	if err != nil {
		return err
	}
	if err := EnsureClusterRole(ctx, cs, role); err != nil {
		return fmt.Errorf("creating or updating ClusterRole %s: %w", role.Name, err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ClusterRoleBinding %s: %w", binding.Name, err)
	}
	return nil
}

// EnsureClusterRole creates role, or sets the rules of the one that exists.
func EnsureClusterRole(ctx context.Context, cs kubernetes.Interface, role *rbacv1.ClusterRole) error {
	roles := cs.RbacV1().ClusterRoles()
	_, err := roles.Create(ctx, role, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	old, err := roles.Get(ctx, role.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	old.Rules = role.Rules
	_, err = roles.Update(ctx, old, metav1.UpdateOptions{})
	return err
}

// DefaultClusterTaintPolicy creates the ClusterTaintPolicy that turns a
// not-Ready cluster into a NoExecute taint, so that cluster failover works
// out of the box. One that exists is left as it is: a user may have changed
// it. created says whether it was created now.
func DefaultClusterTaintPolicy(ctx context.Context, cfg *rest.Config) (created bool, err error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return false, err
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(samples.DefaultClusterTaintPolicy, &obj.Object); err != nil {
		return false, fmt.Errorf("parsing the default ClusterTaintPolicy: %w", err)
	}
	gvr := schema.GroupVersionResource{Group: "policy.karmada.io", Version: "v1alpha1", Resource: "clustertaintpolicies"}
	_, err = dyn.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsAlreadyExists(err):
		return false, nil
	}
	return false, fmt.Errorf("creating ClusterTaintPolicy %s: %w", obj.GetName(), err)
}
