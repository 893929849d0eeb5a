package v1alpha1

// Effective defaults of failover settings. The CRD schemas default
// tolerationSeconds and purgeMode; the rest depend on other fields and are
// given here so every controller reads them the same way.
const (
	// DefaultTolerationSeconds is how long an application may stay
	// unhealthy before it is moved, when tolerationSeconds is unset.
	DefaultTolerationSeconds int32 = 300
	// DefaultApplicationGracePeriodSeconds is how long the old copy is kept
	// with Gracefully when gracePeriodSeconds is unset.
	DefaultApplicationGracePeriodSeconds int32 = 600
	// DefaultPurgeMode is the purge mode when none is set, for application
	// and cluster failover alike.
	DefaultPurgeMode = PurgeModeGracefully
)

// NormalizePurgeMode maps the old spellings to the current ones:
// Immediately becomes Directly and Graciously becomes Gracefully. Other
// values, including the empty string, are returned unchanged.
func NormalizePurgeMode(mode PurgeMode) PurgeMode {
	switch mode {
	case PurgeModeImmediately:
		return PurgeModeDirectly
	case PurgeModeGraciously:
		return PurgeModeGracefully
	default:
		return mode
	}
}

// IsKnownPurgeMode reports whether mode is one of the five accepted
// spellings.
func IsKnownPurgeMode(mode PurgeMode) bool {
	switch NormalizePurgeMode(mode) {
	case PurgeModeDirectly, PurgeModeGracefully, PurgeModeNever:
		return true
	default:
		return false
	}
}

// EffectivePurgeMode returns the normalised purge mode of application
// failover; Gracefully when b is nil or its mode is empty.
func (b *ApplicationFailoverBehavior) EffectivePurgeMode() PurgeMode {
	if b == nil || b.PurgeMode == "" {
		return DefaultPurgeMode
	}
	return NormalizePurgeMode(b.PurgeMode)
}

// EffectiveTolerationSeconds returns how long the application may stay
// unhealthy; 300 when unset or b is nil. Negative values (rejected by the
// schema) count as 0.
func (b *ApplicationFailoverBehavior) EffectiveTolerationSeconds() int32 {
	if b == nil || b.DecisionConditions.TolerationSeconds == nil {
		return DefaultTolerationSeconds
	}
	if v := *b.DecisionConditions.TolerationSeconds; v > 0 {
		return v
	}
	return 0
}

// EffectiveGracePeriodSeconds returns the grace period of the old copy and
// whether there is one: only the Gracefully mode has a grace period, 600
// seconds when unset.
func (b *ApplicationFailoverBehavior) EffectiveGracePeriodSeconds() (int32, bool) {
	if b.EffectivePurgeMode() != PurgeModeGracefully {
		return 0, false
	}
	if b == nil || b.GracePeriodSeconds == nil || *b.GracePeriodSeconds <= 0 {
		return DefaultApplicationGracePeriodSeconds, true
	}
	return *b.GracePeriodSeconds, true
}

// EffectivePurgeMode returns the normalised purge mode of cluster failover.
// When b is nil the policy says nothing and controllerDefault (the
// controller's configured mode) is used; when that, or b's own mode, is
// empty the result is Gracefully. Never is not offered for cluster failover
// by the schema; should it appear anyway it is returned as Never.
func (b *ClusterFailoverBehavior) EffectivePurgeMode(controllerDefault PurgeMode) PurgeMode {
	mode := controllerDefault
	if b != nil {
		mode = b.PurgeMode
	}
	if mode == "" {
		return DefaultPurgeMode
	}
	return NormalizePurgeMode(mode)
}
