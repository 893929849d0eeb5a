//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

var widgetGVR = schema.GroupVersionResource{Group: "example.lifeboat.dev", Version: "v1", Resource: "widgets"}

// TestCustomizationHealthRuleDrivesFailover: a ResourceInterpreterCustomization
// is the only health rule of a kind (Widget, a CRD no layer knows). A
// member's copy that the script calls unhealthy is Unhealthy in the binding
// and fails over; once the customization is deleted, the built-in rule for
// unknown kinds (Healthy once it exists) applies again, also to a copy the
// script still called unhealthy.
func TestCustomizationHealthRuleDrivesFailover(t *testing.T) {
	t.Parallel()
	installCRD(t, "testdata/flink/customization/widget-crd.yaml")
	kubeconfig := suite.state.KubeconfigPath()
	ric := "testdata/flink/customization/health-customization.yaml"
	t.Cleanup(func() {
		_, _ = kubectlE(kubeconfig, "--context", "lifeboat", "delete", "--ignore-not-found", "-f", ric)
	})
	kubectl(t, kubeconfig, "--context", "lifeboat", "apply", "-f", ric)

	ns := newNamespace(t, "ric-health")
	cp := clientFor(t, controlPlaneConfig(t))
	ws := startWidgetStatuses(t, ns)
	ws.set("member3", "stuck", false)
	applyFile(t, ns, "flink/customization/widgets.yaml")

	// "stuck" is Unhealthy by the script in member3.
	waitBindingHealth(t, cp, ns, "stuck-widget", "member3", workv1alpha2.ResourceUnhealthy)

	// "moving" runs healthy somewhere, turns unhealthy there, moves.
	x := waitBindingHealthyOn(t, cp, ns, "moving-widget", "")
	ws.set(x, "moving", false)
	waitBindingHealth(t, cp, ns, "moving-widget", x, workv1alpha2.ResourceUnhealthy)
	y := waitBindingHealthyOn(t, cp, ns, "moving-widget", x)
	t.Logf("moving: unhealthy on %s by the script, failed over to %s", x, y)
	eventually(t, failoverTimeout, "moving deleted from "+x, func(ctx context.Context) (bool, string, error) {
		u, err := getObject(ctx, ws.members[x], widgetGVR, ns, "moving")
		return u == nil, "still there", err
	})

	// Without the customization the built-in rule says Healthy, though
	// status.healthy is still false.
	kubectl(t, kubeconfig, "--context", "lifeboat", "delete", "-f", ric)
	waitBindingHealth(t, cp, ns, "stuck-widget", "member3", workv1alpha2.ResourceHealthy)
	u, err := getObject(context.Background(), ws.members["member3"], widgetGVR, ns, "stuck")
	if err != nil || u == nil {
		t.Fatalf("stuck in member3: %v", err)
	}
	if healthy, found, _ := unstructured.NestedBool(u.Object, "status", "healthy"); !found || healthy {
		t.Errorf("stuck's status.healthy = %v (found %v), want false: the flip must come from the rule", healthy, found)
	}
}

// widgetStatuses plays the Widgets' controller in every member: it keeps
// status.healthy of each Widget in ns as set (true unless set otherwise).
type widgetStatuses struct {
	members map[string]dynamic.Interface
	mu      sync.Mutex
	healthy map[string]bool // member/name → status.healthy
}

func startWidgetStatuses(t *testing.T, ns string) *widgetStatuses {
	t.Helper()
	ws := &widgetStatuses{members: memberDynamics(t), healthy: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			for m, d := range ws.members {
				ws.sync(ctx, m, d, ns)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return ws
}

func (ws *widgetStatuses) set(member, name string, healthy bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.healthy[member+"/"+name] = healthy
}

func (ws *widgetStatuses) want(member, name string) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	h, ok := ws.healthy[member+"/"+name]
	return !ok || h
}

// sync writes status.healthy of the Widgets of ns in member that differ;
// errors are retried on the next tick.
func (ws *widgetStatuses) sync(ctx context.Context, member string, d dynamic.Interface, ns string) {
	list, err := d.Resource(widgetGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for i := range list.Items {
		w := &list.Items[i]
		want := ws.want(member, w.GetName())
		if got, found, _ := unstructured.NestedBool(w.Object, "status", "healthy"); found && got == want {
			continue
		}
		_ = unstructured.SetNestedField(w.Object, want, "status", "healthy")
		_, _ = d.Resource(widgetGVR).Namespace(ns).UpdateStatus(ctx, w, metav1.UpdateOptions{})
	}
}

// waitBindingHealth waits until binding reports health in cluster.
func waitBindingHealth(t *testing.T, c client.Client, ns, binding, cluster string, health workv1alpha2.ResourceHealth) {
	t.Helper()
	eventually(t, failoverTimeout, describe("%s reported %s in %s", binding, health, cluster), func(ctx context.Context) (bool, string, error) {
		rb, err := getBinding(ctx, c, ns, binding)
		if err != nil {
			return false, "", err
		}
		item := aggregatedItem(rb, cluster)
		if item == nil {
			return false, fmt.Sprintf("no item for %s; clusters %v; tasks %s", cluster, scheduledClusters(rb), tasksSummary(rb)), nil
		}
		return item.Applied && item.Health == health, fmt.Sprintf("%s: applied=%v health=%s", cluster, item.Applied, item.Health), nil
	})
}

// waitBindingHealthyOn waits until binding is scheduled to one cluster
// (not not) where it is applied and Healthy, and returns it.
func waitBindingHealthyOn(t *testing.T, c client.Client, ns, binding, not string) string {
	t.Helper()
	var placed string
	eventually(t, failoverTimeout, describe("%s Healthy on one member (not %q)", binding, not), func(ctx context.Context) (bool, string, error) {
		rb, err := getBinding(ctx, c, ns, binding)
		if err != nil {
			return false, "", err
		}
		cs := scheduledClusters(rb)
		if len(cs) != 1 || cs[0] == not {
			return false, fmt.Sprintf("scheduled to %v; tasks %s", cs, tasksSummary(rb)), nil
		}
		placed = cs[0]
		item := aggregatedItem(rb, placed)
		if item == nil {
			return false, "no aggregated status for " + placed, nil
		}
		return item.Applied && item.Health == workv1alpha2.ResourceHealthy,
			fmt.Sprintf("%s: applied=%v health=%s", placed, item.Applied, item.Health), nil
	})
	return placed
}
