package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/client-go/discovery"
)

// The control plane's own count of the requests it answered, read from
// its API server's /metrics (apiserver_request_total) before and after a
// scenario's step: what a control plane writes per object is what costs
// its API server, and it is counted the same way for any plane.

// requestKind is one kind of request the API server answered.
type requestKind struct {
	// Resource is the resource, with its subresource after a "/"
	// ("resourcebindings/status"), or a path outside the API groups
	// ("/readyz"); empty when the API server names neither.
	Resource string
	Verb     string
	// Code is the HTTP status code of the answer.
	Code string
}

func (k requestKind) String() string {
	r := k.Resource
	if r == "" {
		r = "(no resource)"
	}
	return r + " " + k.Verb
}

// refused reports whether the answer was an error (4xx or 5xx).
func (k requestKind) refused() bool {
	return k.Code != "" && k.Code[0] >= '4'
}

// longRunningVerbs are left out of the counts: a watch is one request
// however long it streams.
var longRunningVerbs = []string{"WATCH", "WATCHLIST", "CONNECT"}

// requestCountsOf reads apiserver_request_total from an API server's
// Prometheus text exposition, by kind, watches left out.
func requestCountsOf(exposition string) (map[requestKind]float64, error) {
	out := map[requestKind]float64{}
	err := eachValue(exposition, "apiserver_request_total", func(l map[string]string, v float64) {
		if slices.Contains(longRunningVerbs, l["verb"]) {
			return
		}
		// A path outside the API groups is in subresource, with no
		// resource.
		r, sub := l["resource"], l["subresource"]
		switch {
		case r == "":
			r = sub
		case sub != "":
			r += "/" + sub
		}
		out[requestKind{Resource: r, Verb: l["verb"], Code: l["code"]}] += v
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// requestCounts are the requests answered between two readings.
type requestCounts struct {
	// Total counts every request; Refused those answered with an error.
	Total, Refused float64
	// ByKind are the counts by resource and verb, every code together,
	// most first.
	ByKind []requestCount
	// RefusedByCode are the refused ones by status code, most first.
	RefusedByCode []requestCount
}

type requestCount struct {
	Name  string
	Count float64
}

// requestsBetween returns the requests answered between two readings. A
// count lower after than before (the API server started again) is left
// out.
func requestsBetween(before, after map[requestKind]float64) requestCounts {
	byKind, byCode := map[string]float64{}, map[string]float64{}
	var out requestCounts
	for k, a := range after {
		d := a - before[k]
		if d <= 0 {
			continue
		}
		out.Total += d
		byKind[k.String()] += d
		if k.refused() {
			out.Refused += d
			byCode[k.Code] += d
		}
	}
	out.ByKind, out.RefusedByCode = sortedCounts(byKind), sortedCounts(byCode)
	return out
}

func sortedCounts(m map[string]float64) []requestCount {
	out := make([]requestCount, 0, len(m))
	for name, c := range m {
		out = append(out, requestCount{Name: name, Count: c})
	}
	slices.SortFunc(out, func(x, y requestCount) int { return mostFirst(x.Count, y.Count, x.Name, y.Name) })
	return out
}

// describeRequests says, for a run's notes, how many requests the control
// plane answered, per object when objects is positive, how many were
// refused, and the top kinds.
func describeRequests(what string, c requestCounts, objects, top int) string {
	if c.Total == 0 {
		return what + ": none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %.0f", what, c.Total)
	if objects > 0 {
		fmt.Fprintf(&b, " (%.1f per object)", c.Total/float64(objects))
	}
	if c.Refused > 0 {
		codes := make([]string, 0, len(c.RefusedByCode))
		for _, r := range c.RefusedByCode {
			codes = append(codes, fmt.Sprintf("%s ×%.0f", r.Name, r.Count))
		}
		fmt.Fprintf(&b, ", %.0f refused (%s)", c.Refused, strings.Join(codes, ", "))
	}
	kinds := c.ByKind
	if len(kinds) > top {
		kinds = kinds[:top]
	}
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %.0f", k.Name, k.Count))
	}
	fmt.Fprintf(&b, "; most: %s", strings.Join(parts, ", "))
	return b.String()
}

// scrapeRequests reads the control plane's request counts so far; nil when
// they cannot be read (the bench's user may not read /metrics), which is
// logged.
func (b *Bench) scrapeRequests(ctx context.Context) map[requestKind]float64 {
	if b.Env == nil || b.Env.ControlPlaneConfig == nil {
		return nil
	}
	dc, err := discovery.NewDiscoveryClientForConfig(b.Env.ControlPlaneConfig)
	if err != nil {
		b.logf("control-plane requests not counted: %v", err)
		return nil
	}
	body, err := dc.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		b.logf("control-plane requests not counted: reading the API server's /metrics: %v", err)
		return nil
	}
	counts, err := requestCountsOf(string(body))
	if err != nil {
		b.logf("control-plane requests not counted: %v", err)
		return nil
	}
	return counts
}

// requestsSince reads the control plane's request counts again and puts
// what was answered since before into r's notes, per object of objects;
// nil when either reading is missing.
func (b *Bench) requestsSince(ctx context.Context, before map[requestKind]float64, r *RunResult, what string, objects int) *requestCounts {
	if before == nil {
		return nil
	}
	after := b.scrapeRequests(ctx)
	if after == nil {
		return nil
	}
	c := requestsBetween(before, after)
	r.Notes = append(r.Notes, describeRequests(what, c, objects, 8))
	return &c
}
