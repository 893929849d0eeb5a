package bench

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// LabelGroup marks the bench's templates; policies select them by it.
const LabelGroup = "bench.lifeboat.dev/group"

// LabelRun marks the bench's namespaces.
const LabelRun = "bench.lifeboat.dev/run"

// The manifests are plain Karmada and Kubernetes YAML, as a user would
// write them, so the same scenario runs on any Karmada-compatible control
// plane.

// deploymentYAML is a Deployment of nginx with replicas, labelled app: name
// and LabelGroup: group.
func deploymentYAML(name, group string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  labels:
    app: %[1]s
    %[2]s: %[3]s
spec:
  replicas: %[4]d
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      containers:
        - name: nginx
          image: nginx
`, name, LabelGroup, group, replicas)
}

// spreadPolicyYAML propagates the Deployments of group to one of members
// (the scheduler picks).
func spreadPolicyYAML(name, group string, members []string) string {
	return fmt.Sprintf(`apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: %s
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      labelSelector:
        matchLabels:
          %s: %s
  placement:
    clusterAffinity:
      clusterNames: [%s]
    spreadConstraints:
      - spreadByField: cluster
        maxGroups: 1
        minGroups: 1
`, name, LabelGroup, group, strings.Join(members, ", "))
}

// appFailoverPolicyYAML is the seed's nginx policy (application failover,
// purgeMode Never) with tolerationSeconds.
func appFailoverPolicyYAML(name, deployment string, members []string, toleration int32) string {
	return fmt.Sprintf(`apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: %s
spec:
  failover:
    application:
      decisionConditions:
        tolerationSeconds: %d
      purgeMode: Never
  propagateDeps: true
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: %s
  placement:
    clusterAffinity:
      clusterNames: [%s]
    spreadConstraints:
      - spreadByField: cluster
        maxGroups: 1
        minGroups: 1
`, name, toleration, deployment, strings.Join(members, ", "))
}

// pinnedPolicyYAML places the Deployments of group on primary, and on one
// of backups when primary cannot take them (ordered clusterAffinities,
// maxGroups 1), without cluster tolerations.
func pinnedPolicyYAML(name, group, primary string, backups []string) string {
	return fmt.Sprintf(`apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: %s
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      labelSelector:
        matchLabels:
          %s: %s
  placement:
    clusterAffinities:
      - affinityName: primary
        clusterNames: [%s]
      - affinityName: backup
        clusterNames: [%s]
    spreadConstraints:
      - spreadByField: cluster
        maxGroups: 1
        minGroups: 1
`, name, LabelGroup, group, primary, strings.Join(backups, ", "))
}

// failbackPolicyYAML is pinnedPolicyYAML with cluster failover and
// automatic failback after window (a Lifeboat extension).
func failbackPolicyYAML(name, group, primary string, backups []string, window time.Duration) string {
	return pinnedPolicyYAML(name, group, primary, backups) + fmt.Sprintf(`  failover:
    cluster: {}
    failback:
      stabilizationSeconds: %d
`, int(window.Seconds()))
}

// decodeDeployment and decodePolicy turn the manifests into objects.
func decodeDeployment(text, namespace string) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict([]byte(text), &d); err != nil {
		return nil, fmt.Errorf("decoding Deployment manifest: %w", err)
	}
	d.Namespace = namespace
	return &d, nil
}

func decodePolicy(text, namespace string) (*policyv1alpha1.PropagationPolicy, error) {
	var p policyv1alpha1.PropagationPolicy
	if err := yaml.UnmarshalStrict([]byte(text), &p); err != nil {
		return nil, fmt.Errorf("decoding PropagationPolicy manifest: %w", err)
	}
	p.Namespace = namespace
	return &p, nil
}

// others returns members without m.
func others(members []string, m string) []string {
	var out []string
	for _, x := range members {
		if x != m {
			out = append(out, x)
		}
	}
	return out
}
