package cli

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// resourceResolver turns the resource type a user typed (deploy,
// deployments.apps, Deployment, deployment.v1.apps, flinkdeployment, ...)
// into the API's resource, the way kubectl does: a RESTMapper built from the
// server's discovery (so custom resources work as soon as their CRD is
// served) behind the short-name expander.
type resourceResolver struct {
	mapper meta.RESTMapper
	// byName is mapper without the short-name expander, to list the groups
	// serving a full name without repeating the expander's warnings.
	byName meta.RESTMapper
	// warn receives what kubectl prints as warnings: a type name that other
	// resources of lower priority also answer to.
	warn func(string)
}

// newResourceResolver reads discovery from dc once (kept in memory for the
// command's life) and sends warnings to warn.
func newResourceResolver(dc discovery.DiscoveryInterface, warn func(string)) *resourceResolver {
	if warn == nil {
		warn = func(string) {}
	}
	cached := memory.NewMemCacheClient(dc)
	byName := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	return &resourceResolver{mapper: restmapper.NewShortcutExpander(byName, cached, warn), byName: byName, warn: warn}
}

// mapping returns the REST mapping of typeArg, following kubectl's resource
// builder:
//  1. TYPE.VERSION.GROUP (two dots or more) as a fully specified resource;
//  2. TYPE[.GROUP] as a resource, plural, singular or short name, of any
//     version; when several groups serve it, the group the server lists
//     first wins, with a warning naming the others;
//  3. the same text as a Kind (Kind.version.group, Kind.group, Kind).
//
// A type the server does not serve is kubectl's error: the server doesn't
// have a resource type "TYPE".
func (r *resourceResolver) mapping(typeArg string) (*meta.RESTMapping, error) {
	if typeArg == "" {
		return nil, errors.New("empty resource type")
	}
	fullySpecifiedGVR, groupResource := schema.ParseResourceArg(typeArg)
	var gvk schema.GroupVersionKind
	if fullySpecifiedGVR != nil {
		gvk, _ = r.mapper.KindFor(*fullySpecifiedGVR)
	}
	if gvk.Empty() {
		gvk, _ = r.mapper.KindFor(groupResource.WithVersion(""))
		if !gvk.Empty() {
			r.warnOtherGroups(typeArg, groupResource, gvk.GroupKind())
		}
	}
	if !gvk.Empty() {
		return r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}

	fullySpecifiedGVK, groupKind := schema.ParseKindArg(typeArg)
	if fullySpecifiedGVK != nil {
		if m, err := r.mapper.RESTMapping(fullySpecifiedGVK.GroupKind(), fullySpecifiedGVK.Version); err == nil {
			return m, nil
		}
	}
	m, err := r.mapper.RESTMapping(groupKind)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("the server doesn't have a resource type %q", groupResource.Resource)
		}
		// Discovery itself failed: that error says more than "no such type".
		return nil, fmt.Errorf("resolving resource type %q: %w", typeArg, err)
	}
	return m, nil
}

// warnOtherGroups warns when the resource name gr, given without a group,
// is served by more than one group: kubectl silently takes the first, which
// may not be the one meant. Short names are warned about by the expander.
func (r *resourceResolver) warnOtherGroups(typeArg string, gr schema.GroupResource, chosen schema.GroupKind) {
	if gr.Group != "" {
		return
	}
	kinds, err := r.byName.KindsFor(gr.WithVersion(""))
	if err != nil {
		return
	}
	var others []string
	seen := map[schema.GroupKind]bool{chosen: true}
	for _, k := range kinds {
		if gk := k.GroupKind(); !seen[gk] {
			seen[gk] = true
			others = append(others, gk.String())
		}
	}
	if len(others) > 0 {
		r.warn(fmt.Sprintf("resource type %q could also match lower priority %s; using %s (name the group, as in TYPE.GROUP, to choose)",
			typeArg, strings.Join(others, ", "), chosen.String()))
	}
}

// resourceArgs splits kubectl's two ways of naming one object: a single
// TYPE/NAME argument, or TYPE and NAME as two arguments.
func resourceArgs(args []string) (typeArg, name string, err error) {
	const want = "want TYPE/NAME or TYPE NAME, e.g. deployment/nginx or deployment nginx"
	switch len(args) {
	case 1:
		var ok bool
		if typeArg, name, ok = strings.Cut(args[0], "/"); !ok {
			return "", "", fmt.Errorf("%s; got only %q (the name of the resource is missing)", want, args[0])
		}
		if strings.Contains(name, "/") {
			return "", "", fmt.Errorf("%s; got %q (TYPE/NAME takes a single type and name)", want, args[0])
		}
	case 2:
		if strings.Contains(args[0], "/") || strings.Contains(args[1], "/") {
			return "", "", fmt.Errorf("%s; got %q %q (with TYPE/NAME there is no separate type argument)", want, args[0], args[1])
		}
		typeArg, name = args[0], args[1]
	default:
		return "", "", fmt.Errorf("%s; got %d arguments", want, len(args))
	}
	switch {
	case typeArg == "" || name == "":
		return "", "", fmt.Errorf("%s; got an empty type or name in %q", want, strings.Join(args, " "))
	case strings.Contains(typeArg, ","):
		return "", "", fmt.Errorf("%s; got the types %q: give one", want, typeArg)
	}
	return typeArg, name, nil
}
