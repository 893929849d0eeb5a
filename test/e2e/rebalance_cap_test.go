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
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeboat-dev/lifeboat/api/apps/v1alpha1"
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
// the others wait for their turn.
func TestWorkloadRebalancerMovesAtMostTheCapAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t, "rebalance-cap")
	cp := clientFor(t, controlPlaneConfig(t))
	key := "e2e.lifeboat.dev/rebalance-cap-" + rand.String(5)
	t.Cleanup(func() { setClusterLabel(t, cp, "member2", key, "") })

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
      containers:
        - image: nginx
          name: nginx
`, i)
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
				if got := strings.Join(scheduledClusters(b), ","); got != want || len(b.Spec.GracefulEvictionTasks) > 0 {
					elsewhere = append(elsewhere, fmt.Sprintf("%s on %q, tasks %s", b.Name, got, cfTasks(b)))
				}
			}
			if len(list.Items) != capWorkloads || len(elsewhere) > 0 {
				return false, fmt.Sprintf("%d bindings; not only on %s: %s", len(list.Items), want, strings.Join(elsewhere, "; ")), nil
			}
			return true, "", nil
		}
	}
	eventually(t, 3*time.Minute, fmt.Sprintf("%d Deployments placed on member3", capWorkloads), onlyOn("member3"))

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

	// The rebalancer said that some waited for their turn.
	cs := clientsetFor(t, controlPlaneConfig(t))
	evs, err := eventsFor(ctx, cs, "default", "WorkloadRebalancer", name)
	if err != nil {
		t.Fatal(err)
	}
	held := false
	for _, e := range evs {
		held = held || (e.Reason == rebalancer.EventReasonHeld &&
			strings.Contains(e.Message, fmt.Sprintf("of %d workloads wait for their turn", capWorkloads)))
	}
	if !held {
		t.Errorf("no %s Event saying workloads wait for their turn: %s", rebalancer.EventReasonHeld, summarizeEvents(evs))
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
			m := ev.Type != watch.Deleted && rebalancer.Moving(&b.Spec, &b.Status, b.Annotations, true)
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

func (w *movingWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("moving now %d, at most %d, ever %d (%d watch events, closed %t)", len(w.now), w.peak, len(w.ever), w.events, w.closed)
}
