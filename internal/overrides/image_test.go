package overrides

import (
	"testing"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

func TestParseImage(t *testing.T) {
	cases := map[string]imageRef{
		"nginx":                          {repository: "nginx"},
		"nginx:1.25":                     {repository: "nginx", tag: "1.25"},
		"library/nginx":                  {repository: "library/nginx"},
		"docker.io/library/nginx:latest": {registry: "docker.io", repository: "library/nginx", tag: "latest"},
		"localhost/app":                  {registry: "localhost", repository: "app"},
		"registry:5000/team/app:v2":      {registry: "registry:5000", repository: "team/app", tag: "v2"},
		"quay.io/app@sha256:0123456789abcdef0123456789abcdef": {
			registry: "quay.io", repository: "app", digest: "sha256:0123456789abcdef0123456789abcdef"},
		"app:v1@sha256:0123456789abcdef0123456789abcdef": {
			repository: "app", tag: "v1", digest: "sha256:0123456789abcdef0123456789abcdef"},
	}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			got := parseImage(in)
			if got != want {
				t.Fatalf("parseImage(%q) = %+v, want %+v", in, got, want)
			}
			if got.String() != in {
				t.Fatalf("String() = %q, want the input back", got.String())
			}
		})
	}
}

func TestOverrideImage(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef"
	cases := map[string]struct {
		image     string
		component policyv1alpha1.ImageComponent
		operator  policyv1alpha1.OverriderOperator
		value     string
		want      string
	}{
		"seed: replace registry of a bare image": {"nginx", policyv1alpha1.Registry, "replace", "fake", "fake/nginx"},
		"replace registry":                       {"docker.io/nginx:1", policyv1alpha1.Registry, "replace", "mirror.cn", "mirror.cn/nginx:1"},
		"add to registry":                        {"docker.io/nginx", policyv1alpha1.Registry, "add", ".cn", "docker.io.cn/nginx"},
		"remove registry":                        {"registry:5000/nginx:1", policyv1alpha1.Registry, "remove", "", "nginx:1"},
		"replace repository":                     {"quay.io/a/b:1", policyv1alpha1.Repository, "replace", "c/d", "quay.io/c/d:1"},
		"add to repository":                      {"nginx:1", policyv1alpha1.Repository, "add", "-debug", "nginx-debug:1"},
		"replace tag":                            {"nginx:1", policyv1alpha1.Tag, "replace", "2", "nginx:2"},
		"add tag to untagged":                    {"nginx", policyv1alpha1.Tag, "add", "v1", "nginx:v1"},
		"append to tag":                          {"nginx:1.0", policyv1alpha1.Tag, "add", "-alpine", "nginx:1.0-alpine"},
		"remove tag":                             {"nginx:1.0", policyv1alpha1.Tag, "remove", "", "nginx"},
		"remove digest":                          {"nginx@" + digest, policyv1alpha1.Tag, "remove", "", "nginx"},
		"replace tag with a digest":              {"nginx:1.0", policyv1alpha1.Tag, "replace", digest, "nginx@" + digest},
		"replace digest with a tag":              {"nginx@" + digest, policyv1alpha1.Tag, "replace", "v3", "nginx:v3"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := overrideImage(tc.image, &policyv1alpha1.ImageOverrider{Component: tc.component, Operator: tc.operator, Value: tc.value})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
