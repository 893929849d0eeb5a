package failback

import (
	"fmt"
	"math"

	"github.com/spf13/pflag"
)

// Options are the failback controller's flags.
type Options struct {
	// MaxConcurrent is --failback-max-concurrent: at most this many
	// failbacks open fleet-wide; 0 starts none.
	MaxConcurrent int
	// Rate is --failback-rate: failbacks started per second; 0 does not
	// limit the rate.
	Rate float64
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{MaxConcurrent: 10, Rate: 1}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.MaxConcurrent, "failback-max-concurrent", o.MaxConcurrent,
		"Most failbacks (spec.failover.failback) open at once over the whole fleet: asked for and not yet completed or given up; 0 starts none. Lifeboat's flag.")
	fs.Float64Var(&o.Rate, "failback-rate", o.Rate,
		"Failbacks started per second over the whole fleet; 0 does not limit the rate. Lifeboat's flag.")
}

// Validate reports flag values that cannot work.
func (o *Options) Validate() error {
	switch {
	case o.MaxConcurrent < 0:
		return fmt.Errorf("--failback-max-concurrent must not be negative, got %d", o.MaxConcurrent)
	case !(o.Rate >= 0) || math.IsInf(o.Rate, 0): // NaN too
		return fmt.Errorf("--failback-rate must be a finite number, not negative, got %g", o.Rate)
	}
	return nil
}
