// Package lua runs the Lua scripts of ResourceInterpreterCustomizations
// (config.karmada.io/v1alpha1) in a sandbox, so that customizations written
// for Karmada run unchanged in Lifeboat.
//
// A Runtime compiles scripts once (cached by the SHA-256 of their source)
// and runs them on pooled gopher-lua states. Every call runs on its own
// goroutine under a meter (meter.go) that bounds that call alone:
//
//   - time: a deadline per call (Options.Timeout, 1s by default);
//   - instructions: Options.MaxInstructions VM instructions plus units of
//     library work (pattern-matching steps, sort comparisons, converted
//     values);
//   - memory: Options.MemoryBudget bytes allocated for the strings, tables
//     and functions the script builds, estimated per value (hooks.go);
//   - strings: no string a script builds may exceed Options.MaxStringBytes;
//   - the Lua stack may not grow beyond Options.RegistryMaxSize slots nor
//     nest calls deeper than Options.CallStackSize.
//
// The VM checks the meter before every instruction. The operations that
// can allocate without bound are metered where they happen: scripts are
// compiled with .., assignments to table fields, table constructors and
// function definitions calling hooks that charge the meter first
// (rewrite.go), and the sandbox's string and table functions (strlib.go,
// tablib.go, pattern.go, gopher-lua's pattern matcher replaced by a
// bounded one) charge what they build and check the deadline while they
// work. So a call that exceeds a bound stops where it is, and its
// goroutine ends with it; nothing is left running.
//
// The sandbox offers the base library without dofile, loadfile, load,
// loadstring, module, collectgarbage, getfenv, setfenv, getmetatable,
// setmetatable, rawequal, rawget, rawset and newproxy (Karmada's list), and
// with print discarding its output; string (without dump), table and math;
// os.time, os.date, os.clock and os.difftime only; require("kube") and
// nothing else. There is no io, debug, package or coroutine library. The
// library tables are read-only and every call gets fresh globals (_G
// included), so a call leaves nothing behind on its pooled state.
//
// Values cross between Go and Lua as Karmada converts them: JSON objects
// become tables with string keys, arrays 1-based sequences; integral numbers
// come back as integers; an empty table comes back as whatever the input
// object held at the same place ({} or []), as an object for the top-level
// metadata, spec and status and metadata's labels and annotations, and as a
// list otherwise.
//
// The package writes no API objects.
package lua
