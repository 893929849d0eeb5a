package queue

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryControllerUsesThisQueue fails when a controller is built with
// controller-runtime's default queue, whose timer would wake the idle
// process twice a second again.
func TestEveryControllerUsesThisQueue(t *testing.T) {
	root := filepath.Join("..", "..")
	var checked int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "test" || d.Name() == "hack") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(b)
		if strings.Contains(src, "ControllerManagedBy(") {
			checked++
			// Either the queue itself, or a NewQueue function of the file
			// that makes it (to keep a handle on it).
			if !strings.Contains(src, "NewQueue: queue.New") && (!strings.Contains(src, "NewQueue: ") || !strings.Contains(src, "queue.New(")) {
				t.Errorf("%s builds a controller without NewQueue: queue.New", path)
			}
		}
		if strings.Contains(src, "controller.NewTyped[") && !strings.Contains(src, "queue.Typed[") {
			t.Errorf("%s makes a typed controller without NewQueue: queue.Typed", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Errorf("found %d files that build controllers, expected 20 or more: is the walk looking in the right place?", checked)
	}
}
