// Package apidiscovery lists the API resources a server serves, and reads
// them in full again only when the server's discovery documents changed.
//
// A Kubernetes API server (1.26 and later) serves aggregated discovery at
// /api and /apis with an ETag, and answers 304 Not Modified to a request
// carrying the current one in If-None-Match. Decoding those documents is
// most of what discovery costs a client; asking first whether they changed
// costs two requests with empty answers. A server without ETags (older, or
// a proxy that drops them) is read in full every time.
package apidiscovery

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// documents are the aggregated discovery documents, the core group's first.
var documents = []string{"/api", "/apis"}

// drainLimit bounds what is read of a changed document's answer before it is
// closed, so that an HTTP/1.1 connection can be reused.
const drainLimit = 4 << 20

// Lister lists a server's API resources. Safe for concurrent use; calls are
// serialised.
type Lister struct {
	discovery *discovery.DiscoveryClient
	http      *http.Client
	userAgent string

	mu sync.Mutex
	// etags are the documents' ETags as they were before the read that
	// returned lists; nil when lists must not be reused.
	etags map[string]string
	lists []*metav1.APIResourceList
}

// NewForConfig returns a Lister for the server cfg reaches. Its requests
// share one HTTP client; cfg.Timeout bounds each of them.
func NewForConfig(cfg *rest.Config) (*Lister, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the discovery HTTP client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("building the discovery client: %w", err)
	}
	ua := cfg.UserAgent
	if ua == "" {
		ua = rest.DefaultKubernetesUserAgent()
	}
	return &Lister{discovery: dc, http: hc, userAgent: ua}, nil
}

// Discovery is the underlying client, for what this package does not cache
// (the server version, one group's resources).
func (l *Lister) Discovery() discovery.DiscoveryInterface { return l.discovery }

// ServerResources returns the served resources, as
// discovery.ServerGroupsAndResources does: on a partial failure
// (discovery.ErrGroupDiscoveryFailed) the lists hold the groups that were
// found. The lists may be the ones returned before, when the server says
// nothing changed since: callers must not modify them.
func (l *Lister) ServerResources(ctx context.Context) ([]*metav1.APIResourceList, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	etags, unchanged := l.check(ctx)
	if unchanged {
		return l.lists, nil
	}
	_, lists, err := l.discovery.ServerGroupsAndResources()
	// Only a complete answer is reused: a group that failed must be asked
	// again, whatever the documents say.
	if err != nil || etags == nil {
		l.etags, l.lists = nil, nil
		return lists, err
	}
	// The ETags were taken before this read: if the documents changed in
	// between, the next check sees a different ETag and reads again.
	l.etags, l.lists = etags, lists
	return lists, nil
}

// check asks each document whether it changed since the last full read.
// unchanged is true when every one answered 304. etags are the ETags the
// server gave now, nil when a document gave none or could not be read.
func (l *Lister) check(ctx context.Context) (etags map[string]string, unchanged bool) {
	etags = make(map[string]string, len(documents))
	unchanged = l.etags != nil
	for _, path := range documents {
		known := l.etags[path]
		tag, notModified, err := l.ask(ctx, path, known)
		switch {
		case err != nil:
			return nil, false
		case notModified:
			etags[path] = known
		case tag == "":
			return nil, false
		default:
			etags[path], unchanged = tag, false
		}
	}
	return etags, unchanged
}

// ask requests one document with If-None-Match set to known (when known is
// not empty) and returns the ETag of the answer.
func (l *Lister) ask(ctx context.Context, path, known string) (tag string, notModified bool, err error) {
	u := l.discovery.RESTClient().Get().AbsPath(path).URL()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", false, err
	}
	req.Header.Set("Accept", discovery.AcceptV2)
	req.Header.Set("User-Agent", l.userAgent)
	if known != "" {
		req.Header.Set("If-None-Match", known)
	}
	resp, err := l.http.Do(req)
	if err != nil {
		return "", false, err
	}
	defer func() {
		_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
		_ = resp.Body.Close()
	}()
	switch {
	case resp.StatusCode == http.StatusNotModified && known != "":
		return known, true, nil
	case resp.StatusCode == http.StatusOK:
		return resp.Header.Get("ETag"), false, nil
	default:
		return "", false, fmt.Errorf("%s answered %s", path, resp.Status)
	}
}
