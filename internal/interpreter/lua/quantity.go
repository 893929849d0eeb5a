package lua

import (
	"fmt"
	"strconv"
	"strings"
)

// Bounds on the quantities scripts give the kube helpers and return as
// requirements. Parsing a quantity (resource.ParseQuantity) and printing
// it back take time and memory superlinear in its digits and in its
// decimal exponent, all within one Go call the run's meter cannot
// interrupt: "1e20000000" takes tens of seconds and prints as twenty
// million digits. Kubernetes' own quantities are far inside these bounds:
// a quantity holds at most 2^63-1 units of its smallest scale (nano).
const (
	maxQuantityLength   = 64
	maxQuantityExponent = 30
)

// checkQuantityText refuses s when, parsed as a quantity, it would be
// longer than maxQuantityLength or have a decimal exponent ("1e40") beyond
// ±maxQuantityExponent. Any other string passes: if it is no quantity,
// parsing it fails at once.
func checkQuantityText(s string) error {
	t := strings.TrimSpace(s) // as Quantity.UnmarshalJSON
	if len(t) > maxQuantityLength {
		if looksLikeQuantity(t) {
			return fmt.Errorf("quantity %s is longer than %d characters", quoteShort(t), maxQuantityLength)
		}
		return nil
	}
	if exp, ok := decimalExponent(t); ok {
		digits := strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
		if n, err := strconv.Atoi(digits); len(digits) > 2 || err == nil && n > maxQuantityExponent {
			return fmt.Errorf("quantity %s has a decimal exponent beyond ±%d", quoteShort(t), maxQuantityExponent)
		}
	}
	return nil
}

// looksLikeQuantity reports whether s starts as a quantity does: a sign or
// not, then a digit or a point.
func looksLikeQuantity(s string) bool {
	s = strings.TrimLeft(s, "+-")
	return s != "" && (s[0] == '.' || s[0] >= '0' && s[0] <= '9')
}

// decimalExponent returns the exponent of a quantity such as "1.5e-3": the
// digits after the number's e or E, with their sign.
func decimalExponent(s string) (string, bool) {
	if !looksLikeQuantity(s) {
		return "", false
	}
	i := len(s) - len(strings.TrimLeft(s, "+-"))
	for i < len(s) && (s[i] == '.' || s[i] >= '0' && s[i] <= '9') {
		i++
	}
	if i+1 >= len(s) || s[i] != 'e' && s[i] != 'E' {
		return "", false
	}
	exp := s[i+1:]
	digits := strings.TrimLeft(exp, "+-")
	if len(exp)-len(digits) > 1 || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", false // not an exponent: parsing fails
	}
	return exp, true
}

// checkQuantities applies checkQuantityText to every string in a value
// converted from Lua.
func checkQuantities(v any) error {
	switch v := v.(type) {
	case string:
		return checkQuantityText(v)
	case map[string]any:
		for _, e := range v {
			if err := checkQuantities(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := checkQuantities(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPodQuantities applies checkQuantityText to the quantities of a pod
// spec: the values of every requests, limits and overhead map, and every
// sizeLimit and divisor (the places corev1.PodSpec holds a Quantity).
// Other strings are not quantities and are left alone.
func checkPodQuantities(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			var err error
			switch k {
			case "requests", "limits", "overhead":
				if m, ok := e.(map[string]any); ok {
					err = checkQuantities(m)
				}
			case "sizeLimit", "divisor":
				if s, ok := e.(string); ok {
					err = checkQuantityText(s)
				}
			default:
				err = checkPodQuantities(e)
			}
			if err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := checkPodQuantities(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// quoteShort quotes s, cut to its first 32 bytes.
func quoteShort(s string) string {
	if len(s) <= 32 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:32], len(s))
}
