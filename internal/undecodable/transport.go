package undecodable

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// markerPrefix starts the annotation that marks a stand-in: an object the
// transport could not decode, reduced to its apiVersion, kind and
// metadata, with the decode error as the annotation's value. Only the
// informers of this package see stand-ins, and none reaches their stores.
// The annotation ends with a random suffix chosen per process, so that no
// stored object can pass for a stand-in.
const markerPrefix = "undecodable.lifeboat.dev/decode-error-"

func newMarker() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("choosing the stand-in annotation: %w", err)
	}
	return markerPrefix + hex.EncodeToString(b), nil
}

// maxErrorLen bounds the decode error kept in a stand-in: a JSON type error
// names a field and a value, never more, but a value can be long.
const maxErrorLen = 512

// request marks a list or watch request whose response the transport
// checks; the informer of gvk sets it on the request's context.
type request struct {
	gvk schema.GroupVersionKind
	// standIns counts the stand-ins the transport put into the response.
	standIns atomic.Int64
}

type requestKey struct{}

func withRequest(ctx context.Context, r *request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

func requestFrom(ctx context.Context) *request {
	r, _ := ctx.Value(requestKey{}).(*request)
	return r
}

// transport replaces the undecodable objects of marked JSON list and watch
// responses by stand-ins; everything else passes untouched.
type transport struct {
	next  http.RoundTripper
	check *checker
	log   logr.Logger
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := requestFrom(req.Context())
	if r == nil || req.Method != http.MethodGet {
		return t.next.RoundTrip(req)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Body == nil || !plainJSON(resp.Header) {
		return resp, err
	}
	if isWatch(req) {
		resp.Body = &eventStream{body: resp.Body, dec: json.NewDecoder(resp.Body), t: t, r: r}
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the list of %s: %w", r.gvk.Kind, err)
	}
	out := t.list(body, r)
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	if resp.Header.Get("Content-Length") != "" {
		resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	}
	return resp, nil
}

// plainJSON says whether a response body is JSON objects as the typed
// clients decode them: not protobuf or CBOR, not compressed, and not
// converted on the server (as=PartialObjectMetadataList, as=Table).
func plainJSON(h http.Header) bool {
	if enc := h.Get("Content-Encoding"); enc != "" && enc != "identity" {
		return false
	}
	mt, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return false
	}
	_, converted := params["as"]
	return !converted
}

func isWatch(req *http.Request) bool {
	w := req.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

// list returns body with each undecodable item replaced by its stand-in,
// or body itself when every item decodes (or body is not a list).
func (t *transport) list(body []byte, r *request) []byte {
	var l struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return body // the client reports what it cannot read
	}
	items, changed := l.Items[:0], 0
	for _, item := range l.Items {
		s, err := t.check.standIn(item, r.gvk)
		switch {
		case err != nil:
			t.log.Error(err, "dropping a list item that cannot be decoded nor identified", "kind", r.gvk.Kind)
			changed++
		case s != nil:
			items = append(items, s)
			changed++
		default:
			items = append(items, item)
		}
	}
	if changed == 0 {
		return body
	}
	r.standIns.Add(int64(changed))
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return body
	}
	raw, err := json.Marshal(items)
	if err != nil {
		return body
	}
	top["items"] = raw
	out, err := json.Marshal(top)
	if err != nil {
		return body
	}
	return out
}

// eventStream is a watch response body that checks one event at a time:
// each Read hands on what is left of the last event read, and reads the
// next one only when that is gone.
type eventStream struct {
	body io.ReadCloser
	dec  *json.Decoder
	out  bytes.Buffer
	t    *transport
	r    *request
}

func (s *eventStream) Read(p []byte) (int, error) {
	for s.out.Len() == 0 {
		var frame json.RawMessage
		if err := s.dec.Decode(&frame); err != nil {
			return 0, err
		}
		if ev := s.t.event(frame, s.r); ev != nil {
			s.out.Write(ev)
			s.out.WriteByte('\n')
		}
	}
	return s.out.Read(p)
}

func (s *eventStream) Close() error { return s.body.Close() }

// watchEvent is metav1.WatchEvent with the object left raw.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// event returns frame, the event with a stand-in for its object, or nil
// to drop an event whose object cannot even be identified.
func (t *transport) event(frame []byte, r *request) []byte {
	var ev watchEvent
	if err := json.Unmarshal(frame, &ev); err != nil {
		return frame
	}
	switch ev.Type {
	case "ADDED", "MODIFIED", "DELETED":
	default:
		return frame // BOOKMARK, ERROR
	}
	s, err := t.check.standIn(ev.Object, r.gvk)
	if err != nil {
		t.log.Error(err, "dropping a watch event whose object cannot be decoded nor identified", "kind", r.gvk.Kind, "event", ev.Type)
		r.standIns.Add(1)
		return nil
	}
	if s == nil {
		return frame
	}
	r.standIns.Add(1)
	ev.Object = s
	out, err := json.Marshal(ev)
	if err != nil {
		return frame
	}
	return out
}

// checker decodes objects as the typed clients do.
type checker struct {
	scheme *runtime.Scheme
	json   *kjson.Serializer
	// marker is the annotation that marks stand-ins.
	marker string
}

func newChecker(scheme *runtime.Scheme, marker string) *checker {
	return &checker{scheme: scheme, marker: marker,
		json: kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{})}
}

// standIn returns nil when raw decodes into its Go type (or its kind is
// not in the scheme, so not for this package to judge), else raw's
// stand-in. fallback is the kind when raw does not name one. An error
// means raw cannot even be identified by its metadata.
func (c *checker) standIn(raw []byte, fallback schema.GroupVersionKind) ([]byte, error) {
	gvk, err := kjson.DefaultMetaFactory.Interpret(raw)
	if err != nil {
		return nil, fmt.Errorf("reading apiVersion and kind: %w", err)
	}
	if gvk.Kind == "" || gvk.Version == "" {
		gvk = &fallback
	}
	if !c.scheme.Recognizes(*gvk) {
		return nil, nil
	}
	into, err := c.scheme.New(*gvk)
	if err != nil {
		return nil, nil
	}
	_, _, decodeErr := c.json.Decode(raw, gvk, into)
	if decodeErr == nil {
		return nil, nil
	}
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, errors.Join(decodeErr, fmt.Errorf("reading metadata: %w", err))
	}
	if m.Metadata.Name == "" {
		return nil, fmt.Errorf("%w (and no metadata.name)", decodeErr)
	}
	msg := decodeErr.Error()
	if len(msg) > maxErrorLen {
		msg = msg[:maxErrorLen] + "..."
	}
	ann := make(map[string]string, len(m.Metadata.Annotations)+1)
	for k, v := range m.Metadata.Annotations {
		ann[k] = v
	}
	ann[c.marker] = msg
	m.Metadata.Annotations = ann
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	return json.Marshal(struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
	}{apiVersion, kind, m.Metadata})
}
