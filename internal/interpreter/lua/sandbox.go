package lua

import (
	"regexp"

	glua "github.com/yuin/gopher-lua"
)

// removedBase are the base functions a script cannot call: Karmada's list
// (they reach outside the sandbox or around its rules), plus require and
// module, replaced by our own require.
var removedBase = []string{
	"collectgarbage", "dofile", "getfenv", "getmetatable", "load", "loadfile",
	"loadstring", "rawequal", "rawget", "rawset", "setfenv", "setmetatable",
	"module", "newproxy", "_printregs", "require",
}

// safeOs are the os functions a script may call: clocks only.
var safeOs = []string{"time", "date", "clock", "difftime"}

// newSandbox returns a Lua state with only the sandbox's libraries.
func newSandbox(o Options) *glua.LState {
	L := glua.NewState(glua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       o.CallStackSize,
		RegistrySize:        1024,
		RegistryMaxSize:     o.RegistryMaxSize,
		MinimizeStackMemory: true,
	})
	for _, lib := range []struct {
		name string
		open glua.LGFunction
	}{
		{glua.BaseLibName, glua.OpenBase},
		{glua.TabLibName, glua.OpenTable},
		{glua.StringLibName, glua.OpenString},
		{glua.MathLibName, glua.OpenMath},
		{glua.OsLibName, glua.OpenOs},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(glua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	for _, name := range removedBase {
		g.RawSetString(name, glua.LNil)
	}
	g.RawSetString("print", L.NewFunction(func(*glua.LState) int { return 0 }))

	// os: keep the clocks, drop the rest (execute, exit, getenv, remove...).
	fullOs := g.RawGetString(glua.OsLibName).(*glua.LTable)
	os := L.NewTable()
	for _, name := range safeOs {
		os.RawSetString(name, fullOs.RawGetString(name))
	}
	g.RawSetString(glua.OsLibName, os)
	loaded := L.GetField(L.Get(glua.RegistryIndex), "_LOADED")
	if t, ok := loaded.(*glua.LTable); ok {
		t.RawSetString(glua.OsLibName, os)
	}

	str := g.RawGetString(glua.StringLibName).(*glua.LTable)
	str.RawSetString("dump", glua.LNil)
	limitString(L, str, o.MaxStringBytes)
	limitTable(L, g.RawGetString(glua.TabLibName).(*glua.LTable), o.MaxStringBytes)

	kube := newKubeModule(L)
	g.RawSetString("require", L.NewFunction(func(L *glua.LState) int {
		name := L.CheckString(1)
		if name != KubeModule {
			L.RaiseError("module %q is not available: the sandbox only offers require(%q)", name, KubeModule)
			return 0
		}
		L.Push(kube)
		return 1
	}))
	return L
}

// formatWidth finds a width or precision of three digits or more in a
// string.format directive; Lua 5.1 allows two.
var formatWidth = regexp.MustCompile(`%[-+ #0]*(\d{3,}|\d*\.\d{3,})`)

// limitString wraps string.rep and string.format so that they cannot build
// a huge string in one call, where no instruction check can stop them.
func limitString(L *glua.LState, str *glua.LTable, max int) {
	rep := str.RawGetString("rep").(*glua.LFunction).GFunction
	str.RawSetString("rep", L.NewFunction(func(L *glua.LState) int {
		s := L.CheckString(1)
		n := L.CheckInt(2)
		if n > 0 && len(s) > 0 && n > max/len(s) {
			L.RaiseError("string.rep: result longer than %d bytes", max)
			return 0
		}
		return rep(L)
	}))
	format := str.RawGetString("format").(*glua.LFunction).GFunction
	str.RawSetString("format", L.NewFunction(func(L *glua.LState) int {
		if f := L.CheckString(1); formatWidth.MatchString(f) {
			L.RaiseError("string.format: invalid format %q (width or precision too long)", f)
			return 0
		}
		return format(L)
	}))
}

// limitTable wraps table.concat the same way.
func limitTable(L *glua.LState, tbl *glua.LTable, max int) {
	concat := tbl.RawGetString("concat").(*glua.LFunction).GFunction
	tbl.RawSetString("concat", L.NewFunction(func(L *glua.LState) int {
		t := L.CheckTable(1)
		sep := L.OptString(2, "")
		i := L.OptInt(3, 1)
		j := L.OptInt(4, t.Len())
		total := 0
		for k := i; k <= j; k++ {
			v := t.RawGetInt(k)
			if v == glua.LNil {
				break // concat itself reports the missing value
			}
			total += len(glua.LVAsString(v))
			if k > i {
				total += len(sep)
			}
			if total > max {
				L.RaiseError("table.concat: result longer than %d bytes", max)
				return 0
			}
		}
		return concat(L)
	}))
}
