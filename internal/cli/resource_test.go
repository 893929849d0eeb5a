package cli

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// orderedDiscovery is the fake discovery with the groups in the order its
// resource lists are given, as a real API server lists them by priority
// (the fake builds them from a map, in random order).
type orderedDiscovery struct {
	*fake.FakeDiscovery
}

func (d orderedDiscovery) ServerGroups() (*metav1.APIGroupList, error) {
	if _, err := d.FakeDiscovery.ServerGroups(); err != nil {
		return nil, err
	}
	list := &metav1.APIGroupList{}
	index := map[string]int{}
	for _, rl := range d.Resources {
		gv, err := schema.ParseGroupVersion(rl.GroupVersion)
		if err != nil {
			return nil, err
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: rl.GroupVersion, Version: gv.Version}
		i, ok := index[gv.Group]
		if !ok {
			i = len(list.Groups)
			index[gv.Group] = i
			list.Groups = append(list.Groups, metav1.APIGroup{Name: gv.Group, PreferredVersion: v})
		}
		list.Groups[i].Versions = append(list.Groups[i].Versions, v)
	}
	return list, nil
}

func (d orderedDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return discovery.ServerGroupsAndResources(d)
}

func apiResource(name, singular, kind string, namespaced bool, shortNames ...string) metav1.APIResource {
	return metav1.APIResource{Name: name, SingularName: singular, Kind: kind, Namespaced: namespaced, ShortNames: shortNames,
		Verbs: metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"}}
}

// servedResources is a control plane's discovery: built-in kinds, a CRD
// (FlinkDeployment, in two versions), cluster-scoped kinds and Lifeboat's
// own Cluster.
func servedResources() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			apiResource("pods", "pod", "Pod", true, "po"),
			apiResource("namespaces", "namespace", "Namespace", false, "ns"),
			apiResource("configmaps", "configmap", "ConfigMap", true, "cm"),
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			apiResource("deployments", "deployment", "Deployment", true, "deploy"),
			apiResource("statefulsets", "statefulset", "StatefulSet", true, "sts"),
		}},
		{GroupVersion: "rbac.authorization.k8s.io/v1", APIResources: []metav1.APIResource{
			apiResource("clusterroles", "clusterrole", "ClusterRole", false),
		}},
		{GroupVersion: "cluster.karmada.io/v1alpha1", APIResources: []metav1.APIResource{
			apiResource("clusters", "cluster", "Cluster", false),
		}},
		{GroupVersion: "flink.apache.org/v1beta1", APIResources: []metav1.APIResource{
			apiResource("flinkdeployments", "flinkdeployment", "FlinkDeployment", true, "flinkdep"),
		}},
		{GroupVersion: "flink.apache.org/v1alpha1", APIResources: []metav1.APIResource{
			apiResource("flinkdeployments", "flinkdeployment", "FlinkDeployment", true, "flinkdep"),
		}},
	}
}

// clashingResources serve a second Deployment kind, with the same short
// name, from a group the server lists after apps.
func clashingResources() []*metav1.APIResourceList {
	return append(servedResources(), &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
		apiResource("deployments", "deployment", "Deployment", true, "deploy"),
	}})
}

func testDiscovery(resources []*metav1.APIResourceList) discovery.DiscoveryInterface {
	return orderedDiscovery{&fake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: resources}}}
}

// newTestResolver returns a resolver over resources and the warnings it
// gives.
func newTestResolver(resources []*metav1.APIResourceList) (*resourceResolver, *[]string) {
	var warnings []string
	return newResourceResolver(testDiscovery(resources), func(w string) { warnings = append(warnings, w) }), &warnings
}

func TestResolverMapping(t *testing.T) {
	deployment := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	flink := schema.GroupVersionKind{Group: "flink.apache.org", Version: "v1beta1", Kind: "FlinkDeployment"}
	cases := map[string]struct {
		resources    []*metav1.APIResourceList
		typeArg      string
		want         schema.GroupVersionKind
		wantCluster  bool     // cluster-scoped
		wantWarnings []string // substrings, one per expected warning
		wantErr      string
	}{
		"short name":                         {typeArg: "deploy", want: deployment},
		"singular":                           {typeArg: "deployment", want: deployment},
		"plural":                             {typeArg: "deployments", want: deployment},
		"plural with group":                  {typeArg: "deployments.apps", want: deployment},
		"Kind":                               {typeArg: "Deployment", want: deployment},
		"Kind with group":                    {typeArg: "Deployment.apps", want: deployment},
		"singular with version and group":    {typeArg: "deployment.v1.apps", want: deployment},
		"Kind with version and group":        {typeArg: "Deployment.v1.apps", want: deployment},
		"CRD singular":                       {typeArg: "flinkdeployment", want: flink},
		"CRD short name":                     {typeArg: "flinkdep", want: flink},
		"CRD Kind":                           {typeArg: "FlinkDeployment", want: flink},
		"CRD plural with group":              {typeArg: "flinkdeployments.flink.apache.org", want: flink},
		"CRD non-preferred version":          {typeArg: "flinkdeployment.v1alpha1.flink.apache.org", want: flink.GroupKind().WithVersion("v1alpha1")},
		"cluster-scoped built-in":            {typeArg: "clusterrole", want: schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, wantCluster: true},
		"cluster-scoped core short name":     {typeArg: "ns", want: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, wantCluster: true},
		"Lifeboat's Cluster":                 {typeArg: "clusters.cluster.karmada.io", want: schema.GroupVersionKind{Group: "cluster.karmada.io", Version: "v1alpha1", Kind: "Cluster"}, wantCluster: true},
		"unknown type":                       {typeArg: "deplo", wantErr: `the server doesn't have a resource type "deplo"`},
		"unknown group":                      {typeArg: "deployments.nope", wantErr: `the server doesn't have a resource type "deployments"`},
		"unserved version":                   {typeArg: "deployment.v2.apps", wantErr: `the server doesn't have a resource type "deployment"`},
		"a Kind's lower-case plural guess":   {typeArg: "flinkdeploymentz", wantErr: `the server doesn't have a resource type "flinkdeploymentz"`},
		"two groups: the first, with a word": {resources: clashingResources(), typeArg: "deployments", want: deployment, wantWarnings: []string{`"deployments" could also match lower priority Deployment.example.com; using Deployment.apps`}},
		"two groups, Kind: the first":        {resources: clashingResources(), typeArg: "Deployment", want: deployment, wantWarnings: []string{"Deployment.example.com"}},
		"two groups, short name: the first":  {resources: clashingResources(), typeArg: "deploy", want: deployment, wantWarnings: []string{`short name "deploy" could also match lower priority resource deployments.example.com`}},
		"two groups, group named":            {resources: clashingResources(), typeArg: "deployments.example.com", want: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Deployment"}},
		"two groups, other group's version":  {resources: clashingResources(), typeArg: "deployment.v1.example.com", want: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Deployment"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resources := tc.resources
			if resources == nil {
				resources = servedResources()
			}
			r, warnings := newTestResolver(resources)
			m, err := r.mapping(tc.typeArg)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.GroupVersionKind != tc.want {
				t.Errorf("GVK = %s, want %s", m.GroupVersionKind, tc.want)
			}
			if cluster := m.Scope.Name() == meta.RESTScopeNameRoot; cluster != tc.wantCluster {
				t.Errorf("cluster-scoped = %v, want %v", cluster, tc.wantCluster)
			}
			if len(*warnings) != len(tc.wantWarnings) {
				t.Fatalf("warnings = %q, want %d containing %q", *warnings, len(tc.wantWarnings), tc.wantWarnings)
			}
			for i, w := range tc.wantWarnings {
				if !strings.Contains((*warnings)[i], w) {
					t.Errorf("warning %q lacks %q", (*warnings)[i], w)
				}
			}
		})
	}
}

// A failed discovery is reported as such, never as an unknown type.
func TestResolverDiscoveryFailure(t *testing.T) {
	f := &clienttesting.Fake{Resources: servedResources()}
	f.AddReactor("get", "group", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	r := newResourceResolver(orderedDiscovery{&fake.FakeDiscovery{Fake: f}}, nil)
	_, err := r.mapping("deploy")
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "doesn't have a resource type") {
		t.Fatalf("error = %v, want the discovery failure", err)
	}
}

func TestResourceArgs(t *testing.T) {
	cases := map[string]struct {
		args               []string
		wantType, wantName string
		wantErr            string
	}{
		"TYPE/NAME":                {args: []string{"deploy/nginx"}, wantType: "deploy", wantName: "nginx"},
		"TYPE NAME":                {args: []string{"deployment", "nginx"}, wantType: "deployment", wantName: "nginx"},
		"grouped TYPE/NAME":        {args: []string{"deployments.apps/nginx"}, wantType: "deployments.apps", wantName: "nginx"},
		"name only":                {args: []string{"nginx"}, wantErr: "the name of the resource is missing"},
		"type and TYPE/NAME":       {args: []string{"deployment", "deployment/nginx"}, wantErr: "no separate type argument"},
		"two slashes":              {args: []string{"deployment/nginx/x"}, wantErr: "a single type and name"},
		"empty name":               {args: []string{"deployment/"}, wantErr: "empty type or name"},
		"empty type":               {args: []string{"/nginx"}, wantErr: "empty type or name"},
		"empty second argument":    {args: []string{"deployment", ""}, wantErr: "empty type or name"},
		"several types":            {args: []string{"deploy,sts", "nginx"}, wantErr: "give one"},
		"several types, TYPE/NAME": {args: []string{"deploy,sts/nginx"}, wantErr: "give one"},
		"three arguments":          {args: []string{"deployment", "a", "b"}, wantErr: "got 3 arguments"},
		"no argument":              {args: nil, wantErr: "got 0 arguments"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			typeArg, n, err := resourceArgs(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "want TYPE/NAME or TYPE NAME") {
					t.Fatalf("error = %v, want one explaining the forms and %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if typeArg != tc.wantType || n != tc.wantName {
				t.Errorf("got %q %q, want %q %q", typeArg, n, tc.wantType, tc.wantName)
			}
		})
	}
}
