package v1alpha2

// MaxFailoverHistoryItems bounds status.failoverHistory (the schema's
// maxItems); writers drop the oldest entries first.
const MaxFailoverHistoryItems = 32

// Condition types of a binding.
const (
	// Scheduled says whether the scheduler placed the binding.
	Scheduled = "Scheduled"
	// FullyApplied says whether every scheduled cluster applied the
	// resource.
	FullyApplied = "FullyApplied"
	// PlacementHealthy (Lifeboat) says whether every cluster of
	// spec.clusters reports the resource Healthy; its message names them.
	// Its lastTransitionTime is when this placement became Healthy (a new
	// placement starts a new transition): the failover history's
	// replacementHealthyTime is read from it, so a restart does not move it.
	PlacementHealthy = "PlacementHealthy"
)

// Reasons of the PlacementHealthy condition.
const (
	PlacementHealthyReason    = "AllClustersHealthy"
	PlacementNotHealthyReason = "NotAllClustersHealthy"
)

// Reasons of the Scheduled condition.
const (
	BindingReasonSuccess        = "Success"
	BindingReasonNoClusterFit   = "NoClusterFit"
	BindingReasonUnschedulable  = "Unschedulable"
	BindingReasonSchedulerError = "SchedulerError"
	BindingReasonQuotaExceeded  = "QuotaExceeded"
)

// Reasons of the FullyApplied condition.
const (
	FullyAppliedSuccessReason = "FullyAppliedSuccess"
	FullyAppliedFailedReason  = "FullyAppliedFailed"
)

// Eviction reasons (GracefulEvictionTask.Reason, FailoverHistoryItem.Reason).
const (
	// EvictionReasonTaintUntolerated: the cluster has a NoExecute taint the
	// binding does not tolerate (cluster failover).
	EvictionReasonTaintUntolerated = "TaintUntolerated"
	// EvictionReasonApplicationFailure: the application stayed Unhealthy in
	// the cluster for longer than tolerationSeconds.
	EvictionReasonApplicationFailure = "ApplicationFailure"
	// EvictionReasonRebalance (Lifeboat): a requested fresh schedule
	// (spec.rescheduleTriggeredAt, e.g. from a WorkloadRebalancer), or a
	// switch of clusterAffinities term by the scheduler (the task's message
	// says so), moved the workload away from a cluster it ran in; its copy
	// there stays until the new placement is Healthy.
	EvictionReasonRebalance = "Rebalance"
	// EvictionReasonFailback (Lifeboat): a fresh schedule asked for by the
	// failback controller moved the workload back to a cluster it had
	// failed over away from; its copy in the cluster it leaves stays until
	// the copy moved back is Healthy.
	EvictionReasonFailback = "Failback"
	// EvictionReasonFailbackAbandoned (Lifeboat, history only): the copy
	// moved back did not become Healthy within the grace period; the
	// workload stays where it was and the cluster it was moved back to is
	// dropped. The entry's fromCluster is that cluster.
	EvictionReasonFailbackAbandoned = "FailbackAbandoned"
)

// RescheduleReasonAnnotation (Lifeboat) on a binding says why
// spec.rescheduleTriggeredAt was set. With the value
// EvictionReasonFailback, the scheduler writes the eviction tasks of a
// move with reason Failback instead of Rebalance. Only the failback
// controller sets it, and removes it once the schedule was taken.
const RescheduleReasonAnnotation = "failover.lifeboat.dev/reschedule-reason"

// Eviction producers (GracefulEvictionTask.Producer).
const (
	// EvictionProducerTaintManager is the producer of cluster failover.
	EvictionProducerTaintManager = "TaintManager"
	// EvictionProducerRBApplicationFailover is the producer of application
	// failover on ResourceBindings.
	EvictionProducerRBApplicationFailover = "resource-binding-application-failover-controller"
	// EvictionProducerCRBApplicationFailover is the producer of application
	// failover on ClusterResourceBindings.
	EvictionProducerCRBApplicationFailover = "cluster-resource-binding-application-failover-controller"
	// EvictionProducerScheduler (Lifeboat) is the producer of rebalance
	// evictions: the scheduler writes them with the placement that
	// replaces the cluster.
	EvictionProducerScheduler = "Scheduler"
	// EvictionProducerGracefulEviction (Lifeboat) is the producer of
	// FailbackAbandoned history entries: the graceful-eviction controller
	// gives a failback up.
	EvictionProducerGracefulEviction = "graceful-eviction-controller"
)

// Labels, annotations and finalizers of bindings.
const (
	ResourceBindingPermanentIDLabel        = "resourcebinding.karmada.io/permanent-id"
	ClusterResourceBindingPermanentIDLabel = "clusterresourcebinding.karmada.io/permanent-id"
	ResourceBindingNamespaceAnnotationKey  = "resourcebinding.karmada.io/namespace"
	ResourceBindingNameAnnotationKey       = "resourcebinding.karmada.io/name"
	ClusterResourceBindingAnnotationKey    = "clusterresourcebinding.karmada.io/name"

	// AppliedPlacementAnnotation holds the JSON of the placement used by the
	// last successful schedule; the taint manager reads tolerations from it.
	AppliedPlacementAnnotation = "policy.karmada.io/applied-placement"
	// BindingManagedByLabel lets the scheduler accept a binding that was not
	// created from a policy.
	BindingManagedByLabel = "binding.karmada.io/managed-by"
	// BindingDependenciesAnnotationKey lists, as JSON, the dependencies of
	// an independent binding.
	BindingDependenciesAnnotationKey = "resourcebinding.karmada.io/dependencies"
	// BindingDependedByLabelKeyPrefix prefixes the label an attached binding
	// carries per binding that depends on it.
	BindingDependedByLabelKeyPrefix = "resourcebinding.karmada.io/depended-by-"

	BindingControllerFinalizer                = "karmada.io/binding-controller"
	ClusterResourceBindingControllerFinalizer = "karmada.io/cluster-resource-binding-controller"
	BindingDependenciesDistributorFinalizer   = "karmada.io/binding-dependencies-distributor"
)
