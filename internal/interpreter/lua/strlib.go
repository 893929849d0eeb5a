package lua

import (
	"fmt"
	"strings"

	glua "github.com/yuin/gopher-lua"
)

// The string library of the sandbox. gopher-lua's functions that only read
// (len, sub, byte) are kept; every function that builds a string or
// searches one is replaced by one that checks the string limit and charges
// the run's memory budget before it allocates, and whose searches count
// against the instruction budget and stop at the deadline.

// stringFuncs returns the sandbox's string functions; orig is gopher-lua's
// string table.
func stringFuncs(orig *glua.LTable) map[string]glua.LGFunction {
	keep := func(name string) glua.LGFunction {
		return orig.RawGetString(name).(*glua.LFunction).GFunction
	}
	return map[string]glua.LGFunction{
		"byte":    keep("byte"),
		"len":     keep("len"),
		"sub":     keep("sub"),
		"char":    strChar,
		"find":    func(L *glua.LState) int { return strFind(L, true) },
		"match":   func(L *glua.LState) int { return strFind(L, false) },
		"gmatch":  strGmatch,
		"gfind":   strGmatch, // Lua 5.0's name, which gopher-lua keeps
		"gsub":    strGsub,
		"format":  strFormat,
		"rep":     strRep,
		"lower":   mapString("string.lower", strings.ToLower),
		"upper":   mapString("string.upper", strings.ToUpper),
		"reverse": mapString("string.reverse", reverse),
	}
}

// buffer builds a string within the run's string limit. Every allocation
// it makes is charged before it is made, so that a Lua error raised while
// it builds (and caught with pcall) leaves nothing uncharged.
type buffer struct {
	L    *glua.LState
	m    *meter
	what string
	buf  []byte
}

func newBuffer(L *glua.LState, what string, size int) *buffer {
	b := &buffer{L: L, m: meterOf(L), what: what}
	b.reserve(min(size, b.m.stringLimit()))
	return b
}

// reserve makes room for n more bytes, doubling the capacity up to the
// string limit.
func (b *buffer) reserve(n int) {
	need := len(b.buf) + n
	if need <= cap(b.buf) {
		return
	}
	check(b.L, b.m.fitString(b.what, need))
	size := min(max(2*cap(b.buf), need, 64), b.m.stringLimit())
	check(b.L, b.m.alloc(int64(size)))
	buf := make([]byte, len(b.buf), size)
	copy(buf, b.buf)
	b.buf = buf
}

func (b *buffer) add(s string) {
	b.reserve(len(s))
	b.buf = append(b.buf, s...)
}

func (b *buffer) addByte(c byte) {
	b.reserve(1)
	b.buf = append(b.buf, c)
}

// push pushes the built string (a copy, charged).
func (b *buffer) push() {
	check(b.L, b.m.allocString(b.what, len(b.buf)))
	b.L.Push(glua.LString(b.buf))
}

func strChar(L *glua.LState) int {
	top := L.GetTop()
	b := newBuffer(L, "string.char", top)
	for i := 1; i <= top; i++ {
		c := L.CheckInt(i)
		if c < 0 || c > 255 {
			L.ArgError(i, "invalid value")
		}
		b.addByte(byte(c))
	}
	b.push()
	return 1
}

func strRep(L *glua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || s == "" {
		L.Push(glua.LString(""))
		return 1
	}
	m := meterOf(L)
	if n > m.stringLimit()/len(s) {
		check(L, m.allocString("string.rep", m.stringLimit()+1))
	}
	check(L, m.allocString("string.rep", len(s)*n))
	L.Push(glua.LString(strings.Repeat(s, n)))
	return 1
}

// mapString is a function from a string to a string about as long (upper
// and lower cases of a UTF-8 letter may differ in length by a few bytes).
func mapString(what string, f func(string) string) glua.LGFunction {
	return func(L *glua.LState) int {
		s := L.CheckString(1)
		m := meterOf(L)
		if len(s) > m.stringLimit() {
			check(L, m.allocString(what, len(s)))
		}
		out := f(s)
		check(L, m.allocString(what, len(out)))
		L.Push(glua.LString(out))
		return 1
	}
}

func reverse(s string) string {
	out := make([]byte, len(s))
	for i := range len(s) {
		out[len(s)-1-i] = s[i]
	}
	return string(out)
}

// posrelat turns a negative string position into one from the start.
func posrelat(pos, n int) int {
	if pos < 0 {
		pos += n + 1
	}
	return max(pos, 0)
}

// strFind is string.find (find) and string.match.
func strFind(L *glua.LState, find bool) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	init := posrelat(L.OptInt(3, 1), len(src)) - 1
	init = min(max(init, 0), len(src))
	m := meterOf(L)
	if find && (glua.LVAsBool(L.Get(4)) || !strings.ContainsAny(pat, specials)) {
		check(L, m.spend(1+int64(len(src)-init)/32))
		if i := strings.Index(src[init:], pat); i >= 0 {
			L.Push(glua.LNumber(init + i + 1))
			L.Push(glua.LNumber(init + i + len(pat)))
			return 2
		}
		L.Push(glua.LNil)
		return 1
	}
	ms := newMatcher(L, src, pat)
	p, anchor := 0, strings.HasPrefix(pat, "^")
	if anchor {
		p = 1
	}
	for s := init; ; s++ {
		ms.level = 0
		if e := ms.match(s, p); e != -1 {
			ms.flush()
			if find {
				L.Push(glua.LNumber(s + 1))
				L.Push(glua.LNumber(e))
				return ms.pushCaptures(s, e, false) + 2
			}
			return ms.pushCaptures(s, e, true)
		}
		if s >= len(src) || anchor {
			break
		}
	}
	ms.flush()
	L.Push(glua.LNil)
	return 1
}

// strGmatch returns an iterator that finds the next match on each call.
// It searches lazily, so a loop that stops early does not pay for the
// rest of the subject.
func strGmatch(L *glua.LState) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	pos := 0
	check(L, meterOf(L).alloc(closureBytes))
	L.Push(L.NewFunction(func(L *glua.LState) int {
		ms := newMatcher(L, src, pat)
		for ; pos <= len(src); pos++ {
			ms.level = 0
			if e := ms.match(pos, 0); e != -1 {
				start := pos
				pos = e
				if e == start {
					pos++ // an empty match: move on
				}
				ms.flush()
				return ms.pushCaptures(start, e, true)
			}
		}
		ms.flush()
		return 0
	}))
	return 1
}

func strGsub(L *glua.LState) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	repl := L.Get(3)
	switch repl.Type() {
	case glua.LTNumber, glua.LTString, glua.LTFunction, glua.LTTable:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	maxN := L.OptInt(4, len(src)+1)
	p, anchor := 0, strings.HasPrefix(pat, "^")
	if anchor {
		p = 1
	}
	ms := newMatcher(L, src, pat)
	b := newBuffer(L, "string.gsub", len(src))
	s, n := 0, 0
loop:
	for n < maxN {
		ms.level = 0
		e := ms.match(s, p)
		if e != -1 {
			n++
			ms.flush()
			gsubValue(ms, b, s, e, repl)
		}
		switch {
		case e != -1 && e > s:
			s = e
		case s < len(src):
			b.addByte(src[s])
			s++
		default:
			break loop // end of the subject
		}
		if anchor {
			break
		}
	}
	ms.flush()
	b.add(src[s:])
	b.push()
	L.Push(glua.LNumber(n))
	return 2
}

// gsubValue appends the replacement of the match src[s:e].
func gsubValue(ms *matcher, b *buffer, s, e int, repl glua.LValue) {
	L := ms.L
	var v glua.LValue
	switch r := repl.(type) {
	case glua.LString, glua.LNumber:
		gsubString(ms, b, s, e, glua.LVAsString(r))
		return
	case *glua.LFunction:
		L.Push(r)
		n := ms.pushCaptures(s, e, true)
		L.Call(n, 1)
		v = L.Get(-1)
		L.Pop(1)
	case *glua.LTable:
		v = L.GetTable(r, ms.captureValue(0, s, e))
	}
	switch v.(type) {
	case *glua.LNilType:
		b.add(ms.src[s:e]) // keep the original text
	case glua.LBool:
		if v == glua.LFalse {
			b.add(ms.src[s:e])
			return
		}
		L.RaiseError("invalid replacement value (a %s)", v.Type())
	case glua.LString, glua.LNumber:
		b.add(glua.LVAsString(v))
	default:
		L.RaiseError("invalid replacement value (a %s)", v.Type())
	}
}

// gsubString appends a replacement string: %0 is the match, %1-%9 its
// captures, %% a percent sign.
func gsubString(ms *matcher, b *buffer, s, e int, repl string) {
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '%' {
			b.addByte(c)
			continue
		}
		i++
		switch {
		case i == len(repl):
			ms.error("invalid use of '%' in replacement string")
		case repl[i] == '0':
			b.add(ms.src[s:e])
		case isDigit(repl[i]):
			b.add(glua.LVAsString(ms.captureValue(int(repl[i]-'1'), s, e)))
		default:
			b.addByte(repl[i])
		}
	}
}

// strFormat is string.format: C's directives (flags, a width and a
// precision of at most two digits each, one conversion letter), each
// rendered as gopher-lua renders it. The result is built within the string
// limit.
func strFormat(L *glua.LState) int {
	f := L.CheckString(1)
	b := newBuffer(L, "string.format", len(f))
	arg := 1
	for i := 0; i < len(f); {
		c := f[i]
		if c != '%' {
			b.addByte(c)
			i++
			continue
		}
		if i+1 < len(f) && f[i+1] == '%' {
			b.addByte('%')
			i += 2
			continue
		}
		spec, verb, next := scanFormat(L, f, i)
		i = next
		arg++
		if arg > L.GetTop() {
			L.ArgError(arg, "no value")
		}
		b.add(formatOne(L, arg, spec, verb))
		check(L, meterOf(L).spend(1))
	}
	b.push()
	return 1
}

// scanFormat reads the directive at f[i] ("%-5.2f") and returns it, its
// conversion letter and the index after it.
func scanFormat(L *glua.LState, f string, i int) (string, byte, int) {
	start := i
	i++
	digits := func() {
		n := 0
		for i < len(f) && isDigit(f[i]) {
			i++
			n++
		}
		if n > 2 {
			L.RaiseError("invalid format (width or precision too long)")
		}
	}
	flags := 0
	for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
		i++
		flags++
	}
	if flags > 5 {
		L.RaiseError("invalid format (repeated flags)")
	}
	digits()
	if i < len(f) && f[i] == '.' {
		i++
		digits()
	}
	if i >= len(f) || !isAlpha(f[i]) {
		opt := "%"
		if i < len(f) {
			opt += string(f[i])
		}
		L.RaiseError("invalid option '%s' to 'format'", opt)
	}
	return f[start : i+1], f[i], i + 1
}

// formatOne renders argument arg with one directive. Strings and numbers
// go to fmt as gopher-lua passes them; %s of another value is its
// tostring, and other conversions of it are an error (fmt would dump the
// value's Go structure).
func formatOne(L *glua.LState, arg int, spec string, verb byte) string {
	v := L.Get(arg)
	switch v.(type) {
	case glua.LString, glua.LNumber:
	default:
		if verb != 's' && verb != 'q' && verb != 'v' {
			L.ArgError(arg, fmt.Sprintf("number expected, got %s", v.Type()))
		}
		v = glua.LString(v.String())
	}
	m := meterOf(L)
	if verb == 'q' {
		// Quoting may write up to four bytes per byte.
		if s, ok := v.(glua.LString); ok && 4*len(s) > m.stringLimit() {
			check(L, m.allocString("string.format", 4*len(s)))
		}
	}
	out := fmt.Sprintf(spec, v)
	check(L, m.allocString("string.format", len(out)))
	return out
}
