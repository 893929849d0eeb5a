package v1alpha1

// FailoverBehavior says how resources fail over.
// +kubebuilder:validation:XValidation:rule="!has(self.failback) || has(self.cluster) || has(self.application)",message="failback requires cluster or application failover: set failover.cluster or failover.application",fieldPath=".failback"
type FailoverBehavior struct {
	// Application configures application failover: moving the resources
	// away from a cluster where they stay unhealthy. Nil disables it.
	// +optional
	Application *ApplicationFailoverBehavior `json:"application,omitempty"`

	// Cluster configures cluster failover: what happens to the resources
	// when their cluster gets an untolerated NoExecute taint. Nil uses the
	// controller's defaults.
	// +optional
	Cluster *ClusterFailoverBehavior `json:"cluster,omitempty"`

	// Failback (a Lifeboat extension; Karmada has none) moves the
	// resources back to a cluster they failed over away from, once that
	// cluster has been Ready for StabilizationSeconds and a fresh schedule
	// would place them there again. The move is graceful: the copy in the
	// current cluster stays until the copy moved back is Healthy. Nil
	// leaves the resources where failover put them.
	// +optional
	Failback *FailbackBehavior `json:"failback,omitempty"`
}

// FailbackBehavior configures automatic failback (a Lifeboat extension).
type FailbackBehavior struct {
	// StabilizationSeconds is how long a recovered cluster must have been
	// Ready, without a break, before anything moves back to it. A flap
	// restarts the window.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	StabilizationSeconds *int32 `json:"stabilizationSeconds,omitempty"`

	// AfterApplicationFailover also moves back resources that left a
	// cluster because the application there was unhealthy (reason
	// ApplicationFailure). False (the default) moves back only after a
	// cluster failover (reason TaintUntolerated).
	// +optional
	AfterApplicationFailover bool `json:"afterApplicationFailover,omitempty"`
}

// DefaultFailbackStabilizationSeconds is the stabilization window when
// StabilizationSeconds is unset.
const DefaultFailbackStabilizationSeconds int32 = 600

// EffectiveStabilizationSeconds is StabilizationSeconds, or its default
// when unset or not positive.
func (f *FailbackBehavior) EffectiveStabilizationSeconds() int32 {
	if f == nil || f.StabilizationSeconds == nil || *f.StabilizationSeconds <= 0 {
		return DefaultFailbackStabilizationSeconds
	}
	return *f.StabilizationSeconds
}

// ApplicationFailoverBehavior configures application failover.
//
// Unlike Karmada's webhook, Lifeboat does not require propagateDeps to be
// true here: the seeds' stateful example omits it.
// +kubebuilder:validation:XValidation:rule="!has(self.gracePeriodSeconds) || !has(self.purgeMode) || self.purgeMode == 'Gracefully' || self.purgeMode == 'Graciously'",message="gracePeriodSeconds is only allowed when purgeMode is Gracefully (or its old spelling Graciously)",fieldPath=".gracePeriodSeconds"
type ApplicationFailoverBehavior struct {
	// DecisionConditions say when an application counts as failed.
	// +required
	DecisionConditions DecisionConditions `json:"decisionConditions"`

	// PurgeMode says how the copy in the failed cluster is removed:
	// Directly (old spelling Immediately) removes it before the new copy is
	// created, Gracefully (old spelling Graciously, the default) keeps it
	// until the new copy is healthy or GracePeriodSeconds pass, Never keeps
	// it until a user confirms.
	// +optional
	// +kubebuilder:default=Gracefully
	// +kubebuilder:validation:Enum=Directly;Gracefully;Never;Immediately;Graciously
	PurgeMode PurgeMode `json:"purgeMode,omitempty"`

	// GracePeriodSeconds is the longest the old copy is kept, with
	// Gracefully, when the new copy does not become healthy. Only allowed
	// with Gracefully; 600 when unset (see EffectiveGracePeriodSeconds).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	GracePeriodSeconds *int32 `json:"gracePeriodSeconds,omitempty"`

	// StatePreservation carries values from the failed copy's status to the
	// new copy as labels.
	// +optional
	StatePreservation *StatePreservation `json:"statePreservation,omitempty"`
}

// DecisionConditions say when an application counts as failed.
type DecisionConditions struct {
	// TolerationSeconds is how long the application must stay unhealthy in
	// a cluster before it is moved away. 0 moves it at once.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	TolerationSeconds *int32 `json:"tolerationSeconds,omitempty"`
}

// ClusterFailoverBehavior configures cluster failover.
// +kubebuilder:validation:XValidation:rule="!has(self.fencing) || !has(self.fencing.enabled) || !self.fencing.enabled || (has(self.purgeMode) && (self.purgeMode == 'Directly' || self.purgeMode == 'Immediately'))",message="fencing.enabled is only allowed with purgeMode Directly (or its old spelling Immediately): the other purge modes keep the old copy running on purpose",fieldPath=".fencing.enabled"
type ClusterFailoverBehavior struct {
	// PurgeMode says how the copy in the failed cluster is removed: Directly
	// (old spelling Immediately) or Gracefully (old spelling Graciously, the
	// default). Never is not offered for clusters.
	// +optional
	// +kubebuilder:default=Gracefully
	// +kubebuilder:validation:Enum=Directly;Gracefully;Immediately;Graciously
	PurgeMode PurgeMode `json:"purgeMode,omitempty"`

	// StatePreservation carries values from the failed copy's status to the
	// new copy as labels.
	// +optional
	StatePreservation *StatePreservation `json:"statePreservation,omitempty"`

	// Fencing (a Lifeboat extension; Karmada has none) stops the copy in a
	// Pull cluster that lost the control plane, so that a copy failed over
	// away from a partitioned cluster never runs at the same time as its
	// replacement. Only with purgeMode Directly (Immediately), where it is
	// on unless Enabled is false. Push clusters cannot be fenced.
	// +optional
	Fencing *Fencing `json:"fencing,omitempty"`
}

// FencingAction is what the agent of a Pull cluster does to a fenced copy.
// +kubebuilder:validation:Enum=ScaleToZero;Delete
type FencingAction string

const (
	// FencingScaleToZero sets the copy's replicas to 0 (through the
	// interpreter's replica revision); a kind without replicas is deleted.
	FencingScaleToZero FencingAction = "ScaleToZero"
	// FencingDelete deletes the copy.
	FencingDelete FencingAction = "Delete"
)

// Fencing configures the fencing of copies in Pull clusters.
type Fencing struct {
	// Enabled turns fencing on or off. Unset means on with purgeMode
	// Directly (Immediately), the only purge mode it is allowed with.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Action is what the agent does to its copy once it could not renew
	// its cluster's Lease for the lease duration (plus the toleration of
	// the cluster.karmada.io/not-ready:NoExecute taint, when the placement
	// tolerates it for a while): ScaleToZero (the default) or Delete.
	// +optional
	// +kubebuilder:default=ScaleToZero
	Action FencingAction `json:"action,omitempty"`
}

// StatePreservation lists the values to carry over on failover.
type StatePreservation struct {
	// Rules each pick one value.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Rules []StatePreservationRule `json:"rules"`
}

// StatePreservationRule picks one value from the failed copy's reflected
// status and names the label it is injected as.
type StatePreservationRule struct {
	// AliasLabelName is the label key the value is injected as. It must be a
	// valid label key.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="aliasLabelName must be a valid label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (alphanumerics, '-', '_' or '.') that starts and ends with an alphanumeric"
	AliasLabelName string `json:"aliasLabelName"`

	// JSONPath is a JSONPath template evaluated against the reflected
	// status (the root is the content of .status), e.g. "{ .jobStatus.jobID }".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	JSONPath string `json:"jsonPath"`
}

// PurgeMode says how the copy in a failed cluster is removed. Both
// vocabularies are accepted: Immediately|Graciously|Never (Karmada up to
// v1.18 and the seeds) and Directly|Gracefully|Never (Karmada v1.15 and
// later). NormalizePurgeMode maps the old spellings to the new.
type PurgeMode string

// Purge modes.
const (
	// PurgeModeDirectly removes the old copy before the new one is created.
	PurgeModeDirectly PurgeMode = "Directly"
	// PurgeModeGracefully keeps the old copy until the new one is healthy or
	// the grace period passes.
	PurgeModeGracefully PurgeMode = "Gracefully"
	// PurgeModeNever keeps the old copy until a user confirms its removal.
	PurgeModeNever PurgeMode = "Never"

	// PurgeModeImmediately is the old spelling of PurgeModeDirectly.
	PurgeModeImmediately PurgeMode = "Immediately"
	// PurgeModeGraciously is the old spelling of PurgeModeGracefully.
	PurgeModeGraciously PurgeMode = "Graciously"
)

// Karmada-compatible aliases of the purge modes (Karmada's Go names).
const (
	Immediately = PurgeModeImmediately
	Graciously  = PurgeModeGraciously
	Never       = PurgeModeNever
)
