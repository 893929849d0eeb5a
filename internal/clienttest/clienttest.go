// Package clienttest holds test helpers for controller-runtime's fake
// client.
package clienttest

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Indexer is a client.FieldIndexer that adds each index to a fake client
// builder, so that a controller's own index registration serves the fake
// client built after it.
type Indexer struct{ Builder *fake.ClientBuilder }

// IndexField adds the index to the builder.
func (x Indexer) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	x.Builder.WithIndex(obj, field, extract)
	return nil
}

// CountWrites returns interceptor functions (for the fake client builder's
// WithInterceptorFuncs, or interceptor.NewClient) that call count before
// passing each write on. verb is create, update, patch, delete or
// deleteallof, and for a subresource create/<name>, update/<name> or
// patch/<name> (update/status, say). Server-side apply with an
// ApplyConfiguration (Apply, SubResourceApply) is not intercepted.
//
// A test that treats some writes differently replaces those fields of the
// result.
func CountWrites(count func(verb string, obj client.Object)) interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count("create", obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			count("patch", obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			count("delete", obj)
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			count("deleteallof", obj)
			return c.DeleteAllOf(ctx, obj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			count("create/"+sub, obj)
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			count("update/"+sub, obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			count("patch/"+sub, obj)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}
