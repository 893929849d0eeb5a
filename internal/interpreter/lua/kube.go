package lua

import (
	"fmt"

	glua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
)

// KubeModule is the name scripts load the helpers under:
// local kube = require("kube").
const KubeModule = "kube"

// newKubeModule returns the helper table Karmada offers scripts:
//
//	kube.resourceAdd(q1, q2, ...)            -- sum of quantities, as a quantity string
//	kube.getResourceQuantity(q)              -- a quantity as a number
//	kube.accuratePodRequirements(template)   -- ReplicaRequirements of a pod template
//	kube.getPodDependencies(template, ns)    -- what a pod template depends on
//
// The pod-template helpers answer exactly as the built-in rules do for
// Kubernetes' own workloads.
func newKubeModule(L *glua.LState) *glua.LTable {
	native := interpreter.NewDefault()
	m := L.NewTable()
	L.SetFuncs(m, map[string]glua.LGFunction{
		"resourceAdd": func(L *glua.LState) int {
			var sum resource.Quantity
			for i := 1; i <= L.GetTop(); i++ {
				if L.Get(i) == glua.LNil {
					continue
				}
				sum.Add(checkQuantity(L, i))
			}
			text := sum.String()
			check(L, meterOf(L).allocString("kube.resourceAdd", len(text)))
			L.Push(glua.LString(text))
			return 1
		},
		"getResourceQuantity": func(L *glua.LState) int {
			q := checkQuantity(L, 1)
			L.Push(glua.LNumber(q.AsApproximateFloat64()))
			return 1
		},
		"accuratePodRequirements": func(L *glua.LState) int {
			pod := podFromTemplate(L, 1, "")
			_, req, _, err := native.GetReplicas(pod)
			if err != nil {
				L.RaiseError("kube.accuratePodRequirements: %v", err)
				return 0
			}
			if req == nil {
				L.Push(glua.LNil)
				return 1
			}
			L.Push(mustLua(L, req))
			return 1
		},
		"getPodDependencies": func(L *glua.LState) int {
			pod := podFromTemplate(L, 1, L.OptString(2, ""))
			deps, err := native.GetDependencies(pod)
			if err != nil {
				L.RaiseError("kube.getPodDependencies: %v", err)
				return 0
			}
			if deps == nil {
				deps = []interpreter.Dependency{}
			}
			L.Push(mustLua(L, deps))
			return 1
		},
	})
	return m
}

// checkQuantity reads argument i as a quantity: a string such as "100m" or
// a number, within the bounds of checkQuantityText.
func checkQuantity(L *glua.LState, i int) resource.Quantity {
	var text string
	switch v := L.Get(i).(type) {
	case glua.LString:
		text = string(v)
	case glua.LNumber:
		text = v.String()
	default:
		L.ArgError(i, fmt.Sprintf("quantity expected, got %s", v.Type()))
	}
	if err := checkQuantityText(text); err != nil {
		L.ArgError(i, err.Error())
	}
	q, err := resource.ParseQuantity(text)
	if err != nil {
		L.ArgError(i, fmt.Sprintf("invalid quantity %q: %v", text, err))
	}
	return q
}

// podFromTemplate turns a pod template table ({metadata, spec}) into a Pod,
// the kind whose built-in rules read exactly a pod spec.
func podFromTemplate(L *glua.LState, i int, namespace string) *unstructured.Unstructured {
	m := meterOf(L)
	tmpl, err := templateFromLua(m, L.CheckTable(i))
	if err != nil {
		check(L, m.cause()) // a budget: the run stops
		L.ArgError(i, err.Error())
	}
	// Lua cannot tell {} from [] and an empty value says nothing about
	// requirements or dependencies: drop them before decoding.
	content, _ := pruneEmpty(tmpl).(map[string]any)
	// Decoding the pod parses its quantities.
	if err := checkPodQuantities(content["spec"]); err != nil {
		L.ArgError(i, err.Error())
	}
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{},
		"spec":       content["spec"],
	}}
	if pod.Object["spec"] == nil {
		pod.Object["spec"] = map[string]any{}
	}
	if meta, ok := content["metadata"].(map[string]any); ok {
		pod.Object["metadata"] = meta
	}
	if namespace != "" {
		pod.SetNamespace(namespace)
	}
	return pod
}

// mustLua converts a typed helper result to Lua, charged to the run; these
// always convert unless the run is out of budget.
func mustLua(L *glua.LState, v any) glua.LValue {
	lv, err := toLua(L, meterOf(L), v)
	if err != nil {
		L.RaiseError("kube: %v", err)
	}
	return lv
}

// pruneEmpty removes empty maps and lists, recursively.
func pruneEmpty(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if e = pruneEmpty(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(v) == 0 {
			return nil
		}
		out := make([]any, 0, len(v))
		for _, e := range v {
			if e = pruneEmpty(e); e != nil {
				out = append(out, e)
			}
		}
		return out
	default:
		return v
	}
}
