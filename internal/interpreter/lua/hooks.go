package lua

import (
	"math"
	"strings"

	glua "github.com/yuin/gopher-lua"
)

// What the memory budget charges, in bytes: estimates of what gopher-lua
// and Go allocate for each value a script builds, garbage included (checked
// against real allocations by TestAccountingTracksAllocations).
const (
	// stringBytes is a string value's header and boxing; its content is
	// charged too.
	stringBytes = 32
	// tableBytes is an empty table.
	tableBytes = 96
	// arrayStartBytes is the array part gopher-lua allocates on a table's
	// first list entry (32 slots).
	arrayStartBytes = 512
	// arraySlotBytes is one list entry with its share of the copies the
	// array part leaves behind as it grows (Go grows a large slice by a
	// quarter, so a slot is copied about four times).
	arraySlotBytes = 80
	// listFieldBytes is a list entry of a table constructor, allocated at
	// the exact size.
	listFieldBytes = 16
	// hashStartBytes is the hash part gopher-lua allocates on a table's
	// first named entry (a 32-entry map and the key index).
	hashStartBytes = 2560
	// hashFieldsBytes is the hash part of a constructor with named fields.
	hashFieldsBytes = 256
	// hashEntryBytes is one named entry: the map entry, its place in the
	// key list and in the key index, with their growth.
	hashEntryBytes = 256
	// closureBytes is a function value; upvalueBytes each variable it
	// captures.
	closureBytes = 64
	upvalueBytes = 48
)

// The metering hooks compiled scripts call in place of the VM operations
// that can allocate without bound (see rewrite.go). Each charges the run's
// meter before (or, for constructors, right after) it allocates.
const (
	hookSet     = "(set)"
	hookConcat  = "(concat)"
	hookTable   = "(table)"
	hookClosure = "(closure)"
	hookFields  = "(fields)"
)

// hookNames is the order the hooks are passed to a script's main chunk.
var hookNames = []string{hookSet, hookConcat, hookTable, hookClosure, hookFields}

// newHooks returns the hook functions of a sandbox, in hookNames order.
// frozen are the sandbox's library tables, which scripts may not change.
func newHooks(L *glua.LState, frozen map[*glua.LTable]string) []glua.LValue {
	set := func(L *glua.LState) int {
		obj, key, val := L.Get(1), L.Get(2), L.Get(3)
		if t, ok := obj.(*glua.LTable); ok {
			if name, ok := frozen[t]; ok {
				L.RaiseError("the %s library cannot be modified", name)
				return 0
			}
			if validKey(key) && t.RawGet(key) == glua.LNil {
				if val != glua.LNil {
					check(L, meterOf(L).alloc(newEntryBytes(t, key)))
				} else if L.GetMetaField(t, "__newindex") == glua.LNil {
					// Nothing to remove. gopher-lua would still grow
					// the list up to a number key, nils all the way.
					return 0
				}
			}
		}
		L.SetTable(obj, key, val)
		return 0
	}
	concat := func(L *glua.LState) int {
		L.Push(concatValues(L, 1, L.GetTop()))
		return 1
	}
	table := func(L *glua.LState) int {
		t := L.CheckTable(1)
		list, named := L.ToInt(2), L.ToInt(3)
		n := int64(tableBytes) + int64(max(list, t.MaxN()))*listFieldBytes
		if named > 0 {
			n += hashFieldsBytes + int64(named)*hashEntryBytes
		}
		check(L, meterOf(L).alloc(n))
		L.Push(t)
		return 1
	}
	closure := func(L *glua.LState) int {
		f := L.CheckFunction(1)
		check(L, meterOf(L).alloc(closureBytes+int64(len(f.Upvalues))*upvalueBytes))
		L.Push(f)
		return 1
	}
	fields := func(L *glua.LState) int {
		L.Push(buildTable(L, L.CheckString(1), L.CheckTable(2)))
		return 1
	}
	return []glua.LValue{L.NewFunction(set), L.NewFunction(concat), L.NewFunction(table), L.NewFunction(closure), L.NewFunction(fields)}
}

// validKey reports whether key may index a table: not nil, not NaN.
func validKey(key glua.LValue) bool {
	if n, ok := key.(glua.LNumber); ok {
		return !math.IsNaN(float64(n))
	}
	return key != glua.LNil
}

// buildTable builds the table of a constructor from its fields evaluated
// into flat (see fieldsTable in rewrite.go), charging every entry before it
// stores it. As gopher-lua does, a field [k] = v is stored when it comes
// and list fields fifty at a time and at the end (the order is undefined
// in Lua, so this only matters when a constructor repeats a key).
func buildTable(L *glua.LState, layout string, flat *glua.LTable) *glua.LTable {
	m := meterOf(L)
	// flat is built already; its size is bounded by the source and, for a
	// last call or ..., by the stack.
	size := flat.MaxN()
	list := strings.Count(layout, "l")
	if strings.HasSuffix(layout, "*") {
		list += max(size-list-2*strings.Count(layout, "k"), 0)
	}
	check(L, m.alloc(2*tableBytes+int64(size)*listFieldBytes+int64(list)*listFieldBytes))
	t := L.CreateTable(list, 0)
	var pending []glua.LValue
	next := 1
	flush := func() {
		for _, v := range pending {
			t.RawSetInt(next, v)
			next++
		}
		pending = pending[:0]
	}
	at := 1
	for i := 0; i < len(layout); i++ {
		switch layout[i] {
		case 'l':
			pending = append(pending, flat.RawGetInt(at))
			at++
			if len(pending) == 50 { // gopher-lua's FieldsPerFlush
				flush()
			}
		case '*':
			for ; at <= size; at++ {
				pending = append(pending, flat.RawGetInt(at))
			}
		case 'k':
			key, val := flat.RawGetInt(at), flat.RawGetInt(at+1)
			at += 2
			if !validKey(key) {
				L.RawSet(t, key, val) // raises gopher-lua's error
			}
			if t.RawGet(key) == glua.LNil {
				if val == glua.LNil {
					continue // as in (set): nothing to remove
				}
				check(L, m.alloc(newEntryBytes(t, key)))
			}
			t.RawSet(key, val)
		}
	}
	flush()
	return t
}

// newEntryBytes estimates what storing a value under a new key of t
// allocates. A list index past the end of the list grows the array part up
// to it (gopher-lua fills the gap with nils), so t[1e7] = 1 is charged for
// ten million slots before they are allocated.
func newEntryBytes(t *glua.LTable, key glua.LValue) int64 {
	if n, ok := key.(glua.LNumber); ok {
		f := float64(n)
		if f == math.Trunc(f) && f >= 1 && f < float64(glua.MaxArrayIndex) {
			i := int(f)
			if i > 1 && t.RawGetInt(i-1) != glua.LNil {
				return arraySlotBytes // an append, the common case
			}
			last := t.MaxN()
			bytes := int64(max(i-last, 1)) * arraySlotBytes
			if last == 0 {
				bytes += arrayStartBytes
			}
			return bytes
		}
	}
	if !hasNamedEntries(t) {
		return hashStartBytes + hashEntryBytes
	}
	return hashEntryBytes
}

// hasNamedEntries reports whether t holds a value under a key outside its
// list part: Next after the last list entry goes on to the named entries.
func hasNamedEntries(t *glua.LTable) bool {
	var k glua.LValue = glua.LNil
	if n := t.MaxN(); n > 0 {
		k = glua.LNumber(n)
	}
	k, _ = t.Next(k)
	return k != glua.LNil
}

// concatValues is the .. operator on the stack values first to last:
// strings and numbers only (scripts cannot set a __concat metamethod), the
// result bounded by the string limit and charged before it is built (a
// number counts for the longest text it can have).
func concatValues(L *glua.LState, first, last int) glua.LValue {
	total := 0
	for i := last; i >= first; i-- {
		v := L.Get(i)
		if !glua.LVCanConvToString(v) {
			// The VM's message: it folds from the right.
			var lhs, rhs glua.LValue = v, glua.LString("")
			if i == last && i > first {
				lhs, rhs = L.Get(i-1), v
			}
			L.RaiseError("cannot perform concat operation between %v and %v", lhs.Type().String(), rhs.Type().String())
			return glua.LNil
		}
		if s, ok := v.(glua.LString); ok {
			total += len(s)
		} else {
			total += 24 // at most a number's text
		}
	}
	check(L, meterOf(L).allocString("concatenation (..)", total))
	var b strings.Builder
	b.Grow(total)
	for i := first; i <= last; i++ {
		b.WriteString(glua.LVAsString(L.Get(i)))
	}
	return glua.LString(b.String())
}
