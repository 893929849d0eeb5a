package orphans

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	mct "github.com/lifeboat-dev/lifeboat/internal/membercluster/memberclustertest"
)

// inNamespace is an object of the member namespace team-a.
func inNamespace(apiVersion, kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace("team-a")
	u.SetName(name)
	u.SetUID(types.UID("uid-" + kind + "-" + name))
	return u
}

// systemDefaults are what the member's controllers put in every namespace.
func systemDefaults(f *fixture) {
	f.put(mct.ConfigMaps, inNamespace("v1", "ConfigMap", "kube-root-ca.crt"))
	f.put(mct.ServiceAccounts, inNamespace("v1", "ServiceAccount", "default"))
	f.put(mct.Events, inNamespace("v1", "Event", "web.17a3"))
}

func TestEmptyNamespaceLifeboatCreatedIsRemoved(t *testing.T) {
	f := newFixture(t)
	f.put(mct.Namespaces, namespace("team-a", true))
	systemDefaults(f)

	f.checkNamespace("team-a")

	if f.exists(mct.Namespaces, "", "team-a") {
		t.Fatal("an empty namespace Lifeboat created was kept")
	}
	evs := f.events()
	if len(evs) != 1 || !strings.Contains(evs[0], EventNamespaceRemoved) || !strings.Contains(evs[0], "team-a") {
		t.Fatalf("events = %q", evs)
	}
}

func TestNamespaceMustNotBeRemoved(t *testing.T) {
	cases := map[string]struct {
		created bool
		cp      []client.Object
		member  func(f *fixture)
	}{
		"a namespace Lifeboat did not create (there before, or someone's)": {created: false},
		"a namespace with someone else's object": {created: true, member: func(f *fixture) {
			f.put(mct.ConfigMaps, inNamespace("v1", "ConfigMap", "settings"))
		}},
		"a namespace with someone else's token Secret": {created: true, member: func(f *fixture) {
			s := inNamespace("v1", "Secret", "ci-token")
			s.Object["type"] = "kubernetes.io/service-account-token"
			s.SetAnnotations(map[string]string{"kubernetes.io/service-account.name": "ci"})
			f.put(mct.Secrets, s)
		}},
		"a namespace a Work uses":       {created: true, cp: []client.Object{work("web-5d8f", "team-a")}},
		"a namespace a Work propagates": {created: true, cp: []client.Object{namespaceWork("team-a-ns", "team-a")}},
		"a namespace holding a Lifeboat object": {created: true, member: func(f *fixture) {
			f.put(mct.Deployments, member("web").Obj())
		}},
		"a namespace with dependents still going": {created: true, member: func(f *fixture) {
			rs := inNamespace("apps/v1", "ReplicaSet", "web-abc")
			rs.SetOwnerReferences([]metav1.OwnerReference{{Kind: "Deployment", Name: "web", UID: "uid-gone"}})
			f.put(mct.ReplicaSets, rs)
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.cp...)
			f.put(mct.Namespaces, namespace("team-a", tc.created))
			systemDefaults(f)
			if tc.member != nil {
				tc.member(f)
			}

			f.checkNamespace("team-a")

			if !f.exists(mct.Namespaces, "", "team-a") || f.deletes() != 0 {
				t.Fatalf("the namespace was deleted (%d delete requests)", f.deletes())
			}
		})
	}
}

// A namespace the execution controller created for a Deployment, then
// adopted by a Work that propagates the Namespace itself, keeps the
// created-namespace annotation (server-side apply leaves a field it does not
// own). Once the Deployment's Work is gone, the namespace is still
// propagated, and kept.
func TestNamespacePropagatedByANamespaceWorkIsKept(t *testing.T) {
	f := newFixture(t, namespaceWork("team-a-ns", "team-a"))
	ns := namespace("team-a", true)
	a := ns.GetAnnotations()
	a[workv1alpha1.WorkNamespaceAnnotation] = "karmada-es-member1"
	a[workv1alpha1.WorkNameAnnotation] = "team-a-ns"
	ns.SetAnnotations(a)
	f.put(mct.Namespaces, ns)
	systemDefaults(f)

	f.checkNamespace("team-a")

	if !f.exists(mct.Namespaces, "", "team-a") || f.deletes() != 0 {
		t.Fatal("a namespace a Namespace Work propagates was removed as unused")
	}
}

func TestNamespaceWhoseContentsAreGoingIsCheckedAgain(t *testing.T) {
	f := newFixture(t)
	f.put(mct.Namespaces, namespace("team-a", true))
	rs := inNamespace("apps/v1", "ReplicaSet", "web-abc")
	rs.SetOwnerReferences([]metav1.OwnerReference{{Kind: "Deployment", Name: "web", UID: "uid-gone"}})
	f.put(mct.ReplicaSets, rs)

	res := f.checkNamespace("team-a")
	if res.RequeueAfter != namespaceRecheckMin || !f.exists(mct.Namespaces, "", "team-a") {
		t.Fatalf("first check: requeue %s, namespace there %t", res.RequeueAfter, f.exists(mct.Namespaces, "", "team-a"))
	}

	// The garbage collector removes the ReplicaSet.
	if err := f.env.Member("member1").Tracker().Delete(mct.ReplicaSets, "team-a", "web-abc"); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(res.RequeueAfter)
	f.checkNamespace("team-a")

	if f.exists(mct.Namespaces, "", "team-a") {
		t.Fatal("the namespace was kept after its last dependent went")
	}
}

func TestNamespaceWaitIsBounded(t *testing.T) {
	f := newFixture(t)
	f.put(mct.Namespaces, namespace("team-a", true))
	stuck := inNamespace("v1", "ConfigMap", "stuck")
	now := metav1.Now()
	stuck.SetDeletionTimestamp(&now)
	stuck.SetFinalizers([]string{"example.com/never"})
	f.put(mct.ConfigMaps, stuck)

	var waited time.Duration
	for i := 0; ; i++ {
		res := f.checkNamespace("team-a")
		if res.RequeueAfter == 0 {
			break
		}
		if i > 100 {
			t.Fatal("a namespace whose contents never go is looked at forever")
		}
		waited += res.RequeueAfter
		f.clock.Step(res.RequeueAfter)
	}
	if waited < namespaceWaitLimit-namespaceRecheckMax || !f.exists(mct.Namespaces, "", "team-a") {
		t.Fatalf("gave up after %s (limit %s); namespace there %t", waited, namespaceWaitLimit, f.exists(mct.Namespaces, "", "team-a"))
	}
}

// A namespace judged Removable is not deleted when, before the delete,
// someone changed it (the delete is conditional on the resourceVersion
// judged) or a Work came to use it (the Works are read again).
func TestNamespaceChangedSinceJudgedIsNotRemoved(t *testing.T) {
	cases := map[string]func(t *testing.T, f *fixture){
		"someone takes it over: removes the mark": func(t *testing.T, f *fixture) {
			taken := namespace("team-a", false)
			taken.SetResourceVersion("2")
			if err := f.env.Member("member1").Tracker().Update(mct.Namespaces, taken, ""); err != nil {
				t.Fatal(err)
			}
		},
		"a Work made while judging uses it": func(t *testing.T, f *fixture) {
			if err := f.cp.Create(f.ctx, work("web-5d8f", "team-a")); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.put(mct.Namespaces, namespace("team-a", true))
			s := Sweeper{Cluster: "member1", Member: CachedMember(f.env.Cache, "member1"), ControlPlane: ControlPlane{Reader: f.cp, Indexed: true}}
			j, err := s.JudgeNamespace(f.ctx, "team-a")
			if err != nil || j.Verdict != NamespaceRemovable {
				t.Fatalf("judgement = %+v, %v", j, err)
			}
			change(t, f)

			removed, err := s.RemoveNamespace(f.ctx, j)

			if err != nil || removed || !f.exists(mct.Namespaces, "", "team-a") {
				t.Fatalf("RemoveNamespace = %t, %v; namespace there %t", removed, err, f.exists(mct.Namespaces, "", "team-a"))
			}
		})
	}
}

func TestIncompleteDiscoveryKeepsAnEmptyNamespace(t *testing.T) {
	// The member answers, but not for its API groups' resources (an
	// aggregated API that is down): objects of those kinds cannot be seen.
	f := newFixture(t)
	f.put(mct.Namespaces, namespace("team-a", true))
	f.env.Discovery("member1").PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("the aggregated API is not available")
	})

	res := f.checkNamespace("team-a")

	if !f.exists(mct.Namespaces, "", "team-a") || f.deletes() != 0 {
		t.Fatal("a namespace whose contents could not all be listed was deleted")
	}
	if res.RequeueAfter == 0 {
		t.Error("an incomplete listing must be looked at again")
	}
}

func TestDeletedWorkHandsItsNamespacesOver(t *testing.T) {
	r := &NamespaceReconciler{}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	w := work("web-5d8f", "team-a")
	w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, work("x", "team-b").Spec.Workload.Manifests...)

	r.workDeleted(context.Background(), event.DeleteEvent{Object: w}, q)

	var got []string
	for q.Len() > 0 {
		item, _ := q.Get()
		got = append(got, item.Namespace+"/"+item.Name)
		q.Done(item)
	}
	if strings.Join(got, ",") != "member1/team-a,member1/team-b" {
		t.Fatalf("enqueued %v", got)
	}
}
