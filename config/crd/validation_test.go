package crd

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// TestCRDsAreAcceptedByTheAPIServer fails when the API server would refuse
// to create a CRD: a CEL rule that does not compile in Kubernetes' CRD
// environment, or whose estimated cost exceeds the per-rule or per-CRD
// budget (lists, maps and strings need maxItems, maxProperties and
// maxLength for that).
func TestCRDsAreAcceptedByTheAPIServer(t *testing.T) {
	crds, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		errs, err := validateCRD(crd)
		if err != nil {
			t.Fatal(err)
		}
		if len(errs) > 0 {
			t.Errorf("%s is refused:\n%s", crd.Name, errorText(errs))
		}
	}
}

// manifestRoots are the directories whose YAML a user applies as written:
// every object of a Lifeboat kind in them must be valid.
var manifestRoots = []string{
	"../../test/e2e/testdata",
	"../../examples",
	"../samples",
}

// invalidFixtures are the objects test/e2e/api_validation_test.go expects
// the API server to refuse; each says what the error contains.
const invalidFixtures = "../../test/e2e/testdata/api/invalid"

// TestManifestsAreValid applies the API server's validation to every object
// of a Lifeboat kind in the shipped examples, the samples and the e2e test
// data, and in the YAML blocks of the README and docs.
func TestManifestsAreValid(t *testing.T) {
	vs := loadValidators(t)
	checked := 0
	check := func(t *testing.T, where string, doc []byte) {
		obj, err := decodeObject(doc)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			return
		}
		errs, ok := vs.validate(obj)
		if !ok {
			return
		}
		checked++
		if len(errs) > 0 {
			t.Errorf("%s (%s %v) is refused:\n%s", where, obj["kind"], nameOf(obj), errorText(errs))
		}
	}
	for _, root := range manifestRoots {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" || strings.HasPrefix(path, invalidFixtures) {
				return err
			}
			docs, err := yamlDocuments(path)
			if err != nil {
				return err
			}
			for _, doc := range docs {
				check(t, path, doc)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	markdown, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append(markdown, "../../README.md") {
		blocks, err := markdownYAML(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			for _, doc := range bytes.Split(b.text, []byte("\n---\n")) {
				if isLifeboatObject(doc) {
					check(t, path+":"+b.line, doc)
				}
			}
		}
	}
	t.Logf("%d objects checked", checked)
	if checked < 30 {
		t.Fatalf("only %d objects checked; the manifest roots moved?", checked)
	}
}

// TestInvalidFixturesAreRefused runs the invalid fixtures of the API
// validation e2e test through the same validation: each must be refused
// with an error containing its "# expect:" text, and for that reason only.
func TestInvalidFixturesAreRefused(t *testing.T) {
	vs := loadValidators(t)
	files, err := filepath.Glob(filepath.Join(invalidFixtures, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no invalid fixtures")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			expect := expectLines(data)
			if len(expect) != 1 {
				t.Fatalf("want one '# expect:' line, found %d", len(expect))
			}
			obj, err := decodeObject(data)
			if err != nil {
				t.Fatal(err)
			}
			errs, ok := vs.validate(obj)
			if !ok {
				t.Fatalf("%v is not a Lifeboat kind", obj["kind"])
			}
			if len(errs) == 0 {
				t.Fatalf("accepted; want an error containing %q", expect[0])
			}
			text := errorText(errs)
			if !strings.Contains(text, expect[0]) {
				t.Errorf("no error contains %q:\n%s", expect[0], text)
			}
			// One reason per fixture, so that it keeps testing its rule.
			if n := len(withoutCELSkipped(errs)); n != 1 {
				t.Errorf("refused for %d reasons, want 1:\n%s", n, text)
			}
		})
	}
}

// decodeObject decodes YAML as the API server decodes a request body:
// integers become int64, not float64.
func decodeObject(doc []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	obj := map[string]any{}
	if err := json.Unmarshal(j, &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

func expectLines(data []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "# expect:"); ok {
			out = append(out, strings.TrimSpace(rest))
		}
	}
	return out
}

func nameOf(obj map[string]any) any {
	meta, _ := obj["metadata"].(map[string]any)
	return meta["name"]
}

// yamlDocuments splits a multi-document YAML file.
func yamlDocuments(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

type markdownBlock struct {
	line string
	text []byte
}

// markdownYAML returns the ```yaml blocks of a Markdown file.
func markdownYAML(path string) ([]markdownBlock, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []markdownBlock
	var cur *markdownBlock
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```yaml":
			cur = &markdownBlock{line: strconv.Itoa(i + 2)}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text = append(cur.text, line+"\n"...)
		}
	}
	return out, nil
}

var lifeboatAPIVersion = regexp.MustCompile(`(?m)^apiVersion: (policy|work|cluster|config)\.karmada\.io/`)

// isLifeboatObject reports whether a docs YAML block is a whole object of
// one of Lifeboat's groups (not a snippet of one).
func isLifeboatObject(doc []byte) bool {
	return lifeboatAPIVersion.Match(doc) && bytes.Contains(doc, []byte("\nkind: "))
}
