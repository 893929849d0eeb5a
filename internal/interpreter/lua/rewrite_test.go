package lua

import "testing"

// TestMeteredScriptsKeepLuaSemantics runs language constructs the metering
// rewrite touches (assignments to table fields, constructors, function
// definitions, concatenation) and compares with Lua 5.1 and gopher-lua.
func TestMeteredScriptsKeepLuaSemantics(t *testing.T) {
	cases := map[string]struct{ expr, want string }{
		"multiple assignment evaluates targets first": {
			`(function() local t = {} local i = 1 i, t[i] = i + 1, 20 return i, t[1], t[2] end)()`, "2|20|nil"},
		"multiple assignment evaluates targets before values": {
			`(function() local t, i = {}, 1 t[i], i = 1, (function() i = 2 return 5 end)() return t[1], t[2], i end)()`, "1|nil|5"},
		"swap": {
			`(function() local t = {1, 2} t[1], t[2] = t[2], t[1] return t[1], t[2] end)()`, "2|1"},
		"fewer values than targets": {
			`(function() local a = {} a.x, a.y = 1 return a.x, a.y end)()`, "1|nil"},
		"more values than targets": {
			`(function() local a = {} a.x = 1, 2 return a.x end)()`, "1"},
		"call spread over targets": {
			`(function() local function f() return 1, 2 end local t = {} t.a, t.b = f() return t.a, t.b end)()`, "1|2"},
		"call adjusted to one value": {
			`(function() local t = {} t.a = (function() return 1, 2 end)() return t.a end)()`, "1"},
		"call with no values assigns nil": {
			`(function() local t = {a = 1} t.a = (function() end)() return t.a end)()`, "nil"},
		"removing a field": {
			`(function() local t = {a = 1} t.a = nil return t.a, next(t) end)()`, "nil|nil"},
		"mixed targets": {
			`(function() local t, x = {}, 0 x, t.k, t[2] = 1, 2, 3 return x, t.k, t[2] end)()`, "1|2|3"},
		"computed keys": {
			`(function() local t = {} t["a" .. 1] = 2 return t.a1 end)()`, "2"},
		"nested fields": {
			`(function() local o = {spec = {template = {}}} o.spec.template.replicas = 3 return o.spec.template.replicas end)()`, "3"},
		"method definition": {
			`(function() local o = {n = 1} function o:get(k) return self.n + k end return o:get(2) end)()`, "3"},
		"function field definition": {
			`(function() local o = {a = {}} function o.a.f(x) return x * 2 end return o.a.f(4) end)()`, "8"},
		"local recursive function": {
			`(function() local function fact(n) if n <= 1 then return 1 end return n * fact(n - 1) end return fact(5) end)()`, "120"},
		"closure over a counter": {
			`(function() local function counter() local n = 0 return function() n = n + 1 return n end end local c = counter() c() return c() end)()`, "2"},
		"varargs in a constructor": {
			`(function() local function f(...) local t = {...} return #t end return f(1, 2, 3) end)()`, "3"},
		"call spread in a constructor": {
			`(function() local function f() return 1, 2, 3 end local t = {f()} local u = {f(), 10} return #t, #u end)()`, "3|2"},
		"constructor with every kind of field": {
			`(function() local k = "z" local t = {1, 2, a = 3, [k] = 4, [10] = 5} return t[1], t[2], t.a, t.z, t[10] end)()`, "1|2|3|4|5"},
		"constructor with computed keys evaluates its fields in order": {
			`(function() local log = {} local function f(x) log[#log + 1] = x return x end local t = {f(1), [f("k")] = f(2), f(3), [f(4)] = f(5)} return table.concat(log, ","), t[1], t.k, t[2], t[4] end)()`, "1,k,2,3,4,5|1|2|3|5"},
		"constructor with computed keys and a spread call": {
			`(function() local function f() return 1, 2, 3 end local t = {[10] = 5, f()} local u = {[10] = 5, (f())} return t[3], t[10], u[1], u[2] end)()`, "3|5|1|nil"},
		"constructor with computed keys and varargs": {
			`(function(...) local t = {[0] = 0, ...} return #t, t[0], t[3] end)(1, 2, 3)`, "3|0|3"},
		"constructor with a key also given by the list": {
			`(function() local t = {[1] = "k", "l", [2] = "m"} return t[1], t[2] end)()`, "l|m"},
		"constructor with nil fields": {
			`(function() local k = 3 local t = {[k] = nil, [1] = 1, nil, 4} return t[1], t[2], t[3] end)()`, "nil|4|nil"},
		"constructor with more than fifty list fields and a key": {
			`(function() local t = {[1] = 0, 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52, [60] = 60} return t[1], t[52], t[53], t[60] end)()`, "1|52|nil|60"},
		"constructor with float and negative keys": {
			`(function() local t = {[1.5] = "a", [-1] = "b", [true] = "c"} return t[1.5], t[-1], t[true] end)()`, "a|b|c"},
		"constructor with a nil key": {
			`(function() local ok, err = pcall(function() local k return {[k] = 1} end) return ok, string.match(err, "table index is nil") end)()`, "false|table index is nil"},
		"assigning nil far past the end": {
			`(function() local t = {1} t[1e6] = nil t[2] = 2 return #t, t[1e6] end)()`, "2|nil"},
		"nested and grouped concatenation": {
			`("a" .. "b") .. ("c" .. 1), 1 .. 2 .. 3`, "abc1|123"},
		"concatenation takes one value of a call": {
			`(function() local function f() return "x", "y" end return f() .. "z" end)()`, "xz"},
		"assignments in loops": {
			`(function() local t = {} local i = 0 repeat i = i + 1 t[i] = i until i == 3 while i < 5 do i = i + 1 t[i] = i end for j = 6, 7 do t[j] = j end return #t end)()`, "7"},
		"global assignment": {
			`(function() g1 = 5 return g1 end)()`, "5"},
		"pairs over a built table": {
			`(function() local t = {} t.a = 1 t.b = 2 local n = 0 for k, v in pairs(t) do n = n + v end return n end)()`, "3"},
	}
	rt := New(Options{})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := eval(t, rt, tc.expr)
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
			if karmada, err := evalGopherLua(t, tc.expr); err != nil || karmada != got {
				t.Errorf("gopher-lua gives %q, %v; the sandbox %q", karmada, err, got)
			}
		})
	}
}
