package lua

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	glua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Options bound every script call. The zero value of a field means its
// default (DefaultOptions).
type Options struct {
	// Timeout is the wall-clock budget of one call.
	Timeout time.Duration
	// MaxInstructions is the VM instruction budget of one call.
	MaxInstructions int64
	// MemoryBudget is the number of bytes the process may allocate while
	// one call runs (a crude, process-wide measure; see the package doc).
	MemoryBudget uint64
	// MaxStringBytes caps the strings string.rep, string.format and
	// table.concat build.
	MaxStringBytes int
	// CallStackSize caps nested Lua calls.
	CallStackSize int
	// RegistryMaxSize caps the Lua value stack, in slots.
	RegistryMaxSize int
	// MaxCachedScripts bounds the compiled-script cache.
	MaxCachedScripts int
}

// DefaultOptions are Karmada's 1 second per call plus Lifeboat's bounds.
func DefaultOptions() Options {
	return Options{
		Timeout:          time.Second,
		MaxInstructions:  20_000_000,
		MemoryBudget:     64 << 20,
		MaxStringBytes:   4 << 20,
		CallStackSize:    200,
		RegistryMaxSize:  64 * 1024,
		MaxCachedScripts: 512,
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.MaxInstructions <= 0 {
		o.MaxInstructions = d.MaxInstructions
	}
	if o.MemoryBudget == 0 {
		o.MemoryBudget = d.MemoryBudget
	}
	if o.MaxStringBytes <= 0 {
		o.MaxStringBytes = d.MaxStringBytes
	}
	if o.CallStackSize <= 0 {
		o.CallStackSize = d.CallStackSize
	}
	if o.RegistryMaxSize <= 0 {
		o.RegistryMaxSize = d.RegistryMaxSize
	}
	if o.MaxCachedScripts <= 0 {
		o.MaxCachedScripts = d.MaxCachedScripts
	}
	return o
}

// Errors a call can end with, for errors.Is.
var (
	ErrTimeout           = errors.New("lua script exceeded its time budget")
	ErrInstructionBudget = errors.New("lua script exceeded its instruction budget")
	ErrMemoryBudget      = errors.New("lua script exceeded its memory budget")
)

// Runtime compiles and runs scripts. It is safe for concurrent use.
type Runtime struct {
	opts Options

	mu      sync.Mutex
	scripts map[[sha256.Size]byte]*Script

	compiles atomic.Int64 // scripts compiled, for tests
}

// New returns a Runtime with the given bounds.
func New(opts Options) *Runtime {
	return &Runtime{opts: opts.withDefaults(), scripts: map[[sha256.Size]byte]*Script{}}
}

// Script is one compiled script. Calls on it are safe for concurrent use;
// each runs on a Lua state from the script's own pool with fresh globals,
// so scripts never see each other's changes (a script that modifies a
// library table, string.format = nil, only affects its own later calls).
type Script struct {
	rt    *Runtime
	proto *glua.FunctionProto
	pool  sync.Pool // *glua.LState
}

// Compile parses and compiles source, or returns the cached Script for the
// same source. Syntax errors are returned at once.
func (r *Runtime) Compile(source string) (*Script, error) {
	key := sha256.Sum256([]byte(source))
	r.mu.Lock()
	s, ok := r.scripts[key]
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	chunk, err := parse.Parse(strings.NewReader(source), "script")
	if err != nil {
		return nil, fmt.Errorf("parse lua script: %w", err)
	}
	proto, err := glua.Compile(chunk, "script")
	if err != nil {
		return nil, fmt.Errorf("compile lua script: %w", err)
	}
	r.compiles.Add(1)
	s = &Script{rt: r, proto: proto}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cached, ok := r.scripts[key]; ok {
		return cached, nil
	}
	if len(r.scripts) >= r.opts.MaxCachedScripts {
		// Evict one entry; whoever holds it keeps a working Script.
		for k := range r.scripts {
			delete(r.scripts, k)
			break
		}
	}
	r.scripts[key] = s
	return s, nil
}

// Defines runs the script's top level and reports whether it defines the
// global function name. It catches a misspelt function name when the
// customization is loaded rather than at the first call.
func (s *Script) Defines(name string) error {
	_, err := s.call(name, 0)
	return err
}

// call runs the script's top level (defining its functions, as Karmada does
// on every call), then calls the global function fn with args and returns
// nret results. With nret 0 it only checks that fn exists. Args are Go
// values converted to Lua (see toLua).
func (s *Script) call(fn string, nret int, args ...any) ([]glua.LValue, error) {
	o := s.rt.opts
	L, _ := s.pool.Get().(*glua.LState)
	if L == nil {
		L = newSandbox(o)
	}
	ctx, cancel := newMeter(o)
	defer cancel()

	type result struct {
		values   []glua.LValue
		err      error
		panicked bool
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("lua script panicked: %v", p), panicked: true}
			}
			done <- r
		}()
		r.values, r.err = run(ctx, L, s.proto, fn, nret, args)
	}()

	var r result
	select {
	case r = <-done:
	case <-ctx.hardStop():
		// A Go library call (a string pattern) ignores the deadline: give
		// up on it and its state; the goroutine ends on its own.
		return nil, fmt.Errorf("call %s: %w", fn, ErrTimeout)
	}
	if cause := ctx.cause(); cause != nil {
		// The budget was hit, even if the script caught the error with
		// pcall: the state is not reused.
		return nil, fmt.Errorf("call %s: %w", fn, cause)
	}
	if !r.panicked {
		// A Lua error unwinds cleanly: the state can serve the next call.
		s.pool.Put(L)
	}
	if r.err != nil {
		return nil, fmt.Errorf("call %s: %w", fn, r.err)
	}
	return r.values, nil
}

// run executes proto then fn on L. It leaves L's stack empty on success.
func run(ctx context.Context, L *glua.LState, proto *glua.FunctionProto, fn string, nret int, args []any) ([]glua.LValue, error) {
	L.SetContext(ctx)
	defer L.RemoveContext()
	L.SetTop(0)

	// Fresh globals per call: reads fall through to the sandbox's
	// libraries, writes stay in this call.
	env := L.NewTable()
	meta := L.NewTable()
	meta.RawSetString("__index", L.G.Global)
	L.SetMetatable(env, meta)

	chunk := L.NewFunctionFromProto(proto)
	chunk.Env = env
	L.Push(chunk)
	if err := L.PCall(0, 0, nil); err != nil {
		return nil, err
	}
	f, ok := env.RawGetString(fn).(*glua.LFunction)
	if !ok {
		return nil, fmt.Errorf("the script does not define function %s", fn)
	}
	if nret == 0 {
		return nil, nil
	}
	L.Push(f)
	for _, a := range args {
		v, err := toLua(L, a)
		if err != nil {
			L.SetTop(0)
			return nil, err
		}
		L.Push(v)
	}
	if err := L.PCall(len(args), nret, nil); err != nil {
		return nil, err
	}
	out := make([]glua.LValue, nret)
	for i := range nret {
		out[i] = L.Get(i + 1)
	}
	L.SetTop(0)
	return out, nil
}

// meter is the context a call runs under. gopher-lua asks for Done before
// every instruction, which is where the instruction budget is counted and
// the memory sampled.
type meter struct {
	context.Context
	cancel   context.CancelCauseFunc
	stopTime context.CancelFunc
	count    int64 // instructions; only the VM goroutine touches it
	max      int64
	budget   uint64
	start    uint64
	timer    atomic.Pointer[time.Timer]
	hard     <-chan time.Time
}

// sampleEvery is how many instructions pass between two memory samples.
const sampleEvery = 1024

func newMeter(o Options) (*meter, func()) {
	timed, stopTime := context.WithTimeoutCause(context.Background(), o.Timeout, ErrTimeout)
	ctx, cancel := context.WithCancelCause(timed)
	m := &meter{
		Context:  ctx,
		cancel:   cancel,
		stopTime: stopTime,
		max:      o.MaxInstructions,
		budget:   o.MemoryBudget,
		start:    allocatedBytes(),
	}
	// A watchdog for what the instruction-count sampling cannot see: one
	// instruction (a string concatenation) can allocate a lot.
	m.timer.Store(time.AfterFunc(time.Millisecond, m.watch))
	hard := time.NewTimer(o.Timeout + o.Timeout/2)
	m.hard = hard.C
	return m, func() {
		m.timer.Load().Stop()
		hard.Stop()
		cancel(nil)
		stopTime()
	}
}

// Done implements context.Context; the VM calls it before each instruction.
func (m *meter) Done() <-chan struct{} {
	m.count++
	if m.count > m.max {
		m.cancel(ErrInstructionBudget)
	} else if m.count%sampleEvery == 0 {
		m.checkMemory()
	}
	return m.Context.Done()
}

// Err reports why the call stopped, so the script error names the budget.
func (m *meter) Err() error {
	if m.Context.Err() == nil {
		return nil
	}
	return context.Cause(m.Context)
}

func (m *meter) watch() {
	if m.Context.Err() != nil {
		return
	}
	m.checkMemory()
	if t := m.timer.Load(); t != nil {
		t.Reset(time.Millisecond)
	}
}

func (m *meter) checkMemory() {
	if allocatedBytes()-m.start > m.budget {
		m.cancel(ErrMemoryBudget)
	}
}

// cause is nil while the call is within its budgets.
func (m *meter) cause() error {
	if m.Context.Err() == nil {
		return nil
	}
	cause := context.Cause(m.Context)
	if errors.Is(cause, context.Canceled) {
		return nil
	}
	return cause
}

func (m *meter) hardStop() <-chan time.Time { return m.hard }

// allocatedBytes is the process' cumulative heap allocation.
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
