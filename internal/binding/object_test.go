package binding

import (
	"context"
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// countingIndexer counts the indexes registered with it, as the manager's
// does, and refuses a name twice.
type countingIndexer struct {
	names map[string]int
}

func (c *countingIndexer) IndexField(_ context.Context, _ client.Object, field string, _ client.IndexerFunc) error {
	if c.names == nil {
		c.names = map[string]int{}
	}
	c.names[field]++
	if c.names[field] > 1 {
		return fmt.Errorf("indexer conflict: %s", field)
	}
	return nil
}

// TestWorkIndexSharedByBothControllers: the two binding controllers of one
// manager register the Works' index once between them; without a shared
// WorkIndex the second registration is refused, as a manager refuses it.
func TestWorkIndexSharedByBothControllers(t *testing.T) {
	ctx := context.Background()

	shared := &WorkIndex{}
	indexer := &countingIndexer{}
	for i := 0; i < 2; i++ {
		if err := shared.Register(ctx, indexer); err != nil {
			t.Fatalf("registration %d through a shared WorkIndex: %v", i+1, err)
		}
	}
	if got := indexer.names[worksByBindingIndex]; got != 1 {
		t.Errorf("a shared WorkIndex registered the index %d times, want 1", got)
	}

	var unshared *WorkIndex
	indexer = &countingIndexer{}
	if err := unshared.Register(ctx, indexer); err != nil {
		t.Fatalf("first registration without a WorkIndex: %v", err)
	}
	if err := unshared.Register(ctx, indexer); err == nil {
		t.Error("a second registration without a shared WorkIndex succeeded; the manager would refuse it")
	}
}
