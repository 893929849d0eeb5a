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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeboat-dev/lifeboat/api/apps/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/rebalancer"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

// capWorkloads is more than --rebalance-max-concurrent's default, so that
// a rebalancer of them must move them in turns.
const capWorkloads = rebalancer.DefaultMaxConcurrent + 10

// A WorkloadRebalancer of more workloads than the fleet-wide cap, with the
// controller manager's default settings: every workload goes back to the
// clusterAffinities term it prefers, the graceful way, but never more than
// the cap are moving at once (a fresh schedule asked for and not yet made,
// or an old copy kept in a Rebalance task), and the rebalancer says that
// the others wait for their turn. The new copies cannot start at first (no
// node of member2 has the label their pods select), so the first moves
// stay open and fill the cap: the test sees the others held back, the old
// copies still running, and everything move once the pods can start. It
// fills the shared environment's fleet-wide cap meanwhile; a rebalancer of
// another test would wait its turn.
func TestWorkloadRebalancerMovesAtMostTheCapAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t, "rebalance-cap")
	cp := clientFor(t, controlPlaneConfig(t))
	key := "e2e.lifeboat.dev/rebalance-cap-" + rand.String(5)
	ms := members(t)
	labelNodes(t, ms["member3"], key, "yes")
	t.Cleanup(func() {
		labelNodes(t, ms["member3"], key, "")
		labelNodes(t, ms["member2"], key, "")
	})
	// The policy goes first: with it, removing the label would move all
	// the workloads back on the scheduler's own (a term switch).
	t.Cleanup(func() {
		policy := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cap"}}
		if err := cp.Delete(context.Background(), policy); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the policy: %v", err)
		}
		setClusterLabel(t, cp, "member2", key, "")
	})

	// Every Deployment prefers the clusters with the label, which none has
	// yet: they all start on member3, the fallback term.
	var manifest strings.Builder
	fmt.Fprintf(&manifest, `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: cap
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      labelSelector:
        matchLabels:
          rebalance: cap
  placement:
    clusterAffinities:
      - affinityName: preferred
        labelSelector:
          matchLabels:
            %s: "yes"
      - affinityName: fallback
        clusterNames: [member3]
`, key)
	for i := range capWorkloads {
		fmt.Fprintf(&manifest, `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: w%02[1]d
  labels:
    rebalance: cap
spec:
  replicas: 1
  selector:
    matchLabels:
      app: w%02[1]d
  template:
    metadata:
      labels:
        app: w%02[1]d
    spec:
      nodeSelector:
        %[2]s: "yes"
      containers:
        - image: nginx
          name: nginx
`, i, key)
	}
	applyYAML(t, ns, manifest.String())
	onlyOn := func(want string) func(ctx context.Context) (bool, string, error) {
		return func(ctx context.Context) (bool, string, error) {
			var list workv1alpha2.ResourceBindingList
			if err := cp.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return false, "", err
			}
			var elsewhere []string
			for i := range list.Items {
				b := &list.Items[i]
				got := strings.Join(scheduledClusters(b), ",")
				health := workv1alpha2.ResourceHealth("none reported")
				if item := aggregatedItem(b, want); item != nil {
					health = item.Health
				}
				if got != want || len(b.Spec.GracefulEvictionTasks) > 0 || health != workv1alpha2.ResourceHealthy {
					elsewhere = append(elsewhere, fmt.Sprintf("%s on %q, tasks %s, health in %s: %s", b.Name, got, cfTasks(b), want, health))
				}
			}
			if len(list.Items) != capWorkloads || len(elsewhere) > 0 {
				return false, fmt.Sprintf("%d bindings; not only on %s: %s", len(list.Items), want, strings.Join(elsewhere, "; ")), nil
			}
			return true, "", nil
		}
	}
	eventually(t, 3*time.Minute, fmt.Sprintf("%d Deployments placed on member3 and Healthy", capWorkloads), onlyOn("member3"))

	// The preferred cluster appears; nothing moves by itself.
	setClusterLabel(t, cp, "member2", key, "yes")
	moving := watchMoving(t, ns)

	name := "cap-" + rand.String(5)
	t.Cleanup(func() {
		rb := &appsv1alpha1.WorkloadRebalancer{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := cp.Delete(context.Background(), rb); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting WorkloadRebalancer %s: %v", name, err)
		}
	})
	applyYAML(t, "", fmt.Sprintf(`
apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata:
  name: %s
spec:
  workloadSelector:
    apiVersion: apps/v1
    kind: Deployment
    namespace: %s
    labelSelector:
      matchLabels:
        rebalance: cap
`, name, ns))

	// The first moves fill the cap and stay open: the new copies cannot
	// start. The others wait, and the copies left behind keep running.
	// (Another test's rebalances would take places too: the test counts
	// its own.)
	held := func(ctx context.Context) (bool, string) {
		evs, err := eventsFor(ctx, clientsetFor(t, controlPlaneConfig(t)), "default", "WorkloadRebalancer", name)
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs {
			if e.Reason == rebalancer.EventReasonHeld && strings.Contains(e.Message, fmt.Sprintf("of %d workloads wait for their turn", capWorkloads)) {
				return true, e.Message
			}
		}
		return false, "no " + rebalancer.EventReasonHeld + " Event: " + summarizeEvents(evs)
	}
	var tasks, asked int
	cfEventually(t, 3*time.Minute, "the cap filled: each request written made, its move open, the rest held back", func(ctx context.Context) (bool, string, error) {
		var list workv1alpha2.ResourceBindingList
		if err := cp.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, "", err
		}
		tasks, asked = 0, 0
		for i := range list.Items {
			b := &list.Items[i]
			if rebalanceTask(b) {
				tasks++
			}
			if b.Spec.RescheduleTriggeredAt != nil {
				asked++
			}
		}
		ok, said := held(ctx)
		return ok && asked > 0 && tasks == asked, fmt.Sprintf("%d Rebalance tasks open, %d requests written; %s; %s", tasks, asked, said, moving), nil
	})
	if asked >= capWorkloads || asked > rebalancer.DefaultMaxConcurrent {
		t.Errorf("%d of %d workloads asked for while no move could end, want at most %d", asked, capWorkloads, rebalancer.DefaultMaxConcurrent)
	}
	if n := memberDeploymentCount(t, ms["member3"], ns); n != capWorkloads {
		t.Errorf("%d of the %d copies left behind in member3 still there while the new ones cannot start", n, capWorkloads)
	}
	t.Logf("held at %d moves open of %d workloads", asked, capWorkloads)

	// The pods can start in member2: the moves end, the rest go in turn.
	labelNodes(t, ms["member2"], key, "yes")
	cfEventually(t, 5*time.Minute, "every workload rebalanced: Successful, and only on member2", func(ctx context.Context) (bool, string, error) {
		var rb appsv1alpha1.WorkloadRebalancer
		if err := cp.Get(ctx, types.NamespacedName{Name: name}, &rb); err != nil {
			return false, "", err
		}
		ok := 0
		for _, w := range rb.Status.ObservedWorkloads {
			if w.Result == appsv1alpha1.RebalanceSuccessful {
				ok++
			}
		}
		if rb.Status.FinishTime == nil || ok != capWorkloads {
			return false, fmt.Sprintf("%d of %d workloads Successful, finished %v; %s", ok, len(rb.Status.ObservedWorkloads), rb.Status.FinishTime, moving), nil
		}
		return onlyOn("member2")(ctx)
	})

	// At no moment were more than the cap moving; every workload was.
	peak, seen := moving.peakMoving()
	switch {
	case moving.ended():
		t.Errorf("the watch on the bindings ended early; what it saw does not cover the rebalance: %s", moving)
	case peak > rebalancer.DefaultMaxConcurrent:
		t.Errorf("%d workloads were moving at once, more than --rebalance-max-concurrent's %d: %s", peak, rebalancer.DefaultMaxConcurrent, moving)
	case seen < capWorkloads:
		t.Errorf("%d of %d workloads seen moving: %s", seen, capWorkloads, moving)
	default:
		t.Logf("at most %d of %d workloads moving at once", peak, capWorkloads)
	}

	// Each move was graceful: a Rebalance entry from member3.
	var list workv1alpha2.ResourceBindingList
	if err := cp.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if rebalanceEntry(&list.Items[i], "member3") == nil {
			t.Errorf("%s: no Rebalance entry from member3 in its history", list.Items[i].Name)
		}
	}
}

// movingWatch follows the ResourceBindings of a namespace and counts how
// many count against the rebalance cap (rebalancer.Moving) after each
// change, in the API server's order.
type movingWatch struct {
	mu     sync.Mutex
	now    map[string]bool
	ever   map[string]bool
	peak   int
	events int
	closed bool
}

func watchMoving(t *testing.T, ns string) *movingWatch {
	t.Helper()
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(controlPlaneConfig(t), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wi, err := c.Watch(ctx, &workv1alpha2.ResourceBindingList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatalf("watching ResourceBindings: %v", err)
	}
	w := &movingWatch{now: map[string]bool{}, ever: map[string]bool{}}
	go func() {
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			b, ok := ev.Object.(*workv1alpha2.ResourceBinding)
			if !ok {
				continue
			}
			w.mu.Lock()
			w.events++
			m := ev.Type != watch.Deleted && rebalancer.Moving(&b.Spec, &b.Status, b.Annotations, b.Generation, true)
			if m {
				w.now[b.Name], w.ever[b.Name] = true, true
			} else {
				delete(w.now, b.Name)
			}
			w.peak = max(w.peak, len(w.now))
			w.mu.Unlock()
		}
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
	}()
	return w
}

// peakMoving returns the most bindings moving at once and how many were
// ever seen moving.
func (w *movingWatch) peakMoving() (peak, seen int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak, len(w.ever)
}

// ended reports whether the watch stopped before the test did.
func (w *movingWatch) ended() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

func (w *movingWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("moving now %d, at most %d, ever %d (%d watch events, closed %t)", len(w.now), w.peak, len(w.ever), w.events, w.closed)
}

// rebalanceTask reports whether b has an open Rebalance eviction task.
func rebalanceTask(b *workv1alpha2.ResourceBinding) bool {
	for _, t := range b.Spec.GracefulEvictionTasks {
		if t.Reason == workv1alpha2.EvictionReasonRebalance {
			return true
		}
	}
	return false
}

// labelNodes sets (value "" removes) a label on every node of a member.
func labelNodes(t *testing.T, member kubernetes.Interface, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	if value == "" {
		patch = fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, key)
	}
	eventually(t, 30*time.Second, "label "+key+" on the member's nodes", func(ctx context.Context) (bool, string, error) {
		nodes, err := member.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		for _, n := range nodes.Items {
			if _, err := member.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				return false, "", err
			}
		}
		return len(nodes.Items) > 0, fmt.Sprintf("%d nodes", len(nodes.Items)), nil
	})
}

// memberDeploymentCount counts the Deployments of ns in a member.
func memberDeploymentCount(t *testing.T, member kubernetes.Interface, ns string) int {
	t.Helper()
	list, err := member.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing Deployments in the member: %v", err)
	}
	return len(list.Items)
}
