package dependencies

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
)

// bindingBuilder builds ResourceBindings for tests.
type bindingBuilder struct{ rb *workv1alpha2.ResourceBinding }

func makeBinding(name string) *bindingBuilder {
	return &bindingBuilder{&workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{workv1alpha2.ResourceBindingPermanentIDLabel: "id-" + name}},
		Spec: workv1alpha2.ResourceBindingSpec{PropagateDeps: true, ConflictResolution: policyv1alpha1.ConflictAbort},
	}}
}

func (b *bindingBuilder) resource(apiVersion, kind, name, uid string) *bindingBuilder {
	b.rb.Spec.Resource = workv1alpha2.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: "default", Name: name, UID: types.UID(uid), ResourceVersion: "1"}
	return b
}

func (b *bindingBuilder) clusters(names ...string) *bindingBuilder {
	b.rb.Spec.Clusters = nil
	for _, n := range names {
		b.rb.Spec.Clusters = append(b.rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: n, Replicas: 1})
	}
	return b
}

func (b *bindingBuilder) evicting(cluster string, mode policyv1alpha1.PurgeMode) *bindingBuilder {
	b.rb.Spec.GracefulEvictionTasks = append(b.rb.Spec.GracefulEvictionTasks, workv1alpha2.GracefulEvictionTask{FromCluster: cluster, PurgeMode: mode, Reason: "ApplicationFailure", Producer: "x"})
	return b
}

// suppress sets the last eviction task's suppressDeletion.
func (b *bindingBuilder) suppress(v bool) *bindingBuilder {
	tasks := b.rb.Spec.GracefulEvictionTasks
	tasks[len(tasks)-1].SuppressDeletion = ptr.To(v)
	return b
}

func (b *bindingBuilder) requiredBy(parent string, clusters ...string) *bindingBuilder {
	s := workv1alpha2.BindingSnapshot{Namespace: "default", Name: parent}
	for _, c := range clusters {
		s.Clusters = append(s.Clusters, workv1alpha2.TargetCluster{Name: c, Replicas: 1})
	}
	addRequirement(b.rb, DependedByLabelKey("default", parent), "id-"+parent, s)
	return b
}

func (b *bindingBuilder) placement() *bindingBuilder {
	b.rb.Spec.Placement = &policyv1alpha1.Placement{}
	return b
}

func (b *bindingBuilder) obj() *workv1alpha2.ResourceBinding { return b.rb.DeepCopy() }

func configMapDep(name, uid string) presentDependency {
	return presentDependency{
		Dependency: interpreter.Dependency{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: name},
		UID:        types.UID(uid), ResourceVersion: "1",
	}
}

// attached returns the attached binding of ConfigMap name as the planner
// writes it for the given parents.
func attached(name, uid string) *bindingBuilder {
	b := &bindingBuilder{newAttached("default", name+"-configmap", configMapDep(name, uid))}
	b.rb.Spec.PreserveResourcesOnDeletion = ptr.To(false)
	return b
}

func TestPlanAttached(t *testing.T) {
	parent := makeBinding("nginx-deployment").resource("apps/v1", "Deployment", "nginx", "uid-nginx").clusters("member1")
	abort := parentSettings{ConflictResolution: policyv1alpha1.ConflictAbort}
	over := parentSettings{ConflictResolution: policyv1alpha1.ConflictOverwrite}

	type want struct {
		create, update, delete, waiting []string
		conflicts                       []string
	}
	cases := map[string]struct {
		parent   *workv1alpha2.ResourceBinding
		active   *bool
		deps     []presentDependency
		existing []*workv1alpha2.ResourceBinding
		settings map[string]parentSettings
		want     want
		check    func(t *testing.T, p plan)
	}{
		"new dependency is created with the parent's clusters": {
			deps: []presentDependency{configMapDep("cfg", "uid-cfg")},
			want: want{create: []string{"cfg-configmap"}},
			check: func(t *testing.T, p plan) {
				b := p.Create[0]
				if len(b.Spec.RequiredBy) != 1 || b.Spec.RequiredBy[0].Name != "nginx-deployment" ||
					len(b.Spec.RequiredBy[0].Clusters) != 1 || b.Spec.RequiredBy[0].Clusters[0].Name != "member1" {
					t.Errorf("requiredBy = %+v", b.Spec.RequiredBy)
				}
				if b.Labels[DependedByLabelKey("default", "nginx-deployment")] != "id-nginx-deployment" {
					t.Errorf("labels = %v", b.Labels)
				}
				if b.Spec.Placement != nil || b.Spec.Resource.UID != "uid-cfg" || metav1.GetControllerOf(b).UID != "uid-cfg" {
					t.Errorf("attached binding = %+v", b)
				}
			},
		},
		"up to date: nothing to do": {
			deps:     []presentDependency{configMapDep("cfg", "uid-cfg")},
			existing: []*workv1alpha2.ResourceBinding{attached("cfg", "uid-cfg").requiredBy("nginx-deployment", "member1").obj()},
			want:     want{},
		},
		"parent moved: requiredBy follows": {
			parent:   makeBinding("nginx-deployment").resource("apps/v1", "Deployment", "nginx", "uid-nginx").clusters("member2").obj(),
			deps:     []presentDependency{configMapDep("cfg", "uid-cfg")},
			existing: []*workv1alpha2.ResourceBinding{attached("cfg", "uid-cfg").requiredBy("nginx-deployment", "member1").obj()},
			want:     want{update: []string{"cfg-configmap"}},
			check: func(t *testing.T, p plan) {
				if c := p.Update[0].Spec.RequiredBy[0].Clusters; len(c) != 1 || c[0].Name != "member2" {
					t.Errorf("clusters = %+v", c)
				}
			},
		},
		"graceful eviction keeps the old cluster, Directly does not": {
			parent: makeBinding("nginx-deployment").resource("apps/v1", "Deployment", "nginx", "uid-nginx").clusters("member2").
				evicting("member1", policyv1alpha1.PurgeModeGraciously).evicting("member3", policyv1alpha1.PurgeModeImmediately).obj(),
			deps: []presentDependency{configMapDep("cfg", "uid-cfg")},
			want: want{create: []string{"cfg-configmap"}},
			check: func(t *testing.T, p plan) {
				c := p.Create[0].Spec.RequiredBy[0].Clusters
				if len(c) != 2 || c[0].Name != "member1" || c[1].Name != "member2" {
					t.Errorf("clusters = %+v, want member1 and member2", c)
				}
			},
		},
		"Directly with nothing placed instead: the last copy keeps its dependencies": {
			parent: makeBinding("nginx-deployment").resource("apps/v1", "Deployment", "nginx", "uid-nginx").
				evicting("member1", policyv1alpha1.PurgeModeDirectly).obj(),
			deps: []presentDependency{configMapDep("cfg", "uid-cfg")},
			want: want{create: []string{"cfg-configmap"}},
			check: func(t *testing.T, p plan) {
				if c := p.Create[0].Spec.RequiredBy[0].Clusters; len(c) != 1 || c[0].Name != "member1" {
					t.Errorf("clusters = %+v, want member1, where the last copy runs", c)
				}
			},
		},
		"a Directly task the user keeps (suppressDeletion true)": {
			parent: makeBinding("nginx-deployment").resource("apps/v1", "Deployment", "nginx", "uid-nginx").clusters("member2").
				evicting("member1", policyv1alpha1.PurgeModeDirectly).suppress(true).obj(),
			deps: []presentDependency{configMapDep("cfg", "uid-cfg")},
			want: want{create: []string{"cfg-configmap"}},
			check: func(t *testing.T, p plan) {
				if c := p.Create[0].Spec.RequiredBy[0].Clusters; len(c) != 2 || c[0].Name != "member1" || c[1].Name != "member2" {
					t.Errorf("clusters = %+v, want member1 and member2", c)
				}
			},
		},
		"a Gracefully task the user confirmed (suppressDeletion false)": {
			parent: makeBinding("nginx-deployment").resource("apps/v1", "Deployment", "nginx", "uid-nginx").clusters("member2").
				evicting("member1", policyv1alpha1.PurgeModeGraciously).suppress(false).obj(),
			deps: []presentDependency{configMapDep("cfg", "uid-cfg")},
			want: want{create: []string{"cfg-configmap"}},
			check: func(t *testing.T, p plan) {
				if c := p.Create[0].Spec.RequiredBy[0].Clusters; len(c) != 1 || c[0].Name != "member2" {
					t.Errorf("clusters = %+v, want member2 only: the old copy goes", c)
				}
			},
		},
		"shared dependency keeps the other parent": {
			deps:     []presentDependency{configMapDep("cfg", "uid-cfg")},
			existing: []*workv1alpha2.ResourceBinding{attached("cfg", "uid-cfg").requiredBy("web-deployment", "member3").obj()},
			want:     want{update: []string{"cfg-configmap"}},
			check: func(t *testing.T, p plan) {
				if r := p.Update[0].Spec.RequiredBy; len(r) != 2 || r[0].Name != "nginx-deployment" || r[1].Name != "web-deployment" {
					t.Errorf("requiredBy = %+v", r)
				}
			},
		},
		"dependency dropped: last requirement deletes the binding": {
			existing: []*workv1alpha2.ResourceBinding{attached("old", "uid-old").requiredBy("nginx-deployment", "member1").obj()},
			want:     want{delete: []string{"old-configmap"}},
		},
		"dependency dropped: another parent still requires it": {
			existing: []*workv1alpha2.ResourceBinding{attached("old", "uid-old").requiredBy("nginx-deployment", "member1").requiredBy("web-deployment", "member2").obj()},
			want:     want{update: []string{"old-configmap"}},
			check: func(t *testing.T, p plan) {
				b := p.Update[0]
				if len(b.Spec.RequiredBy) != 1 || b.Spec.RequiredBy[0].Name != "web-deployment" {
					t.Errorf("requiredBy = %+v", b.Spec.RequiredBy)
				}
				if _, ok := b.Labels[DependedByLabelKey("default", "nginx-deployment")]; ok {
					t.Errorf("label kept: %v", b.Labels)
				}
			},
		},
		"dependency dropped: a binding with its own placement stays": {
			existing: []*workv1alpha2.ResourceBinding{attached("old", "uid-old").placement().requiredBy("nginx-deployment", "member1").obj()},
			want:     want{update: []string{"old-configmap"}},
		},
		"inactive parent releases everything": {
			active:   ptr.To(false),
			deps:     []presentDependency{configMapDep("cfg", "uid-cfg")},
			existing: []*workv1alpha2.ResourceBinding{attached("cfg", "uid-cfg").requiredBy("nginx-deployment", "member1").obj()},
			want:     want{delete: []string{"cfg-configmap"}},
		},
		"recreated dependency: old attached binding replaced": {
			deps:     []presentDependency{configMapDep("cfg", "uid-new")},
			existing: []*workv1alpha2.ResourceBinding{attached("cfg", "uid-old").requiredBy("nginx-deployment", "member1").obj()},
			want:     want{delete: []string{"cfg-configmap"}, waiting: []string{"cfg-configmap"}},
		},
		"name held by another kind's binding": {
			deps: []presentDependency{configMapDep("cfg", "uid-cfg")},
			existing: []*workv1alpha2.ResourceBinding{func() *workv1alpha2.ResourceBinding {
				b := attached("cfg", "uid-cfg").obj()
				b.Spec.Resource.APIVersion = "example.io/v1"
				return b
			}()},
			want: want{waiting: []string{"cfg-configmap"}},
		},
		"dependency changed: resourceVersion follows": {
			deps:     []presentDependency{func() presentDependency { d := configMapDep("cfg", "uid-cfg"); d.ResourceVersion = "2"; return d }()},
			existing: []*workv1alpha2.ResourceBinding{attached("cfg", "uid-cfg").requiredBy("nginx-deployment", "member1").obj()},
			want:     want{update: []string{"cfg-configmap"}},
		},
		"parents disagree on conflict resolution": {
			deps:     []presentDependency{configMapDep("cfg", "uid-cfg")},
			existing: []*workv1alpha2.ResourceBinding{attached("cfg", "uid-cfg").requiredBy("web-deployment", "member3").obj()},
			settings: map[string]parentSettings{"nginx-deployment": abort, "web-deployment": over},
			want:     want{update: []string{"cfg-configmap"}, conflicts: []string{"cfg-configmap"}},
			check: func(t *testing.T, p plan) {
				if p.Update[0].Spec.ConflictResolution != policyv1alpha1.ConflictOverwrite {
					t.Errorf("conflictResolution = %s, want Overwrite", p.Update[0].Spec.ConflictResolution)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			par := tc.parent
			if par == nil {
				par = parent.obj()
			}
			active := tc.active == nil || *tc.active
			existing := map[string]*workv1alpha2.ResourceBinding{}
			for _, b := range tc.existing {
				existing[b.Name] = b
			}
			settings := map[types.NamespacedName]parentSettings{}
			s := tc.settings
			if s == nil {
				s = map[string]parentSettings{"nginx-deployment": abort, "web-deployment": abort}
			}
			for n, v := range s {
				settings[types.NamespacedName{Namespace: "default", Name: n}] = v
			}
			p := planAttached(par, active, tc.deps, existing, settings)
			check := func(what string, got []*workv1alpha2.ResourceBinding, want []string) {
				var names []string
				for _, b := range got {
					names = append(names, b.Name)
				}
				if !equalStrings(names, want) {
					t.Errorf("%s = %v, want %v", what, names, want)
				}
			}
			check("create", p.Create, tc.want.create)
			check("update", p.Update, tc.want.update)
			check("delete", p.Delete, tc.want.delete)
			if !equalStrings(p.Waiting, tc.want.waiting) {
				t.Errorf("waiting = %v, want %v", p.Waiting, tc.want.waiting)
			}
			if !equalStrings(p.Conflicts, tc.want.conflicts) {
				t.Errorf("conflicts = %v, want %v", p.Conflicts, tc.want.conflicts)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDependedByLabelKey(t *testing.T) {
	k := DependedByLabelKey("default", "nginx-deployment")
	if k != DependedByLabelKey("default", "nginx-deployment") || k == DependedByLabelKey("default", "web-deployment") {
		t.Errorf("label key not a stable function of namespace/name: %s", k)
	}
	if len(k) > 63+len("resourcebinding.karmada.io/") {
		t.Errorf("label key too long: %s", k)
	}
}

func TestFilterDependencies(t *testing.T) {
	cm := func(ns, name string) interpreter.Dependency {
		return interpreter.Dependency{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name}
	}
	sa := interpreter.Dependency{APIVersion: "v1", Kind: "ServiceAccount", Namespace: "default", Name: "default"}
	got := filterDependencies([]interpreter.Dependency{cm("default", "b"), cm("default", "a"), cm("default", "a"), cm("other", "c"), cm("default", "kube-root-ca.crt"), sa, {Kind: "ConfigMap"}}, "default")
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Errorf("filterDependencies = %+v", got)
	}
}
