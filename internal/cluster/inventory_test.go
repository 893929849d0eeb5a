package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func TestConnectionLost(t *testing.T) {
	live := context.Background()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	gr := schema.GroupResource{Resource: "pods"}
	cases := map[string]struct {
		ctx  context.Context
		err  error
		want bool
	}{
		"no error":                  {ctx: live},
		"refused":                   {ctx: live, err: errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), want: true},
		"timed out":                 {ctx: live, err: context.DeadlineExceeded, want: true},
		"answered: forbidden":       {ctx: live, err: apierrors.NewForbidden(gr, "", errors.New("no"))},
		"answered: too many":        {ctx: live, err: apierrors.NewTooManyRequests("slow down", 1)},
		"answered: gone":            {ctx: live, err: apierrors.NewResourceExpired("too old")},
		"informer stopped":          {ctx: stopped, err: context.Canceled},
		"informer stopped, refused": {ctx: stopped, err: errors.New("connection refused")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := connectionLost(tc.ctx, tc.err); got != tc.want {
				t.Errorf("connectionLost = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestReportingConnectionLoss(t *testing.T) {
	var lost, first atomic.Int32
	var listErr, watchErr error
	conn := &connection{lost: func(f bool) {
		lost.Add(1)
		if f {
			first.Add(1)
		}
	}}
	lw := reportingConnectionLoss(&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.PodList{}, listErr
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewEmptyWatch(), watchErr
		},
	}, conn)
	ctx := context.Background()
	check := func(step string, wantLost, wantFirst int32) {
		t.Helper()
		if lost.Load() != wantLost || first.Load() != wantFirst {
			t.Fatalf("%s: lost %d (first %d), want %d (first %d)", step, lost.Load(), first.Load(), wantLost, wantFirst)
		}
	}
	if _, err := lw.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	check("a good list", 0, 0)
	watchErr = errors.New("connection refused")
	for range 3 {
		if _, err := lw.WatchWithContext(ctx, metav1.ListOptions{}); err == nil {
			t.Fatal("the watch's error was swallowed")
		}
	}
	check("three refused watches", 3, 1)
	listErr = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	if _, err := lw.ListWithContext(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("the list's error was swallowed")
	}
	check("a forbidden list", 3, 1)
	watchErr = nil
	if _, err := lw.WatchWithContext(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	watchErr = errors.New("connection reset by peer")
	if _, err := lw.WatchWithContext(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("the watch's error was swallowed")
	}
	check("lost again after a good watch", 4, 2)
}

// TestInventorySummaryMatchesPods: the slim informers give the summary the
// full objects would, finished pods excluded by the field selector, and a
// refused watch is reported as a lost connection.
func TestInventorySummaryMatchesPods(t *testing.T) {
	node := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"}},
		Status: corev1.NodeStatus{
			Allocatable: resources("cpu", "8"),
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	sidecar := container(resources("cpu", "100m"))
	sidecar.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: "a", Annotations: map[string]string{"big": "x"}},
			Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{container(resources("cpu", "1"))}, InitContainers: []corev1.Container{sidecar}, Overhead: resources("cpu", "10m")},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "b"},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{container(resources("cpu", "2"))}, Resources: &corev1.ResourceRequirements{Requests: resources("memory", "1Gi")}},
			Status: corev1.PodStatus{Phase: corev1.PodPending}},
	}
	want := newSummaryBuilder()
	want.addNode(&node)
	for i := range pods {
		want.addPod(&pods[i])
	}

	cs := fake.NewClientset(&node, &pods[0], &pods[1])
	var selector atomic.Value
	cs.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		selector.Store(a.(k8stesting.ListAction).GetListRestrictions().Fields.String())
		return false, nil, nil
	})
	var lost atomic.Int32
	inv := startInventory(cs, true, func(bool) { lost.Add(1) })
	defer inv.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := newSummaryBuilder()
	if err := inv.eachNode(ctx, got.addNode); err != nil {
		t.Fatal(err)
	}
	if err := inv.eachPod(ctx, got.addUsage); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.resourceSummary(), got.resourceSummary()); diff != "" {
		t.Errorf("resourceSummary (-full objects +inventory):\n%s", diff)
	}
	if diff := cmp.Diff(want.nodeSummary(), got.nodeSummary()); diff != "" {
		t.Errorf("nodeSummary (-full objects +inventory):\n%s", diff)
	}
	if s, _ := selector.Load().(string); s != "status.phase!=Failed,status.phase!=Succeeded" && s != "status.phase!=Succeeded,status.phase!=Failed" {
		t.Errorf("pods listed with field selector %q, want the non-terminal phases", s)
	}
	for _, obj := range inv.current().pods.GetStore().List() {
		u, ok := obj.(*PodUsage)
		if !ok {
			t.Fatalf("the pod informer holds a %T, want a *PodUsage", obj)
		}
		if len(u.Annotations) != 0 {
			t.Errorf("pod %s kept its annotations: the inventory should hold only what the summary reads", u.Name)
		}
	}
	if lost.Load() != 0 {
		t.Errorf("a reachable member was reported lost %d times", lost.Load())
	}
}

func TestInventoryWithoutPods(t *testing.T) {
	inv := startInventory(fake.NewClientset(), false, nil)
	defer inv.stop()
	if err := inv.eachPod(context.Background(), func(*PodUsage) {}); err == nil {
		t.Errorf("eachPod without resource modeling: no error")
	}
}

func TestInventoryReportsRefusedWatch(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependWatchReactor("nodes", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	})
	lost := make(chan struct{}, 16)
	inv := startInventory(cs, false, func(bool) {
		select {
		case lost <- struct{}{}:
		default:
		}
	})
	defer inv.stop()
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatalf("a refused watch was not reported within 10s")
	}
}

// TestInventoryRestartsWhenReachedAfterLoss: once a probe reaches a member
// whose informers lost it, they start afresh instead of waiting out the
// reflector's back-off, so a new failure is reported at once and as the
// first of a new outage. Informers that are connected are never restarted.
func TestInventoryRestartsWhenReachedAfterLoss(t *testing.T) {
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	var refuse atomic.Bool
	refuse.Store(true)
	cs.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
		}
		return false, nil, nil
	})
	firsts := make(chan struct{}, 16)
	inv := startInventory(cs, false, func(first bool) {
		if first {
			select {
			case firsts <- struct{}{}:
			default:
			}
		}
	})
	defer inv.stop()
	waitFirst := func(step string) {
		t.Helper()
		select {
		case <-firsts:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no first loss reported within 10s", step)
		}
	}
	waitFirst("refused from the start")

	// Still refused: only a restart can report a first loss again.
	before := inv.current()
	if !inv.reached() {
		t.Fatal("reached after a loss did not restart the informers")
	}
	if inv.current() == before {
		t.Fatal("the informers were not replaced")
	}
	waitFirst("refused after the restart")

	refuse.Store(false)
	if !inv.reached() {
		t.Fatal("reached after the second loss did not restart the informers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var names []string
	if err := inv.eachNode(ctx, func(n *corev1.Node) { names = append(names, n.Name) }); err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(names, []string{"n1"}) {
		t.Errorf("nodes after the restart: %v, want [n1]", names)
	}
	connected := inv.current()
	for range 3 {
		if inv.reached() {
			t.Fatal("connected informers were restarted")
		}
	}
	if inv.current() != connected {
		t.Fatal("connected informers were replaced")
	}
}
