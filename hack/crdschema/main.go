// Command crdschema completes the CRDs that controller-gen writes with the
// validation controller-gen markers cannot express: bounds and rules inside
// types from k8s.io/api and k8s.io/apimachinery (metav1.LabelSelector,
// metav1.Condition, corev1.Toleration, corev1.Taint), whose fields carry
// no Lifeboat markers. hack/generate.sh runs it on every generated CRD:
//
//	crdschema DIR
//
// rewrites each DIR/*.yaml in place, in controller-gen's own YAML style, so
// that running generate twice gives no diff. What it adds is listed in
// patch.go.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdschema DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "crdschema:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRDs in %s", dir)
	}
	for _, file := range files {
		if err := patchFile(file); err != nil {
			return err
		}
	}
	return nil
}

func patchFile(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := sigsyaml.UnmarshalStrict(data, crd); err != nil {
		return fmt.Errorf("parsing %s: %w", file, err)
	}
	for i := range crd.Spec.Versions {
		if s := crd.Spec.Versions[i].Schema; s != nil && s.OpenAPIV3Schema != nil {
			patchSchema(s.OpenAPIV3Schema)
		}
	}
	out, err := marshal(crd)
	if err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	if bytes.Equal(out, data) {
		return nil
	}
	if err := os.WriteFile(file, out, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}

// marshal writes crd the way controller-gen does (genall.WriteYAML): JSON,
// read back by yaml.v2 so numbers keep their type, without the status and
// metadata.creationTimestamp, and a leading document separator.
func marshal(crd *apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	j, err := json.Marshal(crd)
	if err != nil {
		return nil, fmt.Errorf("encoding JSON: %w", err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(j, &obj); err != nil {
		return nil, fmt.Errorf("decoding JSON as YAML: %w", err)
	}
	delete(obj, "status")
	if meta, ok := obj["metadata"].(map[any]any); ok {
		delete(meta, "creationTimestamp")
	}
	y, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding YAML: %w", err)
	}
	return append([]byte("---\n"), y...), nil
}
