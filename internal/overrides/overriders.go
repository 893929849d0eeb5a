package overrides

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// patchOp is one RFC 6902 operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// applyOverriders applies one overriders block to obj in place, in the
// fixed order; every entry is applied before the next one is computed.
func applyOverriders(obj *unstructured.Unstructured, o *policyv1alpha1.Overriders) error {
	var steps []func() ([]patchOp, error)
	for i := range o.ImageOverrider {
		steps = append(steps, func() ([]patchOp, error) { return imageOps(obj, &o.ImageOverrider[i]) })
	}
	for i := range o.CommandOverrider {
		steps = append(steps, func() ([]patchOp, error) { return commandArgsOps(obj, "command", &o.CommandOverrider[i]) })
	}
	for i := range o.ArgsOverrider {
		steps = append(steps, func() ([]patchOp, error) { return commandArgsOps(obj, "args", &o.ArgsOverrider[i]) })
	}
	for i := range o.LabelsOverrider {
		steps = append(steps, func() ([]patchOp, error) { return mapOps(obj, "labels", &o.LabelsOverrider[i]) })
	}
	for i := range o.AnnotationsOverrider {
		steps = append(steps, func() ([]patchOp, error) { return mapOps(obj, "annotations", &o.AnnotationsOverrider[i]) })
	}
	for i := range o.FieldOverrider {
		steps = append(steps, func() ([]patchOp, error) { return fieldOps(obj, &o.FieldOverrider[i]) })
	}
	for i := range o.Plaintext {
		steps = append(steps, func() ([]patchOp, error) { return plaintextOps(&o.Plaintext[i]) })
	}
	for _, step := range steps {
		ops, err := step()
		if err != nil {
			return err
		}
		if err := applyPatch(obj, ops); err != nil {
			return err
		}
	}
	return nil
}

// applyPatch applies ops to obj in place.
func applyPatch(obj *unstructured.Unstructured, ops []patchOp) error {
	if len(ops) == 0 {
		return nil
	}
	doc, err := obj.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encoding object: %w", err)
	}
	out, err := patchJSON(doc, ops)
	if err != nil {
		return err
	}
	patched := &unstructured.Unstructured{}
	if err := patched.UnmarshalJSON(out); err != nil {
		return fmt.Errorf("decoding patched object: %w", err)
	}
	obj.Object = patched.Object
	return nil
}

func patchJSON(doc []byte, ops []patchOp) ([]byte, error) {
	raw, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding patch: %w", err)
	}
	patch, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return nil, fmt.Errorf("decoding patch %s: %w", raw, err)
	}
	out, err := patch.Apply(doc)
	if err != nil {
		return nil, fmt.Errorf("applying patch %s: %w", raw, err)
	}
	return out, nil
}

// rawOp turns an operator, a path and a raw JSON value into a patch
// operation: add and replace need a value, remove takes none.
func rawOp(operator policyv1alpha1.OverriderOperator, path string, value []byte) (patchOp, error) {
	if err := CheckPointer(path); err != nil {
		return patchOp{}, err
	}
	switch operator {
	case policyv1alpha1.OverriderOpAdd, policyv1alpha1.OverriderOpReplace:
		if len(value) == 0 {
			return patchOp{}, fmt.Errorf("%s %q: value is required", operator, path)
		}
		return patchOp{Op: string(operator), Path: path, Value: json.RawMessage(value)}, nil
	case policyv1alpha1.OverriderOpRemove:
		return patchOp{Op: string(operator), Path: path}, nil
	default:
		return patchOp{}, fmt.Errorf("unknown operator %q for path %q", operator, path)
	}
}

func plaintextOps(p *policyv1alpha1.PlaintextOverrider) ([]patchOp, error) {
	op, err := rawOp(p.Operator, p.Path, p.Value.Raw)
	if err != nil {
		return nil, fmt.Errorf("plaintext: %w", err)
	}
	return []patchOp{op}, nil
}

// containersPointer is where the containers of the pod spec of well-known
// kinds live; ok is false for other kinds, which image, command and args
// overriders without a predicate leave alone.
func containersPointer(kind string) (string, bool) {
	switch kind {
	case "Pod":
		return "/spec/containers", true
	case "ReplicaSet", "Deployment", "DaemonSet", "StatefulSet", "Job":
		return "/spec/template/spec/containers", true
	default:
		return "", false
	}
}

// containers returns the container list of a well-known kind and its
// pointer; nil when there is none.
func containers(obj *unstructured.Unstructured) ([]any, string, error) {
	ptr, ok := containersPointer(obj.GetKind())
	if !ok {
		return nil, "", nil
	}
	v, found, err := getPointer(obj.Object, ptr)
	if err != nil || !found {
		return nil, ptr, err
	}
	list, ok := v.([]any)
	if !ok {
		return nil, ptr, fmt.Errorf("%s is not a list", ptr)
	}
	return list, ptr, nil
}

func imageOps(obj *unstructured.Unstructured, o *policyv1alpha1.ImageOverrider) ([]patchOp, error) {
	if err := CheckImage(o); err != nil {
		return nil, err
	}
	rewrite := func(ptr string, image string) (patchOp, error) {
		next, err := overrideImage(image, o)
		if err != nil {
			return patchOp{}, fmt.Errorf("imageOverrider at %s: %w", ptr, err)
		}
		return patchOp{Op: "replace", Path: ptr, Value: next}, nil
	}
	if o.Predicate != nil {
		v, found, err := getPointer(obj.Object, o.Predicate.Path)
		if err != nil {
			return nil, fmt.Errorf("imageOverrider predicate: %w", err)
		}
		image, ok := v.(string)
		if !found || !ok {
			return nil, fmt.Errorf("imageOverrider predicate: no image string at %q", o.Predicate.Path)
		}
		op, err := rewrite(o.Predicate.Path, image)
		if err != nil {
			return nil, err
		}
		return []patchOp{op}, nil
	}
	list, ptr, err := containers(obj)
	if err != nil {
		return nil, fmt.Errorf("imageOverrider: %w", err)
	}
	var ops []patchOp
	for i, c := range list {
		cm, _ := c.(map[string]any)
		image, ok := cm["image"].(string)
		if !ok {
			continue
		}
		op, err := rewrite(fmt.Sprintf("%s/%d/image", ptr, i), image)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// commandArgsOps changes field ("command" or "args") of every container
// named o.ContainerName: add appends the values (creating the list), remove
// drops every element equal to one of them.
func commandArgsOps(obj *unstructured.Unstructured, field string, o *policyv1alpha1.CommandArgsOverrider) ([]patchOp, error) {
	list, ptr, err := containers(obj)
	if err != nil {
		return nil, fmt.Errorf("%sOverrider: %w", field, err)
	}
	var ops []patchOp
	for i, c := range list {
		cm, _ := c.(map[string]any)
		if name, _ := cm["name"].(string); name != o.ContainerName {
			continue
		}
		var current []string
		if raw, ok := cm[field].([]any); ok {
			for _, v := range raw {
				s, ok := v.(string)
				if !ok {
					return nil, fmt.Errorf("%sOverrider: container %q has a non-string %s item", field, o.ContainerName, field)
				}
				current = append(current, s)
			}
		}
		var next []string
		switch o.Operator {
		case policyv1alpha1.OverriderOpAdd:
			next = append(slices.Clone(current), o.Value...)
		case policyv1alpha1.OverriderOpRemove:
			if cm[field] == nil {
				continue
			}
			next = slices.DeleteFunc(slices.Clone(current), func(s string) bool { return slices.Contains(o.Value, s) })
			if next == nil {
				next = []string{}
			}
		default:
			return nil, fmt.Errorf("%sOverrider: operator %q is not add or remove", field, o.Operator)
		}
		ops = append(ops, patchOp{Op: "add", Path: fmt.Sprintf("%s/%d/%s", ptr, i, field), Value: next})
	}
	return ops, nil
}

// mapOps changes metadata.<field> (labels or annotations): add creates the
// map and sets the key; remove and replace only touch existing keys.
func mapOps(obj *unstructured.Unstructured, field string, o *policyv1alpha1.LabelAnnotationOverrider) ([]patchOp, error) {
	current, _, err := unstructured.NestedStringMap(obj.Object, "metadata", field)
	if err != nil {
		return nil, fmt.Errorf("%sOverrider: %w", field, err)
	}
	keys := make([]string, 0, len(o.Value))
	for k := range o.Value {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	base := "/metadata/" + field
	var ops []patchOp
	for _, k := range keys {
		_, exists := current[k]
		path := base + "/" + escapePointer(k)
		switch o.Operator {
		case policyv1alpha1.OverriderOpAdd:
			if current == nil && len(ops) == 0 {
				ops = append(ops, patchOp{Op: "add", Path: base, Value: map[string]string{}})
			}
			ops = append(ops, patchOp{Op: "add", Path: path, Value: o.Value[k]})
		case policyv1alpha1.OverriderOpReplace:
			if exists {
				ops = append(ops, patchOp{Op: "replace", Path: path, Value: o.Value[k]})
			}
		case policyv1alpha1.OverriderOpRemove:
			if exists {
				ops = append(ops, patchOp{Op: "remove", Path: path})
			}
		default:
			return nil, fmt.Errorf("%sOverrider: unknown operator %q", field, o.Operator)
		}
	}
	return ops, nil
}

// fieldOps patches the JSON or YAML document held in the string at
// o.FieldPath and writes it back in the same format.
func fieldOps(obj *unstructured.Unstructured, o *policyv1alpha1.FieldOverrider) ([]patchOp, error) {
	sub, err := fieldSubOps(o)
	if err != nil {
		return nil, err
	}
	v, found, err := getPointer(obj.Object, o.FieldPath)
	if err != nil {
		return nil, fmt.Errorf("fieldOverrider: %w", err)
	}
	text, ok := v.(string)
	if !found || !ok {
		return nil, fmt.Errorf("fieldOverrider: no string at %q", o.FieldPath)
	}

	doc := []byte(text)
	if len(o.YAML) > 0 {
		if doc, err = yaml.YAMLToJSON(doc); err != nil {
			return nil, fmt.Errorf("fieldOverrider %q: parsing YAML: %w", o.FieldPath, err)
		}
	} else if !json.Valid(doc) {
		return nil, fmt.Errorf("fieldOverrider %q: value is not valid JSON", o.FieldPath)
	}
	out, err := patchJSON(doc, sub)
	if err != nil {
		return nil, fmt.Errorf("fieldOverrider %q: %w", o.FieldPath, err)
	}
	if len(o.YAML) > 0 {
		if out, err = yaml.JSONToYAML(out); err != nil {
			return nil, fmt.Errorf("fieldOverrider %q: writing YAML: %w", o.FieldPath, err)
		}
	}
	return []patchOp{{Op: "replace", Path: o.FieldPath, Value: string(out)}}, nil
}

// fieldSubOps checks a fieldOverrider and builds the patch operations it
// applies inside the document held at its fieldPath.
func fieldSubOps(o *policyv1alpha1.FieldOverrider) ([]patchOp, error) {
	if (len(o.JSON) == 0) == (len(o.YAML) == 0) {
		return nil, fmt.Errorf("fieldOverrider %q: exactly one of json and yaml is required", o.FieldPath)
	}
	if err := checkFieldPointer(o.FieldPath); err != nil {
		return nil, fmt.Errorf("fieldOverrider: %w", err)
	}
	var sub []patchOp
	for _, op := range o.JSON {
		p, err := rawOp(op.Operator, op.SubPath, op.Value.Raw)
		if err != nil {
			return nil, fmt.Errorf("fieldOverrider %q: %w", o.FieldPath, err)
		}
		sub = append(sub, p)
	}
	for _, op := range o.YAML {
		p, err := rawOp(op.Operator, op.SubPath, op.Value.Raw)
		if err != nil {
			return nil, fmt.Errorf("fieldOverrider %q: %w", o.FieldPath, err)
		}
		sub = append(sub, p)
	}
	return sub, nil
}

// getPointer resolves a JSON pointer (RFC 6901) in obj. Numeric segments
// index lists.
func getPointer(obj map[string]any, pointer string) (any, bool, error) {
	if err := CheckPointer(pointer); err != nil {
		return nil, false, err
	}
	if pointer == "" {
		return obj, true, nil
	}
	var cur any = obj
	for _, seg := range strings.Split(pointer[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch node := cur.(type) {
		case map[string]any:
			next, ok := node[seg]
			if !ok {
				return nil, false, nil
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil {
				return nil, false, fmt.Errorf("path %q: %q is not a list index", pointer, seg)
			}
			if i < 0 || i >= len(node) {
				return nil, false, nil
			}
			cur = node[i]
		default:
			return nil, false, errors.New("path " + strconv.Quote(pointer) + " goes through a scalar")
		}
	}
	return cur, true, nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
