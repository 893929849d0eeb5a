package lua

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
)

// runEndDeadline is how long a test waits for a run's goroutine to end
// after the call returned. A run that is really stopped ends at once; one
// that is only abandoned goes on for seconds or minutes.
const runEndDeadline = 10 * time.Second

// bounded is a script body run by InterpretHealth, with the run's end
// observed.
type bounded struct {
	rt    *Runtime
	ended chan usage
}

func newBounded(opts Options) *bounded {
	b := &bounded{rt: New(opts), ended: make(chan usage, 1)}
	b.rt.runEnded = func(u usage) { b.ended <- u }
	return b
}

// run calls the script and waits, up to runEndDeadline, for its run's
// goroutine to end. It returns the call's error and what the run used.
func (b *bounded) run(t *testing.T, body string) (workv1alpha1.ResourceHealth, usage, error) {
	t.Helper()
	s := compile(t, b.rt, "function InterpretHealth(obj)\n"+body+"\nreturn true\nend")
	h, err := s.InterpretHealth(obj(t, "{apiVersion: v1, kind: X}"))
	select {
	case u := <-b.ended:
		return h, u, err
	case <-time.After(runEndDeadline):
		t.Fatalf("the run was still going %s after the call returned %v", runEndDeadline, err)
		return h, usage{}, err
	}
}

// totalAlloc is the bytes the process has allocated so far.
func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// TestBudgetsStopTheRun runs adversarial scripts. Each must fail with the
// bound it exceeds, its run must really have stopped (its goroutine ended
// rather than been abandoned), its accounted allocation must be within its
// memory budget, and the process must not have allocated much more than
// that budget while it ran.
func TestBudgetsStopTheRun(t *testing.T) {
	const stringLimit = "would build a string longer than the 1048576-byte limit"
	base := Options{
		Timeout:         time.Minute, // the other bounds must fire first
		MaxInstructions: 500_000,
		MemoryBudget:    4 << 20,
		MaxStringBytes:  1 << 20,
	}
	noStepLimit := base
	noStepLimit.MaxInstructions = 1 << 62
	noInstructionLimit := noStepLimit
	noInstructionLimit.Timeout = 100 * time.Millisecond
	smallNoStepLimit := noStepLimit
	smallNoStepLimit.MemoryBudget = 1 << 20
	largeMemory := base
	largeMemory.MemoryBudget = 16 << 20

	cases := map[string]struct {
		opts Options // base if zero
		body string
		want error  // the budget, for errors.Is
		msg  string // and what the error says
	}{
		// The VM.
		"infinite loop":                 {body: `while true do end`, want: ErrInstructionBudget},
		"infinite loop, no step budget": {opts: noInstructionLimit, body: `while true do end`, want: ErrTimeout},
		"infinite loop in pcall":        {body: `pcall(function() while true do end end)`, want: ErrInstructionBudget},
		"unbounded recursion":           {body: `local function f(n) return 1 + f(n + 1) end f(1)`, msg: "stack overflow"},

		// Strings.
		"gsub growing a string past the limit": {
			body: `local s = string.rep("x", 2e5) s = s:gsub("x", string.rep("y", 64))`, want: ErrMemoryBudget, msg: stringLimit},
		"gsub in a loop": {
			opts: smallNoStepLimit,
			body: `local s = string.rep("x", 2e5) for i = 1, 1e6 do local r = s:gsub("x", "y") end`, want: ErrMemoryBudget},
		"gsub with a function growing a string": {
			body: `local s, big = string.rep("x", 1e5), string.rep("y", 100) s:gsub("x", function(c) return big end)`, want: ErrMemoryBudget, msg: stringLimit},
		"format past the limit": {
			opts: largeMemory,
			body: `local t = {} for i = 1, 11 do t[i] = string.rep("x", 1e5) end string.format(string.rep("%s", 11), unpack(t))`, want: ErrMemoryBudget, msg: stringLimit},
		"format with many wide directives": {
			body: `local t = {} for i = 1, 12000 do t[i] = 1 end string.format(string.rep("%99d", 12000), unpack(t))`, want: ErrMemoryBudget},
		"format in a loop": {
			body: `local s = string.rep("x", 2e5) for i = 1, 1e6 do local r = string.format("%s%s", s, s) end`, want: ErrMemoryBudget},
		"format reusing an argument": {
			body: `string.format(string.rep("%[1]s", 1e5), string.rep("x", 2e5))`, msg: "invalid option"},
		"format width of three digits": {body: `string.format("%999999999d", 1)`, msg: "width or precision too long"},
		"rep past the limit":           {body: `string.rep("x", 1e10)`, want: ErrMemoryBudget, msg: stringLimit},
		"rep in a loop":                {body: `for i = 1, 1e6 do local r = string.rep("x", 1e6) end`, want: ErrMemoryBudget},
		"upper in a loop": {
			body: `local s = string.rep("x", 2e5) for i = 1, 1e6 do local r = s:upper() end`, want: ErrMemoryBudget},
		"lower in a loop": {
			body: `local s = string.rep("X", 2e5) for i = 1, 1e6 do local r = string.lower(s) end`, want: ErrMemoryBudget},
		"reverse in a loop": {
			body: `local s = string.rep("xy", 1e5) for i = 1, 1e6 do local r = s:reverse() end`, want: ErrMemoryBudget},
		"byte of a long string": {
			body: `local s = string.rep("x", 2e5) local t = {s:byte(1, -1)}`, msg: "registry overflow"},
		"concatenation in a loop": {
			body: `local s = "" for i = 1, 1e6 do s = s .. "xxxxxxxxxx" end`, want: ErrMemoryBudget},
		"doubling a string": {body: `local s = "x" for i = 1, 40 do s = s .. s end`, want: ErrMemoryBudget, msg: stringLimit},
		"table.concat in a loop": {
			body: `local t = {} for i = 1, 500 do t[i] = string.rep("x", 1000) end for i = 1, 1e6 do local r = table.concat(t) end`, want: ErrMemoryBudget},
		"table.concat past the limit": {
			body: `local t = {} for i = 1, 100 do t[i] = "x" end table.concat(t, string.rep("y", 1e5))`, want: ErrMemoryBudget, msg: stringLimit},
		"os.date with a long format": {body: `os.date(string.rep("%c", 1e5))`, msg: "format longer than"},
		"gsub failing after reserving its result, in pcall": {
			body: `local s = string.rep("x", 1e6) for i = 1, 1e6 do pcall(string.gsub, s, "x", function() error("no") end) end`, want: ErrMemoryBudget},
		"format failing after reserving its result, in pcall": {
			body: `local f = string.rep("x", 1e6) .. "%d" for i = 1, 1e6 do pcall(string.format, f, {}) end`, want: ErrMemoryBudget},
		"budget error caught by pcall": {
			body: `for i = 1, 1e6 do pcall(string.rep, "x", 1e10) end`, want: ErrMemoryBudget},

		// Patterns.
		"find, exponential backtracking": {
			body: `string.find(string.rep("a", 5000), string.rep("a-", 20) .. "b")`, want: ErrInstructionBudget},
		"find, exponential backtracking, no step budget": {
			opts: noInstructionLimit,
			body: `string.find(string.rep("a", 5000), string.rep("a-", 20) .. "b")`, want: ErrTimeout},
		"match, nested repetitions": {
			body: `string.match(string.rep("a", 5000), string.rep("(a*)", 30) .. "b")`, want: ErrInstructionBudget},
		"gmatch, backtracking on every match": {
			body: `for w in string.rep("a", 5000):gmatch(string.rep("a?", 15) .. "b") do end`, want: ErrInstructionBudget},
		"gsub, backtracking on every position": {
			body: `string.gsub(string.rep("a", 5000), string.rep("a-", 10) .. "b", "")`, want: ErrInstructionBudget},
		"back reference to a long capture": {
			body: `string.find(string.rep("a", 2e5), "(.*)%1x")`, want: ErrInstructionBudget},
		"long character class": {
			body: `string.find(string.rep("a", 2e5), "[" .. string.rep("b", 2e5) .. "]")`, want: ErrInstructionBudget},
		"deeply nested pattern": {
			body: `string.find(string.rep("a", 300), string.rep("a?", 300))`, msg: "pattern too complex"},

		// Tables.
		"list of 10^8 entries":       {body: `local t = {} for i = 1, 1e8 do t[i] = i end`, want: ErrMemoryBudget},
		"index far past the end":     {body: `local t = {} t[6e7] = 1`, want: ErrMemoryBudget},
		"insert far past the end":    {body: `local t = {} table.insert(t, 6e7, 1)`, want: ErrMemoryBudget},
		"named entries":              {body: `local t = {} for i = 1, 1e8 do t["k" .. i] = i end`, want: ErrMemoryBudget},
		"number keys outside a list": {body: `local t = {} for i = 1, 1e8 do t[-i] = i end`, want: ErrMemoryBudget},
		"tables in a list":           {body: `local t = {} for i = 1, 1e8 do t[i] = {i, i} end`, want: ErrMemoryBudget},
		"objects in a list":          {body: `local t = {} for i = 1, 1e8 do local o = {} o.a = i t[i] = o end`, want: ErrMemoryBudget},
		"functions in a list":        {body: `local t = {} for i = 1, 1e8 do t[i] = function() return i end end`, want: ErrMemoryBudget},
		"multiple assignment":        {body: `local a, b = {}, {} for i = 1, 1e8 do a[i], b[i] = i, i end`, want: ErrMemoryBudget},
		"table.insert in a loop":     {body: `local t = {} for i = 1, 1e8 do table.insert(t, i) end`, want: ErrMemoryBudget},
		"sort of a long list": {
			body: `local t = {} for i = 1, 3e4 do t[i] = (i * 7919) % 3e4 end table.sort(t)`, want: ErrInstructionBudget},
		"kube helper on a large table in a loop": {
			body: `local kube = require("kube")
local c = {} for i = 1, 500 do c[i] = {name = "c" .. i} end
for i = 1, 1e6 do kube.accuratePodRequirements({spec = {containers = c}}) end`, want: ErrMemoryBudget},
		"kube helper failing on a large table, in pcall": {
			body: `local kube = require("kube")
local t = {} for i = 1, 3e4 do t[i] = i end t.x = 1
for i = 1, 1e6 do pcall(kube.accuratePodRequirements, {spec = t}) end`, want: ErrMemoryBudget},
		"unpack of a huge range": {body: `unpack({}, 1, 1e8)`, msg: "registry overflow"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			opts := tc.opts
			if opts == (Options{}) {
				opts = base
			}
			before := totalAlloc()
			h, u, err := newBounded(opts).run(t, tc.body)
			allocated := totalAlloc() - before
			switch {
			case err == nil:
				t.Fatalf("the script finished: want an error")
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want one containing %q", err, tc.msg)
			}
			if h != workv1alpha1.ResourceUnknown {
				t.Errorf("health %s, want Unknown", h)
			}
			if u.Bytes > int64(opts.MemoryBudget) {
				t.Errorf("the run accounted %d bytes, over its %d-byte budget", u.Bytes, opts.MemoryBudget)
			}
			// The process allocates more than the run accounts (the
			// VM's own bookkeeping, the test): a few budgets' worth, not
			// the gigabytes of a run that goes on.
			if limit := 4*opts.MemoryBudget + 16<<20; allocated > limit {
				t.Errorf("the process allocated %d bytes during the run, over %d (the run accounted %d)", allocated, limit, u.Bytes)
			}
		})
	}
}

// TestLegitScriptsWithinBudgets: the same operations at a sane size pass.
func TestLegitScriptsWithinBudgets(t *testing.T) {
	cases := map[string]string{
		"gsub":      `local s = string.rep("ab", 1000) local r, n = s:gsub("a", "xy") assert(#r == 3000 and n == 1000)`,
		"format":    `local r = string.format("%5d|%-5s|%.2f", 42, "ab", 3.14159) assert(r == "   42|ab   |3.14", r)`,
		"rep":       `assert(#string.rep("ab", 1e5) == 2e5)`,
		"concat":    `local s = "" for i = 1, 1000 do s = s .. "x" end assert(#s == 1000)`,
		"list":      `local t = {} for i = 1, 1e4 do t[i] = i end assert(#t == 1e4)`,
		"objects":   `local t = {} for i = 1, 1000 do t[i] = {name = "c" .. i, n = i} end assert(t[1000].name == "c1000")`,
		"find":      `assert(string.find(string.rep("a", 1e4) .. "b", "a-b") == 1)`,
		"sort":      `local t = {} for i = 1, 1000 do t[i] = -i end table.sort(t) assert(t[1] == -1000)`,
		"pcall ok":  `assert(not pcall(error, "x"))`,
		"kube":      `local kube = require("kube") assert(kube.resourceAdd("1", "500m") == "1500m")`,
		"near edge": `local s = string.rep("x", 4 * 1024 * 1024) assert(#s == 4194304)`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			h, u, err := newBounded(Options{Timeout: time.Minute}).run(t, body)
			if err != nil || h != workv1alpha1.ResourceHealthy {
				t.Fatalf("got %v, %v; want Healthy (the run accounted %d bytes, %d steps)", h, err, u.Bytes, u.Steps)
			}
		})
	}
}

// TestConcurrentRunsAreChargedSeparately runs a script that allocates a
// lot, over and over, while a light script with a small memory budget
// runs: the light script's runs must pass, charged only their own bytes.
func TestConcurrentRunsAreChargedSeparately(t *testing.T) {
	const heavyBytes = 32 << 20
	heavy := New(Options{Timeout: time.Minute, MemoryBudget: 2 * heavyBytes})
	var heavyRuns atomic.Int64
	heavyUsage := make(chan usage, 1)
	heavy.runEnded = func(u usage) {
		heavyRuns.Add(1)
		select {
		case heavyUsage <- u:
		default:
		}
	}
	heavyScript := compile(t, heavy, `function InterpretHealth(obj)
  for i = 1, 32 do local s = string.rep("x", 1024 * 1024) end
  return true
end`)
	light := newBounded(Options{Timeout: time.Minute, MemoryBudget: 256 << 10})

	stop := make(chan struct{})
	heavyDone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				heavyDone <- nil
				return
			default:
			}
			if _, err := heavyScript.InterpretHealth(obj(t, "{apiVersion: v1, kind: X}")); err != nil {
				heavyDone <- err
				return
			}
		}
	}()
	select {
	case u := <-heavyUsage:
		if u.Bytes < heavyBytes {
			t.Fatalf("a heavy run accounted %d bytes, want at least %d", u.Bytes, heavyBytes)
		}
	case <-time.After(runEndDeadline):
		t.Fatalf("no heavy run ended within %s", runEndDeadline)
	}

	// Run the light script until three heavy runs have ended meanwhile.
	before, from := totalAlloc(), heavyRuns.Load()
	deadline := time.Now().Add(time.Minute)
	runs := 0
	for heavyRuns.Load() < from+3 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d heavy runs ended during a minute of light runs", heavyRuns.Load()-from)
		}
		h, u, err := light.run(t, `local x = 0 for i = 1, 5000 do x = x + i end assert(x == 12502500)`)
		if err != nil || h != workv1alpha1.ResourceHealthy {
			t.Fatalf("light run %d: %v, %v (it accounted %d bytes); want Healthy", runs, h, err, u.Bytes)
		}
		if u.Bytes > 16<<10 {
			t.Errorf("light run %d accounted %d bytes, want only its own few", runs, u.Bytes)
		}
		runs++
	}
	allocated := totalAlloc() - before
	close(stop)
	if err := <-heavyDone; err != nil {
		t.Errorf("heavy run: %v", err)
	}
	// The test proves something only if the process allocated, while the
	// light script ran, much more than the light script's budget.
	if allocated < 2*heavyBytes {
		t.Fatalf("inconclusive: the process allocated only %d bytes during the light runs", allocated)
	}
	t.Logf("%d light runs passed while the process allocated %d MiB", runs, allocated>>20)
}

// TestAccountingTracksAllocations compares what runs account with what the
// process really allocates for them: the estimates must neither let a
// script allocate several times its budget nor fail a script at a fraction
// of it.
func TestAccountingTracksAllocations(t *testing.T) {
	cases := map[string]string{
		"list":                `local t = {} for i = 1, 2e4 do t[i] = i end`,
		"table.insert":        `local t = {} for i = 1, 2e4 do table.insert(t, i) end`,
		"named entries":       `local t = {} for i = 1, 5000 do t["k" .. i] = i end`,
		"number keys":         `local t = {} for i = 1, 5000 do t[-i] = i end`,
		"empty tables":        `local t = {} for i = 1, 5000 do t[i] = {} end`,
		"objects":             `local t = {} for i = 1, 2000 do local o = {} o.a = i o.b = i t[i] = o end`,
		"object constructors": `local t = {} for i = 1, 2000 do t[i] = {a = i, b = i} end`,
		"list constructors":   `local t = {} for i = 1, 2000 do t[i] = {i, i, i} end`,
		"keyed constructors":  `local t, k = {}, "k" for i = 1, 2000 do t[i] = {[k] = i, [-i] = i, [2] = i, i} end`,
		"lists of one":        `local t = {} for i = 1, 2000 do local l = {} l[1] = i t[i] = l end`,
		"functions":           `local t = {} for i = 1, 5000 do t[i] = function() return i end end`,
		"concatenation":       `local t = {} for i = 1, 5000 do t[i] = "abcdefgh" .. i end`,
		"string.rep":          `local t = {} for i = 1, 100 do t[i] = string.rep("x", 1e4) end`,
		"string.gsub":         `local s = string.rep("ab", 1e4) local t = {} for i = 1, 20 do t[i] = s:gsub("a", "xyz") end`,
		"string.format":       `local t = {} for i = 1, 2000 do t[i] = string.format("%d-%s", i, "abc") end`,
		"kube helpers": `local kube = require("kube") local c = {} for i = 1, 200 do c[i] = {name = "c" .. i, image = "x"} end
for i = 1, 20 do kube.accuratePodRequirements({spec = {containers = c}}) kube.getPodDependencies({spec = {containers = c}}, "ns") end`,
		"table.concat": `local t = {} for i = 1, 1000 do t[i] = "abcdefgh" end local r = {} for i = 1, 20 do r[i] = table.concat(t, ",") end`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBounded(Options{Timeout: time.Minute, MaxInstructions: 1 << 62, MemoryBudget: 1 << 40})
			b.run(t, body) // the state's own growth is not the script's
			runtime.GC()
			before := totalAlloc()
			_, u, err := b.run(t, body)
			allocated := int64(totalAlloc() - before)
			if err != nil {
				t.Fatal(err)
			}
			low := 0.5
			if raceDetector {
				low = 0.3
			}
			ratio := float64(u.Bytes) / float64(allocated)
			t.Logf("the run accounted %d bytes for %d allocated (%.2f)", u.Bytes, allocated, ratio)
			if ratio < low || ratio > 2 {
				t.Errorf("the run accounted %d bytes for %d allocated (%.2f), want %.1f to 2 times", u.Bytes, allocated, ratio, low)
			}
		})
	}
}

// TestBudgetErrorNamesTheLine: the error of a bound says where the script
// was when it hit it.
func TestBudgetErrorNamesTheLine(t *testing.T) {
	_, _, err := newBounded(Options{}).run(t, "local x = 1\nlocal s = string.rep('x', 1e10)")
	if !errors.Is(err, ErrMemoryBudget) || !strings.Contains(err.Error(), "script:3: lua script exceeded its memory budget") {
		t.Errorf("error %v, want the memory budget at script:3", err)
	}
}

// TestLargeKeysChargedBeforeAllocating: a number key far past a table's
// list makes gopher-lua fill every slot up to it, in one VM instruction. A
// constructor must be charged for those slots before they exist, as an
// assignment is, and storing nil there must not fill them at all.
func TestLargeKeysChargedBeforeAllocating(t *testing.T) {
	opts := Options{Timeout: time.Minute, MemoryBudget: 1 << 20}
	// 2^20 slots are 16 MiB: over the budget, cheap to fill if the guard
	// fails. The cases past it would fill gigabytes, so they run only
	// once the cheap ones have passed.
	cases := []struct {
		body      string
		wantError bool
	}{
		{`local t = {[1048576] = 1}`, true},
		{`local n = 1048576 local t = {[n] = 1}`, true},
		{`local t = {1, 2, a = 3, [2^20] = 1}`, true},
		{`local function f() return 1, 2 end local t = {[1048576] = 1, f()}`, true},
		{`local t = {[1048576] = nil}`, false},
		{`local t = {} t[1048576] = nil`, false},
		{`_G[1048576] = nil`, false},
		{`local t = {[67108863] = 1}`, true},
		{`local n = 67108863 local t = {[n] = 1}`, true},
		{`local t = {[67108863] = nil}`, false},
		{`local t = {} t[67108863] = nil`, false},
	}
	for i, tc := range cases {
		if i > 0 && strings.Contains(tc.body, "67108863") && t.Failed() {
			t.Fatalf("not running %q: it would fill gigabytes", tc.body)
		}
		b := newBounded(opts)
		b.run(t, "local t = {}") // the state's own growth is not the script's
		runtime.GC()
		before := totalAlloc()
		_, u, err := b.run(t, tc.body)
		allocated := totalAlloc() - before
		switch {
		case tc.wantError && !errors.Is(err, ErrMemoryBudget):
			t.Errorf("%q: error %v, want the memory budget", tc.body, err)
		case !tc.wantError && err != nil:
			t.Errorf("%q: %v", tc.body, err)
		}
		if allocated > 4<<20 || u.Bytes > int64(opts.MemoryBudget) {
			t.Errorf("%q: the process allocated %d bytes, the run accounted %d: want well under 4 MiB", tc.body, allocated, u.Bytes)
		}
	}
}
