//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// apiFixture is one object of test/e2e/testdata/api: the object, the
// assertions on the object read back (valid fixtures) and the expected error
// substring (invalid fixtures).
type apiFixture struct {
	obj     *unstructured.Unstructured
	asserts []fieldAssert
	expect  []string
}

// fieldAssert is a "# assert: <path> = <YAML value>" line.
type fieldAssert struct {
	path []string
	want any
	line string
}

// TestAPIValidation applies every fixture in testdata/api to the control
// plane: valid ones must be accepted with the schema defaults applied and
// the as-written values kept, invalid ones must be rejected with an error
// naming the field. Every object of a Lifeboat kind that is shipped to be
// applied as written (the other test data, examples/, config/samples/) must
// be accepted too. This proves the defaults and validation live in the CRD
// schemas, with no webhook.
func TestAPIValidation(t *testing.T) {
	cfg := controlPlaneConfig(t)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))

	// resourceFor returns the client for obj: namespaced objects go into a
	// fresh namespace, cluster-scoped ones get a unique name and are deleted
	// when the test ends.
	resourceFor := func(t *testing.T, obj *unstructured.Unstructured) dynamic.ResourceInterface {
		t.Helper()
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("no resource for %s (are the CRDs installed?): %v", gvk, err)
		}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := newNamespace(t, "api")
			obj.SetNamespace(ns)
			return dyn.Resource(mapping.Resource).Namespace(ns)
		}
		obj.SetNamespace("")
		obj.SetName(obj.GetName() + "-" + rand.String(5))
		ri := dyn.Resource(mapping.Resource)
		name := obj.GetName()
		t.Cleanup(func() { _ = ri.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		return ri
	}

	t.Run("valid", func(t *testing.T) {
		for name, fx := range loadAPIFixtures(t, "testdata/api/valid") {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				ri := resourceFor(t, fx.obj)
				if _, err := ri.Apply(ctx, fx.obj.GetName(), fx.obj, metav1.ApplyOptions{FieldManager: "lifeboat-e2e-api", Force: true}); err != nil {
					t.Fatalf("server-side apply rejected a valid object: %v", err)
				}
				got, err := ri.Get(ctx, fx.obj.GetName(), metav1.GetOptions{})
				if err != nil {
					t.Fatalf("reading back: %v", err)
				}
				for _, a := range fx.asserts {
					checkFieldAssert(t, got.Object, a)
				}
			})
		}
	})

	t.Run("shipped", func(t *testing.T) {
		// A dry run: the objects are validated and not stored, so the seeds'
		// policies do not act on the shared environment. Cluster-scoped
		// names get a suffix so that objects the environment already has
		// (the default ClusterTaintPolicy) are created anew.
		ns := newNamespace(t, "api-shipped")
		for name, obj := range loadShippedObjects(t, "testdata", "../../examples", "../../config/samples") {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				gvk := obj.GroupVersionKind()
				mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					t.Fatalf("no resource for %s: %v", gvk, err)
				}
				ri := dynamic.ResourceInterface(dyn.Resource(mapping.Resource))
				if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
					obj.SetNamespace(ns)
					ri = dyn.Resource(mapping.Resource).Namespace(ns)
				} else {
					obj.SetName(obj.GetName() + "-" + rand.String(5))
				}
				_, err = ri.Create(context.Background(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "lifeboat-e2e-api"})
				if err != nil {
					t.Errorf("the API server refuses a shipped object: %v", err)
				}
			})
		}
	})

	t.Run("invalid", func(t *testing.T) {
		fixtures := loadAPIFixtures(t, "testdata/api/invalid")
		if len(fixtures) < 12 {
			t.Fatalf("only %d invalid fixtures; want at least 12", len(fixtures))
		}
		for name, fx := range fixtures {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				if len(fx.expect) != 1 {
					t.Fatalf("an invalid fixture needs exactly one '# expect:' line, found %d", len(fx.expect))
				}
				ctx := context.Background()
				ri := resourceFor(t, fx.obj)

				// Create gives the API server's classic field errors.
				_, err := ri.Create(ctx, fx.obj, metav1.CreateOptions{FieldManager: "lifeboat-e2e-api"})
				if err == nil {
					_ = ri.Delete(ctx, fx.obj.GetName(), metav1.DeleteOptions{})
					t.Fatalf("invalid object was accepted; want an error containing %q", fx.expect[0])
				}
				if !strings.Contains(err.Error(), fx.expect[0]) {
					t.Errorf("error does not contain %q:\n%v", fx.expect[0], err)
				}

				// Server-side apply must refuse it too (its wording can differ,
				// e.g. for duplicate list-map keys).
				if _, err := ri.Apply(ctx, fx.obj.GetName(), fx.obj, metav1.ApplyOptions{FieldManager: "lifeboat-e2e-api", Force: true}); err == nil {
					_ = ri.Delete(ctx, fx.obj.GetName(), metav1.DeleteOptions{})
					t.Errorf("server-side apply accepted the invalid object")
				}
			})
		}
	})
}

// loadShippedObjects returns every object of a Lifeboat API group in the
// YAML files under roots (skipping testdata/api, which the other subtests
// apply), keyed by file and position.
func loadShippedObjects(t *testing.T, roots ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path == filepath.Join("testdata", "api") {
				return filepath.SkipDir
			}
			if d.IsDir() || filepath.Ext(path) != ".yaml" {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
			for i := 0; ; i++ {
				doc, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				obj := map[string]any{}
				if err := yaml.Unmarshal(doc, &obj); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				u := &unstructured.Unstructured{Object: obj}
				switch u.GroupVersionKind().Group {
				case "policy.karmada.io", "work.karmada.io", "cluster.karmada.io", "config.karmada.io":
					out[fmt.Sprintf("%s#%d", strings.TrimPrefix(path, "../../"), i)] = u
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d shipped objects found under %v", len(out), roots)
	}
	return out
}

// loadAPIFixtures reads every *.yaml in dir, keyed by file name.
func loadAPIFixtures(t *testing.T, dir string) map[string]apiFixture {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no fixtures in %s", dir)
	}
	out := make(map[string]apiFixture, len(files))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		fx, err := parseAPIFixture(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out[strings.TrimSuffix(filepath.Base(file), ".yaml")] = fx
	}
	return out
}

func parseAPIFixture(data []byte) (apiFixture, error) {
	var fx apiFixture
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "# expect:"):
			fx.expect = append(fx.expect, strings.TrimSpace(strings.TrimPrefix(line, "# expect:")))
		case strings.HasPrefix(line, "# assert:"):
			spec := strings.TrimSpace(strings.TrimPrefix(line, "# assert:"))
			path, value, ok := strings.Cut(spec, " = ")
			if !ok {
				return fx, &fixtureError{line: line, msg: "want '# assert: <path> = <value>'"}
			}
			var want any
			if err := yaml.Unmarshal([]byte(value), &want); err != nil {
				return fx, &fixtureError{line: line, msg: err.Error()}
			}
			fx.asserts = append(fx.asserts, fieldAssert{path: strings.Split(strings.TrimSpace(path), "."), want: want, line: line})
		}
	}
	obj := map[string]any{}
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return fx, err
	}
	fx.obj = &unstructured.Unstructured{Object: obj}
	if fx.obj.GetKind() == "" || fx.obj.GetAPIVersion() == "" || fx.obj.GetName() == "" {
		return fx, &fixtureError{msg: "the object needs apiVersion, kind and metadata.name"}
	}
	return fx, nil
}

type fixtureError struct{ line, msg string }

func (e *fixtureError) Error() string { return e.msg + ": " + e.line }

// checkFieldAssert compares the value at a.path with a.want as JSON, so
// integers and floats of equal value compare equal.
func checkFieldAssert(t *testing.T, obj map[string]any, a fieldAssert) {
	t.Helper()
	var cur any = obj
	for _, seg := range a.path {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[seg]
			if !ok {
				t.Errorf("%s: field %q missing", a.line, seg)
				return
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(v) {
				t.Errorf("%s: no list item %q (length %d)", a.line, seg, len(v))
				return
			}
			cur = v[i]
		default:
			t.Errorf("%s: cannot descend into %T at %q", a.line, cur, seg)
			return
		}
	}
	got, _ := json.Marshal(cur)
	want, _ := json.Marshal(a.want)
	if !bytes.Equal(got, want) {
		t.Errorf("%s: got %s, want %s", a.line, got, want)
	}
}
