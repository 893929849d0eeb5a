package lua

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	glua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Options bound every script call. The zero value of a field means its
// default (DefaultOptions).
type Options struct {
	// Timeout is the wall-clock budget of one call.
	Timeout time.Duration
	// MaxInstructions is the instruction budget of one call: VM
	// instructions plus units of library work (pattern-matching steps,
	// sort comparisons, values converted).
	MaxInstructions int64
	// MemoryBudget is the number of bytes one call may allocate: the
	// strings, tables and functions the script builds, as the sandbox
	// accounts them (see the package doc). Other calls' allocations do not
	// count.
	MemoryBudget uint64
	// MaxStringBytes caps every string a script builds (.., string.rep,
	// string.format, string.gsub, table.concat...).
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

	// runEnded, when set (by tests), is called by a run's goroutine as
	// it returns, with what the run used.
	runEnded func(usage)
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
	pool  sync.Pool // *sandbox
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
	chunk, err = meterChunk(chunk)
	if err != nil {
		return nil, fmt.Errorf("compile lua script: %w", err)
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
	return s.call(name, 0, nil)
}

// call runs the script's top level (defining its functions, as Karmada does
// on every call), then calls the global function fn with args, and passes
// its nret results to decode. With nret 0 it only checks that fn exists.
// Args are Go values converted to Lua (see toLua).
//
// The run has a goroutine of its own, bounded by a meter (meter.go): the
// VM and every library function stop it at its deadline or when it exceeds
// a budget, and the caller waits for it to end. decode runs on that
// goroutine under the same meter, before the state goes back to the pool,
// so that converting a result is bounded too and no other call can touch
// the result's tables meanwhile.
//
// Its error is cut to maxErrorBytes (see limitError).
func (s *Script) call(fn string, nret int, decode func(m *meter, out []glua.LValue) error, args ...any) error {
	return limitError(s.callUncut(fn, nret, decode, args...))
}

func (s *Script) callUncut(fn string, nret int, decode func(m *meter, out []glua.LValue) error, args ...any) error {
	o := s.rt.opts
	sb, _ := s.pool.Get().(*sandbox)
	if sb == nil {
		sb = newSandbox(o)
	}
	m := newMeter(o)
	defer m.stop()

	done := make(chan error, 1)
	go func() {
		var err error
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("lua script panicked: %v", p)
			} else if m.cause() == nil {
				// A Lua error unwinds cleanly: the state can serve the
				// next call. After a budget, it is thrown away.
				s.pool.Put(sb)
			}
			if s.rt.runEnded != nil {
				s.rt.runEnded(m.usage())
			}
			done <- err
		}()
		var out []glua.LValue
		out, err = run(sb, m, s.proto, fn, nret, args)
		if err == nil && decode != nil {
			err = decode(m, out)
		}
	}()

	hard := time.NewTimer(hardStopAfter(o.Timeout))
	defer hard.Stop()
	var err error
	select {
	case err = <-done:
	case <-hard.C:
		// Every library call is interruptible, so this is not expected:
		// release the caller, and stop the run as soon as it can be.
		m.fail(ErrTimeout)
		return fmt.Errorf("call %s: %w (the script did not stop at its deadline)", fn, ErrTimeout)
	}
	if cause := m.cause(); cause != nil {
		// The budget was hit, even if the script caught the error with
		// pcall. Where the script was, when the error says.
		if err != nil {
			msg := err.Error()
			if i := strings.Index(msg, cause.Error()); i > 0 {
				return fmt.Errorf("call %s: %s%w", fn, msg[:i], cause)
			}
		}
		return fmt.Errorf("call %s: %w", fn, cause)
	}
	if err != nil {
		return fmt.Errorf("call %s: %w", fn, err)
	}
	return nil
}

// run executes proto then fn on the sandbox under m. It leaves the stack
// empty on success.
func run(sb *sandbox, m *meter, proto *glua.FunctionProto, fn string, nret int, args []any) ([]glua.LValue, error) {
	L := sb.L
	L.SetContext(m)
	defer L.RemoveContext()
	L.SetTop(0)

	// Fresh globals per call: reads fall through to the sandbox's
	// libraries, writes (_G.x = 1 too) stay in this call.
	env := L.NewTable()
	meta := L.NewTable()
	meta.RawSetString("__index", L.G.Global)
	L.SetMetatable(env, meta)
	env.RawSetString("_G", env)

	chunk := L.NewFunctionFromProto(proto)
	chunk.Env = env
	L.Push(chunk)
	for _, h := range sb.hooks {
		L.Push(h)
	}
	if err := L.PCall(len(sb.hooks), 0, nil); err != nil {
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
		// The objects a script is given are not charged to it.
		v, err := toLua(L, nil, a)
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

// maxErrorBytes bounds the message of an error a script call returns. A
// script can raise an error as long as its longest string (error(s)), and
// the message travels on to logs, Events and whatever keeps errors.
const maxErrorBytes = 4 << 10

// limitError cuts the message of err to maxErrorBytes, saying how much was
// cut. The cut error keeps only which budget, if any, was exceeded (for
// errors.Is), not err itself, so that nothing holds on to the long text.
func limitError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if len(msg) <= maxErrorBytes {
		return err
	}
	n := maxErrorBytes
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	cut := &cutError{msg: fmt.Sprintf("%s... (%d more bytes cut)", msg[:n], len(msg)-n)}
	for _, budget := range []error{ErrTimeout, ErrInstructionBudget, ErrMemoryBudget} {
		if errors.Is(err, budget) {
			cut.budget = budget
			break
		}
	}
	return cut
}

// cutError is an error whose message was cut by limitError.
type cutError struct {
	msg    string
	budget error // the budget exceeded, or nil
}

func (e *cutError) Error() string { return e.msg }
func (e *cutError) Unwrap() error { return e.budget }
