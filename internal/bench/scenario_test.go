package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

func TestManifestsDecode(t *testing.T) {
	members := []string{"member1", "member2", "member3"}
	d, err := decodeDeployment(deploymentYAML("prop-0001", "prop", 1), "ns")
	if err != nil {
		t.Fatal(err)
	}
	if d.Namespace != "ns" || *d.Spec.Replicas != 1 || d.Labels[LabelGroup] != "prop" || d.Spec.Template.Labels["app"] != "prop-0001" {
		t.Errorf("Deployment decoded as %+v", d.ObjectMeta)
	}
	cases := map[string]struct {
		text  string
		check func(p *policyv1alpha1.PropagationPolicy) bool
	}{
		"spread": {text: spreadPolicyYAML("bench", "prop", members), check: func(p *policyv1alpha1.PropagationPolicy) bool {
			return slices.Equal(p.Spec.Placement.ClusterAffinity.ClusterNames, members) &&
				p.Spec.Placement.SpreadConstraints[0].MaxGroups == 1 &&
				p.Spec.ResourceSelectors[0].LabelSelector.MatchLabels[LabelGroup] == "prop"
		}},
		"seed nginx": {text: appFailoverPolicyYAML("nginx-propagation", "nginx", members, 10), check: func(p *policyv1alpha1.PropagationPolicy) bool {
			a := p.Spec.Failover.Application
			return *a.DecisionConditions.TolerationSeconds == 10 && a.PurgeMode == policyv1alpha1.PurgeModeNever &&
				p.Spec.PropagateDeps && p.Spec.ResourceSelectors[0].Name == "nginx"
		}},
		"pinned": {text: pinnedPolicyYAML("bench", "cf", "member1", others(members, "member1")), check: func(p *policyv1alpha1.PropagationPolicy) bool {
			terms := p.Spec.Placement.ClusterAffinities
			return len(terms) == 2 && slices.Equal(terms[0].ClusterNames, []string{"member1"}) &&
				slices.Equal(terms[1].ClusterNames, []string{"member2", "member3"}) &&
				p.Spec.Placement.ClusterTolerations == nil && p.Spec.Placement.SpreadConstraints[0].MaxGroups == 1
		}},
		"failback": {text: failbackPolicyYAML("bench", "fb", "member1", others(members, "member1"), 20*time.Second), check: func(p *policyv1alpha1.PropagationPolicy) bool {
			f := p.Spec.Failover
			return len(p.Spec.Placement.ClusterAffinities) == 2 && f != nil && f.Cluster != nil &&
				f.Failback != nil && *f.Failback.StabilizationSeconds == 20
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := decodePolicy(tc.text, "ns")
			if err != nil {
				t.Fatal(err)
			}
			if p.Namespace != "ns" || !tc.check(p) {
				t.Errorf("policy decoded as %+v", p.Spec)
			}
		})
	}
}

func newFakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

// Cordoning leaves an already-cordoned node alone, so that the cleanup does
// not uncordon what a user cordoned.
func TestCordonAndUncordonRestoreNodes(t *testing.T) {
	ctx := context.Background()
	node := func(name string, unschedulable bool) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: unschedulable}}
	}
	c := newFakeClient(t, node("member1-control-plane", false), node("member1-worker", false), node("member1-drained", true))

	cordoned, err := cordonNodes(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(cordoned)
	if !slices.Equal(cordoned, []string{"member1-control-plane", "member1-worker"}) {
		t.Errorf("cordoned %v", cordoned)
	}
	unschedulable := func() map[string]bool {
		var nodes corev1.NodeList
		if err := c.List(ctx, &nodes); err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, n := range nodes.Items {
			out[n.Name] = n.Spec.Unschedulable
		}
		return out
	}
	for name, u := range unschedulable() {
		if !u {
			t.Errorf("%s still schedulable after cordon", name)
		}
	}
	if err := uncordonNodes(ctx, c, cordoned); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"member1-control-plane": false, "member1-worker": false, "member1-drained": true}
	for name, u := range unschedulable() {
		if u != want[name] {
			t.Errorf("after uncordon %s unschedulable=%v, want %v", name, u, want[name])
		}
	}
}

func TestCreateAllCreatesEveryObject(t *testing.T) {
	ctx := context.Background()
	c := newFakeClient(t)
	var objs []client.Object
	for i := 0; i < 40; i++ {
		d, err := decodeDeployment(deploymentYAML(fmt.Sprintf("web-%02d", i), "g", 1), "ns")
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, d)
	}
	if err := createAll(ctx, c, objs); err != nil {
		t.Fatal(err)
	}
	var list appsv1.DeploymentList
	if err := c.List(ctx, &list, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != len(objs) {
		t.Errorf("created %d Deployments, want %d", len(list.Items), len(objs))
	}
	if err := createAll(ctx, c, objs[:1]); err == nil {
		t.Error("creating an existing object again reported no error")
	}
}

// A run's cleanup waits until the members' pods of its namespace are gone.
func TestWaitMembersEmpty(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "run"}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "other-run"}}
	members := map[string]client.Client{"member1": newFakeClient(t, other), "member2": newFakeClient(t, pod)}

	done := make(chan bool)
	go func() { done <- waitMembersEmpty(ctx, members, "run", 10*time.Millisecond) }()
	select {
	case <-done:
		t.Fatal("returned while member2 still held a pod of the run")
	case <-time.After(100 * time.Millisecond):
	}
	if err := members["member2"].Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-done:
		if !ok {
			t.Error("reported a timeout")
		}
	case <-ctx.Done():
		t.Fatal("still waiting after the pod was deleted")
	}

	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	if waitMembersEmpty(short, map[string]client.Client{"member1": newFakeClient(t, pod)}, "run", 10*time.Millisecond) {
		t.Error("no timeout reported while a pod stayed")
	}
}
