package localenv

import (
	"fmt"
	"sync"
	"testing"

	"github.com/lifeboat-dev/lifeboat/internal/localenv/process"
)

// Concurrent updates of different components (two `lifeboat env start` at
// once) must all survive: none may overwrite another's record.
func TestConcurrentComponentUpdatesAreNotLost(t *testing.T) {
	dir := t.TempDir()
	s := &State{Dir: dir}
	const n = 20
	for i := 0; i < n; i++ {
		s.Components = append(s.Components, Component{Name: fmt.Sprintf("c%d", i)})
	}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- updateComponent(dir, fmt.Sprintf("c%d", i), func(c *Component) {
				c.Process = process.Record{PID: 1000 + i}
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("updateComponent: %v", err)
		}
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range got.Components {
		if c.Process.PID != 1000+i {
			t.Errorf("%s: pid %d, want %d (an update was lost)", c.Name, c.Process.PID, 1000+i)
		}
	}
}

func TestUpdateUnknownComponent(t *testing.T) {
	dir := t.TempDir()
	if err := (&State{Dir: dir}).save(); err != nil {
		t.Fatal(err)
	}
	if err := updateComponent(dir, "nope", func(*Component) {}); err == nil {
		t.Fatal("updating an unknown component succeeded")
	}
}
