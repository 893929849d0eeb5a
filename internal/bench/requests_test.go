package bench

import (
	"fmt"
	"strings"
	"testing"
)

// requestExposition is the shape of a kube-apiserver's /metrics: labels in
// its order, watches among the rest, a metric whose name starts with the
// counted one, and a label value with escapes.
const requestExposition = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="work.karmada.io",resource="resourcebindings",scope="resource",subresource="status",verb="PATCH",version="v1alpha2"} 120
apiserver_request_total{code="409",component="apiserver",dry_run="",group="work.karmada.io",resource="resourcebindings",scope="resource",subresource="status",verb="PATCH",version="v1alpha2"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="work.karmada.io",resource="resourcebindings",scope="resource",subresource="",verb="PUT",version="v1alpha2"} 40
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 30
apiserver_request_total{code="200",component="apiserver",dry_run="",group="work.karmada.io",resource="works",scope="namespace",subresource="",verb="WATCH",version="v1alpha1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/readyz",verb="GET",version=""} 3
apiserver_request_total{code="404",component="apiserver \"main\"\\n",dry_run="",group="work.karmada.io",resource="works",scope="resource",subresource="",verb="PATCH",version="v1alpha1"} 2
apiserver_request_total_other{code="200",resource="works",verb="PATCH"} 1000
`

func TestRequestCountsOfLeavesWatchesOut(t *testing.T) {
	got, err := requestCountsOf(requestExposition)
	if err != nil {
		t.Fatal(err)
	}
	want := map[requestKind]float64{
		{Resource: "resourcebindings/status", Verb: "PATCH", Code: "200"}: 120,
		{Resource: "resourcebindings/status", Verb: "PATCH", Code: "409"}: 5,
		{Resource: "resourcebindings", Verb: "PUT", Code: "200"}:          40,
		{Resource: "events", Verb: "POST", Code: "201"}:                   30,
		{Resource: "/readyz", Verb: "GET", Code: "200"}:                   3,
		{Resource: "works", Verb: "PATCH", Code: "404"}:                   2,
	}
	if len(got) != len(want) {
		t.Errorf("requestCountsOf = %v, want %v (watches and other metrics left out)", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("requestCountsOf[%v] = %v, want %v", k, got[k], v)
		}
	}
}

func TestRequestsBetween(t *testing.T) {
	before := map[requestKind]float64{
		{Resource: "resourcebindings/status", Verb: "PATCH", Code: "200"}: 20,
		{Resource: "resourcebindings/status", Verb: "PATCH", Code: "409"}: 1,
		{Resource: "events", Verb: "POST", Code: "201"}:                   30,
		// Counted before an API server restart, lower after: left out.
		{Resource: "works", Verb: "POST", Code: "201"}: 500,
	}
	after := map[requestKind]float64{
		{Resource: "resourcebindings/status", Verb: "PATCH", Code: "200"}: 120,
		{Resource: "resourcebindings/status", Verb: "PATCH", Code: "409"}: 5,
		{Resource: "resourcebindings", Verb: "PUT", Code: "200"}:          40,
		{Resource: "events", Verb: "POST", Code: "201"}:                   30,
		{Resource: "works", Verb: "PATCH", Code: "404"}:                   2,
		{Resource: "works", Verb: "POST", Code: "201"}:                    10,
	}
	c := requestsBetween(before, after)
	if c.Total != 146 || c.Refused != 6 {
		t.Errorf("total %v, refused %v; want 146 and 6", c.Total, c.Refused)
	}
	got := describeRequests("requests", c, 10, 2)
	want := "requests: 146 (14.6 per object), 6 refused (409 ×4, 404 ×2); most: resourcebindings/status PATCH 104, resourcebindings PUT 40"
	if got != want {
		t.Errorf("describeRequests =\n%q\nwant\n%q", got, want)
	}
	if got := describeRequests("requests", requestsBetween(after, after), 10, 2); got != "requests: none" {
		t.Errorf("describeRequests with nothing between = %q", got)
	}
}

func TestEachValueRefusesUnreadableLines(t *testing.T) {
	for _, line := range []string{
		`m{name="x"`,
		`m{name="x} 1`,
		`m{name} 1`,
		`m{name="x"} many`,
		`m{name="x"}`,
	} {
		err := eachValue(line+"\n", "m", func(map[string]string, float64) {})
		if err == nil {
			t.Errorf("eachValue(%q): no error", line)
		}
	}
	var seen []string
	err := eachValue("m 4\nm{a=\"1\",b=\"x,y}\"} 2 1700000000\nmore 3\n", "m", func(l map[string]string, v float64) {
		seen = append(seen, fmt.Sprintf("%s|%s|%g", l["a"], l["b"], v))
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"||4", "1|x,y}|2"}; strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("eachValue saw %q, want %q (no labels, a comma and a brace inside a value, a timestamp)", seen, want)
	}
}
