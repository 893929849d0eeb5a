package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Where a scenario's time goes: the CPU each process spent, and how long
// each controller's work items waited in its queue, between two moments.

// selfProcess names the bench's own process in the CPU accounting.
const selfProcess = "lifeboat bench (this process)"

// accountedProcesses are the processes whose CPU is accounted: the
// controllers, the extra processes, the environment's and the bench's own.
func (b *Bench) accountedProcesses() map[string]int {
	out := map[string]int{selfProcess: os.Getpid()}
	if b.Options.EnvProcesses != nil {
		maps.Copy(out, b.Options.EnvProcesses())
	}
	maps.Copy(out, b.Options.ExtraProcesses)
	maps.Copy(out, b.Options.Controllers)
	return out
}

// cpuSample is one process's CPU time so far.
type cpuSample struct {
	PID     int
	Seconds float64
}

// sampleCPU reads each accounted process's CPU time so far; a process
// that cannot be read (stopped) is left out.
func (b *Bench) sampleCPU() map[string]cpuSample {
	out := map[string]cpuSample{}
	for name, pid := range b.accountedProcesses() {
		if s, err := ReadProc(pid); err == nil {
			out[name] = cpuSample{PID: pid, Seconds: s.CPUSeconds}
		}
	}
	return out
}

// cpuUse is the CPU one process spent between two samples.
type cpuUse struct {
	Name    string
	Seconds float64
}

// cpuBetween returns the CPU each process sampled both times spent in
// between, most first, and their total. A name whose PID changed (a
// process started again) is left out: what its first process spent after
// the first sample is not known.
func cpuBetween(before, after map[string]cpuSample) ([]cpuUse, float64) {
	var uses []cpuUse
	total := 0.0
	for name, b := range before {
		a, ok := after[name]
		if !ok || a.PID != b.PID || a.Seconds < b.Seconds {
			continue
		}
		d := a.Seconds - b.Seconds
		uses = append(uses, cpuUse{Name: name, Seconds: d})
		total += d
	}
	slices.SortFunc(uses, func(x, y cpuUse) int { return mostFirst(x.Seconds, y.Seconds, x.Name, y.Name) })
	return uses, total
}

// mostFirst orders the larger value first, equal values by name.
func mostFirst(a, b float64, aName, bName string) int {
	if c := cmp.Compare(b, a); c != 0 {
		return c
	}
	return strings.Compare(aName, bName)
}

// membersCPU returns the CPU that the members' own processes spent among
// uses: those named after a member and a dash ("member1-apiserver"), as
// the local environment names its components. ok is false when none of
// them is accounted, as on a control plane whose members the bench cannot
// see.
func membersCPU(uses []cpuUse, members []string) (seconds float64, ok bool) {
	for _, u := range uses {
		for _, m := range members {
			if strings.HasPrefix(u.Name, m+"-") {
				seconds += u.Seconds
				ok = true
				break
			}
		}
	}
	return seconds, ok
}

// describeCPU says, for a run's notes, which processes spent the CPU
// between two samples: the busiest first, with their share, those under
// 1 % left out.
func describeCPU(what string, uses []cpuUse, total float64) string {
	if total <= 0 {
		return what + ": no CPU time measured"
	}
	var parts []string
	for _, u := range uses {
		share := 100 * u.Seconds / total
		if share < 1 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1f (%.0f%%)", u.Name, u.Seconds, share))
	}
	return fmt.Sprintf("%s: %.1f CPU-s, %s", what, total, strings.Join(parts, ", "))
}

// queueStats are one controller's work-queue totals so far, from
// controller-runtime's workqueue metrics: the time its items waited in the
// queue and the time its reconciles took.
type queueStats struct {
	WaitSum, WaitCount, WorkSum, WorkCount float64
}

// queueStatsOf reads every controller's queueStats from a Prometheus text
// exposition: the workqueue_queue_duration_seconds and
// workqueue_work_duration_seconds histograms, by their name label.
func queueStatsOf(exposition string) (map[string]queueStats, error) {
	fams, err := metricFamilies(exposition)
	if err != nil {
		return nil, err
	}
	out := map[string]queueStats{}
	for _, m := range []struct {
		family     string
		sum, count func(*queueStats) *float64
	}{
		{"workqueue_queue_duration_seconds", func(q *queueStats) *float64 { return &q.WaitSum }, func(q *queueStats) *float64 { return &q.WaitCount }},
		{"workqueue_work_duration_seconds", func(q *queueStats) *float64 { return &q.WorkSum }, func(q *queueStats) *float64 { return &q.WorkCount }},
	} {
		for _, sample := range fams[m.family].GetMetric() {
			name, ok := labelsOf(sample)["name"]
			h := sample.GetHistogram()
			if !ok || h == nil {
				continue
			}
			q := out[name]
			*m.sum(&q) += h.GetSampleSum()
			*m.count(&q) += float64(h.GetSampleCount())
			out[name] = q
		}
	}
	return out, nil
}

// describeQueues says, for a run's notes, how long each controller's items
// waited in its queue between two readings, and how long its reconciles
// took: the longest waits first, at most top of them.
func describeQueues(what string, before, after map[string]queueStats, top int) string {
	type row struct {
		name             string
		n, wait, workAvg float64
	}
	var rows []row
	var reset []string
	for name, a := range after {
		b := before[name]
		n := a.WaitCount - b.WaitCount
		if n < 0 || a.WaitSum < b.WaitSum || a.WorkCount < b.WorkCount || a.WorkSum < b.WorkSum {
			// The histograms start again when they hold too many native
			// buckets (at most once an hour): what the window held is lost.
			reset = append(reset, name)
			continue
		}
		if n == 0 {
			continue
		}
		work := 0.0
		if c := a.WorkCount - b.WorkCount; c > 0 {
			work = (a.WorkSum - b.WorkSum) / c
		}
		rows = append(rows, row{name: name, n: n, wait: (a.WaitSum - b.WaitSum) / n, workAvg: work})
	}
	slices.SortFunc(rows, func(x, y row) int { return mostFirst(x.wait, y.wait, x.name, y.name) })
	if len(rows) > top {
		rows = rows[:top]
	}
	parts := make([]string, 0, len(rows))
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%s %.2f s wait, %.0f ms work, %.0f items", r.name, r.wait, 1000*r.workAvg, r.n))
	}
	out := what + " (mean per item): " + strings.Join(parts, "; ")
	if len(parts) == 0 {
		out = what + ": no work queued"
	}
	if len(reset) > 0 {
		slices.Sort(reset)
		out += fmt.Sprintf("; not measured, their metrics started again during the window: %s", strings.Join(reset, ", "))
	}
	return out
}

// metricFamilies parses a Prometheus text exposition.
func metricFamilies(exposition string) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(exposition))
	if err != nil {
		return nil, fmt.Errorf("reading the metrics: %w", err)
	}
	return fams, nil
}

// labelsOf returns a sample's labels.
func labelsOf(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// eachValue calls fn with the labels and value of each sample of the
// counter, gauge or untyped metric family in a Prometheus text exposition.
func eachValue(exposition, family string, fn func(labels map[string]string, v float64)) error {
	fams, err := metricFamilies(exposition)
	if err != nil {
		return err
	}
	for _, m := range fams[family].GetMetric() {
		switch {
		case m.Counter != nil:
			fn(labelsOf(m), m.GetCounter().GetValue())
		case m.Gauge != nil:
			fn(labelsOf(m), m.GetGauge().GetValue())
		case m.Untyped != nil:
			fn(labelsOf(m), m.GetUntyped().GetValue())
		}
	}
	return nil
}

// sumByLabel sums the values of a counter's (or gauge's) samples in a
// Prometheus text exposition by the value of one label; samples without it
// are left out.
func sumByLabel(exposition, family, label string) (map[string]float64, error) {
	out := map[string]float64{}
	err := eachValue(exposition, family, func(labels map[string]string, v float64) {
		if key, ok := labels[label]; ok {
			out[key] += v
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scrapeMetrics reads the controller manager's metrics endpoint.
func (b *Bench) scrapeMetrics(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.Options.ControllerMetricsURL, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("reading the controller manager's metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return "", fmt.Errorf("reading the controller manager's metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("reading the controller manager's metrics: %s", resp.Status)
	}
	return string(body), nil
}

// scrapeQueues reads every controller's queueStats; nil when there is no
// metrics endpoint or it cannot be read.
func (b *Bench) scrapeQueues(ctx context.Context) map[string]queueStats {
	if b.Options.ControllerMetricsURL == "" {
		return nil
	}
	body, err := b.scrapeMetrics(ctx)
	if err != nil {
		b.logf("work queues not measured: %v", err)
		return nil
	}
	q, err := queueStatsOf(body)
	if err != nil {
		b.logf("work queues not measured: %v", err)
		return nil
	}
	return q
}
