//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/execution"
	"github.com/lifeboat-dev/lifeboat/internal/localenv"
	"github.com/lifeboat-dev/lifeboat/internal/orphans"
)

// cleanupTimeout bounds the waits of the member clean-up scenarios that do
// not wait out the orphan grace period.
const cleanupTimeout = 2 * time.Minute

// memberNamespaceGone is a condition: namespace ns no longer exists in the
// member.
func memberNamespaceGone(m kubernetes.Interface, ns string) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		got, err := m.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true, "", nil
		case err != nil:
			return false, "", err
		}
		return false, fmt.Sprintf("namespace %s: phase %s, annotations %v", ns, got.Status.Phase, got.Annotations), nil
	}
}

// memberNamespaceThere is a condition: namespace ns exists in the member
// and is not terminating.
func memberNamespaceThere(m kubernetes.Interface, ns string) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		got, err := m.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return got.DeletionTimestamp == nil, "phase " + string(got.Status.Phase), nil
	}
}

// deploymentIn is a condition: Deployment ns/name is in the member.
func deploymentIn(m kubernetes.Interface, ns, name string) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		d, err := m.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return false, "not there", nil
		case err != nil:
			return false, "", err
		}
		return d.DeletionTimestamp == nil, fmt.Sprintf("there (uid %s, deleting %t)", d.UID, d.DeletionTimestamp != nil), nil
	}
}

func negated(cond func(ctx context.Context) (bool, string, error)) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		ok, seen, err := cond(ctx)
		return !ok, seen, err
	}
}

// Namespaces Lifeboat creates in a member for the objects it applies go once
// nothing is left in them; a namespace that was there before, or that holds
// someone else's object, stays.
func TestMemberNamespacesLifeboatCreatedAreRemovedOnceEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cp := clientsetFor(t, controlPlaneConfig(t))
	member := clientsetFor(t, memberConfig(t, "member1"))
	created := newNamespace(t, "ns-created")
	before := newNamespace(t, "ns-before")
	shared := newNamespace(t, "ns-shared")
	// ns-before exists in the member before Lifeboat puts anything there.
	if _, err := member.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: before}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, ns := range []string{before, shared} {
			_ = member.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		}
	})
	for _, ns := range []string{created, before, shared} {
		applyYAML(t, ns, pinnedTo("web", "member1")+"---"+nginxDeployment("web", ""))
	}
	for _, ns := range []string{created, before, shared} {
		eventually(t, propagationTimeout, "web in member1 namespace "+ns, deploymentIn(member, ns, "web"))
	}
	for ns, want := range map[string]bool{created: true, before: false, shared: true} {
		got, err := member.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if execution.CreatedByLifeboat(got) != want {
			t.Fatalf("member namespace %s marked as created by Lifeboat: %t, want %t (annotations %v)", ns, !want, want, got.Annotations)
		}
	}
	// Someone else keeps a ConfigMap in ns-shared.
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: shared}, Data: map[string]string{"k": "v"}}
	if _, err := member.CoreV1().ConfigMaps(shared).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, ns := range []string{created, before, shared} {
		if err := cp.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	eventually(t, cleanupTimeout, "member1 namespace "+created+" removed", memberNamespaceGone(member, created))
	for _, ns := range []string{before, shared} {
		eventually(t, cleanupTimeout, "web gone from member1 namespace "+ns, negated(deploymentIn(member, ns, "web")))
	}
	// Both were checked when their Works went, as the removed one was.
	until := time.Now().Add(15 * time.Second)
	stays(t, until, "member1 namespace "+before+" (there before Lifeboat) stays", memberNamespaceThere(member, before))
	stays(t, until, "member1 namespace "+shared+" (holds someone's ConfigMap) stays", memberNamespaceThere(member, shared))
	if _, err := member.CoreV1().ConfigMaps(shared).Get(ctx, "theirs", metav1.GetOptions{}); err != nil {
		t.Fatalf("someone's ConfigMap: %v", err)
	}
}

// cleanupEnv is TestMembersUnjoined's own environment: it stops and unjoins
// members, so it must not be the suite's shared one.
type cleanupEnv struct{ *privateEnv }

// startCleanupEnv brings up a private three-member environment whose
// members are found down or back within seconds; the orphan grace period
// and scan interval are the defaults.
func startCleanupEnv(t *testing.T) *cleanupEnv {
	t.Helper()
	e := &cleanupEnv{startPrivateEnv(t, envOptions{members: 3, controllerManagerArgs: shortPeriods.args})}
	for _, m := range []string{"member1", "member2", "member3"} {
		e.waitReady(t, m, metav1.ConditionTrue)
	}
	return e
}

func (e *cleanupEnv) cpFlags() []string {
	return []string{"--control-plane-kubeconfig", e.kubeconfig, "--control-plane-context", localenv.ControlPlaneName}
}

// deleteTemplate deletes Deployment name and its policy from ns in the
// control plane and waits until their binding is gone.
func (e *cleanupEnv) deleteTemplate(t *testing.T, ns, name string) {
	t.Helper()
	kubectl(t, e.kubeconfig, "--context", localenv.ControlPlaneName, "-n", ns, "delete", "deployment/"+name, "propagationpolicy/"+name)
	eventually(t, cleanupTimeout, "binding "+ns+"/"+name+"-deployment gone", func(ctx context.Context) (bool, string, error) {
		var rb workv1alpha2.ResourceBinding
		err := e.cp.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-deployment"}, &rb)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, fmt.Sprintf("binding still there (err %v)", err), nil
	})
}

func (e *cleanupEnv) waitReady(t *testing.T, member string, want metav1.ConditionStatus) {
	t.Helper()
	eventually(t, cleanupTimeout, describe("Cluster %s Ready=%s", member, want),
		e.clusterConditionIs(member, clusterv1alpha1.ClusterConditionReady, want, nil))
}

// stop stops member's API server and waits until its Cluster is not Ready.
func (e *cleanupEnv) stop(t *testing.T, member string) {
	t.Helper()
	e.run(t, "env", "stop", member, "--state-dir", e.dir)
	e.waitReady(t, member, metav1.ConditionFalse)
}

// start starts member's API server again, and restarts its controllers so
// that their informers do not wait out client-go's back-off.
func (e *cleanupEnv) start(t *testing.T, member string) {
	t.Helper()
	e.run(t, "env", "start", member, "--state-dir", e.dir)
	e.restartMemberComponents(t, member)
}

// unjoin unjoins member and waits until its Cluster is gone.
func (e *cleanupEnv) unjoin(t *testing.T, member string, flags ...string) string {
	t.Helper()
	out := e.run(t, append(append([]string{"unjoin", member}, e.cpFlags()...), flags...)...)
	var c clusterv1alpha1.Cluster
	if err := e.cp.Get(context.Background(), types.NamespacedName{Name: member}, &c); !apierrors.IsNotFound(err) {
		t.Fatalf("Cluster %s after unjoin: %v\n%s", member, err, out)
	}
	return out
}

// clusterEvent is a condition: an Event reason about Cluster member
// mentions every part.
func (e *cleanupEnv) clusterEvent(member, reason string, parts ...string) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		list, err := e.cs.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Cluster,involvedObject.name=" + member + ",reason=" + reason,
		})
		if err != nil {
			return false, "", err
		}
		var notes []string
		for _, ev := range list.Items {
			notes = append(notes, ev.Message)
			if containsAll(ev.Message, parts...) {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%s events: %q", reason, notes), nil
	}
}

func (e *cleanupEnv) deploymentUID(t *testing.T, member, ns, name string) types.UID {
	t.Helper()
	d, err := e.members[member].AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Deployment %s/%s in %s: %v", ns, name, member, err)
	}
	return d.UID
}

// Unjoining members and what Lifeboat leaves there: a Ready member has its
// objects deleted on unjoin; the copies of a member unjoined while down are
// removed when it joins again, under the orphan rule, except the one a
// binding places there again (adopted, never deleted) and anyone else's;
// `lifeboat unjoin --cleanup-member` removes them from a member that is not
// joined again.
func TestMembersUnjoined(t *testing.T) {
	t.Parallel()
	e := startCleanupEnv(t)
	ctx := context.Background()

	t.Run("unjoining a Ready member removes what Lifeboat created there", func(t *testing.T) {
		m := e.members["member3"]
		ns := e.namespace(t, "reachable")
		e.apply(t, ns, pinnedTo("web", "member3")+"---"+nginxDeployment("web", ""))
		eventually(t, propagationTimeout, "web in member3", deploymentIn(m, ns, "web"))

		out := e.unjoin(t, "member3", "--cleanup-member", "--cluster-kubeconfig", e.kubeconfig, "--cluster-context", "member3")

		if ok, seen, err := deploymentIn(m, ns, "web")(ctx); ok || err != nil {
			t.Fatalf("web is still in member3 after unjoin: %s (err %v)\n%s", seen, err, out)
		}
		eventually(t, cleanupTimeout, "member3 namespace "+ns+" removed", memberNamespaceGone(m, ns))
		if !strings.Contains(out, "Removed namespace "+ns) {
			t.Errorf("unjoin --cleanup-member does not say it removed the namespace:\n%s", out)
		}
	})

	t.Run("a member unjoined while down is cleaned by unjoin --cleanup-member", func(t *testing.T) {
		m := e.members["member1"]
		ns := e.namespace(t, "cli")
		e.apply(t, ns, pinnedTo("web", "member1")+"---"+nginxDeployment("web", ""))
		eventually(t, propagationTimeout, "web in member1", deploymentIn(m, ns, "web"))
		e.stop(t, "member1")
		e.unjoin(t, "member1")
		e.deleteTemplate(t, ns, "web")
		e.start(t, "member1")
		if ok, seen, err := deploymentIn(m, ns, "web")(ctx); !ok {
			t.Fatalf("the copy Lifeboat could not delete while member1 was down: %s (err %v)", seen, err)
		}

		out := e.run(t, append([]string{"unjoin", "member1", "--cleanup-member", "--cluster-kubeconfig", e.kubeconfig, "--cluster-context", "member1"}, e.cpFlags()...)...)

		if !strings.Contains(out, "not joined; cleaning the member only") || !strings.Contains(out, "Removed Deployment "+ns+"/web") {
			t.Errorf("unjoin --cleanup-member output:\n%s", out)
		}
		eventually(t, cleanupTimeout, "web gone from member1", negated(deploymentIn(m, ns, "web")))
		eventually(t, cleanupTimeout, "member1 namespace "+ns+" removed", memberNamespaceGone(m, ns))
	})

	t.Run("a member unjoined while down and joined again is swept", func(t *testing.T) {
		m := e.members["member2"]
		adopted := e.namespace(t, "adopted")
		left := e.namespace(t, "left")
		e.apply(t, adopted, pinnedTo("stay", "member2")+"---"+nginxDeployment("stay", ""))
		e.apply(t, left, pinnedTo("orphan", "member2")+"---"+nginxDeployment("orphan", ""))
		eventually(t, propagationTimeout, "stay in member2", deploymentIn(m, adopted, "stay"))
		eventually(t, propagationTimeout, "orphan in member2", deploymentIn(m, left, "orphan"))
		// Someone else's object, without Lifeboat's labels, next to stay.
		theirs := &appsv1.Deployment{}
		if err := yaml.Unmarshal([]byte(nginxDeployment("theirs", "")), theirs); err != nil {
			t.Fatal(err)
		}
		if _, err := m.AppsV1().Deployments(adopted).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		stayUID := e.deploymentUID(t, "member2", adopted, "stay")

		e.stop(t, "member2")
		e.unjoin(t, "member2")
		// orphan's template goes while member2 is out; stay's binding
		// keeps waiting for member2.
		e.deleteTemplate(t, left, "orphan")
		e.start(t, "member2")
		e.run(t, append([]string{"join", "member2", "--cluster-kubeconfig", e.kubeconfig, "--cluster-context", "member2"}, e.cpFlags()...)...)
		e.waitReady(t, "member2", metav1.ConditionTrue)

		// stay's binding places it on member2 again: its new Work adopts
		// the running copy.
		eventually(t, cleanupTimeout, "stay applied to member2 again", func(ctx context.Context) (bool, string, error) {
			var rb workv1alpha2.ResourceBinding
			if err := e.cp.Get(ctx, types.NamespacedName{Namespace: adopted, Name: "stay-deployment"}, &rb); err != nil {
				return false, "", err
			}
			item := aggregatedItem(&rb, "member2")
			return item != nil && item.Applied, fmt.Sprintf("scheduled to %v, aggregated %+v", scheduledClusters(&rb), item), nil
		})
		eventually(t, cleanupTimeout, "OrphansFound on Cluster member2 naming orphan",
			e.clusterEvent("member2", orphans.EventOrphansFound, "Deployment "+left+"/orphan"))
		if ok, _, _ := deploymentIn(m, left, "orphan")(ctx); !ok {
			t.Fatal("the orphan was removed before its grace period ended")
		}

		eventually(t, orphans.NewOptions().Grace+cleanupTimeout, "orphan removed from member2", negated(deploymentIn(m, left, "orphan")))
		eventually(t, cleanupTimeout, "member2 namespace "+left+" removed", memberNamespaceGone(m, left))
		eventually(t, cleanupTimeout, "OrphansRemoved on Cluster member2",
			e.clusterEvent("member2", orphans.EventOrphansRemoved, "Deployment "+left+"/orphan"))

		if got := e.deploymentUID(t, "member2", adopted, "stay"); got != stayUID {
			t.Errorf("the adopted copy was replaced: uid %s, was %s", got, stayUID)
		}
		if ok, seen, err := deploymentIn(m, adopted, "theirs")(ctx); !ok {
			t.Errorf("someone else's Deployment: %s (err %v)", seen, err)
		}
		if ok, seen, err := memberNamespaceThere(m, adopted)(ctx); !ok {
			t.Errorf("the namespace a Work still uses: %s (err %v)", seen, err)
		}
	})
}
