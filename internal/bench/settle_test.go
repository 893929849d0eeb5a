package bench

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// cpuSeries answers successive CPU readings: each call adds the next step.
type cpuSeries struct {
	mu    sync.Mutex
	total float64
	steps []float64
}

func (c *cpuSeries) read() (float64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.steps) > 0 {
		c.total += c.steps[0]
		c.steps = c.steps[1:]
	}
	return c.total, nil
}

// runSettle runs settle on a fake clock, stepping it whenever settle waits,
// and returns how long settle says it waited.
func runSettle(t *testing.T, controllers map[string]int, cpu *cpuSeries) time.Duration {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := &Bench{Clock: clk, Progress: io.Discard, Options: Options{Controllers: controllers}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		d   time.Duration
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := b.settle(ctx, cpu.read)
		done <- result{d, err}
	}()
	for {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.d
		case <-ctx.Done():
			t.Fatalf("settle did not return; fake clock at %s", clk.Now())
		default:
		}
		if clk.HasWaiters() {
			clk.Step(quietWindow)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSettle(t *testing.T) {
	busy := quietCPU * quietWindow.Minutes() * 3 // CPU seconds per window
	quiet := quietCPU * quietWindow.Minutes() / 4
	self := map[string]int{"lifeboat-controller-manager": 1}
	cases := map[string]struct {
		controllers map[string]int
		steps       []float64 // CPU seconds added before each reading
		want        time.Duration
	}{
		"quiet at once: the minimum":        {self, []float64{0, quiet}, settleBeforeSteady + quietWindow},
		"a busy tail is waited out":         {self, []float64{0, busy, busy, quiet}, settleBeforeSteady + 3*quietWindow},
		"never quiet: gives up at the most": {self, append([]float64{0}, repeat(busy, 100)...), settleMax},
		"no processes to watch":             {nil, nil, settleBeforeSteady},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := runSettle(t, tc.controllers, &cpuSeries{steps: tc.steps})
			if got != tc.want {
				t.Errorf("settle waited %s, want %s", got, tc.want)
			}
		})
	}
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
