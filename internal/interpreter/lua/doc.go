// Package lua runs the Lua scripts of ResourceInterpreterCustomizations
// (config.karmada.io/v1alpha1) in a sandbox, so that customizations written
// for Karmada run unchanged in Lifeboat.
//
// A Runtime compiles scripts once (cached by the SHA-256 of their source)
// and runs them on pooled gopher-lua states. Every call is bounded:
//
//   - time: a deadline per call (Options.Timeout, 1s by default), checked
//     before every VM instruction; the caller is released at the deadline
//     even when a Go library function (a pathological string pattern) is
//     still running, and that state is thrown away;
//   - instructions: Options.MaxInstructions VM instructions per call;
//   - memory (crude): the bytes the whole process allocates while the call
//     runs, sampled every 1024 instructions and every millisecond, may not
//     exceed Options.MemoryBudget; the Lua stack may not grow beyond
//     Options.RegistryMaxSize slots nor nest calls deeper than
//     Options.CallStackSize; string.rep, string.format and table.concat
//     refuse to build strings longer than Options.MaxStringBytes.
//
// The sandbox offers the base library without dofile, loadfile, load,
// loadstring, module, collectgarbage, getfenv, setfenv, getmetatable,
// setmetatable, rawequal, rawget, rawset and newproxy (Karmada's list), and
// with print discarding its output; string (without dump), table and math;
// os.time, os.date, os.clock and os.difftime only; require("kube") and
// nothing else. There is no io, debug, package or coroutine library.
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
