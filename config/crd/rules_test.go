package crd

import (
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestBoundsTheFixturesCannotReach covers what test/e2e/testdata/api cannot
// show through the API server: status fields (a create drops the status of
// a kind with a status subresource) and binding values that would set the
// shared e2e environment to work. Each case is an object and the error it
// must give ("" for none).
func TestBoundsTheFixturesCannotReach(t *testing.T) {
	vs := loadValidators(t)
	cases := map[string]struct {
		yaml string
		want string
	}{
		"cluster node counts at the int32 maximum": {
			yaml: clusterStatus(`nodeSummary: {totalNum: 2147483647, readyNum: 0}`),
		},
		"cluster node count above int32": {
			yaml: clusterStatus(`nodeSummary: {totalNum: 2147483648}`),
			want: "status.nodeSummary.totalNum: Invalid value: 2147483648",
		},
		"negative cluster node count": {
			yaml: clusterStatus(`nodeSummary: {readyNum: -1}`),
			want: "status.nodeSummary.readyNum: Invalid value: -1",
		},
		"allocatable modeling count above int32": {
			yaml: clusterStatus(`resourceSummary: {allocatableModelings: [{grade: 0, count: 3000000000}]}`),
			want: "status.resourceSummary.allocatableModelings[0].count: Invalid value: 3000000000",
		},
		"allocatable modeling grade above int32": {
			yaml: clusterStatus(`resourceSummary: {allocatableModelings: [{grade: 3000000000, count: 1}]}`),
			want: "status.resourceSummary.allocatableModelings[0].grade: Invalid value: 3000000000",
		},
		"huge resource summary quantities": {
			yaml: clusterStatus(`resourceSummary: {allocatable: {cpu: "99999999999999999999", memory: "1e300", pods: 9223372036854775807}}`),
		},
		"condition observed generation at 2^53-1": {
			yaml: clusterStatus(condition(9007199254740991)),
		},
		"cluster condition observed generation above 2^53-1": {
			yaml: clusterStatus(condition(9007199254740992)),
			want: "status.conditions[0].observedGeneration: Invalid value: 9007199254740992",
		},
		"binding condition observed generation above 2^53-1": {
			yaml: binding(`status: {` + condition(9007199254740992) + `}`),
			want: "status.conditions[0].observedGeneration: Invalid value: 9007199254740992",
		},
		"work condition observed generation above 2^53-1": {
			yaml: work(`status: {` + condition(9007199254740992) + `}`),
			want: "status.conditions[0].observedGeneration: Invalid value: 9007199254740992",
		},
		"scheduler observed generation above 2^53-1": {
			yaml: binding(`status: {schedulerObservedGeneration: 9007199254740992}`),
			want: "status.schedulerObservedGeneration: Invalid value: 9007199254740992",
		},
		"manifest ordinal at the int32 maximum": {
			yaml: work(`status: {manifestStatuses: [{identifier: {ordinal: 2147483647, version: v1, kind: ConfigMap, name: a}}]}`),
		},
		"negative manifest ordinal": {
			yaml: work(`status: {manifestStatuses: [{identifier: {ordinal: -1, version: v1, kind: ConfigMap, name: a}}]}`),
			want: "status.manifestStatuses[0].identifier.ordinal: Invalid value: -1",
		},
		"binding replicas at the int32 maximum": {
			yaml: binding(`spec: {resource: {apiVersion: apps/v1, kind: Deployment, name: a}, replicas: 2147483647,
  clusters: [{name: member1, replicas: 2147483647}],
  gracefulEvictionTasks: [{fromCluster: member2, producer: TaintManager, reason: TaintUntolerated, replicas: 2147483647, gracePeriodSeconds: 0}],
  schedulePriority: {priority: -2147483648}}`),
		},
		"negative eviction task replicas": {
			yaml: binding(`spec: {resource: {apiVersion: apps/v1, kind: Deployment, name: a},
  gracefulEvictionTasks: [{fromCluster: member2, producer: TaintManager, reason: TaintUntolerated, replicas: -1}]}`),
			want: "spec.gracefulEvictionTasks[0].replicas: Invalid value: -1",
		},
		"required-by replicas above int32": {
			yaml: binding(`spec: {resource: {apiVersion: apps/v1, kind: Deployment, name: a},
  requiredBy: [{name: b, clusters: [{name: member1, replicas: 2147483648}]}]}`),
			want: "spec.requiredBy[0].clusters[0].replicas: Invalid value: 2147483648",
		},
		// Copied from the pod template, which Kubernetes accepts in the
		// whole int64 range, with Kubernetes' pod toleration rules.
		"pod tolerations keep the int64 range": {
			yaml: binding(`spec: {resource: {apiVersion: apps/v1, kind: Deployment, name: a},
  replicaRequirements: {nodeClaim: {tolerations: [
    {key: a, operator: Exists, effect: NoExecute, tolerationSeconds: 9223372036854775807},
    {key: b, operator: Equal, value: "x y", effect: PreferNoSchedule, tolerationSeconds: -9223372036854775808}]}}}`),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj, err := decodeObject([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			errs, ok := vs.validate(obj)
			if !ok {
				t.Fatalf("%v is not a Lifeboat kind", obj["kind"])
			}
			text := errorText(errs)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("refused:\n%s", text)
			case tc.want != "" && !strings.Contains(text, tc.want):
				t.Errorf("want an error containing %q, got:\n%s", tc.want, text)
			}
		})
	}
}

func clusterStatus(status string) string {
	return "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: c}\nspec: {syncMode: Push}\nstatus: {" + status + "}\n"
}

func binding(rest string) string {
	if !strings.HasPrefix(rest, "spec:") {
		rest = "spec: {resource: {apiVersion: apps/v1, kind: Deployment, name: a}}\n" + rest
	}
	return "apiVersion: work.karmada.io/v1alpha2\nkind: ResourceBinding\nmetadata: {name: b}\n" + rest + "\n"
}

func work(rest string) string {
	return "apiVersion: work.karmada.io/v1alpha1\nkind: Work\nmetadata: {name: w}\nspec: {}\n" + rest + "\n"
}

func condition(observedGeneration int64) string {
	return fmt.Sprintf(`conditions: [{type: Ready, status: "True", reason: Probed, message: "", lastTransitionTime: "2024-01-01T00:00:00Z", observedGeneration: %d}]`, observedGeneration)
}

// TestEveryLabelSelectorIsValidated finds every label selector in every CRD
// (by its shape, as hack/crdschema does) and puts a selector with a bad
// operator and a bad value there: both must be refused at that place, so no
// selector is left out, wherever a new field puts one. (Both are schema
// checks, which the missing required fields around the selector do not
// stop; the CEL rules for keys are tested by the e2e fixtures, whose
// objects are otherwise valid.)
func TestEveryLabelSelectorIsValidated(t *testing.T) {
	crds, err := All()
	if err != nil {
		t.Fatal(err)
	}
	vs := loadValidators(t)
	found := 0
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			walkSchema(v.Schema.OpenAPIV3Schema, "", func(path string, s *apiextensionsv1.JSONSchemaProps) {
				if _, ok := s.Properties["matchLabels"]; !ok || s.Properties["matchExpressions"].Items == nil {
					return
				}
				found++
				obj := map[string]any{
					"apiVersion": crd.Spec.Group + "/" + v.Name,
					"kind":       crd.Spec.Names.Kind,
					"metadata":   map[string]any{"name": "x"},
				}
				at := setAt(obj, strings.Split(strings.TrimPrefix(path, "."), "."), map[string]any{
					"matchLabels": map[string]any{"app": "bad value"},
					"matchExpressions": []any{
						map[string]any{"key": "a", "operator": "Gt", "values": []any{"1"}},
					},
				})
				errs, _ := vs.validate(obj)
				for _, want := range []string{
					at + ".matchExpressions[0].operator: Unsupported value",
					at + ".matchLabels.app: Invalid value",
				} {
					if !hasError(errs, want) {
						t.Errorf("%s %s: no error %q:\n%s", crd.Name, path, want, errorText(errs))
					}
				}
			})
		}
	}
	if found < 20 {
		t.Fatalf("found %d label selectors; want the 20 or more of Lifeboat's CRDs", found)
	}
}

// setAt puts value at a schema path such as spec.rules[].target.selector in
// obj, creating maps and one-element lists on the way, and returns the
// field path of the value (spec.rules[0].target.selector).
func setAt(obj map[string]any, segments []string, value any) string {
	cur := obj
	var out []string
	for i, seg := range segments {
		name, isList := strings.CutSuffix(seg, "[]")
		last := i == len(segments)-1
		switch {
		case last:
			cur[name] = value
			out = append(out, name)
		case isList:
			item := map[string]any{}
			cur[name] = []any{item}
			cur = item
			out = append(out, name+"[0]")
		default:
			next, ok := cur[name].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[name] = next
			}
			cur = next
			out = append(out, name)
		}
	}
	return strings.Join(out, ".")
}

func hasError(errs field.ErrorList, prefix string) bool {
	for _, e := range errs {
		if strings.HasPrefix(e.Error(), prefix) {
			return true
		}
	}
	return false
}
