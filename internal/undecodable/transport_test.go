package undecodable

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	lbscheme "github.com/lifeboat-dev/lifeboat/internal/scheme"
)

var policyGVK = policyv1alpha1.SchemeGroupVersion.WithKind("PropagationPolicy")

// canned is a RoundTripper that answers every request with one response.
type canned struct {
	status      int
	contentType string
	header      http.Header
	body        io.ReadCloser
	got         *http.Request
}

func (c *canned) RoundTrip(req *http.Request) (*http.Response, error) {
	c.got = req
	h := http.Header{"Content-Type": []string{c.contentType}}
	for k, v := range c.header {
		h[k] = v
	}
	return &http.Response{StatusCode: c.status, Header: h, Body: c.body, ContentLength: -1, Request: req}, nil
}

func testTransport(t *testing.T, next http.RoundTripper) http.RoundTripper {
	t.Helper()
	scheme, err := lbscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	return &transport{next: next, check: newChecker(scheme, testMarker), log: logr.Discard()}
}

// marked is a GET of url marked by an informer of PropagationPolicies.
func marked(t *testing.T, url string) (*http.Request, *request) {
	t.Helper()
	r := &request{gvk: policyGVK}
	req, err := http.NewRequestWithContext(withRequest(context.Background(), r), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req, r
}

const testMarker = markerPrefix + "test"

const listURL = "https://cp" + policiesPath + "?limit=500"

func listBody(continueToken string, items ...string) string {
	return `{"apiVersion":"policy.karmada.io/v1alpha1","kind":"PropagationPolicyList","metadata":{"resourceVersion":"7","continue":"` +
		continueToken + `","remainingItemCount":3},"items":[` + strings.Join(items, ",") + `]}`
}

func TestTransportReplacesUndecodableListItems(t *testing.T) {
	good1, bad, good2 := policy("ns", "a", "1"), policy("ns", "b", tooBig, `"resourceVersion":"5"`), policy("ns", "c", "3")
	next := &canned{status: 200, contentType: "application/json", body: io.NopCloser(strings.NewReader(listBody("page-2", good1, bad, good2)))}
	req, r := marked(t, listURL)
	resp, err := testTransport(t, next).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.ContentLength != int64(len(body)) {
		t.Errorf("ContentLength %d, body %d bytes", resp.ContentLength, len(body))
	}
	var got struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
			Continue        string `json:"continue"`
		} `json:"metadata"`
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("rewritten list is not JSON: %v\n%s", err, body)
	}
	if got.Kind != "PropagationPolicyList" || got.Metadata.ResourceVersion != "7" || got.Metadata.Continue != "page-2" {
		t.Errorf("list kind/metadata changed: %s", body)
	}
	if len(got.Items) != 3 || string(got.Items[0]) != good1 || string(got.Items[2]) != good2 {
		t.Fatalf("items = %s; want a and c untouched around b's stand-in", got.Items)
	}
	wantStandIn(t, got.Items[1], "b", "5")
	if r.standIns.Load() != 1 {
		t.Errorf("request counts %d stand-ins, want 1", r.standIns.Load())
	}
}

// wantStandIn checks that raw is the stand-in of policy ns/name: metadata
// only, with the decode error.
func wantStandIn(t *testing.T, raw []byte, name, rv string) {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	md, _ := s["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if s["apiVersion"] != "policy.karmada.io/v1alpha1" || s["kind"] != "PropagationPolicy" || s["spec"] != nil ||
		md["name"] != name || md["namespace"] != "ns" || md["uid"] != "uid-"+name || md["resourceVersion"] != rv {
		t.Errorf("stand-in %s: want apiVersion, kind and metadata of ns/%s at %s, no spec", raw, name, rv)
	}
	if msg, _ := ann[testMarker].(string); !strings.Contains(msg, "cannot unmarshal number 3000000000") {
		t.Errorf("stand-in %s: annotation %s does not carry the decode error", raw, testMarker)
	}
}

func TestTransportLeavesADecodableListAsItIs(t *testing.T) {
	in := listBody("", policy("ns", "a", "1"), policy("ns", "c", "2147483647"))
	next := &canned{status: 200, contentType: "application/json", body: io.NopCloser(strings.NewReader(in))}
	req, r := marked(t, listURL)
	resp, err := testTransport(t, next).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != in || r.standIns.Load() != 0 {
		t.Errorf("a decodable list changed:\n got %s\nwant %s", body, in)
	}
}

func TestTransportPassesOtherResponsesThrough(t *testing.T) {
	bad := listBody("", policy("ns", "b", tooBig))
	cases := map[string]struct {
		next   *canned
		mark   bool
		method string
		url    string
	}{
		"not marked (a direct read, another group)": {next: &canned{status: 200, contentType: "application/json"}, url: listURL},
		"protobuf": {next: &canned{status: 200, contentType: "application/vnd.kubernetes.protobuf"}, mark: true, url: listURL},
		"CBOR":     {next: &canned{status: 200, contentType: "application/cbor"}, mark: true, url: listURL},
		"metadata only": {next: &canned{status: 200, contentType: "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"},
			mark: true, url: listURL},
		"table":          {next: &canned{status: 200, contentType: "application/json;as=Table;g=meta.k8s.io;v=v1"}, mark: true, url: listURL},
		"compressed":     {next: &canned{status: 200, contentType: "application/json", header: http.Header{"Content-Encoding": []string{"gzip"}}}, mark: true, url: listURL},
		"error response": {next: &canned{status: 500, contentType: "application/json"}, mark: true, url: listURL},
		"not a GET":      {next: &canned{status: 200, contentType: "application/json"}, mark: true, method: http.MethodPut, url: listURL},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			c.next.body = io.NopCloser(strings.NewReader(bad))
			method := c.method
			if method == "" {
				method = http.MethodGet
			}
			ctx := context.Background()
			if c.mark {
				ctx = withRequest(ctx, &request{gvk: policyGVK})
			}
			req, err := http.NewRequestWithContext(ctx, method, c.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := testTransport(t, c.next).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if c.next.got != req {
				t.Errorf("the request did not reach the next transport as it was")
			}
			body, _ := io.ReadAll(resp.Body)
			if string(body) != bad {
				t.Errorf("body changed:\n got %s\nwant %s", body, bad)
			}
		})
	}
}

func TestTransportLeavesKindsOutsideTheSchemeAlone(t *testing.T) {
	in := `{"apiVersion":"example.com/v1","kind":"WidgetList","metadata":{},"items":[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"priority":"x"}}]}`
	next := &canned{status: 200, contentType: "application/json", body: io.NopCloser(strings.NewReader(in))}
	req, _ := marked(t, listURL)
	resp, err := testTransport(t, next).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := io.ReadAll(resp.Body); string(body) != in {
		t.Errorf("a kind the scheme does not know changed:\n got %s\nwant %s", body, in)
	}
}

// The watch response stays a stream: each event comes out as soon as it
// went in, checked, before the next one exists.
func TestTransportChecksAWatchStreamEventByEvent(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	next := &canned{status: 200, contentType: "application/json", body: pr}
	req, r := marked(t, "https://cp"+policiesPath+"?watch=true&resourceVersion=7")
	resp, err := testTransport(t, next).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)

	bookmark := `{"apiVersion":"policy.karmada.io/v1alpha1","kind":"PropagationPolicy","metadata":{"resourceVersion":"20"}}`
	gone := `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}`
	steps := []struct {
		name, in string
		// standIn is the name of the object the event must carry a
		// stand-in of; "" means the event comes out unchanged.
		standIn, rv string
	}{
		{name: "good ADDED", in: event("ADDED", policy("ns", "a", "1", `"resourceVersion":"8"`))},
		{name: "bad ADDED", in: event("ADDED", policy("ns", "b", tooBig, `"resourceVersion":"9"`)), standIn: "b", rv: "9"},
		{name: "bad MODIFIED after a good version", in: event("MODIFIED", policy("ns", "a", tooBig, `"resourceVersion":"10"`)), standIn: "a", rv: "10"},
		{name: "bad DELETED", in: event("DELETED", policy("ns", "a", tooBig, `"resourceVersion":"11"`)), standIn: "a", rv: "11"},
		{name: "good MODIFIED", in: event("MODIFIED", policy("ns", "c", "-5", `"resourceVersion":"12"`))},
		{name: "BOOKMARK", in: event("BOOKMARK", bookmark)},
		{name: "ERROR", in: event("ERROR", gone)},
	}
	for _, s := range steps {
		written := make(chan error, 1)
		go func() {
			_, err := io.WriteString(pw, s.in+"\n")
			written <- err
		}()
		got := make(chan watchEvent, 1)
		go func() {
			var ev watchEvent
			if err := dec.Decode(&ev); err != nil {
				t.Errorf("%s: reading the event: %v", s.name, err)
			}
			got <- ev
		}()
		var ev watchEvent
		select {
		case ev = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the event did not come out within 10s of going in", s.name)
		}
		if err := <-written; err != nil {
			t.Fatal(err)
		}
		var in watchEvent
		if err := json.Unmarshal([]byte(s.in), &in); err != nil {
			t.Fatal(err)
		}
		if ev.Type != in.Type {
			t.Errorf("%s: type %s, want %s", s.name, ev.Type, in.Type)
		}
		if s.standIn == "" {
			if !bytes.Equal(ev.Object, in.Object) {
				t.Errorf("%s: object changed:\n got %s\nwant %s", s.name, ev.Object, in.Object)
			}
			continue
		}
		wantStandIn(t, ev.Object, s.standIn, s.rv)
	}
	if r.standIns.Load() != 3 {
		t.Errorf("request counts %d stand-ins, want 3", r.standIns.Load())
	}
	pw.Close()
	var ev watchEvent
	if err := dec.Decode(&ev); err != io.EOF {
		t.Errorf("after the server's end: %v, want EOF", err)
	}
}

func event(typ, obj string) string {
	return `{"type":"` + typ + `","object":` + obj + `}`
}
