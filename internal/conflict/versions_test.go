package conflict

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// sentWrites counts the writes that reach the fake API server.
type sentWrites struct{ n int }

func (s *sentWrites) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			s.n++
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			s.n++
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			s.n++
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			s.n++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

func TestVersionsRefuseWritesOnReplacedVersions(t *testing.T) {
	locked := client.MergeFromWithOptimisticLock{}
	// Each write is made on a copy read before the first write, which the
	// first write replaced.
	tests := map[string]struct {
		second   func(ctx context.Context, c client.Client, stale *corev1.Pod) error
		wantSent bool // the second write reaches the server
		wantErr  bool // and is refused (a Conflict) by it or by the client
	}{
		"update": {
			second: func(ctx context.Context, c client.Client, stale *corev1.Pod) error {
				stale.Labels = map[string]string{"second": "x"}
				return c.Update(ctx, stale)
			},
			wantErr: true,
		},
		"patch carrying the resourceVersion": {
			second: func(ctx context.Context, c client.Client, stale *corev1.Pod) error {
				before := stale.DeepCopy()
				stale.Labels = map[string]string{"second": "x"}
				return c.Patch(ctx, stale, client.MergeFromWithOptions(before, locked))
			},
			wantErr: true,
		},
		"status update": {
			second: func(ctx context.Context, c client.Client, stale *corev1.Pod) error {
				stale.Status.Message = "second"
				return c.Status().Update(ctx, stale)
			},
			wantErr: true,
		},
		"status patch carrying the resourceVersion": {
			second: func(ctx context.Context, c client.Client, stale *corev1.Pod) error {
				before := stale.DeepCopy()
				stale.Status.Message = "second"
				return c.Status().Patch(ctx, stale, client.MergeFromWithOptions(before, locked))
			},
			wantErr: true,
		},
		"patch without a precondition is sent and applies": {
			second: func(ctx context.Context, c client.Client, stale *corev1.Pod) error {
				before := stale.DeepCopy()
				stale.Labels = map[string]string{"second": "x"}
				return c.Patch(ctx, stale, client.MergeFrom(before))
			},
			wantSent: true,
		},
		"update without a resourceVersion is sent and applies": {
			second: func(ctx context.Context, c client.Client, stale *corev1.Pod) error {
				stale.Labels = map[string]string{"second": "x"}
				stale.ResourceVersion = ""
				return c.Update(ctx, stale)
			},
			wantSent: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			sent := &sentWrites{}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"}}
			base := fake.NewClientBuilder().WithObjects(pod).WithStatusSubresource(pod).WithInterceptorFuncs(sent.funcs()).Build()
			versions := NewVersions(clocktesting.NewFakePassiveClock(time.Now()))
			c := Client(base, base, versions)

			var stale corev1.Pod
			if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &stale); err != nil {
				t.Fatal(err)
			}
			first := stale.DeepCopy()
			first.Annotations = map[string]string{"first": "y"}
			if err := c.Update(ctx, first); err != nil {
				t.Fatalf("first write: %v", err)
			}
			if versions.Len() != 1 {
				t.Fatalf("versions remembered after one write: %d, want 1", versions.Len())
			}

			err := tc.second(ctx, c, stale.DeepCopy())
			if got := sent.n == 2; got != tc.wantSent {
				t.Errorf("second write sent = %v (%d writes reached the server), want %v", got, sent.n, tc.wantSent)
			}
			if tc.wantErr {
				if !apierrors.IsConflict(err) {
					t.Fatalf("second write: %v, want a Conflict", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("second write: %v", err)
			}
		})
	}
}

func TestVersionsAreKeptPerObjectAndForAWhile(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Now())
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}}
	b := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "uid-b"}}
	sent := &sentWrites{}
	base := fake.NewClientBuilder().WithObjects(a, b).WithInterceptorFuncs(sent.funcs()).Build()
	versions := NewVersions(clk)
	c := Client(base, base, versions)

	read := func(name string) *corev1.ConfigMap {
		t.Helper()
		var cm corev1.ConfigMap
		if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: name}, &cm); err != nil {
			t.Fatal(err)
		}
		return &cm
	}
	staleA := read("a")
	first := staleA.DeepCopy()
	first.Data = map[string]string{"k": "1"}
	if err := c.Update(ctx, first); err != nil {
		t.Fatal(err)
	}

	// Another object at the same version string is not the replaced one.
	otherB := read("b")
	otherB.ResourceVersion = staleA.ResourceVersion
	otherB.Data = map[string]string{"k": "2"}
	_ = c.Update(ctx, otherB)
	if sent.n != 2 {
		t.Errorf("a write of another object at the same version was not sent (%d writes reached the server, want 2)", sent.n)
	}

	// Once the versions are forgotten, the stale write goes to the server,
	// which refuses it.
	clk.SetTime(clk.Now().Add(versionsKeepFor))
	stale := staleA.DeepCopy()
	stale.Data = map[string]string{"k": "3"}
	if err := c.Update(ctx, stale); !apierrors.IsConflict(err) {
		t.Fatalf("stale write after the versions were forgotten: %v, want the server's Conflict", err)
	}
	if sent.n != 3 {
		t.Errorf("the stale write after the versions were forgotten was not sent (%d writes reached the server, want 3)", sent.n)
	}
	if n := versions.Len(); n != 0 {
		t.Errorf("objects remembered after %s without writes: %d, want 0", versionsKeepFor, n)
	}
}

func TestVersionsIgnoreFailedWrites(t *testing.T) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}}
	fail := true
	base := fake.NewClientBuilder().WithObjects(cm).WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if fail {
				fail = false
				return errors.New("connection reset")
			}
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	versions := NewVersions(nil)
	c := Client(base, base, versions)
	var got corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, got.DeepCopy()); err == nil {
		t.Fatal("the first write did not fail")
	}
	if versions.Len() != 0 {
		t.Fatalf("a failed write was remembered (%d objects)", versions.Len())
	}
	if err := c.Update(ctx, got.DeepCopy()); err != nil {
		t.Fatalf("the write made again on the same version: %v", err)
	}
}

// TestRetryingAfterARefusedWrite runs a reconcile whose cache still holds
// the version another controller's write replaced: its write is refused
// unsent, and the run Retrying starts reads live and writes once.
func TestRetryingAfterARefusedWrite(t *testing.T) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}}
	sent := &sentWrites{}
	server := fake.NewClientBuilder().WithObjects(cm).WithInterceptorFuncs(sent.funcs()).Build()
	var cached corev1.ConfigMap
	if err := server.Get(ctx, client.ObjectKeyFromObject(cm), &cached); err != nil {
		t.Fatal(err)
	}
	// The cache lags: it keeps answering the version read above.
	lagging := interceptor.NewClient(server, interceptor.Funcs{
		Get: func(ctx context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			cached.DeepCopyInto(obj.(*corev1.ConfigMap))
			return nil
		},
	})
	live := &countingReader{Reader: server}
	versions := NewVersions(nil)
	other := Client(lagging, live, versions)
	mine := Client(lagging, live, versions)

	// Another controller of the process writes first.
	first := cached.DeepCopy()
	first.Labels = map[string]string{"other": "x"}
	if err := other.Update(ctx, first); err != nil {
		t.Fatal(err)
	}
	runs := 0
	r := Retrying(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		runs++
		var got corev1.ConfigMap
		if err := mine.Get(ctx, req.NamespacedName, &got); err != nil {
			return reconcile.Result{}, err
		}
		got.Data = map[string]string{"mine": "y"}
		return reconcile.Result{}, mine.Update(ctx, &got)
	}))
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cm)}); err != nil {
		t.Fatal(err)
	}
	if runs != 2 || live.gets != 1 || sent.n != 2 {
		t.Errorf("runs %d, live reads %d, writes sent %d; want 2 runs, 1 live read, 2 writes (the other controller's and this one's)", runs, live.gets, sent.n)
	}
	var got corev1.ConfigMap
	if err := server.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if got.Labels["other"] != "x" || got.Data["mine"] != "y" {
		t.Errorf("stored object lost a write: labels %v, data %v", got.Labels, got.Data)
	}
}
