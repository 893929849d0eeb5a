// Package yamlfile reads the one object (or the one list) of a YAML or
// JSON file given on a command line: a file with no object, or several, is
// refused rather than read in part, and a file larger than any object the API server stores is
// refused before it is read whole.
package yamlfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// MaxSize is the largest file read: several times the largest object etcd
// stores by default (1.5 MiB).
const MaxSize = 8 << 20

// ReadOne returns the one document of the file at path; want names the
// object expected, for the errors ("one PropagationPolicy").
func ReadOne(path, want string) ([]byte, error) {
	raw, err := read(path, want)
	if err != nil {
		return nil, err
	}
	doc, err := One(raw, want)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc, nil
}

// ReadList returns the one document of the file at path, which must be a
// list: a YAML sequence or a JSON array. want names it, for the errors
// ("one list of status items").
func ReadList(path, want string) ([]byte, error) {
	raw, err := read(path, want)
	if err != nil {
		return nil, err
	}
	docs, err := documents(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch len(docs) {
	case 0:
		return nil, fmt.Errorf("%s: found no list; want %s", path, want)
	case 1:
	default:
		return nil, fmt.Errorf("%s: found %d documents; want %s", path, len(docs), want)
	}
	var v interface{}
	if err := yaml.Unmarshal(docs[0], &v); err != nil {
		return nil, fmt.Errorf("%s: reading YAML: %w", path, err)
	}
	switch v.(type) {
	case []interface{}:
		return docs[0], nil
	case map[string]interface{}:
		return nil, fmt.Errorf("%s: found an object; want %s", path, want)
	}
	return nil, fmt.Errorf("%s: found a single value; want %s", path, want)
}

// read returns the file at path, refusing one larger than MaxSize.
func read(path, want string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(raw) > MaxSize {
		return nil, fmt.Errorf("%s is larger than %d MiB; want %s", path, MaxSize>>20, want)
	}
	return raw, nil
}

// One returns the one document of raw (YAML documents separated by "---",
// or JSON); documents of comments only do not count, and a List or an
// array of objects is refused as several.
func One(raw []byte, want string) ([]byte, error) {
	docs, err := documents(raw)
	if err != nil {
		return nil, err
	}
	switch len(docs) {
	case 0:
		return nil, fmt.Errorf("found no object; want %s", want)
	case 1:
		if what, n, ok := several(docs[0]); ok {
			return nil, fmt.Errorf("found %s of %d %s; want %s", what, n, plural(n, "object"), want)
		}
		return docs[0], nil
	}
	return nil, fmt.Errorf("found %d objects; want %s", len(docs), want)
}

// documents splits raw into its YAML documents, leaving out those of
// comments only.
func documents(raw []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading YAML: %w", err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		docs = append(docs, doc)
	}
}

// several tells whether doc, one document, holds several objects: a
// sequence at its top (a JSON array), or a list (List, DeploymentList) as
// kubectl get -o yaml writes it: a kind ending in List, items, and list
// metadata, which has no name. A custom resource of a kind ending in List
// with an items field has a name, and is one object.
func several(doc []byte) (what string, n int, ok bool) {
	var v interface{}
	if err := yaml.Unmarshal(doc, &v); err != nil {
		// Not for this check to say: the caller decodes it and reports.
		return "", 0, false
	}
	switch v := v.(type) {
	case []interface{}:
		return "an array", len(v), true
	case map[string]interface{}:
		kind, _ := v["kind"].(string)
		items, isList := v["items"].([]interface{})
		metadata, _ := v["metadata"].(map[string]interface{})
		if _, named := metadata["name"]; isList && !named && strings.HasSuffix(kind, "List") {
			return "a " + kind, len(items), true
		}
	}
	return "", 0, false
}

// stripComments drops whole-line YAML comments and bare "---" separators
// (the YAML reader returns a separator that opens an empty document as a
// document of its own), so that a document of nothing else counts as
// empty.
func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if rest, ok := bytes.CutPrefix(t, []byte("---")); ok {
			if rest = bytes.TrimSpace(rest); len(rest) == 0 || rest[0] == '#' {
				continue
			}
		}
		if len(t) > 0 && t[0] == '#' {
			continue
		}
		out = append(out, line)
	}
	return bytes.Join(out, []byte("\n"))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
