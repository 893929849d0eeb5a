package queue

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var start = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// fixture is a queue named "q" on a fake clock, its Registry gathered
// through a Prometheus registry of its own.
type fixture struct {
	t     *testing.T
	clock *clocktesting.FakePassiveClock
	queue *Queue[string]
	prom  *prometheus.Registry
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	reg := newRegistry()
	prom := prometheus.NewRegistry()
	prom.MustRegister(reg)
	c := clocktesting.NewFakePassiveClock(start)
	q := newWithClock[string]("q", workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Second), c, reg)
	t.Cleanup(func() {
		if !q.ShuttingDown() {
			q.ShutDown()
		}
	})
	return &fixture{t: t, clock: c, queue: q, prom: prom}
}

// step moves the fake clock on by d.
func (f *fixture) step(d time.Duration) { f.clock.SetTime(f.clock.Now().Add(d)) }

// get takes the next item, failing the test when none comes in time.
func (f *fixture) get() (string, int) {
	f.t.Helper()
	type got struct {
		item     string
		priority int
	}
	ch := make(chan got, 1)
	go func() {
		item, priority, _ := f.queue.GetWithPriority()
		ch <- got{item, priority}
	}()
	select {
	case g := <-ch:
		return g.item, g.priority
	case <-time.After(10 * time.Second):
		f.t.Fatal("no item handed out within 10s")
		return "", 0
	}
}

// metrics gathers the queue's metrics: each family's value (a counter's
// or gauge's, a histogram's sum) by name and label "priority" when there
// is one, and each histogram's count.
func (f *fixture) metrics() (values map[string]float64, counts map[string]uint64) {
	f.t.Helper()
	families, err := f.prom.Gather()
	if err != nil {
		f.t.Fatalf("gathering: %v", err)
	}
	values, counts = map[string]float64{}, map[string]uint64{}
	for _, fam := range families {
		for _, m := range fam.GetMetric() {
			key := fam.GetName()
			for _, l := range m.GetLabel() {
				switch {
				case l.GetName() == "priority":
					key += "{priority=" + l.GetValue() + "}"
				case l.GetValue() != "q":
					f.t.Errorf("%s: label %s=%q, want q", fam.GetName(), l.GetName(), l.GetValue())
				}
			}
			switch fam.GetType() {
			case dto.MetricType_COUNTER:
				values[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				values[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				values[key] = m.GetHistogram().GetSampleSum()
				counts[key] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	return values, counts
}

func TestQueueTimesWaitAndWork(t *testing.T) {
	f := newFixture(t)
	f.queue.Add("a")
	f.queue.Add("a") // the same item again is one add
	f.step(2 * time.Second)
	if v, _ := f.metrics(); v["workqueue_depth{priority=0}"] != 1 || v["workqueue_adds_total"] != 1 {
		t.Errorf("before Get: depth %v, adds %v; want 1 and 1", v["workqueue_depth{priority=0}"], v["workqueue_adds_total"])
	}
	if item, _ := f.get(); item != "a" {
		t.Fatalf("got %q, want a", item)
	}
	f.step(3 * time.Second)
	v, c := f.metrics()
	if v["workqueue_depth{priority=0}"] != 0 {
		t.Errorf("depth %v after Get, want 0", v["workqueue_depth{priority=0}"])
	}
	if v["workqueue_queue_duration_seconds"] != 2 || c["workqueue_queue_duration_seconds"] != 1 {
		t.Errorf("queue duration sum %v count %d, want 2s once", v["workqueue_queue_duration_seconds"], c["workqueue_queue_duration_seconds"])
	}
	if v["workqueue_unfinished_work_seconds"] != 3 || v["workqueue_longest_running_processor_seconds"] != 3 {
		t.Errorf("unfinished %v, longest %v while processing; want 3 and 3", v["workqueue_unfinished_work_seconds"], v["workqueue_longest_running_processor_seconds"])
	}
	f.queue.Done("a")
	v, c = f.metrics()
	if v["workqueue_work_duration_seconds"] != 3 || c["workqueue_work_duration_seconds"] != 1 {
		t.Errorf("work duration sum %v count %d, want 3s once", v["workqueue_work_duration_seconds"], c["workqueue_work_duration_seconds"])
	}
	if v["workqueue_unfinished_work_seconds"] != 0 || v["workqueue_longest_running_processor_seconds"] != 0 {
		t.Errorf("unfinished %v, longest %v after Done; want 0", v["workqueue_unfinished_work_seconds"], v["workqueue_longest_running_processor_seconds"])
	}
	f.queue.Add("a") // a new wait after the first was handed out
	if v, _ := f.metrics(); v["workqueue_adds_total"] != 2 {
		t.Errorf("adds %v, want 2", v["workqueue_adds_total"])
	}
}

func TestQueueCountsDelayedItemsOnceDue(t *testing.T) {
	f := newFixture(t)
	if v, _ := f.metrics(); v["workqueue_depth{priority=0}"] != 0 {
		t.Errorf("depth of a new queue %v, want 0", v["workqueue_depth{priority=0}"])
	} else if _, ok := v["workqueue_depth{priority=0}"]; !ok {
		t.Error("a new queue has no depth series at priority 0")
	}
	f.queue.AddAfter("later", time.Hour)
	v, _ := f.metrics()
	if v["workqueue_depth{priority=0}"] != 0 || v["workqueue_retries_total"] != 1 {
		t.Errorf("depth %v, retries %v before it is due; want 0 and 1", v["workqueue_depth{priority=0}"], v["workqueue_retries_total"])
	}
	// An earlier add wins, as in the queue itself.
	f.queue.AddAfter("later", time.Minute)
	f.step(time.Minute)
	if v, _ := f.metrics(); v["workqueue_depth{priority=0}"] != 1 {
		t.Errorf("depth %v once due, want 1", v["workqueue_depth{priority=0}"])
	}
}

func TestQueueDepthByPriority(t *testing.T) {
	f := newFixture(t)
	f.queue.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(-100)}, "low1", "low2")
	f.queue.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(10)}, "high")
	v, _ := f.metrics()
	if v["workqueue_depth{priority=-100}"] != 2 || v["workqueue_depth{priority=10}"] != 1 {
		t.Errorf("depth by priority %v, want -100: 2, 10: 1", v)
	}
	if item, priority := f.get(); item != "high" || priority != 10 {
		t.Errorf("got %q at %d, want high at 10", item, priority)
	}
	if v, _ := f.metrics(); v["workqueue_depth{priority=10}"] != 0 {
		t.Errorf("depth at 10 after Get %v, want a 0 series", v["workqueue_depth{priority=10}"])
	}
}

func TestQueueAsksTheRateLimiterOnce(t *testing.T) {
	f := newFixture(t)
	f.queue.AddRateLimited("x")
	if n := f.queue.NumRequeues("x"); n != 1 {
		t.Errorf("NumRequeues %d after one rate-limited add, want 1", n)
	}
	if item, _ := f.get(); item != "x" {
		t.Fatalf("got %q, want x", item)
	}
	if v, _ := f.metrics(); v["workqueue_retries_total"] != 1 {
		t.Errorf("retries %v, want 1", v["workqueue_retries_total"])
	}
	f.queue.Forget("x")
	if n := f.queue.NumRequeues("x"); n != 0 {
		t.Errorf("NumRequeues %d after Forget, want 0", n)
	}
}

func TestQueueMetricsLeaveWithTheQueue(t *testing.T) {
	f := newFixture(t)
	f.queue.Add("a")
	f.queue.ShutDown()
	f.queue.Add("b") // ignored once shut down
	if v, _ := f.metrics(); len(v) != 0 {
		t.Errorf("metrics after ShutDown: %v, want none", v)
	}
	if _, _, shutdown := f.queue.GetWithPriority(); !shutdown {
		t.Error("GetWithPriority after ShutDown did not report the shutdown")
	}
}

func TestQueueMetricsServedBesideControllerRuntimes(t *testing.T) {
	// The queues of New are collected by controller-runtime's registry,
	// where its own queue metrics are registered under the same names: a
	// help text or label that differs would make every scrape fail.
	q := New("wired", nil)
	defer q.ShutDown()
	q.Add(reconcile.Request{})
	own := priorityqueue.New[string]("controller-runtime-queue")
	defer own.ShutDown()
	own.Add("a")
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering controller-runtime's registry: %v", err)
	}
	seen := map[string]bool{}
	for _, fam := range families {
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" {
					seen[fam.GetName()+" "+l.GetValue()] = true
				}
			}
		}
	}
	for _, want := range []string{"workqueue_adds_total wired", "workqueue_depth wired", "workqueue_unfinished_work_seconds wired", "workqueue_adds_total controller-runtime-queue"} {
		if !seen[want] {
			t.Errorf("no %s in the gathered metrics", want)
		}
	}
}
