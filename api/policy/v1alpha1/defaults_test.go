package v1alpha1

import "testing"

func ptr[T any](v T) *T { return &v }

func TestNormalizePurgeMode(t *testing.T) {
	cases := map[string]struct {
		in, want PurgeMode
	}{
		"Immediately becomes Directly":  {in: PurgeModeImmediately, want: PurgeModeDirectly},
		"Graciously becomes Gracefully": {in: PurgeModeGraciously, want: PurgeModeGracefully},
		"Directly is kept":              {in: PurgeModeDirectly, want: PurgeModeDirectly},
		"Gracefully is kept":            {in: PurgeModeGracefully, want: PurgeModeGracefully},
		"Never is kept":                 {in: PurgeModeNever, want: PurgeModeNever},
		"empty is kept":                 {in: "", want: ""},
		"unknown is kept":               {in: "Eventually", want: "Eventually"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := NormalizePurgeMode(tc.in); got != tc.want {
				t.Errorf("NormalizePurgeMode(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestIsKnownPurgeMode(t *testing.T) {
	cases := map[PurgeMode]bool{
		PurgeModeDirectly: true, PurgeModeGracefully: true, PurgeModeNever: true,
		PurgeModeImmediately: true, PurgeModeGraciously: true,
		"": false, "Eventually": false, "gracefully": false,
	}
	for mode, want := range cases {
		if got := IsKnownPurgeMode(mode); got != want {
			t.Errorf("IsKnownPurgeMode(%q) = %v, want %v", mode, got, want)
		}
	}
}

func TestApplicationFailoverEffectiveValues(t *testing.T) {
	cases := map[string]struct {
		behavior       *ApplicationFailoverBehavior
		wantMode       PurgeMode
		wantToleration int32
		wantGrace      int32
		wantHasGrace   bool
	}{
		"nil behaviour": {
			behavior: nil,
			wantMode: PurgeModeGracefully, wantToleration: 300, wantGrace: 600, wantHasGrace: true,
		},
		"empty behaviour": {
			behavior: &ApplicationFailoverBehavior{},
			wantMode: PurgeModeGracefully, wantToleration: 300, wantGrace: 600, wantHasGrace: true,
		},
		"Graciously without grace period gets 600": {
			behavior: &ApplicationFailoverBehavior{
				DecisionConditions: DecisionConditions{TolerationSeconds: ptr[int32](60)},
				PurgeMode:          PurgeModeGraciously,
			},
			wantMode: PurgeModeGracefully, wantToleration: 60, wantGrace: 600, wantHasGrace: true,
		},
		"Gracefully with grace period keeps it": {
			behavior: &ApplicationFailoverBehavior{
				PurgeMode:          PurgeModeGracefully,
				GracePeriodSeconds: ptr[int32](30),
			},
			wantMode: PurgeModeGracefully, wantToleration: 300, wantGrace: 30, wantHasGrace: true,
		},
		"Immediately has no grace period": {
			behavior: &ApplicationFailoverBehavior{
				DecisionConditions: DecisionConditions{TolerationSeconds: ptr[int32](0)},
				PurgeMode:          PurgeModeImmediately,
			},
			wantMode: PurgeModeDirectly, wantToleration: 0, wantHasGrace: false,
		},
		"Never has no grace period": {
			behavior: &ApplicationFailoverBehavior{
				DecisionConditions: DecisionConditions{TolerationSeconds: ptr[int32](120)},
				PurgeMode:          PurgeModeNever,
			},
			wantMode: PurgeModeNever, wantToleration: 120, wantHasGrace: false,
		},
		"negative toleration counts as zero": {
			behavior: &ApplicationFailoverBehavior{
				DecisionConditions: DecisionConditions{TolerationSeconds: ptr[int32](-5)},
			},
			wantMode: PurgeModeGracefully, wantToleration: 0, wantGrace: 600, wantHasGrace: true,
		},
		"zero grace period falls back to 600": {
			behavior: &ApplicationFailoverBehavior{GracePeriodSeconds: ptr[int32](0)},
			wantMode: PurgeModeGracefully, wantToleration: 300, wantGrace: 600, wantHasGrace: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.behavior.EffectivePurgeMode(); got != tc.wantMode {
				t.Errorf("EffectivePurgeMode() = %q, want %q", got, tc.wantMode)
			}
			if got := tc.behavior.EffectiveTolerationSeconds(); got != tc.wantToleration {
				t.Errorf("EffectiveTolerationSeconds() = %d, want %d", got, tc.wantToleration)
			}
			grace, ok := tc.behavior.EffectiveGracePeriodSeconds()
			if ok != tc.wantHasGrace || grace != tc.wantGrace {
				t.Errorf("EffectiveGracePeriodSeconds() = (%d, %v), want (%d, %v)", grace, ok, tc.wantGrace, tc.wantHasGrace)
			}
		})
	}
}

func TestClusterFailoverEffectivePurgeMode(t *testing.T) {
	cases := map[string]struct {
		behavior          *ClusterFailoverBehavior
		controllerDefault PurgeMode
		want              PurgeMode
	}{
		"nil uses the controller default":         {behavior: nil, controllerDefault: PurgeModeDirectly, want: PurgeModeDirectly},
		"nil normalises the controller default":   {behavior: nil, controllerDefault: PurgeModeImmediately, want: PurgeModeDirectly},
		"nil without a controller default":        {behavior: nil, want: PurgeModeGracefully},
		"empty mode is Gracefully":                {behavior: &ClusterFailoverBehavior{}, controllerDefault: PurgeModeDirectly, want: PurgeModeGracefully},
		"policy wins over the controller default": {behavior: &ClusterFailoverBehavior{PurgeMode: PurgeModeDirectly}, controllerDefault: PurgeModeGracefully, want: PurgeModeDirectly},
		"old spelling is normalised":              {behavior: &ClusterFailoverBehavior{PurgeMode: PurgeModeGraciously}, want: PurgeModeGracefully},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.behavior.EffectivePurgeMode(tc.controllerDefault); got != tc.want {
				t.Errorf("EffectivePurgeMode(%q) = %q, want %q", tc.controllerDefault, got, tc.want)
			}
		})
	}
}
