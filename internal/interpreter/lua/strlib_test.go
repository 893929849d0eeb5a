package lua

import (
	"encoding/json"
	"strings"
	"testing"

	glua "github.com/yuin/gopher-lua"
)

// evalScript returns a script whose ReflectStatus returns the results of
// expr, each through tostring, joined by "|".
func evalScript(expr string) string {
	return `
local function pack(...) return select("#", ...), {...} end
function ReflectStatus(obj)
  local n, r = pack(` + expr + `)
  local out = {}
  for i = 1, n do out[i] = tostring(r[i]) end
  return {v = table.concat(out, "|")}
end`
}

// eval runs expr in the sandbox.
func eval(t *testing.T, rt *Runtime, expr string) (string, error) {
	t.Helper()
	s, err := rt.Compile(evalScript(expr))
	if err != nil {
		return "", err
	}
	st, err := s.ReflectStatus(obj(t, "{apiVersion: v1, kind: X}"))
	if err != nil {
		return "", err
	}
	var out struct{ V string }
	if err := json.Unmarshal(st.Raw, &out); err != nil {
		t.Fatal(err)
	}
	return out.V, nil
}

// evalGopherLua runs expr in a plain gopher-lua state, as Karmada does.
func evalGopherLua(t *testing.T, expr string) (string, error) {
	t.Helper()
	L := glua.NewState()
	defer L.Close()
	if err := L.DoString(evalScript(expr)); err != nil {
		return "", err
	}
	if err := L.CallByParam(glua.P{Fn: L.GetGlobal("ReflectStatus"), NRet: 1, Protect: true}, glua.LNil); err != nil {
		return "", err
	}
	return L.Get(-1).(*glua.LTable).RawGetString("v").String(), nil
}

// stringCases are Lua 5.1's answers. gopherLua marks those gopher-lua
// (and so Karmada) gives too.
var stringCases = []struct {
	expr, want string
	gopherLua  bool
}{
	{`string.find("hello world", "wor")`, "7|9", true},
	{`string.find("hello", "l+")`, "3|4", true},
	{`string.find("hello", "(l)(l)")`, "3|4|l|l", true},
	{`string.find("a.b", ".", 1, true)`, "2|2", true},
	{`string.find("a+b", "+", 1, true)`, "2|2", true},
	{`string.find("abc", "b", -1)`, "nil", true},
	{`string.find("abc", "b", -2)`, "2|2", true},
	{`string.find("abc", "x")`, "nil", true},
	{`string.find("abc", "")`, "1|0", true},
	{`string.find("abc", "", 10)`, "4|3", false},
	{`string.find("abc", "^b")`, "nil", true},
	{`string.find("abc", "c$")`, "3|3", true},
	{`string.find("a$c", "$c")`, "2|3", true},
	{`string.find("ErrImagePull: back-off", "ErrImagePull")`, "1|12", true},
	{`string.match("key=value", "(%w+)=(%w+)")`, "key|value", true},
	{`string.match("  trim  ", "^%s*(.-)%s*$")`, "trim", true},
	{`string.match("2024-01-02", "(%d+)-(%d+)-(%d+)")`, "2024|01|02", true},
	{`string.match("hello", "()ll()")`, "3|5", true},
	{`string.match("THE (quick) fox", "%((%a+)%)")`, "quick", true},
	{`string.match("f(a(b)c)d", "%b()")`, "(a(b)c)", true},
	{`string.match("THE quick", "%f[%a]%a+", 4)`, "quick", false},
	{`string.match("abc", "[^a]+")`, "bc", true},
	{`string.match("a]b", "[]]")`, "]", true},
	{`string.match("x-y", "[a-z%-]+")`, "x-y", true},
	{`string.match("abcabc", "(a)(b)c%1%2")`, "a|b", true},
	{`string.match("v1.2.3", "^v(%d+)%.(%d+)")`, "1|2", true},
	{`string.match("10Gi", "^(%d+)(%a*)$")`, "10|Gi", true},
	{`string.match("abc", "b", 3)`, "nil", false},
	{`string.match("", ".*")`, "", true},
	{`string.gsub("hello world", "o", "0")`, "hell0 w0rld|2", true},
	{`string.gsub("hello", "", "-")`, "-h-e-l-l-o-|6", true},
	{`string.gsub("abc", "%w", "%0%0")`, "aabbcc|3", true},
	{`string.gsub("hello world", "(%w+)", "<%1>")`, "<hello> <world>|2", true},
	{`string.gsub("abc", "b", "%%")`, "a%c|1", true},
	{`string.gsub("abc", "b", "%x")`, "axc|1", false},
	{`string.gsub("$name is $age", "%$(%w+)", {name = "bob", age = 3})`, "bob is 3|2", true},
	{`string.gsub("abc", "%w", function(c) return c:upper() end)`, "ABC|3", true},
	{`string.gsub("abc", "%w", function(c) if c == "b" then return false end return "x" end)`, "xbx|3", true},
	{`string.gsub("hello world", "o", "0", 1)`, "hell0 world|1", true},
	{`string.gsub("abc", "^a", "x")`, "xbc|1", true},
	{`string.gsub("a,b,,c", ",", ";")`, "a;b;;c|3", true},
	{`string.gsub("abc", "x", "y")`, "abc|0", true},
	{`(function() local t = {} for w in string.gmatch("one two  three", "%a+") do t[#t+1] = w end return table.concat(t, ",") end)()`, "one,two,three", true},
	{`(function() local t = {} for k, v in string.gmatch("a=1, b=2", "(%w+)=(%w+)") do t[#t+1] = k .. v end return table.concat(t, ",") end)()`, "a1,b2", true},
	{`(function() local n = 0 for w in ("abc"):gmatch("") do n = n + 1 end return n end)()`, "4", true},
	{`string.format("%d", 3)`, "3", true},
	{`string.format("%5.2f", 3.14159)`, " 3.14", true},
	{`string.format("%s", nil)`, "nil", true},
	{`string.format("%-5s|", "ab")`, "ab   |", true},
	{`string.format("%x %X", 255, 255)`, "ff FF", true},
	{`string.format("%05d", 42)`, "00042", true},
	{`string.format("%%")`, "%", true},
	{`string.format("%s %s", "a", 1)`, "a 1", true},
	{`string.format("%.3s", "abcdef")`, "abc", true},
	{`string.format("%s=%d%%", "cpu", 80)`, "cpu=80%", true},
	{`string.format("%s", true)`, "true", true},
	{`string.rep("ab", 3)`, "ababab", true},
	{`string.rep("x", 0)`, "", true},
	{`string.rep("x", -1)`, "", true},
	{`string.upper("abc"), string.lower("ABC"), string.reverse("abc")`, "ABC|abc|cba", true},
	{`string.byte("A"), string.char(72, 105)`, "65|Hi", true},
	{`string.len("abc"), string.sub("hello", 2, 3), ("x"):rep(3)`, "3|el|xxx", true},
	{`"a" .. 1 .. 2.5, 1 .. 2`, "a12.5|12", true},
	{`table.concat({1, 2, 3}, ","), table.concat({}, ","), table.concat({"a", "b", "c"}, "-", 2)`, "1,2,3||b-c", true},
	{`(function() local t = {3, 1, 2} table.sort(t) return table.concat(t, ",") end)()`, "1,2,3", true},
	{`(function() local t = {3, 1, 2} table.sort(t, function(a, b) return a > b end) return table.concat(t, ",") end)()`, "3,2,1", true},
	{`(function() local t = {"b", "a"} table.insert(t, "c") table.insert(t, 1, "z") table.remove(t, 2) return table.concat(t, ",") end)()`, "z,a,c", true},
}

func TestStringLibrary(t *testing.T) {
	rt := New(Options{})
	for _, tc := range stringCases {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := eval(t, rt, tc.expr)
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
			if !tc.gopherLua {
				return
			}
			if karmada, err := evalGopherLua(t, tc.expr); err != nil || karmada != got {
				t.Errorf("gopher-lua gives %q, %v; the sandbox %q", karmada, err, got)
			}
		})
	}
}

func TestStringLibraryErrors(t *testing.T) {
	rt := New(Options{})
	cases := map[string]string{
		`string.find("a", "%")`:                           "malformed pattern (ends with '%')",
		`string.find("a", "[a")`:                          "malformed pattern (missing ']')",
		`string.find("a", "(a")`:                          "unfinished capture",
		`string.match("a", "a)")`:                         "invalid pattern capture",
		`string.find("a", "%1")`:                          "invalid capture index",
		`string.find("a", "%b")`:                          "unbalanced pattern",
		`string.find("a", "%fa")`:                         "missing '['",
		`string.gsub("a", "a", "%2")`:                     "invalid capture index",
		`string.gsub("a", "a", "%")`:                      "invalid use of '%'",
		`string.gsub("a", "a", true)`:                     "string/function/table expected",
		`string.gsub("a", "a", function() return {} end)`: "invalid replacement value (a table)",
		`string.format("%d")`:                             "no value",
		`string.format("%d", {})`:                         "number expected, got table",
		`string.format("%*d", 5, 1)`:                      "invalid option '%*'",
		`string.format("%10.100f", 1)`:                    "width or precision too long",
		`"a" .. nil`:                                      "cannot perform concat operation between string and nil",
		`{} .. "a"`:                                       "cannot perform concat operation between table and string",
		`table.concat({{}})`:                              "invalid value (table) at index 1",
		`table.sort({1, "a"})`:                            "attempt to compare",
		`string.char(256)`:                                "invalid value",
	}
	for expr, want := range cases {
		t.Run(expr, func(t *testing.T) {
			_, err := eval(t, rt, expr)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want one containing %q", err, want)
			}
		})
	}
}
