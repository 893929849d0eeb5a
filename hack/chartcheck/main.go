// Command chartcheck checks what `helm template` renders from charts/lifeboat:
// every document must decode, with strict field checking, into the
// Kubernetes type its apiVersion and kind name (a misspelled field in a
// template fails here, not at install), an audit Policy a ConfigMap holds
// must be one the API server loads, and every value of values.yaml must be
// described in the chart's README.
//
//	helm template ... | go run ./hack/chartcheck --values charts/lifeboat/values.yaml --readme charts/lifeboat/README.md
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	auditpolicy "k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// notInScheme are kinds the chart may render whose Go types client-go does
// not have; they are checked only for apiVersion, kind and name.
var notInScheme = map[schema.GroupVersionKind]bool{
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}: true,
}

func main() {
	values := flag.String("values", "", "values.yaml whose every value the README must describe")
	readme := flag.String("readme", "", "the chart's README.md")
	flag.Parse()
	if err := run(os.Stdin, *values, *readme); err != nil {
		fmt.Fprintln(os.Stderr, "chartcheck:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, valuesPath, readmePath string) error {
	n, err := checkManifests(in)
	if err != nil {
		return err
	}
	if n == 0 {
		return errors.New("nothing rendered")
	}
	if valuesPath != "" && readmePath != "" {
		if err := checkDocumented(valuesPath, readmePath); err != nil {
			return err
		}
	}
	fmt.Printf("chartcheck: %d objects decode strictly\n", n)
	return nil
}

func checkManifests(in io.Reader) (int, error) {
	strict := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{Yaml: true, Strict: true})
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	var errs []error
	n := 0
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", n+1, err))
			continue
		}
		n++
		what := fmt.Sprintf("%s %s", meta.Kind, meta.Metadata.Name)
		gvk := schema.FromAPIVersionAndKind(meta.APIVersion, meta.Kind)
		if meta.Metadata.Name == "" || meta.Kind == "" {
			errs = append(errs, fmt.Errorf("document %d (%s): no kind or name", n, what))
			continue
		}
		if notInScheme[gvk] {
			continue
		}
		if !scheme.Scheme.Recognizes(gvk) {
			errs = append(errs, fmt.Errorf("%s: %s is not a kind this check knows", what, gvk))
			continue
		}
		obj, _, err := strict.Decode(doc, nil, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
			continue
		}
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			errs = append(errs, checkAuditPolicies(cm)...)
		}
	}
	return n, errors.Join(errs...)
}

// checkAuditPolicies loads each audit Policy cm holds as the API server
// does, and decodes it strictly: the API server only warns of an unknown
// field, and ignores it.
func checkAuditPolicies(cm *corev1.ConfigMap) []error {
	var errs []error
	for key, data := range cm.Data {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(data), &meta); err != nil || meta.APIVersion != auditv1.SchemeGroupVersion.String() {
			continue
		}
		what := fmt.Sprintf("ConfigMap %s, %s", cm.Name, key)
		var p auditv1.Policy
		if err := yaml.UnmarshalStrict([]byte(data), &p); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
			continue
		}
		if _, err := auditpolicy.LoadPolicyFromBytes([]byte(data)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	return errs
}

func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

// checkDocumented wants every leaf of values.yaml (a.b.c), or a parent of
// it, named in backquotes in the README.
func checkDocumented(valuesPath, readmePath string) error {
	data, err := os.ReadFile(valuesPath)
	if err != nil {
		return err
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		return fmt.Errorf("%s: %w", valuesPath, err)
	}
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		return err
	}
	var missing []string
	for _, leaf := range leaves("", values) {
		documented := false
		for p := leaf; p != ""; p = parent(p) {
			if strings.Contains(string(readme), "`"+p+"`") {
				documented = true
				break
			}
		}
		if !documented {
			missing = append(missing, leaf)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("%s does not describe these values of %s: %s", readmePath, valuesPath, strings.Join(missing, ", "))
	}
	return nil
}

func leaves(prefix string, v any) []string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return []string{prefix}
	}
	var out []string
	for k, sub := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		out = append(out, leaves(p, sub)...)
	}
	return out
}

func parent(p string) string {
	i := strings.LastIndex(p, ".")
	if i < 0 {
		return ""
	}
	return p[:i]
}
