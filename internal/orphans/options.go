package orphans

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Options configure the orphans controllers.
type Options struct {
	// Grace is how long an object must stay an orphan (found so by two
	// scans this far apart) before it is removed: time for the scheduler
	// and the binding controller to make the Work that would adopt it,
	// after a member joins again or comes back.
	Grace time.Duration
	// ScanInterval is how often each Ready member is scanned, besides when
	// its Cluster is created or becomes Ready; 0 scans only then.
	ScanInterval time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{Grace: 2 * time.Minute, ScanInterval: 10 * time.Minute}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.Grace, "member-orphan-grace", o.Grace, "How long an object left in a member cluster without its Work must stay so before it is removed (see docs/member-cleanup.md).")
	fs.DurationVar(&o.ScanInterval, "member-orphan-scan-interval", o.ScanInterval, "How often each Ready member cluster is scanned for objects left without their Work and for empty namespaces Lifeboat created, besides when it joins or becomes Ready; each wait is up to a tenth longer, at random, so that members do not scan in step. 0 scans only then.")
}

// Validate reports values that cannot work.
func (o *Options) Validate() error {
	switch {
	case o.Grace <= 0:
		return fmt.Errorf("--member-orphan-grace must be positive, got %s", o.Grace)
	case o.ScanInterval < 0:
		return fmt.Errorf("--member-orphan-scan-interval must not be negative, got %s", o.ScanInterval)
	}
	return nil
}
