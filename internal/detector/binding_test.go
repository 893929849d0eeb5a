package detector

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/claim"
)

func TestBindingName(t *testing.T) {
	cases := map[string]struct{ kind, name, want string }{
		"deployment":                           {"Deployment", "nginx", "nginx-deployment"},
		"upper case":                           {"ConfigMap", "My-Config", "my-config-configmap"},
		"colon":                                {"ClusterRole", "system:foo", "system.foo-clusterrole"},
		"a character no binding name may have": {"ClusterRole", "my_role", "my-role-clusterrole-"},
		"an e-mail address as an RBAC name":    {"RoleBinding", "jane@example.com", "jane-example-com-rolebinding-"},
		"253 characters with the kind":         {"ConfigMap", strings.Repeat("a", 243), strings.Repeat("a", 243) + "-configmap"},
		"longer: cut, with a hash":             {"ConfigMap", strings.Repeat("a", 250), strings.Repeat("a", 200)},
		"only characters no name may have":     {"ClusterRole", "__", "clusterrole-"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := BindingName(tc.kind, tc.name)
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Fatalf("BindingName = %q: not a valid name: %v", got, errs)
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("BindingName = %q, want %q or a name starting with it", got, tc.want)
			}
			if strings.HasSuffix(tc.want, "-") && got == tc.want {
				t.Errorf("BindingName = %q, want a hash after it", got)
			}
			if got != BindingName(tc.kind, tc.name) {
				t.Errorf("not stable")
			}
		})
	}
	// Two names that are cleaned to the same characters keep two bindings.
	if BindingName("ClusterRole", "a_b") == BindingName("ClusterRole", "a@b") {
		t.Errorf("a_b and a@b share the binding name %q", BindingName("ClusterRole", "a_b"))
	}
	if long := strings.Repeat("a", 250); BindingName("ConfigMap", long) == BindingName("ConfigMap", long+"b") {
		t.Errorf("two long names cut to the same characters share a binding name")
	}
}

func TestBuildBinding(t *testing.T) {
	tmpl := deployment("default", "nginx").rv("7").obj()
	p := pp("default", "nginx-propagation").selectName("nginx").ref()
	p.Spec.SchedulerName = "default-scheduler"
	p.Spec.ConflictResolution = policyv1alpha1.ConflictOverwrite
	p.Spec.Placement.ClusterAffinity = &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}}
	p.Spec.Suspension = &policyv1alpha1.Suspension{Dispatching: ptr.To(true)}
	p.Spec.PreserveResourcesOnDeletion = ptr.To(true)
	r := ReplicaInfo{Replicas: 2, Requirements: &workv1alpha2.ReplicaRequirements{NodeClaim: &workv1alpha2.NodeClaim{NodeSelector: map[string]string{"a": "b"}}}}

	got := BuildBinding(tmpl, p, r, "rb-id").(*workv1alpha2.ResourceBinding)
	want := &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "nginx-deployment",
			Namespace: "default",
			Labels: map[string]string{
				policyv1alpha1.PropagationPolicyPermanentIDLabel: "id-nginx-propagation",
				workv1alpha2.ResourceBindingPermanentIDLabel:     "rb-id",
			},
			Annotations: map[string]string{
				policyv1alpha1.PropagationPolicyNamespaceAnnotation: "default",
				policyv1alpha1.PropagationPolicyNameAnnotation:      "nginx-propagation",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx", UID: "uid-nginx",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
			Finalizers: []string{workv1alpha2.BindingControllerFinalizer},
		},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{
				APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "nginx", UID: "uid-nginx", ResourceVersion: "7",
			},
			Replicas:                    2,
			ReplicaRequirements:         r.Requirements,
			Placement:                   &p.Spec.Placement,
			SchedulerName:               "default-scheduler",
			ConflictResolution:          policyv1alpha1.ConflictOverwrite,
			PreserveResourcesOnDeletion: ptr.To(true),
			Suspension:                  &workv1alpha2.Suspension{Suspension: policyv1alpha1.Suspension{Dispatching: ptr.To(true)}},
		},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("buildBinding:\n got %+v\nwant %+v", got, want)
	}
}

func TestBuildClusterBinding(t *testing.T) {
	tmpl := namespaceObj("prod").obj()
	p := cpp("namespaces").ref()
	got, ok := BuildBinding(tmpl, p, ReplicaInfo{}, "crb-id").(*workv1alpha2.ClusterResourceBinding)
	if !ok {
		t.Fatalf("cluster-scoped template: want a ClusterResourceBinding")
	}
	if got.Name != "prod-namespace" || got.Namespace != "" {
		t.Errorf("name = %q/%q, want /prod-namespace", got.Namespace, got.Name)
	}
	if got.Labels[policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel] != "id-namespaces" ||
		got.Annotations[policyv1alpha1.ClusterPropagationPolicyAnnotation] != "namespaces" ||
		got.Labels[workv1alpha2.ClusterResourceBindingPermanentIDLabel] != "crb-id" {
		t.Errorf("claim metadata: labels %v annotations %v", got.Labels, got.Annotations)
	}
	if len(got.Finalizers) != 1 || got.Finalizers[0] != workv1alpha2.ClusterResourceBindingControllerFinalizer {
		t.Errorf("finalizers = %v", got.Finalizers)
	}
}

func TestEffectivePropagateDeps(t *testing.T) {
	app := &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{}}
	clusterOnly := &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{}}
	cases := map[string]struct {
		spec policyv1alpha1.PropagationSpec
		want bool
	}{
		"off":                          {policyv1alpha1.PropagationSpec{}, false},
		"propagateDeps":                {policyv1alpha1.PropagationSpec{PropagateDeps: true}, true},
		"deprecated association":       {policyv1alpha1.PropagationSpec{Association: true}, true},
		"application failover implies": {policyv1alpha1.PropagationSpec{Failover: app}, true},
		"cluster failover does not":    {policyv1alpha1.PropagationSpec{Failover: clusterOnly}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := effectivePropagateDeps(&tc.spec); got != tc.want {
				t.Errorf("effectivePropagateDeps = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMergeBinding(t *testing.T) {
	p := pp("default", "pol").selectName("nginx").ref()
	tmpl := deployment("default", "nginx").rv("5").obj()
	base := func() client.Object { return BuildBinding(tmpl, p, ReplicaInfo{Replicas: 2}, "rb-id") }

	cases := map[string]struct {
		existing    func() client.Object
		newRV       string
		policy      func() PolicyRef
		wantChanged bool
		check       func(t *testing.T, b client.Object)
	}{
		"up to date: no change": {
			existing: base, wantChanged: false,
		},
		"template changed: resourceVersion follows": {
			existing: base, newRV: "6", wantChanged: true,
			check: func(t *testing.T, b client.Object) {
				if rv := BindingSpec(b).Resource.ResourceVersion; rv != "6" {
					t.Errorf("resourceVersion = %q, want 6", rv)
				}
			},
		},
		"scheduler's and distributor's fields are kept": {
			existing: func() client.Object {
				b := base()
				s := BindingSpec(b)
				s.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}}
				s.RequiredBy = []workv1alpha2.BindingSnapshot{{Namespace: "default", Name: "x-deployment"}}
				s.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member2", Reason: "TaintUntolerated", Producer: "TaintManager"}}
				s.Suspension = &workv1alpha2.Suspension{Scheduling: ptr.To(true)}
				b.SetLabels(map[string]string{
					policyv1alpha1.PropagationPolicyPermanentIDLabel: "id-pol",
					workv1alpha2.ResourceBindingPermanentIDLabel:     "rb-id",
					"resourcebinding.karmada.io/depended-by-abc":     "parent",
				})
				b.SetFinalizers(append(b.GetFinalizers(), workv1alpha2.BindingDependenciesDistributorFinalizer))
				return b
			},
			wantChanged: false,
		},
		"policy placement changed": {
			existing: base,
			policy: func() PolicyRef {
				q := pp("default", "pol").selectName("nginx").ref()
				q.Spec.Placement.ClusterAffinity = &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member3"}}
				return q
			},
			wantChanged: true,
			check: func(t *testing.T, b client.Object) {
				if got := BindingSpec(b).Placement.ClusterAffinity.ClusterNames; len(got) != 1 || got[0] != "member3" {
					t.Errorf("placement = %v", got)
				}
			},
		},
		"claim moves from CPP to PP": {
			existing: func() client.Object {
				b := BuildBinding(tmpl, cpp("c").ref(), ReplicaInfo{Replicas: 2}, "rb-id")
				return b
			},
			wantChanged: true,
			check: func(t *testing.T, b client.Object) {
				if _, ok := b.GetLabels()[policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel]; ok {
					t.Errorf("CPP label kept: %v", b.GetLabels())
				}
				if b.GetLabels()[policyv1alpha1.PropagationPolicyPermanentIDLabel] != "id-pol" {
					t.Errorf("PP label missing: %v", b.GetLabels())
				}
			},
		},
		"missing permanent id is added": {
			existing: func() client.Object {
				b := base()
				l := b.GetLabels()
				delete(l, workv1alpha2.ResourceBindingPermanentIDLabel)
				b.SetLabels(l)
				return b
			},
			wantChanged: true,
			check: func(t *testing.T, b client.Object) {
				if b.GetLabels()[workv1alpha2.ResourceBindingPermanentIDLabel] != "new-id" {
					t.Errorf("labels = %v", b.GetLabels())
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := tc.existing()
			policy := p
			if tc.policy != nil {
				policy = tc.policy()
			}
			tm := tmpl.DeepCopy()
			if tc.newRV != "" {
				tm.SetResourceVersion(tc.newRV)
			}
			changed := MergeBinding(b, tm, policy, ReplicaInfo{Replicas: 2}, "new-id")
			if changed != tc.wantChanged {
				t.Fatalf("changed = %v, want %v", changed, tc.wantChanged)
			}
			s := BindingSpec(b)
			if name == "scheduler's and distributor's fields are kept" {
				if len(s.Clusters) != 1 || len(s.RequiredBy) != 1 || len(s.GracefulEvictionTasks) != 1 ||
					s.Suspension == nil || s.Suspension.Scheduling == nil || len(b.GetFinalizers()) != 2 ||
					b.GetLabels()["resourcebinding.karmada.io/depended-by-abc"] != "parent" {
					t.Errorf("foreign fields not kept: %+v labels %v finalizers %v", s, b.GetLabels(), b.GetFinalizers())
				}
			}
			if tc.check != nil {
				tc.check(t, b)
			}
		})
	}
}

func TestClaim(t *testing.T) {
	p := pp("default", "pol").ref()
	c := cpp("cpol").ref()
	cases := map[string]struct {
		start       func() *templateBuilder
		do          func(obj metav1.Object) bool
		wantChanged bool
		wantClaim   *claim.Claim
	}{
		"claim by PP": {
			start: func() *templateBuilder { return deployment("default", "nginx") },
			do:    func(o metav1.Object) bool { return setClaim(o, p) }, wantChanged: true,
			wantClaim: &claim.Claim{Namespace: "default", Name: "pol", ID: "id-pol"},
		},
		"claim by PP again: no change": {
			start: func() *templateBuilder {
				b := deployment("default", "nginx")
				setClaim(b.u, p)
				return b
			},
			do: func(o metav1.Object) bool { return setClaim(o, p) }, wantChanged: false,
			wantClaim: &claim.Claim{Namespace: "default", Name: "pol", ID: "id-pol"},
		},
		"PP takes over from CPP": {
			start: func() *templateBuilder {
				b := deployment("default", "nginx")
				setClaim(b.u, c)
				return b
			},
			do: func(o metav1.Object) bool { return setClaim(o, p) }, wantChanged: true,
			wantClaim: &claim.Claim{Namespace: "default", Name: "pol", ID: "id-pol"},
		},
		"claim by CPP": {
			start: func() *templateBuilder { return deployment("default", "nginx") },
			do:    func(o metav1.Object) bool { return setClaim(o, c) }, wantChanged: true,
			wantClaim: &claim.Claim{Cluster: true, Name: "cpol", ID: "id-cpol"},
		},
		"remove own claim": {
			start: func() *templateBuilder {
				b := deployment("default", "nginx").labels(map[string]string{"app": "web"})
				setClaim(b.u, p)
				return b
			},
			do: func(o metav1.Object) bool { return removeClaim(o, false, "id-pol") }, wantChanged: true,
		},
		"keep another policy's claim": {
			start: func() *templateBuilder {
				b := deployment("default", "nginx")
				setClaim(b.u, p)
				return b
			},
			do: func(o metav1.Object) bool { return removeClaim(o, false, "id-other") }, wantChanged: false,
			wantClaim: &claim.Claim{Namespace: "default", Name: "pol", ID: "id-pol"},
		},
		"partial claim is no claim": {
			start: func() *templateBuilder {
				return deployment("default", "nginx").labels(map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "x"})
			},
			do: func(metav1.Object) bool { return false }, wantChanged: false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := tc.start().obj()
			if changed := tc.do(u); changed != tc.wantChanged {
				t.Fatalf("changed = %v, want %v", changed, tc.wantChanged)
			}
			got, ok := claim.Read(u)
			switch {
			case tc.wantClaim == nil && ok:
				t.Errorf("claim = %+v, want none", got)
			case tc.wantClaim != nil && (!ok || got != *tc.wantClaim):
				t.Errorf("claim = %+v (ok=%v), want %+v", got, ok, *tc.wantClaim)
			}
		})
	}
}
