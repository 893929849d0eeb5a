package lua

import (
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

// registryGrowStep is how many slots the Lua value stack grows by.
const registryGrowStep = 4096

// maxOsDateFormat bounds os.date's format: its result may be several times
// longer than the format.
const maxOsDateFormat = 1024

// sandbox is a Lua state with only the sandbox's libraries, and the
// metering hooks a compiled script's main chunk is called with.
type sandbox struct {
	L     *glua.LState
	hooks []glua.LValue
}

// newSandbox returns a Lua state with only the sandbox's libraries. The
// library tables are read-only to scripts, and every library function that
// allocates or searches is bounded by the run's meter.
func newSandbox(o Options) *sandbox {
	L := glua.NewState(glua.Options{
		SkipOpenLibs:    true,
		CallStackSize:   o.CallStackSize,
		RegistrySize:    1024,
		RegistryMaxSize: o.RegistryMaxSize,
		// The value stack grows by copying; in steps of gopher-lua's
		// default 32 slots, pushing 64Ki values (unpack, string.byte)
		// would copy a gigabyte.
		RegistryGrowStep:    registryGrowStep,
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
	os.RawSetString("date", L.NewFunction(osDate(fullOs.RawGetString("date").(*glua.LFunction).GFunction)))
	g.RawSetString(glua.OsLibName, os)
	if loaded, ok := L.GetField(L.Get(glua.RegistryIndex), "_LOADED").(*glua.LTable); ok {
		loaded.RawSetString(glua.OsLibName, os)
	}

	str := g.RawGetString(glua.StringLibName).(*glua.LTable)
	tbl := g.RawGetString(glua.TabLibName).(*glua.LTable)
	kube := newKubeModule(L)
	frozen := map[*glua.LTable]string{
		str: glua.StringLibName,
		tbl: glua.TabLibName,
		g.RawGetString(glua.MathLibName).(*glua.LTable): glua.MathLibName,
		os:   glua.OsLibName,
		kube: KubeModule,
	}
	// string is also the strings' metatable (s:rep(3)): change it in place.
	setFuncs(L, str, stringFuncs(str))
	setFuncs(L, tbl, tableFuncs(tbl, frozen))

	g.RawSetString("require", L.NewFunction(func(L *glua.LState) int {
		name := L.CheckString(1)
		if name != KubeModule {
			L.RaiseError("module %q is not available: the sandbox only offers require(%q)", name, KubeModule)
			return 0
		}
		L.Push(kube)
		return 1
	}))
	return &sandbox{L: L, hooks: newHooks(L, frozen)}
}

// setFuncs makes funcs the only functions of library table t: a function
// gopher-lua adds in a later version is left out rather than left
// unbounded.
func setFuncs(L *glua.LState, t *glua.LTable, funcs map[string]glua.LGFunction) {
	var keys []glua.LValue
	t.ForEach(func(k, v glua.LValue) {
		if _, ok := v.(*glua.LFunction); ok {
			keys = append(keys, k)
		}
	})
	for _, k := range keys {
		t.RawSet(k, glua.LNil)
	}
	for name, f := range funcs {
		t.RawSetString(name, L.NewFunction(f))
	}
}

// osDate wraps os.date: a bounded format, a charged result.
func osDate(date glua.LGFunction) glua.LGFunction {
	return func(L *glua.LState) int {
		if L.GetTop() >= 1 {
			if f := L.CheckString(1); len(f) > maxOsDateFormat {
				L.ArgError(1, "format longer than 1024 bytes")
			}
		}
		n := date(L)
		var bytes int64
		switch v := L.Get(-1).(type) {
		case glua.LString:
			bytes = stringBytes + int64(len(v))
		case *glua.LTable:
			bytes = tableBytes + hashStartBytes + 9*hashEntryBytes
		}
		check(L, meterOf(L).alloc(bytes))
		return n
	}
}
