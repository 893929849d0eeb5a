// Package conflict turns a lost optimistic-concurrency race into an
// immediate second attempt that reads from the API server.
//
// Controllers read from the informer cache and write with the
// resourceVersion they read. When several controllers write the same
// object, or one controller writes an object twice before its own first
// write has come back through the watch, the cache is behind and the write
// fails with a Conflict. Waiting for a requeue (hundreds of milliseconds)
// and reading the cache again often repeats the race; reading the object
// from the API server does not. A reconciler wrapped by Retrying, using a
// client from Client, runs again at once after a conflicting write, and in
// that run its Gets go to the API server. Lists still come from the cache.
//
// Many of those conflicts can be known before the write is sent: the
// version the cache gave was replaced by a write this process made (see
// Versions). A Client with Versions refuses such a write itself, and the
// run Retrying starts is the same as after the server's refusal, one
// request fewer.
package conflict

import (
	"context"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Attempts is how many times Retrying runs a reconcile whose writes
// conflict before it leaves the rest to the reconcile's own requeue.
const Attempts = 3

// attempt is one run of a wrapped reconcile.
type attempt struct {
	live       bool
	conflicted atomic.Bool
}

type attemptKey struct{}

func attemptFrom(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	return a
}

// note records a conflicting write in ctx's attempt and returns err.
func note(ctx context.Context, err error) error {
	if err != nil && apierrors.IsConflict(err) {
		if a := attemptFrom(ctx); a != nil {
			a.conflicted.Store(true)
		}
	}
	return err
}

// Retrying runs inner; when one of its writes through a Client conflicted,
// it runs inner again at once with Gets from the API server, up to Attempts
// times in all. The result of the last run is returned, so a reconcile that
// still conflicts falls back to the requeue it asked for.
func Retrying(inner reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		for i := 1; ; i++ {
			a := &attempt{live: i > 1}
			res, err := inner.Reconcile(context.WithValue(ctx, attemptKey{}, a), req)
			if !a.conflicted.Load() || i == Attempts || ctx.Err() != nil {
				return res, err
			}
			ctrl.LoggerFrom(ctx).V(4).Info("write conflict; running again with a fresh read", "attempt", i+1)
		}
	})
}

// Live reports whether ctx belongs to a run that Retrying started again
// after a conflicting write: a reconcile that reads some objects through
// other readers than a Client should read them from the API server too.
func Live(ctx context.Context) bool {
	a := attemptFrom(ctx)
	return a != nil && a.live
}

// Client returns c whose writes report conflicts to Retrying and whose Gets
// read through live in a retried run (live is usually the manager's
// APIReader). With versions (shared by every client of the process), its
// writes record the versions they replace, and a write preconditioned on a
// replaced version is refused as a Conflict without being sent (see
// Versions).
func Client(c client.Client, live client.Reader, versions *Versions) client.Client {
	return &watchedClient{Client: c, live: live, versions: versions}
}

type watchedClient struct {
	client.Client
	live     client.Reader
	versions *Versions
}

func (c *watchedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if Live(ctx) {
		return c.live.Get(ctx, key, obj, opts...)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *watchedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.versions.staleUpdate(obj); err != nil {
		return note(ctx, err)
	}
	from := obj.GetResourceVersion()
	return c.versions.record(ctx, obj, from, c.Client.Update(ctx, obj, opts...))
}

func (c *watchedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.versions.stalePatch(obj, patch); err != nil {
		return note(ctx, err)
	}
	from := obj.GetResourceVersion()
	return c.versions.record(ctx, obj, from, c.Client.Patch(ctx, obj, patch, opts...))
}

func (c *watchedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return note(ctx, c.Client.Delete(ctx, obj, opts...))
}

func (c *watchedClient) Status() client.SubResourceWriter {
	return &watchedWriter{SubResourceWriter: c.Client.Status(), versions: c.versions}
}

func (c *watchedClient) SubResource(name string) client.SubResourceClient {
	return &watchedSubResource{SubResourceClient: c.Client.SubResource(name), versions: c.versions}
}

type watchedWriter struct {
	client.SubResourceWriter
	versions *Versions
}

func (w *watchedWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := w.versions.staleUpdate(obj); err != nil {
		return note(ctx, err)
	}
	from := obj.GetResourceVersion()
	return w.versions.record(ctx, obj, from, w.SubResourceWriter.Update(ctx, obj, opts...))
}

func (w *watchedWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := w.versions.stalePatch(obj, patch); err != nil {
		return note(ctx, err)
	}
	from := obj.GetResourceVersion()
	return w.versions.record(ctx, obj, from, w.SubResourceWriter.Patch(ctx, obj, patch, opts...))
}

type watchedSubResource struct {
	client.SubResourceClient
	versions *Versions
}

func (w *watchedSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := w.versions.staleUpdate(obj); err != nil {
		return note(ctx, err)
	}
	from := obj.GetResourceVersion()
	return w.versions.record(ctx, obj, from, w.SubResourceClient.Update(ctx, obj, opts...))
}

func (w *watchedSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := w.versions.stalePatch(obj, patch); err != nil {
		return note(ctx, err)
	}
	from := obj.GetResourceVersion()
	return w.versions.record(ctx, obj, from, w.SubResourceClient.Patch(ctx, obj, patch, opts...))
}
