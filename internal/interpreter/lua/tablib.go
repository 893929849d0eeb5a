package lua

import (
	"sort"

	glua "github.com/yuin/gopher-lua"
)

// The table library of the sandbox: gopher-lua's getn and maxn; insert and
// remove checked against the read-only library tables, insert charged for
// the slots it adds; concat and sort replaced by versions that are bounded
// (the string limit, the budgets) and interruptible.

// tableFuncs returns the sandbox's table functions; orig is gopher-lua's
// table library and frozen the tables scripts may not change.
func tableFuncs(orig *glua.LTable, frozen map[*glua.LTable]string) map[string]glua.LGFunction {
	keep := func(name string) glua.LGFunction {
		return orig.RawGetString(name).(*glua.LFunction).GFunction
	}
	writable := func(L *glua.LState, what string) *glua.LTable {
		t := L.CheckTable(1)
		if name, ok := frozen[t]; ok {
			L.RaiseError("%s: the %s library cannot be modified", what, name)
		}
		return t
	}
	insert, remove := keep("insert"), keep("remove")
	return map[string]glua.LGFunction{
		"getn": keep("getn"),
		"maxn": keep("maxn"),
		"remove": func(L *glua.LState) int {
			writable(L, "table.remove")
			return remove(L)
		},
		"insert": func(L *glua.LState) int {
			t := writable(L, "table.insert")
			var bytes int64
			switch L.GetTop() {
			case 1:
			case 2:
				if L.Get(2) != glua.LNil {
					bytes = newEntryBytes(t, glua.LNumber(t.MaxN()+1))
				}
			default:
				if pos := L.CheckInt(2); pos >= 1 && pos <= t.MaxN() {
					bytes = arraySlotBytes // shifts the list by one
				} else {
					bytes = newEntryBytes(t, glua.LNumber(pos))
				}
			}
			check(L, meterOf(L).alloc(bytes))
			return insert(L)
		},
		"concat": tabConcat,
		"sort": func(L *glua.LState) int {
			return tabSort(L, writable(L, "table.sort"))
		},
	}
}

// tabConcat is table.concat with gopher-lua's handling of the range (both
// ends clamped to the list), the result's length checked before it is
// built.
func tabConcat(L *glua.LState) int {
	t := L.CheckTable(1)
	sep := L.OptString(2, "")
	n := t.Len()
	i := L.OptInt(3, 1)
	j := L.OptInt(4, n)
	if L.GetTop() == 3 && (i > n || i < 1) {
		L.Push(glua.LString(""))
		return 1
	}
	i, j = max(min(i, n), 1), min(j, n)
	if i > j {
		L.Push(glua.LString(""))
		return 1
	}
	m := meterOf(L)
	total := 0
	for k := i; k <= j; k++ {
		v := t.RawGetInt(k)
		if !glua.LVCanConvToString(v) {
			L.RaiseError("invalid value (%s) at index %d in table for concat", v.Type().String(), k)
		}
		total += len(glua.LVAsString(v))
		if k < j {
			total += len(sep)
		}
		if total > m.stringLimit() {
			check(L, m.allocString("table.concat", total))
		}
	}
	check(L, m.spend(int64(j-i+1)))
	b := newBuffer(L, "table.concat", total)
	for k := i; k <= j; k++ {
		b.add(glua.LVAsString(t.RawGetInt(k)))
		if k < j {
			b.add(sep)
		}
	}
	b.push()
	return 1
}

// tabSort sorts the list t[1..#t] with < or the given comparison. Every
// comparison counts against the instruction budget, so sorting a large
// list stops at the deadline.
func tabSort(L *glua.LState, t *glua.LTable) int {
	var less *glua.LFunction
	if L.GetTop() >= 2 && L.Get(2) != glua.LNil {
		less = L.CheckFunction(2)
	}
	m := meterOf(L)
	n := t.Len()
	check(L, m.alloc(int64(n)*16))
	s := &sorter{L: L, m: m, less: less, values: make([]glua.LValue, n)}
	for i := range n {
		s.values[i] = t.RawGetInt(i + 1)
	}
	sort.Sort(s)
	check(L, m.spend(s.steps))
	for i, v := range s.values {
		t.RawSetInt(i+1, v)
	}
	return 0
}

type sorter struct {
	L      *glua.LState
	m      *meter
	less   *glua.LFunction
	values []glua.LValue
	steps  int64
}

func (s *sorter) Len() int      { return len(s.values) }
func (s *sorter) Swap(i, j int) { s.values[i], s.values[j] = s.values[j], s.values[i] }

func (s *sorter) Less(i, j int) bool {
	if s.steps++; s.steps == stepBatch {
		check(s.L, s.m.spend(s.steps))
		s.steps = 0
	}
	if s.less == nil {
		return s.L.LessThan(s.values[i], s.values[j])
	}
	s.L.Push(s.less)
	s.L.Push(s.values[i])
	s.L.Push(s.values[j])
	s.L.Call(2, 1)
	r := glua.LVAsBool(s.L.Get(-1))
	s.L.Pop(1)
	return r
}
