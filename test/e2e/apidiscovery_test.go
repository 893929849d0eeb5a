//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/apidiscovery"
)

// answers counts, per path, the HTTP answers a client received in full
// (200) and not modified (304).
type answers struct {
	mu        sync.Mutex
	full, not map[string]int
	next      http.RoundTripper
}

func (a *answers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	if err == nil {
		a.mu.Lock()
		switch resp.StatusCode {
		case http.StatusOK:
			a.full[req.URL.Path]++
		case http.StatusNotModified:
			a.not[req.URL.Path]++
		}
		a.mu.Unlock()
	}
	return resp, err
}

func (a *answers) snapshot() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("full %v, not modified %v", a.full, a.not)
}

// A real member API server answers an unchanged discovery document with
// 304, so a round of discovery with nothing changed decodes nothing; a CRD
// created in between is seen by the next round.
func TestDiscoveryReadsOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	cfg := memberConfig(t, "member3")
	counted := &answers{full: map[string]int{}, not: map[string]int{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counted.next = rt; return counted })
	l, err := apidiscovery.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := l.ServerResources(ctx); err != nil {
		t.Fatalf("first round: %v", err)
	}
	// Other tests may install CRDs into the member meanwhile: a round that
	// sees such a change reads in full, so look for one unchanged round.
	eventually(t, time.Minute, "a discovery round answered 304 twice and nothing in full", func(ctx context.Context) (bool, string, error) {
		counted.mu.Lock()
		counted.full, counted.not = map[string]int{}, map[string]int{}
		counted.mu.Unlock()
		lists, err := l.ServerResources(ctx)
		if err != nil {
			return false, "", err
		}
		if len(lists) == 0 {
			return false, "no resources", nil
		}
		counted.mu.Lock()
		full, not := len(counted.full), counted.not["/api"]+counted.not["/apis"]
		counted.mu.Unlock()
		return full == 0 && not == 2, counted.snapshot(), nil
	})

	crd := createDiscoveryCRD(t, "member3")
	eventually(t, 30*time.Second, "the new CRD discovered", func(ctx context.Context) (bool, string, error) {
		lists, err := l.ServerResources(ctx)
		if err != nil {
			return false, "", err
		}
		for _, list := range lists {
			if list.GroupVersion == crd.Spec.Group+"/v1" {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d group versions, none %s/v1", len(lists), crd.Spec.Group), nil
	})
}

// The member's Cluster lists a CRD created in the member in its
// apiEnablements, and drops it once the CRD is deleted.
func TestClusterAPIEnablementsFollowTheMember(t *testing.T) {
	t.Parallel()
	crd := createDiscoveryCRD(t, "member2")
	gv := crd.Spec.Group + "/v1"
	cp := clientFor(t, controlPlaneConfig(t))
	enabled := func(ctx context.Context) (bool, error) {
		var c clusterv1alpha1.Cluster
		if err := cp.Get(ctx, types.NamespacedName{Name: "member2"}, &c); err != nil {
			return false, err
		}
		for _, e := range c.Status.APIEnablements {
			if e.GroupVersion == gv {
				return true, nil
			}
		}
		return false, nil
	}
	eventually(t, 2*time.Minute, describe("member2's apiEnablements list %s", gv), func(ctx context.Context) (bool, string, error) {
		ok, err := enabled(ctx)
		return ok, "not listed", err
	})
	crds := crdClient(t, "member2")
	if err := crds.Delete(context.Background(), crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, describe("member2's apiEnablements without %s", gv), func(ctx context.Context) (bool, string, error) {
		ok, err := enabled(ctx)
		return !ok, "still listed", err
	})
}

func crdClient(t *testing.T, member string) apiextensionsv1client.CustomResourceDefinitionInterface {
	t.Helper()
	cs, err := apiextensionsclient.NewForConfig(rest.CopyConfig(memberConfig(t, member)))
	if err != nil {
		t.Fatal(err)
	}
	return cs.ApiextensionsV1().CustomResourceDefinitions()
}

// createDiscoveryCRD creates a CRD of its own group in member, waits until
// it is Established and deletes it when the test ends.
func createDiscoveryCRD(t *testing.T, member string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	group := "d" + strings.ToLower(rand.String(6)) + ".e2e.lifeboat.dev"
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
	crds := crdClient(t, member)
	if _, err := crds.Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRD %s in %s: %v", crd.Name, member, err)
	}
	t.Cleanup(func() {
		if err := crds.Delete(context.Background(), crd.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting CRD %s in %s: %v", crd.Name, member, err)
		}
	})
	eventually(t, 30*time.Second, describe("CRD %s Established in %s", crd.Name, member), func(ctx context.Context) (bool, string, error) {
		cur, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == apiextensionsv1.Established {
				return c.Status == apiextensionsv1.ConditionTrue, c.Reason, nil
			}
		}
		return false, "no Established condition", nil
	})
	return crd
}
