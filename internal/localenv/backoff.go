package localenv

import "time"

// Backoff is how long the supervisor waits before it starts an exited
// component again, as a kubelet backs off a container in CrashLoopBackOff:
// a component that keeps failing at once is started less and less often,
// and one that ran well is started again quickly.
type Backoff struct {
	// Initial is the wait after the first failure.
	Initial time.Duration
	// Max bounds the wait.
	Max time.Duration
	// Stable is how long a run must last for its end to count as a first
	// failure again.
	Stable time.Duration
}

// DefaultBackoff waits 1 s after a first failure, doubling up to 30 s while
// runs keep ending within a minute. A controller manager that loses its
// lease is back within about a second; one that cannot start at all
// (its API server still down) is retried at most twice a minute.
func DefaultBackoff() Backoff {
	return Backoff{Initial: time.Second, Max: 30 * time.Second, Stable: time.Minute}
}

// Next decides the wait before the next start of a component whose run
// ended after ran, given its count of consecutive failures so far, and
// returns the wait and the new count:
//  1. a run that lasted Stable or longer ends a series: the count starts
//     again at 1;
//  2. otherwise the count grows by 1;
//  3. the wait is Initial doubled for each failure after the first, and
//     never more than Max.
//
// A negative ran (a clock that stepped back) counts as a short run; a
// negative count as none.
func (b Backoff) Next(failures int, ran time.Duration) (time.Duration, int) {
	// 1, 2.
	switch {
	case ran >= b.Stable:
		failures = 1
	case failures < 1:
		failures = 1
	case failures < maxFailures:
		failures++
	}
	// 3. Double, at most until Max, and never past what a Duration holds.
	wait := b.Initial
	for i := 1; i < failures && wait > 0 && wait < b.Max; i++ {
		if wait > b.Max/2 {
			wait = b.Max
			break
		}
		wait *= 2
	}
	return min(wait, b.Max), failures
}

// maxFailures caps the count, which only has to be large enough for the
// wait to reach Max: the count is stored, and must not overflow however
// long a component keeps failing.
const maxFailures = 1 << 20
