package lua

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	glua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
)

// obj parses a YAML object.
func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("parse object: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatalf("parse object: %v", err)
	}
	return u
}

func compile(t *testing.T, rt *Runtime, src string) *Script {
	t.Helper()
	s, err := rt.Compile(src)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return s
}

func TestSandboxRefusesEscapes(t *testing.T) {
	rt := New(Options{})
	cases := map[string]string{
		"os.execute":      `os.execute("true")`,
		"os.exit":         `os.exit(1)`,
		"os.getenv":       `local h = os.getenv("HOME")`,
		"io.open":         `io.open("/etc/passwd")`,
		"require os":      `require("os")`,
		"require io":      `require("io")`,
		"load":            `load("return 1")()`,
		"loadstring":      `loadstring("return 1")()`,
		"dofile":          `dofile("/etc/passwd")`,
		"loadfile":        `loadfile("/etc/passwd")`,
		"debug":           `debug.getinfo(1)`,
		"package":         `package.loadlib("x", "y")`,
		"coroutine":       `coroutine.create(function() end)`,
		"setmetatable":    `setmetatable({}, {})`,
		"getmetatable":    `getmetatable("")`,
		"rawset":          `rawset({}, "a", 1)`,
		"string.dump":     `string.dump(function() end)`,
		"string.rep huge": `string.rep("x", 1e10)`,
		"format width":    `string.format("%999999999d", 1)`,
		"concat huge":     `local t = {} for i = 1, 100 do t[i] = "x" end table.concat(t, string.rep("y", 1000000))`,
		"change string":   `string.rep = nil`,
		"add to string":   `string.x = 1`,
		"change table":    `table.insert(table, 1)`,
		"sort table":      `table.sort(table)`,
		"change math":     `math.pi = 3`,
		"change os":       `os.time = os.clock`,
		"change kube":     `local kube = require("kube") kube.resourceAdd = nil`,
		"method on kube":  `local kube = require("kube") function kube:x() end`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			s := compile(t, rt, "function InterpretHealth(obj)\n"+body+"\nreturn true\nend")
			_, err := s.InterpretHealth(obj(t, "{apiVersion: v1, kind: X}"))
			if err == nil {
				t.Fatalf("script ran: want an error")
			}
		})
	}
}

func TestSandboxAllows(t *testing.T) {
	rt := New(Options{})
	s := compile(t, rt, `
local kube = require("kube")
function InterpretHealth(obj)
  local t = {}
  table.insert(t, string.upper("a"))
  table.sort(t)
  local n = math.max(1, 2) + math.floor(2.5)
  local when = os.time()
  print("ignored")
  local ok = pcall(function() error("x") end)
  return t[1] == "A" and n == 4 and when > 0 and not ok and string.format("%02d", 7) == "07" and kube ~= nil
end`)
	h, err := s.InterpretHealth(obj(t, "{apiVersion: v1, kind: X}"))
	if err != nil || h != workv1alpha1.ResourceHealthy {
		t.Fatalf("got %v, %v; want Healthy", h, err)
	}
}

func TestCompileCache(t *testing.T) {
	rt := New(Options{})
	a := compile(t, rt, `function InterpretHealth(o) return true end`)
	b := compile(t, rt, `function InterpretHealth(o) return true end`)
	if a != b || rt.compiles.Load() != 1 {
		t.Fatalf("same source compiled twice (%d compiles)", rt.compiles.Load())
	}
	c := compile(t, rt, `function InterpretHealth(o) return false end`)
	if c == a || rt.compiles.Load() != 2 {
		t.Fatalf("changed source not recompiled (%d compiles)", rt.compiles.Load())
	}
	if _, err := rt.Compile(`function InterpretHealth(o) return true`); err == nil {
		t.Fatalf("syntax error not reported")
	}
	if err := a.Defines("GetReplicas"); err == nil {
		t.Fatalf("missing function not reported")
	}
}

// TestNothingLeaksBetweenCalls: a call cannot leave anything behind for
// the next calls on the same pooled state, so no call can keep memory its
// budget no longer counts.
func TestNothingLeaksBetweenCalls(t *testing.T) {
	cases := map[string]string{
		"global": `
function InterpretHealth(o)
  local first = seen == nil
  seen = true
  return first
end`,
		"_G": `
function InterpretHealth(o)
  local first = _G.hoard == nil
  _G.hoard = {1, 2, 3}
  return first and hoard ~= nil
end`,
		"library table": `
function InterpretHealth(o)
  local first = string.hoard == nil
  pcall(function() string.hoard = {} end)
  pcall(table.insert, table, 1)
  return first and string.hoard == nil and table[1] == nil
end`,
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			rt := New(Options{})
			s := compile(t, rt, src)
			for i := range 3 {
				h, err := s.InterpretHealth(obj(t, "{apiVersion: v1, kind: X}"))
				if err != nil || h != workv1alpha1.ResourceHealthy {
					t.Fatalf("call %d: %v, %v", i, h, err)
				}
			}
		})
	}
}

func TestConversionRoundTrip(t *testing.T) {
	cases := map[string]string{
		"nested": `
apiVersion: apps/v1
kind: Deployment
metadata: {name: a, labels: {}, annotations: {x: "1"}}
spec:
  replicas: 3
  ratio: 0.5
  big: 9007199254740992
  flags: [true, false]
  empty: []
  emptyMap: {}
  nested: [{a: 1}, {b: [1, 2, {c: null}]}]
status: {}`,
	}
	for name, y := range cases {
		t.Run(name, func(t *testing.T) {
			in := obj(t, y)
			L := glua.NewState()
			defer L.Close()
			lv, err := toLua(L, nil, in.Object)
			if err != nil {
				t.Fatal(err)
			}
			out, err := fromLua(nil, lv, in.Object, true)
			if err != nil {
				t.Fatal(err)
			}
			want := in.Object
			// A null inside a list is dropped by Lua (nil ends a sequence
			// element); compare without it.
			if diff := cmp.Diff(stripNulls(want), out); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func stripNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if e != nil {
				out[k] = stripNulls(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = stripNulls(e)
		}
		return out
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
	}
	return v
}

func TestFromLuaShapes(t *testing.T) {
	cases := map[string]struct {
		src     string
		ref     any
		object  bool
		want    any
		wantErr string
	}{
		"integral number is an integer": {src: `return 3`, want: int64(3)},
		"fraction stays float":          {src: `return 2.5`, want: 2.5},
		"list":                          {src: `return {"a", "b"}`, want: []any{"a", "b"}},
		"empty, reference map":          {src: `return {}`, ref: map[string]any{}, want: map[string]any{}},
		"empty, reference list":         {src: `return {}`, ref: []any{}, want: []any{}},
		"empty, no reference":           {src: `return {x = {}}`, want: map[string]any{"x": []any{}}},
		"empty status of an object":     {src: `return {status = {}}`, object: true, want: map[string]any{"status": map[string]any{}}},
		"empty labels of an object":     {src: `return {metadata = {labels = {}}}`, object: true, want: map[string]any{"metadata": map[string]any{"labels": map[string]any{}}}},
		"mixed keys":                    {src: `return {1, a = 2}`, wantErr: "mixes"},
		"holes":                         {src: `return {[1] = 1, [3] = 3}`, wantErr: "holes"},
		"function":                      {src: `return {f = function() end}`, wantErr: "function"},
		"cycle":                         {src: `local t = {} t.self = t return t`, wantErr: "itself"},
		"nan":                           {src: `return 0/0`, wantErr: "JSON number"},
		"nested too deep":               {src: `local t = {} for i = 1, 2000 do t = {t} end return t`, wantErr: "nested deeper than 1000"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			L := glua.NewState()
			defer L.Close()
			if err := L.DoString(tc.src); err != nil {
				t.Fatal(err)
			}
			got, err := fromLua(nil, L.Get(-1), tc.ref, tc.object)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestKubeHelpers(t *testing.T) {
	rt := New(Options{})
	s := compile(t, rt, `
local kube = require("kube")
function GetReplicas(obj)
  local req = kube.accuratePodRequirements(obj.spec.template)
  return obj.spec.replicas, req
end
function GetDependencies(obj)
  return kube.getPodDependencies(obj.spec.template, obj.metadata.namespace)
end
function ReflectStatus(obj)
  return {sum = kube.resourceAdd("100m", "1", nil, 0.5), mem = kube.getResourceQuantity("1Ki")}
end`)
	o := obj(t, `
apiVersion: example.io/v1
kind: Thing
metadata: {name: t, namespace: ns}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: t}}
    spec:
      nodeSelector: {disk: ssd}
      serviceAccountName: runner
      containers:
      - name: c
        image: busybox
        resources: {requests: {cpu: 250m}}
        envFrom: [{configMapRef: {name: cfg}}]
      volumes: []`)
	n, req, err := s.GetReplicas(o)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || req == nil || req.ResourceRequest.Cpu().String() != "250m" || req.NodeClaim.NodeSelector["disk"] != "ssd" {
		t.Errorf("GetReplicas = %d, %+v", n, req)
	}
	deps, err := s.GetDependencies(o)
	if err != nil {
		t.Fatal(err)
	}
	want := []interpreter.Dependency{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cfg"},
		{APIVersion: "v1", Kind: "ServiceAccount", Namespace: "ns", Name: "runner"},
	}
	if diff := cmp.Diff(want, deps); diff != "" {
		t.Errorf("dependencies (-want +got):\n%s", diff)
	}
	st, err := s.ReflectStatus(o)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(st.Raw); got != `{"mem":1024,"sum":"1600m"}` {
		t.Errorf("status %s", got)
	}
}
