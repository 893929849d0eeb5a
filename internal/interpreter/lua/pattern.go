package lua

import (
	glua "github.com/yuin/gopher-lua"
)

// Lua 5.1 pattern matching (lstrlib.c), with its work bounded: every step
// of the backtracking search counts against the run's instruction budget
// and checks its deadline, so a pathological pattern is stopped where it
// runs instead of holding its goroutine for minutes. gopher-lua's own
// matcher cannot be interrupted.

const (
	maxCaptures   = 32  // LUA_MAXCAPTURES
	maxMatchDepth = 200 // MAXCCALLS of Lua 5.2 and later: nested pattern items
	specials      = "^$*+?.([%-"

	capUnfinished = -1
	capPosition   = -2

	// stepBatch is how many matching steps pass between two budget checks.
	stepBatch = 256
)

type capture struct {
	init, len int
}

// matcher matches one pattern against one subject. Positions are byte
// offsets; -1 is "no match".
type matcher struct {
	L       *glua.LState
	m       *meter
	src     string
	pat     string
	level   int
	capture [maxCaptures]capture
	depth   int
	steps   int64
}

func newMatcher(L *glua.LState, src, pat string) *matcher {
	return &matcher{L: L, m: meterOf(L), src: src, pat: pat}
}

// step counts n units of matching work.
func (ms *matcher) step(n int64) {
	ms.steps += n
	if ms.steps >= stepBatch {
		ms.flush()
	}
}

// flush charges the work counted so far; every matching function calls it
// before it returns.
func (ms *matcher) flush() {
	n := ms.steps
	ms.steps = 0
	check(ms.L, ms.m.spend(n))
}

func (ms *matcher) error(msg string) {
	ms.L.RaiseError("%s", msg)
}

// match returns the end of a match of pat[p:] at src[s:], or -1.
func (ms *matcher) match(s, p int) int {
	ms.depth++
	if ms.depth > maxMatchDepth {
		ms.error("pattern too complex")
	}
	r := ms.doMatch(s, p)
	ms.depth--
	return r
}

func (ms *matcher) doMatch(s, p int) int {
	pat := ms.pat
	for {
		ms.step(1)
		if p == len(pat) {
			return s
		}
		switch pat[p] {
		case '(':
			if p+1 < len(pat) && pat[p+1] == ')' {
				return ms.startCapture(s, p+2, capPosition)
			}
			return ms.startCapture(s, p+1, capUnfinished)
		case ')':
			return ms.endCapture(s, p+1)
		case '$':
			if p+1 == len(pat) {
				if s == len(ms.src) {
					return s
				}
				return -1
			}
		case '%':
			if p+1 < len(pat) {
				switch c := pat[p+1]; {
				case c == 'b':
					if s = ms.matchBalance(s, p+2); s == -1 {
						return -1
					}
					p += 4
					continue
				case c == 'f':
					p += 2
					if p >= len(pat) || pat[p] != '[' {
						ms.error("missing '[' after '%f' in pattern")
					}
					ep := ms.classEnd(p)
					if ms.matchBracketClass(ms.byteAt(s-1), p, ep-1) || !ms.matchBracketClass(ms.byteAt(s), p, ep-1) {
						return -1
					}
					p = ep
					continue
				case isDigit(c):
					if s = ms.matchCapture(s, c); s == -1 {
						return -1
					}
					p += 2
					continue
				}
			}
		}
		// A single-character class, maybe followed by a repetition.
		ep := ms.classEnd(p)
		m := s < len(ms.src) && ms.singleMatch(ms.src[s], p, ep)
		if ep < len(pat) {
			switch pat[ep] {
			case '?':
				if m {
					if r := ms.match(s+1, ep+1); r != -1 {
						return r
					}
				}
				p = ep + 1
				continue
			case '*':
				return ms.maxExpand(s, p, ep)
			case '+':
				if !m {
					return -1
				}
				return ms.maxExpand(s+1, p, ep)
			case '-':
				return ms.minExpand(s, p, ep)
			}
		}
		if !m {
			return -1
		}
		s++
		p = ep
	}
}

// byteAt is src[i], or 0 outside the subject (as C's terminating NUL).
func (ms *matcher) byteAt(i int) byte {
	if i < 0 || i >= len(ms.src) {
		return 0
	}
	return ms.src[i]
}

func (ms *matcher) maxExpand(s, p, ep int) int {
	i := 0
	for s+i < len(ms.src) && ms.singleMatch(ms.src[s+i], p, ep) {
		i++
		ms.step(1)
	}
	for ; i >= 0; i-- {
		if r := ms.match(s+i, ep+1); r != -1 {
			return r
		}
	}
	return -1
}

func (ms *matcher) minExpand(s, p, ep int) int {
	for {
		if r := ms.match(s, ep+1); r != -1 {
			return r
		}
		if s < len(ms.src) && ms.singleMatch(ms.src[s], p, ep) {
			s++
			continue
		}
		return -1
	}
}

func (ms *matcher) startCapture(s, p, what int) int {
	if ms.level >= maxCaptures {
		ms.error("too many captures")
	}
	ms.capture[ms.level] = capture{init: s, len: what}
	ms.level++
	r := ms.match(s, p)
	if r == -1 {
		ms.level--
	}
	return r
}

func (ms *matcher) endCapture(s, p int) int {
	l := -1
	for i := ms.level - 1; i >= 0; i-- {
		if ms.capture[i].len == capUnfinished {
			l = i
			break
		}
	}
	if l < 0 {
		ms.error("invalid pattern capture")
	}
	ms.capture[l].len = s - ms.capture[l].init
	r := ms.match(s, p)
	if r == -1 {
		ms.capture[l].len = capUnfinished
	}
	return r
}

func (ms *matcher) matchBalance(s, p int) int {
	if p+1 >= len(ms.pat) {
		ms.error("unbalanced pattern")
	}
	if s >= len(ms.src) || ms.src[s] != ms.pat[p] {
		return -1
	}
	b, e := ms.pat[p], ms.pat[p+1]
	cont := 1
	for s++; s < len(ms.src); s++ {
		ms.step(1)
		switch ms.src[s] {
		case e:
			if cont--; cont == 0 {
				return s + 1
			}
		case b:
			cont++
		}
	}
	return -1
}

// matchCapture matches a back reference %1-%9.
func (ms *matcher) matchCapture(s int, c byte) int {
	l := int(c) - '1'
	if l < 0 || l >= ms.level || ms.capture[l].len == capUnfinished {
		ms.error("invalid capture index")
	}
	c0 := ms.capture[l]
	if c0.len < 0 {
		return -1 // a position capture never matches text
	}
	ms.step(1 + int64(c0.len)/32)
	if len(ms.src)-s >= c0.len && ms.src[c0.init:c0.init+c0.len] == ms.src[s:s+c0.len] {
		return s + c0.len
	}
	return -1
}

// classEnd returns the end of the single-character class at p.
func (ms *matcher) classEnd(p int) int {
	pat := ms.pat
	c := pat[p]
	p++
	switch c {
	case '%':
		if p >= len(pat) {
			ms.error("malformed pattern (ends with '%')")
		}
		return p + 1
	case '[':
		start := p
		if p < len(pat) && pat[p] == '^' {
			p++
		}
		for {
			if p >= len(pat) {
				ms.error("malformed pattern (missing ']')")
			}
			c := pat[p]
			p++
			if c == '%' && p < len(pat) {
				p++
			}
			if p >= len(pat) {
				ms.error("malformed pattern (missing ']')")
			}
			if pat[p] == ']' {
				break
			}
		}
		ms.step(int64(p-start) / 16)
		return p + 1
	}
	return p
}

func (ms *matcher) singleMatch(c byte, p, ep int) bool {
	switch ms.pat[p] {
	case '.':
		return true
	case '%':
		return matchClass(c, ms.pat[p+1])
	case '[':
		return ms.matchBracketClass(c, p, ep-1)
	}
	return ms.pat[p] == c
}

// matchBracketClass matches c against the set pat[p:ec+1], "[...]".
func (ms *matcher) matchBracketClass(c byte, p, ec int) bool {
	pat := ms.pat
	ms.step(int64(ec-p) / 16)
	sig := true
	if pat[p+1] == '^' {
		sig = false
		p++
	}
	for p++; p < ec; p++ {
		switch {
		case pat[p] == '%':
			p++
			if matchClass(c, pat[p]) {
				return sig
			}
		case pat[p+1] == '-' && p+2 < ec:
			p += 2
			if pat[p-2] <= c && c <= pat[p] {
				return sig
			}
		case pat[p] == c:
			return sig
		}
	}
	return !sig
}

// matchClass matches c against the class letter cl (%a, %d...) in the C
// locale; an upper-case letter is the complement, anything else itself.
func matchClass(c, cl byte) bool {
	var res bool
	switch cl | 0x20 {
	case 'a':
		res = isAlpha(c)
	case 'c':
		res = c < 32 || c == 127
	case 'd':
		res = isDigit(c)
	case 'l':
		res = 'a' <= c && c <= 'z'
	case 'p':
		res = isPunct(c)
	case 's':
		res = c == ' ' || ('\t' <= c && c <= '\r')
	case 'u':
		res = 'A' <= c && c <= 'Z'
	case 'w':
		res = isAlpha(c) || isDigit(c)
	case 'x':
		res = isDigit(c) || ('a' <= c|0x20 && c|0x20 <= 'f')
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if 'A' <= cl && cl <= 'Z' {
		return !res
	}
	return res
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlpha(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isPunct(c byte) bool { return c > 32 && c < 127 && !isAlpha(c) && !isDigit(c) }

// pushCaptures pushes the captures of the match src[s:e] (the whole match
// when the pattern has none and whole is set) and returns their number.
func (ms *matcher) pushCaptures(s, e int, whole bool) int {
	n := ms.level
	if n == 0 && whole {
		n = 1
	}
	for i := range n {
		ms.L.Push(ms.captureValue(i, s, e))
	}
	return n
}

// captureValue is capture i of the match src[s:e].
func (ms *matcher) captureValue(i, s, e int) glua.LValue {
	if i >= ms.level {
		if i != 0 {
			ms.error("invalid capture index")
		}
		return glua.LString(ms.src[s:e])
	}
	c := ms.capture[i]
	switch c.len {
	case capUnfinished:
		ms.error("unfinished capture")
	case capPosition:
		return glua.LNumber(c.init + 1)
	}
	return glua.LString(ms.src[c.init : c.init+c.len])
}
