package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/features"
)

// SettingsConfigMap is the ConfigMap, in the controller manager's
// leader-election namespace, where the leader publishes its Settings, and
// SettingsKey the key of its data that holds them as JSON.
const (
	SettingsConfigMap = "lifeboat-failover-settings"
	SettingsKey       = "settings.json"
)

// Settings are the controller manager's flags that decide when and how
// failover happens. The leader publishes them (PublishSettings) so that a
// dry run (`lifeboat simulate`) decides with the flags in force.
type Settings struct {
	// ProbePeriod is --cluster-status-update-frequency.
	ProbePeriod metav1.Duration `json:"clusterStatusUpdateFrequency"`
	// FailureThreshold is --cluster-failure-threshold.
	FailureThreshold metav1.Duration `json:"clusterFailureThreshold"`
	// ProbeTimeout is --cluster-probe-timeout.
	ProbeTimeout metav1.Duration `json:"clusterProbeTimeout"`
	// MonitorGracePeriod is --cluster-monitor-grace-period, the lease
	// monitor's for Pull clusters. Settings published by a controller
	// manager that did not record it decode as 0: Pull clusters then have
	// the Push settling window, as that controller manager gave them.
	MonitorGracePeriod metav1.Duration `json:"clusterMonitorGracePeriod"`
	// MonitorPeriod is --cluster-monitor-period, the lease monitor's.
	MonitorPeriod metav1.Duration `json:"clusterMonitorPeriod"`
	// TaintEviction: the taint manager runs (the Failover gate, the
	// taint-manager controller and --enable-no-execute-taint-eviction).
	TaintEviction bool `json:"taintEviction"`
	// ApplicationFailover: the application-failover controller runs.
	ApplicationFailover bool `json:"applicationFailover"`
	// DefaultPurgeMode is --no-execute-taint-eviction-purge-mode.
	DefaultPurgeMode policyv1alpha1.PurgeMode `json:"noExecuteTaintEvictionPurgeMode"`
	// EvictionRate is --resource-eviction-rate.
	EvictionRate float64 `json:"resourceEvictionRate"`
	// SecondaryEvictionRate is --secondary-resource-eviction-rate.
	SecondaryEvictionRate float64 `json:"secondaryResourceEvictionRate"`
	// UnhealthyClusterThreshold is --unhealthy-cluster-threshold.
	UnhealthyClusterThreshold float64 `json:"unhealthyClusterThreshold"`
	// LargeClusterNumThreshold is --large-cluster-num-threshold.
	LargeClusterNumThreshold int `json:"largeClusterNumThreshold"`
	// GracefulEvictionTimeout is --graceful-eviction-timeout.
	GracefulEvictionTimeout metav1.Duration `json:"gracefulEvictionTimeout"`
	// FeatureGates are the gates that change an eviction.
	FeatureGates map[string]bool `json:"featureGates"`
}

// failoverGates are the gates Settings record.
var failoverGates = []features.Feature{features.Failover, features.GracefulEviction, features.StatefulFailoverInjection}

// NewSettings returns the settings of the given flags. taintManager and
// applicationFailover say whether those controllers are enabled
// (--controllers). The lease monitor's flags are set with
// WithLeaseMonitor.
func NewSettings(probePeriod, failureThreshold, probeTimeout time.Duration, o *ClusterFailoverOptions, gates *features.Gates, taintManager, applicationFailover bool) Settings {
	s := Settings{
		ProbePeriod:               metav1.Duration{Duration: probePeriod},
		FailureThreshold:          metav1.Duration{Duration: failureThreshold},
		ProbeTimeout:              metav1.Duration{Duration: probeTimeout},
		TaintEviction:             taintManager && gates.Enabled(features.Failover) && o.EnableNoExecuteTaintEviction,
		ApplicationFailover:       applicationFailover && gates.Enabled(features.Failover),
		DefaultPurgeMode:          o.PurgeMode(),
		EvictionRate:              o.ResourceEvictionRate,
		SecondaryEvictionRate:     o.SecondaryResourceEvictionRate,
		UnhealthyClusterThreshold: o.UnhealthyClusterThreshold,
		LargeClusterNumThreshold:  o.LargeClusterNumThreshold,
		GracefulEvictionTimeout:   metav1.Duration{Duration: o.GracefulEvictionTimeout},
		FeatureGates:              map[string]bool{},
	}
	for _, f := range failoverGates {
		s.FeatureGates[string(f)] = gates.Enabled(f)
	}
	return s
}

// WithLeaseMonitor returns s with the lease monitor's flags,
// --cluster-monitor-grace-period and --cluster-monitor-period.
func (s Settings) WithLeaseMonitor(gracePeriod, period time.Duration) Settings {
	s.MonitorGracePeriod = metav1.Duration{Duration: gracePeriod}
	s.MonitorPeriod = metav1.Duration{Duration: period}
	return s
}

// Gates returns the recorded gates; the others keep their defaults.
func (s Settings) Gates() *features.Gates {
	g := features.New()
	// The recorded names are known gates; an unknown one (a newer
	// controller manager) is left out rather than failing the read.
	for name, on := range s.FeatureGates {
		_ = g.SetFromMap(map[string]bool{name: on})
	}
	return g
}

// StormGuardConfig returns the storm guard's configuration, settling
// windows included, as the controller manager builds it.
func (s Settings) StormGuardConfig() StormGuardConfig {
	return StormGuardConfig{
		Rate:                s.EvictionRate,
		SecondaryRate:       s.SecondaryEvictionRate,
		UnhealthyThreshold:  s.UnhealthyClusterThreshold,
		LargeGroupThreshold: s.LargeClusterNumThreshold,
		Settling: NewSettlingWindows(s.ProbePeriod.Duration, s.FailureThreshold.Duration, s.ProbeTimeout.Duration,
			s.MonitorGracePeriod.Duration, s.MonitorPeriod.Duration),
	}
}

// PublishSettings writes s into the SettingsConfigMap of namespace,
// creating it when missing.
func PublishSettings(ctx context.Context, c client.Client, namespace string, s Settings) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the failover settings: %w", err)
	}
	key := types.NamespacedName{Namespace: namespace, Name: SettingsConfigMap}
	var cm corev1.ConfigMap
	err = c.Get(ctx, key, &cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: SettingsConfigMap},
			Data:       map[string]string{SettingsKey: string(data)},
		}
		if err := c.Create(ctx, &cm); err != nil {
			return fmt.Errorf("creating ConfigMap %s: %w", key, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading ConfigMap %s: %w", key, err)
	}
	if cm.Data[SettingsKey] == string(data) {
		return nil
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[SettingsKey] = string(data)
	if err := c.Update(ctx, &cm); err != nil {
		return fmt.Errorf("updating ConfigMap %s: %w", key, err)
	}
	return nil
}

// ReadSettings reads the settings the controller manager published in
// namespace. found is false when there are none (no controller manager has
// published them yet).
func ReadSettings(ctx context.Context, c client.Reader, namespace string) (s Settings, found bool, err error) {
	var cm corev1.ConfigMap
	key := types.NamespacedName{Namespace: namespace, Name: SettingsConfigMap}
	if err := c.Get(ctx, key, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return Settings{}, false, nil
		}
		return Settings{}, false, fmt.Errorf("reading ConfigMap %s: %w", key, err)
	}
	raw, ok := cm.Data[SettingsKey]
	if !ok {
		return Settings{}, false, fmt.Errorf("ConfigMap %s has no %s", key, SettingsKey)
	}
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return Settings{}, false, fmt.Errorf("decoding %s of ConfigMap %s: %w", SettingsKey, key, err)
	}
	return s, true, nil
}
