package overrides

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/lifeboat-dev/lifeboat/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

const deploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  namespace: default
  labels: {app: nginx}
spec:
  replicas: 2
  template:
    spec:
      initContainers:
      - name: init
        image: busybox
      containers:
      - name: nginx
        image: nginx
        args: ["-a", "-b"]
      - name: sidecar
        image: registry:5000/tools/sidecar:v1
`

const configMapYAML = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: conf
  namespace: default
data:
  config.yaml: |
    server:
      port: 80
  config.json: '{"a":1}'
`

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func op(t *testing.T, y string) policyv1alpha1.OverridePolicy {
	t.Helper()
	var p policyv1alpha1.OverridePolicy
	if err := yaml.UnmarshalStrict([]byte(y), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func cop(t *testing.T, y string) policyv1alpha1.ClusterOverridePolicy {
	t.Helper()
	var p policyv1alpha1.ClusterOverridePolicy
	if err := yaml.UnmarshalStrict([]byte(y), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func cluster(name string, labels map[string]string) *clusterv1alpha1.Cluster {
	return &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: clusterv1alpha1.ClusterSpec{Region: "eu", Zones: []string{"eu-1"}}}
}

// get reads a value by JSON pointer, failing the test when it is missing.
func get(t *testing.T, u *unstructured.Unstructured, ptr string) any {
	t.Helper()
	v, found, err := getPointer(u.Object, ptr)
	if err != nil || !found {
		t.Fatalf("%s: found=%v err=%v", ptr, found, err)
	}
	return v
}

// seedOP is the OverridePolicy of the stateful-failover seed (004).
const seedOP = `
metadata: {name: nginx-op, namespace: default}
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: nginx
  overrideRules:
  - targetCluster:
      clusterNames: [member1]
    overriders:
      imageOverrider:
      - component: "Registry"
        operator: replace
        value: "fake"
`

func TestApplySeedImageOverrideTargetsOneCluster(t *testing.T) {
	tmpl := obj(t, deploymentYAML)
	ops := []policyv1alpha1.OverridePolicy{op(t, seedOP)}

	res, err := Apply(tmpl, cluster("member1", nil), nil, ops)
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, res.Object, "/spec/template/spec/containers/0/image"); got != "fake/nginx" {
		t.Errorf("member1 image = %v, want fake/nginx", got)
	}
	if got := get(t, res.Object, "/spec/template/spec/containers/1/image"); got != "fake/tools/sidecar:v1" {
		t.Errorf("member1 sidecar image = %v, want fake/tools/sidecar:v1", got)
	}
	if got := get(t, res.Object, "/spec/template/spec/initContainers/0/image"); got != "busybox" {
		t.Errorf("init containers are not rewritten without a predicate, got %v", got)
	}
	if got := get(t, tmpl, "/spec/template/spec/containers/0/image"); got != "nginx" {
		t.Errorf("template was modified: %v", got)
	}
	ann, err := res.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"policyName":"nginx-op","overriders":{"imageOverrider":[{"component":"Registry","operator":"replace","value":"fake"}]}}]`
	if ann[policyv1alpha1.AppliedOverrides] != want {
		t.Errorf("applied-overrides = %s, want %s", ann[policyv1alpha1.AppliedOverrides], want)
	}
	if _, ok := ann[policyv1alpha1.AppliedClusterOverrides]; ok {
		t.Errorf("no cluster override was applied, annotation present")
	}

	res, err = Apply(tmpl, cluster("member2", nil), nil, ops)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Object.Object, tmpl.Object) {
		t.Errorf("member2 is not targeted, object changed")
	}
	if ann, _ := res.Annotations(); len(ann) != 0 {
		t.Errorf("member2: annotations %v, want none", ann)
	}
}

func TestApplyOrder(t *testing.T) {
	// Each policy sets label "winner"; the last applied wins.
	cases := map[string]struct {
		cops       []string
		ops        []string
		wantWinner string
		wantCOPs   []string
		wantOPs    []string
	}{
		"OverridePolicy after ClusterOverridePolicy": {
			cops:       []string{`{metadata: {name: z-cop}, spec: {overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {winner: z-cop}}]}}]}}`},
			ops:        []string{`{metadata: {name: a-op, namespace: default}, spec: {overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {winner: a-op}}]}}]}}`},
			wantWinner: "a-op", wantCOPs: []string{"z-cop"}, wantOPs: []string{"a-op"},
		},
		"name selector beats label selector beats match-all, whatever the names": {
			ops: []string{
				`{metadata: {name: a-by-name, namespace: default}, spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: nginx}], overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {winner: a-by-name}}]}}]}}`,
				`{metadata: {name: b-by-label, namespace: default}, spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {app: nginx}}}], overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {winner: b-by-label}}]}}]}}`,
				`{metadata: {name: c-all, namespace: default}, spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}], overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {winner: c-all}}]}}]}}`,
			},
			wantWinner: "a-by-name", wantOPs: []string{"a-by-name", "b-by-label", "c-all"},
		},
		"same priority: later name wins": {
			ops: []string{
				`{metadata: {name: b, namespace: default}, spec: {overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {winner: b}}]}}]}}`,
				`{metadata: {name: a, namespace: default}, spec: {overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {winner: a}}]}}]}}`,
			},
			wantWinner: "b", wantOPs: []string{"a", "b"},
		},
		"non-matching and other-namespace policies are skipped": {
			ops: []string{
				`{metadata: {name: other-ns, namespace: prod}, spec: {overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {winner: other-ns}}]}}]}}`,
				`{metadata: {name: other-name, namespace: default}, spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: redis}], overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {winner: other-name}}]}}]}}`,
				`{metadata: {name: other-label, namespace: default}, spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {app: redis}}}], overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {winner: other-label}}]}}]}}`,
			},
			cops: []string{`{metadata: {name: other-kind}, spec: {resourceSelectors: [{apiVersion: v1, kind: ConfigMap}], overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {winner: other-kind}}]}}]}}`},
		},
		"rules for other clusters are skipped, deprecated form still works": {
			ops: []string{
				`{metadata: {name: a, namespace: default}, spec: {overrideRules: [{targetCluster: {clusterNames: [member1]}, overriders: {labelsOverrider: [{operator: add, value: {winner: a-member1}}]}}, {targetCluster: {exclude: [member2]}, overriders: {labelsOverrider: [{operator: add, value: {winner: a-not-member2}}]}}]}}`,
				`{metadata: {name: b, namespace: default}, spec: {targetCluster: {labelSelector: {matchLabels: {env: prod}}}, overriders: {labelsOverrider: [{operator: add, value: {winner: b-prod}}]}}}`,
				`{metadata: {name: c, namespace: default}, spec: {targetCluster: {fieldSelector: {matchExpressions: [{key: region, operator: In, values: [us]}]}}, overriders: {labelsOverrider: [{operator: add, value: {winner: c-us}}]}}}`,
			},
			wantWinner: "a-not-member2", wantOPs: []string{"a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var cops []policyv1alpha1.ClusterOverridePolicy
			for _, y := range tc.cops {
				cops = append(cops, cop(t, y))
			}
			var ops []policyv1alpha1.OverridePolicy
			for _, y := range tc.ops {
				ops = append(ops, op(t, y))
			}
			res, err := Apply(obj(t, deploymentYAML), cluster("member3", map[string]string{"env": "dev"}), cops, ops)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Object.GetLabels()["winner"]; got != tc.wantWinner {
				t.Errorf("winner = %q, want %q", got, tc.wantWinner)
			}
			if got := names(res.ClusterOverrides); !reflect.DeepEqual(got, tc.wantCOPs) {
				t.Errorf("applied cluster overrides = %v, want %v", got, tc.wantCOPs)
			}
			if got := names(res.Overrides); !reflect.DeepEqual(got, tc.wantOPs) {
				t.Errorf("applied overrides = %v, want %v", got, tc.wantOPs)
			}
		})
	}
}

func names(applied []Applied) []string {
	var out []string
	for _, a := range applied {
		out = append(out, a.PolicyName)
	}
	return out
}

func TestApplyClusterScopedTemplateGetsOnlyClusterOverrides(t *testing.T) {
	ns := obj(t, `{apiVersion: v1, kind: Namespace, metadata: {name: team}}`)
	cops := []policyv1alpha1.ClusterOverridePolicy{cop(t, `{metadata: {name: c}, spec: {overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {by: cop}}]}}]}}`)}
	ops := []policyv1alpha1.OverridePolicy{op(t, `{metadata: {name: o, namespace: ""}, spec: {overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {by: op}}]}}]}}`)}
	res, err := Apply(ns, cluster("member1", nil), cops, ops)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Object.GetLabels()["by"]; got != "cop" {
		t.Errorf("label by = %q, want cop", got)
	}
}

func TestOverriders(t *testing.T) {
	cases := map[string]struct {
		template  string
		overrider string // YAML of policyv1alpha1.Overriders
		want      map[string]any
		absent    []string
	}{
		"plaintext add, replace, remove": {
			template:  deploymentYAML,
			overrider: `{plaintext: [{path: /spec/replicas, operator: replace, value: 5}, {path: /spec/paused, operator: add, value: true}, {path: /metadata/labels/app, operator: remove}]}`,
			want:      map[string]any{"/spec/replicas": int64(5), "/spec/paused": true},
			absent:    []string{"/metadata/labels/app"},
		},
		"image with predicate reaches init containers": {
			template:  deploymentYAML,
			overrider: `{imageOverrider: [{predicate: {path: /spec/template/spec/initContainers/0/image}, component: Tag, operator: replace, value: "1.36"}]}`,
			want:      map[string]any{"/spec/template/spec/initContainers/0/image": "busybox:1.36", "/spec/template/spec/containers/0/image": "nginx"},
		},
		"image entries apply in order": {
			template:  deploymentYAML,
			overrider: `{imageOverrider: [{component: Registry, operator: replace, value: mirror.io}, {component: Tag, operator: add, value: latest}]}`,
			want:      map[string]any{"/spec/template/spec/containers/0/image": "mirror.io/nginx:latest", "/spec/template/spec/containers/1/image": "mirror.io/tools/sidecar:v1latest"},
		},
		"image overrider ignores kinds without pod template": {
			template:  configMapYAML,
			overrider: `{imageOverrider: [{component: Registry, operator: replace, value: fake}]}`,
			want:      map[string]any{"/data/config.json": `{"a":1}`},
		},
		"command add creates the list, args remove drops listed": {
			template:  deploymentYAML,
			overrider: `{commandOverrider: [{containerName: nginx, operator: add, value: [nginx, -g]}], argsOverrider: [{containerName: nginx, operator: remove, value: [-a]}, {containerName: sidecar, operator: add, value: [--v=2]}]}`,
			want: map[string]any{
				"/spec/template/spec/containers/0/command": []any{"nginx", "-g"},
				"/spec/template/spec/containers/0/args":    []any{"-b"},
				"/spec/template/spec/containers/1/args":    []any{"--v=2"},
			},
		},
		"labels and annotations: add creates, replace and remove skip missing keys": {
			template: deploymentYAML,
			overrider: `{labelsOverrider: [{operator: replace, value: {app: web, missing: x}}, {operator: remove, value: {gone: ""}}],
			             annotationsOverrider: [{operator: add, value: {example.com/owner: team-a}}]}`,
			want:   map[string]any{"/metadata/labels/app": "web", "/metadata/annotations/example.com~1owner": "team-a"},
			absent: []string{"/metadata/labels/missing"},
		},
		"field overrider on YAML and JSON strings": {
			template: configMapYAML,
			overrider: `{fieldOverrider: [
			  {fieldPath: /data/config.yaml, yaml: [{subPath: /server/port, operator: replace, value: 8080}]},
			  {fieldPath: /data/config.json, json: [{subPath: /b, operator: add, value: "x"}]}]}`,
			want: map[string]any{"/data/config.yaml": "server:\n  port: 8080\n", "/data/config.json": `{"a":1,"b":"x"}`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var o policyv1alpha1.Overriders
			if err := yaml.UnmarshalStrict([]byte(tc.overrider), &o); err != nil {
				t.Fatal(err)
			}
			u := obj(t, tc.template)
			if err := applyOverriders(u, &o); err != nil {
				t.Fatal(err)
			}
			for ptr, want := range tc.want {
				if got := get(t, u, ptr); !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", ptr, got, want)
				}
			}
			for _, ptr := range tc.absent {
				if _, found, _ := getPointer(u.Object, ptr); found {
					t.Errorf("%s should be absent", ptr)
				}
			}
		})
	}
}

func TestApplyErrorNamesPolicy(t *testing.T) {
	cases := map[string]string{
		"replace of a missing path": `{plaintext: [{path: /spec/nothing/here, operator: replace, value: 1}]}`,
		"add without a value":       `{plaintext: [{path: /spec/x, operator: add}]}`,
		"predicate path missing":    `{imageOverrider: [{predicate: {path: /spec/template/spec/containers/9/image}, component: Tag, operator: replace, value: v}]}`,
		"field is not JSON":         `{fieldOverrider: [{fieldPath: /metadata/name, json: [{subPath: /a, operator: add, value: 1}]}]}`,
	}
	for name, overriders := range cases {
		t.Run(name, func(t *testing.T) {
			p := op(t, `{metadata: {name: bad, namespace: default}, spec: {overrideRules: [{overriders: `+overriders+`}]}}`)
			_, err := Apply(obj(t, deploymentYAML), cluster("member1", nil), nil, []policyv1alpha1.OverridePolicy{p})
			var oerr *Error
			if !errors.As(err, &oerr) {
				t.Fatalf("error %v is not an *Error", err)
			}
			if oerr.Kind != KindOverridePolicy || oerr.Namespace != "default" || oerr.Name != "bad" {
				t.Errorf("error names %s %s/%s", oerr.Kind, oerr.Namespace, oerr.Name)
			}
		})
	}
}

// An override may not change which object its Work creates in the member;
// writing the same value is no change.
func TestApplyRefusesIdentityChange(t *testing.T) {
	cases := map[string]struct {
		overriders string
		field      string // "" when allowed
	}{
		"namespace":         {`{plaintext: [{path: /metadata/namespace, operator: replace, value: kube-system}]}`, "metadata.namespace"},
		"namespace removed": {`{plaintext: [{path: /metadata/namespace, operator: remove}]}`, "metadata.namespace"},
		"name":              {`{plaintext: [{path: /metadata/name, operator: replace, value: other}]}`, "metadata.name"},
		"name not a string": {`{plaintext: [{path: /metadata/name, operator: replace, value: {a: 1}}]}`, "metadata.name"},
		"kind":              {`{plaintext: [{path: /kind, operator: replace, value: DaemonSet}]}`, "kind"},
		"apiVersion":        {`{plaintext: [{path: /apiVersion, operator: replace, value: apps/v1beta2}]}`, "apiVersion"},
		"same namespace":    {`{plaintext: [{path: /metadata/namespace, operator: replace, value: default}]}`, ""},
		"other metadata":    {`{labelsOverrider: [{operator: add, value: {tier: web}}]}`, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := op(t, `{metadata: {name: escape, namespace: default}, spec: {overrideRules: [{overriders: `+c.overriders+`}]}}`)
			_, err := Apply(obj(t, deploymentYAML), cluster("member1", nil), nil, []policyv1alpha1.OverridePolicy{p})
			if c.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var oerr *Error
			if !errors.As(err, &oerr) || oerr.Name != "escape" {
				t.Fatalf("error %v is not an *Error naming the policy", err)
			}
			if !strings.Contains(err.Error(), c.field+" may not be changed") {
				t.Errorf("error %v does not name %s", err, c.field)
			}
		})
	}

	t.Run("ClusterOverridePolicy", func(t *testing.T) {
		p := cop(t, `{metadata: {name: escape}, spec: {overrideRules: [{overriders: {plaintext: [{path: /metadata/namespace, operator: replace, value: kube-system}]}}]}}`)
		_, err := Apply(obj(t, deploymentYAML), cluster("member1", nil), []policyv1alpha1.ClusterOverridePolicy{p}, nil)
		var oerr *Error
		if !errors.As(err, &oerr) || oerr.Kind != KindClusterOverridePolicy || oerr.Name != "escape" {
			t.Fatalf("error %v is not an *Error naming the ClusterOverridePolicy", err)
		}
	})
}

func TestMaySelect(t *testing.T) {
	spec := &policyv1alpha1.OverrideSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "nginx"},
		{APIVersion: "v1", Kind: "ConfigMap", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}},
	}}
	cases := map[string]struct {
		policyNS                          string
		spec                              *policyv1alpha1.OverrideSpec
		apiVersion, kind, namespace, name string
		want                              bool
	}{
		"by name":                    {"default", spec, "apps/v1", "Deployment", "default", "nginx", true},
		"other name":                 {"default", spec, "apps/v1", "Deployment", "default", "redis", false},
		"label selector assumed":     {"default", spec, "v1", "ConfigMap", "default", "any", true},
		"other namespace":            {"default", spec, "apps/v1", "Deployment", "prod", "nginx", false},
		"cluster policy any ns":      {"", spec, "apps/v1", "Deployment", "prod", "nginx", true},
		"no selectors: own ns only":  {"default", &policyv1alpha1.OverrideSpec{}, "v1", "Secret", "prod", "s", false},
		"no selectors: cluster-wide": {"", &policyv1alpha1.OverrideSpec{}, "v1", "Secret", "prod", "s", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := MaySelect(tc.spec, tc.policyNS, tc.apiVersion, tc.kind, tc.namespace, tc.name); got != tc.want {
				t.Errorf("MaySelect = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAppliedJSONShape(t *testing.T) {
	raw, err := json.Marshal([]Applied{{PolicyName: "p", Overriders: policyv1alpha1.Overriders{}}})
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != `[{"policyName":"p","overriders":{}}]` {
		t.Errorf("got %s", raw)
	}
}
