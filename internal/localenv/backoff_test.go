package localenv

import (
	"math"
	"testing"
	"time"
)

func TestBackoffNext(t *testing.T) {
	b := DefaultBackoff() // 1s doubling to 30s; a minute is stable
	cases := map[string]struct {
		failures     int
		ran          time.Duration
		wantWait     time.Duration
		wantFailures int
	}{
		"rule 2, 3: a first failure waits Initial":             {failures: 0, ran: time.Second, wantWait: time.Second, wantFailures: 1},
		"rule 2, 3: a second short run waits twice as long":    {failures: 1, ran: time.Second, wantWait: 2 * time.Second, wantFailures: 2},
		"rule 2, 3: the fifth waits 16s":                       {failures: 4, ran: 0, wantWait: 16 * time.Second, wantFailures: 5},
		"rule 3: the sixth is held at Max":                     {failures: 5, ran: 0, wantWait: 30 * time.Second, wantFailures: 6},
		"rule 3: far into a series, still Max":                 {failures: 1000, ran: 0, wantWait: 30 * time.Second, wantFailures: 1001},
		"rule 1: a stable run starts a new series":             {failures: 7, ran: time.Minute, wantWait: time.Second, wantFailures: 1},
		"rule 1: a long run after none":                        {failures: 0, ran: 24 * time.Hour, wantWait: time.Second, wantFailures: 1},
		"rule 2: just short of stable is still a failure":      {failures: 3, ran: time.Minute - time.Millisecond, wantWait: 8 * time.Second, wantFailures: 4},
		"a clock that stepped back counts as a short run":      {failures: 2, ran: -time.Hour, wantWait: 4 * time.Second, wantFailures: 3},
		"a negative count counts as none":                      {failures: -5, ran: 0, wantWait: time.Second, wantFailures: 1},
		"the count stops growing at its cap":                   {failures: maxFailures, ran: 0, wantWait: 30 * time.Second, wantFailures: maxFailures},
		"a count past int32 from a damaged state, no overflow": {failures: math.MaxInt, ran: 0, wantWait: 30 * time.Second, wantFailures: math.MaxInt},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wait, failures := b.Next(tc.failures, tc.ran)
			if wait != tc.wantWait || failures != tc.wantFailures {
				t.Errorf("Next(%d, %s) = %s, %d; want %s, %d", tc.failures, tc.ran, wait, failures, tc.wantWait, tc.wantFailures)
			}
		})
	}
}

// Extreme settings: a zero Initial restarts at once, however many failures;
// a Max as long as a Duration holds never overflows into a negative wait.
func TestBackoffExtremes(t *testing.T) {
	huge := Backoff{Initial: time.Nanosecond, Max: math.MaxInt64, Stable: math.MaxInt64}
	for _, n := range []int{62, 63, 64, 100, math.MaxInt} {
		if wait, _ := huge.Next(n, 0); wait <= 0 {
			t.Errorf("Next(%d) with Max %d waits %d", n, int64(huge.Max), wait)
		}
	}
	inverted := Backoff{Initial: time.Minute, Max: time.Second, Stable: time.Hour}
	if wait, _ := inverted.Next(0, 0); wait != time.Second {
		t.Errorf("an Initial above Max waits %s, want Max", wait)
	}
}

// A zero Initial restarts at once, however many failures.
func TestBackoffZeroInitial(t *testing.T) {
	b := Backoff{Max: time.Minute, Stable: time.Minute}
	for _, n := range []int{0, 1, 40, math.MaxInt} {
		if wait, _ := b.Next(n, 0); wait != 0 {
			t.Errorf("Next(%d) waits %s, want 0", n, wait)
		}
	}
}
