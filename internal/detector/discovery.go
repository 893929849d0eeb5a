package detector

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// unservedMessage is the Event message for a selector whose kind is not
// served.
func unservedMessage(gvk schema.GroupVersionKind, otherVersions []string) string {
	msg := fmt.Sprintf("no kind %s is served for apiVersion %s", gvk.Kind, gvk.GroupVersion().String())
	if len(otherVersions) > 0 {
		msg += fmt.Sprintf(" (served in: %s)", strings.Join(otherVersions, ", "))
	}
	return msg + "; retried when the API server's resources change"
}
