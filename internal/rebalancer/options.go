package rebalancer

import (
	"fmt"

	"github.com/spf13/pflag"
)

// DefaultMaxConcurrent is --rebalance-max-concurrent's default: a
// rebalancer of a few dozen workloads moves them all at once, as in
// Karmada; a larger one moves them in turns.
const DefaultMaxConcurrent = 50

// Options are the WorkloadRebalancer controller's flags.
type Options struct {
	// MaxConcurrent is --rebalance-max-concurrent: at most this many
	// rebalances open fleet-wide (Moving); 0 does not cap them.
	MaxConcurrent int
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{MaxConcurrent: DefaultMaxConcurrent}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.MaxConcurrent, "rebalance-max-concurrent", o.MaxConcurrent,
		"A WorkloadRebalancer asks for a workload's fresh schedule only while fewer rebalances than this are open over the whole fleet "+
			"(fresh schedules asked for and not made yet, Rebalance eviction tasks still keeping an old copy); its other workloads wait their turn. "+
			"0 does not cap them (as Karmada). Lifeboat's flag.")
}

// Validate reports flag values that cannot work.
func (o *Options) Validate() error {
	if o.MaxConcurrent < 0 {
		return fmt.Errorf("--rebalance-max-concurrent must not be negative, got %d", o.MaxConcurrent)
	}
	return nil
}
