package packed

// dictionary primes every deflate and inflate: DEFLATE may copy strings
// from it as if they had come earlier in the document. The objects the
// controller manager holds are mostly the same words: Kubernetes field
// names, the defaults the API server fills in, and the labels and
// annotations the control plane sets on every propagated object. With them
// in the dictionary only what is particular to an object (names, UIDs,
// times, images) costs bytes: a member's Deployment with its status
// deflates to about 160 bytes instead of 650.
//
// Deflated documents live in memory only and are read by the process that
// wrote them, so the dictionary may change between releases; it must never
// change while the process runs. The strings used most come last, where
// DEFLATE reaches them with the shortest distances.
const dictionary = `{"apiVersion":"v1","kind":"ConfigMap","data":{},"binaryData":{},"immutable":false}` +
	`{"apiVersion":"v1","kind":"Secret","type":"Opaque","stringData":{}}` +
	`{"apiVersion":"v1","kind":"ServiceAccount","automountServiceAccountToken":false}` +
	`{"apiVersion":"v1","kind":"PersistentVolumeClaim","spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},"storageClassName":"standard","volumeMode":"Filesystem"},"status":{"phase":"Bound"}}` +
	`{"apiVersion":"batch/v1","kind":"Job","spec":{"backoffLimit":6,"completionMode":"NonIndexed","completions":1,"manualSelector":false,"parallelism":1,"podReplacementPolicy":"TerminatingOrFailed","suspend":false,"template":{"spec":{"restartPolicy":"Never"}}},"status":{"active":1,"ready":0,"startTime":"","succeeded":1,"failed":0,"terminating":0,"uncountedTerminatedPods":{}}}` +
	`{"apiVersion":"v1","kind":"Service","spec":{"clusterIP":"","clusterIPs":[""],"internalTrafficPolicy":"Cluster","ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack","ports":[{"name":"http","port":80,"protocol":"TCP","targetPort":8080}],"selector":{"app":""},"sessionAffinity":"None","type":"ClusterIP"},"status":{"loadBalancer":{}}}` +
	`{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Retain","whenScaled":"Retain"},"podManagementPolicy":"OrderedReady","serviceName":"","updateStrategy":{"rollingUpdate":{"partition":0},"type":"RollingUpdate"},"volumeClaimTemplates":[]},` +
	`"status":{"availableReplicas":1,"collisionCount":0,"currentReplicas":1,"currentRevision":"","updateRevision":"","updatedReplicas":1}}` +
	`{"spec":{"template":{"spec":{"affinity":{},"nodeSelector":{},"serviceAccountName":"","serviceAccount":"","tolerations":[{"effect":"NoSchedule","key":"","operator":"Exists"}],` +
	`"volumes":[{"configMap":{"defaultMode":420,"name":""},"name":""},{"emptyDir":{},"name":""},{"persistentVolumeClaim":{"claimName":""},"name":""}],` +
	`"containers":[{"args":[],"command":[],"env":[{"name":"","value":""},{"name":"","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}}],` +
	`"livenessProbe":{"failureThreshold":3,"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"initialDelaySeconds":10,"periodSeconds":10,"successThreshold":1,"timeoutSeconds":1},` +
	`"readinessProbe":{"failureThreshold":3,"httpGet":{"path":"/","port":8080,"scheme":"HTTP"},"periodSeconds":10,"successThreshold":1,"timeoutSeconds":1},` +
	`"ports":[{"containerPort":8080,"name":"http","protocol":"TCP"}],"resources":{"limits":{"cpu":"500m","memory":"128Mi"},"requests":{"cpu":"100m","memory":"64Mi"}},` +
	`"volumeMounts":[{"mountPath":"","name":"","readOnly":true}]}]}}}}` +
	`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"deployment.kubernetes.io/revision":"1",` +
	`"propagationpolicy.karmada.io/name":"","propagationpolicy.karmada.io/namespace":"","clusterpropagationpolicy.karmada.io/name":"",` +
	`"resourcebinding.karmada.io/name":"","resourcebinding.karmada.io/namespace":"","clusterresourcebinding.karmada.io/name":"","resourcetemplate.karmada.io/generation":"1",` +
	`"resourcetemplate.karmada.io/managed-annotations":"clusterpropagationpolicy.karmada.io/name,propagationpolicy.karmada.io/name,propagationpolicy.karmada.io/namespace,resourcebinding.karmada.io/name,resourcebinding.karmada.io/namespace,resourcetemplate.karmada.io/generation,resourcetemplate.karmada.io/managed-annotations,resourcetemplate.karmada.io/managed-labels,resourcetemplate.karmada.io/uid,work.karmada.io/conflict-resolution,work.karmada.io/name,work.karmada.io/namespace",` +
	`"resourcetemplate.karmada.io/managed-labels":"app,clusterpropagationpolicy.karmada.io/permanent-id,karmada.io/managed,propagationpolicy.karmada.io/permanent-id,resourcebinding.karmada.io/permanent-id",` +
	`"resourcetemplate.karmada.io/uid":"","work.karmada.io/conflict-resolution":"abort","work.karmada.io/name":"","work.karmada.io/namespace":"karmada-es-member"},` +
	`"labels":{"app":"","app.kubernetes.io/name":"","app.kubernetes.io/instance":"","karmada.io/managed":"true","clusterpropagationpolicy.karmada.io/permanent-id":"","propagationpolicy.karmada.io/permanent-id":"","resourcebinding.karmada.io/permanent-id":""},` +
	`"creationTimestamp":"2026-01-01T00:00:00Z","generation":1,"name":"","namespace":"","uid":""},` +
	`"spec":{"progressDeadlineSeconds":600,"replicas":1,"revisionHistoryLimit":10,"selector":{"matchLabels":{"app":""}},"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"},"type":"RollingUpdate"},` +
	`"template":{"metadata":{"creationTimestamp":null,"labels":{"app":""}},"spec":{"containers":[{"image":"","imagePullPolicy":"IfNotPresent","name":"","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],` +
	`"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}},` +
	`"status":{"availableReplicas":1,"conditions":[{"lastTransitionTime":"2026-01-01T00:00:00Z","lastUpdateTime":"2026-01-01T00:00:00Z","message":"Deployment has minimum availability.","reason":"MinimumReplicasAvailable","status":"True","type":"Available"},` +
	`{"lastTransitionTime":"2026-01-01T00:00:00Z","lastUpdateTime":"2026-01-01T00:00:00Z","message":"ReplicaSet \"\" has successfully progressed.","reason":"NewReplicaSetAvailable","status":"True","type":"Progressing"}],` +
	`"observedGeneration":1,"readyReplicas":1,"replicas":1,"terminatingReplicas":0,"updatedReplicas":1}}`
