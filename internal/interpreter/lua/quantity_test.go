package lua

import (
	"strings"
	"testing"
	"time"
)

// TestQuantityBounds: the kube helpers and GetReplicas' requirements
// refuse quantities whose parsing would run long and unmetered, and take
// every ordinary one.
func TestQuantityBounds(t *testing.T) {
	rt := New(Options{})
	o := obj(t, "{apiVersion: v1, kind: X}")
	value := func(expr string) (string, error) {
		return eval(t, rt, `(function() local kube = require("kube") return `+expr+` end)()`)
	}
	requirements := func(cpu string) error {
		s := compile(t, rt, `function GetReplicas(o) return 1, {resourceRequest = {cpu = `+cpu+`}} end`)
		_, _, err := s.GetReplicas(o)
		return err
	}
	template := func(cpu string) string {
		return `{spec = {containers = {{name = "c", command = {string.rep("9", 100)}, resources = {requests = {cpu = ` + cpu + `}}}}}}`
	}

	ok := map[string]string{
		`kube.resourceAdd("100m", "1")`:                                                "1100m",
		`kube.resourceAdd("1Gi", "1Mi")`:                                               "1025Mi",
		`kube.resourceAdd("1e3", "1")`:                                                 "1001",
		`kube.resourceAdd("2", 0.5)`:                                                   "2500m",
		`kube.getResourceQuantity("1e3")`:                                              "1000",
		`kube.getResourceQuantity("1Gi")`:                                              "1073741824",
		`kube.getResourceQuantity("100m")`:                                             "0.1",
		`kube.getResourceQuantity("1e30")`:                                             "1e+30",
		`kube.getResourceQuantity("1E-30") > 0`:                                        "true",
		`kube.getResourceQuantity("1E")`:                                               "1000000000000000000",
		`kube.accuratePodRequirements(` + template(`"100m"`) + `).resourceRequest.cpu`: "100m",
	}
	for expr, want := range ok {
		if got, err := value(expr); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", expr, got, err, want)
		}
	}
	for _, cpu := range []string{`"100m"`, `"1e3"`, `2`} {
		if err := requirements(cpu); err != nil {
			t.Errorf("GetReplicas with cpu %s: %v", cpu, err)
		}
	}

	const exponent = "decimal exponent beyond ±30"
	const length = "longer than 64 characters"
	refused := map[string]string{
		`kube.getResourceQuantity("1e31")`:                                                                   exponent,
		`kube.getResourceQuantity("1.5E-31")`:                                                                exponent,
		`kube.getResourceQuantity("1e0000000000000000000000031")`:                                            exponent,
		`kube.getResourceQuantity(1e300)`:                                                                    exponent,
		`kube.resourceAdd("1", "1e4294967296")`:                                                              exponent,
		`kube.resourceAdd(string.rep("1", 65))`:                                                              length,
		`kube.resourceAdd("0." .. string.rep("0", 1e6) .. "1")`:                                              length,
		`kube.accuratePodRequirements(` + template(`"1e40"`) + `)`:                                           exponent,
		`kube.getPodDependencies(` + template(`"1e40"`) + `, "ns")`:                                          exponent,
		`kube.accuratePodRequirements({spec = {volumes = {{name = "v", emptyDir = {sizeLimit = "1e40"}}}}})`: exponent,
		`kube.accuratePodRequirements({spec = {overhead = {cpu = string.rep("1", 65)}}})`:                    length,
	}
	check := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", what, err, want)
		}
	}
	for expr, want := range refused {
		_, err := value(expr)
		check(expr, err, want)
	}
	check("GetReplicas with cpu 1e40", requirements(`"1e40"`), exponent)
	check("GetReplicas with a long cpu", requirements(`string.rep("1", 100)`), length)

	// Unbounded, these take tens of seconds each: run them only once the
	// bounds have proved themselves above.
	if t.Failed() {
		t.Fatal("not running the quantities that take seconds to parse")
	}
	start := time.Now()
	_, err := value(`kube.resourceAdd("1e20000000", "1")`)
	check(`kube.resourceAdd("1e20000000", "1")`, err, exponent)
	check("GetReplicas with cpu 1e20000000", requirements(`"1e20000000"`), exponent)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing took %s", d)
	}
}
