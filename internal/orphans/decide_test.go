package orphans

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/execution"
)

var deploymentKind = schema.GroupKind{Group: "apps", Kind: "Deployment"}

func TestJudge(t *testing.T) {
	cases := map[string]struct {
		obj           *unstructured.Unstructured
		kind          schema.GroupKind
		workExists    bool
		bindingPlaces bool
		preserves     bool
		want          Verdict
	}{
		"orphan: Work gone, binding gone":             {obj: member("web").Obj(), want: Orphan},
		"a Work owns it":                              {obj: member("web").Obj(), workExists: true, want: Owned},
		"a Work owns it, binding gone too":            {obj: member("web").Obj(), workExists: true, bindingPlaces: false, want: Owned},
		"its Work is about to be made":                {obj: member("web").Obj(), bindingPlaces: true, want: KeptPlaced},
		"must not: its binding asks to preserve it":   {obj: member("web").Obj(), preserves: true, want: KeptPreserved},
		"no managed label":                            {obj: member("web").Unmanaged().Obj(), want: NotCandidate},
		"managed label, no Work named":                {obj: member("web").NoWork().Obj(), want: NotCandidate},
		"a namespace Lifeboat created (no Work)":      {obj: member("team-a").NoWork().Obj(), kind: schema.GroupKind{Kind: "Namespace"}, want: NotCandidate},
		"another cluster's Work":                      {obj: member("web").WorkIn("karmada-es-member9").Obj(), want: Foreign},
		"another cluster's Work, owner lookups empty": {obj: member("web").WorkIn("karmada-es-member9").Obj(), bindingPlaces: true, want: Foreign},
		"being deleted":                               {obj: member("web").Deleting().Obj(), want: Deleting},
		"a Namespace named by a Work":                 {obj: member("team-a").Obj(), kind: schema.GroupKind{Kind: "Namespace"}, want: KeptCascades},
		"a CustomResourceDefinition":                  {obj: member("widgets.example.com").Obj(), kind: schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, want: KeptCascades},
		"written by another field manager (Karmada)":  {obj: member("web").Manager("karmada-controller-manager").Obj(), want: KeptNotApplied},
		"names no binding":                            {obj: member("web").NoBinding().Obj(), want: KeptNoBinding},
		"names a ClusterResourceBinding":              {obj: member("role").ClusterBinding("role-clusterrole").Obj(), kind: schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}, want: Orphan},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kind := tc.kind
			if kind.Empty() {
				kind = deploymentKind
			}
			got := Judge(Observation{Cluster: "member1", Kind: kind, Object: tc.obj, WorkExists: tc.workExists, BindingPlaces: tc.bindingPlaces, BindingPreserves: tc.preserves})
			if got != tc.want {
				t.Fatalf("Judge = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestRefsOf(t *testing.T) {
	refs, ok := RefsOf(member("web").Obj())
	if !ok || refs.Work != (types.NamespacedName{Namespace: "karmada-es-member1", Name: "web-5d8f"}) ||
		refs.Binding != (types.NamespacedName{Namespace: "team-a", Name: "web-deployment"}) {
		t.Fatalf("refs = %+v, %t", refs, ok)
	}
	refs, ok = RefsOf(member("role").ClusterBinding("role-clusterrole").Obj())
	if !ok || refs.Binding != (types.NamespacedName{Name: "role-clusterrole"}) {
		t.Fatalf("ClusterResourceBinding refs = %+v, %t", refs, ok)
	}
	if _, ok := RefsOf(member("web").WorkIn("").Obj()); ok {
		t.Fatal("a Work name without its namespace is no reference")
	}
}

func TestPlaces(t *testing.T) {
	now := metav1.Now()
	cases := map[string]struct {
		spec     workv1alpha2.ResourceBindingSpec
		deleting bool
		want     bool
	}{
		"scheduled here":      {spec: workv1alpha2.ResourceBindingSpec{Clusters: []workv1alpha2.TargetCluster{{Name: "member2"}, {Name: "member1"}}}, want: true},
		"scheduled elsewhere": {spec: workv1alpha2.ResourceBindingSpec{Clusters: []workv1alpha2.TargetCluster{{Name: "member2"}}}, want: false},
		"not scheduled":       {want: false},
		"a dependent binding is here": {spec: workv1alpha2.ResourceBindingSpec{RequiredBy: []workv1alpha2.BindingSnapshot{
			{Name: "app", Clusters: []workv1alpha2.TargetCluster{{Name: "member1"}}}}}, want: true},
		"evicted from here, old copy kept": {spec: workv1alpha2.ResourceBindingSpec{
			Clusters:              []workv1alpha2.TargetCluster{{Name: "member2"}},
			GracefulEvictionTasks: []workv1alpha2.GracefulEvictionTask{{FromCluster: "member1"}}}, want: true},
		"scheduled here, binding being deleted": {spec: workv1alpha2.ResourceBindingSpec{Clusters: []workv1alpha2.TargetCluster{{Name: "member1"}}}, deleting: true, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rb := &workv1alpha2.ResourceBinding{Spec: tc.spec}
			if tc.deleting {
				rb.DeletionTimestamp = &now
			}
			if got := Places(rb, &rb.Spec, "member1"); got != tc.want {
				t.Fatalf("Places = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestSightingsAndDue(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	grace := 2 * time.Minute
	var s Sightings

	first := s.Observe("member1", []types.UID{"a", "b"}, t0)
	if first["a"] != t0 || first["b"] != t0 {
		t.Fatalf("first sightings = %v", first)
	}
	if due, left := Due(first["a"], t0, grace); due || left != grace {
		t.Fatalf("at the first sighting: due %t, left %s", due, left)
	}
	// b was adopted (no longer an orphan), c is new.
	later := s.Observe("member1", []types.UID{"a", "c"}, t0.Add(grace))
	if later["a"] != t0 || later["c"] != t0.Add(grace) {
		t.Fatalf("second sightings = %v", later)
	}
	if _, kept := later["b"]; kept {
		t.Fatal("an object no longer an orphan must be forgotten")
	}
	if due, _ := Due(later["a"], t0.Add(grace), grace); !due {
		t.Fatal("an orphan seen grace apart must be due")
	}
	if due, _ := Due(later["c"], t0.Add(grace), grace); due {
		t.Fatal("a new orphan must not be due")
	}
	// b comes back as an orphan: its period starts over.
	again := s.Observe("member1", []types.UID{"b"}, t0.Add(3*grace))
	if again["b"] != t0.Add(3*grace) {
		t.Fatalf("an orphan found again starts a new period: %v", again)
	}
	// Other clusters are apart; Forget drops a cluster.
	if other := s.Observe("member2", []types.UID{"b"}, t0.Add(4*grace)); other["b"] != t0.Add(4*grace) {
		t.Fatalf("member2 = %v", other)
	}
	s.Forget("member1")
	if fresh := s.Observe("member1", []types.UID{"b"}, t0.Add(5*grace)); fresh["b"] != t0.Add(5*grace) {
		t.Fatalf("after Forget = %v", fresh)
	}
	// A clock that stepped back never makes an orphan due.
	if due, _ := Due(t0.Add(time.Hour), t0, grace); due {
		t.Fatal("a sighting in the future must not be due")
	}
}

func TestNamespaceGate(t *testing.T) {
	created := execution.NewCreatedNamespace("team-a")
	theirs := &unstructured.Unstructured{}
	theirs.SetName("team-a")
	now := metav1.Now()
	terminating := created.DeepCopy()
	terminating.SetDeletionTimestamp(&now)
	markedFalse := created.DeepCopy()
	markedFalse.SetAnnotations(map[string]string{execution.CreatedNamespaceAnnotation: "false"})
	cases := map[string]struct {
		ns      *unstructured.Unstructured
		inUse   bool
		want    NamespaceVerdict
		proceed bool
	}{
		"created by Lifeboat, unused":            {ns: created, proceed: true},
		"created by Lifeboat, a Work uses it":    {ns: created, inUse: true, want: NamespaceInUse},
		"there before Lifeboat, or someone's":    {ns: theirs, want: NamespaceNotCreated},
		"someone's, unused":                      {ns: theirs, inUse: false, want: NamespaceNotCreated},
		"mark set to something else than true":   {ns: markedFalse, want: NamespaceNotCreated},
		"terminating already":                    {ns: terminating, want: NamespaceGone},
		"absent":                                 {ns: nil, want: NamespaceGone},
		"created by Lifeboat, in use, and going": {ns: terminating, inUse: true, want: NamespaceGone},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var ns metav1.Object
			if tc.ns != nil {
				ns = tc.ns
			}
			got, proceed := NamespaceGate(ns, tc.inUse)
			if got != tc.want || proceed != tc.proceed {
				t.Fatalf("NamespaceGate = %q, %t; want %q, %t", got, proceed, tc.want, tc.proceed)
			}
		})
	}
}

func TestJudgeContents(t *testing.T) {
	rs := content("apps", "replicasets", "web-abc").Owner("uid-web").Obj()
	cases := map[string]struct {
		contents []Content
		complete bool
		want     NamespaceVerdict
	}{
		"empty": {want: NamespaceRemovable, complete: true},
		"only what every namespace holds": {complete: true, want: NamespaceRemovable, contents: []Content{
			content("", "configmaps", "kube-root-ca.crt").Obj(),
			content("", "serviceaccounts", "default").Obj(),
			content("", "secrets", "default-token-x7k2p").Type("kubernetes.io/service-account-token").Annotation("kubernetes.io/service-account.name", "default").Obj(),
			content("", "events", "web.17a").Obj(),
			content("events.k8s.io", "events", "web.17b").Obj(),
		}},
		"someone's ConfigMap": {complete: true, want: NamespaceHoldsOthersObjects, contents: []Content{
			content("", "configmaps", "kube-root-ca.crt").Obj(),
			content("", "configmaps", "settings").Obj(),
		}},
		"someone's PersistentVolumeClaim left by a StatefulSet": {complete: true, want: NamespaceHoldsOthersObjects, contents: []Content{
			content("", "persistentvolumeclaims", "data-db-0").Obj(),
		}},
		"a token Secret of another ServiceAccount": {complete: true, want: NamespaceHoldsOthersObjects, contents: []Content{
			content("", "secrets", "ci-token").Type("kubernetes.io/service-account-token").Annotation("kubernetes.io/service-account.name", "ci").Obj(),
		}},
		"another ServiceAccount": {complete: true, want: NamespaceHoldsOthersObjects, contents: []Content{
			content("", "serviceaccounts", "ci").Obj(),
		}},
		"a Lifeboat object (an orphan, or a Work's)": {complete: true, want: NamespaceHoldsLifeboatObjects, contents: []Content{
			content("apps", "deployments", "web").Managed().Obj(),
		}},
		"someone's object wins over Lifeboat's": {complete: true, want: NamespaceHoldsOthersObjects, contents: []Content{
			content("apps", "deployments", "web").Managed().Obj(),
			content("", "configmaps", "settings").Obj(),
		}},
		"a Lifeboat object being deleted": {complete: true, want: NamespaceWait, contents: []Content{
			content("apps", "deployments", "web").Managed().Deleting().Obj(),
		}},
		"someone's object being deleted": {complete: true, want: NamespaceWait, contents: []Content{
			content("", "configmaps", "settings").Deleting().Obj(),
		}},
		"dependents of a deleted Deployment (garbage collected)": {complete: true, want: NamespaceWait, contents: []Content{
			rs,
			content("", "pods", "web-abc-1").Owner(rs.Object.GetUID()).Obj(),
		}},
		"pods of someone's ReplicaSet": {complete: true, want: NamespaceHoldsOthersObjects, contents: []Content{
			content("", "pods", "job-1").Owner("uid-theirs-rs").Obj(),
			content("apps", "replicasets", "theirs").UID("uid-theirs-rs").Obj(),
		}},
		"a dependent of the default ServiceAccount": {complete: true, want: NamespaceRemovable, contents: []Content{
			content("", "serviceaccounts", "default").UID("uid-default-sa").Obj(),
			content("", "secrets", "default-pull").Owner("uid-default-sa").Obj(),
		}},
		"endpoints of a deleted Service": {complete: true, want: NamespaceWait, contents: []Content{
			content("", "endpoints", "web").Obj(),
		}},
		"endpoints of someone's Service": {complete: true, want: NamespaceHoldsOthersObjects, contents: []Content{
			content("", "endpoints", "db").Obj(),
			content("", "services", "db").Obj(),
		}},
		"endpoints of a Lifeboat Service": {complete: true, want: NamespaceHoldsLifeboatObjects, contents: []Content{
			content("", "endpoints", "web").Obj(),
			content("", "services", "web").Managed().Obj(),
		}},
		"empty, but some kinds could not be listed": {complete: false, want: NamespaceWait},
		"someone's object, some kinds not listed": {complete: false, want: NamespaceHoldsOthersObjects, contents: []Content{
			content("", "configmaps", "settings").Obj(),
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, detail := JudgeContents(tc.contents, tc.complete)
			if got != tc.want {
				t.Fatalf("JudgeContents = %s (%s), want %s", got, detail, tc.want)
			}
			if got != NamespaceRemovable && detail == "" {
				t.Error("a namespace kept or waited for must say why")
			}
		})
	}
}

func TestRecheckAfter(t *testing.T) {
	cases := map[string]struct {
		waited time.Duration
		want   time.Duration
		ok     bool
	}{
		"just started":         {0, namespaceRecheckMin, true},
		"a while":              {20 * time.Second, 10 * time.Second, true},
		"long":                 {4 * time.Minute, namespaceRecheckMax, true},
		"at the limit":         {namespaceWaitLimit, 0, false},
		"past the limit":       {time.Hour, 0, false},
		"clock stepped back":   {-time.Minute, namespaceRecheckMin, true},
		"just under the limit": {namespaceWaitLimit - time.Second, namespaceRecheckMax, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := recheckAfter(tc.waited)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("recheckAfter(%s) = %s, %t; want %s, %t", tc.waited, got, ok, tc.want, tc.ok)
			}
		})
	}
}
