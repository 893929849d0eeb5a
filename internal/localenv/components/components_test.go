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

// The version stamped into the binaries must be the version built, in
// every module that builds from k8s.io/kubernetes.
func TestKubernetesVersionMatchesModule(t *testing.T) {
	for _, dir := range []string{"kubernetes", KubeNode} {
		t.Run(dir, func(t *testing.T) {
			if got := requiredVersion(t, dir, "k8s.io/kubernetes"); got != KubernetesVersion {
				t.Errorf("modules/%s/go.mod.txt requires k8s.io/kubernetes %q, want %s", dir, got, KubernetesVersion)
			}
		})
	}
}

// requiredVersion is the version of module path that modules/DIR/go.mod.txt
// requires, or "" when it requires none.
func requiredVersion(t *testing.T, dir, path string) string {
	t.Helper()
	data, err := moduleFiles.ReadFile("modules/" + dir + "/go.mod.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(fields) >= 2 && fields[0] == path {
			return fields[1]
		}
	}
	return ""
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
	want := []string{Kyverno, Pause, CoreDNS, KubeNode}
	if got := Optional(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("Optional() = %v, want %v", got, want)
	}
	for _, dir := range want {
		if _, err := moduleFiles.ReadFile("modules/" + dir + "/go.mod.txt"); err != nil {
			t.Errorf("optional module %s is not embedded: %v", dir, err)
		}
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
		if err != nil || d.IsDir() {
			return err
		}
		for _, dir := range want {
			if strings.HasPrefix(p, "modules/"+dir+"/") {
				return nil
			}
		}
		data, err := moduleFiles.ReadFile(p)
		withoutOptional[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	coreKey, err := keyOf(withoutOptional, core)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := Key(); got != coreKey {
		t.Errorf("Key() = %s, want %s (the core modules alone)", got, coreKey)
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
