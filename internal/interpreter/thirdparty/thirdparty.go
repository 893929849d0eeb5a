package thirdparty

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"

	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/lifeboat-dev/lifeboat/api/config/v1alpha1"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter"
	"github.com/lifeboat-dev/lifeboat/internal/interpreter/lua"
)

//go:embed customizations
var files embed.FS

// Customizations returns the shipped customizations, sorted by name.
func Customizations() ([]*configv1alpha1.ResourceInterpreterCustomization, error) {
	var out []*configv1alpha1.ResourceInterpreterCustomization
	err := fs.WalkDir(files, "customizations", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Base(p) != "customizations.yaml" {
			return err
		}
		raw, err := files.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		ric := &configv1alpha1.ResourceInterpreterCustomization{}
		if err := yaml.UnmarshalStrict(raw, ric); err != nil {
			return fmt.Errorf("parse %s: %w", p, err)
		}
		out = append(out, ric)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Programs compiles the shipped customizations on rt. A script that does
// not compile is an error: the shipped set is tested.
func Programs(rt *lua.Runtime) ([]*lua.Program, error) {
	rics, err := Customizations()
	if err != nil {
		return nil, err
	}
	var out []*lua.Program
	for _, ric := range rics {
		p := rt.CompileCustomization(ric)
		for op, err := range p.Errors {
			return nil, fmt.Errorf("shipped customization %s, %s: %w", ric.Name, op, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// NewLayer returns the shipped rules as an interpreter layer. Its scripts
// run on rt.
func NewLayer(rt *lua.Runtime) (interpreter.RuleSet, error) {
	programs, err := Programs(rt)
	if err != nil {
		return nil, err
	}
	set := interpreter.RuleSet{}
	for _, p := range programs {
		set[p.Target] = p.Rules(nil)
	}
	return set, nil
}
