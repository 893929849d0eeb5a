package controllermanager

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lifeboat-dev/lifeboat/config/crd"
)

// missingKinds returns "Kind.group/version" for every served version of
// crds that served (group/version → kinds the API server lists) lacks,
// sorted.
func missingKinds(crds []*apiextensionsv1.CustomResourceDefinition, served map[string]map[string]bool) []string {
	var missing []string
	for _, c := range crds {
		for _, v := range c.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := c.Spec.Group + "/" + v.Name
			if !served[gv][c.Spec.Names.Kind] {
				missing = append(missing, c.Spec.Names.Kind+"."+gv)
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// servedKinds asks discovery for the kinds of each group/version of crds.
// A group/version the API server does not know has no kinds; any other
// failure (the API server does not answer, refuses the credentials) is
// returned as well, the first one, so that it is not taken for missing
// CRDs.
func servedKinds(dc discovery.DiscoveryInterface, crds []*apiextensionsv1.CustomResourceDefinition) (map[string]map[string]bool, error) {
	var firstErr error
	served := map[string]map[string]bool{}
	for _, c := range crds {
		for _, v := range c.Spec.Versions {
			gv := c.Spec.Group + "/" + v.Name
			if _, done := served[gv]; done {
				continue
			}
			served[gv] = map[string]bool{}
			list, err := dc.ServerResourcesForGroupVersion(gv)
			if err != nil {
				if !apierrors.IsNotFound(err) && firstErr == nil {
					firstErr = fmt.Errorf("discovering %s: %w", gv, err)
				}
				continue
			}
			for _, r := range list.APIResources {
				served[gv][r.Kind] = true
			}
		}
	}
	return served, firstErr
}

// waitForCRDs waits until the control plane serves every kind of
// Lifeboat's CRDs, for at most timeout (0: not at all), saying every 10
// seconds what it still misses. A control plane installed by the Helm
// chart gets them from its init Job, which may finish after the controller
// manager starts; without the wait it would exit and be restarted with a
// growing back-off.
func waitForCRDs(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	if timeout <= 0 {
		return nil
	}
	crds, err := crd.All()
	if err != nil {
		return fmt.Errorf("loading CRDs: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	log := ctrl.Log.WithName("setup")
	var missing []string
	var discoveryErr error
	start, lastSaid := time.Now(), time.Time{}
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(context.Context) (bool, error) {
		var served map[string]map[string]bool
		served, discoveryErr = servedKinds(dc, crds)
		missing = missingKinds(crds, served)
		if len(missing) > 0 && time.Since(lastSaid) >= 10*time.Second {
			if discoveryErr != nil {
				log.Info("waiting for the control plane to answer", "error", discoveryErr.Error())
			} else {
				log.Info("waiting for Lifeboat's CRDs (lifeboat init installs them)", "missing", len(missing), "first", missing[0])
			}
			lastSaid = time.Now()
		}
		return len(missing) == 0, nil
	})
	return crdWaitError(err, time.Since(start).Round(time.Second), missing, discoveryErr)
}

// crdWaitError says why the wait for the CRDs ended without them: the
// control plane did not answer discovery (its last error), or it answered
// without Lifeboat's kinds.
func crdWaitError(err error, waited time.Duration, missing []string, discoveryErr error) error {
	switch {
	case err == nil || len(missing) == 0:
		return err
	case discoveryErr != nil:
		return fmt.Errorf("after %s the control plane still does not answer discovery: %w", waited, discoveryErr)
	}
	return fmt.Errorf("after %s the control plane still lacks %d of Lifeboat's kinds (%s): install Lifeboat's CRDs with `lifeboat init` (an administrator's kubeconfig)",
		waited, len(missing), strings.Join(missing[:min(3, len(missing))], ", "))
}
