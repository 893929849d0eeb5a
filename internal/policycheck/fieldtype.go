package policycheck

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// jsonUnmarshaler is the interface of types that decode themselves
// (IntOrString, Quantity, Time, RawExtension, ...).
var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// fieldType returns the Go type of the field a JSON pointer names in
// objects of Go type t (the struct of a built-in kind), following JSON
// field names exactly as the API server decodes them. ok is false when the
// pointer leaves what the type says: a name no field has (perhaps a field
// newer than this build's client-go), a step into a list that is not an
// index, or a step into a value that decodes itself.
func fieldType(t reflect.Type, pointer string) (reflect.Type, bool) {
	if pointer == "" {
		return t, true
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, false
	}
	for _, seg := range strings.Split(pointer[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if decodesItself(t) {
			return nil, false
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := jsonField(t, seg)
			if !ok {
				return nil, false
			}
			t = f.Type
		case reflect.Slice, reflect.Array:
			if t.Elem().Kind() == reflect.Uint8 { // []byte is a base64 string
				return nil, false
			}
			if seg != "-" {
				if i, err := strconv.Atoi(seg); err != nil || i < 0 {
					return nil, false
				}
			}
			t = t.Elem()
		case reflect.Map:
			if t.Key().Kind() != reflect.String {
				return nil, false
			}
			t = t.Elem()
		default:
			return nil, false
		}
	}
	return t, true
}

// jsonField finds the field of struct t whose JSON name is name, looking
// into inlined embedded structs (such as TypeMeta).
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		tagName, _, _ := strings.Cut(tag, ",")
		if tagName == "" && f.Anonymous {
			inner := f.Type
			if inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				if g, ok := jsonField(inner, name); ok {
					return g, true
				}
			}
			continue
		}
		if tagName == "" {
			tagName = f.Name
		}
		if tagName == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func decodesItself(t reflect.Type) bool {
	return t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler)
}

// checkValue reports why raw (a JSON value) cannot be decoded into a field
// of Go type t, as the member's API server would decode it: case-sensitive
// field names, integers that must be integers and fit their size, types
// that decode themselves (quantities, int-or-string) by their own rules.
func checkValue(t reflect.Type, raw []byte) error {
	err := utiljson.Unmarshal(raw, reflect.New(t).Interface())
	if err == nil {
		return nil
	}
	if want := describe(t); want != "" {
		return fmt.Errorf("want %s", want)
	}
	return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "json: "))
}

// describe names a scalar Go type for users ("a 32-bit integer"); "" for
// the others, whose decoding error says more.
func describe(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if decodesItself(t) {
		return ""
	}
	switch t.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		return fmt.Sprintf("a %d-bit integer", t.Bits())
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		return fmt.Sprintf("a non-negative %d-bit integer", t.Bits())
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	default:
		return ""
	}
}

// isString reports whether values of t are JSON strings (and nothing else).
func isString(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.String && !decodesItself(t)
}
