package features

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Feature is the name of a feature gate.
type Feature string

// Lifeboat's feature gates. The names are Karmada's.
const (
	// Failover enables failover controllers: application failover today,
	// cluster failover (the taint manager) later.
	Failover Feature = "Failover"
	// GracefulEviction lets evictions keep the old copy until the new one is
	// healthy (purge mode Gracefully). When it is off, Gracefully evictions
	// purge directly.
	GracefulEviction Feature = "GracefulEviction"
	// PropagateDeps propagates the dependencies (ConfigMaps, Secrets, ...)
	// of a workload along with it, and moves them when it fails over.
	PropagateDeps Feature = "PropagateDeps"
	// StatefulFailoverInjection captures state from the failed copy's status
	// (statePreservation rules) and injects it as labels into the new copy.
	StatefulFailoverInjection Feature = "StatefulFailoverInjection"
)

// Stage is the maturity of a gate, as in Karmada.
type Stage string

// Stages.
const (
	Alpha Stage = "Alpha"
	Beta  Stage = "Beta"
	GA    Stage = "GA"
)

// Spec describes one gate.
type Spec struct {
	// Default is Lifeboat's default, which may differ from Karmada's.
	Default bool
	// Stage is the gate's stage in Karmada; AllAlpha and AllBeta use it.
	Stage Stage
}

// Known returns every gate Lifeboat knows with its spec. A fresh map each
// call, so callers cannot change the defaults of others.
//
// Lifeboat's defaults differ from Karmada's where failover is concerned:
//   - Failover is on (Karmada: off). Failover is the product; it is still
//     opt-in per policy (spec.failover), so the gate only removes a switch.
//   - StatefulFailoverInjection is on (Karmada: alpha, off). Lifeboat
//     validates captured values as label values, reports rules that match
//     nothing with an Event instead of blocking the failover, and records
//     the state in the failover history, which removes the reasons the
//     feature is alpha in Karmada. It still only acts on policies that list
//     statePreservation rules.
func Known() map[Feature]Spec {
	return map[Feature]Spec{
		Failover:                  {Default: true, Stage: Beta},
		GracefulEviction:          {Default: true, Stage: Beta},
		PropagateDeps:             {Default: true, Stage: Beta},
		StatefulFailoverInjection: {Default: true, Stage: Alpha},
	}
}

// Pseudo-gates of the flag that set every gate of a stage, as in
// Kubernetes and Karmada (Karmada's e2e setup uses AllAlpha=true,AllBeta=true).
const (
	allAlpha = "AllAlpha"
	allBeta  = "AllBeta"
)

// Gates is a set of gate values. The zero value and a nil *Gates report the
// defaults. Gates implements pflag.Value for --feature-gates. It is not safe
// to Set concurrently with Enabled; set it while parsing flags, then only
// read it.
type Gates struct {
	overrides map[Feature]bool
}

// New returns gates at their defaults.
func New() *Gates { return &Gates{} }

// Enabled reports whether f is on. Unknown gates are off.
func (g *Gates) Enabled(f Feature) bool {
	if g != nil {
		if v, ok := g.overrides[f]; ok {
			return v
		}
	}
	return Known()[f].Default
}

// SetFromMap sets gates by name; an unknown name is an error and changes
// nothing. AllAlpha and AllBeta are applied before the named gates, so
// "AllAlpha=false,StatefulFailoverInjection=true" turns on just that one.
func (g *Gates) SetFromMap(values map[string]bool) error {
	known := Known()
	next := make(map[Feature]bool, len(g.overrides)+len(values))
	for f, v := range g.overrides {
		next[f] = v
	}
	for _, stage := range []struct {
		key   string
		stage Stage
	}{{allAlpha, Alpha}, {allBeta, Beta}} {
		v, ok := values[stage.key]
		if !ok {
			continue
		}
		for f, spec := range known {
			if spec.Stage == stage.stage {
				next[f] = v
			}
		}
	}
	for name, v := range values {
		if name == allAlpha || name == allBeta {
			continue
		}
		if _, ok := known[Feature(name)]; !ok {
			return fmt.Errorf("unknown feature gate %q (known: %s)", name, strings.Join(names(), ", "))
		}
		next[Feature(name)] = v
	}
	g.overrides = next
	return nil
}

// Set parses "Name=true,Other=false" (pflag.Value).
func (g *Gates) Set(value string) error {
	values := map[string]bool{}
	for _, pair := range strings.Split(value, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, raw, ok := strings.Cut(pair, "=")
		if !ok {
			return fmt.Errorf("feature gate %q: want Name=true or Name=false", pair)
		}
		name = strings.TrimSpace(name)
		v, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("feature gate %s: invalid value %q: %w", name, raw, err)
		}
		values[name] = v
	}
	return g.SetFromMap(values)
}

// String lists the gates set explicitly, sorted (pflag.Value).
func (g *Gates) String() string {
	if g == nil || len(g.overrides) == 0 {
		return ""
	}
	pairs := make([]string, 0, len(g.overrides))
	for f, v := range g.overrides {
		pairs = append(pairs, fmt.Sprintf("%s=%t", f, v))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// Type is the flag's type name in help output (pflag.Value).
func (g *Gates) Type() string { return "mapStringBool" }

// AddFlag registers --feature-gates on fs, writing into g.
func (g *Gates) AddFlag(fs *pflag.FlagSet) {
	fs.Var(g, "feature-gates", "Comma-separated Name=true|false pairs that turn features on or off. Gates:\n"+Help())
}

// Help lists every gate with its default and stage, one per line.
func Help() string {
	known := Known()
	lines := make([]string, 0, len(known)+2)
	lines = append(lines, fmt.Sprintf("%s=true|false (%s - default=false)", allAlpha, Alpha),
		fmt.Sprintf("%s=true|false (%s - default=false)", allBeta, Beta))
	for _, name := range names() {
		spec := known[Feature(name)]
		lines = append(lines, fmt.Sprintf("%s=true|false (%s - default=%t)", name, spec.Stage, spec.Default))
	}
	return strings.Join(lines, "\n")
}

func names() []string {
	known := Known()
	out := make([]string, 0, len(known))
	for f := range known {
		out = append(out, string(f))
	}
	sort.Strings(out)
	return out
}

var _ pflag.Value = (*Gates)(nil)
