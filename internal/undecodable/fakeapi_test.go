package undecodable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeAPI serves PropagationPolicies as kube-apiserver does, from objects
// given as raw JSON, so that an object can hold anything JSON allows (a
// priority past int32): paginated lists, watches from a resourceVersion,
// and streaming lists (sendInitialEvents) when watchList is set. expire
// ends every watch with 410 Gone, which makes a reflector list again.
type fakeAPI struct {
	t         *testing.T
	watchList bool
	pageSize  int
	srv       *httptest.Server

	mu        sync.Mutex
	rv        int
	objects   map[string][]byte // namespace/name → object with its resourceVersion
	history   []fakeEvent
	expiredAt int           // watches from an older resourceVersion get 410
	changed   chan struct{} // closed and replaced at every change
	lists     int           // lists and streaming lists served
	pages     int           // pages served after the first of a list
	streamed  int           // streaming lists served
}

type fakeEvent struct {
	typ    string
	rv     int
	object []byte
}

const policiesPath = "/apis/policy.karmada.io/v1alpha1/propagationpolicies"

func newFakeAPI(t *testing.T, watchList bool, pageSize int) *fakeAPI {
	f := &fakeAPI{t: t, watchList: watchList, pageSize: pageSize, rv: 100, objects: map[string][]byte{}, changed: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// policy is a PropagationPolicy in namespace ns; priority is raw JSON, so
// it can be any number; extraMeta is added to its metadata.
func policy(ns, name, priority string, extraMeta ...string) string {
	meta := fmt.Sprintf(`"namespace":%q,"name":%q,"uid":"uid-%s"`, ns, name, name)
	for _, m := range extraMeta {
		meta += "," + m
	}
	return fmt.Sprintf(`{"apiVersion":"policy.karmada.io/v1alpha1","kind":"PropagationPolicy","metadata":{%s},`+
		`"spec":{"priority":%s,"resourceSelectors":[{"apiVersion":"apps/v1","kind":"Deployment","name":%q}]}}`, meta, priority, name)
}

// put creates or replaces an object (ADDED or MODIFIED) and returns its
// resourceVersion.
func (f *fakeAPI) put(obj string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	key, stamped := f.stamp(obj)
	typ := "MODIFIED"
	if _, ok := f.objects[key]; !ok {
		typ = "ADDED"
	}
	f.objects[key] = stamped
	f.record(typ, stamped)
	return f.rv
}

// remove deletes an object and returns the deletion's resourceVersion; the
// DELETED event carries the object's last state.
func (f *fakeAPI) remove(ns, name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := ns + "/" + name
	last, ok := f.objects[key]
	if !ok {
		f.t.Fatalf("fake API: no object %s to remove", key)
	}
	delete(f.objects, key)
	_, stamped := f.stamp(string(last))
	f.record("DELETED", stamped)
	return f.rv
}

// expire ends the open watches with 410 Gone and refuses to resume from
// any resourceVersion up to now.
func (f *fakeAPI) expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	f.expiredAt = f.rv
	f.notify()
}

// listsServed counts the lists and streaming lists served so far.
func (f *fakeAPI) listsServed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

// streamedLists counts the streaming lists served so far.
func (f *fakeAPI) streamedLists() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.streamed
}

// continued counts the pages served after the first of a list.
func (f *fakeAPI) continued() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pages
}

// stamp gives obj the next resourceVersion; numbers stay as written.
func (f *fakeAPI) stamp(obj string) (string, []byte) {
	dec := json.NewDecoder(strings.NewReader(obj))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		f.t.Fatalf("fake API: bad object %s: %v", obj, err)
	}
	f.rv++
	md := m["metadata"].(map[string]any)
	md["resourceVersion"] = strconv.Itoa(f.rv)
	out, err := json.Marshal(m)
	if err != nil {
		f.t.Fatal(err)
	}
	return fmt.Sprintf("%s/%s", md["namespace"], md["name"]), out
}

func (f *fakeAPI) record(typ string, obj []byte) {
	f.history = append(f.history, fakeEvent{typ: typ, rv: f.rv, object: obj})
	f.notify()
}

func (f *fakeAPI) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != policiesPath || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		f.watch(w, r)
		return
	}
	f.list(w, r)
}

func (f *fakeAPI) list(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.lists++
	keys := f.sortedKeys()
	start := 0
	if c := r.URL.Query().Get("continue"); c != "" {
		start, _ = strconv.Atoi(c)
		f.pages++
		f.lists-- // the same list
	}
	end, cont := len(keys), ""
	if limit, _ := strconv.Atoi(r.URL.Query().Get("limit")); limit > 0 && f.pageSize > 0 && start+f.pageSize < len(keys) {
		end, cont = start+f.pageSize, strconv.Itoa(start+f.pageSize)
	}
	items := make([]json.RawMessage, 0, end-start)
	for _, k := range keys[start:end] {
		items = append(items, f.objects[k])
	}
	rv := f.rv
	f.mu.Unlock()
	body, err := json.Marshal(map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1",
		"kind":       "PropagationPolicyList",
		"metadata":   map[string]any{"resourceVersion": strconv.Itoa(rv), "continue": cont},
		"items":      items,
	})
	if err != nil {
		f.t.Error(err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (f *fakeAPI) sortedKeys() []string {
	keys := make([]string, 0, len(f.objects))
	for k := range f.objects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (f *fakeAPI) watch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	initial := q.Get("sendInitialEvents") == "true"
	if initial && !f.watchList {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":422,"message":"sendInitialEvents is not supported"}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	var out bytes.Buffer
	send := func(typ string, obj []byte) {
		out.Reset()
		fmt.Fprintf(&out, `{"type":%q,"object":%s}`+"\n", typ, obj)
		_, _ = w.Write(out.Bytes())
		flusher.Flush()
	}

	f.mu.Lock()
	from, _ := strconv.Atoi(q.Get("resourceVersion"))
	if initial {
		f.lists++
		f.streamed++
		for _, k := range f.sortedKeys() {
			send("ADDED", f.objects[k])
		}
		from = f.rv
		send("BOOKMARK", []byte(fmt.Sprintf(`{"apiVersion":"policy.karmada.io/v1alpha1","kind":"PropagationPolicy","metadata":{"resourceVersion":"%d","annotations":{"k8s.io/initial-events-end":"true"}}}`, from)))
	}
	for {
		if from < f.expiredAt {
			f.mu.Unlock()
			send("ERROR", []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old resource version"}`))
			return
		}
		for _, e := range f.history {
			if e.rv > from {
				send(e.typ, e.object)
				from = e.rv
			}
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		}
		f.mu.Lock()
	}
}
