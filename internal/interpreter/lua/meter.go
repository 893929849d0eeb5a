package lua

import (
	"context"
	"errors"
	"fmt"
	"time"

	glua "github.com/yuin/gopher-lua"
)

// meter holds the budgets of one script run and what the run has used.
// It is the context the run's Lua state runs under: the VM asks it for Done
// before every instruction, which is where instructions are counted. The
// sandbox's library functions and metering hooks charge it for the work
// they do and the bytes they allocate (spend, alloc), so that every
// long-running or allocating step of the run is bounded and interruptible.
//
// Only the run's goroutine calls its methods; the caller only waits on the
// context and reads the cause.
type meter struct {
	context.Context
	cancel   context.CancelCauseFunc
	stopTime context.CancelFunc

	maxSteps  int64
	maxBytes  int64
	maxString int

	steps int64 // VM instructions plus library work units
	bytes int64 // estimated bytes the run allocated
}

func newMeter(o Options) *meter {
	timed, stopTime := context.WithTimeoutCause(context.Background(), o.Timeout,
		fmt.Errorf("%w (%s)", ErrTimeout, o.Timeout))
	ctx, cancel := context.WithCancelCause(timed)
	return &meter{
		Context:   ctx,
		cancel:    cancel,
		stopTime:  stopTime,
		maxSteps:  o.MaxInstructions,
		maxBytes:  int64(min(o.MemoryBudget, 1<<62)),
		maxString: o.MaxStringBytes,
	}
}

// stop releases the meter's timer; the run must not use it afterwards.
func (m *meter) stop() {
	m.cancel(nil)
	m.stopTime()
}

// Done implements context.Context; the VM calls it before each instruction.
func (m *meter) Done() <-chan struct{} {
	m.steps++
	if m.steps > m.maxSteps {
		m.fail(fmt.Errorf("%w (%d)", ErrInstructionBudget, m.maxSteps))
	}
	return m.Context.Done()
}

// Err reports why the run stopped, so that the error the VM raises names
// the budget.
func (m *meter) Err() error {
	if m.Context.Err() == nil {
		return nil
	}
	return context.Cause(m.Context)
}

// fail stops the run with cause (the first cause wins) and returns the
// run's cause.
func (m *meter) fail(cause error) error {
	m.cancel(cause)
	return m.Err()
}

// spend counts n units of library work against the instruction budget and
// reports whether the run must stop (a budget exceeded, or the deadline).
func (m *meter) spend(n int64) error {
	if m == nil {
		return nil
	}
	m.steps += n
	if m.steps > m.maxSteps {
		return m.fail(fmt.Errorf("%w (%d)", ErrInstructionBudget, m.maxSteps))
	}
	select {
	case <-m.Context.Done():
		return m.Err()
	default:
		return nil
	}
}

// alloc charges n bytes to the run's memory budget, before they are
// allocated where possible.
func (m *meter) alloc(n int64) error {
	if m == nil {
		return nil
	}
	if n < 0 || m.bytes+n > m.maxBytes {
		return m.fail(fmt.Errorf("%w: the script allocated more than %d bytes", ErrMemoryBudget, m.maxBytes))
	}
	m.bytes += n
	return m.spend(0)
}

// fitString checks that what builds a string of n bytes may: n is within
// the string limit.
func (m *meter) fitString(what string, n int) error {
	if m == nil {
		return nil
	}
	if n < 0 || n > m.maxString {
		return m.fail(fmt.Errorf("%w: %s would build a string longer than the %d-byte limit", ErrMemoryBudget, what, m.maxString))
	}
	return nil
}

// allocString checks that what builds a string of n bytes may, and charges
// it. n is checked before it is charged, so a huge request fails without
// being allocated.
func (m *meter) allocString(what string, n int) error {
	if err := m.fitString(what, n); err != nil {
		return err
	}
	return m.alloc(stringBytes + int64(n))
}

// stringLimit is the longest string a run may build.
func (m *meter) stringLimit() int {
	if m == nil {
		return int(^uint(0) >> 1)
	}
	return m.maxString
}

// cause is nil while the run is within its budgets.
func (m *meter) cause() error {
	if m == nil {
		return nil
	}
	err := m.Err()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// usage is what a run consumed, for tests.
type usage struct {
	Steps int64
	Bytes int64
}

func (m *meter) usage() usage { return usage{Steps: m.steps, Bytes: m.bytes} }

// meterOf returns the meter of the run L executes, or nil outside a run
// (no bounds).
func meterOf(L *glua.LState) *meter {
	m, _ := L.Context().(*meter)
	return m
}

// check raises err as a Lua error; the run's meter keeps the cause, so a
// script that catches the error with pcall is stopped at its next
// instruction.
func check(L *glua.LState, err error) {
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
}

// hardStopAfter is how long a caller waits past the deadline for the run's
// goroutine before giving up on it. Every library call is interruptible, so
// the goroutine ends within milliseconds of its deadline; this is only the
// last resort should a call not be.
func hardStopAfter(timeout time.Duration) time.Duration {
	return timeout + max(timeout/2, 100*time.Millisecond)
}
