package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Units of figures.
const (
	UnitSeconds   = "s"
	UnitMiB       = "MiB"
	UnitCPUPerMin = "CPU-s/min"
	UnitCPU       = "CPU-s"
	UnitWrites    = "writes"
	UnitPerMinute = "/min"
	UnitBindings  = "bindings"
	UnitRequests  = "requests"
)

// Report is everything one `lifeboat bench` measured: the machine, the
// versions and flags, and per scenario every raw value and its summary.
type Report struct {
	Started   time.Time         `json:"started"`
	Finished  time.Time         `json:"finished"`
	Machine   Machine           `json:"machine"`
	Versions  map[string]string `json:"versions"`
	Flags     map[string]string `json:"flags"`
	Scenarios []*ScenarioResult `json:"scenarios"`
}

// Machine is what the figures depend on.
type Machine struct {
	NumCPU int `json:"nproc"`
	// CPUModel is the first processor's model name in /proc/cpuinfo.
	CPUModel    string `json:"cpuModel,omitempty"`
	MemoryBytes uint64 `json:"memoryBytes"`
	Kernel      string `json:"kernel"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	GoVersion   string `json:"goVersion"`
	// Load is what the machine did while the bench ran; absent when /proc
	// could not say.
	Load *MachineLoad `json:"load,omitempty"`
}

// ScenarioResult is one scenario's runs and figures.
type ScenarioResult struct {
	Name string `json:"name"`
	// Settings are the scenario's parameters (N, toleration, member...).
	Settings map[string]string `json:"settings,omitempty"`
	Runs     []*RunResult      `json:"runs"`
	Figures  []*Figure         `json:"figures"`
	// Skipped says why the scenario did not run.
	Skipped string `json:"skipped,omitempty"`
}

// RunResult is one run of a scenario.
type RunResult struct {
	Index     int           `json:"index"`
	Namespace string        `json:"namespace,omitempty"`
	Started   time.Time     `json:"started"`
	Duration  time.Duration `json:"durationNanoseconds"`
	// Values are the raw values of each figure (by figure ID), with the
	// object each belongs to where the figure is per object.
	Values map[string][]Value `json:"values"`
	// Notes are facts worth keeping (the member that failed over, ...).
	Notes []string `json:"notes,omitempty"`
	Error string   `json:"error,omitempty"`
}

// Value is one raw measurement.
type Value struct {
	Object string  `json:"object,omitempty"`
	V      float64 `json:"value"`
}

// Add appends a value of figure id.
func (r *RunResult) Add(id, object string, v float64) {
	if r.Values == nil {
		r.Values = map[string][]Value{}
	}
	r.Values[id] = append(r.Values[id], Value{Object: object, V: v})
}

// Figure is one measured quantity pooled over the runs.
type Figure struct {
	ID      string  `json:"id"`
	Name    string  `json:"name"`
	Unit    string  `json:"unit"`
	Summary Summary `json:"summary"`
	Target  *Target `json:"target,omitempty"`
	// Met is whether Target's statistic is within its limit (nil without a
	// target or without values).
	Met *bool `json:"met,omitempty"`
	// PerRun is PerRunStat of each run's own values, in run order (runs
	// without values left out): how far apart the runs are.
	PerRun     []float64 `json:"perRun,omitempty"`
	PerRunStat string    `json:"perRunStat,omitempty"`
}

// Target is a goal for one statistic of a figure.
type Target struct {
	// Stat is the statistic compared: p50, p90, p99 or max.
	Stat string `json:"stat"`
	// Limit is the largest acceptable value.
	Limit float64 `json:"limit"`
	// Reference is the figure being compared with (Karmada's).
	Reference string `json:"reference,omitempty"`
}

// FigureSpec names a figure and its target before it is measured.
type FigureSpec struct {
	ID     string
	Name   string
	Unit   string
	Target *Target
}

// Pool builds the figures of specs from the values of every run, in the
// order of specs.
func Pool(specs []FigureSpec, runs []*RunResult) []*Figure {
	var out []*Figure
	for _, spec := range specs {
		var vs []float64
		for _, r := range runs {
			for _, v := range r.Values[spec.ID] {
				vs = append(vs, v.V)
			}
		}
		f := &Figure{ID: spec.ID, Name: spec.Name, Unit: spec.Unit, Summary: Summarize(vs), Target: spec.Target}
		f.PerRunStat = "p50"
		if spec.Target != nil {
			f.PerRunStat = spec.Target.Stat
		}
		for _, r := range runs {
			var own []float64
			for _, v := range r.Values[spec.ID] {
				own = append(own, v.V)
			}
			if len(own) == 0 {
				continue
			}
			if got, ok := Summarize(own).Stat(f.PerRunStat); ok {
				f.PerRun = append(f.PerRun, got)
			}
		}
		if spec.Target != nil && len(vs) > 0 {
			got, _ := f.Summary.Stat(spec.Target.Stat)
			met := got <= spec.Target.Limit
			f.Met = &met
		}
		out = append(out, f)
	}
	return out
}

// WriteFiles writes DIR/report.json and DIR/report.md.
func (r *Report) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating report directory: %w", err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing report.json: %w", err)
	}
	var md strings.Builder
	r.Markdown(&md)
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("writing report.md: %w", err)
	}
	return nil
}

// Markdown renders the report: the machine, versions and flags, one table
// of every figure with its target, and the runs.
func (r *Report) Markdown(w io.Writer) {
	fmt.Fprintf(w, "# Lifeboat bench report\n\n")
	fmt.Fprintf(w, "Started %s, took %s.\n\n", r.Started.UTC().Format(time.RFC3339), r.Finished.Sub(r.Started).Round(time.Second))
	m := r.Machine
	cpus := fmt.Sprintf("%d CPUs", m.NumCPU)
	if m.CPUModel != "" {
		cpus += " (" + m.CPUModel + ")"
	}
	fmt.Fprintf(w, "Machine: %s, %.1f GiB memory, %s/%s kernel %s, %s",
		cpus, float64(m.MemoryBytes)/(1<<30), m.OS, m.Arch, m.Kernel, m.GoVersion)
	if m.Load != nil {
		fmt.Fprintf(w, "; %s", m.Load)
	}
	fmt.Fprintf(w, ".\n\n")
	if len(r.Versions) > 0 {
		fmt.Fprintf(w, "Versions: %s.\n\n", joinSorted(r.Versions))
	}
	if len(r.Flags) > 0 {
		fmt.Fprintf(w, "Flags: %s.\n\n", joinSorted(r.Flags))
	}
	targets := r.hasTargets()
	if targets {
		fmt.Fprintf(w, "| Scenario | Figure | Unit | n | p50 | p90 | p99 | max | Target | Met |\n")
		fmt.Fprintf(w, "|---|---|---|---:|---:|---:|---:|---:|---|---|\n")
	} else {
		fmt.Fprintf(w, "| Scenario | Figure | Unit | n | p50 | p90 | p99 | max |\n")
		fmt.Fprintf(w, "|---|---|---|---:|---:|---:|---:|---:|\n")
	}
	row := func(cells ...string) {
		if !targets {
			cells = cells[:len(cells)-2]
		}
		line := "|"
		for _, c := range cells {
			if c == "" {
				line += " |"
			} else {
				line += " " + c + " |"
			}
		}
		fmt.Fprintln(w, line)
	}
	for _, s := range r.Scenarios {
		if s.Skipped != "" {
			row(s.Name, "skipped: "+escapeCell(s.Skipped), "", "", "", "", "", "", "", "")
			continue
		}
		for _, f := range s.Figures {
			sum := f.Summary
			if sum.N == 0 {
				row(s.Name, escapeCell(f.Name), f.Unit, "0", "", "", "", "", targetCell(f), "")
				continue
			}
			row(s.Name, escapeCell(f.Name), f.Unit, strconv.Itoa(sum.N),
				formatValue(sum.P50, f.Unit), formatValue(sum.P90, f.Unit), formatValue(sum.P99, f.Unit), formatValue(sum.Max, f.Unit),
				targetCell(f), metCell(f))
		}
	}
	fmt.Fprintln(w)
	if targets {
		fmt.Fprintf(w, "Percentiles are nearest-rank over every run's values; Met compares the target's statistic with its limit.\n\n")
	} else {
		fmt.Fprintf(w, "Percentiles are nearest-rank over every run's values.\n\n")
	}
	r.spreadMarkdown(w)
	for _, s := range r.Scenarios {
		if len(s.Runs) == 0 {
			continue
		}
		fmt.Fprintf(w, "## %s\n\n", s.Name)
		if len(s.Settings) > 0 {
			fmt.Fprintf(w, "Settings: %s.\n\n", joinSorted(s.Settings))
		}
		for _, run := range s.Runs {
			status := "ok"
			if run.Error != "" {
				status = "FAILED: " + run.Error
			}
			fmt.Fprintf(w, "- run %d", run.Index)
			if run.Namespace != "" {
				fmt.Fprintf(w, " (namespace %s)", run.Namespace)
			}
			fmt.Fprintf(w, ": %s, %s", run.Duration.Round(100*time.Millisecond), status)
			for _, n := range run.Notes {
				fmt.Fprintf(w, "; %s", n)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
}

// spreadMarkdown writes, for every figure measured in more than one run,
// each run's statistic and the spread between them (max − min), so that a
// figure near its target can be told from the noise between runs.
func (r *Report) spreadMarkdown(w io.Writer) {
	header := false
	for _, s := range r.Scenarios {
		for _, f := range s.Figures {
			if len(f.PerRun) < 2 {
				continue
			}
			if !header {
				fmt.Fprintf(w, "Spread between runs (each run's own statistic):\n\n")
				fmt.Fprintf(w, "| Scenario | Figure | Statistic | Per run | Spread |\n")
				fmt.Fprintf(w, "|---|---|---|---|---:|\n")
				header = true
			}
			per := make([]string, len(f.PerRun))
			for i, v := range f.PerRun {
				per[i] = formatValue(v, f.Unit)
			}
			spread := slices.Max(f.PerRun) - slices.Min(f.PerRun)
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", s.Name, escapeCell(f.Name), f.PerRunStat, strings.Join(per, ", "), formatValue(spread, f.Unit))
		}
	}
	if header {
		fmt.Fprintln(w)
	}
}

// hasTargets reports whether any figure of the report has a target.
func (r *Report) hasTargets() bool {
	for _, s := range r.Scenarios {
		for _, f := range s.Figures {
			if f.Target != nil {
				return true
			}
		}
	}
	return false
}

func targetCell(f *Figure) string {
	if f.Target == nil {
		return ""
	}
	s := fmt.Sprintf("%s ≤ %s", f.Target.Stat, formatValue(f.Target.Limit, f.Unit))
	if f.Target.Reference != "" {
		s += " (" + escapeCell(f.Target.Reference) + ")"
	}
	return s
}

func metCell(f *Figure) string {
	switch {
	case f.Met == nil:
		return ""
	case *f.Met:
		return "yes"
	default:
		return "**no**"
	}
}

func formatValue(v float64, unit string) string {
	switch unit {
	case UnitMiB:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func escapeCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func joinSorted(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%s", k, m[k]))
	}
	return "`" + strings.Join(parts, "`, `") + "`"
}
