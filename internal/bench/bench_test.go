package bench

import (
	"context"
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
		"unknown scenario":           {func(o *Options) { o.Scenarios = []string{"chaos"} }, `unknown scenario "chaos"`},
		"no runs":                    {func(o *Options) { o.Runs = 0 }, "--runs must be at least 1"},
		"unknown scenario-runs":      {func(o *Options) { o.ScenarioRuns = map[string]int{"chaos": 1} }, `--scenario-runs: unknown scenario "chaos"`},
		"scenario-runs zero":         {func(o *Options) { o.ScenarioRuns = map[string]int{ScenarioFailback: 0} }, "failback must run at least once"},
		"extra pid is a controller":  {func(o *Options) { o.Controllers = map[string]int{"cm": 1}; o.ExtraProcesses = map[string]int{"cm": 2} }, "also a controller process"},
		"failback n zero":            {func(o *Options) { o.FailbackN = 0 }, "--failback-n must be at least 1"},
		"propagation member unknown": {func(o *Options) { o.PropagationMember = "member9" }, `--propagation-member "member9" is not a member`},
		"failback window fraction":   {func(o *Options) { o.FailbackWindow = 1500 * time.Millisecond }, "whole seconds"},
		"failback window zero":       {func(o *Options) { o.FailbackWindow = 0 }, "whole seconds"},
		"failback window past int32": {func(o *Options) { o.FailbackWindow = (1 << 31) * time.Second }, "whole seconds"},
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
