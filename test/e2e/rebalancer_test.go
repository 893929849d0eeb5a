//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeboat-dev/lifeboat/api/apps/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// TestWorkloadRebalancer proves the way back after a cluster failover: a
// Deployment that prefers member1 fails over when member1 is killed, stays
// where it went when member1 returns, and goes back with Karmada's own
// WorkloadRebalancer manifest. The copy it leaves is deleted only after the
// copy in member1 is Healthy (a Rebalance eviction task in between, and a
// Rebalance entry in the failover history). It stops a member, so it runs
// on its own environment.
func TestWorkloadRebalancer(t *testing.T) {
	t.Parallel()
	e := startCFEnv(t, shortPeriods)
	t.Cleanup(func() {
		if problems := controllerLogTripwires(e.state, 0); len(problems) > 0 {
			t.Errorf("the private controller manager logged problems no test may cause:\n%s", strings.Join(problems, "\n"))
		}
	})
	ctx := context.Background()
	ns := e.namespace(t, "rebalance")
	e.apply(t, ns, cfDeployment("web", 2))
	e.apply(t, ns, cfPinnedPolicy("web", byName("web"), "member1", "", ""))
	if on := e.waitPlaced(t, ns, "web", 2, ""); on != "member1" {
		t.Fatalf("web placed on %s, want member1 (its first affinity group)", on)
	}

	// 1. member1 crashes: web fails over to the backup group.
	e.kill(t, "member1")
	to := e.waitPlaced(t, ns, "web", 2, "member1")
	e.waitHistory(t, ns, "web", "member1", workv1alpha2.EvictionReasonTaintUntolerated)

	// 2. member1 returns: the stale copy goes, web stays on the backup.
	e.start(t, "member1")
	e.waitGoneFrom(t, ns, "web", "member1")
	cfEventually(t, cfTimeout, "the failover's eviction task closed", func(ctx context.Context) (bool, string, error) {
		ok, seen, err := e.staysOn(ns, "web", to)(ctx)
		return ok, seen, err
	})

	// 3. Karmada's example WorkloadRebalancer, as written but for the
	// workload's namespace and a short TTL.
	w := e.watchDeployments(t, ns, "web", "member1", to)
	rebalancers := e.watchRebalancers(t)
	e.apply(t, "", fmt.Sprintf(`
apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata:
  name: demo
spec:
  workloads:
    - apiVersion: apps/v1
      kind: Deployment
      name: web
      namespace: %s
  ttlSecondsAfterFinished: 5
`, ns))

	// The old copy is kept in a Rebalance task while the new one starts.
	cfEventually(t, cfTimeout, "a Rebalance eviction task from "+to, func(ctx context.Context) (bool, string, error) {
		rb, err := e.binding(ctx, ns, "web")
		if err != nil {
			return false, "", err
		}
		if task := findTask(rb, to); task != nil && task.Reason == workv1alpha2.EvictionReasonRebalance {
			return true, "", nil
		}
		if h := rebalanceEntry(rb, to); h != nil {
			return true, "", nil // already closed; the history says it existed
		}
		return false, fmt.Sprintf("clusters %v; tasks %s", scheduledClusters(rb), cfTasks(rb)), nil
	})
	if on := e.waitPlaced(t, ns, "web", 2, to); on != "member1" {
		t.Fatalf("web rebalanced to %s, want member1", on)
	}
	e.waitGoneFrom(t, ns, "web", to)
	inOrder, ok, detail := w.availableThenGone("member1", to)
	switch {
	case !ok:
		t.Errorf("watch events incomplete (%s): %s", detail, w)
	case !inOrder:
		t.Errorf("the copy in %s went before the copy in member1 was available: %s: %s", to, detail, w)
	default:
		t.Logf("in order: %s", detail)
	}
	entry := e.waitHistory(t, ns, "web", to, workv1alpha2.EvictionReasonRebalance)
	if entry.Producer != workv1alpha2.EvictionProducerScheduler || strings.Join(entry.ClustersAfter, ",") != "member1" {
		t.Errorf("history entry: %+v", entry)
	}

	// The rebalancer says Successful, finishes, and is deleted 5 s later.
	cfEventually(t, cfTimeout, "WorkloadRebalancer demo deleted after its TTL", func(ctx context.Context) (bool, string, error) {
		err := e.cp.Get(ctx, types.NamespacedName{Name: "demo"}, &appsv1alpha1.WorkloadRebalancer{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", err
	})
	last, deletedAfter := rebalancers.lastBeforeDeletion("demo")
	if last == nil || last.Status.FinishTime == nil || len(last.Status.ObservedWorkloads) != 1 ||
		last.Status.ObservedWorkloads[0].Result != appsv1alpha1.RebalanceSuccessful || last.Status.ObservedGeneration != last.Generation {
		t.Errorf("last status before deletion: %+v", last)
	} else if deletedAfter < 4*time.Second {
		t.Errorf("deleted %s after finishTime, want about 5s", deletedAfter)
	}

	// 4. A rebalancer naming a workload that does not exist.
	e.apply(t, "", fmt.Sprintf(`
apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata:
  name: missing
spec:
  workloads:
    - apiVersion: apps/v1
      kind: Deployment
      name: does-not-exist
      namespace: %s
`, ns))
	cfEventually(t, cfTimeout, "WorkloadRebalancer missing: Failed, ReferencedBindingNotFound", func(ctx context.Context) (bool, string, error) {
		var rb appsv1alpha1.WorkloadRebalancer
		if err := e.cp.Get(ctx, types.NamespacedName{Name: "missing"}, &rb); err != nil {
			return false, "", err
		}
		ws := rb.Status.ObservedWorkloads
		ok := rb.Status.FinishTime != nil && len(ws) == 1 && ws[0].Result == appsv1alpha1.RebalanceFailed &&
			ws[0].Reason == appsv1alpha1.RebalanceObjectNotFound
		return ok, fmt.Sprintf("%+v", rb.Status), nil
	})
	if d, err := e.memberDeployment(ctx, "member1", ns, "web"); err != nil || !deploymentReady(d, 2) {
		t.Errorf("web in member1 after the rebalance: %v", err)
	}
	out := kubectl(t, e.kubeconfig, "--context", localenv.ControlPlaneName, "get", "workloadrebalancers")
	if !strings.Contains(out, "missing") {
		t.Errorf("kubectl get workloadrebalancers:\n%s", out)
	}
}

func rebalanceEntry(rb *workv1alpha2.ResourceBinding, from string) *workv1alpha2.FailoverHistoryItem {
	for i, h := range rb.Status.FailoverHistory {
		if h.FromCluster == from && h.Reason == workv1alpha2.EvictionReasonRebalance {
			return &rb.Status.FailoverHistory[i]
		}
	}
	return nil
}

// watchDeployments is watchMemberDeployments on the named members of this
// environment.
func (e *privateEnv) watchDeployments(t *testing.T, ns, name string, members ...string) *deploymentWatch {
	t.Helper()
	clusters := make(map[string]kubernetes.Interface, len(members))
	for _, m := range members {
		clusters[m] = e.members[m]
	}
	return watchDeploymentsIn(t, clusters, ns, name)
}

// rebalancerWatch records every version of every WorkloadRebalancer seen,
// so a status that lives only seconds before its TTL deletes it is not
// missed.
type rebalancerWatch struct {
	mu      sync.Mutex
	last    map[string]*appsv1alpha1.WorkloadRebalancer
	deleted map[string]time.Time
}

func (e *privateEnv) watchRebalancers(t *testing.T) *rebalancerWatch {
	t.Helper()
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(clusterConfig(t, e.state, localenv.ControlPlaneName), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wi, err := c.Watch(ctx, &appsv1alpha1.WorkloadRebalancerList{})
	if err != nil {
		t.Fatalf("watching WorkloadRebalancers: %v", err)
	}
	w := &rebalancerWatch{last: map[string]*appsv1alpha1.WorkloadRebalancer{}, deleted: map[string]time.Time{}}
	go func() {
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			rb, ok := ev.Object.(*appsv1alpha1.WorkloadRebalancer)
			if !ok {
				continue
			}
			w.mu.Lock()
			if ev.Type == watch.Deleted {
				w.deleted[rb.Name] = time.Now()
			} else {
				w.last[rb.Name] = rb
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// lastBeforeDeletion returns the last version of name seen before it was
// deleted, and how long after its finishTime the deletion was seen.
func (w *rebalancerWatch) lastBeforeDeletion(name string) (*appsv1alpha1.WorkloadRebalancer, time.Duration) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		last := w.last[name]
		at, ok := w.deleted[name]
		w.mu.Unlock()
		if ok || time.Now().After(deadline) {
			if last == nil || last.Status.FinishTime == nil || !ok {
				return last, 0
			}
			return last, at.Sub(last.Status.FinishTime.Time)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
