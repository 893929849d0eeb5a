// Package crd embeds the generated CustomResourceDefinitions of Lifeboat's
// API (config/crd/bases, produced by hack/generate.sh) so the binary and the
// tests can install them.
package crd

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed bases/*.yaml
var bases embed.FS

// All returns every CRD, parsed, sorted by name. The CRDs do not depend on
// each other, so they can be created in this order.
func All() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(bases, "bases/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("listing embedded CRDs: %w", err)
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, name := range files {
		data, err := bases.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading embedded CRD %s: %w", name, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("parsing embedded CRD %s: %w", name, err)
		}
		if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
			return nil, fmt.Errorf("embedded file %s is not a named CustomResourceDefinition", name)
		}
		crds = append(crds, crd)
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Name < crds[j].Name })
	return crds, nil
}
