package conflict

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// countingReader counts Gets and serves them from c.
type countingReader struct {
	client.Reader
	gets int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets++
	return r.Reader.Get(ctx, key, obj, opts...)
}

func TestRetrying(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	conflictErr := apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "cm", errors.New("stale"))
	otherErr := errors.New("boom")

	tests := map[string]struct {
		// failures are the errors of successive writes (nil: success).
		failures []error
		// status writes through Status() instead of Update.
		status       bool
		wantRuns     int
		wantLiveGets int
		wantRequeue  bool
		wantErr      bool
	}{
		"no conflict runs once from the cache": {
			failures: nil, wantRuns: 1, wantLiveGets: 0,
		},
		"a conflict runs again at once, reading live": {
			failures: []error{conflictErr}, wantRuns: 2, wantLiveGets: 1,
		},
		"a status conflict runs again too": {
			failures: []error{conflictErr}, status: true, wantRuns: 2, wantLiveGets: 1,
		},
		"conflicts stop after Attempts runs, keeping the requeue": {
			failures: []error{conflictErr, conflictErr, conflictErr, conflictErr}, wantRuns: Attempts, wantLiveGets: Attempts - 1, wantRequeue: true,
		},
		"other errors are not retried": {
			failures: []error{otherErr}, wantRuns: 1, wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			writes := 0
			fail := func() error {
				writes++
				if writes <= len(tc.failures) {
					return tc.failures[writes-1]
				}
				return nil
			}
			base := fake.NewClientBuilder().WithObjects(cm.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					if err := fail(); err != nil {
						return err
					}
					return c.Update(ctx, obj, opts...)
				},
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					return fail()
				},
			}).Build()
			live := &countingReader{Reader: base}
			c := Client(base, live, nil)

			runs := 0
			r := Retrying(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				runs++
				var got corev1.ConfigMap
				if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
					return reconcile.Result{}, err
				}
				var err error
				if tc.status {
					err = c.Status().Update(ctx, &got)
				} else {
					err = c.Update(ctx, &got)
				}
				if apierrors.IsConflict(err) {
					return reconcile.Result{RequeueAfter: 1}, nil
				}
				return reconcile.Result{}, err
			}))
			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "cm"}})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if runs != tc.wantRuns {
				t.Errorf("runs = %d, want %d", runs, tc.wantRuns)
			}
			if live.gets != tc.wantLiveGets {
				t.Errorf("live gets = %d, want %d", live.gets, tc.wantLiveGets)
			}
			if got := res.RequeueAfter > 0; got != tc.wantRequeue {
				t.Errorf("requeue = %v, want %v", got, tc.wantRequeue)
			}
		})
	}
}

func TestClientWithoutRetryingReadsTheCache(t *testing.T) {
	base := fake.NewClientBuilder().WithObjects(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}).Build()
	live := &countingReader{Reader: base}
	var got corev1.ConfigMap
	if err := Client(base, live, nil).Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "cm"}, &got); err != nil {
		t.Fatal(err)
	}
	if live.gets != 0 {
		t.Errorf("a Get outside Retrying went to the API server")
	}
}
