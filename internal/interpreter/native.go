package interpreter

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kinds with native rules.
var (
	deploymentGVK  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	replicaSetGVK  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}
	statefulSetGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	daemonSetGVK   = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}
	jobGVK         = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	cronJobGVK     = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}
	podGVK         = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	serviceGVK     = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	serviceAcctGVK = schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}
	secretGVK      = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	pvcGVK         = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}
	pvGVK          = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolume"}
	ingressGVK     = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}
	pdbGVK         = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}
	hpaGVK         = schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
)

// Native returns the built-in rules for Kubernetes' own kinds (Karmada's
// native interpreter, pipeline reference §7.1), one row per kind. Kinds not
// listed get the Chain defaults, notably the whole .status reflected and
// Healthy once they exist.
func Native() RuleSet {
	return RuleSet{
		deploymentGVK: {
			Replicas:        podTemplateReplicas,
			ReviseReplica:   reviseSpecReplicas,
			Retain:          retainDeployment,
			ReflectStatus:   reflectDeployment,
			Health:          deploymentHealth,
			AggregateStatus: aggregateDeployment,
			Dependencies:    podSpecDependencies,
		},
		replicaSetGVK: {
			Replicas:        podTemplateReplicas,
			ReviseReplica:   reviseSpecReplicas,
			ReflectStatus:   reflectReplicaSet,
			Health:          replicaSetHealth,
			AggregateStatus: aggregateReplicaSet,
			Dependencies:    podSpecDependencies,
		},
		statefulSetGVK: {
			Replicas:        podTemplateReplicas,
			ReviseReplica:   reviseSpecReplicas,
			ReflectStatus:   reflectStatefulSet,
			Health:          statefulSetHealth,
			AggregateStatus: aggregateStatefulSet,
			Dependencies:    podSpecDependencies,
		},
		daemonSetGVK: {
			ReflectStatus:   reflectDaemonSet,
			Health:          daemonSetHealth,
			AggregateStatus: aggregateDaemonSet,
			Dependencies:    podSpecDependencies,
		},
		jobGVK: {
			Replicas:        jobReplicas,
			ReviseReplica:   reviseJobParallelism,
			Retain:          retainJob,
			ReflectStatus:   reflectJob,
			Health:          jobHealth,
			AggregateStatus: aggregateJob,
			Dependencies:    podSpecDependencies,
		},
		cronJobGVK: {
			AggregateStatus: aggregateCronJob,
			Dependencies:    podSpecDependencies,
		},
		podGVK: {
			Replicas:        podReplicas,
			Retain:          retainPod,
			Health:          podHealth,
			AggregateStatus: aggregatePod,
			Dependencies:    podSpecDependencies,
		},
		serviceGVK: {
			Retain:          retainService,
			ReflectStatus:   reflectService,
			Health:          serviceHealth,
			AggregateStatus: aggregateService,
		},
		serviceAcctGVK: {Retain: retainServiceAccount},
		secretGVK:      {Retain: retainServiceAccountTokenSecret},
		pvcGVK: {
			Retain:          retainPersistentVolumeClaim,
			Health:          persistentVolumeClaimHealth,
			AggregateStatus: aggregatePersistentVolumeClaim,
		},
		pvGVK: {Retain: retainPersistentVolume},
		ingressGVK: {
			ReflectStatus:   reflectIngress,
			Health:          ingressHealth,
			AggregateStatus: aggregateIngress,
			Dependencies:    ingressDependencies,
		},
		pdbGVK: {
			ReflectStatus:   reflectPodDisruptionBudget,
			Health:          podDisruptionBudgetHealth,
			AggregateStatus: aggregatePodDisruptionBudget,
		},
		hpaGVK: {
			ReflectStatus:   reflectHorizontalPodAutoscaler,
			AggregateStatus: aggregateHorizontalPodAutoscaler,
		},
	}
}

// fromUnstructured decodes obj's content (or a part of it) into a typed
// value. Decoding copies, so the typed value never aliases the input.
func fromUnstructured(content map[string]any, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, into); err != nil {
		return fmt.Errorf("decode into %T: %w", into, err)
	}
	return nil
}

// decode decodes a whole object into a typed value.
func decode(obj *unstructured.Unstructured, into any) error {
	return fromUnstructured(obj.Object, into)
}

// setStatus encodes a typed status and stores it as obj's .status, so the
// stored form is exactly what the API server would serialize (omitempty
// fields absent), and a later comparison with the stored template does not
// see a difference that is only a zero written explicitly. Status fields
// unknown to the typed API (a newer Kubernetes) are dropped from the
// template; only Lifeboat writes a template's status, so nothing is lost.
func setStatus[T any](obj *unstructured.Unstructured, status T) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return fmt.Errorf("encode %T: %w", status, err)
	}
	obj.Object["status"] = content
	return nil
}
