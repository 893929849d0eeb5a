package cluster

import (
	"strings"
	"testing"
	"time"
)

// TestOptionsValidate: a negative duration is refused, naming the flag,
// rather than taken for 0 or the default.
func TestOptionsValidate(t *testing.T) {
	cases := map[string]struct {
		edit func(*Options)
		want string // a part of the error; empty: accepted
	}{
		"defaults":                   {edit: func(*Options) {}},
		"no deletion grace period":   {edit: func(o *Options) { o.DeletionGracePeriod = 0 }},
		"negative deletion grace":    {edit: func(o *Options) { o.DeletionGracePeriod = -time.Second }, want: "--cluster-deletion-grace-period must not be negative, got -1s"},
		"negative collect interval":  {edit: func(o *Options) { o.CollectInterval = -time.Second }, want: "--cluster-status-collect-interval must not be negative"},
		"negative failure threshold": {edit: func(o *Options) { o.FailureThreshold = -time.Second }, want: "--cluster-failure-threshold"},
		"negative flap hold":         {edit: func(o *Options) { o.FlapDamping.Hold = -time.Second }, want: "--cluster-flap-hold"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			tc.edit(o)
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
