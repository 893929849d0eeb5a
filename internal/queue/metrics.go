package queue

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The metrics keep controller-runtime's names, help texts, labels and
// buckets, so dashboards and `lifeboat bench` read them as before.
const subsystem = ctrlmetrics.WorkQueueSubsystem

var (
	depthDesc = prometheus.NewDesc(prometheus.BuildFQName("", subsystem, ctrlmetrics.DepthKey),
		"Current depth of workqueue by workqueue and priority", []string{"name", "controller", "priority"}, nil)
	unfinishedDesc = prometheus.NewDesc(prometheus.BuildFQName("", subsystem, ctrlmetrics.UnfinishedWorkKey),
		"How many seconds of work has been done that "+
			"is in progress and hasn't been observed by work_duration. Large "+
			"values indicate stuck threads. One can deduce the number of stuck "+
			"threads by observing the rate at which this increases.", []string{"name", "controller"}, nil)
	longestDesc = prometheus.NewDesc(prometheus.BuildFQName("", subsystem, ctrlmetrics.LongestRunningProcessorKey),
		"How many seconds has the longest running "+
			"processor for workqueue been running.", []string{"name", "controller"}, nil)
)

// maxPriorities bounds the depth's priority label values per queue; more
// distinct priorities are summed under one value, as controller-runtime
// does.
const (
	maxPriorities     = 25
	priorityOverLimit = "exceeded_cardinality_limit"
)

// series is one queue's counters and histograms, and the priorities its
// depth has been reported for.
type series struct {
	name                  string
	adds, retries         prometheus.Counter
	latency, workDuration prometheus.Histogram

	mu   sync.Mutex
	seen []int
}

func newSeries(name string) *series {
	labels := prometheus.Labels{"name": name, "controller": name}
	histogram := func(key, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem:                       subsystem,
			Name:                            key,
			Help:                            help,
			ConstLabels:                     labels,
			Buckets:                         prometheus.ExponentialBuckets(10e-9, 10, 12),
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: 1 * time.Hour,
		})
	}
	return &series{
		name: name,
		// The depth at priority 0 is reported from the start, as for
		// controller-runtime's other queues, so that an idle queue has a
		// depth series.
		seen: []int{0},
		adds: prometheus.NewCounter(prometheus.CounterOpts{Subsystem: subsystem, Name: ctrlmetrics.AddsKey,
			Help: "Total number of adds handled by workqueue", ConstLabels: labels}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Subsystem: subsystem, Name: ctrlmetrics.RetriesKey,
			Help: "Total number of retries handled by workqueue", ConstLabels: labels}),
		latency:      histogram(ctrlmetrics.QueueLatencyKey, "How long in seconds an item stays in workqueue before being requested"),
		workDuration: histogram(ctrlmetrics.WorkDurationKey, "How long in seconds processing an item from workqueue takes."),
	}
}

// depthLabels returns the priority label values to report depth under,
// with depth summed per label value: every priority seen so far (a
// priority whose items are gone shows 0, as a gauge that went down would).
func (s *series) depthLabels(depth map[int]int) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range depth {
		if !slices.Contains(s.seen, p) {
			s.seen = append(s.seen, p)
		}
	}
	out := map[string]int{}
	for _, p := range s.seen {
		label := strconv.Itoa(p)
		if len(s.seen) > maxPriorities {
			label = priorityOverLimit
		}
		out[label] += depth[p]
	}
	return out
}

// metered is what the Registry reads of a queue.
type metered interface {
	series() *series
	snapshot() snapshot
}

// Registry collects the metrics of the queues that are running. It is a
// Prometheus collector whose metrics are known only when collected (an
// unchecked collector), so that the families controller-runtime registers
// under the same names stay registered beside it.
type Registry struct {
	mu     sync.Mutex
	queues []metered
}

// newRegistry returns an empty Registry; register it with a Prometheus
// registry to export what it collects.
func newRegistry() *Registry { return &Registry{} }

var (
	defaultOnce sync.Once
	// defaultReg is registered with controller-runtime's metrics registry,
	// which is process-wide too.
	defaultReg *Registry
)

// defaultRegistry returns the Registry that controller-runtime's metrics
// registry collects, registering it on first use.
func defaultRegistry() *Registry {
	defaultOnce.Do(func() {
		defaultReg = newRegistry()
		ctrlmetrics.Registry.MustRegister(defaultReg)
	})
	return defaultReg
}

func (r *Registry) add(q metered) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queues = append(r.queues, q)
}

func (r *Registry) remove(q metered) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queues = slices.DeleteFunc(r.queues, func(x metered) bool { return x == q })
}

// Describe describes nothing: the collector is unchecked.
func (r *Registry) Describe(chan<- *prometheus.Desc) {}

// Collect sends each running queue's metrics, the gauges computed now.
func (r *Registry) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	queues := slices.Clone(r.queues)
	r.mu.Unlock()
	for _, q := range queues {
		s := q.series()
		ch <- s.adds
		ch <- s.retries
		ch <- s.latency
		ch <- s.workDuration
		now := q.snapshot()
		for priority, n := range s.depthLabels(now.depth) {
			ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(n), s.name, s.name, priority)
		}
		ch <- prometheus.MustNewConstMetric(unfinishedDesc, prometheus.GaugeValue, now.unfinished, s.name, s.name)
		ch <- prometheus.MustNewConstMetric(longestDesc, prometheus.GaugeValue, now.longest, s.name, s.name)
	}
}
