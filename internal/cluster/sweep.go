package cluster

import (
	"context"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/orphans"
)

// SweepResult says what SweepUnjoinedMember did.
type SweepResult struct {
	// Skipped says why nothing was swept; empty when the member was.
	Skipped string
	// Removed and Kept are the objects whose Work is gone: removed, or
	// kept with the reason.
	Removed, Kept []string
	// NamespacesRemoved and NamespacesKept are the namespaces Lifeboat
	// created: removed, or kept with the reason.
	NamespacesRemoved, NamespacesKept []string
	// Incomplete says why some objects of the member could not be listed.
	Incomplete error
}

// sweepPoll is how often a namespace whose contents are going is looked at.
const sweepPoll = time.Second

// SweepUnjoinedMember removes from a member what Lifeboat put there for
// the cluster name, once the control plane has no Cluster of that name:
// the objects the orphan rule (orphans.Judge) calls orphans, then the
// namespaces Lifeboat created that the namespace rule lets go, waiting up to
// timeout for what is left in them (dependents the garbage collector
// removes) to go. No grace period applies: without the Cluster no Work can
// be made for these objects, and an object whose binding still names the
// cluster is kept. A member joined again, under any name (same kube-system
// UID as a Cluster's id), is not swept: its controller manager does it.
func SweepUnjoinedMember(ctx context.Context, cp client.Client, memberClient kubernetes.Interface, member orphans.Member, name string, timeout time.Duration) (SweepResult, error) {
	var res SweepResult
	var existing clusterv1alpha1.Cluster
	switch err := cp.Get(ctx, types.NamespacedName{Name: name}, &existing); {
	case err == nil:
		return res, fmt.Errorf("cluster %s still exists in the control plane: its member is swept only once it is gone", name)
	case !apierrors.IsNotFound(err):
		return res, fmt.Errorf("reading Cluster %s: %w", name, err)
	}
	kubeSystem, err := memberClient.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return res, fmt.Errorf("reaching the member: %w", err)
	}
	var clusters clusterv1alpha1.ClusterList
	if err := cp.List(ctx, &clusters); err != nil {
		return res, fmt.Errorf("listing Clusters: %w", err)
	}
	for _, c := range clusters.Items {
		if c.Spec.ID != "" && c.Spec.ID == string(kubeSystem.UID) {
			res.Skipped = fmt.Sprintf("the member is joined as %s; the controller manager sweeps it", c.Name)
			return res, nil
		}
	}

	s := orphans.Sweeper{Cluster: name, Member: member, ControlPlane: orphans.ControlPlane{Reader: cp, Live: cp}}
	scan, err := s.Scan(ctx)
	if err != nil {
		return res, err
	}
	res.Incomplete = scan.Incomplete
	namespaces := map[string]bool{}
	for _, ns := range scan.CreatedNamespaces {
		namespaces[ns] = true
	}
	for _, f := range scan.Findings {
		switch {
		case f.Verdict == orphans.Orphan:
			removed, err := s.Remove(ctx, f)
			if err != nil {
				return res, err
			}
			if removed {
				res.Removed = append(res.Removed, f.String())
				if f.Namespace != "" {
					namespaces[f.Namespace] = true
				}
			}
		case f.Verdict.Kept() || f.Verdict == orphans.Foreign:
			res.Kept = append(res.Kept, fmt.Sprintf("%s (%s)", f, f.Verdict.Reason()))
		}
	}
	names := make([]string, 0, len(namespaces))
	for ns := range namespaces {
		names = append(names, ns)
	}
	sort.Strings(names)
	deadline := time.Now().Add(timeout)
	for _, ns := range names {
		removed, why, err := sweepNamespace(ctx, s, ns, deadline)
		if err != nil {
			return res, err
		}
		switch {
		case removed:
			res.NamespacesRemoved = append(res.NamespacesRemoved, ns)
		case why != "":
			res.NamespacesKept = append(res.NamespacesKept, ns+" ("+why+")")
		}
	}
	return res, nil
}

// sweepNamespace applies the namespace rule to ns, looking again while what
// is left in it is going, until deadline. why says why a namespace Lifeboat
// created is kept; it is empty for one it did not create, or that is gone.
func sweepNamespace(ctx context.Context, s orphans.Sweeper, ns string, deadline time.Time) (removed bool, why string, err error) {
	var j orphans.NamespaceJudgement
	err = wait.PollUntilContextTimeout(ctx, sweepPoll, max(time.Until(deadline), time.Millisecond), true, func(ctx context.Context) (bool, error) {
		var err error
		j, err = s.JudgeNamespace(ctx, ns)
		if err != nil {
			return false, err
		}
		if j.Verdict == orphans.NamespaceRemovable {
			if removed, err = s.RemoveNamespace(ctx, j); err != nil || removed {
				return true, err
			}
		}
		return j.Verdict != orphans.NamespaceWait && j.Verdict != orphans.NamespaceRemovable, nil
	})
	if err != nil && !wait.Interrupted(err) {
		return false, "", err
	}
	if removed {
		return true, "", nil
	}
	switch j.Verdict {
	case orphans.NamespaceGone, orphans.NamespaceNotCreated:
		return false, "", nil
	case orphans.NamespaceWait:
		return false, "still emptying: " + j.Detail, nil
	}
	if j.Detail != "" {
		return false, string(j.Verdict) + ": " + j.Detail, nil
	}
	return false, string(j.Verdict), nil
}
