package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func sampleReport() *Report {
	runs := []*RunResult{{Index: 1, Namespace: "bench-prop-abcde", Duration: 12 * time.Second}, {Index: 2, Duration: 11 * time.Second, Error: "timed out | badly"}}
	for i, v := range []float64{0.5, 1.5, 2.5} {
		runs[0].Add("member", "prop-000"+string(rune('0'+i)), v)
	}
	runs[1].Add("member", "prop-0000", 3.5)
	runs[0].Add("wall", "", 2.9)
	runs[1].Add("wall", "", 3.1)
	specs := []FigureSpec{
		{ID: "member", Name: "create → member", Unit: UnitSeconds, Target: &Target{Stat: "p99", Limit: 2, Reference: "Karmada 10.05 s"}},
		{ID: "wall", Name: "wall", Unit: UnitSeconds, Target: &Target{Stat: "p50", Limit: 3}},
		{ID: "none", Name: "never measured", Unit: UnitSeconds, Target: &Target{Stat: "max", Limit: 1}},
		{ID: "rss", Name: "rss", Unit: UnitMiB},
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return &Report{
		Started: start, Finished: start.Add(90 * time.Second),
		Machine:  Machine{NumCPU: 2, MemoryBytes: 24 << 30, Kernel: "6.1", OS: "linux", Arch: "amd64", GoVersion: "go1.26"},
		Versions: map[string]string{"lifeboat": "v0.1"},
		Flags:    map[string]string{"runs": "2", "n": "3"},
		Scenarios: []*ScenarioResult{
			{Name: "propagation", Settings: map[string]string{"n": "3"}, Runs: runs, Figures: Pool(specs, runs)},
			{Name: "footprint", Skipped: "no controller processes"},
		},
	}
}

func TestPool(t *testing.T) {
	rep := sampleReport()
	figs := rep.Scenarios[0].Figures
	byID := map[string]*Figure{}
	for _, f := range figs {
		byID[f.ID] = f
	}
	cases := map[string]struct {
		n       int
		max     float64
		wantMet *bool
	}{
		"member": {n: 4, max: 3.5, wantMet: ptrBool(false)}, // p99 3.5 > 2
		"wall":   {n: 2, max: 3.1, wantMet: ptrBool(true)},  // p50 2.9 <= 3
		"none":   {n: 0, wantMet: nil},
		"rss":    {n: 0, wantMet: nil},
	}
	for id, tc := range cases {
		t.Run(id, func(t *testing.T) {
			f := byID[id]
			if f.Summary.N != tc.n || f.Summary.Max != tc.max {
				t.Errorf("summary %+v, want n=%d max=%v", f.Summary, tc.n, tc.max)
			}
			if (f.Met == nil) != (tc.wantMet == nil) || (f.Met != nil && *f.Met != *tc.wantMet) {
				t.Errorf("met = %v, want %v", f.Met, tc.wantMet)
			}
		})
	}
}

func ptrBool(b bool) *bool { return &b }

// Each run's own statistic (the target's, else p50) is kept, so that the
// spread between runs can be told.
func TestPoolKeepsEachRunsStatistic(t *testing.T) {
	byID := map[string]*Figure{}
	for _, f := range sampleReport().Scenarios[0].Figures {
		byID[f.ID] = f
	}
	cases := map[string]struct {
		stat string
		want []float64
	}{
		"member": {stat: "p99", want: []float64{2.5, 3.5}},
		"wall":   {stat: "p50", want: []float64{2.9, 3.1}},
		"none":   {stat: "max"},
		"rss":    {stat: "p50"},
	}
	for id, tc := range cases {
		f := byID[id]
		if f.PerRunStat != tc.stat || !slices.Equal(f.PerRun, tc.want) {
			t.Errorf("%s: per run %s %v, want %s %v", id, f.PerRunStat, f.PerRun, tc.stat, tc.want)
		}
	}
}

func TestMarkdown(t *testing.T) {
	var b strings.Builder
	sampleReport().Markdown(&b)
	md := b.String()
	for _, want := range []string{
		"Machine: 2 CPUs, 24.0 GiB memory, linux/amd64 kernel 6.1, go1.26.",
		"Flags: `n=3`, `runs=2`.",
		"| propagation | create → member | s | 4 | 1.500 | 3.500 | 3.500 | 3.500 | p99 ≤ 2.000 (Karmada 10.05 s) | **no** |",
		"| propagation | wall | s | 2 | 2.900 | 3.100 | 3.100 | 3.100 | p50 ≤ 3.000 | yes |",
		"| propagation | never measured | s | 0 | | | | | max ≤ 1.000 | |",
		"| footprint | skipped: no controller processes |",
		"| propagation | create → member | p99 | 2.500, 3.500 | 1.000 |",
		"| propagation | wall | p50 | 2.900, 3.100 | 0.200 |",
		"- run 1 (namespace bench-prop-abcde): 12s, ok",
		`- run 2: 11s, FAILED: timed out | badly`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestWriteFilesKeepsRawValues(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if err := sampleReport().WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	vals := back.Scenarios[0].Runs[0].Values["member"]
	if len(vals) != 3 || vals[2].Object != "prop-0002" || vals[2].V != 2.5 {
		t.Errorf("raw values after a JSON round trip: %+v", vals)
	}
	if md, err := os.ReadFile(filepath.Join(dir, "report.md")); err != nil || !strings.HasPrefix(string(md), "# Lifeboat bench report") {
		t.Errorf("report.md: %v %q", err, md)
	}
}

// A report without targets (another control plane's) has no Target and
// Met columns.
func TestMarkdownWithoutTargets(t *testing.T) {
	rep := sampleReport()
	for _, s := range rep.Scenarios {
		for _, f := range s.Figures {
			f.Target, f.Met = nil, nil
		}
	}
	var b strings.Builder
	rep.Markdown(&b)
	md := b.String()
	for _, want := range []string{
		"| Scenario | Figure | Unit | n | p50 | p90 | p99 | max |\n",
		"| propagation | create → member | s | 4 | 1.500 | 3.500 | 3.500 | 3.500 |\n",
		"| propagation | never measured | s | 0 | | | | |\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Target") || strings.Contains(md, "Met") {
		t.Errorf("Markdown without targets still names them:\n%s", md)
	}
}
