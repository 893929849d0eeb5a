package flinkstandin

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

func newOperator(objs ...runtime.Object) (*Operator, *dynamicfake.FakeDynamicClient) {
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{GVR: "FlinkDeploymentList"}, objs...)
	return &Operator{
		Client:   c,
		Clock:    clocktesting.NewFakePassiveClock(time.UnixMilli(1700000000000)),
		NewJobID: func() string { return "0123456789abcdef0123456789abcdef" },
	}, c
}

func statusWrites(c *dynamicfake.FakeDynamicClient) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func TestSyncWritesStatusOnce(t *testing.T) {
	ctx := context.Background()
	obj := makeFlink("foo").label(FailoverJobIDLabel, "bbbb").obj()
	o, c := newOperator(obj)

	if err := o.Sync(ctx, obj); err != nil {
		t.Fatal(err)
	}
	got, err := c.Resource(GVR).Namespace("ns").Get(ctx, "foo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if id, _, _ := unstructured.NestedString(got.Object, "status", "jobStatus", "jobId"); id != "bbbb" {
		t.Errorf("jobId = %q, want the failover label's bbbb", id)
	}
	if n := statusWrites(c); n != 1 {
		t.Fatalf("%d status writes, want 1", n)
	}

	// Nothing to do: nothing written.
	c.ClearActions()
	if err := o.Sync(ctx, got); err != nil {
		t.Fatal(err)
	}
	if n := statusWrites(c); n != 0 {
		t.Errorf("a second sync wrote the status %d times: %v", n, c.Actions())
	}
}

func TestSyncSkipsDeleted(t *testing.T) {
	obj := makeFlink("foo").obj()
	now := metav1.Now()
	obj.SetDeletionTimestamp(&now)
	o, c := newOperator(obj)
	if err := o.Sync(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	if n := statusWrites(c); n != 0 {
		t.Errorf("wrote the status of an object being deleted")
	}
}
