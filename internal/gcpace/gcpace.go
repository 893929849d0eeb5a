// Package gcpace runs Go's garbage collector to a GOGC-like heap goal
// through the soft memory limit, so that a process that allocates little
// is not collected every two minutes regardless.
//
// With GOGC set, the runtime forces a collection whenever two minutes pass
// without one. For a controller manager that holds a large live heap and
// allocates a few megabytes a minute, those forced collections are most of
// what it does at idle: each marks the whole heap. The runtime skips them
// only while GOGC is off, when the memory limit is what starts a
// collection. A Pacer turns GOGC off and keeps the memory limit where the
// goal GOGC would have given lies: after every collection, and every few
// seconds between them, it reads the runtime's memory figures and sets the
// limit again.
//
// The runtime draws its heap goal from the limit by subtracting the memory
// it holds outside the heap's objects and free pages (goroutine stacks, its
// own metadata, and the free room inside partly used spans) and then a
// headroom of 3 %, at least 1 MiB. Limit adds them back, measured at the
// time, so the goal the runtime derives is the GOGC goal.
package gcpace

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/go-logr/logr"
)

// Sample is what the runtime reports about its memory, in bytes.
type Sample struct {
	// HeapLive is the heap the last collection marked live.
	HeapLive uint64
	// StackScan and GlobalsScan are the stacks and globals the collector
	// scans; GOGC's goal counts them with the live heap.
	StackScan   uint64
	GlobalsScan uint64
	// Mapped is all memory the runtime has mapped and not released to the
	// operating system.
	Mapped uint64
	// HeapFree is free heap memory not released to the operating system.
	HeapFree uint64
	// HeapObjects is the memory of heap objects, live or not yet swept.
	HeapObjects uint64
}

// NonHeap is the memory that counts against the limit and that the runtime
// does not count as heap objects or free heap: stacks, metadata, and the
// unused room in partly used spans.
func (s Sample) NonHeap() uint64 {
	used := s.HeapFree + s.HeapObjects
	if used >= s.Mapped {
		return 0
	}
	return s.Mapped - used
}

// minHeapGoal is the smallest goal Limit aims for, as the runtime's own
// minimum heap (4 MiB at GOGC 100) scaled to the percentage.
const minHeapGoal = 4 << 20

// The runtime keeps headroom between the limit's heap goal and the limit:
// headroomPercent of it, and at least minHeadroom
// (memoryLimitHeapGoalHeadroomPercent and memoryLimitMinHeapGoalHeadroom in
// the runtime's pacer).
const (
	headroomPercent = 3
	minHeadroom     = 1 << 20
)

// Limit is the soft memory limit at which the runtime's heap goal equals
// the goal GOGC=percent gives for s, with nonHeap the runtime's memory
// outside the heap's objects and free pages. ceiling, when positive, caps
// the result.
func Limit(s Sample, percent int, nonHeap uint64, ceiling int64) int64 {
	const most = math.MaxInt64
	p := uint64(max(percent, 0))
	scanned := s.HeapLive + s.StackScan + s.GlobalsScan
	if p > 0 && scanned > most/p {
		return capped(most, ceiling)
	}
	goal := s.HeapLive + scanned*p/100
	if least := uint64(minHeapGoal) * p / 100; goal < least {
		goal = least
	}
	// The runtime's goal is room - max(room * headroom / 100, minHeadroom),
	// where room is the limit less nonHeap.
	if goal > most/100 {
		return capped(most, ceiling)
	}
	limit := max(goal*100/(100-headroomPercent), goal+minHeadroom)
	if nonHeap > most-limit {
		return capped(most, ceiling)
	}
	return capped(int64(limit+nonHeap), ceiling)
}

// capped is limit, or ceiling when that is positive and lower.
func capped(limit, ceiling int64) int64 {
	if ceiling > 0 && limit > ceiling {
		return ceiling
	}
	return limit
}

// Pacer keeps the soft memory limit at a GOGC-like goal while it runs.
type Pacer struct {
	// Percent is the GOGC percentage to pace to; Run leaves the collector
	// alone unless it is positive.
	Percent int
	// Ceiling, when positive, is a soft memory limit the pacer never goes
	// above.
	Ceiling int64
	// Interval is how often the limit is set again between collections; it
	// must be positive.
	Interval time.Duration
	// Log receives the pacer's start, or why it leaves the collections to
	// GOGC.
	Log logr.Logger
}

// settle is how long after a collection the runtime's free span room is
// taken as swept: until then, objects the collection found dead still
// count as heap objects, and the free room they leave is not yet seen.
const settle = time.Second

// Run turns GOGC off and keeps the memory limit at the pacer's goal until
// ctx ends; it then sets GOGC back to Percent and the limit to Ceiling (or
// none). It returns when ctx ends.
func (p *Pacer) Run(ctx context.Context) {
	if p.Percent <= 0 || p.Interval <= 0 {
		// A goal at the live heap would collect without pause, and a
		// ticker needs a positive period: leave the collector as it is.
		p.Log.Info("garbage collection left as it is: the pacer needs a positive percentage and interval", "percent", p.Percent, "interval", p.Interval)
		return
	}
	if missing := unsupported(); len(missing) > 0 {
		// Without them the goal would be computed from zeros and the
		// collector would run without pause: leave it to GOGC.
		p.Log.Info("garbage collection left to GOGC: the runtime does not report what the pacer reads", "metrics", missing)
		return
	}
	collected := make(chan struct{}, 1)
	watchCollections(ctx, collected)

	var r reader
	// nonHeapSwept is the runtime's non-heap memory as last read when no
	// collection had just ended. Right after a collection the unswept
	// garbage hides the room it will leave, so the larger of the two is
	// taken until the sweep has had time to finish.
	var nonHeapSwept uint64
	var lastCollection time.Time
	pace := func(now time.Time) {
		s := r.read()
		n := s.NonHeap()
		if now.Sub(lastCollection) < settle {
			n = max(n, nonHeapSwept)
		} else {
			nonHeapSwept = n
		}
		debug.SetMemoryLimit(Limit(s, p.Percent, n, p.Ceiling))
	}
	pace(time.Now())
	debug.SetGCPercent(-1)
	p.Log.Info("garbage collection paced by the soft memory limit", "percent", p.Percent, "ceiling", p.Ceiling)
	defer func() {
		debug.SetGCPercent(p.Percent)
		ceiling := p.Ceiling
		if ceiling <= 0 {
			ceiling = math.MaxInt64
		}
		debug.SetMemoryLimit(ceiling)
	}()

	tick := time.NewTicker(p.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-collected:
			lastCollection = time.Now()
			pace(lastCollection)
		case now := <-tick.C:
			pace(now)
		}
	}
}

// watchCollections sends on ch, without blocking, after each garbage
// collection until ctx ends: a cleanup attached to an object nothing
// references runs once a collection has found it unreachable, and attaches
// itself to a new one.
func watchCollections(ctx context.Context, ch chan<- struct{}) {
	type sentinel struct{ _ [16]byte }
	var arm func()
	arm = func() {
		runtime.AddCleanup(new(sentinel), func(struct{}) {
			if ctx.Err() != nil {
				return
			}
			select {
			case ch <- struct{}{}:
			default:
			}
			arm()
		}, struct{}{})
	}
	arm()
}

// reader reads Samples from runtime/metrics, reusing its buffer.
type reader struct {
	samples []metrics.Sample
}

// The metrics a reader reads, in the order of its buffer.
var readNames = [...]string{
	"/gc/heap/live:bytes",
	"/gc/scan/stack:bytes",
	"/gc/scan/globals:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/objects:bytes",
}

// unsupported returns the readNames this runtime does not report as
// unsigned integers.
func unsupported() []string {
	kinds := make(map[string]metrics.ValueKind)
	for _, d := range metrics.All() {
		kinds[d.Name] = d.Kind
	}
	var missing []string
	for _, name := range readNames {
		if kinds[name] != metrics.KindUint64 {
			missing = append(missing, name)
		}
	}
	return missing
}

func (r *reader) read() Sample {
	if r.samples == nil {
		r.samples = make([]metrics.Sample, len(readNames))
		for i, name := range readNames {
			r.samples[i].Name = name
		}
	}
	metrics.Read(r.samples)
	var v [len(readNames)]uint64
	for i, s := range r.samples {
		if s.Value.Kind() == metrics.KindUint64 {
			v[i] = s.Value.Uint64()
		}
	}
	s := Sample{HeapLive: v[0], StackScan: v[1], GlobalsScan: v[2], HeapFree: v[5], HeapObjects: v[6]}
	if total, released := v[3], v[4]; total > released {
		s.Mapped = total - released
	}
	return s
}
