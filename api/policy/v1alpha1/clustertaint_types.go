package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ctp,categories={karmada-io,lifeboat}
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterTaintPolicy adds taints to clusters when their conditions match
// and removes them when other conditions match. Deleting the policy leaves
// the taints in place.
type ClusterTaintPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the taint policy.
	// +required
	Spec ClusterTaintPolicySpec `json:"spec"`
}

// ClusterTaintPolicySpec is the desired behaviour of a ClusterTaintPolicy.
type ClusterTaintPolicySpec struct {
	// TargetClusters selects the clusters the policy acts on; nil selects
	// every cluster.
	// +optional
	TargetClusters *ClusterAffinity `json:"targetClusters,omitempty"`

	// AddOnConditions are ANDed; when all match, Taints are added. Empty
	// never adds.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	AddOnConditions []MatchCondition `json:"addOnConditions,omitempty"`

	// RemoveOnConditions are ANDed; when all match, Taints are removed.
	// Empty never removes.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	RemoveOnConditions []MatchCondition `json:"removeOnConditions,omitempty"`

	// Taints are added and removed together. A (key, effect) pair may
	// appear once.
	// +required
	// +listType=map
	// +listMapKey=key
	// +listMapKey=effect
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Taints []Taint `json:"taints"`
}

// MatchConditionOperator compares a condition status with a set.
type MatchConditionOperator string

// Match condition operators.
const (
	MatchConditionOpIn    MatchConditionOperator = "In"
	MatchConditionOpNotIn MatchConditionOperator = "NotIn"
)

// MatchCondition matches one Cluster condition by status.
type MatchCondition struct {
	// ConditionType is a Cluster condition type, e.g. Ready.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	ConditionType string `json:"conditionType"`

	// Operator is In or NotIn.
	// +required
	// +kubebuilder:validation:Enum=In;NotIn
	Operator MatchConditionOperator `json:"operator"`

	// StatusValues are condition statuses: True, False, Unknown.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:items:Enum=True;False;Unknown
	StatusValues []metav1.ConditionStatus `json:"statusValues"`
}

// Taint is a taint a ClusterTaintPolicy manages.
type Taint struct {
	// Key of the taint; a valid label key.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="taints[].key must be a valid label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (alphanumerics, '-', '_' or '.') that starts and ends with an alphanumeric"
	Key string `json:"key"`

	// Effect of the taint: NoSchedule or NoExecute.
	// +required
	// +kubebuilder:validation:Enum=NoSchedule;NoExecute
	Effect corev1.TaintEffect `json:"effect"`

	// Value of the taint; a valid label value.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	Value string `json:"value,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterTaintPolicyList is a list of ClusterTaintPolicies.
type ClusterTaintPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterTaintPolicy `json:"items"`
}
