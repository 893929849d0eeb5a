package overrides

import (
	"fmt"
	"regexp"
	"strings"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
)

// imageRef is a container image reference split into its parts:
// [registry/]repository[:tag][@digest].
type imageRef struct {
	registry   string
	repository string
	tag        string
	digest     string
}

// digestPattern recognises a digest such as sha256:<hex>.
var digestPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$`)

// parseImage splits an image reference. The first path segment is the
// registry only when it looks like a host: it contains "." or ":" (a port),
// or is "localhost". Otherwise it belongs to the repository (docker.io's
// implicit registry is not made explicit).
func parseImage(s string) imageRef {
	var ref imageRef
	rest := s
	if i := strings.Index(rest, "@"); i >= 0 {
		ref.digest, rest = rest[i+1:], rest[:i]
	}
	if i := strings.Index(rest, "/"); i >= 0 {
		if first := rest[:i]; strings.ContainsAny(first, ".:") || first == "localhost" {
			ref.registry, rest = first, rest[i+1:]
		}
	}
	if i := strings.LastIndex(rest, ":"); i >= 0 && i > strings.LastIndex(rest, "/") {
		ref.tag, rest = rest[i+1:], rest[:i]
	}
	ref.repository = rest
	return ref
}

func (r imageRef) String() string {
	var b strings.Builder
	if r.registry != "" {
		b.WriteString(r.registry)
		b.WriteString("/")
	}
	b.WriteString(r.repository)
	if r.tag != "" {
		b.WriteString(":")
		b.WriteString(r.tag)
	}
	if r.digest != "" {
		b.WriteString("@")
		b.WriteString(r.digest)
	}
	return b.String()
}

// tagOrDigest is the tag, or the digest when there is no tag.
func (r imageRef) tagOrDigest() string {
	if r.tag != "" {
		return r.tag
	}
	return r.digest
}

// setTagOrDigest sets a digest-looking value as the digest (dropping the
// tag) and anything else as the tag (dropping the digest).
func (r *imageRef) setTagOrDigest(v string) {
	if digestPattern.MatchString(v) {
		r.tag, r.digest = "", v
		return
	}
	r.tag, r.digest = v, ""
}

// overrideImage applies one imageOverrider to an image reference.
func overrideImage(image string, o *policyv1alpha1.ImageOverrider) (string, error) {
	ref := parseImage(image)
	switch o.Component {
	case policyv1alpha1.Registry:
		next, err := editString(ref.registry, o)
		if err != nil {
			return "", err
		}
		ref.registry = next
	case policyv1alpha1.Repository:
		next, err := editString(ref.repository, o)
		if err != nil {
			return "", err
		}
		ref.repository = next
	case policyv1alpha1.Tag:
		switch o.Operator {
		case policyv1alpha1.OverriderOpAdd:
			ref.setTagOrDigest(ref.tagOrDigest() + o.Value)
		case policyv1alpha1.OverriderOpReplace:
			ref.setTagOrDigest(o.Value)
		case policyv1alpha1.OverriderOpRemove:
			ref.tag, ref.digest = "", ""
		default:
			return "", fmt.Errorf("unknown operator %q", o.Operator)
		}
	default:
		return "", fmt.Errorf("unknown image component %q", o.Component)
	}
	return ref.String(), nil
}

// editString applies add (append), replace or remove to one component.
func editString(current string, o *policyv1alpha1.ImageOverrider) (string, error) {
	switch o.Operator {
	case policyv1alpha1.OverriderOpAdd:
		return current + o.Value, nil
	case policyv1alpha1.OverriderOpReplace:
		return o.Value, nil
	case policyv1alpha1.OverriderOpRemove:
		return "", nil
	default:
		return "", fmt.Errorf("unknown operator %q", o.Operator)
	}
}
