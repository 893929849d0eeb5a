package components

import (
	"context"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

// The version stamped into the binaries must be the version built.
func TestKubernetesVersionMatchesModule(t *testing.T) {
	data, err := moduleFiles.ReadFile("modules/kubernetes/go.mod.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "k8s.io/kubernetes "+KubernetesVersion+"\n") {
		t.Fatalf("modules/kubernetes/go.mod.txt does not require k8s.io/kubernetes %s", KubernetesVersion)
	}
}

func TestKeyIsStable(t *testing.T) {
	a, err := Key()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Key()
	if a != b || len(a) != 16 {
		t.Fatalf("Key() = %q then %q", a, b)
	}
}

func TestKubernetesVersionFlags(t *testing.T) {
	got := kubernetesVersionFlags("v1.35.4")
	for _, want := range []string{"k8s.io/component-base/version.gitVersion=v1.35.4", "gitMajor=1", "gitMinor=35"} {
		if !strings.Contains(got, want) {
			t.Errorf("flags %q lack %q", got, want)
		}
	}
}

// An optional module (Kyverno) has a key of its own: adding or changing it
// must not change the core key, or every cache would rebuild Kubernetes.
func TestCoreKeyIgnoresOptionalModules(t *testing.T) {
	core := []module{{dir: "etcd"}, {dir: "kubernetes", ldflags: "-X v=1"}}
	base := fstest.MapFS{
		"modules/etcd/go.mod.txt":       {Data: []byte("module etcd\n")},
		"modules/kubernetes/go.mod.txt": {Data: []byte("module kubernetes\n")},
	}
	withOptional := fstest.MapFS{"modules/kyverno/go.mod.txt": {Data: []byte("module kyverno\n")}}
	for k, v := range base {
		withOptional[k] = v
	}
	a, err := keyOf(base, core)
	if err != nil {
		t.Fatal(err)
	}
	b, err := keyOf(withOptional, core)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("core key changed when an optional module was added: %s → %s", a, b)
	}
	opt, err := keyOf(withOptional, []module{{dir: "kyverno", optional: true}})
	if err != nil {
		t.Fatal(err)
	}
	if opt == a {
		t.Error("the optional module's key equals the core key")
	}
	changed := fstest.MapFS{"modules/kubernetes/go.mod.txt": {Data: []byte("module kubernetes\nrequire x v2\n")}}
	for k, v := range base {
		if _, ok := changed[k]; !ok {
			changed[k] = v
		}
	}
	if c, _ := keyOf(changed, core); c == a {
		t.Error("core key did not change with a core module file")
	}
}

// Every optional module is embedded, and Key() leaves it out.
func TestOptionalModulesEmbeddedAndOutsideKey(t *testing.T) {
	if got := Optional(); len(got) != 1 || got[0] != Kyverno {
		t.Fatalf("Optional() = %v, want [%s]", got, Kyverno)
	}
	data, err := moduleFiles.ReadFile("modules/kyverno/go.mod.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "github.com/kyverno/kyverno v1.19.1") {
		t.Errorf("modules/kyverno/go.mod.txt does not pin github.com/kyverno/kyverno v1.19.1")
	}
	var core []module
	for _, m := range modules {
		if !m.optional {
			core = append(core, m)
		}
	}
	withoutOptional := fstest.MapFS{}
	err = fs.WalkDir(moduleFiles, "modules", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, "modules/kyverno/") {
			return err
		}
		data, err := moduleFiles.ReadFile(p)
		withoutOptional[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want, err := keyOf(withoutOptional, core)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := Key(); got != want {
		t.Errorf("Key() = %s, want %s (the core modules alone)", got, want)
	}
}

// An unknown optional name fails before anything is built.
func TestEnsureRejectsUnknownOptional(t *testing.T) {
	dir := t.TempDir()
	if _, err := Ensure(context.Background(), dir, io.Discard, "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("Ensure(nope) = %v, want an error naming it", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Ensure(nope) wrote into the cache: %v", entries)
	}
}
