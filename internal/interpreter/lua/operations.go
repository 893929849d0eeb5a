package lua

import (
	"encoding/json"
	"fmt"
	"math"

	glua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha1"
	workv1alpha2 "github.com/lifeboat-dev/lifeboat/api/work/v1alpha2"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
)

// Operation names one interpreter operation a customization can script.
// The names are Karmada's (config.karmada.io InterpreterOperation).
type Operation string

// Operations a customization can script.
const (
	InterpretReplica    Operation = "InterpretReplica"
	ReviseReplica       Operation = "ReviseReplica"
	Retain              Operation = "Retain"
	InterpretStatus     Operation = "InterpretStatus"
	InterpretHealth     Operation = "InterpretHealth"
	AggregateStatus     Operation = "AggregateStatus"
	InterpretDependency Operation = "InterpretDependency"
)

// Operations lists every scriptable operation in a fixed order.
var Operations = []Operation{
	InterpretReplica, ReviseReplica, Retain, InterpretStatus,
	InterpretHealth, AggregateStatus, InterpretDependency,
}

// Function is the global Lua function a script must define for op.
func (op Operation) Function() string {
	switch op {
	case InterpretReplica:
		return "GetReplicas"
	case ReviseReplica:
		return "ReviseReplica"
	case Retain:
		return "Retain"
	case InterpretStatus:
		return "ReflectStatus"
	case InterpretHealth:
		return "InterpretHealth"
	case AggregateStatus:
		return "AggregateStatus"
	case InterpretDependency:
		return "GetDependencies"
	}
	return ""
}

// ParseOperation accepts an operation name or its Lua function name
// ("InterpretHealth", "GetReplicas", "ReflectStatus"...).
func ParseOperation(name string) (Operation, error) {
	for _, op := range Operations {
		if name == string(op) || name == op.Function() {
			return op, nil
		}
	}
	return "", fmt.Errorf("unknown operation %q", name)
}

// GetReplicas calls GetReplicas(desiredObj), which returns the replica
// count and the requirements of one replica (a ReplicaRequirements-shaped
// table, or nil).
func (s *Script) GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error) {
	var replicas int32
	var req *workv1alpha2.ReplicaRequirements
	err := s.call(InterpretReplica.Function(), 2, func(m *meter, out []glua.LValue) error {
		n, ok := out[0].(glua.LNumber)
		if !ok {
			return fmt.Errorf("GetReplicas returned %s for the replicas, want a number", out[0].Type())
		}
		if f := float64(n); f < 0 || f > math.MaxInt32 || f != math.Trunc(f) || math.IsNaN(f) {
			return fmt.Errorf("GetReplicas returned %v replicas, want a whole number from 0 to %d", f, math.MaxInt32)
		}
		replicas = int32(n)
		if out[1] == glua.LNil {
			return nil
		}
		req = &workv1alpha2.ReplicaRequirements{}
		if err := decodeInto(m, out[1], nil, req, checkResourceRequest); err != nil {
			return fmt.Errorf("GetReplicas requirements: %w", err)
		}
		req = normalizeRequirements(req)
		return nil
	}, obj.Object)
	if err != nil {
		return 0, nil, err
	}
	return replicas, req, nil
}

// checkResourceRequest bounds the quantities of requirements before they
// are parsed.
func checkResourceRequest(req any) error {
	if r, ok := req.(map[string]any); ok {
		return checkQuantities(r["resourceRequest"])
	}
	return nil
}

// normalizeRequirements returns nil for requirements that say nothing, as
// the built-in rules do.
func normalizeRequirements(req *workv1alpha2.ReplicaRequirements) *workv1alpha2.ReplicaRequirements {
	if c := req.NodeClaim; c != nil && c.HardNodeAffinity == nil && len(c.NodeSelector) == 0 && len(c.Tolerations) == 0 {
		req.NodeClaim = nil
	}
	if len(req.ResourceRequest) == 0 {
		req.ResourceRequest = nil
	}
	if req.NodeClaim == nil && req.ResourceRequest == nil && req.Namespace == "" && req.PriorityClassName == "" {
		return nil
	}
	return req
}

// ReviseReplica calls ReviseReplica(desiredObj, desiredReplica).
func (s *Script) ReviseReplica(obj *unstructured.Unstructured, replicas int64) (*unstructured.Unstructured, error) {
	var revised *unstructured.Unstructured
	err := s.call(ReviseReplica.Function(), 1, func(m *meter, out []glua.LValue) error {
		var err error
		revised, err = objectFrom(m, ReviseReplica, out[0], obj.Object)
		return err
	}, obj.Object, replicas)
	if err != nil {
		return nil, err
	}
	return revised, nil
}

// Retain calls Retain(desiredObj, observedObj).
func (s *Script) Retain(desired, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var retained *unstructured.Unstructured
	err := s.call(Retain.Function(), 1, func(m *meter, out []glua.LValue) error {
		var err error
		retained, err = objectFrom(m, Retain, out[0], desired.Object, observed.Object)
		return err
	}, desired.Object, observed.Object)
	if err != nil {
		return nil, err
	}
	return retained, nil
}

// ReflectStatus calls ReflectStatus(observedObj). A nil or empty result
// means no status.
func (s *Script) ReflectStatus(obj *unstructured.Unstructured) (*runtime.RawExtension, error) {
	var status *runtime.RawExtension
	err := s.call(InterpretStatus.Function(), 1, func(m *meter, out []glua.LValue) error {
		if out[0] == glua.LNil {
			return nil
		}
		t, ok := out[0].(*glua.LTable)
		if !ok {
			return fmt.Errorf("ReflectStatus returned a %s, want a table", out[0].Type())
		}
		if t.Len() == 0 {
			if k, _ := t.Next(glua.LNil); k == glua.LNil {
				return nil
			}
		}
		plain, err := fromLua(m, t, obj.Object["status"], false)
		if err != nil {
			return fmt.Errorf("ReflectStatus: %w", err)
		}
		raw, err := json.Marshal(plain)
		if err != nil {
			return fmt.Errorf("ReflectStatus: encode status: %w", err)
		}
		status = &runtime.RawExtension{Raw: raw}
		return nil
	}, obj.Object)
	if err != nil {
		return nil, err
	}
	return status, nil
}

// InterpretHealth calls InterpretHealth(observedObj), which must return a
// boolean. Anything else is an error, so that health becomes Unknown.
func (s *Script) InterpretHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, error) {
	var healthy glua.LBool
	err := s.call(InterpretHealth.Function(), 1, func(_ *meter, out []glua.LValue) error {
		var ok bool
		if healthy, ok = out[0].(glua.LBool); !ok {
			return fmt.Errorf("InterpretHealth returned %s, want a boolean", out[0].Type())
		}
		return nil
	}, obj.Object)
	if err != nil {
		return workv1alpha1.ResourceUnknown, err
	}
	if healthy {
		return workv1alpha1.ResourceHealthy, nil
	}
	return workv1alpha1.ResourceUnhealthy, nil
}

// statusItem is one member status as a script sees it (Karmada's shape).
type statusItem struct {
	ClusterName    string `json:"clusterName"`
	Status         any    `json:"status,omitempty"`
	Applied        bool   `json:"applied"`
	AppliedMessage string `json:"appliedMessage,omitempty"`
	Health         string `json:"health,omitempty"`
}

// AggregateStatus calls AggregateStatus(desiredObj, statusItems). Each item
// is {clusterName, status, applied, appliedMessage, health}.
func (s *Script) AggregateStatus(obj *unstructured.Unstructured, items []workv1alpha2.AggregatedStatusItem) (*unstructured.Unstructured, error) {
	list := make([]any, 0, len(items))
	statuses := make([]any, 0, len(items))
	for _, it := range items {
		var status any
		if it.Status != nil && len(it.Status.Raw) > 0 {
			if err := json.Unmarshal(it.Status.Raw, &status); err != nil {
				return nil, fmt.Errorf("status of cluster %s: %w", it.ClusterName, err)
			}
		}
		statuses = append(statuses, status)
		list = append(list, statusItem{
			ClusterName:    it.ClusterName,
			Status:         status,
			Applied:        it.Applied,
			AppliedMessage: it.AppliedMessage,
			Health:         string(it.Health),
		})
	}
	// Empty tables in the aggregated status are resolved against the
	// template first, then against the members' statuses.
	ref := map[string]any{}
	for k, v := range obj.Object {
		ref[k] = v
	}
	if _, ok := ref["status"]; !ok {
		for _, st := range statuses {
			if st != nil {
				ref["status"] = st
				break
			}
		}
	}
	var aggregated *unstructured.Unstructured
	err := s.call(AggregateStatus.Function(), 1, func(m *meter, out []glua.LValue) error {
		var err error
		aggregated, err = objectFrom(m, AggregateStatus, out[0], ref)
		return err
	}, obj.Object, list)
	if err != nil {
		return nil, err
	}
	return aggregated, nil
}

// GetDependencies calls GetDependencies(desiredObj), which returns a list
// of {apiVersion, kind, namespace, name}. labelSelector references are not
// supported yet and are an error.
func (s *Script) GetDependencies(obj *unstructured.Unstructured) ([]interpreter.Dependency, error) {
	var refs []struct {
		interpreter.Dependency
		LabelSelector any `json:"labelSelector,omitempty"`
	}
	err := s.call(InterpretDependency.Function(), 1, func(m *meter, out []glua.LValue) error {
		if out[0] == glua.LNil {
			return nil
		}
		if err := decodeInto(m, out[0], []any{}, &refs, nil); err != nil {
			return fmt.Errorf("GetDependencies: %w", err)
		}
		return nil
	}, obj.Object)
	if err != nil {
		return nil, err
	}
	if refs == nil {
		return nil, nil
	}
	deps := make([]interpreter.Dependency, 0, len(refs))
	for i, r := range refs {
		switch {
		case r.APIVersion == "" || r.Kind == "":
			return nil, fmt.Errorf("GetDependencies: entry %d needs apiVersion and kind", i+1)
		case r.Name == "" && r.LabelSelector != nil:
			return nil, fmt.Errorf("GetDependencies: entry %d (%s): labelSelector dependencies are not supported by Lifeboat", i+1, r.Kind)
		case r.Name == "":
			return nil, fmt.Errorf("GetDependencies: entry %d (%s) needs a name", i+1, r.Kind)
		}
		deps = append(deps, r.Dependency)
	}
	return deps, nil
}

// objectFrom converts a script's returned object, resolving empty tables
// against refs (the objects the script was given).
func objectFrom(m *meter, op Operation, v glua.LValue, refs ...map[string]any) (*unstructured.Unstructured, error) {
	if _, ok := v.(*glua.LTable); !ok {
		return nil, fmt.Errorf("%s returned a %s, want an object", op.Function(), v.Type())
	}
	var ref any
	if len(refs) > 0 {
		ref = mergeRefs(refs)
	}
	content, err := fromLua(m, v, ref, true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.Function(), err)
	}
	object, ok := content.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s returned a list, want an object", op.Function())
	}
	return &unstructured.Unstructured{Object: object}, nil
}

// mergeRefs overlays reference objects: the first one that has a value at
// a place decides its shape.
func mergeRefs(refs []map[string]any) any {
	if len(refs) == 1 {
		return refs[0]
	}
	var merge func(a, b any) any
	merge = func(a, b any) any {
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if !aok || !bok {
			if a != nil {
				return a
			}
			return b
		}
		out := make(map[string]any, len(am)+len(bm))
		for k, v := range bm {
			out[k] = v
		}
		for k, v := range am {
			out[k] = merge(v, bm[k])
		}
		return out
	}
	var out any = refs[0]
	for _, r := range refs[1:] {
		out = merge(out, r)
	}
	return out
}

// decodeInto converts a Lua value and decodes it into a typed value.
// check, if not nil, vets the converted value before it is decoded.
func decodeInto(m *meter, v glua.LValue, ref any, into any, check func(any) error) error {
	plain, err := fromLua(m, v, ref, false)
	if err != nil {
		return err
	}
	plain = pruneEmpty(plain)
	if plain == nil {
		return nil
	}
	if check != nil {
		if err := check(plain); err != nil {
			return err
		}
	}
	raw, err := json.Marshal(plain)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("decode into %T: %w", into, err)
	}
	return nil
}
