// Package yamlfile reads the one object of a YAML or JSON file given on a
// command line: a file with no object, or several, is refused rather than
// read in part, and a file larger than any object the API server stores is
// refused before it is read whole.
package yamlfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// MaxSize is the largest file read: several times the largest object etcd
// stores by default (1.5 MiB).
const MaxSize = 8 << 20

// ReadOne returns the one document of the file at path; want names the
// object expected, for the errors ("one PropagationPolicy").
func ReadOne(path, want string) ([]byte, error) {
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
	doc, err := One(raw, want)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc, nil
}

// One returns the one document of raw (YAML documents separated by "---",
// or JSON); documents of comments only do not count.
func One(raw []byte, want string) ([]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading YAML: %w", err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		docs = append(docs, doc)
	}
	switch len(docs) {
	case 0:
		return nil, fmt.Errorf("found no object; want %s", want)
	case 1:
		return docs[0], nil
	}
	return nil, fmt.Errorf("found %d objects; want %s", len(docs), want)
}

// stripComments drops whole-line YAML comments, so that a document of
// comments only counts as empty.
func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '#' {
			continue
		}
		out = append(out, line)
	}
	return bytes.Join(out, []byte("\n"))
}
