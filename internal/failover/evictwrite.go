package failover

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

// evictionReport is what one eviction has to tell the user beyond itself:
// state-preservation rules that captured nothing, and state carried forward
// from an earlier failover.
type evictionReport struct {
	cluster  string
	problems []StateProblem
	note     string
}

// writeEvictions is the one write of every eviction, whatever its trigger:
// spec (the binding's, inside obj) becomes newSpec in a single Update with
// optimistic concurrency. A lost race is a quiet re-read (retry true); any
// other failure leaves spec unchanged and is reported. After the write the
// reports become Events on the binding and the template. what names the
// trigger in logs and Events ("an unhealthy application", "a tainted cluster").
func writeEvictions(ctx context.Context, c client.Client, rec record.EventRecorder, obj client.Object,
	spec, newSpec *workv1alpha2.ResourceBindingSpec, clusters []string, reports []evictionReport, mode policyv1alpha1.PurgeMode, what string) (ctrl.Result, bool, error) {
	log := ctrl.LoggerFrom(ctx)
	if equality.Semantic.DeepEqual(spec, newSpec) {
		return ctrl.Result{}, false, nil
	}
	old := *spec
	*spec = *newSpec
	if err := c.Update(ctx, obj); err != nil {
		*spec = old
		if apierrors.IsConflict(err) {
			log.V(1).Info("write conflict while evicting; re-reading", "trigger", what)
			return ctrl.Result{RequeueAfter: conflictRetry}, true, nil
		}
		eventBoth(rec, obj, spec, "Warning", EventReasonEvictionFailed,
			"Failed to evict %s from cluster(s) %s: %v", what, strings.Join(clusters, ", "), err)
		return ctrl.Result{}, true, fmt.Errorf("evicting %v: %w", clusters, err)
	}
	for _, rep := range reports {
		log.Info("evicted "+what, "cluster", rep.cluster, "purgeMode", mode)
		for _, p := range rep.problems {
			eventBoth(rec, obj, spec, "Warning", EventReasonStatePreservationFailed,
				"Failing over from %s without state for %s; the failover goes on.", rep.cluster, p)
		}
		if rep.note != "" {
			eventBoth(rec, obj, spec, "Normal", EventReasonStateCarriedForward, "%s", capitalise(rep.note)+".")
		}
	}
	return ctrl.Result{}, false, nil
}
