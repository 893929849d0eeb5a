package orphans

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/execution"
	mct "github.com/lifeboat-dev/lifeboat/internal/membercluster/memberclustertest"
)

func TestOrphanIsRemovedOnceTheGracePeriodHasPassed(t *testing.T) {
	f := newFixture(t)
	f.put(mct.Deployments, member("web").Obj())

	res := f.scan()

	if !f.exists(mct.Deployments, "team-a", "web") || f.deletes() != 0 {
		t.Fatal("an orphan was removed at its first sighting")
	}
	if res.RequeueAfter != grace {
		t.Errorf("next scan after %s, want the end of the grace period %s", res.RequeueAfter, grace)
	}
	evs := f.events()
	if len(evs) != 1 || !strings.Contains(evs[0], EventOrphansFound) || !strings.Contains(evs[0], "Deployment team-a/web") {
		t.Fatalf("events after the first scan = %q", evs)
	}

	f.clock.Step(grace)
	f.scan()

	if f.exists(mct.Deployments, "team-a", "web") {
		t.Fatal("the orphan is still there after the grace period")
	}
	evs = f.events()
	if len(evs) != 1 || !strings.Contains(evs[0], EventOrphansRemoved) || !strings.Contains(evs[0], "Deployment team-a/web") {
		t.Fatalf("events after the removal = %q", evs)
	}
	if !f.queue.has("member1", "team-a") {
		t.Error("the namespace the orphan was removed from must be checked")
	}
}

func TestScanMustNotRemove(t *testing.T) {
	cases := map[string]struct {
		obj *MemberObject
		// cp are control-plane objects present from the start.
		cp []client.Object
		// between runs after the first scan (the Work is made, the
		// binding is scheduled here...).
		between func(t *testing.T, f *fixture)
	}{
		"an object a Work owns": {
			obj: member("web"), cp: []client.Object{work("web-5d8f", "team-a")},
		},
		"an object without Lifeboat's labels": {
			obj: member("web").Unmanaged(),
		},
		"an object whose binding places it here (its Work is about to be made)": {
			obj: member("web"), cp: []client.Object{binding("web", "member1")},
		},
		"an object whose binding is scheduled here after the first scan": {
			obj: member("web"), cp: []client.Object{binding("web", "member2")},
			between: func(t *testing.T, f *fixture) {
				rb := binding("web")
				if err := f.cp.Get(f.ctx, client.ObjectKeyFromObject(rb), rb); err != nil {
					t.Fatal(err)
				}
				rb.Spec.Clusters = binding("web", "member2", "member1").Spec.Clusters
				if err := f.cp.Update(f.ctx, rb); err != nil {
					t.Fatal(err)
				}
			},
		},
		"an object whose Work is made after the first scan": {
			obj: member("web"),
			between: func(t *testing.T, f *fixture) {
				if err := f.cp.Create(f.ctx, work("web-5d8f", "team-a")); err != nil {
					t.Fatal(err)
				}
			},
		},
		"an object written by Karmada, not Lifeboat": {
			obj: member("web").Manager("karmada-controller-manager"),
		},
		"an object naming another cluster's Work": {
			obj: member("web").WorkIn("karmada-es-member9"),
		},
		"an object naming no binding": {
			obj: member("web").NoBinding(),
		},
		"an object whose binding asks to preserve its member objects (moved away while its Work was released)": {
			obj: member("web"), cp: []client.Object{preserving(binding("web", "member2"))},
		},
		"an object whose binding starts preserving after the first scan": {
			obj: member("web"), cp: []client.Object{binding("web", "member2")},
			between: func(t *testing.T, f *fixture) {
				rb := binding("web")
				if err := f.cp.Get(f.ctx, client.ObjectKeyFromObject(rb), rb); err != nil {
					t.Fatal(err)
				}
				if err := f.cp.Update(f.ctx, preserving(rb)); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for name, tc := range cases {
		// Held by an informer (the execution controller applied the kind)
		// or not, the scan reads the member differently; the rule holds
		// either way.
		for _, informer := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, informer %t", name, informer), func(t *testing.T) {
				f := newFixture(t, tc.cp...)
				obj := tc.obj.Obj()
				f.put(mct.Deployments, obj)
				if informer {
					held := 0 // it holds managed objects only
					if execution.IsManaged(obj) {
						held = 1
					}
					f.watch(mct.Deployments, held)
				}

				f.scan()
				if tc.between != nil {
					tc.between(t, f)
				}
				f.clock.Step(grace)
				f.scan()
				f.clock.Step(grace)
				f.scan()

				if !f.exists(mct.Deployments, "team-a", "web") || f.deletes() != 0 {
					t.Fatalf("the object was deleted (%d delete requests)", f.deletes())
				}
				for _, ev := range f.events() {
					if strings.Contains(ev, EventOrphansRemoved) {
						t.Errorf("reported a removal: %s", ev)
					}
				}
			})
		}
	}
}

func TestScanReadsAKindAnInformerHoldsFromIt(t *testing.T) {
	f := newFixture(t, work("web-5d8f", "team-a"))
	f.put(mct.Deployments, member("web").Obj())
	f.watch(mct.Deployments, 1)
	before := f.lists(mct.Deployments)

	f.scan()

	if n := f.lists(mct.Deployments) - before; n != 0 {
		t.Fatalf("the scan listed Deployments %d time(s) although the informer holds them, each owned", n)
	}
	if f.lists(mct.ConfigMaps) == 0 {
		t.Fatal("the kinds no informer holds must still be listed")
	}

	// The Work goes: the informer's object is no longer owned, so the
	// member's API server is asked, and its answer is what is judged.
	if err := f.cp.Delete(f.ctx, work("web-5d8f", "team-a")); err != nil {
		t.Fatal(err)
	}
	before = f.lists(mct.Deployments)
	f.scan()
	if n := f.lists(mct.Deployments) - before; n != 1 {
		t.Fatalf("the scan listed Deployments %d time(s) once an object lost its Work, want 1", n)
	}
	if evs := strings.Join(f.events(), "\n"); !strings.Contains(evs, EventOrphansFound) || !strings.Contains(evs, "Deployment team-a/web") {
		t.Fatalf("the orphan was not reported: %q", evs)
	}
	f.clock.Step(grace)
	f.scan()
	if f.exists(mct.Deployments, "team-a", "web") {
		t.Fatal("the orphan is still there after the grace period")
	}
}

func TestScanTakesTheNamespacesLifeboatCreatedFromAnInformer(t *testing.T) {
	f := newFixture(t)
	f.put(mct.Namespaces, namespace("team-a", true))
	f.watch(mct.Namespaces, 1)
	before := f.lists(mct.Namespaces)

	f.scan()

	if n := f.lists(mct.Namespaces) - before; n != 0 {
		t.Fatalf("the scan listed Namespaces %d time(s) although the informer holds them", n)
	}
	if !f.queue.has("member1", "team-a") {
		t.Error("a namespace Lifeboat created was not handed over")
	}
}

func TestNamespaceIsNeverRemovedAsAnOrphanObject(t *testing.T) {
	// A Namespace applied by a Namespace Work that is gone: deleting it
	// would delete what others keep in it.
	f := newFixture(t)
	f.put(mct.Namespaces, member("team-a").Kind("v1", "Namespace").Namespace("").Obj())

	f.scan()
	f.clock.Step(grace)
	f.scan()

	if !f.exists(mct.Namespaces, "", "team-a") || f.deletes() != 0 {
		t.Fatal("a Namespace was deleted as an orphan")
	}
	evs := strings.Join(f.events(), "\n")
	if !strings.Contains(evs, EventOrphansKept) || !strings.Contains(evs, "Namespace team-a") {
		t.Fatalf("the kept Namespace must be reported: %q", evs)
	}
}

func TestRemovalReadsTheOwnersAgainFromTheAPIServer(t *testing.T) {
	// The cache has not seen the change yet; the API server has.
	cases := map[string]func(key client.ObjectKey, obj client.Object) bool{
		"the Work was made": func(key client.ObjectKey, obj client.Object) bool {
			if key.Name != "web-5d8f" {
				return false
			}
			obj.SetName(key.Name)
			obj.SetNamespace(key.Namespace)
			return true
		},
		"the binding was scheduled here": func(key client.ObjectKey, obj client.Object) bool {
			rb, ok := obj.(*workv1alpha2.ResourceBinding)
			if !ok || key.Name != "web-deployment" {
				return false
			}
			binding("web", "member1").DeepCopyInto(rb)
			return true
		},
	}
	for name, live := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.objects.APIReader = interceptor.NewClient(f.cp.(client.WithWatch), interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if live(key, obj) {
						return nil
					}
					return c.Get(ctx, key, obj, opts...)
				},
			})
			f.put(mct.Deployments, member("web").Obj())

			f.scan()
			f.clock.Step(grace)
			f.scan()

			if !f.exists(mct.Deployments, "team-a", "web") || f.deletes() != 0 {
				t.Fatal("an object the API server says is owned, or about to be, was deleted")
			}
		})
	}
}

func TestRemovalIsConditionalOnTheObjectAsJudged(t *testing.T) {
	f := newFixture(t)
	obj := member("web").Obj()
	f.put(mct.Deployments, obj)
	s := f.objects.sweeper("member1")
	scan, err := s.Scan(f.ctx)
	if err != nil || len(scan.Findings) != 1 || scan.Findings[0].Verdict != Orphan {
		t.Fatalf("scan = %+v, %v", scan, err)
	}
	// Changed in the member after the scan (re-applied, relabelled...).
	obj.SetResourceVersion("2")
	if err := f.env.Member("member1").Tracker().Update(mct.Deployments, obj, "team-a"); err != nil {
		t.Fatal(err)
	}

	removed, err := s.Remove(f.ctx, scan.Findings[0])

	if err != nil || removed {
		t.Fatalf("Remove = %t, %v; want false, nil", removed, err)
	}
	if !f.exists(mct.Deployments, "team-a", "web") {
		t.Fatal("an object changed since it was judged was deleted")
	}
}

func TestScanLeavesAMemberThatIsNotReadyAlone(t *testing.T) {
	f := newFixture(t)
	f.put(mct.Deployments, member("web").Obj())
	var c clusterv1alpha1.Cluster
	if err := f.cp.Get(f.ctx, client.ObjectKey{Name: "member1"}, &c); err != nil {
		t.Fatal(err)
	}
	c.Status.Conditions[0].Status = metav1.ConditionFalse
	if err := f.cp.Update(f.ctx, &c); err != nil {
		t.Fatal(err)
	}

	res := f.scan()

	if n := len(f.env.Member("member1").Actions()); n != 0 || res.RequeueAfter != 0 {
		t.Fatalf("a member that is not Ready was scanned: %d requests, requeue %s", n, res.RequeueAfter)
	}
}

func TestScanHandsTheNamespacesLifeboatCreatedToTheNamespaceRule(t *testing.T) {
	f := newFixture(t)
	f.put(mct.Namespaces, namespace("team-a", true))
	// Labelled managed (applied by a Namespace Work, say), not created
	// by Lifeboat.
	theirs := namespace("theirs", false)
	theirs.SetLabels(map[string]string{"karmada.io/managed": "true"})
	f.put(mct.Namespaces, theirs)

	f.scan()

	if !f.queue.has("member1", "team-a") {
		t.Error("a namespace Lifeboat created was not handed over")
	}
	if f.queue.has("member1", "theirs") {
		t.Error("a namespace Lifeboat did not create was handed over")
	}
}

func TestUnchangedScanRecordsNoEvent(t *testing.T) {
	f := newFixture(t)
	f.put(mct.Deployments, member("web").Manager("karmada-controller-manager").Obj())
	f.scan()
	if evs := f.events(); len(evs) != 1 || !strings.Contains(evs[0], EventOrphansKept) {
		t.Fatalf("first scan events = %q", evs)
	}
	f.scan()
	if evs := f.events(); len(evs) != 0 {
		t.Fatalf("an unchanged scan recorded %q", evs)
	}
}

func TestDeletedClusterIsForgotten(t *testing.T) {
	f := newFixture(t)
	f.put(mct.Deployments, member("web").Obj())
	f.scan()
	if err := f.cp.Delete(f.ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}); err != nil {
		t.Fatal(err)
	}
	if len(f.objects.sightings.first["member1"]) != 1 {
		t.Fatal("the orphan was not sighted")
	}
	f.scan()
	if got := f.objects.sightings.first["member1"]; len(got) != 0 {
		t.Fatalf("sightings of a deleted cluster survived: %v", got)
	}
}

// TestPeriodicScansOfMembersDriftApart: a member with nothing pending is
// scanned again after ScanInterval plus up to a tenth of it, chosen anew
// each time, so members that joined together stop scanning in step.
func TestPeriodicScansOfMembersDriftApart(t *testing.T) {
	f := newFixture(t)
	interval := f.objects.Options.ScanInterval
	seen := map[time.Duration]bool{}
	for range 20 {
		res := f.scan()
		if res.RequeueAfter < interval || res.RequeueAfter >= interval+interval/10 {
			t.Fatalf("next scan after %s, want within [%s, %s)", res.RequeueAfter, interval, interval+interval/10)
		}
		seen[res.RequeueAfter] = true
	}
	if len(seen) < 2 {
		t.Errorf("20 scans all chose the same interval %v: members joined together would scan in step forever", seen)
	}
}

func TestSpread(t *testing.T) {
	if got := spread(0); got != 0 {
		t.Errorf("spread(0) = %s, want 0: no periodic scans stays none", got)
	}
	if got := spread(-time.Second); got != 0 {
		t.Errorf("spread(-1s) = %s, want 0", got)
	}
	for range 100 {
		if got := spread(time.Minute); got < time.Minute || got >= 66*time.Second {
			t.Fatalf("spread(1m) = %s, want within [1m, 1m6s)", got)
		}
	}
}

// preserving sets the binding's preserveResourcesOnDeletion.
func preserving(rb *workv1alpha2.ResourceBinding) *workv1alpha2.ResourceBinding {
	rb.Spec.PreserveResourcesOnDeletion = ptr.To(true)
	return rb
}
