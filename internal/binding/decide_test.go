package binding

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
)

func TestWorkName(t *testing.T) {
	cases := map[string]struct {
		kind, name, namespace string
		want                  string
	}{
		"Karmada's documented example": {"Deployment", "nginx", "default", "nginx-687f7fb96f"},
		"colon becomes dot":            {"ClusterRole", "system:admin", "", "system.admin-"},
		"long names are cut to 63":     {"Deployment", strings.Repeat("a", 80), "default", strings.Repeat("a", 40)},
		"an RBAC name with '_'":        {"ClusterRole", "my_role", "", "my-role-"},
		"an RBAC name with '@'":        {"RoleBinding", "jane@example.com", "team", "jane-example-com-"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := WorkName(tc.kind, tc.name, tc.namespace)
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("WorkName = %q: not a valid name: %v", got, errs)
			}
			if !strings.HasPrefix(got, tc.want) || len(got) > 63 {
				t.Errorf("WorkName = %q (%d chars), want prefix %q and at most 63 chars", got, len(got), tc.want)
			}
			if got != WorkName(tc.kind, tc.name, tc.namespace) {
				t.Errorf("not stable")
			}
		})
	}
	if WorkName("Deployment", "nginx", "default") == WorkName("Deployment", "nginx", "prod") ||
		WorkName("Deployment", "nginx", "default") == WorkName("ConfigMap", "nginx", "default") {
		t.Errorf("namespace and kind must change the name")
	}
}

func TestTargetClusters(t *testing.T) {
	cases := map[string]struct {
		spec *workv1alpha2.ResourceBindingSpec
		want []target
	}{
		"scheduled clusters, sorted": {
			spec: &makeBinding("nginx").Cluster("member2", 1).Cluster("member1", 2).Spec,
			want: []target{{cluster: "member1", replicas: 2, scheduled: true}, {cluster: "member2", replicas: 1, scheduled: true}},
		},
		"requiredBy adds clusters without replicas": {
			spec: &makeBinding("nginx").Cluster("member1", 2).RequiredBy("app", "member1", "member3").RequiredBy("other", "member3").Spec,
			want: []target{{cluster: "member1", replicas: 2, scheduled: true}, {cluster: "member3"}},
		},
		"attached binding with requiredBy only": {
			spec: &makeBinding("cm").RequiredBy("app", "member2").Spec,
			want: []target{{cluster: "member2"}},
		},
		"nothing": {spec: &workv1alpha2.ResourceBindingSpec{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := targetClusters(tc.spec); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("targetClusters = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestClustersToKeep(t *testing.T) {
	cases := map[string]struct {
		spec *workv1alpha2.ResourceBindingSpec
		want []string
	}{
		"no tasks":   {spec: &makeBinding("nginx").Cluster("member1", 1).Spec},
		"gracefully": {spec: &makeBinding("nginx").EvictionTask("member1", policyv1alpha1.PurgeModeGracefully).Spec, want: []string{"member1"}},
		"never":      {spec: &makeBinding("nginx").EvictionTask("member1", policyv1alpha1.PurgeModeNever).Spec, want: []string{"member1"}},
		"old spelling and directly are kept until the failover issue refines it": {
			spec: &makeBinding("nginx").EvictionTask("member1", policyv1alpha1.PurgeModeGraciously).EvictionTask("member2", policyv1alpha1.PurgeModeDirectly).Spec,
			want: []string{"member1", "member2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := sets.List(clustersToKeep(tc.spec, nil)); !reflect.DeepEqual(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("clustersToKeep = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOrphanWorks(t *testing.T) {
	rb := makeBinding("nginx").Obj()
	deleting := makeWork("member4", rb)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	notExecution := makeWork("x", rb)
	notExecution.Namespace = "default"
	works := []workv1alpha1.Work{*makeWork("member1", rb), *makeWork("member2", rb), *makeWork("member3", rb), *deleting, *notExecution}

	cases := map[string]struct {
		spec *workv1alpha2.ResourceBindingSpec
		want []string
	}{
		"untargeted clusters are orphans": {
			spec: &makeBinding("nginx").Cluster("member1", 1).Spec,
			want: []string{"karmada-es-member2", "karmada-es-member3"},
		},
		"eviction task keeps the old copy": {
			spec: &makeBinding("nginx").Cluster("member1", 1).EvictionTask("member2", policyv1alpha1.PurgeModeGracefully).Spec,
			want: []string{"karmada-es-member3"},
		},
		"requiredBy clusters are not orphans": {
			spec: &makeBinding("nginx").Cluster("member1", 1).RequiredBy("app", "member2", "member3").Spec,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, w := range orphanWorks(works, expectedClusters(tc.spec, nil)) {
				got = append(got, w.Namespace)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("orphans = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFullyAppliedCondition(t *testing.T) {
	item := func(c string, ok bool) workv1alpha2.AggregatedStatusItem {
		return workv1alpha2.AggregatedStatusItem{ClusterName: c, Applied: ok}
	}
	cases := map[string]struct {
		expected []string
		items    []workv1alpha2.AggregatedStatusItem
		want     metav1.ConditionStatus
	}{
		"all applied":         {[]string{"m1", "m2"}, []workv1alpha2.AggregatedStatusItem{item("m1", true), item("m2", true)}, metav1.ConditionTrue},
		"one not applied":     {[]string{"m1", "m2"}, []workv1alpha2.AggregatedStatusItem{item("m1", true), item("m2", false)}, metav1.ConditionFalse},
		"one Work missing":    {[]string{"m1", "m2"}, []workv1alpha2.AggregatedStatusItem{item("m1", true)}, metav1.ConditionFalse},
		"no expected cluster": {nil, nil, metav1.ConditionFalse},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := fullyAppliedCondition(sets.New(tc.expected...), tc.items); got.Status != tc.want {
				t.Errorf("FullyApplied = %s, want %s", got.Status, tc.want)
			}
		})
	}
}

// One case per rule of mayAdoptWork.
func TestMayAdoptWork(t *testing.T) {
	self := types.NamespacedName{Namespace: "default", Name: "a-deployment"}
	other := types.NamespacedName{Namespace: "default", Name: "b-deployment"}
	cases := map[string]struct {
		owner              types.NamespacedName
		named, ownerExists bool
		want               bool
	}{
		"1. a Work naming this binding is its own":                   {owner: self, named: true, want: true},
		"2. a Work of a binding that no longer exists is taken over": {owner: other, named: true, want: true},
		"3. a Work of another existing binding is left alone":        {owner: other, named: true, ownerExists: true, want: false},
		"3. a ClusterResourceBinding of the same name is another":    {owner: types.NamespacedName{Name: "a-deployment"}, named: true, ownerExists: true, want: false},
		"4. a Work naming no binding is left alone":                  {want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := mayAdoptWork(self, tc.owner, tc.named, tc.ownerExists); got != tc.want {
				t.Errorf("mayAdoptWork = %t, want %t", got, tc.want)
			}
		})
	}
}
