package localenv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// A state directory copied elsewhere records the original's directory:
// down on the copy must neither remove the original nor stop its
// processes. The copy is refused, naming both; the original, or a symbolic
// link to it, is read.
func TestStateOfAnotherDirectoryIsRefused(t *testing.T) {
	original := t.TempDir()
	keep := filepath.Join(original, "data.txt")
	if err := os.WriteFile(keep, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (&State{Dir: original}).save(); err != nil {
		t.Fatal(err)
	}
	copied := t.TempDir()
	data, err := os.ReadFile(filepath.Join(original, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copied, stateFile), data, 0o600); err != nil {
		t.Fatal(err)
	}

	err = Down(copied, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "records the environment of "+original) {
		t.Fatalf("Down on a copy: %v, want a refusal naming %s", err, original)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("Down on a copy removed the original: %v", err)
	}
	if _, err := os.Stat(filepath.Join(copied, ".state.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused directory got a lock file: %v", err)
	}

	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(original, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(link); err != nil {
		t.Errorf("the original through a symbolic link: %v", err)
	}
	if _, err := Load(original); err != nil {
		t.Errorf("the original: %v", err)
	}
	// No environment at all: no lock file either.
	empty := t.TempDir()
	if err := Down(empty, io.Discard); !errors.Is(err, ErrNotFound) {
		t.Errorf("Down where there is no environment: %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Join(empty, ".state.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a directory without an environment got a lock file: %v", err)
	}
}
