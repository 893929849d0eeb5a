// Package features lists Lifeboat's feature gates in one place, with their
// stage and default, and parses the --feature-gates flag.
//
// The gate names are Karmada's, so a Karmada user's flags keep working.
// There is no global gate set: the command line builds one Gates value and
// passes it to every controller that needs it.
//
// k8s.io/component-base/featuregate is not used because component-base is
// not a direct requirement of the module (it has no go.sum entry); the few
// gates Lifeboat needs fit in a small typed map.
package features
