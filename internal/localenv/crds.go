package localenv

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/lifeboat-dev/lifeboat/config/crd"
	"github.com/lifeboat-dev/lifeboat/config/samples"
)

// installCRDs creates Lifeboat's CRDs in the control plane and waits until
// every one is Established.
func installCRDs(ctx context.Context, s *State) error {
	crds, err := crd.All()
	if err != nil {
		return fmt.Errorf("loading CRDs: %w", err)
	}
	return applyCRDs(ctx, s, ControlPlaneName, crds)
}

// applyCRDs server-side applies crds to the named cluster and waits until
// every one is Established.
func applyCRDs(ctx context.Context, s *State, cluster string, crds []*apiextensionsv1.CustomResourceDefinition) error {
	cfg, err := s.RESTConfig(cluster)
	if err != nil {
		return err
	}
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, c := range crds {
		// Server-side apply, so that an environment reused across versions
		// gets the current schemas. A shallow copy: callers may share crds
		// between clusters applied in parallel.
		obj := *c
		obj.APIVersion, obj.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		data, err := json.Marshal(&obj)
		if err != nil {
			return err
		}
		force := true
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, c.Name, types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: "lifeboat", Force: &force}); err != nil {
			return fmt.Errorf("applying CRD %s in %s: %w", c.Name, cluster, err)
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
			return fmt.Errorf("CRD %s not Established in %s: %s: %w", c.Name, cluster, last, err)
		}
	}
	return nil
}

// installDefaults creates the objects a new control plane starts with: the
// default ClusterTaintPolicy that turns a not-Ready cluster into a NoExecute
// taint, so cluster failover works out of the box.
func installDefaults(ctx context.Context, s *State) error {
	cfg, err := s.RESTConfig(ControlPlaneName)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(samples.DefaultClusterTaintPolicy, &obj.Object); err != nil {
		return fmt.Errorf("parsing the default ClusterTaintPolicy: %w", err)
	}
	gvr := schema.GroupVersionResource{Group: "policy.karmada.io", Version: "v1alpha1", Resource: "clustertaintpolicies"}
	if _, err := dyn.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ClusterTaintPolicy %s: %w", obj.GetName(), err)
	}
	return nil
}
