package bench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRunsOf(t *testing.T) {
	b := &Bench{Options: Options{Runs: 3, ScenarioRuns: map[string]int{ScenarioClusterFailover: 1}}}
	if got := b.runsOf(ScenarioClusterFailover); got != 1 {
		t.Errorf("runsOf(cluster-failover) = %d, want 1", got)
	}
	if got := b.runsOf(ScenarioPropagation); got != 3 {
		t.Errorf("runsOf(propagation) = %d, want --runs 3", got)
	}
}

// Bad options are refused before anything is created or measured.
func TestRunRefusesBadOptions(t *testing.T) {
	cases := map[string]struct {
		mutate func(o *Options)
		want   string
	}{
		"unknown scenario":                {func(o *Options) { o.Scenarios = []string{"chaos"} }, `unknown scenario "chaos"`},
		"no runs":                         {func(o *Options) { o.Runs = 0 }, "--runs must be at least 1"},
		"unknown scenario-runs":           {func(o *Options) { o.ScenarioRuns = map[string]int{"chaos": 1} }, `--scenario-runs: unknown scenario "chaos"`},
		"scenario-runs zero":              {func(o *Options) { o.ScenarioRuns = map[string]int{ScenarioFailback: 0} }, "failback must run at least once"},
		"extra pid is a controller":       {func(o *Options) { o.Controllers = map[string]int{"cm": 1}; o.ExtraProcesses = map[string]int{"cm": 2} }, "also a controller process"},
		"failback n zero":                 {func(o *Options) { o.FailbackN = 0 }, "--failback-n must be between 1 and 100000, got 0"},
		"propagation member unknown":      {func(o *Options) { o.PropagationMember = "member9" }, `--propagation-member "member9" is not a member`},
		"failback window fraction":        {func(o *Options) { o.FailbackWindow = 1500 * time.Millisecond }, "whole seconds"},
		"failback window zero":            {func(o *Options) { o.FailbackWindow = 0 }, "whole seconds"},
		"failback window past int32":      {func(o *Options) { o.FailbackWindow = (1 << 31) * time.Second }, "whole seconds"},
		"no scenarios":                    {func(o *Options) { o.Scenarios = nil }, "--scenarios is empty"},
		"negative n":                      {func(o *Options) { o.N = -1 }, "-n must be between 1 and 100000, got -1"},
		"cluster-failover n zero":         {func(o *Options) { o.ClusterFailoverN = 0 }, "--cluster-failover-n must be between 1 and 100000, got 0"},
		"negative toleration":             {func(o *Options) { o.Toleration = -5 }, "--toleration-seconds must be between 0 and 2147483647, got -5"},
		"idle window zero":                {func(o *Options) { o.IdleWindow = 0 }, "--idle-window must be at least 10s, got 0s"},
		"idle window of 1ns":              {func(o *Options) { o.IdleWindow = time.Nanosecond }, "--idle-window must be at least 10s, got 1ns"},
		"idle window just under 10s":      {func(o *Options) { o.IdleWindow = 10*time.Second - time.Millisecond }, "--idle-window must be at least 10s, got 9.999s"},
		"negative steady bindings":        {func(o *Options) { o.SteadyBindings = -1 }, "--steady-bindings must be between 0 and 100000, got -1"},
		"n past the bound":                {func(o *Options) { o.N = MaxObjects + 1 }, "-n must be between 1 and 100000, got 100001"},
		"cluster-failover n past int32":   {func(o *Options) { o.ClusterFailoverN = 1 << 33 }, "--cluster-failover-n must be between 1 and 100000"},
		"failback n past the bound":       {func(o *Options) { o.FailbackN = MaxObjects + 1 }, "--failback-n must be between 1 and 100000"},
		"steady bindings past the bound":  {func(o *Options) { o.SteadyBindings = 1 << 40 }, "--steady-bindings must be between 0 and 100000"},
		"timeout zero":                    {func(o *Options) { o.Timeout = 0 }, "--timeout must be positive"},
		"cluster-failover member unknown": {func(o *Options) { o.ClusterFailoverMember = "membr1" }, `--cluster-failover-member "membr1" is not a member`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := DefaultOptions()
			tc.mutate(&o)
			_, err := (&Bench{Options: o}).Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// A count or duration only a scenario that is not selected uses is not
// checked: --idle-window 0 is no matter when footprint does not run.
func TestValidateChecksOnlyTheSelectedScenarios(t *testing.T) {
	o := DefaultOptions()
	o.Scenarios = []string{ScenarioPropagation}
	o.IdleWindow, o.ClusterFailoverN, o.FailbackN, o.Toleration = 0, 0, 0, -1
	if err := o.Validate(); err != nil {
		t.Errorf("Validate = %v, want nil", err)
	}
	o = DefaultOptions()
	o.Scenarios = []string{ScenarioFootprint}
	o.Timeout, o.N = 0, 0
	if err := o.Validate(); err != nil {
		t.Errorf("footprint alone without a timeout: Validate = %v, want nil", err)
	}
	o.SteadyBindings = 10
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--timeout") {
		t.Errorf("footprint's steady state without a timeout: Validate = %v, want a --timeout error", err)
	}
}

func TestSteadyTargets(t *testing.T) {
	for _, tc := range []struct {
		n         int
		rss, idle float64
	}{{n: 10000, rss: 300, idle: 0.3}, {n: 5000, rss: 200, idle: 0.25}, {n: 100}} {
		rss, idle := steadyTargets(tc.n)
		if tc.rss == 0 {
			if rss != nil || idle != nil {
				t.Errorf("%d bindings: targets %v, %v; want none", tc.n, rss, idle)
			}
			continue
		}
		if rss == nil || idle == nil || rss.Limit != tc.rss || idle.Limit != tc.idle {
			t.Errorf("%d bindings: targets %+v, %+v; want %g MiB, %g CPU-s", tc.n, rss, idle, tc.rss, tc.idle)
		}
	}
}

// The cluster-failover targets are set for the sizes they were measured at,
// and the move after the settling window is a figure of its own.
func TestClusterFailoverTargets(t *testing.T) {
	for _, tc := range []struct {
		n     int
		fig   string
		stat  string
		limit float64
	}{
		{n: 50, fig: FigCFKillAllHealthy, stat: "max", limit: 40},
		{n: 50, fig: FigCFLastEviction, stat: "max", limit: 2},
		{n: 1000, fig: FigCFTaintAllHealthy, stat: "p50", limit: 25},
		{n: 5000, fig: FigCFTaintAllHealthy, stat: "max", limit: 120},
		{n: 200},
	} {
		var targeted []string
		move := false
		for _, s := range clusterFailoverFigures(tc.n) {
			if s.ID == FigCFMoveAllHealthy {
				move = true
			}
			if s.Target == nil || s.ID == FigCFLostAgain { // the last-copy check holds at every size
				continue
			}
			targeted = append(targeted, s.ID)
			if s.ID == tc.fig && (s.Target.Stat != tc.stat || s.Target.Limit != tc.limit) {
				t.Errorf("n=%d: %s target %s ≤ %g, want %s ≤ %g", tc.n, s.ID, s.Target.Stat, s.Target.Limit, tc.stat, tc.limit)
			}
		}
		if !move {
			t.Errorf("n=%d: no %s figure", tc.n, FigCFMoveAllHealthy)
		}
		if tc.fig == "" && len(targeted) > 0 {
			t.Errorf("n=%d: targets on %v, want none", tc.n, targeted)
		}
		if tc.fig != "" && !slices.Contains(targeted, tc.fig) {
			t.Errorf("n=%d: no target on %s (targets on %v)", tc.n, tc.fig, targeted)
		}
	}
}

func TestValidateAcceptsCountsAtTheirBounds(t *testing.T) {
	o := DefaultOptions()
	o.N, o.ClusterFailoverN, o.FailbackN, o.SteadyBindings = MaxObjects, MaxObjects, 1, 0
	if err := o.Validate(); err != nil {
		t.Errorf("Validate = %v, want nil at the bounds", err)
	}
}

// Runs given for a scenario that is not selected are refused, naming the
// selected ones: the scenario would silently not run.
func TestValidateRefusesRunsOfUnselectedScenarios(t *testing.T) {
	o := DefaultOptions()
	o.Scenarios = []string{ScenarioPropagation, ScenarioAppFailover}
	o.ScenarioRuns = map[string]int{ScenarioFailback: 2}
	want := "--scenario-runs: failback is not among the selected scenarios (propagation, app-failover)"
	if err := o.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate = %v, want %q", err, want)
	}
	o.ScenarioRuns = map[string]int{ScenarioAppFailover: 2}
	if err := o.Validate(); err != nil {
		t.Errorf("runs of a selected scenario: Validate = %v, want nil", err)
	}
}
