package lua

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	glua "github.com/yuin/gopher-lua"
)

// toLua converts a JSON-like Go value (what unstructured objects hold) to a
// Lua value. Maps become tables with string keys, slices 1-based sequences.
// The tables are charged to m, which may be nil.
func toLua(L *glua.LState, m *meter, v any) (glua.LValue, error) {
	switch v := v.(type) {
	case nil:
		return glua.LNil, nil
	case bool:
		return glua.LBool(v), nil
	case string:
		return glua.LString(v), nil
	case int:
		return glua.LNumber(v), nil
	case int32:
		return glua.LNumber(v), nil
	case int64:
		return glua.LNumber(v), nil
	case float32:
		return glua.LNumber(v), nil
	case float64:
		return glua.LNumber(v), nil
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("convert number %q to lua: %w", v, err)
		}
		return glua.LNumber(f), nil
	case map[string]any:
		if err := m.alloc(tableBytes + int64(len(v))*hashEntryBytes); err != nil {
			return nil, err
		}
		t := L.CreateTable(0, len(v))
		for k, e := range v {
			lv, err := toLua(L, m, e)
			if err != nil {
				return nil, err
			}
			t.RawSetString(k, lv)
		}
		return t, nil
	case []any:
		if err := m.alloc(tableBytes + int64(len(v))*arraySlotBytes); err != nil {
			return nil, err
		}
		t := L.CreateTable(len(v), 0)
		for i, e := range v {
			lv, err := toLua(L, m, e)
			if err != nil {
				return nil, err
			}
			t.RawSetInt(i+1, lv)
		}
		return t, nil
	case glua.LValue:
		return v, nil
	default:
		// Typed values (a status item, requirements) go through JSON.
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("convert %T to lua: %w", v, err)
		}
		var plain any
		if err := json.Unmarshal(raw, &plain); err != nil {
			return nil, fmt.Errorf("convert %T to lua: %w", v, err)
		}
		return toLua(L, m, plain)
	}
}

// objectMaps are the places in a Kubernetes object that are always JSON
// objects, so an empty table there converts to {} even when the reference
// object has nothing at that place.
var objectMaps = map[string]bool{
	"metadata": true, "spec": true, "status": true,
	"metadata.labels": true, "metadata.annotations": true,
}

// fromLua converts a Lua value back to a JSON-like Go value. Integral
// numbers become int64, others float64. ref is what the input held at the
// same place: an empty table becomes {} where ref is a map and [] where it
// is a list (Lua cannot tell them apart). With no reference it becomes {}
// at the well-known places of a Kubernetes object (objectMaps, when object
// is true) and [] elsewhere, as Karmada's converter does.
//
// The conversion is work the script asked for: each value counts against
// m's instruction budget and what it allocates against m's memory budget
// (m may be nil). Tables nested deeper than maxDepth are an error, so that
// a script cannot exhaust the converter's stack.
func fromLua(m *meter, v glua.LValue, ref any, object bool) (any, error) {
	c := &converter{m: m, object: object, visiting: map[*glua.LTable]bool{}, valueBytes: convertedValueBytes}
	return c.convert(v, ref, "")
}

// templateFromLua converts a pod template a script passes to a kube
// helper. The helper decodes it into a typed Pod and runs the native rules
// on it, which the run is charged for too.
func templateFromLua(m *meter, v glua.LValue) (any, error) {
	c := &converter{m: m, object: true, visiting: map[*glua.LTable]bool{}, valueBytes: convertedValueBytes + decodedValueBytes}
	return c.convert(v, nil, "")
}

// maxDepth is how deeply tables may nest in a value converted from Lua.
const maxDepth = 1000

// What converting a value from Lua allocates, for the memory budget.
const (
	convertedValueBytes = 32  // an interface and its boxed value
	convertedEntryBytes = 64  // a map entry, with its share of the path
	decodedValueBytes   = 512 // a value decoded into a typed object by the native rules
)

type converter struct {
	m          *meter
	object     bool
	visiting   map[*glua.LTable]bool
	depth      int
	valueBytes int64 // charged per value
}

func (c *converter) convert(v glua.LValue, ref any, path string) (any, error) {
	if err := c.m.spend(1); err != nil {
		return nil, err
	}
	if err := c.m.alloc(c.valueBytes); err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case *glua.LNilType:
		return nil, nil
	case glua.LBool:
		return bool(v), nil
	case glua.LString:
		return string(v), nil
	case glua.LNumber:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s: %v is not a JSON number", where(path), f)
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return int64(f), nil
		}
		return f, nil
	case *glua.LTable:
		if c.visiting[v] {
			return nil, fmt.Errorf("%s: table refers to itself", where(path))
		}
		if c.depth >= maxDepth {
			return nil, fmt.Errorf("%s: tables nested deeper than %d levels", where(path), maxDepth)
		}
		c.visiting[v] = true
		c.depth++
		defer func() {
			delete(c.visiting, v)
			c.depth--
		}()
		return c.table(v, ref, path)
	default:
		return nil, fmt.Errorf("%s: a %s cannot be converted to JSON", where(path), v.Type())
	}
}

func (c *converter) table(t *glua.LTable, ref any, path string) (any, error) {
	// Charge the entries before collecting their keys.
	var n int64
	t.ForEach(func(glua.LValue, glua.LValue) { n++ })
	if err := c.m.alloc(n * convertedEntryBytes); err != nil {
		return nil, err
	}
	var strKeys []string
	var numKeys []int
	var err error
	t.ForEach(func(k, _ glua.LValue) {
		switch k := k.(type) {
		case glua.LString:
			strKeys = append(strKeys, string(k))
		case glua.LNumber:
			if i := int(k); float64(i) == float64(k) && i >= 1 {
				numKeys = append(numKeys, i)
				return
			}
			err = fmt.Errorf("%s: table key %v is not a positive integer or a string", where(path), k)
		default:
			err = fmt.Errorf("%s: table key of type %s", where(path), k.Type())
		}
	})
	if err != nil {
		return nil, err
	}
	switch {
	case len(strKeys) == 0 && len(numKeys) == 0:
		return c.empty(ref, path), nil
	case len(strKeys) > 0 && len(numKeys) > 0:
		return nil, fmt.Errorf("%s: table mixes list entries and named fields", where(path))
	case len(strKeys) > 0:
		refMap, _ := ref.(map[string]any)
		out := make(map[string]any, len(strKeys))
		for _, k := range strKeys {
			child := k
			if path != "" {
				child = path + "." + k
			}
			val, err := c.convert(t.RawGetString(k), refMap[k], child)
			if err != nil {
				return nil, err
			}
			out[k] = val
		}
		return out, nil
	default:
		sort.Ints(numKeys)
		if numKeys[len(numKeys)-1] != len(numKeys) {
			return nil, fmt.Errorf("%s: list has holes (keys %v)", where(path), numKeys)
		}
		refList, _ := ref.([]any)
		out := make([]any, len(numKeys))
		for i := range numKeys {
			var elemRef any
			if i < len(refList) {
				elemRef = refList[i]
			} else if len(refList) > 0 {
				elemRef = refList[0]
			}
			val, err := c.convert(t.RawGetInt(i+1), elemRef, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			out[i] = val
		}
		return out, nil
	}
}

// empty resolves an empty table to {} or [].
func (c *converter) empty(ref any, path string) any {
	switch ref.(type) {
	case map[string]any:
		return map[string]any{}
	case []any:
		return []any{}
	}
	if c.object && (path == "" || objectMaps[path]) {
		return map[string]any{}
	}
	return []any{}
}

func where(path string) string {
	if path == "" {
		return "result"
	}
	return "result." + path
}
