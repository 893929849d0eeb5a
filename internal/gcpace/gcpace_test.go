package gcpace

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
)

const mib = 1 << 20

func TestLimit(t *testing.T) {
	for name, tc := range map[string]struct {
		sample  Sample
		percent int
		nonHeap uint64
		ceiling int64
		want    int64
	}{
		"GOGC 50's goal, over the runtime's headroom": {
			sample: Sample{HeapLive: 97 * mib}, percent: 50,
			want: 150 * mib,
		},
		"the memory outside the heap's objects is added back": {
			sample: Sample{HeapLive: 97 * mib}, percent: 50, nonHeap: 40 * mib,
			want: 190 * mib,
		},
		"stacks and globals grow the goal as they do GOGC's": {
			sample: Sample{HeapLive: 87 * mib, StackScan: 8 * mib, GlobalsScan: 2 * mib}, percent: 100,
			want: 184 * mib * 100 / 97,
		},
		"nothing live yet: the runtime's minimum heap at the percentage, over its 1 MiB headroom": {
			sample: Sample{}, percent: 50,
			want: 3 * mib,
		},
		"a small heap: the runtime's headroom is 1 MiB, not 3 %": {
			sample: Sample{HeapLive: 10 * mib}, percent: 50, nonHeap: 5 * mib,
			want: 21 * mib,
		},
		"a ceiling below the goal caps it": {
			sample: Sample{HeapLive: 97 * mib}, percent: 50, nonHeap: 40 * mib, ceiling: 180 * mib,
			want: 180 * mib,
		},
		"a ceiling above the goal changes nothing": {
			sample: Sample{HeapLive: 97 * mib}, percent: 50, ceiling: 1 << 40,
			want: 150 * mib,
		},
		"a percentage past int32 saturates instead of wrapping": {
			sample: Sample{HeapLive: 1 << 40}, percent: math.MaxInt32,
			want: math.MaxInt64,
		},
		"a saturated goal still respects the ceiling": {
			sample: Sample{HeapLive: 1 << 40}, percent: math.MaxInt32, ceiling: 1 << 30,
			want: 1 << 30,
		},
		"non-heap memory past the range saturates": {
			sample: Sample{HeapLive: 97 * mib}, percent: 50, nonHeap: math.MaxUint64,
			want: math.MaxInt64,
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Limit(tc.sample, tc.percent, tc.nonHeap, tc.ceiling); got != tc.want {
				t.Errorf("Limit = %d (%.2f MiB), want %d (%.2f MiB)", got, float64(got)/mib, tc.want, float64(tc.want)/mib)
			}
		})
	}
}

func TestNonHeap(t *testing.T) {
	for name, tc := range map[string]struct {
		s    Sample
		want uint64
	}{
		"mapped beyond free pages and objects": {Sample{Mapped: 300, HeapFree: 50, HeapObjects: 200}, 50},
		"nothing outside":                      {Sample{Mapped: 250, HeapFree: 50, HeapObjects: 200}, 0},
		"figures read between updates":         {Sample{Mapped: 200, HeapFree: 50, HeapObjects: 200}, 0},
	} {
		if got := tc.s.NonHeap(); got != tc.want {
			t.Errorf("%s: NonHeap = %d, want %d", name, got, tc.want)
		}
	}
}

func TestTheRuntimeReportsWhatThePacerReads(t *testing.T) {
	if missing := unsupported(); len(missing) > 0 {
		t.Errorf("this Go runtime does not report %v: the pacer would leave collections to GOGC", missing)
	}
}

// readRuntime reads the named runtime/metrics figures.
func readRuntime(names ...string) map[string]uint64 {
	samples := make([]metrics.Sample, len(names))
	for i, n := range names {
		samples[i].Name = n
	}
	metrics.Read(samples)
	out := make(map[string]uint64, len(names))
	for _, s := range samples {
		out[s.Name] = s.Value.Uint64()
	}
	return out
}

const (
	gogcMetric     = "/gc/gogc:percent"
	limitMetric    = "/gc/gomemlimit:bytes"
	goalMetric     = "/gc/heap/goal:bytes"
	cyclesMetric   = "/gc/cycles/total:gc-cycles"
	liveMetric     = "/gc/heap/live:bytes"
	stackMetric    = "/gc/scan/stack:bytes"
	globalsMetric  = "/gc/scan/globals:bytes"
	gogcOffReading = math.MaxUint64 // GOGC=off, as runtime/metrics reports it
)

var (
	retained [][]byte
	garbage  []byte
)

// retain keeps n bytes live in 1 KiB objects.
func retain(n int) {
	for len(retained)*1024 < n {
		retained = append(retained, make([]byte, 1024))
	}
}

// churn allocates n bytes of garbage in 2 KiB objects.
func churn(n int) {
	for i := 0; i < n/2048; i++ {
		garbage = make([]byte, 2048)
	}
}

// waitForGoal allocates garbage until the runtime's heap goal is within 10 %
// of the one GOGC=percent gives for what the last collection found live.
func waitForGoal(t *testing.T, percent uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var m map[string]uint64
	var want uint64
	for time.Now().Before(deadline) {
		churn(4 * mib)
		m = readRuntime(goalMetric, liveMetric, stackMetric, globalsMetric)
		want = m[liveMetric] + (m[liveMetric]+m[stackMetric]+m[globalsMetric])*percent/100
		if diff := int64(m[goalMetric]) - int64(want); diff < int64(want/10) && -diff < int64(want/10) {
			return
		}
	}
	t.Fatalf("heap goal %.1f MiB, want %.1f MiB ± 10 %% (live %.1f MiB)", float64(m[goalMetric])/mib, float64(want)/mib, float64(m[liveMetric])/mib)
}

// withLiveHeap keeps n bytes live under GOGC 50 and no memory limit for
// the test, and restores what was there after it.
func withLiveHeap(t *testing.T, n int) {
	t.Helper()
	gogc := debug.SetGCPercent(50)
	limit := debug.SetMemoryLimit(math.MaxInt64)
	retain(n)
	t.Cleanup(func() {
		retained = nil
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(gogc)
	})
}

// runPacer runs p until the returned stop is called or the test ends, and
// stop returns once Run has returned (and restored the runtime's settings),
// so that no pacer of one test outlives it into the next.
func runPacer(t *testing.T, p *Pacer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

func TestPacerHoldsGOGCsGoalWithGOGCOff(t *testing.T) {
	withLiveHeap(t, 24*mib)
	stop := runPacer(t, &Pacer{Percent: 50, Interval: 20 * time.Millisecond, Log: testr.New(t)})
	deadline := time.Now().Add(10 * time.Second)
	for readRuntime(gogcMetric)[gogcMetric] != gogcOffReading {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d, want off while the pacer runs", readRuntime(gogcMetric)[gogcMetric])
		}
		runtime.Gosched()
	}

	waitForGoal(t, 50)

	// The goal follows the live heap up, and the collector keeps
	// running without starting one collection after another.
	retain(48 * mib)
	waitForGoal(t, 50)
	before := readRuntime(cyclesMetric)[cyclesMetric]
	churn(240 * mib)
	after := readRuntime(cyclesMetric)[cyclesMetric]
	// GOGC 50 over 48 MiB live collects about every 24 MiB allocated: ten
	// collections for 240 MiB. A limit at or under the live heap would
	// collect at every allocation that finds no free room.
	if n := after - before; n == 0 || n > 30 {
		t.Errorf("%d collections while 240 MiB were allocated over 48 MiB live, want about 10", n)
	}

	stop()
	m := readRuntime(gogcMetric, limitMetric)
	if m[gogcMetric] != 50 {
		t.Errorf("GOGC after the pacer stopped: %d, want 50", m[gogcMetric])
	}
	if m[limitMetric] != math.MaxInt64 {
		t.Errorf("memory limit after the pacer stopped: %d, want none", m[limitMetric])
	}
}

func TestPacerCollectsAsGOGCDoesAfterTheLiveHeapFalls(t *testing.T) {
	withLiveHeap(t, 64*mib)
	runPacer(t, &Pacer{Percent: 50, Interval: 20 * time.Millisecond, Log: testr.New(t)})
	waitForGoal(t, 50)

	// Keep one object in sixteen: the heap's spans stay mapped and mostly
	// empty, and the memory the runtime holds is far above the new goal.
	// A limit under that memory would have the runtime collect at every
	// allocation until it has returned the pages.
	kept := make([][]byte, 0, len(retained)/16)
	for i := 0; i < len(retained); i += 16 {
		kept = append(kept, retained[i])
	}
	retained = kept
	runtime.GC()
	before := readRuntime(cyclesMetric)[cyclesMetric]
	churn(64 * mib)
	n := readRuntime(cyclesMetric)[cyclesMetric] - before
	// GOGC 50 over 4 MiB live collects about every 2 MiB allocated (more
	// with the stacks and globals): about 32 collections for 64 MiB.
	if n > 100 {
		t.Errorf("%d collections while 64 MiB were allocated over 4 MiB live, want about 32 as GOGC 50", n)
	}
	waitForGoal(t, 50)
}

func TestPacerStaysUnderItsCeiling(t *testing.T) {
	withLiveHeap(t, 24*mib)
	const ceiling = 64 * mib
	stop := runPacer(t, &Pacer{Percent: 400, Ceiling: ceiling, Interval: 20 * time.Millisecond, Log: testr.New(t)})
	deadline := time.Now().Add(10 * time.Second)
	var limit uint64
	for {
		churn(4 * mib)
		m := readRuntime(gogcMetric, limitMetric)
		limit = m[limitMetric]
		if m[gogcMetric] == gogcOffReading && limit == ceiling {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("memory limit %d, GOGC %d: want the ceiling %d (GOGC 400 over 24 MiB live asks for more), GOGC off", limit, m[gogcMetric], ceiling)
		}
	}
	stop()
	if got := readRuntime(limitMetric)[limitMetric]; got != ceiling {
		t.Errorf("memory limit after the pacer stopped: %d, want the ceiling %d back", got, ceiling)
	}
}

func TestWatchCollectionsReportsEachCollection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan struct{}, 1)
	watchCollections(ctx, ch)
	for i := 0; i < 3; i++ {
		runtime.GC()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("collection %d: no report within 10 s", i+1)
		}
	}
}

func TestPacerLeavesTheCollectorAloneWithoutAPositiveGoalOrInterval(t *testing.T) {
	for name, p := range map[string]Pacer{
		"percent zero":      {Percent: 0, Interval: time.Second},
		"percent negative":  {Percent: -1, Interval: time.Second},
		"interval zero":     {Percent: 50, Interval: 0},
		"interval negative": {Percent: 50, Interval: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			withLiveHeap(t, mib)
			p.Log = testr.New(t)
			done := make(chan struct{})
			go func() {
				defer close(done)
				p.Run(context.Background())
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Run still running after 10 s; want it to return at once")
			}
			m := readRuntime(gogcMetric, limitMetric)
			if m[gogcMetric] != 50 || m[limitMetric] != math.MaxInt64 {
				t.Errorf("GOGC %d, memory limit %d after Run returned; want 50 and none, as before", m[gogcMetric], m[limitMetric])
			}
		})
	}
}
