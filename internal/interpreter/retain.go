package interpreter

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// RetainReplicasLabel on a Deployment template makes the member's
// spec.replicas win over the template's (for example when a member HPA
// scales it). Karmada's well-known key; not in api/ yet.
const RetainReplicasLabel = "resourcetemplate.karmada.io/retain-replicas"

// The Retain rules keep the fields a member cluster owns: values allocated
// or defaulted by the member's API server, admission or controllers, which
// would otherwise be reset by every update (or make it fail, many are
// immutable). Generic metadata (resourceVersion, finalizers, owner
// references, foreign labels and annotations) is the execution controller's
// business (pipeline reference §5.2), not the interpreter's.

// retainDeployment keeps the member's spec.replicas when the template asks
// for it with RetainReplicasLabel=true.
func retainDeployment(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if desired.GetLabels()[RetainReplicasLabel] != "true" {
		return desired, nil
	}
	return desired, copyField(desired, observed, "spec", "replicas")
}

// retainPod keeps what the member filled in at creation: the node it was
// bound to, the service account, and the volumes and mounts added by the
// ServiceAccount admission plugin (a pod's spec is largely immutable).
func retainPod(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	for _, path := range [][]string{
		{"spec", "nodeName"},
		{"spec", "serviceAccountName"},
		{"spec", "volumes"},
	} {
		if err := copyField(desired, observed, path...); err != nil {
			return nil, err
		}
	}
	for _, list := range []string{"containers", "initContainers"} {
		if err := retainVolumeMounts(desired, observed, list); err != nil {
			return nil, err
		}
	}
	return desired, nil
}

// retainVolumeMounts copies volumeMounts between containers of the same name.
func retainVolumeMounts(desired, observed *unstructured.Unstructured, list string) error {
	want, found, err := unstructured.NestedSlice(desired.Object, "spec", list)
	if err != nil || !found {
		return wrapRead(err, "spec", list)
	}
	have, _, err := unstructured.NestedSlice(observed.Object, "spec", list)
	if err != nil {
		return wrapRead(err, "spec", list)
	}
	mounts := map[string]any{}
	for _, c := range have {
		if cm, ok := c.(map[string]any); ok {
			if name, ok := cm["name"].(string); ok {
				mounts[name] = cm["volumeMounts"]
			}
		}
	}
	for _, c := range want {
		cm, ok := c.(map[string]any)
		if !ok {
			continue
		}
		name, _ := cm["name"].(string)
		if m, ok := mounts[name]; ok && m != nil {
			cm["volumeMounts"] = deepCopyJSON(m)
		}
	}
	return unstructured.SetNestedSlice(desired.Object, want, "spec", list)
}

// retainService keeps the addresses and ports the member allocated:
// clusterIP(s), healthCheckNodePort, and the nodePort of every port that
// still exists (same name, protocol and port) and does not ask for a
// specific nodePort.
func retainService(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	for _, f := range []string{"clusterIP", "clusterIPs", "healthCheckNodePort"} {
		if err := copyField(desired, observed, "spec", f); err != nil {
			return nil, err
		}
	}
	svcType, _, _ := unstructured.NestedString(desired.Object, "spec", "type")
	if svcType != string(corev1.ServiceTypeNodePort) && svcType != string(corev1.ServiceTypeLoadBalancer) {
		return desired, nil
	}
	want, found, err := unstructured.NestedSlice(desired.Object, "spec", "ports")
	if err != nil || !found {
		return desired, wrapRead(err, "spec", "ports")
	}
	have, _, err := unstructured.NestedSlice(observed.Object, "spec", "ports")
	if err != nil {
		return nil, wrapRead(err, "spec", "ports")
	}
	allocated := map[string]any{}
	for _, p := range have {
		if pm, ok := p.(map[string]any); ok && pm["nodePort"] != nil {
			allocated[servicePortKey(pm)] = pm["nodePort"]
		}
	}
	for _, p := range want {
		pm, ok := p.(map[string]any)
		if !ok || pm["nodePort"] != nil {
			continue
		}
		if np, ok := allocated[servicePortKey(pm)]; ok {
			pm["nodePort"] = deepCopyJSON(np)
		}
	}
	return desired, unstructured.SetNestedSlice(desired.Object, want, "spec", "ports")
}

// servicePortKey identifies a service port; protocol defaults to TCP.
func servicePortKey(port map[string]any) string {
	protocol, _ := port["protocol"].(string)
	if protocol == "" {
		protocol = string(corev1.ProtocolTCP)
	}
	return fmt.Sprintf("%v/%s/%v", port["name"], protocol, port["port"])
}

// retainServiceAccount keeps the member's token secrets next to the
// template's (union by name, template's first).
func retainServiceAccount(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	want, _, err := unstructured.NestedSlice(desired.Object, "secrets")
	if err != nil {
		return nil, wrapRead(err, "secrets")
	}
	have, _, err := unstructured.NestedSlice(observed.Object, "secrets")
	if err != nil {
		return nil, wrapRead(err, "secrets")
	}
	seen := map[any]bool{}
	for _, s := range want {
		if sm, ok := s.(map[string]any); ok {
			seen[sm["name"]] = true
		}
	}
	for _, s := range have {
		sm, ok := s.(map[string]any)
		if !ok || seen[sm["name"]] {
			continue
		}
		seen[sm["name"]] = true
		want = append(want, deepCopyJSON(sm))
	}
	if len(want) == 0 {
		return desired, nil
	}
	return desired, unstructured.SetNestedSlice(desired.Object, want, "secrets")
}

// retainServiceAccountTokenSecret keeps the token the member's controller
// wrote into a service-account-token Secret.
func retainServiceAccountTokenSecret(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	secretType, _, _ := unstructured.NestedString(desired.Object, "type")
	if secretType != string(corev1.SecretTypeServiceAccountToken) {
		return desired, nil
	}
	return desired, copyField(desired, observed, "data")
}

// retainPersistentVolumeClaim keeps the bound volume and, when the template
// does not name one, the storage class the member's default-class admission
// chose (both are immutable once set).
func retainPersistentVolumeClaim(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if err := copyField(desired, observed, "spec", "volumeName"); err != nil {
		return nil, err
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(desired.Object, "spec", "storageClassName"); !found {
		if err := copyField(desired, observed, "spec", "storageClassName"); err != nil {
			return nil, err
		}
	}
	return desired, nil
}

// retainPersistentVolume keeps the claim the member bound the volume to.
func retainPersistentVolume(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return desired, copyField(desired, observed, "spec", "claimRef")
}

// retainJob keeps the selector the member's Job controller generated and
// the pod template labels that go with it (batch.kubernetes.io/controller-uid,
// job-name...). Like Karmada, the member's template labels replace the
// template's: a Job's pod template is immutable, so a label change could not
// be applied anyway, and keeping them avoids a Work that never applies.
func retainJob(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if err := copyField(desired, observed, "spec", "selector"); err != nil {
		return nil, err
	}
	return desired, copyField(desired, observed, "spec", "template", "metadata", "labels")
}

// copyField sets desired's field at path to a copy of observed's, when
// observed has a non-empty value there.
func copyField(desired, observed *unstructured.Unstructured, path ...string) error {
	v, found, err := unstructured.NestedFieldCopy(observed.Object, path...)
	if err != nil {
		return wrapRead(err, path...)
	}
	if !found || isEmpty(v) {
		return nil
	}
	if err := unstructured.SetNestedField(desired.Object, v, path...); err != nil {
		return fmt.Errorf("set %s: %w", dotted(path), err)
	}
	return nil
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case int64:
		return t == 0
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

func deepCopyJSON(v any) any { return runtime.DeepCopyJSONValue(v) }

func wrapRead(err error, path ...string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("read %s: %w", dotted(path), err)
}
