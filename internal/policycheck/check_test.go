package policycheck

import (
	"fmt"
	"strings"
	"testing"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// want is one expected problem: its reason, its field, and a part of its
// message.
type want struct {
	reason, field, message string
}

// checkCase is a policy (as a function of the checker, so that one table
// holds all four kinds) and the problems it must have; none means it must
// be accepted.
type checkCase struct {
	check func(*Checker) []Problem
	want  []want
}

func runChecks(t *testing.T, cases map[string]checkCase) {
	t.Helper()
	c := newChecker(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.check(c)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tc.want), describeProblems(got))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Reason != w.reason || g.Field != w.field || !strings.Contains(g.Message, w.message) {
					t.Errorf("problem %d = %s (%s), want %s: ...%s... (%s)", i, g, g.Reason, w.field, w.message, w.reason)
				}
			}
		})
	}
}

func describeProblems(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  %s (%s)\n", p, p.Reason)
	}
	return b.String()
}

// everyPropagationField is a policy that sets every field of a
// PropagationSpec, each to something that works.
const everyPropagationField = `
metadata: {name: all, namespace: apps}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: nginx}
  - {apiVersion: apps/v1, kind: StatefulSet, namespace: apps, labelSelector: {matchLabels: {app: db}}}
  - {apiVersion: v1, kind: ConfigMap}
  - {apiVersion: flink.apache.org/v1beta1, kind: FlinkDeployment}
  association: true
  propagateDeps: true
  placement:
    clusterAffinities:
    - affinityName: primary
      labelSelector: {matchLabels: {tier: gold}}
      fieldSelector: {matchExpressions: [{key: region, operator: In, values: [eu]}]}
      clusterNames: [member1, member2]
      exclude: [member3]
    clusterTolerations: [{key: cluster.karmada.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]
    spreadConstraints: [{spreadByField: cluster, maxGroups: 1, minGroups: 1}]
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList: [{targetCluster: {clusterNames: [member1]}, weight: 2}]
        dynamicWeight: AvailableReplicas
  priority: 10
  preemption: Never
  dependentOverrides: [mirror]
  schedulerName: default-scheduler
  failover:
    application:
      decisionConditions: {tolerationSeconds: 30}
      purgeMode: Immediately
      statePreservation:
        rules:
        - {aliasLabelName: application.karmada.io/failover-jobid, jsonPath: "{ .jobStatus.jobId }"}
        - {aliasLabelName: cztest-replicas, jsonPath: ".updatedReplicas"}
    cluster:
      purgeMode: Directly
      statePreservation:
        rules: [{aliasLabelName: application.karmada.io/cluster-failover-jobid, jsonPath: "{.jobStatus.jobId}"}]
  conflictResolution: Overwrite
  activationPreference: Lazy
  suspension: {dispatching: false, dispatchingOnClusters: {clusterNames: [member2]}}
  preserveResourcesOnDeletion: true
  schedulePriority: {priorityClassSource: KubePriorityClass, priorityClassName: high}
`

func TestPropagationPolicyChecks(t *testing.T) {
	runChecks(t, map[string]checkCase{
		"a policy using every field is accepted": {
			check: func(c *Checker) []Problem { return c.PropagationPolicy(pp(t, everyPropagationField)) },
		},
		"a misspelt kind": {
			check: func(c *Checker) []Problem {
				return c.PropagationPolicy(pp(t, `{metadata: {name: p, namespace: apps}, spec: {resourceSelectors: [
					{apiVersion: v1, kind: ConfigMap}, {apiVersion: apps/v1, kind: Deploymnt}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonUnknownKind, "spec.resourceSelectors[1]", `no kind "Deploymnt" in apps/v1`}},
		},
		"a kind in a version that is not served names the served one": {
			check: func(c *Checker) []Problem {
				return c.PropagationPolicy(pp(t, `{metadata: {name: p, namespace: apps}, spec: {resourceSelectors: [{apiVersion: apps/v1beta1, kind: Deployment}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonUnknownKind, "spec.resourceSelectors[0]", `no kind "Deployment" in apps/v1beta1 (it is served in apps/v1)`}},
		},
		"a group that is not installed": {
			check: func(c *Checker) []Problem {
				return c.PropagationPolicy(pp(t, `{metadata: {name: p, namespace: apps}, spec: {resourceSelectors: [{apiVersion: example.io/v1, kind: Widget}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonUnknownKind, "spec.resourceSelectors[0]", `no kind "Widget" in example.io/v1`}},
		},
		"an apiVersion that is not a group/version": {
			check: func(c *Checker) []Problem {
				return c.PropagationPolicy(pp(t, `{metadata: {name: p, namespace: apps}, spec: {resourceSelectors: [{apiVersion: apps/v1/x, kind: Deployment}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonUnknownKind, "spec.resourceSelectors[0].apiVersion", `"apps/v1/x" is not a group/version`}},
		},
		"a cluster-scoped kind": {
			check: func(c *Checker) []Problem {
				return c.PropagationPolicy(pp(t, `{metadata: {name: p, namespace: apps}, spec: {resourceSelectors: [{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonScopeMismatch, "spec.resourceSelectors[0]", "ClusterRole of rbac.authorization.k8s.io/v1 is cluster-scoped, and a PropagationPolicy only selects namespaced objects; use a ClusterPropagationPolicy"}},
		},
		"another namespace": {
			check: func(c *Checker) []Problem {
				return c.PropagationPolicy(pp(t, `{metadata: {name: p, namespace: apps}, spec: {resourceSelectors: [{apiVersion: v1, kind: ConfigMap, namespace: web}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonScopeMismatch, "spec.resourceSelectors[0].namespace", `namespace "web" is not the policy's own ("apps")`}},
		},
		"its own namespace, written out": {
			check: func(c *Checker) []Problem {
				return c.PropagationPolicy(pp(t, `{metadata: {name: p, namespace: apps}, spec: {resourceSelectors: [{apiVersion: v1, kind: ConfigMap, namespace: apps}]}}`))
			},
		},
		"a kind that is never propagated": {
			check: func(c *Checker) []Problem {
				return c.PropagationPolicy(pp(t, `{metadata: {name: p, namespace: apps}, spec: {resourceSelectors: [{apiVersion: v1, kind: Event}, {apiVersion: policy.karmada.io/v1alpha1, kind: PropagationPolicy}]}}`))
			},
			want: []want{
				{policyv1alpha1.PolicyReasonNotPropagated, "spec.resourceSelectors[0]", "kind Event of v1 is never propagated"},
				{policyv1alpha1.PolicyReasonNotPropagated, "spec.resourceSelectors[1]", "kind PropagationPolicy of policy.karmada.io/v1alpha1 is never propagated"},
			},
		},
		"a policy in a namespace that is never propagated": {
			check: func(c *Checker) []Problem {
				return c.PropagationPolicy(pp(t, `{metadata: {name: p, namespace: kube-system}, spec: {resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonNotPropagated, "metadata.namespace", "objects in namespace kube-system are never propagated"}},
		},
		"an application statePreservation jsonPath that does not parse": {
			check: func(c *Checker) []Problem {
				return c.PropagationPolicy(pp(t, `{metadata: {name: p, namespace: apps}, spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}],
					failover: {application: {decisionConditions: {}, statePreservation: {rules: [
					  {aliasLabelName: ok, jsonPath: "{.jobStatus.jobId}"}, {aliasLabelName: bad, jsonPath: "{.jobStatus.jobId"}]}}}}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidJSONPath, "spec.failover.application.statePreservation.rules[1].jsonPath", `invalid JSONPath "{.jobStatus.jobId": unclosed action`}},
		},
		"a cluster statePreservation jsonPath that does not parse": {
			check: func(c *Checker) []Problem {
				return c.PropagationPolicy(pp(t, `{metadata: {name: p, namespace: apps}, spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}],
					failover: {cluster: {statePreservation: {rules: [{aliasLabelName: id, jsonPath: "{.items[x]}"}]}}}}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidJSONPath, "spec.failover.cluster.statePreservation.rules[0].jsonPath", "invalid array index x"}},
		},
		"a jsonPath that parses but names a field the status may lack is left to failover time": {
			check: func(c *Checker) []Problem {
				return c.PropagationPolicy(pp(t, `{metadata: {name: p, namespace: apps}, spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}],
					failover: {application: {decisionConditions: {}, statePreservation: {rules: [{aliasLabelName: id, jsonPath: "{ .jobStatus.jobID }"}]}}}}}`))
			},
		},
		"every problem, in field order": {
			check: func(c *Checker) []Problem {
				return c.PropagationPolicy(pp(t, `{metadata: {name: p, namespace: apps}, spec: {
					resourceSelectors: [{apiVersion: apps/v1, kind: Deploymnt}, {apiVersion: v1, kind: Namespace}],
					failover: {application: {decisionConditions: {}, statePreservation: {rules: [{aliasLabelName: id, jsonPath: "{.a"}]}},
					           cluster: {statePreservation: {rules: [{aliasLabelName: id, jsonPath: "{.b"}]}}}}}`))
			},
			want: []want{
				{policyv1alpha1.PolicyReasonUnknownKind, "spec.resourceSelectors[0]", "Deploymnt"},
				{policyv1alpha1.PolicyReasonScopeMismatch, "spec.resourceSelectors[1]", "Namespace of v1 is cluster-scoped"},
				{policyv1alpha1.PolicyReasonInvalidJSONPath, "spec.failover.application.statePreservation.rules[0].jsonPath", `"{.a"`},
				{policyv1alpha1.PolicyReasonInvalidJSONPath, "spec.failover.cluster.statePreservation.rules[0].jsonPath", `"{.b"`},
			},
		},
	})
}

func TestClusterPropagationPolicyChecks(t *testing.T) {
	runChecks(t, map[string]checkCase{
		"a policy using every field is accepted": {
			check: func(c *Checker) []Problem {
				p := cpp(t, everyPropagationField)
				p.Namespace = ""
				p.Spec.ResourceSelectors = append(p.Spec.ResourceSelectors,
					policyv1alpha1.ResourceSelector{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader"},
					policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Namespace: "web"})
				return c.ClusterPropagationPolicy(p)
			},
		},
		"a namespace on a cluster-scoped kind": {
			check: func(c *Checker) []Problem {
				return c.ClusterPropagationPolicy(cpp(t, `{metadata: {name: p}, spec: {resourceSelectors: [{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, namespace: apps}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonScopeMismatch, "spec.resourceSelectors[0].namespace", `ClusterRole of rbac.authorization.k8s.io/v1 is cluster-scoped, so a selector with namespace "apps" never matches`}},
		},
		"a namespace that is never propagated": {
			check: func(c *Checker) []Problem {
				return c.ClusterPropagationPolicy(cpp(t, `{metadata: {name: p}, spec: {resourceSelectors: [{apiVersion: v1, kind: ConfigMap, namespace: karmada-es-member1}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonNotPropagated, "spec.resourceSelectors[0].namespace", "objects in namespace karmada-es-member1 are never propagated"}},
		},
		"a kind installed nowhere": {
			check: func(c *Checker) []Problem {
				return c.ClusterPropagationPolicy(cpp(t, `{metadata: {name: p}, spec: {resourceSelectors: [{apiVersion: example.io/v1, kind: Widget}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonUnknownKind, "spec.resourceSelectors[0]", `no kind "Widget" in example.io/v1`}},
		},
	})
}

// everyOverrider is an OverridePolicy that uses every overrider, on
// built-in and custom kinds, each with a value that fits.
const everyOverrider = `
metadata: {name: all, namespace: apps}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: nginx}
  - {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {app: nginx}}}
  - {apiVersion: flink.apache.org/v1beta1, kind: FlinkDeployment}
  overrideRules:
  - targetCluster: {clusterNames: [member1]}
    overriders:
      plaintext:
      - {path: /spec/replicas, operator: replace, value: 3}
      - {path: /spec/replicas, operator: remove}
      - {path: /spec/strategy/rollingUpdate/maxSurge, operator: add, value: "25%"}
      - {path: /spec/strategy/rollingUpdate/maxUnavailable, operator: add, value: 1}
      - {path: /spec/template/spec/containers/0/resources/limits/cpu, operator: add, value: 500m}
      - {path: /spec/template/spec/containers/-, operator: add, value: {name: sidecar, image: busybox, ports: [{containerPort: 80}]}}
      - {path: /metadata/annotations/example.com~1owner, operator: add, value: team-a}
      - {path: /data/config.json, operator: replace, value: "{}"}
      - {path: /spec/job/parallelism, operator: replace, value: "anything: the custom kind's types are unknown"}
      - {path: /spec/replica, operator: add, value: "a field client-go does not know is left alone"}
      imageOverrider:
      - {component: Registry, operator: replace, value: mirror.io}
      - {predicate: {path: /spec/template/spec/initContainers/0/image}, component: Tag, operator: remove}
      commandOverrider: [{containerName: nginx, operator: add, value: [nginx, -g]}]
      argsOverrider: [{containerName: nginx, operator: remove, value: [-a]}]
      labelsOverrider: [{operator: add, value: {tier: web}}]
      annotationsOverrider: [{operator: replace, value: {note: x}}]
      fieldOverrider:
      - {fieldPath: /data/config.yaml, yaml: [{subPath: /server/port, operator: replace, value: 8080}]}
      - {fieldPath: /data/config.json, json: [{subPath: /a, operator: add, value: 1}]}
`

// deploymentOP is an OverridePolicy on Deployments with one overriders
// block, written as YAML.
func deploymentOP(t *testing.T, overriders string) *policyv1alpha1.OverridePolicy {
	return op(t, `{metadata: {name: o, namespace: apps}, spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}],
		overrideRules: [{overriders: `+overriders+`}]}}`)
}

func TestOverridePolicyChecks(t *testing.T) {
	const plaintext0 = "spec.overrideRules[0].overriders.plaintext[0]"
	runChecks(t, map[string]checkCase{
		"a policy using every overrider is accepted": {
			check: func(c *Checker) []Problem { return c.OverridePolicy(op(t, everyOverrider)) },
		},
		"replicas that are not an integer": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{plaintext: [{path: /spec/replicas, operator: replace, value: three}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, plaintext0 + ".value", `"three" does not fit /spec/replicas of apps/v1 Deployment: want a 32-bit integer`}},
		},
		"replicas written as a string of digits": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{plaintext: [{path: /spec/replicas, operator: add, value: "3"}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, plaintext0 + ".value", "want a 32-bit integer"}},
		},
		"replicas with a fraction": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{plaintext: [{path: /spec/replicas, operator: replace, value: 2.5}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, plaintext0 + ".value", "want a 32-bit integer"}},
		},
		"replicas past int32": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{plaintext: [{path: /spec/replicas, operator: replace, value: 2147483648}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, plaintext0 + ".value", "2147483648 does not fit /spec/replicas"}},
		},
		"replicas at the int32 limit": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{plaintext: [{path: /spec/replicas, operator: replace, value: 2147483647}]}`))
			},
		},
		"a label value that is not a string": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{plaintext: [{path: /metadata/labels/version, operator: add, value: 2}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, plaintext0 + ".value", "want a string"}},
		},
		"a field of the inlined type meta": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{plaintext: [{path: /apiVersion, operator: replace, value: 1}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, plaintext0 + ".value", "1 does not fit /apiVersion of apps/v1 Deployment: want a string"}},
		},
		"a container whose ports are not a list": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{plaintext: [{path: /spec/template/spec/containers/-, operator: add, value: {name: s, ports: 80}}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, plaintext0 + ".value", "ports"}},
		},
		"a quantity that does not parse": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{plaintext: [{path: /spec/template/spec/containers/0/resources/limits/cpu, operator: add, value: lots}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, plaintext0 + ".value", "quantities must match"}},
		},
		"a path that is not a JSON pointer": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{plaintext: [{path: spec/replicas, operator: replace, value: 3}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, plaintext0, `path "spec/replicas" is not a JSON pointer`}},
		},
		"add without a value": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{plaintext: [{path: /spec/paused, operator: add}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, plaintext0, "value is required"}},
		},
		"a null value is no value": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{plaintext: [{path: /spec/paused, operator: add, value: null}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, plaintext0, "value is required"}},
		},
		"an image predicate on a field that is not a string": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{imageOverrider: [{predicate: {path: /spec/replicas}, component: Tag, operator: replace, value: v2}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, "spec.overrideRules[0].overriders.imageOverrider[0].predicate.path", "/spec/replicas of apps/v1 Deployment is not a string"}},
		},
		"an image predicate that is not a JSON pointer": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{imageOverrider: [{predicate: {path: "spec/template/spec/containers/0/image"}, component: Tag, operator: replace, value: v2}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, "spec.overrideRules[0].overriders.imageOverrider[0]", "is not a JSON pointer"}},
		},
		"an image replaced with nothing": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{imageOverrider: [{component: Registry, operator: add}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, "spec.overrideRules[0].overriders.imageOverrider[0]", "value is required"}},
		},
		"a field overrider on a field that is not a string": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{fieldOverrider: [{fieldPath: /spec/replicas, json: [{subPath: /a, operator: remove}]}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, "spec.overrideRules[0].overriders.fieldOverrider[0].fieldPath", "/spec/replicas of apps/v1 Deployment is not a string"}},
		},
		"a field overrider sub-path that is not a JSON pointer": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(deploymentOP(t, `{fieldOverrider: [{fieldPath: /metadata/annotations/conf, yaml: [{subPath: a/b, operator: remove}]}]}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, "spec.overrideRules[0].overriders.fieldOverrider[0]", `path "a/b" is not a JSON pointer`}},
		},
		"every selected built-in kind is checked": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(op(t, `{metadata: {name: o, namespace: apps}, spec: {resourceSelectors: [
					{apiVersion: apps/v1, kind: Deployment}, {apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler}, {apiVersion: batch/v1, kind: Job}],
					overrideRules: [{overriders: {plaintext: [{path: /spec/minReplicas, operator: replace, value: "1"}, {path: /spec/parallelism, operator: replace, value: x}]}}]}}`))
			},
			want: []want{
				{policyv1alpha1.PolicyReasonInvalidOverride, plaintext0 + ".value", "/spec/minReplicas of autoscaling/v2 HorizontalPodAutoscaler: want a 32-bit integer"},
				{policyv1alpha1.PolicyReasonInvalidOverride, "spec.overrideRules[0].overriders.plaintext[1].value", "/spec/parallelism of batch/v1 Job: want a 32-bit integer"},
			},
		},
		"the deprecated overriders block is checked when there are no rules": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(op(t, `{metadata: {name: o, namespace: apps}, spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}],
					overriders: {plaintext: [{path: /spec/replicas, operator: replace, value: many}]}}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, "spec.overriders.plaintext[0].value", "want a 32-bit integer"}},
		},
		"a policy without selectors gets no type checks": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(op(t, `{metadata: {name: o, namespace: apps}, spec: {overrideRules: [{overriders: {plaintext: [{path: /spec/replicas, operator: replace, value: three}]}}]}}`))
			},
		},
		"a policy without selectors still gets the pointer checks": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(op(t, `{metadata: {name: o, namespace: apps}, spec: {overrideRules: [{overriders: {plaintext: [{path: spec/replicas, operator: replace, value: 3}]}}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, plaintext0, "is not a JSON pointer"}},
		},
		"a cluster-scoped kind": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(op(t, `{metadata: {name: o, namespace: apps}, spec: {resourceSelectors: [{apiVersion: v1, kind: Namespace}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonScopeMismatch, "spec.resourceSelectors[0]", "an OverridePolicy only selects namespaced objects; use a ClusterOverridePolicy"}},
		},
		"another namespace": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(op(t, `{metadata: {name: o, namespace: apps}, spec: {resourceSelectors: [{apiVersion: v1, kind: ConfigMap, namespace: web}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonScopeMismatch, "spec.resourceSelectors[0].namespace", `namespace "web" is not the policy's own ("apps")`}},
		},
		"an unknown kind": {
			check: func(c *Checker) []Problem {
				return c.OverridePolicy(op(t, `{metadata: {name: o, namespace: apps}, spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deploymnt}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonUnknownKind, "spec.resourceSelectors[0]", `no kind "Deploymnt" in apps/v1`}},
		},
	})
}

func TestClusterOverridePolicyChecks(t *testing.T) {
	runChecks(t, map[string]checkCase{
		"every overrider, a cluster-scoped kind and another namespace are accepted": {
			check: func(c *Checker) []Problem {
				p := cop(t, everyOverrider)
				p.Namespace = ""
				p.Spec.ResourceSelectors = append(p.Spec.ResourceSelectors,
					policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Namespace", Name: "apps"},
					policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Service", Namespace: "web"})
				return c.ClusterOverridePolicy(p)
			},
		},
		"a namespace on a cluster-scoped kind": {
			check: func(c *Checker) []Problem {
				return c.ClusterOverridePolicy(cop(t, `{metadata: {name: o}, spec: {resourceSelectors: [{apiVersion: v1, kind: Namespace, namespace: apps}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonScopeMismatch, "spec.resourceSelectors[0].namespace", "cluster-scoped"}},
		},
		"replicas that are not an integer": {
			check: func(c *Checker) []Problem {
				return c.ClusterOverridePolicy(cop(t, `{metadata: {name: o}, spec: {resourceSelectors: [{apiVersion: apps/v1, kind: StatefulSet}],
					overrideRules: [{overriders: {plaintext: [{path: /spec/replicas, operator: replace, value: true}]}}]}}`))
			},
			want: []want{{policyv1alpha1.PolicyReasonInvalidOverride, "spec.overrideRules[0].overriders.plaintext[0].value", "true does not fit /spec/replicas of apps/v1 StatefulSet: want a 32-bit integer"}},
		},
	})
}
